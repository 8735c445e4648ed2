// Platforms and scenarios as JSON: every shipped platform loads with the right
// shape, hop classes, --set on nested paths, and errors that name file and path.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cohsim/config/sha256.hpp"
#include "cohsim/sim/time.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using topo::HopClass;

namespace {

std::vector<std::string> shipped_platforms() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_path("configs/platforms")))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Shape {
  int cpus, nodes;
  int sibling_of_0;  ///< -1: no SMT
};

}  // namespace

TEST_CASE("every shipped platform loads with consistent counts and SMT siblings", "[config]") {
  // What the datasheets say for the platforms known when this test was written;
  // platforms added later are checked for consistency only.
  const std::map<std::string, Shape> known = {{"kunpeng920", {96, 4, -1}},
                                              {"haswell-ex", {72, 4, -1}},
                                              {"ivybridge-ex", {480, 16, 240}},
                                              {"skylake-sp-2s", {32, 2, -1}}};
  const auto names = shipped_platforms();
  REQUIRE(names.size() >= 1);
  for (const auto& name : names) {
    INFO("platform " << name);
    config::Registry reg;
    scenario::Machine m(scenario::load_platform(source_path("configs/platforms/" + name + ".json")), 1, reg);
    const auto& t = m.topology();
    CHECK(t.cpu_count() == t.sockets() * t.dies_per_socket() * t.clusters_per_die() * t.cores_per_cluster() *
                               t.threads_per_core());
    std::size_t with_node = 0;
    for (int n = 0; n < t.node_count(); ++n) with_node += t.cpus_of_node(n).size();
    CHECK(static_cast<int>(with_node) == t.cpu_count());
    for (int c = 0; c < t.cpu_count(); ++c) {
      const auto sib = t.smt_siblings(c);
      REQUIRE(static_cast<int>(sib.size()) == t.threads_per_core() - 1);
      for (int s : sib) CHECK(t.hop_class(c, s) == HopClass::smt);
    }
    if (auto it = known.find(name); it != known.end()) {
      CHECK(t.cpu_count() == it->second.cpus);
      CHECK(t.node_count() == it->second.nodes);
      if (it->second.sibling_of_0 >= 0) CHECK(t.smt_siblings(0) == std::vector<int>{it->second.sibling_of_0});
    }
  }
}

TEST_CASE("kunpeng920 CPU pairs fall in the hop class of the level they share", "[config][topo]") {
  config::Registry reg;
  scenario::Machine m(scenario::load_platform(source_path("configs/platforms/kunpeng920.json")), 1, reg);
  const auto& t = m.topology();
  CHECK(t.hop_class(0, 1) == HopClass::cluster);
  CHECK(t.hop_class(0, 3) == HopClass::cluster);
  CHECK(t.hop_class(0, 4) == HopClass::die);
  CHECK(t.hop_class(0, 8) == HopClass::die);
  CHECK(t.hop_class(0, 24) == HopClass::cross_die);
  CHECK(t.hop_class(0, 48) == HopClass::socket);
  CHECK(t.hop_class(0, 95) == HopClass::socket);
  CHECK(t.hop_class(48, 72) == HopClass::cross_die);
  CHECK(t.node_of_cpu(23) == 0);
  CHECK(t.node_of_cpu(24) == 1);
  CHECK(t.node_of_cpu(95) == 3);
  CHECK_FALSE(t.hop_class_exists(HopClass::smt));
  CHECK_FALSE(t.hop_class_exists(HopClass::node_controller));
}

