// A set-associative tag store with LRU replacement (tags only: data and
// coherence state live with the cache controller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cohsim::fabric {

class TagArray {
 public:
  TagArray() = default;
  /// `bytes` of capacity in 64-byte lines, `assoc` ways (a power-of-two set count is not required).
  TagArray(std::uint64_t bytes, int assoc);
  /// True (and the line becomes most recent) if present.
  bool touch(std::uint64_t line);
  bool contains(std::uint64_t line) const;
  /// Inserts `line` (most recent). If the set is full, evicts the least
  /// recent line for which `evictable(line)` is true and returns it; if none
  /// is evictable the set grows past its associativity for now.
  template <class Pred>
  std::optional<std::uint64_t> insert(std::uint64_t line, Pred evictable);
  void remove(std::uint64_t line);
  std::uint64_t sets() const { return sets_; }
  int ways() const { return assoc_; }

 private:
  struct Way {
    std::uint64_t line;
    std::uint64_t stamp;
  };
  /// A set's ways: `size` of them from ways_[first], in a block of `capacity`
  /// (none until the set's first insert, so an array's memory follows the
  /// sets in use, not its capacity).
  struct Set {
    std::size_t first = 0;
    std::uint32_t size = 0;
    std::uint32_t capacity = 0;
  };
  Set& set_of(std::uint64_t line) { return sets_data_[(line >> 6) % sets_]; }
  const Set& set_of(std::uint64_t line) const { return sets_data_[(line >> 6) % sets_]; }
  /// `line`'s way in `set` of `ways` (ways_.data(), const or not), or null when absent.
  template <class W>
  static W* find(W* ways, const Set& set, std::uint64_t line) {
    for (W *w = ways + set.first, *end = w + set.size; w != end; ++w)
      if (w->line == line) return w;
    return nullptr;
  }
  /// Gives `set` a block with room for one more way.
  void grow(Set& set);
  std::uint64_t sets_ = 1;
  int assoc_ = 1;
  std::uint64_t clock_ = 0;
  std::vector<Set> sets_data_;
  std::vector<Way> ways_;  ///< every set's block, one after the other
};

template <class Pred>
std::optional<std::uint64_t> TagArray::insert(std::uint64_t line, Pred evictable) {
  Set& set = set_of(line);
  if (Way* w = find(ways_.data(), set, line)) {
    w->stamp = ++clock_;
    return std::nullopt;
  }
  std::optional<std::uint64_t> victim;
  if (set.size >= static_cast<std::uint32_t>(assoc_)) {
    // Stamps are unique, so the least recent evictable way is one whatever the ways' order.
    Way* const begin = ways_.data() + set.first;
    Way* const end = begin + set.size;
    Way* best = end;
    for (Way* w = begin; w != end; ++w)
      if (evictable(w->line) && (best == end || w->stamp < best->stamp)) best = w;
    if (best != end) {
      victim = best->line;
      *best = end[-1];
      --set.size;
    }
  }
  if (set.size == set.capacity) grow(set);
  ways_[set.first + set.size++] = {line, ++clock_};
  return victim;
}

}  // namespace cohsim::fabric
