#include "cohsim/fabric/tag_array.hpp"

#include <algorithm>

namespace cohsim::fabric {

TagArray::TagArray(std::uint64_t bytes, int assoc) : assoc_(std::max(assoc, 1)) {
  std::uint64_t lines = std::max<std::uint64_t>(bytes / 64, 1);
  sets_ = std::max<std::uint64_t>(lines / static_cast<std::uint64_t>(assoc_), 1);
  sets_data_.resize(sets_);
}

bool TagArray::touch(std::uint64_t line) {
  Way* w = find(ways_.data(), set_of(line), line);
  if (w) w->stamp = ++clock_;
  return w != nullptr;
}

bool TagArray::contains(std::uint64_t line) const { return find(ways_.data(), set_of(line), line) != nullptr; }

void TagArray::remove(std::uint64_t line) {
  Set& set = set_of(line);
  if (Way* w = find(ways_.data(), set, line)) {
    *w = ways_[set.first + set.size - 1];
    --set.size;
  }
}

void TagArray::grow(Set& set) {
  // A set's first block holds its associativity; one that grows past it (no
  // way was evictable) moves to a block twice as large and leaves the old one
  // unused, which is rare enough not to be worth reusing.
  const std::uint32_t capacity = set.capacity == 0 ? static_cast<std::uint32_t>(assoc_) : 2 * set.capacity;
  const std::size_t first = ways_.size();
  ways_.resize(first + capacity);
  std::copy_n(ways_.begin() + static_cast<std::ptrdiff_t>(set.first), set.size,
              ways_.begin() + static_cast<std::ptrdiff_t>(first));
  set.first = first;
  set.capacity = capacity;
}

}  // namespace cohsim::fabric
