// Reservation timeline of one link port: the busy intervals booked on it, in
// time order, so a message takes the earliest free slot at or after its own
// ready time instead of queueing behind a booking that starts later.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "cohsim/sim/time.hpp"

namespace cohsim::fabric {

/// Busy intervals [start, end) of one link port, sorted, disjoint, touching ones merged.
class LinkTimeline {
 public:
  /// The earliest start at or after `ready` of a free slot `length` long.
  sim::Tick earliest(sim::Tick ready, sim::Tick length) const;
  /// Books [start, start + length); `start` must come from earliest() with the same length.
  void book(sim::Tick start, sim::Tick length);
  /// Drops the bookings that ended at or before `now`: simulated time only
  /// moves forward and no message is ready before it, so they cannot matter.
  void forget_before(sim::Tick now);
  /// Bookings held: at most one per message still to leave the link after `now`.
  std::size_t bookings() const { return busy_.size(); }

 private:
  std::vector<std::pair<sim::Tick, sim::Tick>> busy_;
};

}  // namespace cohsim::fabric
