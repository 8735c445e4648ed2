// Google Benchmark view of the engine workloads (cohsim side only: SystemC
// can elaborate once per process, which does not fit Google Benchmark's
// repeated fixtures; engine_bench does the SystemC comparison).
//
//   engine_gbench [--benchmark_repetitions=3 ...]
#include <benchmark/benchmark.h>

#include "cohsim_workloads.hpp"

namespace {

using namespace cohsim_bench;

void BM_Delay(benchmark::State& state) {
  DelayParams p;
  p.tasks = static_cast<int>(state.range(0));
  p.iterations = static_cast<int>(state.range(1));
  std::uint64_t events = 0;
  for (auto _ : state) events += cohsim_run_delay(p).events;
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Delay)->Args({1000, 1000})->Args({100, 10000})->Args({10000, 100})->Unit(benchmark::kMillisecond);

void BM_PingPong(benchmark::State& state) {
  PingPongParams p;
  p.pairs = static_cast<int>(state.range(0));
  p.rounds = static_cast<int>(state.range(1));
  std::uint64_t events = 0;
  for (auto _ : state) events += cohsim_run_pingpong(p).events;
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PingPong)->Args({500, 1000})->Args({1, 100000})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
