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
#include <vector>

#include "cohsim/sim/simulator.hpp"
#include "models/workloads/measurement_window.hpp"

namespace cohsim::models {

class LockEpochs {
 public:
  /// The measured time [start, start + length) in `epochs` parts, each measured after `settle` of its length.
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
