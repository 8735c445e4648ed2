// Engine benchmark workloads: parameters shared by the cohsim side (C++20)
// and the SystemC side (C++17). This header must stay valid C++17 and must
// not include any cohsim or SystemC header.
//
// Counting rule (identical on both sides): one event = one resumption of a
// waiting thread/process, the first activation of each thread included.
// Both sides increment one shared counter right after every wait returns
// (and once when the thread starts its work); on the cohsim side that count
// must equal Simulator::events_executed(), which the bench checks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <vector>

namespace cohsim_bench {

/// (a) `tasks` independent threads, each doing `iterations` timed waits.
struct DelayParams {
  int tasks = 1000;
  int iterations = 5000;
};

/// (b) `pairs` pairs of threads bouncing a token `rounds` times through
/// notify/wait at zero simulated time.
struct PingPongParams {
  int pairs = 500;
  int rounds = 10000;
};

/// The delay of iteration k of task i, in nanoseconds: 1..7, a deterministic
/// pattern that cycles through all seven values in every task.
inline std::uint64_t delay_ns(int task, int iteration) {
  return 1 + (3 * static_cast<std::uint64_t>(task) + 5 * static_cast<std::uint64_t>(iteration)) % 7;
}

/// Expected event count of each workload under the counting rule.
inline std::uint64_t expected_events(const DelayParams& p) {
  return static_cast<std::uint64_t>(p.tasks) * (static_cast<std::uint64_t>(p.iterations) + 1);
}
inline std::uint64_t expected_events(const PingPongParams& p) {
  return 2 * static_cast<std::uint64_t>(p.pairs) * (static_cast<std::uint64_t>(p.rounds) + 1);
}

/// One timed run of one workload on one engine. Rates use the thread's CPU
/// time (both engines run on one OS thread: SystemC's threads are user-level
/// coroutines), which a busy shared machine disturbs less than wall time.
struct Measurement {
  std::uint64_t events = 0;       ///< counted resumptions
  double cpu_seconds = 0;         ///< CPU time of this thread during the run
  double wall_seconds = 0;        ///< wall-clock time of the run
  std::uint64_t sim_span_ps = 0;  ///< simulated time covered by the run
  double events_per_s() const { return cpu_seconds > 0 ? static_cast<double>(events) / cpu_seconds : 0; }
  double wall_events_per_s() const { return wall_seconds > 0 ? static_cast<double>(events) / wall_seconds : 0; }
};

/// The median of timed runs (the mean of the middle two for an even count; v not empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Measures CPU (CLOCK_THREAD_CPUTIME_ID) and wall time from construction.
class Stopwatch {
 public:
  Stopwatch() : cpu0_(thread_cpu()), wall0_(std::chrono::steady_clock::now()) {}
  void stop(Measurement& m) const {
    m.cpu_seconds = thread_cpu() - cpu0_;
    m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  }

 private:
  static double thread_cpu() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  double cpu0_;
  std::chrono::steady_clock::time_point wall0_;
};

// --- SystemC side (systemc_workloads.cpp; absent when SystemC is not found) --
//
// SystemC elaborates once per process, so the SystemC side is one elaboration
// holding both workloads. Every thread first waits on its workload's "go"
// event; systemc_run_* notifies that event and calls sc_start() until the
// kernel starves (all threads back at their "go" wait). Workloads therefore
// run in separate phases and can be repeated any number of times.

/// Builds the modules and runs the initialisation phase (not timed).
void systemc_setup(const DelayParams& delay, const PingPongParams& pingpong);
Measurement systemc_run_delay();
Measurement systemc_run_pingpong();
/// "2.3.4-Accellera" or similar.
const char* systemc_version();
/// Runs body(argc, argv) as the program's sc_main, through SystemC's own
/// sc_elab_and_sim() (libsystemc's main() is not used: engine_bench owns main).
int systemc_main(int argc, char** argv, int (*body)(int, char**));

}  // namespace cohsim_bench
