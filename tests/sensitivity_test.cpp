// Sensitivity over every uncertain input: a calibrated parameter's range is
// where its row holds; workload estimates are varied; screening runs the
// inputs that move the result most at full length; a percent change from a
// zero baseline is not defined.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <cmath>
#include <set>

#include "src/cli/sensitivity.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

const std::string kC2c = source_path("configs/scenarios/c2c-kunpeng920.json");

/// The provenance of `path` in a run of `scenario_file` (with `overrides`).
config::Provenance provenance_of(const std::string& scenario_file, const std::string& path,
                                 const std::vector<scenario::Override>& overrides = {}) {
  auto s = scenario::load_scenario(scenario_file, "", overrides);
  scenario::Run run(s, 1);
  for (const auto& p : run.registry().provenance())
    if (p.path == path) return p;
  FAIL("no provenance for " << path);
  return {};
}

/// kp920.c2c.same-cluster's prediction with `param` at `value`, and whether it holds its tolerance.
bool same_cluster_holds(const std::string& param, const json& value) {
  const std::string v = value.get<std::string>();
  const double ns = cli::run_scenario(kC2c, "", {{"cpu_a", "0"}, {"cpu_b", "1"}, {param, v}}, std::nullopt, false)
                        .results.get("one_way_ns");
  INFO(param << " = " << v << ": one_way_ns " << ns << " (measured 34.5, tolerance 10%)");
  return std::fabs(100.0 * (ns - 34.5) / 34.5) <= 10.0;
}

double ns_of(const json& v) { return static_cast<double>(*sim::parse_time(v.get<std::string>())) / 1000.0; }

/// A calibration file holding only kp920.c2c.same-cluster, changed by `edit`.
/// The IPI scenario, `rounds` rounds to targets 1 and 24, on a copy of the Kunpeng 920 platform in `dir` (a copy: its
/// calibrated numbers' rows run on the shipped file, so no calibrated-range search runs).
std::string short_ipi_on_a_platform_copy(const TempDir& dir, int rounds) {
  dir.write("p.json", platform_json("kunpeng920").dump());
  json scen = config::load_json_file(source_path("configs/scenarios/ipi-kunpeng920.json"));
  scen["platform"] = "p.json";
  scen["params"]["rounds"] = rounds;
  scen["params"]["warmup_rounds"] = 0;
  scen["params"]["targets"] = "1,24";
  return dir.write("s.json", scen.dump());
}

std::string same_cluster_file(const TempDir& dir, const std::function<void(json&)>& edit) {
  json cal = config::load_json_file(source_path("data/calibration.json"));
  json row;
  for (const auto& r : cal["rows"])
    if (r["id"] == "kp920.c2c.same-cluster") row = r;
  REQUIRE(row.value("tolerance_pct", 0.0) == 10.0);
  edit(row);
  return dir.write("calibration.json", json{{"rows", {row}}}.dump());
}

}  // namespace

TEST_CASE("a calibrated parameter's range keeps its row within tolerance at both ends and takes it out just beyond",
          "[sensitivity]") {
  const std::string param = "platform.caches.llc.atomic_latency";
  const auto p = provenance_of(kC2c, param);
  REQUIRE(p.calibration_rows() == std::vector<std::string>{"kp920.c2c.same-cluster"});
  auto s = scenario::load_scenario(kC2c, "", {});
  const auto r = cli::calibrated_range(p, s.platform.file, {source_path("data/calibration.json"), {}});
  REQUIRE(r.rows == std::vector<std::string>{"kp920.c2c.same-cluster"});
  REQUIRE(!r.low_outside.is_null());
  REQUIRE(!r.high_outside.is_null());
  CHECK(ns_of(r.low) < 24.5);
  CHECK(ns_of(r.high) > 24.5);
  CHECK(same_cluster_holds(param, r.low));
  CHECK(same_cluster_holds(param, r.high));
  CHECK_FALSE(same_cluster_holds(param, r.low_outside));
  CHECK_FALSE(same_cluster_holds(param, r.high_outside));
  // "just beyond": the search narrows each end to 1% of the nominal 24.5 ns
  CHECK(ns_of(r.low) - ns_of(r.low_outside) <= 0.245 + 0.001);
  CHECK(ns_of(r.high_outside) - ns_of(r.high) <= 0.245 + 0.001);
}

