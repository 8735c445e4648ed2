// The measurement window (models/workloads/measurement_window.hpp) and, per
// workload, that every metric covers that one window: nothing from the
// warm-up, nothing completed after the close.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cohsim/scenario/scenario.hpp"
#include "models/workloads/measurement_window.hpp"

using namespace cohsim;
using models::MeasurementWindow;
using sim::kUs;
using sim::Tick;

namespace {

/// Runs a shipped scenario's variant with `overrides` and returns its metrics.
scenario::Results run_scenario(const std::string& file, const std::string& variant,
                               const std::vector<scenario::Override>& overrides) {
  auto s = scenario::load_scenario(std::string(COHSIM_SOURCE_DIR) + "/configs/scenarios/" + file, variant, overrides);
  scenario::Run run(s, 1);
  return run.execute();
}

}  // namespace

TEST_CASE("an operation completing at the window's opening belongs to the warm-up, one at its close is inside",
          "[window]") {
  MeasurementWindow w;
  w.open(10 * kUs);
  w.close(20 * kUs);
  CHECK_FALSE(w.contains(10 * kUs));
  CHECK(w.contains(10 * kUs + 1));
  CHECK(w.contains(20 * kUs));
  CHECK_FALSE(w.contains(20 * kUs + 1));
  CHECK(w.length() == 10 * kUs);
}

TEST_CASE("a tracked counter reports its change while the window was open, summed over openings", "[window]") {
  std::uint64_t counter = 5;
  MeasurementWindow w;
  const std::size_t h = w.track([&counter] { return counter; });
  counter += 100;  // warm-up
  w.open(0);
  counter += 7;
  w.close(kUs);
  counter += 1000;  // between the openings
  w.open(2 * kUs);
  counter += 3;
  w.close(3 * kUs);
  CHECK(w.delta(h) == 10);
  CHECK(w.length() == 2 * kUs);
  CHECK(w.contains(2 * kUs + 1));
  CHECK_FALSE(w.contains(kUs + 1));
}

TEST_CASE("a scheduled window reads its counters when the simulator reaches its opening and its close", "[window]") {
  sim::Simulator sim;
  std::uint64_t events = 0;
  MeasurementWindow w;
  const std::size_t h = w.track([&events] { return events; });
  w.schedule(sim, 10 * kUs, 20 * kUs);
  sim.spawn("ticker", [](sim::Simulator& s, std::uint64_t& n) -> sim::Task<void> {
    for (int i = 0; i < 30; ++i) {
      co_await s.delay(kUs);
      ++n;  // one event per microsecond, at 1..30 us
    }
  }(sim, events));
  sim.run();
  // The events at 10..19 us: at one tick the window's events, scheduled first, run before the ticker's.
  CHECK(w.delta(h) == 10);
  CHECK(w.contains(15 * kUs));
  CHECK_FALSE(w.contains(25 * kUs));
}

TEST_CASE("aim7: the HPET reads counted are the clock reads that completed inside the window, none of the warm-up's",
          "[window][hpet]") {
  // One operation per job, 6.66 ms long: every CPU reads the clock at 6.66 ms and
  // 13.3 ms, outside the window (10 ms, 12 ms]; only the tick reads fall inside.
  auto r = run_scenario("hpet-haswell-ex.json", "hpet",
                        {{"kernel_reads_per_job", "1"}, {"vdso_reads_per_job", "0"}, {"blocking_ops_per_job", "0"},
                         {"timers_per_job", "0"}, {"compute_per_job", "6.66ms"}, {"warmup", "10ms"},
                         {"duration", "2ms"}});
  const double cpus = 72;
  const double reads_per_s = r.get("ktime_get_per_cpu_per_s") * cpus * (1 + r.get("ktime_get_retries_per_call")) +
                             r.get("wall_time_updates_per_s");
  CHECK(r.get("hpet_reads_per_s") == Approx(reads_per_s).epsilon(0.01));
  CHECK(r.get("ticks_per_cpu_per_s") == Approx(1000).epsilon(0.01));
  CHECK(r.get("jobs_per_min") == 0);
}

