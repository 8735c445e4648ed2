// The command line as users meet it: every kind of bad input gives one clear
// error naming file and path, exit 2 and no results file; the exported schema
// accepts every shipped config; validate fails on a missed row; runs repeat.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

/// One kind of bad input: how to break a good scenario/platform pair, and
/// what the error must say.
struct BadInput {
  std::string kind;
  std::function<void(json& scenario, json& platform, const TempDir& dir)> breaks;
  std::string extra_args;
  std::vector<std::string> says;
  std::string platform_text = {};  ///< raw platform file text, when it is not JSON
  std::string scenario_arg = "s.json";
};

json good_scenario() {
  return {{"platform", "p.json"}, {"workload", "c2c"}, {"params", {{"rounds", 10}, {"warmup", 0}}}};
}

void nothing(json&, json&, const TempDir&) {}

std::vector<BadInput> bad_inputs() {
  return {
      {"malformed JSON", nothing, "", {"p.json", "malformed JSON at line 3"}, "{\n  \"name\": \"x\",\n}\n"},
      {"a number no double holds", nothing, "", {"p.json", "a JSON value out of range: number overflow parsing '1e999'"},
       "{\"name\": 1e999}\n"},
      {"unknown key in a scenario", [](json& s, json&, const TempDir&) { s["worklaod"] = "c2c"; }, "",
       {"s.json", "worklaod", "unknown key"}},
      {"a platform key nobody reads", [](json&, json& p, const TempDir&) { p["cpu"]["turbo"] = true; }, "",
       {"p.json", "platform.cpu.turbo", "no model reads it"}},
      {"a parameter nobody reads", [](json& s, json&, const TempDir&) { s["params"]["roundz"] = 5; }, "",
       {"s.json", "params.roundz", "no model reads it"}},
      {"wrong type", [](json& s, json&, const TempDir&) { s["params"]["rounds"] = "many"; }, "",
       {"s.json", "params.rounds", "expected an integer"}},
      {"missing field", [](json&, json& p, const TempDir&) { p["topology"].erase("sockets"); }, "",
       {"p.json", "platform.topology.sockets", "missing required key"}},
      {"0 CPUs", [](json&, json& p, const TempDir&) { set_value(p, "topology.cores_per_cluster", 0); }, "",
       {"p.json", "platform.topology.cores_per_cluster", "must be at least 1"}},
      {"a CPU beyond the machine", [](json& s, json&, const TempDir&) { s["params"]["cpu_b"] = 96; }, "",
       {"s.json", "params.cpu_b", "must be at most 95"}},
      {"negative latency", [](json&, json& p, const TempDir&) { set_value(p, "interconnect.cluster.latency", "-3ns"); },
       "", {"p.json", "platform.interconnect.cluster.latency", "expected a time"}},
      {"a number without source", [](json&, json& p, const TempDir&) { p["memory"]["dram_latency"] = "87.6ns"; }, "",
       {"p.json", "platform.memory.dram_latency", "needs its source"}},
      {"an estimate without range", [](json&, json& p, const TempDir&) { p["caches"]["l1d"]["assoc"].erase("range"); },
       "", {"p.json", "platform.caches.l1d.assoc", "an estimate needs a plausible \"range\""}},
      {"a choice not offered", [](json&, json& p, const TempDir&) { p["coherence"]["arbitration"] = "fastest"; }, "",
       {"p.json", "platform.coherence.arbitration", "expected one of: arrival, nearest, random"}},
      {"missing file", nothing, "", {"nope.json", "cannot open the file"}, {}, "nope.json"},
      {"unreadable file (a directory)", [](json&, json&, const TempDir& d) { std::filesystem::create_directory(d.path / "dir.json"); },
       "", {"dir.json", "is a directory"}, {}, "dir.json"},
      {"include cycle",
       [](json&, json& p, const TempDir& d) {
         p = {{"include", "q.json"}};
         d.write("q.json", json{{"include", "p.json"}}.dump());
       },
       "", {"include cycle", "q.json", "p.json"}},
      {"an include whose base file is missing", [](json&, json& p, const TempDir&) { p = {{"include", "base.json"}}; },
       "", {"p.json", "include", "base.json does not exist", "relative to the file that includes it"}},
      {"--trace-window without --trace", nothing, "--trace-window 1us:2us", {"--trace-window", "needs --trace FILE"}},
      {"--trace into a missing directory", nothing, "--trace /nonexistent-dir/t.json",
       {"/nonexistent-dir/t.json", "--trace", "does not exist"}},
      {"scenario naming a missing platform", [](json& s, json&, const TempDir&) { s["platform"] = "gone.json"; }, "",
       {"s.json", "platform", "gone.json"}},
      {"unknown variant",
       [](json& s, json&, const TempDir&) { s["variants"] = {{"a", {{"rounds", 5}}}, {"b", {{"rounds", 6}}}}; },
       "--variant c", {"s.json", "variants", "unknown variant 'c' (known: a, b)"}},
      {"unknown workload", [](json& s, json&, const TempDir&) { s["workload"] = "c3c"; }, "",
       {"s.json", "workload", "unknown workload 'c3c'"}},
      {"--set on a missing path", nothing, "--set platform.interconnect.warp.latency=1ns",
       {"p.json", "platform.interconnect.warp.latency", "no key 'warp'"}},
      {"--set with a wrong type", nothing, "--set rounds=abc",
       {"s.json", "params.rounds", "expected an integer", "set on the command line"}},
      {"--set without a value", nothing, "--set rounds", {"--set", "expected KEY=VALUE"}},
      // Boost would expand %value% in its own message forever; the user's '%' shows as U+FF05.
      {"an option value that looks like a message placeholder", nothing, "--seed %value%",
       {"--seed", "\uFF05value\uFF05", "is invalid: expected decimal digits"}},
      // Boost reads "-1" for a 64-bit unsigned option as 2^64 - 1.
      {"a negative seed", nothing, "--seed -1", {"--seed", "'-1'", "expected decimal digits from 0 to 18446744073709551615"}},
      {"a seed too big for 64 bits", nothing, "--seed 18446744073709551616",
       {"--seed", "'18446744073709551616'", "expected decimal digits from 0 to 18446744073709551615"}},
      {"absurd CPU count (a million)",
       [](json&, json& p, const TempDir&) {
         set_value(p, "topology.sockets", 64);
         set_value(p, "topology.dies_per_socket", 16);
         set_value(p, "topology.cores_per_cluster", 256);
       },
       "", {"p.json", "platform.topology", "at most 16384 are supported"}},
      {"absurd size", [](json&, json& p, const TempDir&) { set_value(p, "caches.llc.size", "1000000TiB"); }, "",
       {"p.json", "platform.caches.llc.size"}},
  };
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

TEST_CASE("every kind of bad input is refused with exit 2, an error naming file and path, and no results", "[cli][config]") {
  const auto cases = bad_inputs();
  REQUIRE(cases.size() >= 15);
  const char* doc_out = std::getenv("COHSIM_ERRORS_TABLE");  // regenerates the table in docs/errors.md
  std::ofstream table;
  if (doc_out != nullptr) table.open(doc_out);
  for (const auto& c : cases) {
    INFO("bad input: " << c.kind);
    TempDir dir;
    json scenario = good_scenario(), platform = platform_json();
    c.breaks(scenario, platform, dir);
    dir.write("s.json", scenario.dump(1));
    if (!std::filesystem::exists(dir.path / "p.json"))
      dir.write("p.json", c.platform_text.empty() ? platform.dump(1) : c.platform_text);
    const std::string out = dir.file("out.json");
    auto r = run_cli(fmt::format("run {} --json {} {}", quoted(dir.file(c.scenario_arg)), quoted(out), c.extra_args));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    for (const auto& s : c.says) CHECK_THAT(r.output, Catch::Contains(s));
    CHECK_FALSE(std::filesystem::exists(out));
    if (table.is_open()) {
      std::string line = first_line(r.output);
      auto tmp = line.find(dir.path.string());
      while (tmp != std::string::npos) {
        line.replace(tmp, dir.path.string().size(), "DIR");
        tmp = line.find(dir.path.string());
      }
      table << "| " << c.kind << " | `" << line << "` |\n";
    }
  }
}

TEST_CASE("topo and selftest refuse a platform that run refuses: a key nobody reads, a cache level the tester replaces",
          "[cli][config]") {
  TempDir dir;
  json typo = platform_json();
  typo["interconnect"]["socket"]["link"] = "ring";  // for "links"
  dir.write("typo.json", typo.dump(1));
  json bad_cache = platform_json();
  set_value(bad_cache, "caches.l1d.assoc", 8.5);  // the tester runs with 2 ways, but the file is wrong
  dir.write("bad-cache.json", bad_cache.dump(1));
  struct Case {
    std::string command, says;
  };
  for (const Case& c : std::vector<Case>{
           {"topo " + quoted(dir.file("typo.json")), "platform.interconnect.socket.link"},
           {"selftest coherence --cpus 2 --ops 10 --platform " + quoted(dir.file("typo.json")),
            "platform.interconnect.socket.link"},
           {"selftest coherence --cpus 2 --ops 10 --platform " + quoted(dir.file("bad-cache.json")),
            "platform.caches.l1d.assoc"},
           {"selftest coherence --cpus 2 --ops 10 --seed -1", "'-1'"},
           {"selftest coherence --cpus 2 --ops 0", "--ops"},
           // an int option's value out of int's range, or not a whole number: the message says what it must be
           {"selftest coherence --cpus 2 --ops 99999999999",
            "option '--ops' is invalid: expected decimal digits (with '-' for a negative number) from -2147483648 to 2147483647"},
           {"selftest coherence --cpus 2.5", "option '--cpus' is invalid: expected decimal digits"},
           {"selftest coherence --cpus +2", "option '--cpus' is invalid: expected decimal digits"},
           {"topo " + quoted(dir.file("typo.json")) + " --from x", "option '--from' is invalid: expected decimal digits"},
           // a negative CPU is refused, not taken for "no --from"
           {"topo " + quoted(source_path("configs/platforms/kunpeng920.json")) + " --from -1 --to -1", "CPU -1 does not exist"},
           {"topo " + quoted(source_path("configs/platforms/kunpeng920.json")) + " --from -5 --to 3", "CPU -5 does not exist"},
           {"selftest coherence --cpus 2 --lines 4097", "--lines"}}) {
    INFO(c.command);
    const auto r = run_cli(c.command);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(c.says));
  }
  CHECK(run_cli("selftest coherence -q --cpus 2 --ops 10 --seed 18446744073709551615").exit_code == 0);  // the largest
}