TEST_CASE("a calibrated parameter stops at its declared bound where its row still holds and says so", "[sensitivity]") {
  TempDir dir;
  const std::string cal = same_cluster_file(dir, [](json& row) { row["tolerance_pct"] = 1000.0; });
  const auto p = provenance_of(kC2c, "platform.caches.llc.atomic_latency");
  auto s = scenario::load_scenario(kC2c, "", {});
  const auto r = cli::calibrated_range(p, s.platform.file, {cal, {}});
  CHECK(r.low == "0ns");  // a time's bound: it cannot be negative
  CHECK(r.low_outside.is_null());
  CHECK_THAT(r.note, Catch::Contains("low end: within tolerance at the declared bound"));
  CHECK(!r.high_outside.is_null());
}

TEST_CASE("a calibrated parameter whose row misses at the nominal value is not varied", "[sensitivity]") {
  TempDir dir;
  const std::string cal = same_cluster_file(dir, [](json& row) { row["measured"] = 69.0; });
  const auto p = provenance_of(kC2c, "platform.caches.llc.atomic_latency");
  auto s = scenario::load_scenario(kC2c, "", {});
  const auto r = cli::calibrated_range(p, s.platform.file, {cal, {}});
  CHECK(r.low.is_null());
  CHECK(r.high.is_null());
  CHECK_THAT(r.note, Catch::Contains("kp920.c2c.same-cluster misses its tolerance at the nominal value"));
}

TEST_CASE("a workload parameter declared as an estimate carries its plausible range and no other parameter does", "[sensitivity][config]") {
  const auto p = provenance_of(source_path("configs/scenarios/ipi-kunpeng920.json"), "params.call_path_cycles");
  CHECK(p.workload);
  CHECK(p.estimate);
  CHECK(p.range_low == 30);
  CHECK(p.range_high == 120);
  auto s = scenario::load_scenario(source_path("configs/scenarios/ipi-kunpeng920.json"), "", {});
  scenario::Run run(s, 1);
  std::set<std::string> workload_inputs;
  for (const auto& q : run.registry().provenance())
    if (q.workload) workload_inputs.insert(q.path);
  // arm64: the x86 idle loop's estimates are not read, so sensitivity does not vary them
  CHECK(workload_inputs == std::set<std::string>{"params.call_path_cycles", "params.func_call_cycles"});
  auto x86 = scenario::load_scenario(source_path("configs/scenarios/ipi-haswell-ex.json"), "", {});
  scenario::Run x86_run(x86, 1);
  std::set<std::string> x86_inputs;
  for (const auto& q : x86_run.registry().provenance())
    if (q.workload) x86_inputs.insert(q.path);
  CHECK(x86_inputs == std::set<std::string>{"params.call_path_cycles", "params.func_call_cycles",
                                            "params.idle_exit_cycles", "params.schedule_idle_cycles"});
}

TEST_CASE("an x86-only knob set on an arm64 run is reported as having no effect, not listed as used", "[sensitivity][config]") {
  auto s = scenario::load_scenario(source_path("configs/scenarios/ipi-kunpeng920.json"), "",
                                   {{"nox2apic", "true"}, {"idle_exit_cycles", "300"}});
  scenario::Run run(s, 1);
  CHECK(run.unused_params().contains("params.nox2apic"));
  CHECK(run.unused_params().contains("params.idle_exit_cycles"));
  for (const auto& q : run.registry().provenance()) {
    CHECK(q.path != "params.nox2apic");
    CHECK(q.path != "params.schedule_idle_cycles");
  }
}

