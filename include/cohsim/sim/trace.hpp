// Timeline traces in Chrome trace-event JSON (opens in Perfetto / chrome://tracing):
// a track per CPU and per device, slices for kernel functions and waits, flow
// arrows for IPIs and cache-line transfers. Bounded by a time window. Only
// tracks that have events are written, each under its name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cohsim/sim/time.hpp"

namespace cohsim::sim {

class Tracer {
 public:
  /// Records only what overlaps [from, to].
  Tracer(Tick from = 0, Tick to = kNever) : from_(from), to_(to) {}
  /// Names the trace's one process (viewers show it instead of "Process 1").
  void name_process(std::string name) { process_name_ = std::move(name); }
  /// Names a track (tid: a CPU's or a device's interconnect endpoint); a later
  /// name replaces an earlier one. Tracks without events are not written.
  void name_track(int track, std::string name) { track_names_[track] = std::move(name); }
  /// A complete slice on `track` from `begin` to `end`.
  void slice(int track, std::string_view name, std::string_view category, Tick begin, Tick end);
  /// An arrow from (from_track, t0) to (to_track, t1), e.g. an IPI or a line transfer.
  void flow(std::string_view name, int from_track, Tick t0, int to_track, Tick t1);
  /// An instant marker.
  void instant(int track, std::string_view name, Tick t);
  /// Approximate size of the JSON that write() would produce.
  std::uint64_t bytes_estimate() const { return bytes_; }
  std::size_t events() const { return events_.size(); }
  /// The trace as JSON text ({"traceEvents": [...], "displayTimeUnit": "ns"}): the
  /// process's name, then each track with events (ascending) named, then the events by time.
  std::string to_json() const;

 private:
  struct Event {
    char ph;
    int track;
    std::string name;
    std::string cat;
    Tick ts;
    Tick dur;
    std::uint64_t id;
  };
  bool in_window(Tick begin, Tick end) const { return end >= from_ && begin <= to_; }
  void add(Event e);
  Tick from_, to_;
  std::vector<Event> events_;
  std::string process_name_ = "cohsim";
  std::map<int, std::string> track_names_;
  std::uint64_t next_flow_ = 1;
  std::uint64_t bytes_ = 64;
};

/// Measures a slice from construction to finish() (coroutine-friendly:
/// call finish() before co_return; nothing is recorded without a tracer).
class TraceScope {
 public:
  TraceScope(Tracer* t, int track, std::string_view name, std::string_view category, Tick now)
      : t_(t), track_(track), name_(name), cat_(category), begin_(now) {}
  void finish(Tick now) {
    if (t_ != nullptr) t_->slice(track_, name_, cat_, begin_, now);
    t_ = nullptr;
  }

 private:
  Tracer* t_;
  int track_;
  std::string_view name_, cat_;
  Tick begin_;
};

}  // namespace cohsim::sim
