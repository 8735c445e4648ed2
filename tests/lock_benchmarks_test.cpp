// The lock benchmarks (models/workloads/locktorture.cpp, lock2.cpp): where
// their threads run, what they count, and the fairness and locality metrics.
#include <catch2/catch.hpp>

#include <set>

#include "models/workloads/lock_placement.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

scenario::Results run(const std::string& scenario, const std::string& variant, std::vector<scenario::Override> sets) {
  auto s = scenario::load_scenario(source_path("configs/scenarios/" + scenario), variant, std::move(sets));
  scenario::Run r(s, 1);
  return r.execute();
}

}  // namespace

TEST_CASE("lock2 binds task i to hwloc core i mod cores: every core socket by socket, then the second threads",
          "[lock2]") {
  test::Rig rig(platform_json_as_shipped("haswell-ex-ht"));
  const auto& topo = *rig.topo;
  REQUIRE(topo.cpu_count() == 144);
  const auto cpus = models::hwloc_core_order(topo, 144);
  std::set<int> cores;
  for (int i = 0; i < 72; ++i) {
    CHECK(topo.cpu(cpus[i]).socket == i / 18);
    CHECK(topo.cpu(cpus[i]).thread == 0);
    cores.insert(topo.cpu(cpus[i]).core_global);
    CHECK(topo.smt_siblings(cpus[i]) == std::vector<int>{cpus[72 + i]});  // task 72 + i shares task i's core
  }
  CHECK(cores.size() == 72);
  CHECK(std::set<int>(cpus.begin(), cpus.end()).size() == 144);
  // The workload runs its tasks there (Linux numbers the second threads 72-143 on this machine).
  const auto r = run("lock2-haswell-ex.json", "qspinlock", {{"threads", "74"}, {"duration", "\"2us\""}, {"warmup", "\"0us\""}});
  CHECK(r.extra["cpus"][0] == 0);
  CHECK(r.extra["cpus"][18] == 18);
  CHECK(r.extra["cpus"][72] == 72);
  CHECK(r.extra["cpus"][73] == 73);
}

TEST_CASE("Unpinned locktorture writers spread over the nodes in turn, idle cores before second threads",
          "[locktorture]") {
  test::Rig rig(platform_json_as_shipped("haswell-ex-ht"));
  const auto& topo = *rig.topo;
  const auto spread = models::scheduler_placement(topo, 80, "spread");
  std::set<int> cores;
  for (int i = 0; i < 72; ++i) {
    CHECK(topo.node_of_cpu(spread[i]) == i % 4);
    cores.insert(topo.cpu(spread[i]).core_global);
  }
  CHECK(cores.size() == 72);
  for (int i = 72; i < 80; ++i) CHECK(topo.cpu(spread[i]).thread == 1);
  const auto packed = models::scheduler_placement(topo, 20, "packed");
  for (int i = 0; i < 18; ++i) CHECK((topo.node_of_cpu(packed[i]) == 0 && topo.cpu(packed[i]).thread == 0));
  CHECK(topo.node_of_cpu(packed[18]) == 0);
  CHECK(topo.cpu(packed[18]).thread == 1);
}

TEST_CASE("locktorture counts each acquisition once, per writer, with no overlap of holders", "[locktorture]") {
  const auto r = run("locktorture-kunpeng920.json", "qspinlock",
                     {{"threads", "8"}, {"duration", "\"40us\""}, {"warmup", "\"5us\""}, {"epochs", "1"}, {"epoch_settle", "0"}});
  const double ops = r.get("ops");
  CHECK(ops > 20);
  CHECK(r.get("ops_min") * 8 <= ops);
  CHECK(r.get("ops_max") * 8 >= ops);
  CHECK(r.get("fairness") == Approx(r.get("ops_min") / r.get("ops_max")));
  CHECK(r.get("ops_per_us_short_holds") == Approx(ops / 40.0));
  CHECK(r.get("ops_per_us") < r.get("ops_per_us_short_holds"));  // the rare 100-ms holds cost time too
  CHECK(r.get("ops_per_us") > 0.9 * r.get("ops_per_us_short_holds"));
  CHECK(r.get("lock_fail") == 0);
  CHECK(r.get("exclusion_violations") == 0);
  CHECK(r.failures.empty());
}

TEST_CASE("lock2 counts two operations per loop, as will-it-scale does", "[lock2]") {
  const auto r = run("lock2-haswell-ex.json", "qspinlock",
                     {{"threads", "4"}, {"duration", "\"20us\""}, {"warmup", "\"5us\""}, {"epochs", "1"}, {"epoch_settle", "0"}});
  CHECK(r.get("loops") > 20);
  CHECK(r.get("ops_per_us") == Approx(2 * r.get("loops") / 20.0));
  // All tasks are one lock owner: a lock either inserts an entry or merges into the one there.
  CHECK(r.get("entries_inserted") + r.get("entries_merged") >= r.get("loops"));
  CHECK(r.get("flc_lock.exclusion_violations") == 0);
}

TEST_CASE("Across sockets CNA makes most locktorture hand-offs stay on a node and the stock lock does not", "[locktorture][cna]") {
  const std::vector<scenario::Override> sets{{"threads", "16"}, {"duration", "\"100us\""}, {"warmup", "\"50us\""}, {"epochs", "1"}};
  const auto stock = run("locktorture-kunpeng920.json", "qspinlock", sets);
  const auto cna = run("locktorture-kunpeng920.json", "cna", sets);
  CHECK(stock.get("local_handoff_share") < 0.5);
  CHECK(cna.get("local_handoff_share") > 0.8);
  CHECK(cna.get("cna.moved") > 0);
}