TEST_CASE("a platform estimate whose range end is not a value of its kind is refused at load", "[sensitivity][config]") {
  TempDir dir;
  json platform = platform_json("kunpeng920");
  platform["gic"]["dispatch"]["range"] = {"30ns", "1TiB"};
  dir.write("p.json", platform.dump());
  const std::string scen = dir.write("s.json", json{{"platform", "p.json"}, {"workload", "c2c"}}.dump());
  auto s = scenario::load_scenario(scen, "", {});
  CHECK_THROWS_WITH(scenario::Run(s, 1), Catch::Contains("platform.gic.dispatch") &&
                                             Catch::Contains("range end \"1TiB\": expected a time"));
}

TEST_CASE("a coarse directory's look-up time is marked as having no effect under an exact directory only",
          "[sensitivity][config]") {
  const std::string path = "platform.coherence.directory.unit_lookup";
  const auto exact = provenance_of(kC2c, path);
  CHECK(exact.estimate);
  CHECK_THAT(exact.unused_because, Catch::Contains("presence core"));
  const auto coarse = provenance_of(kC2c, path, {{"platform.coherence.directory.presence", "socket"}});
  CHECK(coarse.unused_because.empty());
  // every other value of the platform is used, but for the devices c2c never touches
  auto s = scenario::load_scenario(kC2c, "", {});
  scenario::Run run(s, 1);
  for (const auto& p : run.registry().provenance()) {
    INFO(p.path);
    const bool device = p.path.rfind("platform.gic.", 0) == 0 || p.path.rfind("platform.smmu.", 0) == 0;
    if (device) CHECK_THAT(p.unused_because, Catch::Contains("no model of the c2c workload uses the platform's"));
    else if (p.path != path && p.path != "platform.caches.llc.atomic_occupancy")  // (read only with atomic_unit pipelined)
      CHECK(p.unused_because.empty());
  }
}

TEST_CASE("a device section only the workloads that use the device read: sensitivity varies it only there",
          "[sensitivity][config]") {
  // An IPI benchmark uses the GIC, not the SMMU; dma-map-bench the SMMU, not the GIC.
  auto unused = [](const std::string& scenario) {
    auto s = scenario::load_scenario(source_path(scenario), "", {});
    scenario::Run run(s, 1);
    std::set<std::string> out;
    for (const auto& p : run.registry().provenance())
      if (!p.unused_because.empty()) out.insert(p.path.substr(0, p.path.find('.', 9)));
    return out;
  };
  const auto ipi = unused("configs/scenarios/ipi-kunpeng920.json");
  CHECK(ipi.count("platform.smmu") == 1);
  CHECK(ipi.count("platform.gic") == 0);
  const auto smmu = unused("configs/scenarios/smmu-kunpeng920.json");
  CHECK(smmu.count("platform.gic") == 1);
  CHECK(smmu.count("platform.smmu") == 0);
  // a value set there is a warning that names the reason
  auto r = run_cli("run " + quoted(source_path("configs/scenarios/ipi-kunpeng920.json")) +
                   " --set rounds=1 --set platform.smmu.tlbi_time=300ns");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("platform.smmu.tlbi_time") &&
                           Catch::Contains("no model of the ipi-bench workload uses the platform's smmu section"));
}

TEST_CASE("a percent change from a zero baseline is not defined and never 0 %", "[sensitivity]") {
  CHECK_FALSE(cli::pct(5.0, 0.0).has_value());
  CHECK_FALSE(cli::pct(0.0, 0.0).has_value());
  CHECK(cli::pct(110.0, 100.0).value() == Approx(10.0));
  CHECK(cli::pct_json(cli::pct(1.0, 0.0)).is_null());
  CHECK(cli::pct_json(cli::pct(90.0, 100.0)) == Approx(-10.0));
}

