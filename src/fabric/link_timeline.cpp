#include "cohsim/fabric/link_timeline.hpp"

#include <algorithm>

namespace cohsim::fabric {

sim::Tick LinkTimeline::earliest(sim::Tick ready, sim::Tick length) const {
  sim::Tick start = ready;
  // The first booking that ends after `ready`; ends are sorted like starts.
  auto it = std::upper_bound(busy_.begin(), busy_.end(), ready,
                             [](sim::Tick t, const auto& b) { return t < b.second; });
  for (; it != busy_.end(); ++it) {
    if (it->first >= start + length) break;  // the gap before this booking fits
    start = std::max(start, it->second);
  }
  return start;
}

void LinkTimeline::book(sim::Tick start, sim::Tick length) {
  if (length == 0) return;
  const sim::Tick end = start + length;
  auto next = std::lower_bound(busy_.begin(), busy_.end(), start,
                               [](const auto& b, sim::Tick t) { return b.first < t; });
  const bool joins_prev = next != busy_.begin() && std::prev(next)->second == start;
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

void LinkTimeline::forget_before(sim::Tick now) {
  if (busy_.empty() || busy_.front().second > now) return;  // the common case: nothing ended yet
  auto ended = std::upper_bound(busy_.begin(), busy_.end(), now,
                                [](sim::Tick t, const auto& b) { return t < b.second; });
  busy_.erase(busy_.begin(), ended);
}

}  // namespace cohsim::fabric
