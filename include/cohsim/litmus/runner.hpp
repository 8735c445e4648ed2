// Runs a litmus test on simulated cores: each thread's program is issued to a
// cpu::Cpu of a scenario::Machine in program order, loads left in flight
// (register values stay lazy until an address, a store's data, an atomic's
// operand, a branch or the final state needs them), branches predicted and
// rewound when wrong, N runs on fresh addresses with random start offsets,
// per-access timing jitter and initial cache states from named random streams.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohsim/litmus/test.hpp"
#include "cohsim/scenario/machine.hpp"

namespace cohsim::litmus {

/// A run that could not execute (an address outside the test's locations, a
/// thread that does not terminate, a stuck simulation).
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One final state: a value per cell of the test (Test::cells order).
using State = std::vector<Value>;

/// One distinct final state and how many runs ended in it.
struct Outcome {
  State state;
  std::uint64_t count = 0;
  bool satisfies = false;  ///< the condition's proposition holds in it
};

/// What N runs of a test gave.
struct TestResult {
  std::string platform;          ///< the machine's name
  std::vector<int> cpus;         ///< the CPU each thread ran on
  bool placed = false;           ///< cpus came from --cpus, not the spread placement
  sim::Tick start_spread = 0;    ///< start offsets uniform in [0, start_spread)
  sim::Tick jitter = 0;          ///< per-access perturbation uniform in [0, jitter)
  sim::Tick jitter_low = 0, jitter_high = 0;  ///< in half the runs, each thread's jitter bound is one of 4 from low to high
  int warm_runs_in_8 = 0;        ///< runs in 8 that start with lines preloaded into caches
  std::uint64_t runs = 0;
  std::vector<Outcome> outcomes; ///< sorted by state
  std::uint64_t positive = 0;    ///< runs whose final state satisfies the proposition
  std::uint64_t negative = 0;
  /// exists / ~exists: some run satisfied the proposition; forall: some run violated it.
  bool witnessed = false;
};

/// True when the proposition holds in `state`.
bool satisfies(const Prop& p, const State& state);

/// Where a test's threads run: spread evenly over the machine's physical cores
/// (thread i on the first hardware thread of core i * (cores / threads)), so
/// that threads sit on different clusters, dies and sockets as far as the
/// machine has them, and never on SMT siblings when there are cores enough.
std::vector<int> thread_placement(const topo::Topology& topology, int threads);

/// Runs `test` `runs` times on `machine` (its cpu.arch must match the test's).
/// Randomness: streams "litmus.home", "litmus.start", "litmus.jitter", "litmus.noise", "litmus.cache" and
/// "litmus.branch" from `seed`.
/// `cpus`: thread i on cpus[i] (at least one per thread, each on the machine,
/// none twice); empty: spread over the cores (thread_placement).
TestResult run_test(const Test& test, scenario::Machine& machine, std::uint64_t runs, std::uint64_t seed,
                    const std::vector<int>& cpus = {});

}  // namespace cohsim::litmus