TEST_CASE("sensitivity varies workload estimates and when screening runs the five inputs that move the result most "
          "at full length", "[sensitivity][cli]") {
  TempDir dir;
  const std::string s = short_ipi_on_a_platform_copy(dir, 2);
  const std::string out = dir.file("out.json");
  auto r = run_cli("sensitivity " + quoted(s) + " --screen-set rounds=1 --json " + quoted(out) + " -q");
  REQUIRE(r.exit_code == 0);
  const json doc = config::load_json_file(out);
  CHECK_THAT(r.output, Catch::Contains("screened: all") && Catch::Contains("run at full length: the 5"));
  CHECK_THAT(r.output, Catch::Contains("csd_wait_spurious_wakeups_per_call") && Catch::Contains("n/a"));
  // workload estimates are inputs of their own kind, and they move the result
  bool call_path_moves = false;
  for (const auto& e : doc["sensitivity"])
    if (e["param"] == "params.call_path_cycles") {
      CHECK(e["kind"] == "workload estimate");
      CHECK(e["low"] == 30);
      CHECK(e["high"] == 120);
      call_path_moves = call_path_moves || e["value_low"] != e["value_high"];
    }
  CHECK(call_path_moves);
  // a value with no effect in this configuration is listed with its reason, not run
  // (this copy's LLC is memory-side, so its remote_home_lines and merge_reads have no effect either; nor the L3's
  // pipelined atomic occupancy, read only with caches.llc.atomic_unit pipelined)
  std::set<std::string> not_varied;
  for (const auto& n : doc["not_varied"]) not_varied.insert(n["param"].get<std::string>());
  // (nor the SMMU's numbers: no model of the IPI benchmark uses the SMMU)
  std::erase_if(not_varied, [](const std::string& p) { return p.rfind("platform.smmu.", 0) == 0; });
  CHECK(not_varied == std::set<std::string>{"platform.coherence.directory.unit_lookup",
                                            "platform.caches.llc.remote_home_lines",
                                            "platform.caches.llc.merge_reads",
                                            "platform.caches.llc.atomic_occupancy"});
  CHECK_THAT(r.output, Catch::Contains("not varied, no effect here: platform.smmu.tlbi_time (no model of the "
                                       "ipi-bench workload uses the platform's smmu section)"));
  CHECK_THAT(r.output, Catch::Contains("not varied, no effect here: platform.coherence.directory.unit_lookup"));
  for (const auto& in : doc["varied_inputs"]) CHECK(in["param"] != "platform.coherence.directory.unit_lookup");
  // calibrated numbers of a platform copy: their rows run on the shipped file, so they are not varied
  REQUIRE(!doc["calibrated_ranges"]["ranges"].empty());
  for (const auto& c : doc["calibrated_ranges"]["ranges"]) CHECK_THAT(c["note"].get<std::string>(), Catch::Contains("run on other platforms"));
  // the five full-length inputs are the ones that moved most in the screening runs
  REQUIRE(doc["screening"]["full_length"].size() == 5);
  double least_full = 1e300, most_screened = 0;
  for (const auto& in : doc["varied_inputs"]) {
    if (in["run"] == "full") least_full = std::min(least_full, in["screen_score_pct"].get<double>());
    else most_screened = std::max(most_screened, in["score_pct"].get<double>());
  }
  CHECK(least_full >= most_screened);
  CHECK(least_full > 0);
  const double full_nominal = doc["runs"][0]["metrics"]["ns_per_call"].get<double>();
  for (const auto& e : doc["sensitivity"])
    if (e["variant"] == "wmb") CHECK((e["run"] == "full") == (e["baseline_value"].get<double>() == full_nominal));
}

