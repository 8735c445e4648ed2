// Timeline traces as Perfetto shows them: the process named after the scenario
// and platform, a named track for every agent with events and none for the
// others, and the same bytes for the same scenario and seed.
#include <catch2/catch.hpp>

#include <set>

#include "cohsim/sim/trace.hpp"
#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

/// The metadata events named `what` ("process_name", "thread_name") of a trace: tid -> name.
std::map<int, std::string> metadata_names(const json& trace, const std::string& what) {
  std::map<int, std::string> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == what) out[e.value("tid", -1)] = e["args"]["name"].get<std::string>();
  return out;
}

/// The tids that carry slices, flows or instants.
std::set<int> tracks_with_events(const json& trace) {
  std::set<int> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] != "M") out.insert(e["tid"].get<int>());
  return out;
}

/// The Kunpeng SMMU scenario, short, traced over its first 20 us into `file`.
cli::RunOutput traced_smmu_run(const std::string& file, const std::string& variant = "") {
  cli::TraceOptions trace{file, 0, sim::from_ns(20000)};
  return cli::run_scenario(source_path("configs/scenarios/smmu-kunpeng920.json"), variant,
                           {scenario::parse_override("duration=300us"), scenario::parse_override("warmup=50us")},
                           std::nullopt, false, &trace);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a trace names only the tracks that have events", "[trace]") {
  sim::Tracer t;
  t.name_track(0, "cpu 0");
  t.name_track(1, "cpu 1");
  t.name_track(2, "cpu 2");
  t.name_track(100, "home0");
  t.slice(1, "spin", "wait", 10, 20);
  t.flow("line", 1, 20, 100, 30);
  t.instant(7, "mark", 25);
  const json trace = json::parse(t.to_json());
  CHECK(metadata_names(trace, "thread_name") ==
        std::map<int, std::string>{{1, "cpu 1"}, {7, "track 7"}, {100, "home0"}});
}

TEST_CASE("a trace names its process, by default and as asked", "[trace]") {
  sim::Tracer t;
  CHECK(metadata_names(json::parse(t.to_json()), "process_name") == std::map<int, std::string>{{-1, "cohsim"}});
  t.name_process("cohsim: ipi-kunpeng920 on kunpeng920");
  const json trace = json::parse(t.to_json());
  CHECK(metadata_names(trace, "process_name") ==
        std::map<int, std::string>{{-1, "cohsim: ipi-kunpeng920 on kunpeng920"}});
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name") CHECK(e["pid"] == 1);
}

TEST_CASE("a traced run names its process after scenario and platform and names each track with events",
          "[trace]") {
  TempDir dir;
  traced_smmu_run(dir.file("trace.json"));
  const json trace = json::parse(file_bytes(dir.file("trace.json")));
  CHECK(metadata_names(trace, "process_name").at(-1) == "cohsim: smmu-kunpeng920 on kunpeng920");
  const auto names = metadata_names(trace, "thread_name");
  std::set<int> named;
  for (const auto& [tid, name] : names) named.insert(tid);
  CHECK(named == tracks_with_events(trace));
  CHECK(named.size() < 10);  // the platform has 96 CPUs and a dozen devices; two CPUs and two devices work here
  CHECK(names.at(0) == "cpu 0 (socket 0 die 0 cluster 0)");
  CHECK(names.at(1) == "cpu 1 (socket 0 die 0 cluster 0)");
  bool device_named = false;
  for (const auto& [tid, name] : names)
    if (tid >= 96) device_named = device_named || name == "smmu0";
  CHECK(device_named);
}

TEST_CASE("a traced run of a named variant names the variant in the process", "[trace]") {
  TempDir dir;
  traced_smmu_run(dir.file("trace.json"), "fetch-add");
  const json trace = json::parse(file_bytes(dir.file("trace.json")));
  CHECK(metadata_names(trace, "process_name").at(-1) == "cohsim: smmu-kunpeng920 (fetch-add) on kunpeng920");
}

TEST_CASE("two traced runs of the same scenario and seed write identical bytes", "[trace]") {
  TempDir dir;
  traced_smmu_run(dir.file("a.json"));
  traced_smmu_run(dir.file("b.json"));
  const std::string a = file_bytes(dir.file("a.json"));
  REQUIRE(json::parse(a)["traceEvents"].size() > 100);
  CHECK(a == file_bytes(dir.file("b.json")));
}

TEST_CASE("a trace without events is written and the user is told why it is empty", "[trace]") {
  TempDir dir;
  const auto r = run_cli(fmt::format("run {} --trace {} --trace-window 1s:2s",
                                     source_path("configs/scenarios/smmu-kunpeng920.json"), dir.file("t.json")));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("the trace holds no events"));
  const json trace = json::parse(file_bytes(dir.file("t.json")));
  CHECK(tracks_with_events(trace).empty());
  CHECK(metadata_names(trace, "thread_name").empty());
}
