// cohsim validate --report as its reader meets it: the parameters each row
// pins come from the platform file's own sources, report.md shows every row
// (ok, MISS, known miss, lower bound, derived, ERROR) within 80 columns with
// the reason of a known miss, and the report directory is written whole,
// self-contained, or refused before any row runs.
#include "src/cli/validate_report.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "src/cli/platform_pins.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using cli::CalibrationRow;
using cli::Verdict;

namespace {

/// A small platform file: one parameter fitted to two rows, one to a row no calibration file has,
/// one estimate, one datasheet number, and one in an array.
const char* kTinyPlatform = R"json({
  "name": "tiny",
  "fabric": {
    "hop": {"value": "5ns", "source": "calibration: t.c2c.near (together with t.c2c.far)"},
    "stale": {"value": "7ns", "source": "calibration: t.c2c.gone"},
    "guess": {"value": 3, "source": "estimate: a guess", "range": [1, 5]},
    "known": {"value": "1ns", "source": "datasheet: table 4"}
  },
  "links": [{"value": 2, "source": "calibration: t.c2c.far"}]
})json";

CalibrationRow row_of(const std::string& id, double measured, double tolerance_pct) {
  CalibrationRow r;
  r.id = id;
  r.scenario = "configs/scenarios/c2c-tiny.json";
  r.metric = "one_way_ns";
  r.unit = "ns";
  r.measured = measured;
  r.tolerance_pct = tolerance_pct;
  return r;
}

Verdict verdict_of(const std::string& status, double predicted, double measured, const std::string& note = "") {
  Verdict v;
  v.status = status;
  v.predicted = predicted;
  v.error_pct = std::isnan(predicted) ? NAN : 100.0 * (predicted - measured) / measured;
  v.note = note;
  return v;
}

/// Every line of `text` longer than `columns` characters (UTF-8 counted as characters).
std::vector<std::string> lines_wider_than(const std::string& text, std::size_t columns) {
  std::vector<std::string> wide;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto chars = std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xC0) != 0x80; });
    if (static_cast<std::size_t>(chars) > columns) wide.push_back(line);
  }
  return wide;
}

}  // namespace

TEST_CASE("the parameters a row pins are every sourced number whose calibration source names it",
          "[validate][report]") {
  TempDir dir;
  const auto params = cli::platform_parameters(dir.write("tiny.json", kTinyPlatform));
  std::map<std::string, cli::PlatformParameter> by_path;
  for (const auto& p : params) by_path[p.path] = p;
  REQUIRE(by_path.size() == 5);
  CHECK(by_path.at("platform.fabric.hop").rows == std::vector<std::string>{"t.c2c.near", "t.c2c.far"});
  CHECK(by_path.at("platform.fabric.hop").value == "5ns");
  CHECK_FALSE(by_path.at("platform.fabric.hop").estimate);
  CHECK(by_path.at("platform.links.0").rows == std::vector<std::string>{"t.c2c.far"});
  CHECK(by_path.at("platform.fabric.guess").estimate);
  CHECK(by_path.at("platform.fabric.guess").range == "1 .. 5");
  CHECK(by_path.at("platform.fabric.guess").rows.empty());
  CHECK_FALSE(by_path.at("platform.fabric.known").estimate);
  CHECK(by_path.at("platform.fabric.known").rows.empty());
}

TEST_CASE("report.md shows each row's numbers, status and pins by platform, within 80 columns", "[validate][report]") {
  TempDir dir;
  const std::string platform = dir.write("tiny.json", kTinyPlatform);
  std::vector<CalibrationRow> rows = {row_of("t.c2c.near", 34.5, 10), row_of("t.c2c.far", 80.5, 10),
                                      row_of("t.c2c.known", 50, 10),  row_of("t.c2c.bound", 30, 0),
                                      row_of("t.c2c.delta", 46, 25),  row_of("t.c2c.broken", 20, 10)};
  rows[3].at_least = true;
  rows[4].op = '-';
  rows[4].part_a = "t.c2c.far";
  rows[4].part_b = "t.c2c.near";
  cli::ValidationReport report;
  report.rows = {{&rows[0], verdict_of("ok", 34.12, 34.5), platform},
                 {&rows[1], verdict_of("MISS", 95.0, 80.5, "if the model cannot fit it yet, list it"), platform},
                 {&rows[2], verdict_of("known miss", 95.0, 50, "the queue storm is not modelled yet"), platform},
                 {&rows[3], verdict_of("ok", 34.12, 30), platform},
                 {&rows[4], verdict_of("ok", 60.88, 46), platform},
                 {&rows[5], verdict_of("ERROR", NAN, 20, "the run has no metric 'one_way_ns'"), ""}};
  report.rows[4].verdict.kind = "identity";
  for (const auto& r : rows) report.calibration_rows.push_back(r.id);
  report.calibration_file = "cal.json";
  report.summary = "validate: 3 ok, 1 known misses, 1 missed, 0 moved, 0 now fit, 1 errors";
  report.exit_code = 1;
  const std::string md = cli::validation_report_markdown(report);
  INFO(md);
  CHECK(lines_wider_than(md, 80).empty());
  CHECK_THAT(md, Catch::Contains(report.summary) && Catch::Contains("Exit status 1."));
  CHECK_THAT(md, Catch::Contains("## tiny (") && Catch::Contains("## rows whose scenario cannot be loaded: 1 ERROR"));
  CHECK_THAT(md, Catch::Contains(" 1 t.c2c.near    34.5 ns  34.12 ns    -1.1%    10% ok\n") &&
                     Catch::Contains("t.c2c.far     80.5 ns     95 ns   +18.0%    10% MISS\n") &&
                     Catch::Contains("t.c2c.known     50 ns     95 ns   +90.0%    10% known miss\n") &&
                     Catch::Contains("t.c2c.bound     30 ns  34.12 ns   +13.7% >=meas ok\n") &&
                     Catch::Contains("t.c2c.delta     46 ns  60.88 ns   +32.3%    25% ok\n") &&
                     Catch::Contains(" 6 t.c2c.broken     20 ns         -        -    10% ERROR\n"));
  CHECK_THAT(md, Catch::Contains("why it misses: the queue storm is not modelled yet") &&
                     Catch::Contains("derived: t.c2c.far - t.c2c.near") &&
                     Catch::Contains("run: configs/scenarios/c2c-tiny.json; metric one_way_ns"));
  CHECK_THAT(md, Catch::Contains("- #1 t.c2c.near: ok\n  run: configs/scenarios/c2c-tiny.json; metric one_way_ns\n"
                                 "  pins platform.fabric.hop = 5ns\n") &&
                     Catch::Contains("  pins platform.fabric.hop = 5ns\n       platform.links.0 = 2\n") &&
                     Catch::Contains("- #3 t.c2c.known: known miss\n  run: configs/scenarios/c2c-tiny.json; metric "
                                     "one_way_ns\n  pins nothing: a prediction\n") &&
                     Catch::Contains("  pins nothing, but the fitted rows fix it between them: an identity\n"));
  CHECK_THAT(md, Catch::Contains("no row of cal.json pins (1):\n\n- platform.fabric.guess = 3 (range 1 .. 5)\n") &&
                     Catch::Contains("- platform.fabric.stale = 7ns names t.c2c.gone"));
}