TEST_CASE("the exported JSON Schema accepts every shipped platform and scenario", "[cli][config]") {
  REQUIRE(std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") == 0);
  TempDir dir;
  for (const std::string kind : {"platform", "scenario"}) {
    const std::string schema = dir.file(kind + ".schema.json");
    REQUIRE(std::system(fmt::format("{} schema {} > {}", COHSIM_BINARY, kind, quoted(schema)).c_str()) == 0);
    const std::string folder = source_path(kind == "platform" ? "configs/platforms" : "configs/scenarios");
    const std::string script = fmt::format(
        "import glob, json, jsonschema, os, sys\n"
        "def load(f):\n"  // a file that includes another is checked as cohsim reads it: merged over its base
        "    doc = json.load(open(f))\n"
        "    if 'include' not in doc:\n"
        "        return doc\n"
        "    base = load(os.path.join(os.path.dirname(f), doc.pop('include')))\n"
        "    def merge(b, o):\n"
        "        for k, v in o.items():\n"
        "            b[k] = merge(b[k], v) if isinstance(v, dict) and isinstance(b.get(k), dict) else v\n"
        "        return b\n"
        "    return merge(base, doc)\n"
        "schema = json.load(open('{}'))\n"
        "files = sorted(glob.glob('{}/*.json'))\n"
        "assert files\n"
        "for f in files:\n"
        "    jsonschema.validate(load(f), schema)\n"
        "    jsonschema.validate(json.load(open(f)), schema)\n"  // as an editor sees it, include and all
        "bad = load(files[0]); bad['unexpected_key'] = 1\n"
        "if '{}' == 'platform':\n"  // an include-based file: a number it sets still needs its source
        "    unsourced = {{'include': 'x.json', 'caches': {{'llc': {{'size': {{'value': '1MiB'}}}}}}}}\n"
        "    try:\n"
        "        jsonschema.validate(unsourced, schema); sys.exit(4)\n"
        "    except jsonschema.ValidationError:\n"
        "        pass\n"
        "try:\n"
        "    jsonschema.validate(bad, schema); sys.exit(3)\n"
        "except jsonschema.ValidationError:\n"
        "    pass\n",
        schema, folder, kind);
    const std::string py = dir.write(kind + "_check.py", script);
    INFO(kind << " schema");
    CHECK(std::system(fmt::format("/usr/bin/python3 {}", quoted(py)).c_str()) == 0);
  }
}

TEST_CASE("validate exits 1 when a calibration row misses and 0 when it holds", "[cli]") {
  json cal = config::load_json_file(source_path("data/calibration.json"));
  json row;
  for (const auto& r : cal["rows"])
    if (r["id"] == "kp920.c2c.same-cluster") row = r;
  REQUIRE(!row.is_null());
  TempDir dir;
  row["set"]["rounds"] = 50;
  const std::string good = dir.write("good.json", json{{"rows", {row}}}.dump());
  row["measured"] = 3450.0;  // impossible: a hundred times the measurement
  const std::string bad = dir.write("bad.json", json{{"rows", {row}}}.dump());
  auto miss = run_cli("validate --calibration " + quoted(bad) + " --only kp920.c2c.same-cluster");
  CHECK(miss.exit_code == 1);
  CHECK_THAT(miss.output, Catch::Contains("MISS") && Catch::Contains("1 missed"));
  auto ok = run_cli("validate --calibration " + quoted(good) + " --only kp920.c2c.same-cluster");
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains("1 ok, 0 known misses, 0 missed"));
}

