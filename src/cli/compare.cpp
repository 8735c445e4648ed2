// compare: every variant with the same parameters and seed; sensitivity: every
// uncertain input at the two ends of its range (sensitivity.cpp).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <fmt/format.h>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli.hpp"
#include "cohsim/sim/time.hpp"
#include "provenance.hpp"
#include "report_output.hpp"
#include "point_store.hpp"
#include "sensitivity.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

struct CompareOptions {
  std::string scenario, json_out, report_dir, variants_csv, metric, calibration, ranges_from, platform_file,
      platforms_csv, points_dir, joblist;
  std::vector<std::string> sets, screen_sets;
  std::optional<std::uint64_t> seed;
  int full_runs = 5;
  int seeds = 1;
  bool quiet = false, verbose = false, override_variant = false;
  bool no_sensitivity = false;  ///< compare --no-sensitivity: no quick ranges either
};

/// Inputs the quick screen of compare's default ranges re-runs at full length.
constexpr int kQuickFullRuns = 3;

bool parse_compare_like(const std::vector<std::string>& args, CompareOptions& o, const char* usage,
                        const char* what, bool with_sensitivity_flag, bool* sensitivity) {
  po::options_description d(usage);
  d.add_options()("help,h", "this help")("set", po::value(&o.sets)->composing(), "override: KEY=VALUE (repeatable)")(
      "seed", po::value<Unsigned64>(), "seed (default: the scenario's)")(
      "variants", po::value(&o.variants_csv), "comma-separated variants (default: all, baseline first)")(
      "seeds", whole(&o.seeds),
      "run each variant with N seeds (the seed, seed+1, ...): the table shows medians, the report min..max")(
      "json", po::value(&o.json_out), "write compare.json-style results to FILE")(
      "report", po::value(&o.report_dir), "write report.md, report.html and plots into DIR")(
      "quiet,q", po::bool_switch(&o.quiet), "print only the results (the table) and errors: no progress")(
      "verbose,v", po::bool_switch(&o.verbose), "debug logging")(
      "platform", po::value(&o.platform_file), "run on this platform file instead of the scenario's")(
      "platforms", po::value(&o.platforms_csv),
      "A.json,B.json,...: run the variants on each platform, side by side (columns VARIANT@STEM; the first "
      "platform's baseline is the baseline)")(
      "override-variant", po::bool_switch(&o.override_variant), "allow a --set of a key some variant sets")(
      "metric", po::value(&o.metric), "sensitivity: the metric of the per-input table (default: the first)")(
      "screen-set", po::value(&o.screen_sets)->composing(),
      "sensitivity: screen every input with short runs (KEY=VALUE, repeatable, e.g. duration=5ms) and run only "
      "the --full-runs inputs that move the result most at full length")(
      "full-runs", whole(&o.full_runs), "sensitivity with --screen-set: inputs re-run at full length (default 5)")(
      "calibration", po::value(&o.calibration), "sensitivity: calibration rows (default: data/calibration.json)")(
      "ranges", po::value(&o.ranges_from),
      "sensitivity: reuse the calibrated ranges of an earlier --json output (same platform, value and overrides)")(
      "points", po::value(&o.points_dir),
      "sensitivity: read each input's runs from DIR when they are there (made by this build from the same input "
      "files), and keep the runs made here in it")(
      "emit-joblist", po::value(&o.joblist),
      "sensitivity with --points DIR: write the runs not in DIR as job lines to FILE (one `cohsim run` each, for "
      "GNU parallel or a cluster) instead of running them; the nominal runs and the calibrated-range search run "
      "here. Then the same command with --points DIR collects");
  if (with_sensitivity_flag)
    d.add_options()("sensitivity", po::bool_switch(sensitivity),
                    "the full study: every uncertain input at its range ends at full length (calibrated ranges "
                    "searched), and the range of each difference. Without it compare gives the quick ranges: "
                    "every input screened with the scenario's \"screen\" short runs, the 3 that move most at "
                    "full length, calibrated ranges from data/calibrated-ranges.json")(
                    "no-sensitivity", po::bool_switch(&o.no_sensitivity),
                    "no ranges at all: only the variants' runs");
  auto vm = parse_command_line(args, d, o.scenario, what);
  if (!vm) return false;
  if (o.scenario.empty()) throw po::error("missing SCENARIO");
  apply_verbosity(o.quiet, o.verbose);
  if (vm->count("seed")) o.seed = (*vm)["seed"].as<Unsigned64>().value;
  return true;
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<scenario::Override> overrides_of(const std::vector<std::string>& sets) {
  std::vector<scenario::Override> out;
  for (const auto& s : sets) out.push_back(scenario::parse_override(s));
  return out;
}

std::vector<std::string> variants_to_run(const CompareOptions& o, const std::vector<scenario::Override>& ov,
                                         const std::string& platform_file) {
  auto s = scenario::load_scenario(o.scenario, "", ov, platform_file);
  std::vector<std::string> vs = o.variants_csv.empty() ? s.variants : split_csv(o.variants_csv);
  if (vs.empty()) vs.push_back("");
  for (const auto& v : vs) scenario::load_scenario(o.scenario, v, ov, platform_file);  // unknown names fail now
  check_sets_keep_variants(s, vs, ov, o.override_variant);
  return vs;
}

/// One variant's runs over seeds as one: each metric's median (a metric some
/// seed lacks is left out), every seed's correctness failures.
RunOutput median_over_seeds(const std::vector<RunOutput>& seeds) {
  RunOutput out = seeds.front();
  if (seeds.size() == 1) return out;
  out.results.metrics.clear();
  out.results.failures.clear();
  for (const auto& [name, first] : seeds.front().results.metrics) {
    std::vector<double> values;
    for (const auto& s : seeds)
      if (s.results.has(name)) values.push_back(s.results.get(name));
    if (values.size() != seeds.size()) continue;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    out.results.add(name, n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2);
  }
  for (const auto& s : seeds)
    for (const auto& f : s.results.failures)
      out.results.failures.push_back(fmt::format("seed {}: {}", s.doc["seed"].get<std::uint64_t>(), f));
  return out;
}

void print_table(const std::vector<RunOutput>& runs) {
  std::vector<std::string> names;
  for (const auto& [k, v] : runs.front().results.metrics) names.push_back(k);
  std::size_t w = 6;
  for (const auto& n : names) w = std::max(w, n.size());
  std::cout << fmt::format("{:<{}}", "metric", w);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string label = runs[i].doc["label"].get<std::string>();
    std::cout << fmt::format("  {:>14}", label.empty() ? "value" : label);
    if (i > 0) std::cout << fmt::format("  {:>9}", "diff");
  }
  std::cout << "\n";
  // Correctness beside cost: a variant whose run detected failures (a lost
  // IPI, a stale command) says so in its first row, and its numbers, which
  // cover only the operations that completed, carry a '*'.
  auto failed = [&](std::size_t i) { return !runs[i].results.failures.empty(); };
  bool any_failed = false;
  for (std::size_t i = 0; i < runs.size(); ++i) any_failed = any_failed || failed(i);
  if (any_failed) {
    std::cout << fmt::format("{:<{}}", "correct", w);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const std::size_t n = runs[i].results.failures.size();
      std::cout << fmt::format("  {:>14}", n == 0 ? std::string("yes") : fmt::format("NO: {} failed", n));
      if (i > 0) std::cout << fmt::format("  {:>9}", "");
    }
    std::cout << "\n";
  }
  for (const auto& n : names) {
    std::cout << fmt::format("{:<{}}", n, w);
    const double base = runs.front().results.get(n);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const bool has = runs[i].results.has(n);
      double v = has ? runs[i].results.get(n) : NAN;
      if (!has && failed(i)) std::cout << fmt::format("  {:>14}", "none completed");
      else if (failed(i)) std::cout << fmt::format("  {:>13.6g}*", v);
      else std::cout << fmt::format("  {:>14.6g}", v);
      if (i > 0) {
        auto p = pct(v, base);
        std::cout << (p ? fmt::format("  {:>+8.2f}%", *p) : fmt::format("  {:>9}", "n/a"));
      }
    }
    std::cout << "\n";
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!failed(i)) continue;
    const auto& f = runs[i].results.failures;
    std::cout << fmt::format("* {}: {} correctness failure(s); its figures cover the completed operations only\n",
                             runs[i].doc["label"].get<std::string>(), f.size());
    constexpr std::size_t kShown = 5;
    for (std::size_t k = 0; k < std::min(f.size(), kShown); ++k) std::cout << "    " << f[k] << "\n";
    if (f.size() > kShown) std::cout << fmt::format("    ... and {} more (all in --json)\n", f.size() - kShown);
  }
}

