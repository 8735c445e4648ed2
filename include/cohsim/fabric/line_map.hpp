// A hash map keyed by line address, for the fabric's per-access look-ups (a
// core's cache entries, the home lines): open addressing with linear probing
// in one flat array, so a look-up is a multiply, a shift and usually one
// compare, where std::unordered_map divides by a prime and follows a node
// pointer. Values are moved when the table grows or an entry is erased, so
// the fabric keeps objects that others point to behind a unique_ptr.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace cohsim::fabric {

template <class V>
class LineMap {
 public:
  LineMap() { resize(kInitialSlots); }

  /// The value of `line`, or nullptr.
  V* find(std::uint64_t line) {
    for (std::size_t i = home(line);; i = next(i)) {
      if (slots_[i].key == line) return &slots_[i].value;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }
  const V* find(std::uint64_t line) const { return const_cast<LineMap*>(this)->find(line); }
  bool contains(std::uint64_t line) const { return find(line) != nullptr; }

  /// The value of `line`, value-initialised if it was absent; true if inserted.
  std::pair<V*, bool> try_emplace(std::uint64_t line) {
    std::size_t i = home(line);
    for (; slots_[i].key != kEmpty; i = next(i))
      if (slots_[i].key == line) return {&slots_[i].value, false};
    if (2 * (size_ + 1) > slots_.size()) {  // at most half full: probes stay short
      grow();
      return try_emplace(line);
    }
    slots_[i].key = line;
    slots_[i].value = V{};
    ++size_;
    return {&slots_[i].value, true};
  }

  /// Removes `line` if present. Later entries of its probe run move back
  /// into the gap (no tombstones), so pointers to values may change.
  void erase(std::uint64_t line) {
    std::size_t gap = home(line);
    for (; slots_[gap].key != line; gap = next(gap))
      if (slots_[gap].key == kEmpty) return;
    for (std::size_t i = next(gap); slots_[i].key != kEmpty; i = next(i)) {
      // An entry may fill the gap if its home slot does not lie in (gap, i].
      const std::size_t h = home(slots_[i].key);
      if (((i - h) & mask()) >= ((i - gap) & mask())) {
        slots_[gap] = std::move(slots_[i]);
        gap = i;
      }
    }
    slots_[gap].key = kEmpty;
    slots_[gap].value = V{};
    --size_;
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // not a line address (those are 64-byte aligned)
  static constexpr std::size_t kInitialSlots = 8;
  struct Slot {
    std::uint64_t key = kEmpty;
    V value{};
  };
  std::size_t mask() const { return mask_; }
  std::size_t next(std::size_t i) const { return (i + 1) & mask_; }
  /// Fibonacci hashing of the line number, its high half folded in first:
  /// the node number sits in high address bits (bit 40 up), which a multiply
  /// alone carries only weakly into the top bits that pick the slot.
  std::size_t home(std::uint64_t line) const {
    std::uint64_t k = line >> 6;
    k ^= k >> 28;
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void resize(std::size_t slots) {  // a power of two
    slots_.resize(slots);
    mask_ = slots - 1;
    shift_ = 64 - std::countr_zero(slots);
  }
  [[gnu::noinline]] void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    resize(old.size() * 2);
    for (Slot& s : old)
      if (s.key != kEmpty) {
        std::size_t i = home(s.key);
        while (slots_[i].key != kEmpty) i = next(i);
        slots_[i] = std::move(s);
      }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace cohsim::fabric
