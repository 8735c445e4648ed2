// cohsim litmus as users meet it: PATH as a file, a directory (with its
// kinds.txt) or an @list; exit 1 on UNSOUND or when no test is supported, 2 on
// bad input naming file, line and token (a test that fails to parse is an error,
// not supported); unsupported tests named, not run; the JSON document's shape.
#include <catch2/catch.hpp>

#include <fstream>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

const char* kOne = "AArch64 One\n{ }\n P0 ;\n MOV W0,#1 ;\nexists 0:X0=1\n";
const char* kTlbi = "AArch64 Tlbi\n{ 0:X1=x; }\n P0 ;\n TLBI VAAE1IS,X1 ;\nexists 0:X0=1\n";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST_CASE("litmus prints herd's histogram and Observation line, and the JSON holds every field", "[litmus][cli]") {
  TempDir dir;
  dir.write("one.litmus", kOne);
  dir.write("tlbi.litmus", kTlbi);
  auto r = run_cli("litmus --runs 10 --json " + quoted(dir.file("out.json")) + " " + quoted(dir.path.string()));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Histogram (1 states)\n10    *>0:X0=1;\n") != std::string::npos);
  CHECK(r.output.find("Positive: 10, Negative: 0") != std::string::npos);
  CHECK(r.output.find("Observation One Always 10 0") != std::string::npos);
  CHECK(r.output.find("Test Tlbi unsupported: instruction 'TLBI VAAE1IS,X1' (line 4)") != std::string::npos);
  CHECK(r.output.find("Summary: tests 2, ok 0, UNSOUND 0, not-seen 0, unsupported 1, errors 0, no verdict 1") != std::string::npos);
  json doc = read_json(dir.file("out.json"));
  REQUIRE(doc["tests"].size() == 2);
  const json& one = doc["tests"][0];
  for (const char* key : {"name", "file", "arch", "runs", "condition", "witnessed", "outcomes", "verdict", "status"})
    CHECK(one.contains(key));
  CHECK(one["status"] == "ok");
  CHECK(one["runs"] == 10);
  CHECK(one["witnessed"] == true);
  CHECK(one["outcomes"][0]["state"]["0:X0"] == 1);
  CHECK(one["outcomes"][0]["count"] == 10);
  CHECK(doc["tests"][1]["status"] == "unsupported");
  CHECK(doc["tests"][1]["reason"] == "instruction 'TLBI VAAE1IS,X1' (line 4)");
}

TEST_CASE("litmus uses a directory's kinds.txt: a forbidden outcome witnessed is UNSOUND and exits 1", "[litmus][cli]") {
  TempDir dir;
  dir.write("one.litmus", kOne);
  dir.write("kinds.txt", "One Forbidden\n");
  auto r = run_cli("litmus --runs 5 " + quoted(dir.path.string()));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("Verdict One UNSOUND (kinds: Forbidden)") != std::string::npos);
  dir.write("allowed.txt", "One Allowed\n");
  dir.write("titled.litmus", "AArch64 Titled.litmus\n{ }\n P0 ;\n MOV W0,#1 ;\nexists 0:X0=1\n");
  dir.write("kinds.txt", "One Forbidden\nTitled Allowed\n");
  CHECK(run_cli("litmus --runs 5 " + quoted(dir.path.string())).output.find("Verdict Titled.litmus ok (kinds: Allowed)") !=
        std::string::npos);  // a title that is the file name matches the kinds' bare name
  auto ok = run_cli("litmus --runs 5 --kinds " + quoted(dir.file("allowed.txt")) + " " + quoted(dir.file("one.litmus")));
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.find("Verdict One ok (kinds: Allowed)") != std::string::npos);
}

TEST_CASE("litmus reads an @list relative to itself, skipping comments", "[litmus][cli]") {
  TempDir dir;
  dir.write("one.litmus", kOne);
  dir.write("@all", "# the list\none.litmus\n");
  auto r = run_cli("litmus --runs 3 " + quoted(dir.file("@all")));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Observation One Always 3 0") != std::string::npos);
}

TEST_CASE("litmus exits 2 on bad input, naming file, line and token", "[litmus][cli]") {
  TempDir dir;
  const std::string bad = dir.write("bad.litmus", "AArch64 Bad\n{ 0:X1=x; }\n P0 ;\n LDR W0,[X9,#1,#2] ;\nexists 0:X0=1\n");
  auto r = run_cli("litmus --runs 3 " + quoted(bad));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(bad + ":4: unexpected '#2': expected ']' after the immediate offset") != std::string::npos);
  auto kinds = run_cli("litmus --kinds " + quoted(dir.write("k.txt", "Bad\n")) + " " + quoted(bad));
  CHECK(kinds.exit_code == 2);
  CHECK(kinds.output.find(dir.file("k.txt") + ":1: unexpected 'Bad'") != std::string::npos);
  auto x86 = run_cli("litmus --runs 3 --platform " + quoted(source_path("configs/platforms/skylake-sp-2s.json")) + " " + quoted(bad));
  CHECK(x86.exit_code == 2);
  auto platform = run_cli("litmus --platform " + quoted(dir.file("none.json")) + " " + quoted(bad));
  CHECK(platform.exit_code == 2);
  CHECK(platform.output.find("Test Bad") == std::string::npos);  // refused before any test runs
  auto missing = run_cli("litmus " + quoted(dir.file("nothing.litmus")));
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("expected an existing file, directory or @list") != std::string::npos);
}

