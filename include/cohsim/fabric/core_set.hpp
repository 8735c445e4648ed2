// CoreSet: an exact set of caching agents (cores, and the dies' L3s), with no
// fixed width. A directory entry or a line's statistics hold one; it grows
// to the highest member (64 agents per word), so a line shared by a few
// low-numbered cores costs one word (plus the vector's header and heap
// block), and a 4,096-CPU machine at most 64 words (512 bytes) per set.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cohsim::fabric {

class CoreSet {
 public:
  /// True when agent `i` is a member.
  bool test(std::size_t i) const {
    const std::size_t w = i / 64;
    return w < words_.size() && ((words_[w] >> (i % 64)) & 1U) != 0;
  }
  /// Adds agent `i`.
  void set(std::size_t i) {
    const std::size_t w = i / 64;
    if (w >= words_.size()) words_.resize(w + 1, 0);
    words_[w] |= std::uint64_t{1} << (i % 64);
  }
  /// Removes every member (keeps the storage).
  void reset() {
    for (auto& w : words_) w = 0;
  }
  /// Calls f(agent) for each member, in increasing order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w)
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        f(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
  }
  /// True when every member satisfies pred.
  template <class P>
  bool all_of(P&& pred) const {
    for (std::size_t w = 0; w < words_.size(); ++w)
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        if (!pred(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)))) return false;
    return true;
  }

 private:
  std::vector<std::uint64_t> words_;
};

}  // namespace cohsim::fabric
