// The engine benchmark workloads on the cohsim discrete-event core (C++20).
// Same shapes and the same counting rule as systemc_workloads.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cohsim/sim/simulator.hpp"
#include "workloads.hpp"

namespace cohsim_bench {

namespace csim = cohsim::sim;

// (a) One independent task looping over timed waits.
inline csim::Task<void> cohsim_delay_task(csim::Simulator& sim, int index, int iterations,
                                          std::uint64_t& resumptions) {
  ++resumptions;
  for (int k = 0; k < iterations; ++k) {
    co_await sim.delay(delay_ns(index, k) * csim::kNs);
    ++resumptions;
  }
}

// (b) A notifies B's signal and waits on its own; B answers.
inline csim::Task<void> cohsim_ping(csim::Simulator& sim, csim::Signal& to_ping, csim::Signal& to_pong,
                                    int rounds, std::uint64_t& resumptions) {
  ++resumptions;
  for (int r = 0; r < rounds; ++r) {
    to_pong.notify_all(sim);
    co_await to_ping.wait(sim, "pong");
    ++resumptions;
  }
}
inline csim::Task<void> cohsim_pong(csim::Simulator& sim, csim::Signal& to_ping, csim::Signal& to_pong,
                                    int rounds, std::uint64_t& resumptions) {
  ++resumptions;
  for (int r = 0; r < rounds; ++r) {
    co_await to_pong.wait(sim, "ping");
    ++resumptions;
    to_ping.notify_all(sim);
  }
}

/// The result of one cohsim run, with the engine's own event count.
struct CohsimMeasurement : Measurement {
  std::uint64_t events_executed = 0;
};

/// Ping-pong never advances time: lift the livelock watchdog's per-tick cap.
inline csim::RunLimits bench_limits() {
  csim::RunLimits limits;
  limits.max_events_per_tick = std::numeric_limits<std::uint64_t>::max();
  return limits;
}

/// Runs the simulation to its end and fills the measurement both workloads report.
inline CohsimMeasurement finish_run(csim::Simulator& sim, const Stopwatch& watch, const std::uint64_t& resumptions) {
  CohsimMeasurement m;
  sim.run(bench_limits());
  watch.stop(m);
  m.events = resumptions;
  m.sim_span_ps = sim.now();
  m.events_executed = sim.events_executed();
  return m;
}

/// Runs (a) once. Timed: spawning the tasks and the run.
inline CohsimMeasurement cohsim_run_delay(const DelayParams& p) {
  csim::Simulator sim;
  std::uint64_t resumptions = 0;
  const Stopwatch watch;
  for (int i = 0; i < p.tasks; ++i)
    sim.spawn("delay" + std::to_string(i), cohsim_delay_task(sim, i, p.iterations, resumptions));
  return finish_run(sim, watch, resumptions);
}

/// Runs (b) once. Each pair's B (pong) is spawned before its A (ping), so B
/// already waits when A's first notify comes (notify_all wakes only current
/// waiters; SystemC's delta notification makes the order irrelevant there).
inline CohsimMeasurement cohsim_run_pingpong(const PingPongParams& p) {
  csim::Simulator sim;
  std::vector<csim::Signal> to_ping(static_cast<std::size_t>(p.pairs));
  std::vector<csim::Signal> to_pong(static_cast<std::size_t>(p.pairs));
  std::uint64_t resumptions = 0;
  const Stopwatch watch;
  for (int i = 0; i < p.pairs; ++i) {
    auto& a = to_ping[static_cast<std::size_t>(i)];
    auto& b = to_pong[static_cast<std::size_t>(i)];
    sim.spawn("pong" + std::to_string(i), cohsim_pong(sim, a, b, p.rounds, resumptions));
    sim.spawn("ping" + std::to_string(i), cohsim_ping(sim, a, b, p.rounds, resumptions));
  }
  return finish_run(sim, watch, resumptions);
}

}  // namespace cohsim_bench