TEST_CASE("A test that fails to parse is an error in the summary, not a supported test", "[litmus][cli]") {
  TempDir dir;
  dir.write("one.litmus", kOne);
  dir.write("bad.litmus", "AArch64 Bad\n{ 0:X1=x; }\n P0 ;\n LDR W0,[X1 ;\nexists 0:X0=1\n");
  auto r = run_cli("litmus --runs 3 " + quoted(dir.path.string()));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("errors 1") != std::string::npos);
  CHECK(r.output.find("Supported: 1 of 2 (50.0 %)") != std::string::npos);
}

TEST_CASE("A run in which no test is supported exits 1: nothing judged is not a pass", "[litmus][cli]") {
  TempDir dir;
  auto none = run_cli("litmus --runs 3 " + quoted(dir.write("tlbi.litmus", kTlbi)));
  CHECK(none.exit_code == 1);
  CHECK(none.output.find("Supported: 0 of 1 (0.0 %)") != std::string::npos);
  CHECK(none.output.find("no test was run") != std::string::npos);
  // Every test failing to parse is bad input: exit 2, and none counted as supported.
  auto unparsed = run_cli("litmus --runs 3 " + quoted(dir.write("bad.litmus", "AArch64 Bad\n{ 0:X1=x; }\n P0 ;\n LDR W0,[X1 ;\nexists 0:X0=1\n")));
  CHECK(unparsed.exit_code == 2);
  CHECK(unparsed.output.find("Supported: 0 of 1 (0.0 %)") != std::string::npos);
}

TEST_CASE("A test whose arch does not match the platform is an error", "[litmus][cli]") {
  TempDir dir;
  const std::string one = dir.write("one.litmus", kOne);
  auto r = run_cli("litmus --runs 3 --json " + quoted(dir.file("o.json")) + " --platform " +
                   quoted(source_path("configs/platforms/skylake-sp-2s.json")) + " " + quoted(one));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("an AArch64 test cannot run on") != std::string::npos);
  CHECK(read_json(dir.file("o.json"))["tests"][0]["status"] == "error");
}

TEST_CASE("litmus --cpus places thread i on the i-th CPU of the list, and a list that cannot place the test is bad input",
          "[litmus][cli]") {
  TempDir dir;
  dir.write("sb.litmus",
            "AArch64 SB\n{ 0:X1=x; 0:X3=y; 1:X1=y; 1:X3=x; }\n P0 | P1 ;\n MOV W0,#1 | MOV W0,#1 ;\n"
            " STR W0,[X1] | STR W0,[X1] ;\n LDR W2,[X3] | LDR W2,[X3] ;\nexists (0:X2=0 /\\ 1:X2=0)\n");
  // default: spread over the cores (kunpeng920: a two-thread test on CPUs 0 and 48)
  auto spread = run_cli("litmus --runs 5 --json " + quoted(dir.file("spread.json")) + " " + quoted(dir.file("sb.litmus")));
  CHECK(spread.exit_code == 0);
  CHECK(read_json(dir.file("spread.json"))["tests"][0]["cpus"] == json::array({0, 48}));
  // both threads in one cluster, in the order given
  auto near = run_cli("litmus --runs 5 --cpus 1,0 --json " + quoted(dir.file("near.json")) + " " +
                      quoted(dir.file("sb.litmus")));
  CHECK(near.exit_code == 0);
  CHECK(read_json(dir.file("near.json"))["tests"][0]["cpus"] == json::array({1, 0}));
  CHECK(near.output.find("on kunpeng920, CPUs 1,0 (--cpus)") != std::string::npos);
  auto range = run_cli("litmus --runs 5 --cpus 24-27 --json " + quoted(dir.file("range.json")) + " " +
                       quoted(dir.file("sb.litmus")));
  CHECK(range.exit_code == 0);
  CHECK(read_json(dir.file("range.json"))["tests"][0]["cpus"] == json::array({24, 25}));
  for (const auto& [cpus, message] :
       {std::pair{"3", "2 threads, --cpus names 1 CPU"},
        std::pair{"0,96", "--cpus: CPU 96 does not exist on kunpeng920 (CPUs 0-95)"},
        std::pair{"0,1,0", "--cpus: CPU 0 is listed twice"},
        std::pair{"0,4294967296", "--cpus: CPU 4294967296 does not exist"}}) {
    INFO(cpus);
    auto r = run_cli(std::string("litmus --runs 5 --cpus ") + cpus + " " + quoted(dir.file("sb.litmus")));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(message) != std::string::npos);
  }
  for (const char* bad : {"x", "3-1", ""}) {
    INFO(bad);
    auto r = run_cli(std::string("litmus --runs 5 --cpus '") + bad + "' " + quoted(dir.file("sb.litmus")));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--cpus") != std::string::npos);
  }
}
