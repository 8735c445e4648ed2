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
  /// True when no booking ends after `ready`: the port is free from then on.
  bool free_from(sim::Tick ready) const { return busy_.empty() || last_end_ <= ready; }
  /// The earliest start at or after `ready` of a free slot `length` long.
  sim::Tick earliest(sim::Tick ready, sim::Tick length) const {
    // Most messages find nothing booked after their ready time.
    if (free_from(ready)) return ready;
    return earliest_between(ready, length);
  }
  /// Books [start, start + length); `start` must come from earliest() with the same length.
  void book(sim::Tick start, sim::Tick length) {
    if (length == 0) return;
    // Most bookings come after every other one: they extend or follow the last.
    if (busy_.empty() || last_end_ < start) {
      busy_.push_back({start, start + length});
      last_end_ = start + length;
    } else if (last_end_ == start) {
      busy_.back().second = start + length;
      last_end_ = start + length;
    } else {
      book_between(start, length);
    }
  }
  /// The uncontended case of earliest() and book() in one: drops the
  /// bookings ended by `now` and, when the port is free from `ready` on,
  /// books [ready, ready + length) and returns true; false (nothing booked)
  /// when a booking ends after `ready`.
  bool book_if_free(sim::Tick now, sim::Tick ready, sim::Tick length) {
    forget_before(now);
    if (!free_from(ready)) return false;
    book(ready, length);
    return true;
  }
  /// Drops the bookings that ended at or before `now`: simulated time only
  /// moves forward and no message is ready before it, so they cannot matter.
  void forget_before(sim::Tick now) {
    if (busy_.empty()) return;
    // Ends are sorted like starts: when the last has ended, all have (the
    // common case on a link that is not busy, decided without reading the
    // bookings, which a big machine's many links keep out of the host's
    // cache). Otherwise the ended bookings lead: they are skipped here and
    // erased only once they are at least half the vector, so the live
    // bookings moved never outnumber the ended ones dropped.
    if (last_end_ <= now) {
      busy_.clear();
      first_ = 0;
      return;
    }
    while (busy_[first_].second <= now) ++first_;  // stops at the last booking at the latest
    if (2 * first_ >= busy_.size()) drop_ended();
  }
  /// Bookings held since the last forget_before: at most one per message still
  /// to leave the port after that time (a link whose first port is free looks
  /// at no other, so its other ports drop ended bookings only when next asked).
  std::size_t bookings() const { return busy_.size() - first_; }

 private:
  /// earliest() when some booking ends after `ready`.
  sim::Tick earliest_between(sim::Tick ready, sim::Tick length) const;
  /// book() when some booking ends after `start`.
  void book_between(sim::Tick start, sim::Tick length);
  /// Erases the bookings before first_.
  void drop_ended();

  std::vector<std::pair<sim::Tick, sim::Tick>> busy_;
  std::size_t first_ = 0;  ///< busy_[0, first_) ended at or before the last forget_before()
  /// The end of the last booking, busy_.back().second while busy_ is not
  /// empty (only the two appending cases of book() change it: a booking
  /// made between others ends before the last one).
  sim::Tick last_end_ = 0;
};

}  // namespace cohsim::fabric