TEST_CASE("a --set override reaches nested workload parameters and platform numbers, keeping their source", "[config]") {
  const std::string scen = source_path("configs/scenarios/c2c-kunpeng920.json");
  auto s = scenario::load_scenario(scen, "", {{"rounds", "5"},
                                             {"warmup", "0"},
                                             {"platform.interconnect.socket.latency", "100ns"},
                                             {"platform.coherence.arbitration", "nearest"},
                                             {"platform.caches.l2.size", "1MiB"}});
  CHECK(s.params["rounds"] == 5);
  const auto& socket = s.platform.doc["interconnect"]["socket"]["latency"];
  CHECK(socket["value"] == "100ns");
  CHECK(socket["source"].get<std::string>().rfind("calibration", 0) == 0);
  CHECK(s.platform.doc["coherence"]["arbitration"]["value"] == "nearest");
  scenario::Run run(s, 1);
  CHECK(run.machine().interconnect().cost(HopClass::socket).latency == 100 * sim::kNs);
  CHECK(run.machine().fabric().params().arbitration == "nearest");
  CHECK(run.machine().fabric().params().l2.size == 1024 * 1024);
  CHECK(run.params_used()["rounds"] == 5);
  CHECK(run.execute().get("one_way_ns") > 0);
}

TEST_CASE("a --set on a path that does not exist names the keys that do", "[config]") {
  const std::string scen = source_path("configs/scenarios/c2c-kunpeng920.json");
  try {
    scenario::load_scenario(scen, "", {{"platform.interconnect.warp.latency", "1ns"}});
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK(e.path() == "platform.interconnect.warp.latency");
    CHECK_THAT(e.what(), Catch::Contains("no key 'warp'") && Catch::Contains("socket"));
    CHECK_THAT(e.file(), Catch::Contains("kunpeng920.json"));
  }
}

TEST_CASE("a workload's CPU list refuses a CPU listed twice or one the platform lacks, in each of its forms",
          "[config]") {
  const std::string scen = source_path("configs/scenarios/spinlock-kunpeng920.json");
  for (const auto& [cpus, message] : {std::pair{"0,1,1", "CPU 1 is listed twice"},
                                      std::pair{"0-3,2", "CPU 2 is listed twice"},
                                      std::pair{"[5, 5]", "CPU 5 is listed twice"},
                                      std::pair{"0,96", "CPU 96 does not exist (the platform has CPUs 0-95)"},
                                      std::pair{"[-1]", "CPU -1 does not exist (the platform has CPUs 0-95)"}}) {
    INFO(cpus);
    try {
      auto s = scenario::load_scenario(scen, "", {{"cpus", cpus}});
      scenario::Run run(s, 1);  // the workload reads its parameters
      FAIL("no error");
    } catch (const config::ConfigError& e) {
      CHECK(e.path() == "params.cpus");
      CHECK_THAT(e.what(), Catch::Contains(message));
    }
  }
}

TEST_CASE("a scenario's description or baseline that is not a string is an error naming the key", "[config]") {
  const std::string key = GENERATE(std::string("description"), std::string("baseline"));
  TempDir dir;
  json doc = json::parse(std::ifstream(source_path("configs/scenarios/spinlock-kunpeng920.json")));
  doc[key] = {{"text", "an object where a string belongs"}};
  doc["platform"] = source_path("configs/platforms/kunpeng920.json");  // (absolute: the file sits elsewhere)
  const std::string path = dir.write("scenario.json", doc.dump());
  try {
    scenario::load_scenario(path, "", {});
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK(e.path() == key);
    CHECK_THAT(e.what(), Catch::Contains("not a string"));
  }
}

TEST_CASE("a platform number set on the command line with the wrong type fails at load, saying so", "[config]") {
  auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                                   {{"platform.interconnect.die.latency", "fast"}});
  try {
    scenario::Run run(s, 1);
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK(e.path() == "platform.interconnect.die.latency");
    CHECK_THAT(e.what(), Catch::Contains("expected a time") && Catch::Contains("set on the command line"));
  }
}

TEST_CASE("a platform can include a base file and override one number", "[config]") {
  TempDir dir;
  json base = platform_json();
  dir.write("base.json", base.dump());
  json derived = {{"include", "base.json"},
                  {"name", "derived"},
                  {"memory", {{"dram_latency", {{"value", "100ns"}, {"source", "measurement: test"}}}}}};
  const std::string path = dir.write("derived.json", derived.dump());
  config::Registry reg;
  scenario::Machine m(scenario::load_platform(path), 1, reg);
  CHECK(m.name() == "derived");
  CHECK(m.fabric().params().dram_latency == 100 * sim::kNs);
  CHECK(m.fabric().params().directory_latency == sim::parse_time(base["coherence"]["directory_latency"]["value"].get<std::string>()));
  CHECK(m.cpu_count() == 96);
}

