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

/// The hop classes a path walks, one entry per hop (a ring's segments count once).
std::vector<HopClass> classes_of(fabric::Interconnect& icn, int a, int b) {
  std::vector<HopClass> out;
  for (const auto& step : icn.path(a, b).steps)
    if (out.empty() || out.back() != step.cls || step.cls != HopClass::die) out.push_back(step.cls);
  return out;
}

/// Link names of a path's steps that hold a link.
std::vector<std::string> links_of(fabric::Interconnect& icn, int a, int b) {
  std::vector<std::string> out;
  for (const auto& step : icn.path(a, b).steps)
    if (step.link >= 0) out.push_back(icn.links()[static_cast<std::size_t>(step.link)].name);
  return out;
}

}  // namespace

TEST_CASE("kunpeng920 paths walk the hops of their class and cost their sum unloaded", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  using V = std::vector<HopClass>;
  const Tick die = lat(icn, HopClass::die);
  CHECK(classes_of(icn, 0, 1) == V{HopClass::cluster});
  CHECK(classes_of(icn, 0, 8) == V{HopClass::die});
  // A path between dies crosses the source die's ring, the link, and the destination die's ring.
  CHECK(classes_of(icn, 0, 24) == V{HopClass::die, HopClass::cross_die, HopClass::die});
  CHECK(classes_of(icn, 0, 48) == V{HopClass::die, HopClass::socket, HopClass::die});  // dies 0 and 2 are the gateways
  // Passing through a gateway die crosses its ring too.
  CHECK(classes_of(icn, 24, 72) == V{HopClass::die, HopClass::cross_die, HopClass::die, HopClass::socket, HopClass::die,
                                     HopClass::cross_die, HopClass::die});
  CHECK(icn.latency(0, 1) == lat(icn, HopClass::cluster));
  CHECK(icn.latency(0, 8) == die);
  CHECK(icn.latency(0, 20) == die);  // a ring crossing costs the die latency whatever its length
  CHECK(icn.latency(0, 24) == 2 * die + lat(icn, HopClass::cross_die));
  CHECK(icn.latency(0, 48) == 2 * die + lat(icn, HopClass::socket));
  CHECK(icn.path(0, 24).widest == HopClass::cross_die);
  CHECK(icn.path(0, 48).widest == HopClass::socket);
  // A CPU reaches its own node's home over its die's ring.
  CHECK(icn.latency(0, icn.home_endpoint(0)) == die);
  CHECK(icn.latency(30, icn.home_endpoint(0)) == 2 * die + lat(icn, HopClass::cross_die));
}

TEST_CASE("the interconnect keeps a path only for the endpoint pairs asked for, and a device added later leaves them "
          "valid",
          "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  CHECK(icn.paths_kept() == 0);
  const auto& far = icn.path(0, 48);
  const Tick far_latency = far.latency;
  icn.path(0, 48);
  icn.path(48, 0);
  CHECK(icn.paths_kept() == 2);  // not endpoints squared: memory follows the pairs that talk
  const int dev = icn.add_device("test.dev", 1);
  CHECK(far.latency == far_latency);  // the kept path survives the new endpoint
  CHECK(far.steps.size() == icn.path(0, 48).steps.size());
  CHECK(icn.path(dev, 48).widest == HopClass::die);  // the device sits on socket 1's gateway die
  CHECK(icn.paths_kept() == 3);
}

TEST_CASE("a message between dies walks exactly the links of its path, from the legs and die route send() keeps",
          "[interconnect]") {
  for (auto [a, b] : {std::pair{30, 77}, std::pair{77, 30}, std::pair{30, 96}, std::pair{5, 53}}) {
    Rig r(platform_json());  // an idle machine each time
    auto& icn = *r.icn;
    CHECK(icn.send(a, b, 0) == icn.latency(a, b));
    std::multiset<int> walked, on_path;
    for (std::size_t i = 0; i < icn.links().size(); ++i)
      for (std::uint64_t m = 0; m < icn.links()[i].messages; ++m) walked.insert(static_cast<int>(i));
    for (const auto& step : icn.path(a, b).steps)
      if (step.link >= 0) on_path.insert(step.link);
    CHECK(walked == on_path);
  }
}

