// The c2c workload's results: the pair it measured, its hop class by name.
#include <algorithm>
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

TEST_CASE("c2c names the hop class of its pair in the results, beside the class's index as a metric", "[c2c]") {
  for (const auto& [cpu_b, name, index] : {std::tuple{"1", "cluster", 1.0}, std::tuple{"48", "socket", 4.0}}) {
    INFO("cpu_b " << cpu_b);
    auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                                     {{"cpu_b", cpu_b}, {"rounds", "5"}, {"warmup", "0"}});
    scenario::Run run(s, 1);
    const scenario::Results r = run.execute();
    CHECK(r.extra["pair"] == json{{"cpu_a", 0}, {"cpu_b", std::stoi(cpu_b)}, {"hop_class", name}});
    CHECK(r.get("hop_class") == index);
  }
}

namespace {
double c2c_one_way(const std::string& scenario, const std::string& cpu_b, const std::string& op,
                   const std::string& platform = "") {
  auto s = scenario::load_scenario(source_path(scenario), "",
                                   {{"cpu_b", cpu_b}, {"op", op}, {"rounds", "20"}, {"warmup", "2"}},
                                   platform.empty() ? "" : source_path(platform));
  scenario::Run run(s, 1);
  return run.execute().get("one_way_ns");
}
}  // namespace

TEST_CASE("c2c op=cas (a load, then the CAS) costs more than op=blind-cas (the CAS alone) on every pair", "[c2c]") {
  struct Pair {
    const char *scenario, *platform, *cpu_b;
  };
  for (const auto& p : {Pair{"configs/scenarios/c2c-haswell-ex.json", "", "1"},
                        Pair{"configs/scenarios/c2c-haswell-ex.json", "", "18"},
                        Pair{"configs/scenarios/c2c-kunpeng920.json", "", "48"},
                        Pair{"configs/scenarios/c2c-haswell-ex.json", "configs/platforms/skylake-sp-8s.json", "224"},
                        Pair{"configs/scenarios/c2c-haswell-ex.json", "configs/platforms/skylake-sp-8s.json", "196"}}) {
    INFO(p.scenario << " " << p.platform << " cpu_b " << p.cpu_b);
    const double blind = c2c_one_way(p.scenario, p.cpu_b, "blind-cas", p.platform);
    const double cas = c2c_one_way(p.scenario, p.cpu_b, "cas", p.platform);
    CHECK(cas > blind);
  }
}

TEST_CASE("c2c's default is the blind CAS", "[c2c]") {
  auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-haswell-ex.json"), "",
                                   {{"cpu_b", "18"}, {"rounds", "20"}, {"warmup", "2"}});
  scenario::Run run(s, 1);
  CHECK(run.execute().get("one_way_ns") == c2c_one_way("configs/scenarios/c2c-haswell-ex.json", "18", "blind-cas"));
}

TEST_CASE("c2c and atomic-counter refuse a bad op, or a CPU the platform lacks, with exit 2", "[c2c][cli]") {
  const std::string hsx = quoted(source_path("configs/scenarios/c2c-haswell-ex.json"));
  const std::string skx8 = quoted(source_path("configs/platforms/skylake-sp-8s.json"));
  const std::string counter = quoted(source_path("configs/scenarios/atomic-counter-skylake-sp-8s.json"));
  for (const auto& [args, says] : {
           std::pair<std::string, std::string>{"run " + hsx + " --set op=swap", "op"},
           {"run " + hsx + " --set op=cas --set cpu_b=112", "cpu_b"},  // Haswell-EX has 72 CPUs
           {"run " + hsx + " --platform " + skx8 + " --set op=blind-cas --set cpu_b=448", "cpu_b"},
           {"run " + counter + " --set threads=0", "threads"},
           {"run " + counter + " --set threads=449", "threads"},
           {"run " + counter + " --platform " + quoted(source_path("configs/platforms/haswell-ex.json")) +
                " --set threads=73", "threads"}}) {
    INFO(args);
    const auto r = run_cli(args + " -q");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(says));
  }
  const auto ok = run_cli("run " + hsx + " --platform " + skx8 + " --set op=cas --set cpu_b=112 --set rounds=20 -q");
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains("one_way_ns"));
}

namespace {
/// The Kunpeng 920 c2c one-way time of CPU 0 and `cpu_b` with platform.`path` = `ns` nanoseconds.
double kp920_one_way(int cpu_b, const std::string& path, double ns) {
  auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                                   {{"cpu_b", std::to_string(cpu_b)},
                                    {"rounds", "200"},
                                    {"warmup", "20"},
                                    {"platform." + path, fmt::format("{}ns", ns)}});
  scenario::Run run(s, 1);
  return run.execute().get("one_way_ns");
}

/// A time leaf's nominal value and the ends of its "range" (nominal +-50 % for
/// a measured or calibrated number without one), in ns.
std::vector<double> sweep_values(const json& leaf) {
  auto ns = [](const json& t) { return sim::to_ns(sim::parse_time(t.get<std::string>()).value()); };
  const double nominal = ns(leaf["value"]);
  const double lo = leaf.contains("range") ? ns(leaf["range"][0]) : nominal / 2;
  const double hi = leaf.contains("range") ? ns(leaf["range"][1]) : nominal * 1.5;
  std::vector<double> v;
  for (int i = 0; i <= 8; ++i) v.push_back(lo + (hi - lo) * i / 8);
  v.push_back(nominal);
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

// Every number on the path of a ping-pong, swept over its plausible range on
// each pair class: a longer path never makes a turn shorter. Exact ties of two
// events may cost one of them a tick's order (0.125 ns seen): the tolerance.
// Not swept on the cross-die and cross-socket pairs: llc.atomic_latency, where
// a longer atomic lets the home's snoop reach the L3 before the waiting CPU's
// next CAS, so that CAS no longer fails in front of it (docs/model.md,
// "Core-to-core latency": a physical race, reported and not tested as monotonic).
TEST_CASE("c2c one-way time never falls as a latency on its path grows, on every Kunpeng 920 pair class", "[c2c]") {
  const json platform = platform_json_as_shipped("kunpeng920");
  const std::vector<std::string> paths = {
      "caches.l2.latency",           "caches.llc.tag_latency",          "caches.llc.latency",
      "caches.llc.atomic_latency",   "coherence.directory_latency",     "coherence.snoop_response",
      "coherence.remote_die_snoop",  "interconnect.cluster.latency",    "interconnect.die.latency",
      "interconnect.cross_die.latency", "interconnect.socket.latency"};
  struct Pair {
    int cpu_b;
    const char* name;
  };
  for (const auto& path : paths) {
    const auto values = sweep_values(value_at(platform, path));
    for (const Pair p : {Pair{1, "same cluster"}, Pair{8, "same die"}, Pair{24, "other die"}, Pair{48, "other socket"}}) {
      if (path == "caches.llc.atomic_latency" && p.cpu_b >= 24) continue;
      double prev = 0;
      for (double v : values) {
        const double t = kp920_one_way(p.cpu_b, path, v);
        INFO(path << " = " << v << " ns, " << p.name << " pair: " << t << " ns after " << prev);
        CHECK(t >= prev - 0.25);
        prev = t;
      }
    }
  }
}
