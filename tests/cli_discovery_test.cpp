// Finding one's way: errors that quote the user's value with limits in units,
// a did-you-mean for unknown keys, `cohsim params` listing what can be set,
// and -q/-v the same for every command.
#include <catch2/catch.hpp>

#include <filesystem>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {
const std::string kC2c = source_path("configs/scenarios/c2c-kunpeng920.json");
}  // namespace

TEST_CASE("an unknown --set key gets a did-you-mean and the list of valid keys", "[cli][discovery]") {
  auto r = run_cli(fmt::format("run {} --set round=100", quoted(kC2c)));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("params.round") && Catch::Contains("did you mean 'rounds'?") &&
                           Catch::Contains("Valid keys here: cpu_a, cpu_b") && Catch::Contains("warmup"));
  // Nothing close: no guess, still the list.
  auto far = run_cli(fmt::format("run {} --set zzzzzzzz=1", quoted(kC2c)));
  CHECK(far.exit_code == 2);
  CHECK_THAT(far.output, !Catch::Contains("did you mean") && Catch::Contains("Valid keys here:"));
}

TEST_CASE("a value out of bounds is quoted as the user gave it, the bound stated in its unit", "[cli][discovery]") {
  auto r = run_cli(fmt::format("run {} --set platform.interconnect.socket.latency=34ms", quoted(kC2c)));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("value \"34ms\"") && Catch::Contains("34ms is above the maximum 10us"));
  auto no_unit = run_cli(fmt::format("run {} --set platform.interconnect.socket.latency=34", quoted(kC2c)));
  CHECK(no_unit.exit_code == 2);
  CHECK_THAT(no_unit.output, Catch::Contains("value 34:") && !Catch::Contains("\"source\""));
}

TEST_CASE("cohsim params lists workload and platform parameters with value, kind, bounds, source and doc",
          "[cli][discovery]") {
  TempDir dir;
  const std::string out = dir.file("params.json");
  auto r = run_cli(fmt::format("params {} --set rounds=77 --json {}", quoted(kC2c), quoted(out)));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = config::load_json_file(out);
  auto find = [&](const std::string& name) {
    for (const auto& p : doc["parameters"])
      if (p["name"] == name) return p;
    return json();
  };
  const json rounds = find("rounds");
  REQUIRE(!rounds.is_null());
  CHECK(rounds["value"] == 77);
  CHECK(rounds["set_by"] == "--set");
  CHECK(rounds["kind"] == "integer");
  CHECK_FALSE(rounds["doc"].get<std::string>().empty());
  const json latency = find("platform.interconnect.socket.latency");
  REQUIRE(!latency.is_null());
  CHECK(latency["kind"] == "time");
  CHECK_THAT(latency["bounds"].get<std::string>(), Catch::EndsWith("10us"));
  CHECK_FALSE(latency["source"].get<std::string>().empty());
  CHECK(find("matrix")["set_by"] != "--set");

  auto text = run_cli(fmt::format("params {}", quoted(kC2c)));
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Contains("workload parameters (--set NAME=VALUE)") &&
                              Catch::Contains("platform parameters (--set platform.PATH=VALUE)") &&
                              Catch::Contains("  platform.interconnect.socket.latency = ") &&
                              Catch::Contains("source: "));
}

TEST_CASE("the options -q and -v exclude each other and -q prints the results alone, for run and compare alike",
          "[cli][discovery]") {
  const std::string spin = source_path("configs/scenarios/spinlock-kunpeng920.json");
  for (const std::string cmd : {"run", "compare"}) {
    INFO(cmd);
    auto both = run_cli(fmt::format("{} {} -q -v", cmd, quoted(kC2c)));
    CHECK(both.exit_code == 2);
    CHECK_THAT(both.output, Catch::Contains("exclude each other"));
  }
  auto run = run_cli(fmt::format("run {} -q --set rounds=20", quoted(kC2c)));
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Catch::Contains("one_way_ns") && !Catch::Contains("scenario ") && !Catch::Contains("host:"));
  auto compare = run_cli(fmt::format("compare {} -q --set sections=50", quoted(spin)));
  REQUIRE(compare.exit_code == 0);
  CHECK_THAT(compare.output, Catch::Contains("ns_per_section") && !Catch::Contains("running variant"));
}

TEST_CASE("cohsim help help explains help", "[cli][discovery]") {
  auto r = run_cli("help help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("usage: cohsim help [COMMAND]"));
}

TEST_CASE("validate --fail-on new-misses fails on a miss but not on a moved prediction", "[cli][discovery]") {
  json cal = config::load_json_file(source_path("data/calibration.json"));
  json row;
  for (const auto& r : cal["rows"])
    if (r["id"] == "kp920.c2c.same-cluster") row = r;
  REQUIRE(!row.is_null());
  row["set"]["rounds"] = 50;
  TempDir dir;
  const std::string good = dir.write("good.json", json{{"rows", {row}}}.dump());
  // The row holds its tolerance, but the expected prediction is far from today's: MOVED.
  dir.write("validate-expected.json", json{{"predicted", {{"kp920.c2c.same-cluster", 1000.0}}}}.dump());
  auto moved = run_cli("validate --calibration " + quoted(good));
  INFO(moved.output);
  CHECK(moved.exit_code == 1);
  CHECK_THAT(moved.output, Catch::Contains("1 moved"));
  auto tolerant = run_cli("validate --fail-on new-misses --calibration " + quoted(good));
  CHECK(tolerant.exit_code == 0);
  row["measured"] = 3450.0;
  const std::string bad = dir.write("bad.json", json{{"rows", {row}}}.dump());
  auto miss = run_cli("validate --fail-on new-misses --calibration " + quoted(bad));
  CHECK(miss.exit_code == 1);
  CHECK_THAT(miss.output, Catch::Contains("1 missed"));
  CHECK(run_cli("validate --fail-on sometimes --calibration " + quoted(good)).exit_code == 2);
}
