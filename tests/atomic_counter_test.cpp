// The atomic-counter workload: N threads, thread i on CPU i, lock xadd on one
// shared counter. Every increment counted once, per-thread counts that add
// up, the local atomic's cost for one thread, and the placement.
#include <catch2/catch.hpp>

#include <numeric>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

const std::string kScenario = "configs/scenarios/atomic-counter-skylake-sp-8s.json";

scenario::LoadedScenario counter(const std::string& threads, const std::string& platform = "") {
  return scenario::load_scenario(source_path(kScenario), "",
                                 {{"threads", threads}, {"warmup", "2us"}, {"duration", "20us"}},
                                 platform.empty() ? "" : source_path(platform));
}

}  // namespace

TEST_CASE("atomic-counter counts every increment once, and the per-thread counts add up", "[atomic-counter]") {
  const auto s = counter("6");
  scenario::Run run(s, 1);
  const scenario::Results r = run.execute();
  // Every lock xadd of the run, warm-up included, reached the counter.
  CHECK(r.get("counter_value") == r.get("increments_total"));
  CHECK(r.get("increments") > 0);
  CHECK(r.get("increments") < r.get("increments_total"));  // the warm-up's are not in the window
  const auto per_thread = r.extra["per_thread"].get<std::vector<double>>();
  REQUIRE(per_thread.size() == 6);
  CHECK(std::accumulate(per_thread.begin(), per_thread.end(), 0.0) == r.get("increments"));
  CHECK(r.get("per_thread_min") > 0);
  CHECK(r.get("ns_per_increment") == Approx(20000.0 / r.get("increments")).epsilon(1e-9));
}

TEST_CASE("one atomic-counter thread pays the local lock xadd: the line stays in its cache", "[atomic-counter]") {
  // The cost of one lock xadd on a line CPU 0 already holds Modified.
  Rig rig(platform_json_as_shipped("skylake-sp-8s"));
  const fabric::Addr line = rig.line(0, "counter");
  Tick local = 0;
  spawn_at(rig.sim, 0, [&]() -> Task<void> {
    co_await rig.cpu(0).rmw(line, 8, fabric::RmwOp::add, 1);  // takes the line
    const Tick t = rig.sim.now();
    co_await rig.cpu(0).rmw(line, 8, fabric::RmwOp::add, 1);
    local = rig.sim.now() - t;
  });
  rig.run();
  REQUIRE(local > 0);
  const auto s = counter("1");
  scenario::Run run(s, 1);
  const scenario::Results r = run.execute();
  CHECK(r.get("ns_per_increment") == Approx(sim::to_ns(local)).epsilon(1e-3));
}

TEST_CASE("atomic-counter runs thread i on CPU i and no other CPU", "[atomic-counter]") {
  const auto s = counter("5", "configs/platforms/haswell-ex.json");
  scenario::Run run(s, 1);
  run.execute();
  for (int c = 0; c < run.machine().cpu_count(); ++c) {
    INFO("CPU " << c);
    if (c < 5) CHECK(run.machine().cpu(c).stats().atomics > 0);
    else CHECK(run.machine().cpu(c).stats().atomics == 0);
  }
}

TEST_CASE("atomic-counter gets slower per increment when a second socket joins", "[atomic-counter]") {
  // 28 threads fill socket 0; 29 put one on socket 1, and the line starts crossing UPI.
  auto ns = [](const std::string& threads) {
    const auto s = counter(threads);
    scenario::Run run(s, 1);
    return run.execute().get("ns_per_increment");
  };
  CHECK(ns("2") > ns("1"));
  CHECK(ns("29") > ns("28"));
}

TEST_CASE("atomic-counter's hand-offs follow the placement: one socket's threads hand off inside the die", "[atomic-counter]") {
  auto handoffs = [](const std::string& threads) {
    const auto s = counter(threads);
    scenario::Run run(s, 1);
    return run.execute();
  };
  const scenario::Results one = handoffs("1"), die = handoffs("4"), two_sockets = handoffs("56");
  CHECK(one.get("handoffs.die") == 0);
  CHECK(one.get("increments_per_transfer") == 0);  // the line never moved
  CHECK(die.get("handoffs.die") > 0);
  CHECK(die.get("handoffs.socket") == 0);
  CHECK(two_sockets.get("handoffs.socket") > 0);
  CHECK(die.get("increments_per_transfer") >= 1);
}
