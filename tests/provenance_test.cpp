// Provenance (issue 44): a results document records the command line, the
// build and the SHA-256 of every input file read, including a platform's include.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cohsim/config/sha256.hpp"
#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

TEST_CASE("sha256 gives the FIPS 180-4 digests", "[provenance]") {
  CHECK(config::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(config::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block
  CHECK(config::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(config::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

namespace {
/// A small c2c scenario in `dir` whose platform file includes another (so an include's hash can be checked).
std::string write_c2c_scenario(const TempDir& dir) {
  dir.write("base.json", platform_json().dump(1));
  dir.write("p.json", R"({"include": "base.json"})");
  return dir.write("s.json",
                   json{{"platform", "p.json"}, {"workload", "c2c"}, {"params", {{"rounds", 10}, {"warmup", 0}}}}.dump(1));
}
}  // namespace

TEST_CASE("run --json records the command, the build and every input's sha256", "[provenance]") {
  TempDir dir;
  const std::string scenario = write_c2c_scenario(dir);
  const std::string out = dir.file("out.json");
  ::setenv("COHSIM_BUILD_ID", "test-build-7", 1);
  const auto r = run_cli(fmt::format("run {} --seed 3 --json {} -q", quoted(scenario), quoted(out)));
  ::unsetenv("COHSIM_BUILD_ID");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(read_all(out));
  CHECK(doc["command"] == fmt::format("{} run {} --seed 3 --json {} -q", COHSIM_BINARY, scenario, out));
  CHECK(doc["git_commit"].is_string());
  CHECK_FALSE(doc["git_commit"].get<std::string>().empty());
  CHECK(doc["git_dirty"].is_boolean());
  CHECK(doc["build_id"] == "test-build-7");
  CHECK(doc["version"] == COHSIM_VERSION);
  const json& inputs = doc["inputs"];
  REQUIRE(inputs.size() == 3);
  for (const auto* name : {"s.json", "p.json", "base.json"}) {
    INFO(name);
    REQUIRE(inputs.contains(dir.file(name)));
    CHECK(inputs[dir.file(name)] == config::sha256_hex(read_all(dir.file(name))));
  }
  // the digest sha256sum gives for the include-only file (independent of the code under test)
  CHECK(inputs[dir.file("p.json")] == "661d4881426c3567dc8fb7b80b6c5dd3f3c952919ff8450c5528f9220a570636");
}

TEST_CASE("version --json names the build, and COHSIM_BUILD_ID replaces its id", "[provenance]") {
  auto plain = run_cli("version --json");
  REQUIRE(plain.exit_code == 0);
  const json built = json::parse(plain.output);
  CHECK(built["build_id"].is_string());
  ::setenv("COHSIM_BUILD_ID", "another", 1);
  auto other = run_cli("version --json");
  ::unsetenv("COHSIM_BUILD_ID");
  CHECK(json::parse(other.output)["build_id"] == "another");
  CHECK(run_cli("version --jsn").exit_code == 2);
}

TEST_CASE("rerun reproduces a run's metrics, or names the metrics and inputs that differ", "[provenance]") {
  TempDir dir;
  const std::string scenario = write_c2c_scenario(dir);
  const std::string out = dir.file("out.json");
  REQUIRE(run_cli(fmt::format("run {} --set cpu_b=48 --seed 3 --json {} -q", quoted(scenario), quoted(out))).exit_code == 0);
  const auto same = run_cli("rerun " + quoted(out));
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.output, Catch::Contains("reproduced: all"));
  // a recorded metric that is not what the inputs give, and a platform include edited since
  json doc = json::parse(read_all(out));
  doc["metrics"]["hop_class"] = 99;
  const std::string edited = dir.write("edited.json", doc.dump(1));
  dir.write("base.json", platform_json().dump(2));
  const auto differs = run_cli("rerun " + quoted(edited));
  INFO(differs.output);
  CHECK(differs.exit_code == 1);
  CHECK_THAT(differs.output, Catch::Contains("hop_class: 99 recorded"));
  CHECK_THAT(differs.output, Catch::Contains("input " + dir.file("base.json") + " changed"));
  // from another directory: the document's relative paths start where the run was made
  const std::string rel = dir.file("rel.json");
  REQUIRE(run_cli(fmt::format("run s.json --set cpu_b=48 --json {} -q", quoted(rel)), dir.path.string()).exit_code == 0);
  const auto elsewhere = run_cli("rerun " + quoted(rel), std::filesystem::temp_directory_path().string());
  INFO(elsewhere.output);
  CHECK(elsewhere.exit_code == 0);
  dir.write("not-results.json", "{}");
  const auto bad = run_cli("rerun " + quoted(dir.file("not-results.json")));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("not-results.json: scenario: missing"));
}