TEST_CASE("a die ring is a set of segments: a message crosses those between its stops, the shorter way round",
          "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  REQUIRE(icn.die_network().stops == 8);
  // Clusters 0..5 of die 0 sit at stops 0, 1, 2, 4, 5, 6; the home agent at stop 0.
  using S = std::vector<std::string>;
  CHECK(links_of(icn, 0, 8) == S{"die0.cw0", "die0.cw1"});
  CHECK(links_of(icn, 8, 0) == S{"die0.ccw2", "die0.ccw1"});
  CHECK(links_of(icn, 20, icn.home_endpoint(0)) == S{"die0.cw6", "die0.cw7"});  // 2 segments clockwise, not 6
  CHECK(links_of(icn, 0, icn.home_endpoint(0)).empty());                       // the same stop: no segment
  CHECK(links_of(icn, 0, 48) == S{"qpi0>1"});
  CHECK(links_of(icn, 48, 0) == S{"qpi1>0"});
}

TEST_CASE("sockets joined in a ring: a message goes the shorter way round (ascending on a tie) through the sockets "
          "between (all-to-all: one link per pair)",
          "[interconnect]") {
  json doc = platform_json("haswell-ex");
  doc["interconnect"]["socket"]["links"] = "ring";
  Rig r(doc);
  auto& icn = *r.icn;
  REQUIRE(icn.topology().sockets() == 4);
  REQUIRE(icn.topology().dies_per_socket() == 1);
  auto l3 = [&](int socket) { return icn.llc_endpoint(socket); };  // at the off-chip stop: only socket links
  using S = std::vector<std::string>;
  CHECK(links_of(icn, l3(0), l3(1)) == S{"qpi0>1"});
  CHECK(links_of(icn, l3(0), l3(3)) == S{"qpi0>3"});
  CHECK(links_of(icn, l3(0), l3(2)) == S{"qpi0>1", "qpi1>2"});
  CHECK(links_of(icn, l3(1), l3(3)) == S{"qpi1>2", "qpi2>3"});
  CHECK(links_of(icn, l3(3), l3(1)) == S{"qpi3>0", "qpi0>1"});
  CHECK(links_of(icn, l3(2), l3(0)) == S{"qpi2>3", "qpi3>0"});
  CHECK(icn.latency(l3(0), l3(2)) == icn.latency(l3(0), l3(1)) + lat(icn, HopClass::socket));
  CHECK(icn.send(l3(1), l3(3), 0) == icn.latency(l3(1), l3(3)));
  Rig direct(platform_json("haswell-ex"));
  CHECK(links_of(*direct.icn, direct.icn->llc_endpoint(0), direct.icn->llc_endpoint(2)) == S{"qpi0>2"});
  // A what-if from the command line on every shipped platform (each names its links, so --set finds the key).
  for (const char* scen : {"c2c-haswell-ex", "c2c-ivybridge-ex", "c2c-kunpeng920", "ipi-x86-skylake"}) {
    const auto out = run_cli("params " + quoted(source_path(std::string("configs/scenarios/") + scen + ".json")) +
                             " --set platform.interconnect.socket.links=ring");
    INFO(scen << ": " << out.output);
    CHECK(out.exit_code == 0);
    CHECK_THAT(out.output, Catch::Contains("platform.interconnect.socket.links = ring"));
  }
}

TEST_CASE("an x86 mesh die routes X then Y over its segments", "[interconnect]") {
  Rig r(platform_json("skylake-sp-2s"));
  auto& icn = *r.icn;
  REQUIRE(icn.die_network().mesh);
  REQUIRE(icn.die_network().columns == 5);
  // 16 cores over 25 stops: core 15 sits at stop 15 * 25 / 16 = 23, column 3 of row 4.
  const auto segments = links_of(icn, 0, 15);
  CHECK(segments == std::vector<std::string>{"die0.e0,0", "die0.e1,0", "die0.e2,0", "die0.s3,0", "die0.s3,1",
                                             "die0.s3,2", "die0.s3,3"});
  CHECK(icn.latency(0, 15) == lat(icn, HopClass::die));
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
}