TEST_CASE("a value with no effect in the first variant is still varied when another variant uses it",
          "[sensitivity][cli]") {
  TempDir dir;
  dir.write("p.json", platform_json("kunpeng920").dump());
  json scen = {{"platform", "p.json"},
               {"workload", "c2c"},
               {"params", {{"rounds", 5}, {"warmup", 0}}},
               {"variants", {{"exact", json::object()}, {"coarse", {{"platform.coherence.directory.presence", "socket"}}}}}};
  const std::string s = dir.write("s.json", scen.dump());
  const std::string path = "platform.coherence.directory.unit_lookup";
  for (const std::string variants : {"exact", "exact,coarse"}) {
    const std::string out = dir.file("out-" + variants + ".json");
    auto r = run_cli("sensitivity " + quoted(s) + " --variants " + variants + " --json " + quoted(out) + " -q");
    REQUIRE(r.exit_code == 0);
    const json doc = config::load_json_file(out);
    bool varied = false;
    for (const auto& in : doc["varied_inputs"]) varied = varied || in["param"] == path;
    bool skipped = false;
    for (const auto& n : doc["not_varied"]) skipped = skipped || n["param"] == path;
    INFO("variants " << variants);
    CHECK(varied == (variants != "exact"));
    CHECK(skipped == (variants == "exact"));
  }
}

TEST_CASE("an input whose run fails is reported as failed and the study goes on with the others and exits 1",
          "[sensitivity][cli]") {
  TempDir dir;
  json platform = platform_json("kunpeng920");
  // 3 does not divide the 2 sockets: the run at the high end fails after load
  platform["topology"]["sockets_per_group"] = {{"value", 2}, {"source", "estimate: test"}, {"range", {2, 3}}};
  dir.write("p.json", platform.dump());
  json scen = {{"platform", "p.json"}, {"workload", "c2c"}, {"params", {{"rounds", 5}, {"warmup", 0}}}};
  const std::string s = dir.write("s.json", scen.dump());
  const std::string out = dir.file("out.json");
  auto r = run_cli("sensitivity " + quoted(s) + " --json " + quoted(out) + " -q");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("FAILED: at 3 (high)") && Catch::Contains("must divide the 2 sockets"));
  const json doc = config::load_json_file(out);
  int failed = 0, ran = 0;
  for (const auto& in : doc["varied_inputs"]) (in.contains("error") ? failed : ran) += 1;
  CHECK(failed == 1);
  CHECK(ran > 10);
  for (const auto& e : doc["sensitivity"]) CHECK(e["param"] != "platform.topology.sockets_per_group");
}

TEST_CASE("calibrated ranges are written to the output and an earlier output's ranges are reused", "[sensitivity][cli]") {
  TempDir dir;
  const std::string cal = same_cluster_file(dir, [](json&) {});
  const std::string first = dir.file("first.json"), second = dir.file("second.json");
  const std::string args = "sensitivity " + quoted(kC2c) + " --set rounds=20 --set warmup=0 -q --calibration " + quoted(cal);
  REQUIRE(run_cli(args + " --json " + quoted(first)).exit_code == 0);
  auto again = run_cli(args + " --ranges " + quoted(first) + " --json " + quoted(second));
  REQUIRE(again.exit_code == 0);
  const json a = config::load_json_file(first)["calibrated_ranges"], b = config::load_json_file(second)["calibrated_ranges"];
  CHECK_THAT(a["method"].get<std::string>(), Catch::Contains("bisection"));
  int varied = 0;
  REQUIRE(a["ranges"].size() == b["ranges"].size());
  for (std::size_t i = 0; i < a["ranges"].size(); ++i) {
    const auto &x = a["ranges"][i], &y = b["ranges"][i];
    INFO(x["param"] << ": " << x["note"]);
    if (x["low"].is_null()) {  // only the rows in the file pin a range
      CHECK_THAT(x["note"].get<std::string>(), Catch::Contains("are not in"));
      continue;
    }
    ++varied;
    CHECK(x["rows"] == json{"kp920.c2c.same-cluster"});
    CHECK(y["low"] == x["low"]);
    CHECK(y["high"] == x["high"]);
    CHECK_THAT(y["note"].get<std::string>(), Catch::Contains("reused from " + first));
  }
  CHECK(varied == 1);  // caches.llc.atomic_latency
}

