// Interconnect costs: hop paths and unloaded latencies per class, link
// occupancy, the arbitration policies at a busy home, and the contention report.
#include <catch2/catch.hpp>

#include <set>

#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using fabric::Addr;
using topo::HopClass;

namespace {

Tick lat(const fabric::Interconnect& icn, HopClass c) { return icn.cost(c).latency; }

std::vector<HopClass> classes_of(fabric::Interconnect& icn, int a, int b) {
  std::vector<HopClass> out;
  for (int id : icn.path(a, b).links) out.push_back(icn.links()[static_cast<std::size_t>(id)].cls);
  return out;
}

}  // namespace

TEST_CASE("kunpeng920 paths walk the hops of their class and cost their sum unloaded", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  using V = std::vector<HopClass>;
  CHECK(classes_of(icn, 0, 1) == V{HopClass::cluster});
  CHECK(classes_of(icn, 0, 8) == V{HopClass::die});
  CHECK(classes_of(icn, 0, 24) == V{HopClass::die, HopClass::cross_die});
  CHECK(classes_of(icn, 0, 48) == V{HopClass::die, HopClass::socket});  // dies 0 and 2 are the socket gateways
  CHECK(classes_of(icn, 24, 72) == V{HopClass::die, HopClass::cross_die, HopClass::socket, HopClass::cross_die});
  CHECK(icn.latency(0, 1) == lat(icn, HopClass::cluster));
  CHECK(icn.latency(0, 8) == lat(icn, HopClass::die));
  CHECK(icn.latency(0, 24) == lat(icn, HopClass::die) + lat(icn, HopClass::cross_die));
  CHECK(icn.latency(0, 48) == lat(icn, HopClass::die) + lat(icn, HopClass::socket));
  CHECK(icn.path(0, 24).widest == HopClass::cross_die);
  CHECK(icn.path(0, 48).widest == HopClass::socket);
  // A CPU reaches its own node's home over its die's ring.
  CHECK(icn.latency(0, icn.home_endpoint(0)) == lat(icn, HopClass::die));
  CHECK(icn.latency(30, icn.home_endpoint(0)) == lat(icn, HopClass::die) + lat(icn, HopClass::cross_die));
}

TEST_CASE("a busy link delays the next message by its occupancy", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  const Tick occ = icn.cost(HopClass::cluster).occupancy;
  REQUIRE(occ > 0);
  const Tick t = 1000 * sim::kNs;
  const Tick first = icn.send(0, 1, t), second = icn.send(0, 1, t), third = icn.send(0, 1, t);
  CHECK(first == t + lat(icn, HopClass::cluster));
  CHECK(second == first + occ);
  CHECK(third == first + 2 * occ);
  const Tick after = icn.send(0, 1, t + 3 * occ);  // the link is free again: no wait
  CHECK(after == t + 3 * occ + lat(icn, HopClass::cluster));
  // Over several hops the narrowest link (the socket link) sets the spacing.
  const Tick far1 = icn.send(0, 48, 2 * t), far2 = icn.send(0, 48, 2 * t);
  CHECK(far2 - far1 == icn.cost(HopClass::socket).occupancy);
}

namespace {

/// CPU 2 takes a line homed on node 0 first; while its miss keeps the home
/// busy, CPU 48 (far) and then CPU 1 (near) queue for it. Returns the order
/// in which 48 and 1 got it, read from an atomic counter.
std::pair<std::uint64_t, std::uint64_t> queue_order(const std::string& policy, std::uint64_t seed) {
  json doc = platform_json();
  doc["coherence"]["arbitration"] = policy;
  Rig r(doc, nullptr, nullptr, seed);
  Addr counter = r.line(0, "counter");
  std::uint64_t got2 = 9, got48 = 9, got1 = 9;
  spawn_at(r.sim, 0, [&]() -> Task<void> { got2 = co_await r.cpu(2).rmw(counter, 8, fabric::RmwOp::add, 1); });
  spawn_at(r.sim, 0, [&]() -> Task<void> { got48 = co_await r.cpu(48).rmw(counter, 8, fabric::RmwOp::add, 1); });
  spawn_at(r.sim, 45 * sim::kNs, [&]() -> Task<void> { got1 = co_await r.cpu(1).rmw(counter, 8, fabric::RmwOp::add, 1); });
  r.run();
  REQUIRE(got2 == 0);
  REQUIRE(r.fab->line_stats().at(counter).wait > 0);
  return {got48, got1};
}

}  // namespace