int write_outputs(const CompareOptions& o, json doc) {
  add_provenance(doc);
  if (!o.json_out.empty()) write_file_atomically(o.json_out, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (o.report_dir.empty()) return kOk;
  ReportStaging report(o.report_dir);
  const std::string cj = report.path("compare.json");
  write_file_atomically(cj, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!run_report_script({"--quiet", "--from-json", cj, "--out", report.staging_dir()})) return kCheckFailed;
  report.commit();
  if (!o.quiet) std::cout << "report: " << o.report_dir << "/report.md and report.html\n";
  return kOk;
}

/// Whether setting `a` is at most setting `b` (two numbers, or two times); false when they do not compare.
bool at_most(const std::string& a, const std::string& b) {
  const json x = config::parse_set_value(a), y = config::parse_set_value(b);
  if (x.is_number() && y.is_number()) return x.get<double>() <= y.get<double>();
  if (x.is_string() && y.is_string()) {
    const auto tx = sim::parse_time(x.get<std::string>()), ty = sim::parse_time(y.get<std::string>());
    return tx && ty && *tx <= *ty;
  }
  return false;
}

int compare_impl(const CompareOptions& o, bool with_sensitivity) {
  if (o.full_runs < 0) throw config::ConfigError("--full-runs", std::to_string(o.full_runs), "must be 0 or more");
  if (!with_sensitivity && (!o.screen_sets.empty() || !o.ranges_from.empty() || !o.calibration.empty()))
    throw config::ConfigError("compare", "--screen-set/--ranges/--calibration", "these belong to --sensitivity");
  if (with_sensitivity && !o.platform_file.empty())
    throw config::ConfigError("--platform", o.platform_file,
                              "not combined with sensitivity: name the platform in a copy of the scenario");
  if (o.seeds < 1) throw config::ConfigError("--seeds", std::to_string(o.seeds), "must be at least 1");
  if (!with_sensitivity && (!o.points_dir.empty() || !o.joblist.empty()))
    throw config::ConfigError("compare", "--points/--emit-joblist", "these belong to --sensitivity");
  if (with_sensitivity && o.no_sensitivity)
    throw config::ConfigError("compare", "--no-sensitivity", "not combined with --sensitivity: give one");
  if (!o.joblist.empty()) {
    if (o.points_dir.empty())
      throw config::ConfigError("--emit-joblist", o.joblist, "needs --points DIR: the folder the jobs write their runs to");
    if (!o.screen_sets.empty())
      throw config::ConfigError("--emit-joblist", o.joblist,
                                "not combined with --screen-set (which inputs run at full length depends on the "
                                "screen's results): emit the study without screening");
    if (!o.json_out.empty() || !o.report_dir.empty())
      throw config::ConfigError("--emit-joblist", o.joblist,
                                "writes no results: give --json/--report to the collecting command (--points alone)");
  }
  if (with_sensitivity && o.seeds > 1)
    throw config::ConfigError("--seeds", std::to_string(o.seeds), "not combined with sensitivity (one seed)");
  check_report_dir(o.report_dir);  // (--json is checked once the inputs are read, below)
  const std::vector<std::string> platforms =
      o.platforms_csv.empty() ? std::vector<std::string>{o.platform_file} : split_csv(o.platforms_csv);
  if (!o.platforms_csv.empty()) {
    if (!o.platform_file.empty() || with_sensitivity)
      throw config::ConfigError("--platforms", o.platforms_csv, "not combined with --platform or sensitivity");
    std::set<std::string> stems;
    for (const auto& p : platforms)
      if (!stems.insert(std::filesystem::path(p).stem().string()).second)
        throw config::ConfigError("--platforms", o.platforms_csv,
                                  fmt::format("two files named {}: the columns would not tell them apart", p));
    if (platforms.size() < 2) throw config::ConfigError("--platforms", o.platforms_csv, "name two or more files");
    for (const auto& p : platforms) {  // every file loads before any run
      if (!std::filesystem::exists(p))
        throw config::ConfigError("--platforms", o.platforms_csv, fmt::format("the platform file {} does not exist", p));
      scenario::load_platform(p);
    }
  }
  auto ov = overrides_of(o.sets);
  const auto base = scenario::load_scenario(o.scenario, "", ov, platforms.front());
  check_output_file("--json", o.json_out, files_read());  // none of the files read so far, before the runs
  const std::uint64_t first_seed = o.seed.value_or(base.seed);
  std::vector<std::string> variants;
  std::vector<RunOutput> runs, every_run;  // runs: one per variant and platform (the median over seeds)
  for (const auto& platform : platforms) {
    variants = variants_to_run(o, ov, platform);
    for (const auto& v : variants) {
      // A column's name: the variant, and with --platforms the platform file's stem.
      const std::string stem = std::filesystem::path(platform).stem().string();
      const std::string label = o.platforms_csv.empty() ? v : v.empty() ? stem : v + "@" + stem;
      std::vector<RunOutput> seeds;
      for (int k = 0; k < o.seeds; ++k) {
        if (!o.quiet)
          std::cerr << "running " << (label.empty() ? "(default)" : label)
                    << (o.seeds > 1 ? fmt::format(", seed {}", first_seed + static_cast<std::uint64_t>(k)) : "")
                    << "...\n";
        seeds.push_back(run_scenario(o.scenario, v, ov, first_seed + static_cast<std::uint64_t>(k), !o.quiet,
                                     nullptr, platform));
        seeds.back().doc["label"] = label;
      }
      every_run.insert(every_run.end(), seeds.begin(), seeds.end());
      runs.push_back(median_over_seeds(seeds));
    }
  }
  if (o.seeds > 1) {
    // Seeds that change nothing are no spread: say so instead of a median of equal values.
    bool identical = true;
    for (const auto& r : every_run)
      for (const auto& other : every_run)
        if (other.doc["label"] == r.doc["label"] && other.results.metrics != r.results.metrics) identical = false;
    if (identical)
      std::cout << fmt::format("the {} seeds ({}..{}) gave identical results: deterministic, nothing in this run "
                               "draws from a random source, so there is no seed spread\n",
                               o.seeds, first_seed, first_seed + static_cast<std::uint64_t>(o.seeds) - 1);
    else
      std::cout << fmt::format("medians over {} seeds ({}..{})\n", o.seeds, first_seed,
                               first_seed + static_cast<std::uint64_t>(o.seeds) - 1);
  }
  print_table(runs);
  json doc = {{"scenario", o.scenario}, {"platform", runs.front().doc["platform"]},
              {"platform_file", runs.front().doc["platform_file"]}, {"workload", runs.front().doc["workload"]},
              {"headline", runs.front().doc["headline"]}, {"overrides", runs.front().doc["overrides"]},
              {"params", runs.front().doc["params"]}, {"baseline", runs.front().doc["label"]}, {"runs", json::array()}};
  for (const auto& r : every_run) doc["runs"].push_back(r.doc);
  // Every value some variant's run did not read on this platform: path -> the variants.
  json unused = json::object();
  for (const auto& r : every_run)
    if (r.doc.contains("unused_params"))
      for (auto it = r.doc["unused_params"].begin(); it != r.doc["unused_params"].end(); ++it) {
        json& list = unused[it.key()];
        const json label = r.doc.value("label", json(""));
        if (std::find(list.begin(), list.end(), label) == list.end()) list.push_back(label);
      }
  doc["unused_params"] = unused;
  // Without --sensitivity, the quick ranges where they can be had; else why there are none.
  bool quick = false;
  std::vector<scenario::Override> quick_screen;
  if (!with_sensitivity && !o.no_sensitivity && variants.size() > 1) {
    // The screen's settings, but for those the user's --set makes no longer than the screen's: a run set
    // that short by hand is its own screen.
    for (const auto& x : base.screen)
      if (std::none_of(ov.begin(), ov.end(), [&](const auto& u) { return u.key == x.key && at_most(u.value, x.value); }))
        quick_screen.push_back(x);
    std::string why;
    if (!o.platforms_csv.empty() || !o.platform_file.empty())
      why = "not with --platform/--platforms (name the platform in a copy of the scenario)";
    else if (o.seeds > 1)
      why = "not with --seeds (the seed spread is shown instead)";
    else if (base.screen.empty())
      why = fmt::format("{} declares no \"screen\" (the settings of a short run): give --sensitivity for the full "
                        "study", o.scenario);
    quick = why.empty();
    if (!quick) {
      doc["sensitivity_mode"] = {{"mode", "none"}, {"why", why}};
      if (!o.quiet) std::cerr << "compare: no ranges of the differences: " << why << "\n";
    } else {
      std::string screen;
      for (const auto& x : quick_screen) screen += (screen.empty() ? "" : " ") + x.key + "=" + x.value;
      doc["sensitivity_mode"] = {
          {"mode", "quick"},
          {"what", fmt::format("quick ranges: {}, calibrated inputs over the ranges stored in "
                               "data/calibrated-ranges.json; --sensitivity for the full study",
                               screen.empty() ? "every input at the run's length (its --set is no longer than the "
                                                "scenario's screen)"
                                              : fmt::format("every input screened with the scenario's short runs "
                                                            "({}), the {} that move the result most at full length",
                                                            screen, kQuickFullRuns))}};
    }
  } else if (with_sensitivity) {
    doc["sensitivity_mode"] = {{"mode", "full"}};
  } else if (o.no_sensitivity) {
    doc["sensitivity_mode"] = {{"mode", "none"}, {"why", "--no-sensitivity"}};
  } else {
    const std::string why = o.platforms_csv.empty()
                                ? "one variant, no difference to give a range of: `cohsim sensitivity` gives the "
                                  "ranges of its metrics"
                                : "not with --platforms (name the platform in a copy of the scenario)";
    doc["sensitivity_mode"] = {{"mode", "none"}, {"why", why}};
    if (!o.quiet) std::cerr << "compare: " << why << "\n";
  }
  if (with_sensitivity || quick) {
    // Named relative to the working directory when it is inside it, as the other inputs are.
    std::string stored_ranges = source_dir() + "/data/calibrated-ranges.json";
    std::error_code ec;
    if (const auto rel = std::filesystem::proximate(stored_ranges, ec); !ec && !rel.empty() && *rel.begin() != "..")
      stored_ranges = rel.string();
    SensitivityOptions so{.scenario = o.scenario, .variants = variants, .overrides = ov, .seed = o.seed,
                          .metric = o.metric, .screen_sets = overrides_of(o.screen_sets), .full_runs = o.full_runs,
                          .calibration_file = o.calibration.empty() ? source_dir() + "/data/calibration.json" : o.calibration,
                          .ranges_from = o.ranges_from, .quiet = o.quiet};
    if (quick) {
      so.screen_sets = quick_screen;
      so.full_runs = kQuickFullRuns;
      so.ranges_from = std::filesystem::exists(stored_ranges) ? stored_ranges : "";
      so.search_ranges = false;
      if (!o.quiet) std::cerr << "compare: " << doc["sensitivity_mode"]["what"].get<std::string>() << "\n";
    }
    std::optional<PointStore> points;
    if (!o.points_dir.empty()) so.points = &points.emplace(o.points_dir, o.joblist);
    int failed = 0;
    if (!quick) {
      failed = run_sensitivity(so, runs, doc);
    } else {
      // The quick ranges are an addition to the variants' runs: when their short runs cannot run at all
      // (a screen value this configuration refuses), the comparison still stands, without ranges.
      json with_ranges = doc;
      try {
        failed = run_sensitivity(so, runs, with_ranges);
        doc = std::move(with_ranges);
      } catch (const std::exception& e) {
        doc["sensitivity_mode"] = {{"mode", "none"}, {"why", fmt::format("the quick ranges' runs failed: {}", e.what())}};
        std::cerr << "compare: no ranges of the differences: the quick ranges' runs failed: " << e.what() << "\n";
      }
    }
    if (points && points->emitting()) return kOk;
    if (failed > 0) {
      const int rc = write_outputs(o, doc);
      std::cerr << fmt::format("cohsim: the runs of {} input(s) failed (FAILED in the table)\n", failed);
      return rc == kOk ? kCheckFailed : rc;
    }
  }
  return write_outputs(o, doc);
}

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  CompareOptions o;
  bool sens = false;
  if (!parse_compare_like(args, o, "cohsim compare SCENARIO [options]",
                          "Runs every variant of a scenario with the same parameters and seed and prints one table:\n"
                          "each metric per variant and its difference to the baseline variant in percent; then the\n"
                          "range of each difference over the uncertain inputs (the quick ranges: see --sensitivity;\n"
                          "none with --no-sensitivity).",
                          true, &sens))
    return kOk;
  return compare_impl(o, sens);
}

int cmd_sensitivity(const std::vector<std::string>& args) {
  CompareOptions o;
  if (!parse_compare_like(args, o, "cohsim sensitivity SCENARIO [options]",
                          "Re-runs the scenario with every uncertain input at the low and the high end of its range,\n"
                          "one at a time, and reports how much each moves the metric and the difference between\n"
                          "variants. Inputs: platform estimates (their declared \"range\"), workload estimates (the\n"
                          "range their declaration gives) and calibrated platform numbers: for each, the values at\n"
                          "which the calibration rows its source names reach their tolerance ends, found by stepping\n"
                          "out from the nominal value (5%, 10%, 20%, ...) and bisection to 1%, other inputs at nominal,\n"
                          "within the declared min/max (rows run as in cohsim validate). With --screen-set every input\n"
                          "runs short first and the --full-runs that move the result most run at full length.",
                          false, nullptr))
    return kOk;
  return compare_impl(o, true);
}

}  // namespace cohsim::cli