TEST_CASE("sensitivity options without a study or with a negative count are refused with exit 2", "[sensitivity][cli]") {
  auto screen_without_study = run_cli("compare " + quoted(kC2c) + " --screen-set rounds=5");
  CHECK(screen_without_study.exit_code == 2);
  CHECK_THAT(screen_without_study.output, Catch::Contains("these belong to --sensitivity"));
  auto negative = run_cli("sensitivity " + quoted(kC2c) + " --full-runs -2");
  CHECK(negative.exit_code == 2);
  CHECK_THAT(negative.output, Catch::Contains("--full-runs: -2: must be 0 or more"));
}

TEST_CASE("a structural choice with alternatives is run once with each, and an alternative must be another valid choice",
          "[sensitivity][config][cli]") {
  TempDir dir;
  json platform = platform_json("kunpeng920");
  REQUIRE(platform["coherence"]["arbitration"]["value"] == "arrival");
  auto with_arbitration = [&](const json& value) {
    platform["coherence"]["arbitration"] = value;
    dir.write("p.json", platform.dump());
  };
  const std::string scen =
      dir.write("s.json", json{{"platform", "p.json"}, {"workload", "c2c"}, {"params", {{"rounds", 5}, {"warmup", 0}}}}.dump());
  auto load_error = [&](const json& value) {
    with_arbitration(value);
    auto s = scenario::load_scenario(scen, "", {});
    try {
      scenario::Run run(s, 1);
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(load_error({{"value", "arrival"}, {"source", "estimate: test"}, {"alternatives", {"fifo"}}}),
             Catch::Contains("platform.coherence.arbitration") && Catch::Contains("\"fifo\" is not one of the choices"));
  CHECK_THAT(load_error({{"value", "arrival"}, {"source", "estimate: test"}}), Catch::Contains("needs its plausible \"alternatives\""));
  CHECK_THAT(load_error({{"value", "arrival"}, {"source", "estimate: test"}, {"range", {"a", "b"}}}),
             Catch::Contains("unknown field 'range' (allowed: value, source, alternatives)"));
  CHECK(load_error("arrival").empty());  // a bare choice is still a choice
  // sensitivity's run at the only alternative: the platform's value is then the other plausible one
  with_arbitration({{"value", "arrival"}, {"source", "estimate: test"}, {"alternatives", {"random"}}});
  CHECK_NOTHROW(scenario::Run(scenario::load_scenario(scen, "", {{"platform.coherence.arbitration", "random"}}), 1));

  with_arbitration({{"value", "arrival"}, {"source", "estimate: test"}, {"alternatives", {"random", "nearest"}}});
  const std::string out = dir.file("out.json");
  auto r = run_cli("sensitivity " + quoted(scen) + " --json " + quoted(out) + " -q");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("alternative mechanisms") && Catch::Contains("= random"));
  const json doc = config::load_json_file(out);
  std::set<std::string> run;
  for (const auto& in : doc["varied_inputs"])
    if (in["param"] == "platform.coherence.arbitration") {
      CHECK(in["kind"] == "structural");
      run.insert(in["alternative"].get<std::string>());
    }
  CHECK(run == std::set<std::string>{"random", "nearest"});
  // a --set that chooses an alternative runs it as the nominal; the other alternatives stay inputs
  auto chosen = scenario::load_scenario(scen, "", {{"platform.coherence.arbitration", "random"}});
  scenario::Run chosen_run(chosen, 1);
  for (const auto& p : chosen_run.registry().provenance())
    if (p.path == "platform.coherence.arbitration") CHECK(p.alternatives == std::vector<std::string>{"nearest"});
  // each alternative's row is the run with that choice in place of the platform's
  for (const auto& e : doc["sensitivity"])
    if (e["param"] == "platform.coherence.arbitration" && e["alternative"] == "random") {
      const double direct = cli::run_scenario(scen, "", {{"platform.coherence.arbitration", "random"}}, std::nullopt, false)
                                .results.get(e["metric"].get<std::string>());
      CHECK(e["value_low"].get<double>() == direct);
      CHECK(e["value_high"].get<double>() == direct);
    }
}

TEST_CASE("a sensitivity study emitted as a job list and collected from its points gives the study run here",
          "[sensitivity][cli][joblist]") {
  TempDir dir;
  const std::string s = short_ipi_on_a_platform_copy(dir, 1);
  const std::string points = dir.file("points"), jobs = dir.file("jobs.txt");
  const std::string study = "sensitivity " + quoted(s) + " --variants wmb,dsb-ishst -q";

  auto emitted = run_cli(study + " --points " + quoted(points) + " --emit-joblist " + quoted(jobs));
  REQUIRE(emitted.exit_code == 0);
  CHECK_THAT(emitted.output, Catch::Contains("job(s) to") && Catch::Contains("0 run(s) already in"));
  std::ifstream job_file(jobs);
  const std::string list((std::istreambuf_iterator<char>(job_file)), std::istreambuf_iterator<char>());
  const auto lines = static_cast<std::size_t>(std::count(list.begin(), list.end(), '\n'));
  CHECK(lines > 20);  // every input's ends (or alternatives) x 2 variants, each run once
  CHECK_THAT(list, Catch::Contains(" run ") && Catch::Contains("--variant dsb-ishst") && Catch::Contains("--json"));
  REQUIRE(std::system(("bash " + quoted(jobs) + " > /dev/null 2>&1").c_str()) == 0);

  const std::string collected = dir.file("collected.json"), here = dir.file("here.json");
  auto c = run_cli("sensitivity " + quoted(s) + " --variants wmb,dsb-ishst --points " + quoted(points) + " --json " +
                   quoted(collected));
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.output, Catch::Contains(fmt::format("sensitivity: {} run(s) read from", lines)) &&
                           Catch::Contains(", 0 run here"));
  REQUIRE(run_cli(study + " --json " + quoted(here)).exit_code == 0);
  CHECK(config::load_json_file(collected)["sensitivity"] == config::load_json_file(here)["sensitivity"]);
  CHECK(config::load_json_file(collected)["difference_range"] == config::load_json_file(here)["difference_range"]);
  // emitting again: nothing left to run
  auto again = run_cli(study + " --points " + quoted(points) + " --emit-joblist " + quoted(jobs));
  CHECK_THAT(again.output, Catch::Contains("wrote 0 job(s)"));
  // a changed platform file makes every stored run stale: they run again
  json platform = config::load_json_file(dir.file("p.json"));
  platform["description"] = "edited";
  dir.write("p.json", platform.dump());
  auto edited = run_cli(study + " --points " + quoted(points) + " --emit-joblist " + quoted(jobs));
  CHECK_THAT(edited.output, Catch::Contains(fmt::format("wrote {} job(s)", lines)) &&
                                Catch::Contains("0 run(s) already in"));
}

