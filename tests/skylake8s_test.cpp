// The 8-socket Skylake-SP platform (skylake-sp-8s.json): its shape as Linux
// numbers it, the socket graph of its UPI links (a twisted hypercube: every
// socket 3 neighbours, none farther than 2 crossings; the plain hypercube
// alternative puts the opposite corner at 3), and latencies that never fall
// as the pair gets farther.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <vector>

#include "cohsim/scenario/machine.hpp"
#include "cohsim/scenario/scenario.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

const std::string kPlatform = "configs/platforms/skylake-sp-8s.json";

/// Socket-link crossings between every pair of the 8 sockets, for `links`.
std::vector<std::vector<int>> crossings(const std::string& links) {
  json doc = platform_json_as_shipped("skylake-sp-8s");
  set_value(doc, "interconnect.socket.links", links);
  Rig rig(doc);
  std::vector<std::vector<int>> d(8, std::vector<int>(8));
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) d[a][b] = rig.icn->socket_crossings(a, b);
  return d;
}

double one_way(const std::string& cpu_b, const std::string& op) {
  auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-haswell-ex.json"), "",
                                   {{"cpu_b", cpu_b}, {"op", op}, {"rounds", "20"}, {"warmup", "2"}},
                                   source_path(kPlatform));
  scenario::Run run(s, 1);
  return run.execute().get("one_way_ns");
}

}  // namespace

TEST_CASE("skylake-sp-8s is 8 sockets x 28 cores x 2 threads, numbered as Linux numbers a Skylake-SP", "[skylake8s]") {
  const scenario::PlatformDoc doc = scenario::load_platform(source_path(kPlatform));
  config::Registry reg;
  config::Reader root(&doc.doc, doc.file, "platform", &reg, /*sourced=*/true);
  const topo::Topology t(root.section("topology", "8S"));
  CHECK(t.cpu_count() == 448);
  CHECK(t.core_count() == 224);
  CHECK(t.node_count() == 8);
  CHECK(t.smt_siblings(0) == std::vector<int>{224});
  for (int s = 0; s < 8; ++s) {
    CHECK(t.cpu(28 * s).socket == s);
    CHECK(t.cpu(28 * s + 27).socket == s);
    CHECK(t.cpu(224 + 28 * s).socket == s);  // the siblings follow the cores, socket by socket
  }
  CHECK(t.hop_class(0, 224) == topo::HopClass::smt);
  CHECK(t.hop_class(0, 27) == topo::HopClass::die);
  CHECK(t.hop_class(0, 28) == topo::HopClass::socket);
}

TEST_CASE("the twisted hypercube gives every socket 3 neighbours and every other socket within 2 crossings",
          "[skylake8s][interconnect]") {
  const auto d = crossings("twisted-hypercube");
  for (int a = 0; a < 8; ++a) {
    std::map<int, int> count;
    for (int b = 0; b < 8; ++b) {
      CHECK(d[a][b] == d[b][a]);
      ++count[d[a][b]];
    }
    CHECK(count == std::map<int, int>{{0, 1}, {1, 3}, {2, 4}});  // 3 UPI links per socket, diameter 2
  }
  CHECK(d[0][1] == 1);
  CHECK(d[0][4] == 1);
  CHECK(d[0][7] == 2);
}

TEST_CASE("the plain hypercube alternative puts the opposite socket 3 crossings away", "[skylake8s][interconnect]") {
  const auto d = crossings("hypercube");
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) CHECK(d[a][b] == __builtin_popcount(static_cast<unsigned>(a ^ b)));
  CHECK(d[0][7] == 3);
}

TEST_CASE("a twisted hypercube of other than 8 sockets is refused, naming the key", "[skylake8s][config]") {
  json doc = platform_json_as_shipped("skylake-sp-2s");
  doc["interconnect"]["socket"]["links"] = "twisted-hypercube";
  CHECK_THROWS_WITH(Rig(doc), Catch::Contains("interconnect.socket.links") && Catch::Contains("8 sockets"));
}

TEST_CASE("on skylake-sp-8s a farther pair is never cheaper: unloaded latency and c2c grow with hop count",
          "[skylake8s][c2c]") {
  Rig rig(platform_json_as_shipped("skylake-sp-8s"));
  // Unloaded, from CPU 0: every socket at k crossings costs more than every socket at k - 1.
  std::map<int, std::set<double>> by_crossings;
  for (int s = 1; s < 8; ++s) by_crossings[rig.icn->socket_crossings(0, s)].insert(sim::to_ns(rig.icn->latency(0, 28 * s)));
  REQUIRE(by_crossings.size() == 2);
  CHECK(*by_crossings[1].rbegin() < *by_crossings[2].begin());
  CHECK(sim::to_ns(rig.icn->latency(0, 27)) < *by_crossings[1].begin());
  // The ping-pong: SMT sibling, own socket, 1 crossing (socket 1), 2 crossings (socket 7).
  const double smt = one_way("224", "blind-cas"), die = one_way("27", "blind-cas"),
               hop1 = one_way("28", "blind-cas"), hop2 = one_way("196", "blind-cas");
  CHECK(smt < die);
  CHECK(die < hop1);
  CHECK(hop1 < hop2);
}

TEST_CASE("cohsim topo shows skylake-sp-8s's sockets by crossings from CPU 0's socket", "[skylake8s][cli]") {
  const auto r = run_cli("topo " + quoted(source_path(kPlatform)) + " --json");
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.output);
  CHECK(out["cpus"] == 448);
  CHECK(out["hop_classes"].contains("smt"));
  CHECK(out["hop_classes"].contains("die"));
  CHECK(out["hop_classes"].contains("socket"));
  const json& d = out["socket_distances"];
  REQUIRE(d.size() == 2);
  CHECK(d[0]["crossings"] == 1);
  CHECK(d[0]["sockets"] == json{1, 2, 4});
  CHECK(d[1]["crossings"] == 2);
  CHECK(d[1]["sockets"] == json{3, 5, 6, 7});
  CHECK(d[0]["one_way_ns"].get<double>() < d[1]["one_way_ns"].get<double>());
}