TEST_CASE("the same scenario, parameters and seed give identical metrics", "[cli][determinism]") {
  const std::string scen = source_path("configs/scenarios/c2c-kunpeng920.json");
  const std::vector<scenario::Override> sets = {{"rounds", "200"}, {"cpu_b", "24"}, {"matrix", "true"}};
  auto a = cli::run_scenario(scen, "", sets, 7, false);
  auto b = cli::run_scenario(scen, "", sets, 7, false);
  CHECK(a.doc["metrics"] == b.doc["metrics"]);
  CHECK(a.doc["contention"] == b.doc["contention"]);
  CHECK(a.doc["host"]["events"] == b.doc["host"]["events"]);
  CHECK(a.doc["host"]["simulated_ns"] == b.doc["host"]["simulated_ns"]);
}

TEST_CASE("an output that cannot be written or that is an input is refused before anything runs", "[cli]") {
  TempDir dir;
  dir.write("p.json", platform_json().dump(1));
  const std::string scenario = dir.write("s.json", good_scenario().dump(1));
  const std::string before = read_all(scenario);
  // the results onto the scenario itself: refused, the scenario left as it was
  auto onto_input = run_cli(fmt::format("run {} --json {}", quoted(scenario), quoted(scenario)));
  INFO(onto_input.output);
  CHECK(onto_input.exit_code == 2);
  CHECK_THAT(onto_input.output, Catch::Contains("--json: the run also reads or writes"));
  CHECK(read_all(scenario) == before);
  // ... nor onto the platform the scenario names, nor the trace's file when neither exists yet
  const std::string platform = dir.file("p.json"), platform_before = read_all(platform);
  CHECK(run_cli(fmt::format("run {} --json {}", quoted(scenario), quoted(platform))).exit_code == 2);
  CHECK(read_all(platform) == platform_before);
  const std::string both = dir.file("both.json");
  CHECK(run_cli(fmt::format("run {} --json {} --trace {}", quoted(scenario), quoted(both), quoted(both))).exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(both));
  // compare: a missing file of --platforms, a --report that is a file, a --json into a missing directory;
  // each fails before the first variant runs
  dir.write("s.json", good_scenario().dump(1));
  const std::string file = dir.write("a-file", "x");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fmt::format("--platforms {},{}", quoted(dir.file("p.json")), quoted(dir.file("gone.json"))),
       "gone.json does not exist"},
      {fmt::format("--report {}", quoted(file)), "--report: this is a file"},
      {"--json /nonexistent-dir/c.json", "--json: its directory /nonexistent-dir does not exist"}};
  for (const auto& [args, says] : cases) {
    auto r = run_cli(fmt::format("compare {} {}", quoted(scenario), args));
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(says) && !Catch::Contains("running"));
  }
}

TEST_CASE("compare of a scenario without variants names its one column and says why there are no ranges", "[cli]") {
  TempDir dir;
  dir.write("p.json", platform_json().dump(1));
  const std::string scenario = dir.write("s.json", good_scenario().dump(1));
  const auto r = run_cli(fmt::format("compare {}", quoted(scenario)));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("metric") && Catch::Contains("value") &&
                           Catch::Contains("one variant, no difference to give a range of"));
}

TEST_CASE("a platform a --set made inconsistent is reported with the --set that changed it", "[cli]") {
  const auto r = run_cli(fmt::format("run {} --set platform.topology.sockets=1",
                                     quoted(source_path("configs/scenarios/c2c-kunpeng920.json"))));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("platform.interconnect.socket") &&
                           Catch::Contains("(the file as changed by --set platform.topology.sockets=1)"));
}