TEST_CASE("ipi-bench: no metric changes with the number of warm-up rounds", "[window][ipi]") {
  auto one = run_scenario("ipi-kunpeng920.json", "", {{"rounds", "2"}, {"warmup_rounds", "1"}});
  auto four = run_scenario("ipi-kunpeng920.json", "", {{"rounds", "2"}, {"warmup_rounds", "4"}});
  CHECK(four.get("ipis_sent") == 2 * 95);
  for (const auto& [name, value] : one.metrics) {
    INFO(name);
    CHECK(four.get(name) == Approx(value).epsilon(0.01));
  }
}

TEST_CASE("dma-map-bench: the phase times add up to the time of the ops completed in the window, and the SMMU "
          "executed their commands",
          "[window][smmu]") {
  auto r = run_scenario("smmu-kunpeng920.json", "cmpxchg", {{"cpus", "8"}, {"duration", "200us"}});
  double phases = 0;
  for (const auto& [name, value] : r.metrics)
    if (name.rfind("phase_ns.", 0) == 0) phases += value;
  CHECK(phases == Approx(r.get("op_ns_mean")).epsilon(1e-9));
  // A TLBI and a CMD_SYNC per op; a few commands of ops that straddle the window's edges.
  const double ops = r.get("total_ops_per_s") * 200e-6;
  CHECK(r.get("smmu_commands") == Approx(2 * ops).margin(2 * 8));
}

TEST_CASE("mem-latency: the LLC and DRAM counts are those of the measured loads only", "[window]") {
  auto r = run_scenario("mem-latency-kunpeng920.json", "", {{"loads", "500"}, {"warmup", "300"}});
  CHECK(r.get("llc_hits") + r.get("dram_reads") == 500);
}

TEST_CASE("c2c: each pair of the matrix is measured over its own window, as if it ran alone", "[window]") {
  auto matrix = run_scenario("c2c-kunpeng920.json", "", {{"matrix", "true"}, {"rounds", "50"}});
  auto alone = run_scenario("c2c-kunpeng920.json", "", {{"cpu_a", "0"}, {"cpu_b", "24"}, {"rounds", "50"}});
  CHECK(matrix.get("one_way_ns.cross_die") == Approx(alone.get("one_way_ns")).epsilon(1e-9));
}

TEST_CASE("spinlock: the window holds every section counted, each one handed over or re-acquired once",
          "[window]") {
  auto r = run_scenario("spinlock-kunpeng920.json", "qspinlock", {{"sections", "300"}});
  double handoffs = r.get("reacquired");
  for (const auto& [name, value] : r.metrics)
    if (name.rfind("handoffs.", 0) == 0) handoffs += value;
  CHECK(handoffs == 300 - 1);
  CHECK(r.get("total_ms") > 0);
}

TEST_CASE("ipi-latency: the samples are the measured IPIs, and the delivery time does not change with the warm-up "
          "ones",
          "[window][apic]") {
  auto two = run_scenario("ipi-x86-skylake.json", "", {{"ipis_per_pair", "2"}});
  auto five = run_scenario("ipi-x86-skylake.json", "", {{"ipis_per_pair", "5"}});
  const double pairs = 32.0 * 31.0;
  CHECK(two.get("samples") == pairs);
  CHECK(five.get("samples") == 4 * pairs);
  CHECK(five.get("ipi_delivery_ns") == Approx(two.get("ipi_delivery_ns")).epsilon(1e-6));
}

TEST_CASE("aim7: a saturated HPET is busy for the window's length and no more, its queue left for later",
          "[window][hpet]") {
  // 100 vDSO reads per job on top of the aligned ticks keep the device saturated the whole window.
  auto r = run_scenario("hpet-ivybridge-ex.json", "hpet",
                        {{"warmup", "1ms"}, {"duration", "2ms"}, {"vdso_reads_per_job", "100"}});
  CHECK(r.get("hpet_busy_pct") <= 100.0);
  CHECK(r.get("hpet_busy_pct") > 99.0);
}
