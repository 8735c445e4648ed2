#include "cohsim/fabric/link_timeline.hpp"

#include <algorithm>

namespace cohsim::fabric {

sim::Tick LinkTimeline::earliest_between(sim::Tick ready, sim::Tick length) const {
  sim::Tick start = ready;
  // The first booking that ends after `ready`; ends are sorted like starts.
  auto it = std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(first_), busy_.end(), ready,
                             [](sim::Tick t, const auto& b) { return t < b.second; });
  for (; it != busy_.end(); ++it) {
    if (it->first >= start + length) break;  // the gap before this booking fits
    start = std::max(start, it->second);
  }
  return start;
}

void LinkTimeline::book_between(sim::Tick start, sim::Tick length) {
  const sim::Tick end = start + length;
  const auto live = busy_.begin() + static_cast<std::ptrdiff_t>(first_);
  auto next = std::lower_bound(live, busy_.end(), start, [](const auto& b, sim::Tick t) { return b.first < t; });
  // An ended booking is as good as gone: the new one does not join it.
  const bool joins_prev = next != live && std::prev(next)->second == start;
  const bool joins_next = next != busy_.end() && next->first == end;
  if (joins_prev && joins_next) {
    std::prev(next)->second = next->second;
    busy_.erase(next);
  } else if (joins_prev) {
    std::prev(next)->second = end;
  } else if (joins_next) {
    next->first = start;
  } else {
    busy_.insert(next, {start, end});
  }
}

void LinkTimeline::drop_ended() {
  busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(first_));
  first_ = 0;
}

}  // namespace cohsim::fabric
