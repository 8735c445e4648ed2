// Google Benchmark of the litmus runner: test runs per second for two-thread
// tests (MP, SB, LB from the shipped herdtools7 AArch64 and x86_64
// catalogues) on their default platforms. The machine is built once per
// benchmark; each iteration is a batch of runs on it (as `cohsim litmus` does).
//
//   litmus_gbench [--benchmark_filter=MP ...]     (runs_per_s is the figure)
#include <benchmark/benchmark.h>

#include <string>

#include "cohsim/litmus/runner.hpp"
#include "cohsim/litmus/test.hpp"
#include "cohsim/scenario/machine.hpp"

namespace {

using namespace cohsim;

constexpr std::uint64_t kRunsPerIteration = 1000;

void run_suite_test(benchmark::State& state, const std::string& test_file, const std::string& platform) {
  const std::string root = COHSIM_SOURCE_DIR;
  const litmus::Test test = litmus::read_test(root + "/tests/data/litmus/herdtools7/" + test_file);
  const auto doc = scenario::load_platform(root + "/configs/platforms/" + platform + ".json");
  config::Registry registry;
  scenario::Machine machine(doc, 1, registry);
  std::uint64_t runs = 0, seed = 1;
  for (auto _ : state) {
    auto r = litmus::run_test(test, machine, kRunsPerIteration, seed++);
    benchmark::DoNotOptimize(r.positive);
    runs += r.runs;
  }
  state.counters["runs_per_s"] = benchmark::Counter(static_cast<double>(runs), benchmark::Counter::kIsRate);
}

void BM_AArch64_MP(benchmark::State& s) { run_suite_test(s, "aarch64/MP.litmus", "kunpeng920"); }
void BM_AArch64_SB(benchmark::State& s) { run_suite_test(s, "aarch64/SB.litmus", "kunpeng920"); }
void BM_AArch64_LB(benchmark::State& s) { run_suite_test(s, "aarch64/LB.litmus", "kunpeng920"); }
void BM_X86_MP(benchmark::State& s) { run_suite_test(s, "x86_64/MP.litmus", "skylake-sp-2s"); }
void BM_X86_SB(benchmark::State& s) { run_suite_test(s, "x86_64/SB.litmus", "skylake-sp-2s"); }
BENCHMARK(BM_AArch64_MP)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AArch64_SB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AArch64_LB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_X86_MP)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_X86_SB)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