TEST_CASE("quantities in the report have 4 significant digits, a thousands prefix and their unit",
          "[validate][report]") {
  CHECK(cli::format_quantity(95.123, "ns") == "95.12 ns");
  CHECK(cli::format_quantity(345600, "1/s") == "345.6k/s");
  CHECK(cli::format_quantity(2.5e6, "1/s") == "2.5M/s");
  CHECK(cli::format_quantity(34, "%") == "34%");
  CHECK(cli::format_quantity(0.8512, "ratio") == "0.8512x");
  CHECK(cli::format_quantity(NAN, "ns") == "-");
}

TEST_CASE("validate --report writes report.md and a self-contained report.html and keeps the exit code",
          "[validate][report]") {
  TempDir dir;
  json cal = json::object();
  cal["rows"] = json::array({c2c_row("t.c2c.ok", 34.5), c2c_row("t.c2c.miss", 20.0), c2c_row("t.c2c.known", 60.0)});
  cal["rows"].push_back(
      {{"id", "t.c2c.ratio"}, {"derived", "t.c2c.ok / t.c2c.miss"}, {"measured", 1.0}, {"tolerance_pct", 1}});
  json bound = c2c_row("t.c2c.bound", 30.0);
  bound["bound"] = "at_least";
  bound["tolerance_pct"] = 0;
  cal["rows"].push_back(bound);
  const std::string cal_file = dir.write("calibration.json", cal.dump());
  dir.write("known-misses.json", json{{"rows", {{"t.c2c.known", "the test says so"}}}}.dump());
  const std::string out = dir.file("report");
  const CliResult plain = run_cli("validate --calibration " + quoted(cal_file));
  const CliResult r = run_cli("validate --calibration " + quoted(cal_file) + " --report " + quoted(out + "/a/b"));
  INFO(r.output);
  CHECK(plain.exit_code == 1);  // t.c2c.miss
  CHECK(r.exit_code == plain.exit_code);
  const std::string md = read_all(out + "/a/b/report.md");
  CHECK_THAT(md, Catch::Contains("validate: 3 ok, 1 known misses, 1 missed") &&
                     Catch::Contains("t.c2c.known: known miss") && Catch::Contains("\n 3 t.c2c.known ") &&
                     Catch::Contains("the test says so") && Catch::Contains(">=meas ok") &&
                     Catch::Contains("derived: t.c2c.ok / t.c2c.miss") && Catch::Contains("## kunpeng920 (") &&
                     Catch::Contains("platforms/kunpeng920.json): 3 ok, 1 known miss, 1 MISS"));
  const std::string page = read_all(out + "/a/b/report.html");
  CHECK_THAT(page, Catch::Contains("t.c2c.known") && Catch::Contains("data:image/png;base64,"));
  // Self-contained: every src and href is inline data; nothing from the network.
  int references = 0;
  for (const std::string attribute : {"src=\"", "href=\""})
    for (auto at = page.find(attribute); at != std::string::npos; at = page.find(attribute, at + 1)) {
      CHECK(page.compare(at + attribute.size(), 5, "data:") == 0);
      ++references;
    }
  CHECK(references == 2);  // the parity plot and the error chart
  CHECK(page.find("http") == std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(out + "/a/b"))
    CHECK(entry.path().filename().string().rfind(".report.tmp", 0) == std::string::npos);
}

TEST_CASE("a --report DIR that is a file, or lies under one, is bad input before any row runs", "[validate][report]") {
  TempDir dir;
  const std::string file = dir.write("taken", "keep me");
  const CliResult r = run_cli("validate --only kp920.c2c --report " + quoted(file));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("not a directory") && !Catch::Contains("kp920.c2c.same-cluster"));
  CHECK(read_all(file) == "keep me");
  const CliResult under = run_cli("validate --only kp920.c2c --report " + quoted(file + "/report"));
  INFO(under.output);
  CHECK(under.exit_code == 2);
  CHECK_THAT(under.output, Catch::Contains("cannot create the report directory"));
}
