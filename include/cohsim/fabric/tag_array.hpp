// A set-associative tag store with LRU replacement (tags only: data and
// coherence state live with the cache controller).
#pragma once

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
  std::vector<Way>& set_of(std::uint64_t line) { return sets_data_[(line >> 6) % sets_]; }
  const std::vector<Way>& set_of(std::uint64_t line) const { return sets_data_[(line >> 6) % sets_]; }
  std::uint64_t sets_ = 1;
  int assoc_ = 1;
  std::uint64_t clock_ = 0;
  std::vector<std::vector<Way>> sets_data_;
};

template <class Pred>
std::optional<std::uint64_t> TagArray::insert(std::uint64_t line, Pred evictable) {
  auto& set = set_of(line);
  for (auto& w : set)
    if (w.line == line) {
      w.stamp = ++clock_;
      return std::nullopt;
    }
  std::optional<std::uint64_t> victim;
  if (static_cast<int>(set.size()) >= assoc_) {
    std::size_t best = set.size();
    for (std::size_t i = 0; i < set.size(); ++i)
      if (evictable(set[i].line) && (best == set.size() || set[i].stamp < set[best].stamp)) best = i;
    if (best != set.size()) {
      victim = set[best].line;
      set[best] = set.back();
      set.pop_back();
    }
  }
  set.push_back({line, ++clock_});
  return victim;
}

}  // namespace cohsim::fabric
