// Host cost of the 8-socket atomics predictions (docs/skylake-sp-8s.md): one
// atomic-counter point (threads 0..N-1 on skylake-sp-8s, the scenario's 20 us
// warm-up and 200 us window) and one c2c point (1000 round trips to the
// farthest socket), machine build included, as scripts/skylake8s_predictions.py
// runs them.
//
//   atomics_gbench [--benchmark_filter=AtomicCounter ...]
#include <benchmark/benchmark.h>

#include <string>

#include "cohsim/scenario/scenario.hpp"

namespace {

using namespace cohsim;

const std::string kSource = COHSIM_SOURCE_DIR;

void BM_AtomicCounter(benchmark::State& state) {
  const auto s = scenario::load_scenario(kSource + "/configs/scenarios/atomic-counter-skylake-sp-8s.json", "",
                                         {{"threads", std::to_string(state.range(0))}});
  double increments = 0;
  for (auto _ : state) {
    scenario::Run run(s, 1);
    increments += run.execute().get("increments");
  }
  state.counters["increments_per_s"] = benchmark::Counter(increments, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AtomicCounter)->Arg(28)->Arg(224)->Arg(448)->Unit(benchmark::kMillisecond);

void BM_C2cFarthest(benchmark::State& state) {
  const auto s = scenario::load_scenario(kSource + "/configs/scenarios/c2c-skylake-sp-8s.json", "cas",
                                         {{"cpu_b", "196"}});
  for (auto _ : state) {
    scenario::Run run(s, 1);
    benchmark::DoNotOptimize(run.execute().get("one_way_ns"));
  }
}
BENCHMARK(BM_C2cFarthest)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