TEST_CASE("a message sent now is not delayed by one booked for later", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  const Tick occ = icn.cost(HopClass::cluster).occupancy, l = lat(icn, HopClass::cluster);
  const Tick t = 1000 * sim::kNs;
  icn.send(0, 1, t + 100 * sim::kNs);  // e.g. a DRAM fill on its way back
  CHECK(icn.send(0, 1, t) == t + l);
  // A gap too short for a whole occupancy is skipped: the message goes after the later booking.
  icn.send(0, 1, t + 200 * sim::kNs + occ / 2);
  CHECK(icn.send(0, 1, t + 200 * sim::kNs) == t + 200 * sim::kNs + occ / 2 + occ + l);
  // Across sockets too: the socket link's later bookings leave its earlier slots free.
  for (int i = 0; i < 3; ++i) icn.send(0, 48, t + 500 * sim::kNs);
  CHECK(icn.send(0, 48, t + 300 * sim::kNs) == t + 300 * sim::kNs + icn.latency(0, 48));
  const auto& cluster_link = icn.links()[static_cast<std::size_t>(icn.path(0, 1).steps[0].link)];
  CHECK(cluster_link.queued == occ / 2 + occ);
  CHECK(cluster_link.max_queued == occ / 2 + occ);
}

TEST_CASE("two messages ready together on one link are spaced by the occupancy", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  const Tick t = 1000 * sim::kNs;
  // Cluster bus, ring segment (CPUs 4 and 5 of cluster 1 both send to cluster 2), and the die-to-die link.
  const Tick bus1 = icn.send(0, 1, t), bus2 = icn.send(2, 3, t);
  CHECK(bus2 - bus1 == icn.cost(HopClass::cluster).occupancy);
  const Tick ring1 = icn.send(4, 8, t), ring2 = icn.send(5, 9, t);
  CHECK(ring2 - ring1 == icn.cost(HopClass::die).occupancy);
  const Tick xdie1 = icn.send(0, 24, 2 * t), xdie2 = icn.send(1, 25, 2 * t);
  CHECK(xdie2 - xdie1 == icn.cost(HopClass::cross_die).occupancy);
  // Segments the first message does not cross are free for the second.
  icn.send(4, 8, 3 * t);
  CHECK(icn.send(16, 20, 3 * t) == 3 * t + icn.latency(16, 20));
}

TEST_CASE("opposite directions of a link do not block each other", "[interconnect]") {
  json doc = platform_json();
  doc["interconnect"]["socket"]["ports"]["value"] = 1;  // one port: only the direction keeps them apart
  Rig r(doc);
  auto& icn = *r.icn;
  const Tick t = 1000 * sim::kNs;
  for (auto [a, b] : {std::pair{0, 48}, std::pair{0, 24}, std::pair{4, 8}}) {
    INFO(a << " <-> " << b);
    CHECK(icn.send(a, b, t) == t + icn.latency(a, b));
    CHECK(icn.send(b, a, t) == t + icn.latency(b, a));
  }
}

TEST_CASE("a saturated link carries one message per occupancy, whatever order they are sent in", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  const Tick occ = icn.cost(HopClass::cluster).occupancy, l = lat(icn, HopClass::cluster);
  const int n = 1000;
  // Offered twice as fast as the link drains, in time order and latest-first
  // (later bookings must not hold earlier slots): back to back either way.
  for (const bool latest_first : {false, true}) {
    INFO("latest first: " << latest_first);
    const Tick t0 = (latest_first ? 10000 : 1000) * sim::kNs;
    std::vector<Tick> arrivals;
    for (int k = 0; k < n; ++k) {
      const int i = latest_first ? n - 1 - k : k;
      arrivals.push_back(icn.send(0, 1, t0 + static_cast<Tick>(i) * occ / 2));
    }
    std::sort(arrivals.begin(), arrivals.end());
    CHECK(arrivals.front() >= t0 + l);
    CHECK(arrivals.front() < t0 + l + occ);  // the first slot is taken within one occupancy of the first ready time
    CHECK(arrivals.back() - arrivals.front() == static_cast<Tick>(n - 1) * occ);  // throughput = 1 / occupancy
    for (std::size_t i = 1; i < arrivals.size(); ++i) REQUIRE(arrivals[i] - arrivals[i - 1] == occ);
  }
}