TEST_CASE("a job list needs its points folder and no screening, and writes no results", "[sensitivity][cli][joblist]") {
  const std::string s = quoted(kC2c);
  TempDir dir;
  auto no_dir = run_cli("sensitivity " + s + " --emit-joblist " + quoted(dir.file("j.txt")));
  CHECK(no_dir.exit_code == 2);
  CHECK_THAT(no_dir.output, Catch::Contains("needs --points DIR"));
  auto screened = run_cli("sensitivity " + s + " --points " + quoted(dir.file("p")) + " --screen-set rounds=1 "
                          "--emit-joblist " + quoted(dir.file("j.txt")));
  CHECK(screened.exit_code == 2);
  CHECK_THAT(screened.output, Catch::Contains("not combined with --screen-set"));
  auto with_json = run_cli("sensitivity " + s + " --points " + quoted(dir.file("p")) + " --json " +
                           quoted(dir.file("o.json")) + " --emit-joblist " + quoted(dir.file("j.txt")));
  CHECK(with_json.exit_code == 2);
  CHECK_THAT(with_json.output, Catch::Contains("writes no results"));
  auto compare = run_cli("compare " + s + " --points " + quoted(dir.file("p")));
  CHECK(compare.exit_code == 2);
  CHECK_THAT(compare.output, Catch::Contains("belong to --sensitivity"));
  CHECK_FALSE(std::filesystem::exists(dir.file("j.txt")));
}
