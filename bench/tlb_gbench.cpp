// Host time of the TLB shootdown workloads at a platform's full CPU count:
// swap-mt on skylake-sp-2s (32 writers, the shipped 2.3 ms of simulated
// time) and on haswell-ex (72 writers). The bound is 30 s of host
// time per point; a point takes about a second (docs/tlb.md, Host time).
//
//   build/release/bench/tlb_gbench [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <string>

#include "cohsim/scenario/scenario.hpp"

namespace {

using namespace cohsim;

void run_swap_mt(benchmark::State& state, const std::string& platform, int threads) {
  const std::string dir = std::string(COHSIM_SOURCE_DIR) + "/configs/";
  std::uint64_t events = 0;
  double pages = 0;
  for (auto _ : state) {
    scenario::LoadedScenario s = scenario::load_scenario(
        dir + "scenarios/swap-mt-skylake.json", "csd-unaligned", {{"threads", std::to_string(threads)}},
        platform.empty() ? "" : dir + "platforms/" + platform);
    scenario::Run run(s, 1);
    const scenario::Results r = run.execute();
    pages = r.get("pages_per_s");
    events += run.machine().sim().events_executed();
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["pages_per_s"] = pages;
}

void BM_SwapMtSkylakeAllCpus(benchmark::State& state) { run_swap_mt(state, "", 32); }
void BM_SwapMtHaswellExAllCpus(benchmark::State& state) { run_swap_mt(state, "haswell-ex.json", 72); }
BENCHMARK(BM_SwapMtSkylakeAllCpus)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_SwapMtHaswellExAllCpus)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
