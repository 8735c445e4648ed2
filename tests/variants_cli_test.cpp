// Variants that stay true: a --set never quietly changes what a named variant
// means, a run without --variant records no variant name, the results record
// the parameters used, and a platform what-if is one scenario (a variant's
// platform.X value) or one flag (--platform FILE).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

/// A c2c scenario on p.json with two variants that set `rounds`, written into `dir`.
std::string two_variant_scenario(const TempDir& dir) {
  dir.write("p.json", platform_json().dump(1));
  json s = {{"platform", "p.json"},
            {"workload", "c2c"},
            {"params", {{"rounds", 10}, {"warmup", 0}, {"cpu_a", 0}, {"cpu_b", 1}}},
            {"variants", {{"short", {{"rounds", 5}}}, {"long", {{"rounds", 6}}}}},
            {"baseline", "short"}};
  return dir.write("s.json", s.dump(1));
}

json results_of(const std::string& file) { return config::load_json_file(file); }

}  // namespace

TEST_CASE("run --variant V with --set of a key V sets is refused naming the variant, unless --override-variant",
          "[cli][variants]") {
  TempDir dir;
  const std::string scen = two_variant_scenario(dir), out = dir.file("out.json");
  auto refused = run_cli(fmt::format("run {} --variant long --set rounds=7 --json {}", quoted(scen), quoted(out)));
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Catch::Contains("rounds=7") && Catch::Contains("'long' sets it to 6") &&
                                 Catch::Contains("--override-variant"));
  CHECK_FALSE(std::filesystem::exists(out));

  auto other_key = run_cli(fmt::format("run {} --variant long --set cpu_b=2 --json {} -q", quoted(scen), quoted(out)));
  INFO(other_key.output);
  REQUIRE(other_key.exit_code == 0);
  CHECK(results_of(out)["variant"] == "long");
  CHECK(results_of(out)["params"]["cpu_b"] == 2);
  CHECK(results_of(out)["variant_params"] == json{{"rounds", 6}});

  auto allowed = run_cli(
      fmt::format("run {} --variant long --set rounds=7 --override-variant --json {} -q", quoted(scen), quoted(out)));
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  CHECK(results_of(out)["params"]["rounds"] == 7);
}

TEST_CASE("run without --variant applies --set over the baseline's values and records no variant name",
          "[cli][variants]") {
  TempDir dir;
  const std::string scen = two_variant_scenario(dir), out = dir.file("out.json");
  REQUIRE(run_cli(fmt::format("run {} --json {} -q", quoted(scen), quoted(out))).exit_code == 0);
  CHECK(results_of(out)["variant"] == "");
  CHECK(results_of(out)["baseline"] == "short");
  CHECK(results_of(out)["params"]["rounds"] == 5);

  auto set = run_cli(fmt::format("run {} --set rounds=7 --json {}", quoted(scen), quoted(out)));
  INFO(set.output);
  REQUIRE(set.exit_code == 0);
  CHECK_THAT(set.output, Catch::Contains("none named: the baseline short's values"));
  CHECK(results_of(out)["variant"] == "");
  CHECK(results_of(out)["params"]["rounds"] == 7);
  CHECK(results_of(out)["overrides"] == json{{"rounds", "7"}});
}

TEST_CASE("compare --set of a key any variant sets is refused naming each such variant", "[cli][variants]") {
  TempDir dir;
  const std::string scen = two_variant_scenario(dir), out = dir.file("out.json");
  auto refused = run_cli(fmt::format("compare {} --set rounds=7 --json {}", quoted(scen), quoted(out)));
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Catch::Contains("'short' sets it to 5") && Catch::Contains("'long' sets it to 6"));
  CHECK_FALSE(std::filesystem::exists(out));
  // Only the variants run count: --variants long still refuses, naming long alone.
  auto one = run_cli(fmt::format("compare {} --variants long --set rounds=7", quoted(scen)));
  CHECK(one.exit_code == 2);
  CHECK_THAT(one.output, Catch::Contains("'long' sets it to 6") && !Catch::Contains("'short'"));
  auto allowed = run_cli(fmt::format("compare {} --set rounds=7 --override-variant -q --json {}", quoted(scen), quoted(out)));
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  const json results = results_of(out);  // (a range-for over a temporary's member would outlive it)
  for (const auto& r : results["runs"]) CHECK(r["params"]["rounds"] == 7);
}