TEST_CASE("a multi-port link carries port-count messages at once", "[interconnect]") {
  for (const int ports : {1, 3}) {
    json doc = platform_json();
    doc["interconnect"]["socket"]["ports"]["value"] = ports;
    Rig r(doc);
    auto& icn = *r.icn;
    REQUIRE(icn.ports(HopClass::socket) == ports);
    REQUIRE(links_of(icn, 0, 48) == std::vector<std::string>{"qpi0>1"});
    const Tick t = 1000 * sim::kNs, occ = icn.cost(HopClass::socket).occupancy;
    std::vector<Tick> arrivals;
    for (int i = 0; i < 2 * ports; ++i) arrivals.push_back(icn.send(0, 48, t));
    for (int i = 0; i < 2 * ports; ++i) {
      INFO("ports " << ports << ", message " << i);
      CHECK(arrivals[static_cast<std::size_t>(i)] == t + icn.latency(0, 48) + static_cast<Tick>(i / ports) * occ);
    }
  }
}

TEST_CASE("a link forgets bookings that ended before the current time", "[interconnect]") {
  Rig r(platform_json());
  auto& icn = *r.icn;
  const int n = 5000;
  spawn_at(r.sim, 0, [&]() -> Task<void> {
    for (int i = 0; i < n; ++i) {
      icn.send(0, 1, r.sim.now());
      co_await r.sim.delay(10 * sim::kNs);  // bookings 0.8 ns long, 10 ns apart: none merge
    }
  });
  r.run();
  const auto& link = icn.links()[static_cast<std::size_t>(icn.path(0, 1).steps[0].link)];
  CHECK(link.messages == static_cast<std::uint64_t>(n));
  CHECK(link.port(0).bookings() <= 1);
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
  // Atomics in the core (the flat fabric), so each swap moves the line between the two cores.
  auto out = cli::run_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                               {{"cpu_b", std::to_string(pair.first)}, {"rounds", std::to_string(rounds)}, {"warmup", "0"},
                                {"platform.caches.llc.placement", "home"}, {"platform.coherence.atomics.cas", "near"}},
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

TEST_CASE("the link report gives each busy link's messages, utilisation and queueing", "[interconnect][contention]") {
  const int rounds = 50;
  auto out = cli::run_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                               {{"cpu_b", "48"}, {"rounds", std::to_string(rounds)}, {"warmup", "0"}}, std::nullopt, false);
  const auto& links = out.doc["links"];
  REQUIRE(!links.empty());
  const double window_ns = out.doc["host"]["simulated_ns"].get<double>();
  bool saw_both_directions = false;
  for (const auto& l : links) {
    INFO(l.dump());
    const double occupancy_ns = l["class"] == "socket" ? 2.1 : l["class"] == "die" ? 0.8 : 1.5;
    CHECK(l["busy_ns"].get<double>() == Approx(l["messages"].get<double>() * occupancy_ns));
    CHECK(l["utilisation"].get<double>() ==
          Approx(l["busy_ns"].get<double>() / (window_ns * l["ports"].get<double>())));
    CHECK(l["queue_mean_ns"].get<double>() <= l["queue_max_ns"].get<double>());
    if (l["link"] == "qpi1>0") saw_both_directions = true;
  }
  CHECK(links[0]["link"].get<std::string>().rfind("qpi", 0) == 0);  // the ping-pong's busiest link crosses the sockets
  CHECK(links[0]["ports"] == 3);
  CHECK(saw_both_directions);
}