TEST_CASE("a calibrated number names the rows it was fitted to, other sources name none", "[config]") {
  config::Provenance p;
  p.source = "calibration: kp920.c2c.same-die minus same-cluster, with kp920.mem.node0.from-cpu24 and kp920.c2c.same-die";
  CHECK(p.calibration_rows() == std::vector<std::string>{"kp920.c2c.same-die", "kp920.mem.node0.from-cpu24"});
  // numbers with two dots are not row ids (once "87.85-88.1 ns" was read as one)
  p.source = "calibration: kp920.c2c.other-die; 26 to 50 ns give 87.85-88.1 ns, version 1.2.3";
  CHECK(p.calibration_rows() == std::vector<std::string>{"kp920.c2c.other-die"});
  p.source = "estimate: like kp920.c2c.same-die";
  CHECK(p.calibration_rows().empty());
}

TEST_CASE("every row a shipped scenario's numbers say they were fitted to exists in data/calibration.json", "[config]") {
  const auto cal = config::load_json_file(source_path("data/calibration.json"));
  std::set<std::string> ids;
  for (const auto& r : cal["rows"]) ids.insert(r["id"].get<std::string>());
  int named = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_path("configs/scenarios"))) {
    auto s = scenario::load_scenario(e.path().string(), "", {});
    scenario::Run run(s, 1);
    for (const auto& p : run.registry().provenance())
      for (const auto& row : p.calibration_rows()) {
        ++named;
        INFO(e.path().filename().string() << ": " << p.path << " names " << row);
        CHECK(ids.count(row) == 1);
      }
  }
  CHECK(named > 0);
}

TEST_CASE("every shipped scenario with variants has a screen that loads in each variant and shortens the run",
          "[config]") {
  // A setting as a number to compare: a count, or a time in ticks.
  auto magnitude = [](const json& v) -> double {
    if (v.is_number()) return v.get<double>();
    const auto t = v.is_string() ? sim::parse_time(v.get<std::string>()) : std::nullopt;
    REQUIRE(t.has_value());
    return static_cast<double>(*t);
  };
  int screened = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_path("configs/scenarios"))) {
    const auto base = scenario::load_scenario(e.path().string(), "", {});
    INFO(e.path().filename().string());
    if (base.variants.size() < 2) continue;
    if (base.screen.empty()) {  // the one left without: its plain-hpet variant locks up (docs/hpet.md)
      CHECK(e.path().filename() == "hpet-superdome-flex.json");
      continue;
    }
    ++screened;
    for (const auto& v : base.variants) {
      const auto full_s = scenario::load_scenario(e.path().string(), v, {});
      scenario::Run full(full_s, 1);
      const auto short_s = scenario::load_scenario(e.path().string(), v, base.screen);
      scenario::Run screen(short_s, 1);  // every screen value is a valid setting of the workload (bounds included)
      for (const auto& x : base.screen) {
        INFO(v << ": " << x.key);
        const json full_value = full.params_used().value(x.key, json()), short_value = screen.params_used().value(x.key, json());
        REQUIRE_FALSE(full_value.is_null());
        CHECK(magnitude(short_value) < magnitude(full_value));
      }
    }
  }
  CHECK(screened >= 15);
}