TEST_CASE("arbitration at a busy home: arrival order, nearest first, or a seeded random pick", "[interconnect]") {
  CHECK(queue_order("arrival", 1) == std::pair<std::uint64_t, std::uint64_t>{1, 2});  // 48 arrived first
  CHECK(queue_order("nearest", 1) == std::pair<std::uint64_t, std::uint64_t>{2, 1});  // 1 is next to the home
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    auto o = queue_order("random", seed);
    CHECK(o == queue_order("random", seed));  // the same seed picks the same
    seen.insert(o);
  }
  CHECK(seen.size() == 2);  // both orders happen across seeds
}

TEST_CASE("the contention report counts every transfer of a two-CPU ping-pong exactly", "[interconnect][contention]") {
  const auto pair = GENERATE(std::pair<int, std::string>{1, "cluster"}, std::pair<int, std::string>{8, "die"},
                             std::pair<int, std::string>{48, "socket"});
  const int rounds = 50;
  auto out = cli::run_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                               {{"cpu_b", std::to_string(pair.first)}, {"rounds", std::to_string(rounds)}, {"warmup", "0"}},
                               std::nullopt, false);
  const auto& lines = out.doc["contention"];
  REQUIRE(lines.size() == 1);
  const auto& flag = lines[0];
  CHECK_THAT(flag["symbol"].get<std::string>(), Catch::StartsWith("c2c.flag"));
  // 2 * (rounds + 1) successful swaps; all but the very first take the line from the other CPU.
  CHECK(flag["transfers"] == json{{pair.second, 2 * (rounds + 1) - 1}});
  CHECK(flag["invalidations"] == 0);
  CHECK(flag["memory_reads"] == 1);
  CHECK(flag["cores"] == json{0, pair.first});
}

TEST_CASE("the spinlock workload runs every critical section once; ticket and queued locks take turns", "[spinlock]") {
  const auto lock = GENERATE(as<std::string>{}, "tas", "ticket", "qspinlock");
  const int sections = 400;
  auto out = cli::run_scenario(source_path("configs/scenarios/spinlock-kunpeng920.json"), lock,
                               {{"sections", std::to_string(sections)}, {"cpus", "0,1,24,48"}}, std::nullopt, false);
  const auto& r = out.results;
  double handoffs = 0;
  for (const char* cls : {"cluster", "die", "cross_die", "socket"}) handoffs += r.get(std::string("handoffs.") + cls);
  CHECK(handoffs + r.get("reacquired") == sections - 1);  // every section after the first came from someone
  CHECK(r.get("share_min") <= r.get("share_max"));
  CHECK(r.get("total_ms") > 0);
  CHECK_THAT(out.doc["contention"][0]["symbol"].get<std::string>(), Catch::StartsWith("spinlock." + lock));
  if (lock == "ticket") {  // FIFO: each of the 4 threads gets exactly a quarter, and the lock crosses sockets
    CHECK(r.get("share_min") == 0.25);
    CHECK(r.get("share_max") == 0.25);
    CHECK(r.get("handoffs.socket") > 0);
  }
  if (lock == "qspinlock") CHECK(r.get("share_min") > 0.2);
}

TEST_CASE("spinlock scenarios on every platform that has one run with their defaults", "[spinlock]") {
  for (const std::string name : {"kunpeng920", "haswell-ex"}) {
    const std::string scen = source_path("configs/scenarios/spinlock-" + name + ".json");
    INFO(scen);
    auto out = cli::run_scenario(scen, "ticket", {{"sections", "200"}}, std::nullopt, false);
    CHECK(out.results.get("share_max") == 0.25);
  }
}
