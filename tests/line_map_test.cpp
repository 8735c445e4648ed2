// The fabric's line-address hash map against std::map: every key inserted is
// found with its value, erased keys are gone and the rest still found (the
// backward shift after an erase keeps every probe run whole), across growth.
#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "cohsim/fabric/line_map.hpp"
#include "cohsim/fabric/memory_map.hpp"
#include "cohsim/sim/random.hpp"

using cohsim::fabric::LineMap;

namespace {

// Lines as the memory map lays them out: a node's number in bits 40 up, the
// lines of a node next to each other.
std::uint64_t line_at(std::uint64_t node, std::uint64_t index) {
  return (node << cohsim::fabric::kNodeShift) + 0x1000 + 64 * index;
}

template <class V>
void check_same(LineMap<V>& map, const std::map<std::uint64_t, int>& want, std::uint64_t nodes, std::uint64_t per_node) {
  REQUIRE(map.size() == want.size());
  for (std::uint64_t n = 0; n < nodes; ++n)
    for (std::uint64_t i = 0; i < per_node; ++i) {
      const std::uint64_t line = line_at(n, i);
      auto it = want.find(line);
      auto* got = map.find(line);
      if (it == want.end()) {
        CHECK(got == nullptr);
      } else {
        REQUIRE(got != nullptr);
        CHECK(**got == it->second);
      }
    }
}

}  // namespace

TEST_CASE("line map: inserts, finds and erases like an ordered map, across growth", "[fabric][line_map]") {
  constexpr std::uint64_t kNodes = 8, kPerNode = 64;
  LineMap<std::unique_ptr<int>> map;
  std::map<std::uint64_t, int> want;
  cohsim::sim::RandomStream rng(7, "line_map_test");
  for (int step = 0; step < 4000; ++step) {
    const std::uint64_t line = line_at(rng.below(kNodes), rng.below(kPerNode));
    if (rng.below(3) == 0) {
      map.erase(line);
      want.erase(line);
    } else {
      auto [value, made] = map.try_emplace(line);
      CHECK(made == (want.count(line) == 0));
      if (made) *value = std::make_unique<int>(step);
      want.emplace(line, **value);
    }
    if (step % 500 == 0) check_same(map, want, kNodes, kPerNode);
  }
  check_same(map, want, kNodes, kPerNode);
  for (const auto& [line, v] : want) map.erase(line);
  CHECK(map.size() == 0);
  check_same(map, {}, kNodes, kPerNode);
}

TEST_CASE("line map: a value keeps its object across growth (the fabric points to it)", "[fabric][line_map]") {
  LineMap<std::unique_ptr<int>> map;
  auto [first, made] = map.try_emplace(line_at(0, 0));
  REQUIRE(made);
  *first = std::make_unique<int>(42);
  int* object = first->get();
  for (std::uint64_t i = 1; i < 1000; ++i) *map.try_emplace(line_at(i % 4, i)).first = std::make_unique<int>(0);
  REQUIRE(map.find(line_at(0, 0)) != nullptr);
  CHECK(map.find(line_at(0, 0))->get() == object);
  CHECK(*object == 42);
}
