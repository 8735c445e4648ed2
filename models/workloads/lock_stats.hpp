// What the lock benchmarks report about one contended lock beside their
// totals: per-thread counts (fairness), the hand-offs between NUMA nodes
// (locality), how many acquisitions by others a waiter sat through
// (bypass), and a model-side check that one thread at a time holds it.
// Every count is of acquisitions inside the measurement window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "cohsim/scenario/scenario.hpp"
#include "cohsim/topo/topology.hpp"

namespace cohsim::models {

class LockStats {
 public:
  /// Threads 0..n-1 run on `cpus`.
  LockStats(const topo::Topology& topo, std::vector<int> cpus)
      : topo_(topo), cpus_(std::move(cpus)), ops_(cpus_.size(), 0), wait_from_(cpus_.size(), 0) {}

  /// Thread `t` starts waiting for the lock.
  void waiting(int t) { wait_from_.at(static_cast<std::size_t>(t)) = acquisitions_; }
  /// Thread `t` holds the lock; `counted`: inside the window.
  void acquired(int t, bool counted) {
    if (inside_++ != 0) ++violations_;
    const auto ti = static_cast<std::size_t>(t);
    if (counted) {
      ++ops_[ti];
      max_bypass_ = std::max(max_bypass_, acquisitions_ - wait_from_[ti]);
      if (holder_ == t) ++reacquired_;
      else if (holder_ >= 0) {
        ++handoffs_;
        if (topo_.node_of_cpu(cpus_[static_cast<std::size_t>(holder_)]) == topo_.node_of_cpu(cpus_[ti])) ++local_;
      }
    }
    holder_ = t;
    ++acquisitions_;
  }
  /// The holder lets go.
  void released() { --inside_; }

  std::uint64_t total() const {
    std::uint64_t n = 0;
    for (auto o : ops_) n += o;
    return n;
  }
  std::uint64_t violations() const { return violations_; }
  std::uint64_t max_bypass() const { return max_bypass_; }
  const std::vector<std::uint64_t>& per_thread() const { return ops_; }

  /// Adds `<prefix>ops_min`, `ops_max`, `fairness` (min / max), `local_handoff_share`,
  /// `reacquired_share`, `max_bypass` and `exclusion_violations`.
  void add_metrics(scenario::Results& r, const std::string& prefix) const {
    const auto [lo, hi] = std::minmax_element(ops_.begin(), ops_.end());
    r.add(prefix + "ops_min", static_cast<double>(*lo));
    r.add(prefix + "ops_max", static_cast<double>(*hi));
    r.add(prefix + "fairness", *hi == 0 ? 0.0 : static_cast<double>(*lo) / static_cast<double>(*hi));
    r.add(prefix + "local_handoff_share", handoffs_ == 0 ? 0.0 : static_cast<double>(local_) / static_cast<double>(handoffs_));
    const std::uint64_t n = total();
    r.add(prefix + "reacquired_share", n == 0 ? 0.0 : static_cast<double>(reacquired_) / static_cast<double>(n));
    r.add(prefix + "max_bypass", static_cast<double>(max_bypass_));
    r.add(prefix + "exclusion_violations", static_cast<double>(violations_));
  }

 private:
  const topo::Topology& topo_;
  std::vector<int> cpus_;
  std::vector<std::uint64_t> ops_, wait_from_;
  std::uint64_t acquisitions_ = 0, handoffs_ = 0, local_ = 0, reacquired_ = 0, max_bypass_ = 0, violations_ = 0;
  int holder_ = -1, inside_ = 0;
};

}  // namespace cohsim::models
