// Google Benchmark of one lock prediction point at 144 threads (issue 42: a
// point must run in under 20 s of host time): locktorture and lock2 on the
// 144-CPU Haswell-EX with HT on, each lock, at the scenarios' default window
// (1 ms of warm-up after a 200 us start, 1 ms measured). Each iteration builds
// the machine and runs the whole point, as `cohsim run` does.
//
//   locks_gbench [--benchmark_filter=lock2]     (the time per iteration is the figure)
#include <benchmark/benchmark.h>

#include <string>

#include "cohsim/scenario/scenario.hpp"

namespace {

using namespace cohsim;

void run_point(benchmark::State& state, const std::string& scenario, const std::string& variant) {
  const std::string path = std::string(COHSIM_SOURCE_DIR) + "/configs/scenarios/" + scenario;
  double ops = 0;
  for (auto _ : state) {
    auto s = scenario::load_scenario(path, variant, {{"threads", "144"}});
    scenario::Run run(s, 1);
    const scenario::Results r = run.execute();
    ops = r.get("ops_per_us");
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops_per_us"] = ops;
}

void BM_locktorture_qspinlock_144(benchmark::State& s) { run_point(s, "locktorture-haswell-ex.json", "qspinlock"); }
void BM_locktorture_cna_144(benchmark::State& s) { run_point(s, "locktorture-haswell-ex.json", "cna"); }
void BM_lock2_qspinlock_144(benchmark::State& s) { run_point(s, "lock2-haswell-ex.json", "qspinlock"); }
void BM_lock2_cna_144(benchmark::State& s) { run_point(s, "lock2-haswell-ex.json", "cna"); }

}  // namespace

BENCHMARK(BM_locktorture_qspinlock_144)->Unit(benchmark::kSecond)->Iterations(3);
BENCHMARK(BM_locktorture_cna_144)->Unit(benchmark::kSecond)->Iterations(3);
BENCHMARK(BM_lock2_qspinlock_144)->Unit(benchmark::kSecond)->Iterations(3);
BENCHMARK(BM_lock2_cna_144)->Unit(benchmark::kSecond)->Iterations(3);
BENCHMARK_MAIN();
