// Tag arrays: LRU replacement among the evictable ways, and a set that grows
// past its associativity when none is evictable.
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>

#include "cohsim/fabric/tag_array.hpp"

using cohsim::fabric::TagArray;

namespace {

constexpr std::uint64_t kLine = 64;
/// A 2-way array of 2 sets: lines 0, 2, 4, ... (x 64 bytes) share set 0.
TagArray two_way() { return TagArray(4 * kLine, 2); }
bool all(std::uint64_t) { return true; }
bool none(std::uint64_t) { return false; }
bool holds(const TagArray& t, std::initializer_list<std::uint64_t> lines) {
  for (std::uint64_t l : lines)
    if (!t.contains(l * kLine)) return false;
  return true;
}

}  // namespace

TEST_CASE("a full set evicts its least recent evictable line", "[fabric]") {
  TagArray t = two_way();
  CHECK_FALSE(t.insert(0, all));
  CHECK_FALSE(t.insert(2 * kLine, all));
  CHECK(t.touch(0));  // line 2 is now the least recent
  CHECK(t.insert(4 * kLine, all) == 2 * kLine);
  CHECK(holds(t, {0, 4}));
  CHECK_FALSE(t.contains(2 * kLine));
  // Line 0 is the least recent but refused: the next one goes.
  CHECK(t.insert(6 * kLine, [](std::uint64_t l) { return l != 0; }) == 4 * kLine);
  CHECK(holds(t, {0, 6}));
  CHECK_FALSE(t.insert(1 * kLine, all));  // the other set has room
}

TEST_CASE("a set with no evictable line grows past its associativity and shrinks back by eviction", "[fabric]") {
  TagArray t = two_way();
  for (std::uint64_t l : {0, 2}) t.insert(l * kLine, all);
  for (std::uint64_t l : {4, 6, 8}) CHECK_FALSE(t.insert(l * kLine, none));
  CHECK(holds(t, {0, 2, 4, 6, 8}));  // five lines in a 2-way set
  t.touch(0);
  CHECK(t.insert(10 * kLine, all) == 2 * kLine);  // one in, one out: still five
  CHECK(holds(t, {0, 4, 6, 8, 10}));
  for (std::uint64_t l : {4, 6, 8}) t.remove(l * kLine);
  CHECK(t.insert(12 * kLine, all) == 0);  // full again at two: the least recent goes
  CHECK(holds(t, {10, 12}));
}