TEST_CASE("a variant overrides a platform value: the run uses it and its source names the variant", "[cli][variants]") {
  TempDir dir;
  dir.write("p.json", platform_json().dump(1));
  json s = {{"platform", "p.json"},
            {"workload", "c2c"},
            {"params", {{"rounds", 20}, {"warmup", 0}, {"cpu_a", 0}, {"cpu_b", 1}}},
            {"variants", {{"stock", json::object()}, {"slow-cluster", {{"platform.interconnect.cluster.latency", "300ns"}}}}},
            {"baseline", "stock"}};
  const std::string scen = dir.write("s.json", s.dump(1)), out = dir.file("out.json");
  auto r = run_cli(fmt::format("compare {} -q --json {}", quoted(scen), quoted(out)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = results_of(out);
  REQUIRE(doc["runs"].size() == 2);
  const double stock = doc["runs"][0]["metrics"]["one_way_ns"], slow = doc["runs"][1]["metrics"]["one_way_ns"];
  CHECK(doc["runs"][1]["variant"] == "slow-cluster");
  CHECK(slow > stock + 250);
  // A --set of the value the variant sets is refused like any other.
  auto refused = run_cli(fmt::format("compare {} --set platform.interconnect.cluster.latency=5ns", quoted(scen)));
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Catch::Contains("'slow-cluster' sets it"));
  // The what-if value is plain; its source becomes the variant.
  auto loaded = scenario::load_scenario(scen, "slow-cluster", {});
  CHECK(loaded.platform.doc["interconnect"]["cluster"]["latency"]["value"] == "300ns");
  CHECK_THAT(loaded.platform.doc["interconnect"]["cluster"]["latency"]["source"].get<std::string>(),
             Catch::Contains("variant 'slow-cluster'"));
}

TEST_CASE("run with --platform FILE uses another platform and records which", "[cli][variants]") {
  TempDir dir;
  const std::string scen = two_variant_scenario(dir), out = dir.file("out.json");
  json other = platform_json();
  set_value(other, "interconnect.cluster.latency", "300ns");
  const std::string other_file = dir.write("other.json", other.dump(1));
  REQUIRE(run_cli(fmt::format("run {} --json {} -q", quoted(scen), quoted(out))).exit_code == 0);
  const json stock = results_of(out);
  auto r = run_cli(fmt::format("run {} --platform {} --json {} -q", quoted(scen), quoted(other_file), quoted(out)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json swapped = results_of(out);
  CHECK(swapped["platform_file"] == other_file);
  CHECK(swapped["metrics"]["one_way_ns"].get<double>() > stock["metrics"]["one_way_ns"].get<double>() + 250);
  auto missing = run_cli(fmt::format("compare {} --platform {}", quoted(scen), quoted(dir.file("gone.json"))));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("--platform") && Catch::Contains("gone.json"));
}

TEST_CASE("compare --seeds N runs each variant with N seeds, prints medians and keeps every run", "[cli][variants]") {
  // Seeds 11..13 of the tas lock give three different times (start jitter): the median is the middle one.
  const std::string scen = source_path("configs/scenarios/spinlock-kunpeng920.json");
  TempDir dir;
  const std::string out = dir.file("out.json");
  auto r = run_cli(fmt::format("compare {} --variants tas,ticket --set sections=200 --seeds 3 --seed 11 -q --json {}",
                               quoted(scen), quoted(out)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("medians over 3 seeds (11..13)"));
  const json doc = results_of(out);
  REQUIRE(doc["runs"].size() == 6);
  CHECK(doc["runs"][0]["seed"] == 11);
  CHECK(doc["runs"][2]["seed"] == 13);
  std::vector<double> tas;
  for (const auto& run : doc["runs"])
    if (run["variant"] == "tas") tas.push_back(run["metrics"]["ns_per_section"].get<double>());
  REQUIRE(tas.size() == 3);
  const double first_seed = tas[0];
  std::sort(tas.begin(), tas.end());
  REQUIRE(tas[0] != tas[1]);
  REQUIRE(tas[1] != tas[2]);
  REQUIRE(first_seed != tas[1]);
  CHECK_THAT(r.output, Catch::Contains(fmt::format(" {:.6g} ", tas[1])));
  CHECK(run_cli(fmt::format("compare {} --seeds 0", quoted(scen))).exit_code == 2);
}

TEST_CASE("compare --seeds N says a run with no random source is deterministic instead of printing medians",
          "[cli][variants]") {
  const std::string scen = source_path("configs/scenarios/ipi-kunpeng920.json");
  auto r = run_cli(fmt::format("compare {} --variants wmb,dsb-ishst --set rounds=5 --seeds 2 -q", quoted(scen)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("the 2 seeds (1..2) gave identical results: deterministic"));
  CHECK_THAT(r.output, !Catch::Contains("medians over"));
}

TEST_CASE("compare --platforms runs the variants on each platform side by side", "[cli][variants]") {
  TempDir dir;
  const std::string scen = two_variant_scenario(dir), out = dir.file("out.json");
  json slow = platform_json();
  set_value(slow, "interconnect.cluster.latency", "300ns");
  dir.write("slow.json", slow.dump(1));
  auto r = run_cli(fmt::format("compare {} --variants short --platforms {},{} -q --json {}", quoted(scen),
                               quoted(dir.file("p.json")), quoted(dir.file("slow.json")), quoted(out)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("short@p") && Catch::Contains("short@slow"));
  const json doc = results_of(out);
  REQUIRE(doc["runs"].size() == 2);
  CHECK(doc["baseline"] == "short@p");
  CHECK(doc["runs"][1]["label"] == "short@slow");
  CHECK(doc["runs"][1]["variant"] == "short");
  CHECK(doc["runs"][1]["platform_file"] == dir.file("slow.json"));
  CHECK(doc["runs"][1]["metrics"]["one_way_ns"].get<double>() >
        doc["runs"][0]["metrics"]["one_way_ns"].get<double>() + 250);
  auto one = run_cli(fmt::format("compare {} --platforms {}", quoted(scen), quoted(dir.file("p.json"))));
  CHECK(one.exit_code == 2);
  CHECK_THAT(one.output, Catch::Contains("name two or more files"));
}

TEST_CASE("a variant parameter no model reads on this platform is a warning, listed in unused_params",
          "[cli][variants]") {
  TempDir dir;
  const std::string scen = source_path("configs/scenarios/ipi-kunpeng920.json"), out = dir.file("out.json");
  const std::string x86 = source_path("configs/platforms/skylake-sp-2s.json");
  auto on_x86 = run_cli(fmt::format("compare {} --platform {} --variants wmb,dsb-ishst --set rounds=1 --json {}",
                                    quoted(scen), quoted(x86), quoted(out)));
  INFO(on_x86.output);
  REQUIRE(on_x86.exit_code == 0);
  CHECK_THAT(on_x86.output, Catch::Contains("barrier = \"dsb-ishst\" (set by variant 'dsb-ishst') has no effect") &&
                                Catch::Contains("(set by variant 'wmb') has no effect"));
  CHECK(results_of(out)["unused_params"]["params.barrier"] == json{"wmb", "dsb-ishst"});

  auto run_x86 = run_cli(fmt::format("run {} --platform {} --variant dsb-ishst --set rounds=1 --json {}",
                                     quoted(scen), quoted(x86), quoted(out)));
  INFO(run_x86.output);
  REQUIRE(run_x86.exit_code == 0);
  CHECK_THAT(run_x86.output, Catch::Contains("barrier = \"dsb-ishst\"") && Catch::Contains("has no effect"));
  CHECK(results_of(out)["unused_params"].contains("params.barrier"));
  CHECK_FALSE(results_of(out)["params"].contains("barrier"));

  auto on_arm = run_cli(fmt::format("compare {} --variants wmb,dsb-ishst --set rounds=1 --json {}", quoted(scen),
                                    quoted(out)));
  INFO(on_arm.output);
  REQUIRE(on_arm.exit_code == 0);
  CHECK_THAT(on_arm.output, !Catch::Contains("has no effect"));
  CHECK(results_of(out)["unused_params"].empty());

  auto params = run_cli(fmt::format("params {} --platform {} --variant dsb-ishst", quoted(scen), quoted(x86)));
  INFO(params.output);
  REQUIRE(params.exit_code == 0);
  CHECK_THAT(params.output, Catch::Contains("barrier = dsb-ishst") && Catch::Contains("no effect here"));
}

TEST_CASE("a workload parameter that only another variant reads, set with --set, is a warning, listed in "
          "unused_params", "[cli][variants]") {
  TempDir dir;
  const std::string scen = source_path("configs/scenarios/smmu-kunpeng920.json"), out = dir.file("out.json");
  const std::string small = "--set cpus=2 --set duration=100us --set warmup=20us";
  auto other = run_cli(fmt::format("run {} --variant cmpxchg {} --set fallback_entry=lock-first --json {}", quoted(scen),
                                   small, quoted(out)));
  INFO(other.output);
  REQUIRE(other.exit_code == 0);
  CHECK_THAT(other.output, Catch::Contains("fallback_entry = \"lock-first\" (set by --set) has no effect in this run") &&
                               Catch::Contains("read only by the spinlock-fallback variant"));
  CHECK(results_of(out)["unused_params"].contains("params.fallback_entry"));

  auto reader = run_cli(fmt::format("run {} --variant spinlock-fallback {} --set fallback_entry=lock-first --json {}",
                                    quoted(scen), small, quoted(out)));
  INFO(reader.output);
  REQUIRE(reader.exit_code == 0);
  CHECK_THAT(reader.output, !Catch::Contains("has no effect"));
  CHECK(results_of(out)["unused_params"].empty());

  // a parameter the scenario file leaves at its default (no provenance of its own): the same
  auto stock = run_cli(fmt::format("run {} --variant qspinlock --set duration=1ms --set cna_handoffs=5 --json {}",
                                   quoted(source_path("configs/scenarios/locktorture-haswell-ex.json")), quoted(out)));
  INFO(stock.output);
  REQUIRE(stock.exit_code == 0);
  CHECK_THAT(stock.output, Catch::Contains("cna_handoffs = 5 (set by --set) has no effect in this run"));
  CHECK(results_of(out)["unused_params"].contains("params.cna_handoffs"));
}
