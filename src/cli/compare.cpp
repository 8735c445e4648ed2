// compare: every variant with the same parameters and seed; sensitivity: each
// estimated platform parameter at the low and high end of its range.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>

#include "cli.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

struct CompareOptions {
  std::string scenario, json_out, report_dir, variants_csv, metric;
  std::vector<std::string> sets;
  std::optional<std::uint64_t> seed;
  bool quiet = false;
};

bool parse_compare_like(const std::vector<std::string>& args, CompareOptions& o, const char* usage,
                        const char* what, bool with_sensitivity_flag, bool* sensitivity) {
  po::options_description d(usage);
  d.add_options()("help,h", "this help")("set", po::value(&o.sets)->composing(), "override: KEY=VALUE (repeatable)")(
      "seed", po::value<std::uint64_t>(), "seed (default: the scenario's)")(
      "variants", po::value(&o.variants_csv), "comma-separated variants (default: all, baseline first)")(
      "json", po::value(&o.json_out), "write compare.json-style results to FILE")(
      "report", po::value(&o.report_dir), "write report.md, report.html and plots into DIR")(
      "quiet,q", po::bool_switch(&o.quiet), "print only the table")(
      "metric", po::value(&o.metric), "sensitivity: the metric of the per-parameter table (default: the first)");
  if (with_sensitivity_flag)
    d.add_options()("sensitivity", po::bool_switch(sensitivity),
                    "also re-run each estimated parameter at its bounds and state the range of each difference");
  auto vm = parse_command_line(args, d, o.scenario, what);
  if (!vm) return false;
  if (o.scenario.empty()) throw po::error("missing SCENARIO");
  if (vm->count("seed")) o.seed = (*vm)["seed"].as<std::uint64_t>();
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

std::vector<std::string> variants_to_run(const CompareOptions& o, const std::vector<scenario::Override>& ov) {
  auto s = scenario::load_scenario(o.scenario, "", ov);
  std::vector<std::string> vs = o.variants_csv.empty() ? s.variants : split_csv(o.variants_csv);
  if (vs.empty()) vs.push_back("");
  for (const auto& v : vs) scenario::load_scenario(o.scenario, v, ov);  // unknown names fail now
  return vs;
}

double pct(double v, double base) { return base == 0 ? 0 : 100.0 * (v - base) / base; }

void print_table(const std::vector<RunOutput>& runs) {
  std::vector<std::string> names;
  for (const auto& [k, v] : runs.front().results.metrics) names.push_back(k);
  std::size_t w = 6;
  for (const auto& n : names) w = std::max(w, n.size());
  std::cout << fmt::format("{:<{}}", "metric", w);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::cout << fmt::format("  {:>14}", runs[i].doc["variant"].get<std::string>());
    if (i > 0) std::cout << fmt::format("  {:>9}", "diff");
  }
  std::cout << "\n";
  for (const auto& n : names) {
    std::cout << fmt::format("{:<{}}", n, w);
    const double base = runs.front().results.get(n);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      double v = runs[i].results.has(n) ? runs[i].results.get(n) : NAN;
      std::cout << fmt::format("  {:>14.6g}", v);
      if (i > 0) std::cout << fmt::format("  {:>+8.2f}%", pct(v, base));
    }
    std::cout << "\n";
  }
}