TEST_CASE("every stored calibrated range was searched on the shipped platform and calibration files as they are",
          "[config]") {
  // compare's quick ranges reuse a stored range only for the file contents it records: after an edit of a
  // platform, of data/calibration.json or of data/validate-expected.json the range is not varied until
  // scripts/calibrated_ranges.py runs again.
  const json doc = config::load_json_file(source_path("data/calibrated-ranges.json"));
  auto file_sha = [](const std::string& file) { return config::file_sha256_hex(source_path(file)).value(); };
  // the calibration rows with the model's expected predictions of them: a model change that moves a row
  // rewrites validate-expected.json, and the stored ranges must be searched again
  const std::string cal_sha =
      config::sha256_hex(file_sha("data/calibration.json") + file_sha("data/validate-expected.json"));
  std::set<std::string> platforms;
  for (const auto& r : doc["calibrated_ranges"]["ranges"]) {
    const std::string platform = r["platform"].get<std::string>();
    INFO(platform << " " << r["param"].get<std::string>() << ": run scripts/calibrated_ranges.py");
    CHECK(r["platform_sha256"] == config::sha256_hex(scenario::load_platform(source_path(platform)).doc.dump()));
    CHECK(r["calibration_sha256"] == cal_sha);
    CHECK(!r["low"].is_null());
    platforms.insert(platform);
  }
  CHECK(platforms.count("configs/platforms/kunpeng920.json") == 1);
}

TEST_CASE("a platform switch may carry its source like a number, and a sourced non-boolean value is refused",
          "[config]") {
  const json value = GENERATE(json(false), json("no"));
  json doc = platform_json();
  doc["cpu"]["outer_shareable_is_full_system"] = {{"value", value}, {"source", "datasheet: a test"}};
  if (value.is_boolean()) {
    Rig r(doc);
    CHECK_FALSE(r.cpu(0).params().outer_shareable_is_full_system);
    bool recorded = false;
    for (const auto& p : r.registry.provenance())
      if (p.path == "platform.cpu.outer_shareable_is_full_system") recorded = p.source == "datasheet: a test";
    CHECK(recorded);
  } else {
    try {
      Rig r(doc);
      FAIL("no error");
    } catch (const config::ConfigError& e) {
      CHECK(e.path() == "platform.cpu.outer_shareable_is_full_system");
      CHECK_THAT(e.what(), Catch::Contains("expected"));
    }
  }
}

TEST_CASE("a platform with the TSC read cost in its old place, the HPET section, is told the new key", "[config]") {
  TempDir dir;
  json doc = platform_json("haswell-ex");
  doc["hpet"]["tsc_read"] = doc["cpu"]["tsc_read"];
  doc["cpu"].erase("tsc_read");
  const std::string path = dir.write("old-haswell.json", doc.dump());
  config::Registry reg;
  try {
    scenario::Machine m(scenario::load_platform(path), 1, reg);
    FAIL("the old key was accepted");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("platform.hpet.tsc_read") && Catch::Contains("moved to platform.cpu.tsc_read"));
  }
}

TEST_CASE("a workload number may carry its source: fitted ones name their rows, and --set keeps the source", "[config]") {
  // The shipped aim7 scenarios fit no workload number (issue 40): one written here with a fitted vDSO count.
  TempDir dir;
  json doc = json::parse(std::ifstream(source_path("configs/scenarios/hpet-haswell-ex.json")));
  doc["platform"] = source_path("configs/platforms/haswell-ex.json");
  doc["params"]["vdso_reads_per_job"] = {
      {"value", 330}, {"source", "calibration: hsx.aim7.hpet-vs-tsc with hsx.aim7.hpet.cpu-share"}};
  const std::string scen = dir.write("fitted.json", doc.dump());
  const std::string value = GENERATE(std::string(""), std::string("70"));
  std::vector<scenario::Override> sets;
  if (!value.empty()) sets.push_back({"vdso_reads_per_job", value});
  auto s = scenario::load_scenario(scen, "hpet", sets);
  scenario::Run run(s, 1);
  const config::Provenance* p = nullptr;
  for (const auto& q : run.registry().provenance())
    if (q.path == "params.vdso_reads_per_job") p = &q;
  REQUIRE(p != nullptr);
  CHECK(p->workload);
  CHECK(p->value == (value.empty() ? "330" : value));
  CHECK(p->calibration_rows() == std::vector<std::string>{"hsx.aim7.hpet-vs-tsc", "hsx.aim7.hpet.cpu-share"});
  CHECK(run.params_used()["vdso_reads_per_job"] == (value.empty() ? 330 : 70));
}
