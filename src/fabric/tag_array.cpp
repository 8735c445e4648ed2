#include "cohsim/fabric/tag_array.hpp"

#include <algorithm>

namespace cohsim::fabric {

TagArray::TagArray(std::uint64_t bytes, int assoc) : assoc_(std::max(assoc, 1)) {
  std::uint64_t lines = std::max<std::uint64_t>(bytes / 64, 1);
  sets_ = std::max<std::uint64_t>(lines / static_cast<std::uint64_t>(assoc_), 1);
  sets_data_.resize(sets_);
}

bool TagArray::touch(std::uint64_t line) {
  for (auto& w : set_of(line))
    if (w.line == line) {
      w.stamp = ++clock_;
      return true;
    }
  return false;
}

bool TagArray::contains(std::uint64_t line) const {
  for (const auto& w : set_of(line))
    if (w.line == line) return true;
  return false;
}

void TagArray::remove(std::uint64_t line) {
  auto& set = set_of(line);
  for (std::size_t i = 0; i < set.size(); ++i)
    if (set[i].line == line) {
      set[i] = set.back();
      set.pop_back();
      return;
    }
}

}  // namespace cohsim::fabric
