// The measurement window every workload reports over. It opens when the
// warm-up ends and closes when the measured part ends; every metric of a
// workload covers it and nothing else:
//   - an operation counts when it completes inside the window (contains());
//   - a cumulative counter (a device's, a CPU's, the driver's statistics) is
//     read when the window opens and when it closes (track()), and the metric
//     is the change (delta()).
// A window fixed in time is scheduled in the simulator (schedule()); one that
// ends with an operation count is opened and closed by the workload as the
// counts are reached (open(), close()). A window may open and close several
// times (ipi-latency measures IPI by IPI): the changes and lengths add up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cohsim/sim/simulator.hpp"

namespace cohsim::models {

class MeasurementWindow {
 public:
  /// Reads a cumulative counter (a count, or a time in ticks).
  using Counter = std::function<std::uint64_t()>;

  /// Registers a counter (before the window first opens); returns the handle for delta().
  std::size_t track(Counter read) {
    if (!intervals_.empty()) throw std::logic_error("MeasurementWindow: counters are tracked before it opens");
    counters_.push_back(Tracked{std::move(read), 0, 0});
    return counters_.size() - 1;
  }

  /// Opens at `now` (the end of a warm-up): reads every tracked counter.
  void open(sim::Tick now) {
    begin_interval(now, sim::kNever);
    read_at_open();
  }
  /// Closes at `now`: adds every tracked counter's change since open().
  void close(sim::Tick now) {
    if (!open_) throw std::logic_error("MeasurementWindow: closed while not open");
    intervals_.back().second = now;
    add_changes();
  }
  /// A window fixed in time: opens at `from` and closes at `to` as events of `sim`.
  void schedule(sim::Simulator& sim, sim::Tick from, sim::Tick to) {
    if (to < from) throw std::logic_error("MeasurementWindow: closes before it opens");
    begin_interval(from, to);  // the event at `from` opens it
    sim.schedule(from, &on_event, this, kOpenEvent);
    sim.schedule(to, &on_event, this, kCloseEvent);
  }

  /// Whether an operation completing at `t` counts: t lies in (open, close] of
  /// an interval (the close of a scheduled window is known before it comes).
  bool contains(sim::Tick t) const {
    auto after = std::upper_bound(intervals_.begin(), intervals_.end(), t,
                                  [](sim::Tick x, const auto& in) { return x <= in.first; });
    return after != intervals_.begin() && t <= std::prev(after)->second;
  }
  /// Whether the window is open now.
  bool is_open() const { return open_; }
  /// Time the window was open, over its closed intervals.
  sim::Tick length() const {
    sim::Tick sum = 0;
    for (const auto& [from, to] : intervals_)
      if (to != sim::kNever) sum += to - from;
    return sum;
  }
  /// length() in seconds.
  double seconds() const { return static_cast<double>(length()) * 1e-12; }
  /// The change of tracked counter `handle` while the window was open.
  std::uint64_t delta(std::size_t handle) const { return counters_.at(handle).change; }

 private:
  struct Tracked {
    Counter read;
    std::uint64_t at_open, change;
  };
  static constexpr std::uint64_t kOpenEvent = 0, kCloseEvent = 1;

  void begin_interval(sim::Tick from, sim::Tick to) {
    if (open_ || (!intervals_.empty() && (intervals_.back().second == sim::kNever || from < intervals_.back().second)))
      throw std::logic_error("MeasurementWindow: opened again before it closed");
    intervals_.emplace_back(from, to);
  }
  void read_at_open() {
    open_ = true;
    for (auto& c : counters_) c.at_open = c.read();
  }
  void add_changes() {
    open_ = false;
    for (auto& c : counters_) c.change += c.read() - c.at_open;
  }
  static void on_event(void* self, std::uint64_t which) {
    auto* w = static_cast<MeasurementWindow*>(self);
    if (which == kOpenEvent) w->read_at_open();
    else w->add_changes();
  }

  std::vector<Tracked> counters_;
  std::vector<std::pair<sim::Tick, sim::Tick>> intervals_;  ///< (opened, closed], in time order
  bool open_ = false;
};

}  // namespace cohsim::models