TEST_CASE("the spinlock workload runs every critical section once, ticket and queued locks take turns", "[spinlock]") {
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
    CHECK(r.get("max_streak") == 1);
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

TEST_CASE("a spinlock start stagger lets the seed choose the turn order of a FIFO lock, without it every seed gives "
          "the same order",
          "[spinlock]") {
  // qspinlock at {0,1,24,25}: the lock passes across the die at every hand-off, or at every other one, depending on
  // which CPU got in line first; the flip stream alone (the seed without a stagger) does not change that.
  auto cross_die_handoffs = [](const std::string& stagger, std::uint64_t seed) {
    auto out = cli::run_scenario(source_path("configs/scenarios/spinlock-kunpeng920.json"), "qspinlock",
                                 {{"sections", "200"}, {"cpus", "0,1,24,25"}, {"start_stagger", stagger}}, seed, false);
    return out.results.get("handoffs.cross_die");
  };
  std::set<double> together, staggered;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    together.insert(cross_die_handoffs("0ns", seed));
    staggered.insert(cross_die_handoffs("500ns", seed));
  }
  CHECK(together.size() == 1);
  CHECK(staggered.size() > 1);
}

TEST_CASE("on kunpeng920 the releaser of a glibc spinlock takes it again, while each release still sends every spinner "
          "to a failing CAS in the die's L3",
          "[spinlock]") {
  // docs/locks.md: the unlock store waits for the line, the releaser's SWPA follows it at once, and the spinners
  // (a reload, then a CASA) arrive second: 1 SWP and 3 failed CASes per section, all executed in die 0's L3.
  const int sections = 200;
  auto out = cli::run_scenario(source_path("configs/scenarios/spinlock-kunpeng920.json"), "tas",
                               {{"sections", std::to_string(sections)}, {"cpus", "0,1,2,3"}}, std::nullopt, false);
  CHECK(out.results.get("reacquired") == sections - 1);
  CHECK(out.results.get("share_max") == 1);
  CHECK(out.results.get("max_streak") == sections);
  const auto& lock = out.doc["contention"][0];
  REQUIRE(lock["symbol"] == "spinlock.tas");
  CHECK(lock["llc_atomics"].get<double>() >= 4 * sections);
  CHECK(lock["llc_atomics"].get<double>() <= 4 * sections + 16);  // plus the first round's attempts
  CHECK(!lock["transfers"].contains("cross_die"));
}

TEST_CASE("a spinlock run warns when one CPU takes far more than an even share of the sections, and only then",
          "[spinlock][cli]") {
  const std::string s = test::quoted(source_path("configs/scenarios/spinlock-kunpeng920.json"));
  auto tas = test::run_cli("run " + s + " --variant tas --set sections=200 --set cpus=0,1,2,3");
  CHECK(tas.exit_code == 0);
  CHECK_THAT(tas.output, Catch::Contains("lock tas is unfair here: one CPU took 100.0 % of the sections (an even "
                                         "share is 25.0 %), 200 in a row at the most"));
  auto ticket = test::run_cli("run " + s + " --variant ticket --set sections=200 --set cpus=0,1,2,3");
  CHECK(ticket.exit_code == 0);
  CHECK_THAT(ticket.output, !Catch::Contains("unfair"));
  // two CPUs: twice an even share is all of them, so more than 3/4 is unfair
  auto pair = test::run_cli("run " + s + " --variant tas --set sections=200 --set cpus=0,1");
  CHECK_THAT(pair.output, Catch::Contains("one CPU took 100.0 % of the sections (an even share is 50.0 %)"));
  // fewer than two sections per CPU say nothing about fairness
  auto few = test::run_cli("run " + s + " --variant ticket --set sections=1 --set cpus=0,1,2,3");
  CHECK(few.exit_code == 0);
  CHECK_THAT(few.output, !Catch::Contains("unfair"));
}
