// The lock benchmarks' measurement: `epochs` equal parts of the measured
// time, each opened after a settling share. CNA prefers one node until its
// threshold (2^16 intra-node hand-offs, tens of milliseconds here) flushes
// the secondary queue, and the lock's rate in an epoch depends on which node
// it prefers (the lock's home node or another). A run of seconds goes through
// many such epochs of equal hand-off counts, so its rate is the harmonic mean
// of the epochs' rates. The model compresses them: at the start of each part
// the threshold is declared reached (Cna::expire_threshold: the next head
// flushes, exactly as at the 2^16-th hand-off), and each part's rate is
// measured once the queue has settled. The stock lock is measured the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/scenario/scenario.hpp"
#include "cohsim/sim/simulator.hpp"
#include "models/kernel/cna.hpp"
#include "models/workloads/measurement_window.hpp"

namespace cohsim::models {

/// When the threads start and what is measured: the lock benchmarks' shared parameters.
struct LockRunTiming {
  sim::Tick start_stagger = 0, warmup = 0, duration = 0;
  int epochs = 4;
  double settle = 0.8;
};

inline LockRunTiming read_lock_run_timing(config::Reader& p) {
  using config::Spec;
  LockRunTiming t;
  t.start_stagger = p.time(
      "start_stagger",
      Spec{.doc = "each thread starts at a random time below this (and the window opens after it): wide enough "
                  "for the threads to join the lock's FIFO rotation one at a time in a random order, standing in "
                  "for the order that timer ticks and migrations leave in a run of seconds (a start all at once "
                  "would sort the queue by distance to the lock's home, and FIFO would keep that order)",
           .def = "200us", .min = 0, .max = 1e12});
  t.warmup = p.time("warmup", Spec{.doc = "simulated time before measuring: the start's queue order sorted out, and "
                                         "CNA's first move to a secondary queue (after about 128 hand-offs with the "
                                         "shuffle reduction) made",
                                  .def = "1ms", .min = 0, .max = 1e12});
  t.duration = p.time("duration", Spec{.doc = "measured simulated time", .def = "12ms", .min = 1e6, .max = 1e12});
  t.epochs = static_cast<int>(p.integer(
      "epochs", Spec{.doc = "parts of the measured time; CNA's threshold is declared reached at the start of each, "
                            "so the rate is the harmonic mean over that many of its preference epochs "
                            "(models/workloads/lock_epochs.hpp)",
                     .def = 4, .min = 1, .max = 64}));
  t.settle = p.number("epoch_settle", Spec{.doc = "share of each part before it is measured: after a flush CNA "
                                                 "re-sorts the queue, and with the shuffle reduction it first "
                                                 "runs as the stock lock until a scan moves a waiter (up to about "
                                                 "2 ms at 142 threads)",
                                          .def = 0.8, .min = 0, .max = 0.95});
  return t;
}

/// CNA's counters as metrics (cna.*) when the lock is CNA.
inline void add_cna_metrics(scenario::Results& r, const kernel::Cna* cna) {
  if (cna == nullptr) return;
  r.add("cna.local_handoffs", static_cast<double>(cna->stats().local_handoffs));
  r.add("cna.moved", static_cast<double>(cna->stats().moved));
  r.add("cna.flushes", static_cast<double>(cna->stats().flushes));
  r.add("cna.threshold_flushes", static_cast<double>(cna->stats().threshold_flushes));
}

class LockEpochs {
 public:
  /// The measured time [start, start + length) in `epochs` parts, each measured after `settle` of its length.
  /// The measured time of a run with `t`: after its start stagger and warm-up, `t.duration` long.
  explicit LockEpochs(const LockRunTiming& t) : LockEpochs(t.warmup + t.start_stagger, t.duration, t.epochs, t.settle) {}
  LockEpochs(sim::Tick start, sim::Tick length, int epochs, double settle)
      : start_(start), part_(length / epochs), settle_(static_cast<sim::Tick>(static_cast<double>(part_) * settle)),
        ops_(static_cast<std::size_t>(epochs), 0) {}
  /// Schedules the window's intervals (one per part, after its settling time).
  void schedule(MeasurementWindow& w, sim::Simulator& sim) const {
    for (std::size_t k = 0; k < ops_.size(); ++k) w.schedule(sim, begin(k) + settle_, begin(k) + part_);
  }
  /// When part k begins (the threshold is declared reached then, for k > 0 and for k = 0 too).
  sim::Tick begin(std::size_t k) const { return start_ + static_cast<sim::Tick>(k) * part_; }
  std::size_t epochs() const { return ops_.size(); }
  sim::Tick end() const { return begin(ops_.size()); }
  /// At the start of each part, declares CNA's threshold reached for the lock whose word is `lock_val`
  /// (nothing for the stock lock, `cna` nullptr). Spawn it once, before the run.
  sim::Task<void> expire_at_each_part(sim::Simulator& sim, kernel::Cna* cna, fabric::Addr lock_val) const {
    for (std::size_t k = 0; k < epochs(); ++k) {
      co_await sim.delay(begin(k) - sim.now());
      if (cna != nullptr) cna->expire_threshold(lock_val);
    }
  }
  /// Counts an operation completed at `t` inside the window.
  void count(sim::Tick t) {
    if (t < start_) return;
    const auto k = static_cast<std::size_t>((t - start_) / part_);
    if (k < ops_.size()) ++ops_[k];
  }
  /// Operations per microsecond over a run of equal-count epochs: the harmonic mean of the parts' rates.
  double rate_per_us() const {
    const double measured_us = sim::to_ns(part_ - settle_) / 1e3;
    double inverse = 0;
    for (auto n : ops_) {
      if (n == 0) return 0;
      inverse += measured_us / static_cast<double>(n);
    }
    return static_cast<double>(ops_.size()) / inverse;
  }
  /// A correctness failure line when some part completed no operation (the rate would read 0), else "".
  std::string empty_part() const {
    for (std::size_t k = 0; k < ops_.size(); ++k)
      if (ops_[k] == 0)
        return "part " + std::to_string(k + 1) + " of " + std::to_string(ops_.size()) +
               " of the measured time completed no lock operation: lengthen duration or use fewer epochs";
    return "";
  }
  /// The parts' rates, per microsecond.
  std::vector<double> rates() const {
    std::vector<double> r;
    for (auto n : ops_) r.push_back(static_cast<double>(n) / (sim::to_ns(part_ - settle_) / 1e3));
    return r;
  }

 private:
  sim::Tick start_, part_, settle_;
  std::vector<std::uint64_t> ops_;
};

}  // namespace cohsim::models