int write_outputs(const CompareOptions& o, json doc) {
  if (!o.json_out.empty()) write_file_atomically(o.json_out, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (o.report_dir.empty()) return kOk;
  std::filesystem::create_directories(o.report_dir);
  const std::string cj = o.report_dir + "/compare.json";
  write_file_atomically(cj, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::string cmd = fmt::format("/usr/bin/python3 '{}/scripts/report.py' --from-json '{}' --out '{}'", source_dir(), cj,
                                o.report_dir);
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::cerr << "cohsim: the report script failed (" << cmd << ")\n";
    return kCheckFailed;
  }
  if (!o.quiet) std::cout << "report: " << o.report_dir << "/report.md and report.html\n";
  return kOk;
}

/// Runs each estimated parameter at its bounds, for each variant.
json sensitivity(const CompareOptions& o, const std::vector<std::string>& variants,
                 const std::vector<scenario::Override>& ov, const std::vector<RunOutput>& nominal, json& diff_range) {
  auto s = scenario::load_scenario(o.scenario, variants.front(), ov);
  scenario::Run probe(s, 1);
  std::vector<config::Provenance> estimates;
  for (const auto& p : probe.registry().provenance())
    if (p.estimate && !p.range_low.is_null()) estimates.push_back(p);
  json out = json::array();
  // The per-parameter table and tornado are for one metric (the workload's
  // first, or --metric); the range of the difference is given for every metric.
  const std::string primary = o.metric.empty() ? nominal.front().results.metrics.front().first : o.metric;
  if (!nominal.front().results.has(primary))
    throw config::ConfigError(o.scenario, "--metric", fmt::format("the scenario has no metric '{}'", primary));
  std::map<std::string, std::pair<double, double>> range;  // metric -> (min, max) of the difference
  const auto& base_metrics = nominal.front().results.metrics;
  auto diff_key = [&](const std::string& metric, const std::string& v) { return metric + " (" + v + " vs " + variants.front() + ")"; };
  for (std::size_t i = 1; i < nominal.size(); ++i)
    for (const auto& [m, v] : base_metrics) {
      double d = pct(nominal[i].results.get(m), v);
      range[diff_key(m, variants[i])] = {d, d};
    }
  std::size_t done = 0;
  for (const auto& e : estimates) {
    ++done;
    if (!o.quiet) std::cerr << fmt::format("\rsensitivity: {}/{} {}            ", done, estimates.size(), e.path);
    std::vector<std::vector<RunOutput>> at(2);
    const json bounds[2] = {e.range_low, e.range_high};
    for (int b = 0; b < 2; ++b) {
      auto ov2 = ov;
      ov2.push_back({e.path, bounds[b].is_string() ? bounds[b].get<std::string>() : bounds[b].dump()});
      for (const auto& v : variants) at[static_cast<std::size_t>(b)].push_back(run_scenario(o.scenario, v, ov2, o.seed, false));
    }
    for (std::size_t vi = 0; vi < variants.size(); ++vi)
      for (const auto& [m, nominal_value] : nominal[vi].results.metrics)
        if (m == primary)
          out.push_back({{"param", e.path}, {"low", bounds[0]}, {"high", bounds[1]}, {"metric", m}, {"variant", variants[vi]},
                       {"value_low", at[0][vi].results.get(m)}, {"value_high", at[1][vi].results.get(m)},
                       {"baseline_value", nominal_value}});
    for (std::size_t vi = 1; vi < variants.size(); ++vi)
      for (const auto& [m, v0] : base_metrics)
        for (int b = 0; b < 2; ++b) {
          double d = pct(at[static_cast<std::size_t>(b)][vi].results.get(m), at[static_cast<std::size_t>(b)][0].results.get(m));
          auto& r = range[diff_key(m, variants[vi])];
          r.first = std::min(r.first, d);
          r.second = std::max(r.second, d);
        }
  }
  if (!o.quiet) std::cerr << "\n";
  diff_range = json::object();
  for (const auto& [k, r] : range)
    if (r.first != 0 || r.second != 0) diff_range[k] = {{"low", r.first}, {"high", r.second}, {"unit", "%"}};
  return out;
}

int compare_impl(const CompareOptions& o, bool with_sensitivity) {
  auto ov = overrides_of(o.sets);
  auto variants = variants_to_run(o, ov);
  std::vector<RunOutput> runs;
  for (const auto& v : variants) {
    if (!o.quiet) std::cerr << "running variant " << (v.empty() ? "(default)" : v) << "...\n";
    runs.push_back(run_scenario(o.scenario, v, ov, o.seed, false));
  }
  print_table(runs);
  json doc = {{"scenario", o.scenario}, {"platform", runs.front().doc["platform"]},
              {"params", runs.front().doc["params"]}, {"baseline", runs.front().doc["variant"]}, {"runs", json::array()}};
  for (const auto& r : runs) doc["runs"].push_back(r.doc);
  if (with_sensitivity) {
    json range;
    doc["sensitivity"] = sensitivity(o, variants, ov, runs, range);
    doc["difference_range"] = range;
    if (!range.empty()) {
      std::cout << "\nrange of each difference over the estimated parameters' bounds (one at a time)\n";
      for (auto it = range.begin(); it != range.end(); ++it)
        std::cout << fmt::format("  {:<48} {:+.2f}% .. {:+.2f}%\n", it.key(), it.value()["low"].get<double>(),
                                 it.value()["high"].get<double>());
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
                          "each metric per variant and its difference to the baseline variant in percent.",
                          true, &sens))
    return kOk;
  return compare_impl(o, sens);
}

int cmd_sensitivity(const std::vector<std::string>& args) {
  CompareOptions o;
  if (!parse_compare_like(args, o, "cohsim sensitivity SCENARIO [options]",
                          "Re-runs the scenario with each \"estimate\" platform parameter at the low and the high end\n"
                          "of its declared range, one at a time, and reports how much each moves every metric and\n"
                          "the difference between variants.",
                          false, nullptr))
    return kOk;
  return compare_impl(o, true);
}

}  // namespace cohsim::cli
