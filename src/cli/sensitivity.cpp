// Sensitivity over every uncertain input of a scenario (see sensitivity.hpp).
#include "sensitivity.hpp"
#include "point_store.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <unistd.h>

#include "cohsim/config/sha256.hpp"

namespace cohsim::cli {

using nlohmann::json;

std::optional<double> pct(double value, double base) {
  if (base == 0) return std::nullopt;
  return 100.0 * (value - base) / base;
}

json pct_json(std::optional<double> p) { return p ? json(*p) : json(nullptr); }

const char* input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::estimate: return "estimate";
    case InputKind::calibrated: return "calibrated";
    case InputKind::workload_estimate: return "workload estimate";
    case InputKind::structural: return "structural";
  }
  return "?";
}

namespace {

/// Progress is a line on a terminal, rewritten in place; none when quiet or when stderr is a file or a pipe.
bool shows_progress(const SensitivityOptions& o) {
  static const bool tty = ::isatty(STDERR_FILENO) != 0;
  return !o.quiet && tty;
}
void progress(const SensitivityOptions& o, const std::string& text) {
  if (shows_progress(o)) std::cerr << "\r" << text << "            ";
}
void progress_end(const SensitivityOptions& o) {
  if (shows_progress(o)) std::cerr << "\n";
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// One input the study varies and the values it runs at: a number's two range ends, or one alternative mechanism.
struct Input {
  std::string path;
  InputKind kind = InputKind::estimate;
  std::vector<json> values;  ///< config notation: {low, high}, or {alternative}
  bool structural() const { return kind == InputKind::structural; }
  /// As the tables show it: "low .. high", or "= alternative".
  std::string range_text() const {
    return structural() ? "= " + text_of(values.front()) : text_of(values.front()) + " .. " + text_of(values.back());
  }
  /// Its values' keys in JSON: {"low", "high"} or {"alternative"}.
  json fields() const {
    return structural() ? json{{"alternative", values.front()}} : json{{"low", values.front()}, {"high", values.back()}};
  }
};

/// The runs of one input: per value, one run per variant.
struct Outcome {
  std::vector<std::vector<RunOutput>> at;
  bool full = false;   ///< at the scenario's full length (else screened with short runs)
  double score = 0;    ///< the largest change of the primary metric or its difference, in %
  std::optional<double> screen_score;  ///< the score in the screening runs
  std::string error;   ///< the first line of a run's error (the watchdog, a bad value); then no results
};

std::string set_text(const std::vector<scenario::Override>& ov) {
  std::string out;
  for (const auto& o : ov) out += (out.empty() ? "" : " ") + o.key + "=" + o.value;
  return out;
}

std::string pct_text(std::optional<double> p) {
  if (!p) return "n/a";
  return fmt::format("{:+.2f}%", std::fabs(*p) < 0.005 ? 0.0 : *p);  // no "-0.00%"
}

/// A platform file as a stored range names it: relative to the source tree when it is in it (so that a range
/// stored in data/calibrated-ranges.json holds in any clone), else its canonical path.
std::string platform_key(const std::string& file) {
  const std::string c = canonical(file), src = canonical(source_dir()) + "/";
  return c.rfind(src, 0) == 0 ? c.substr(src.size()) : c;
}

/// What a calibrated range was searched on, as SHA-256: the platform document (includes resolved), and the
/// calibration rows with the model's predictions of them as of its last intended change (validate-expected.json
/// beside the calibration file, rewritten by `cohsim validate --write-expected` whenever a model change moves a
/// row), hashed together. The same for every range of one study: computed once.
struct SearchedOn {
  std::string platform_sha256, calibration_sha256;
  SearchedOn(const std::string& platform_file, const std::string& calibration_file) {
    platform_sha256 = config::sha256_hex(scenario::load_platform(platform_file).doc.dump());
    const auto expected = std::filesystem::path(calibration_file).parent_path() / "validate-expected.json";
    const std::string none = config::sha256_hex("");  // an unreadable file hashes as an empty one
    calibration_sha256 = config::sha256_hex(
        config::file_sha256_hex(calibration_file).value_or(none) +
        (std::filesystem::exists(expected) ? config::file_sha256_hex(expected.string()).value_or(none) : ""));
  }
};

json range_json(const CalibratedRange& r, const std::vector<scenario::Override>& platform_overrides,
                const SearchedOn& on) {
  return {{"platform", platform_key(r.platform)}, {"param", r.param}, {"nominal", r.nominal}, {"rows", r.rows},
          {"low", r.low}, {"high", r.high}, {"low_outside", r.low_outside}, {"high_outside", r.high_outside},
          {"runs", r.runs}, {"note", r.note}, {"platform_overrides", set_text(platform_overrides)},
          {"platform_sha256", on.platform_sha256}, {"calibration_sha256", on.calibration_sha256}};
}

/// A range from an earlier output (--ranges) for the same platform, parameter, nominal value and overrides,
/// searched on the same platform document and calibration rows.
std::optional<json> reusable_range(const json& earlier, const json& wanted) {
  for (const auto& e : earlier)
    if (e.is_object() && e.value("platform", "") == wanted["platform"] && e.value("param", "") == wanted["param"] &&
        e.value("nominal", "") == wanted["nominal"] && e.value("platform_overrides", "") == wanted["platform_overrides"] &&
        e.value("platform_sha256", "") == wanted["platform_sha256"] &&
        e.value("calibration_sha256", "") == wanted["calibration_sha256"])
      return e;
  return std::nullopt;
}

/// The values that have no effect in any of the study's variants (a variant may set what makes one count,
/// e.g. a coarse directory), with the first variant's reason. `probe` is the first variant's run.
std::map<std::string, std::string> unused_in_every_variant(const SensitivityOptions& o, scenario::Run& probe) {
  std::map<std::string, std::string> unused;
  for (const auto& p : probe.registry().provenance())
    if (!p.unused_because.empty()) unused.emplace(p.path, p.unused_because);
  for (std::size_t vi = 1; vi < o.variants.size() && !unused.empty(); ++vi) {
    const auto loaded = scenario::load_scenario(o.scenario, o.variants[vi], o.overrides);
    scenario::Run other(loaded, 1);  // (keeps a reference to `loaded`)
    std::set<std::string> here;
    for (const auto& p : other.registry().provenance())
      if (!p.unused_because.empty()) here.insert(p.path);
    std::erase_if(unused, [&](const auto& u) { return here.count(u.first) == 0; });
  }
  return unused;
}

/// The study's uncertain inputs; fills `ranges` with every calibrated parameter's search result and
/// `not_varied` with the uncertain values that have no effect in any variant.
std::vector<Input> uncertain_inputs(const SensitivityOptions& o, scenario::Run& probe, const std::string& platform_file,
                                    json& ranges, json& not_varied) {
  const auto unused = unused_in_every_variant(o, probe);
  std::vector<scenario::Override> platform_ov;
  for (const auto& ov : o.overrides)
    if (ov.key.rfind("platform.", 0) == 0) platform_ov.push_back(ov);
  json earlier = json::array();
  if (!o.ranges_from.empty())
    earlier = config::load_json_file(o.ranges_from).value("calibrated_ranges", json::object()).value("ranges", json::array());
  const RangeSearchOptions search{o.calibration_file, platform_ov};
  std::vector<Input> inputs;
  const auto& prov = probe.registry().provenance();
  const auto calibrated = std::count_if(prov.begin(), prov.end(), [&](const auto& p) {
    return !p.estimate && !p.calibration_rows().empty() && unused.count(p.path) == 0;
  });
  int done = 0;
  std::optional<SearchedOn> searched_on;  // (read when the first calibrated number is)
  for (const auto& p : prov) {
    if (const auto u = unused.find(p.path); u != unused.end()) {
      if (p.estimate || !p.calibration_rows().empty() || !p.alternatives.empty())
        not_varied.push_back({{"param", p.path}, {"why", u->second}});
      continue;
    }
    if (p.choice) {  // a mechanism: each plausible alternative is one input
      for (const auto& alt : p.alternatives) inputs.push_back({p.path, InputKind::structural, {json(alt)}});
      continue;
    }
    if (p.estimate && !p.range_low.is_null()) {
      inputs.push_back({p.path, p.workload ? InputKind::workload_estimate : InputKind::estimate, {p.range_low, p.range_high}});
      continue;
    }
    if (p.calibration_rows().empty()) continue;
    progress(o, fmt::format("sensitivity: range of calibrated {}/{} {}", ++done, calibrated, p.path));
    if (!searched_on) searched_on.emplace(platform_file, o.calibration_file);
    CalibratedRange blank;
    blank.platform = platform_file;
    blank.param = p.path;
    blank.nominal = p.value;
    json r = range_json(blank, platform_ov, *searched_on);
    if (auto e = reusable_range(earlier, r)) {
      r = *e;
      r["note"] = r.value("note", "") + (r.value("note", "").empty() ? "" : "; ") + "reused from " + o.ranges_from;
    } else if (!o.search_ranges) {
      r["note"] = fmt::format("not varied: no stored range for this platform file and value{} (--sensitivity "
                              "searches it)", o.ranges_from.empty() ? "" : " in " + o.ranges_from);
    } else {
      r = range_json(calibrated_range(p, platform_file, search), platform_ov, *searched_on);
    }
    ranges.push_back(r);
    if (!r["low"].is_null()) inputs.push_back({p.path, InputKind::calibrated, {r["low"], r["high"]}});
  }
  if (done > 0) progress_end(o);
  return inputs;
}

/// One run per variant with `ov`.
std::vector<RunOutput> run_variants(const SensitivityOptions& o, const std::vector<scenario::Override>& ov,
                                    const std::vector<RunOutput>& nominal) {
  std::vector<RunOutput> out;
  for (std::size_t i = 0; i < o.variants.size(); ++i)
    out.push_back(o.points != nullptr ? o.points->run(o.scenario, o.variants[i], ov, o.seed, nominal[i])
                                      : run_scenario(o.scenario, o.variants[i], ov, o.seed, false));
  return out;
}

/// The largest change of the primary metric (any variant) or of its difference to the baseline, in % (points).
double score_of(const Outcome& out, const std::vector<RunOutput>& ref, const std::string& metric) {
  double score = 0;
  for (const auto& at : out.at)
    for (std::size_t vi = 0; vi < at.size(); ++vi) {
      if (auto p = pct(at[vi].results.get(metric), ref[vi].results.get(metric))) score = std::max(score, std::fabs(*p));
      if (vi == 0) continue;
      auto d = pct(at[vi].results.get(metric), at[0].results.get(metric));
      auto d0 = pct(ref[vi].results.get(metric), ref[0].results.get(metric));
      if (d && d0) score = std::max(score, std::fabs(*d - *d0));
    }
  return score;
}

/// The range of every metric's difference (variant vs baseline) over the nominal and every input's outcomes: a
/// full-length outcome's difference as it is; a screened one's as the full-length nominal difference moved by
/// what the input did to the difference in the short runs (its end's short-run difference less the short
/// nominal's), so that an input the screen ranked low still widens the range.
json difference_range(const SensitivityOptions& o, const std::vector<RunOutput>& nominal,
                      const std::vector<RunOutput>& screen_nominal, const std::vector<Outcome>& outcomes) {
  struct Range {
    double low = 0, high = 0;
    bool any = false;
    int undefined = 0;
    void add(std::optional<double> d) {
      if (!d) {
        ++undefined;
        return;
      }
      d = std::round(*d * 1e9) / 1e9;  // a screened input's sum of differences: no 1e-14 % of rounding noise
      low = any ? std::min(low, *d) : *d;
      high = any ? std::max(high, *d) : *d;
      any = true;
    }
  };
  std::map<std::string, Range> range;
  auto diff = [](const std::vector<RunOutput>& runs, std::size_t vi, const std::string& m) -> std::optional<double> {
    if (!runs[vi].results.has(m) || !runs[0].results.has(m)) return std::nullopt;
    return pct(runs[vi].results.get(m), runs[0].results.get(m));
  };
  auto name = [&](const std::string& m, std::size_t vi) { return m + " (" + o.variants[vi] + " vs " + o.variants.front() + ")"; };
  for (std::size_t vi = 1; vi < nominal.size(); ++vi)
    for (const auto& [m, base] : nominal[0].results.metrics) range[name(m, vi)].add(diff(nominal, vi, m));
  for (const auto& out : outcomes) {
    if (!out.error.empty()) continue;
    for (const auto& at : out.at)
      for (std::size_t vi = 1; vi < at.size(); ++vi)
        for (const auto& [m, base] : nominal[0].results.metrics) {
          if (out.full) {
            range[name(m, vi)].add(diff(at, vi, m));
            continue;
          }
          const auto d_full = diff(nominal, vi, m), d_at = diff(at, vi, m), d_short = diff(screen_nominal, vi, m);
          range[name(m, vi)].add(d_full && d_at && d_short ? std::optional<double>(*d_full + *d_at - *d_short)
                                                          : std::nullopt);
        }
  }
  json j = json::object();
  for (const auto& [k, r] : range) {
    if (r.undefined == 0 && r.low == 0 && r.high == 0) continue;  // a metric the variants do not change
    j[k] = {{"low", r.any ? json(r.low) : json(nullptr)}, {"high", r.any ? json(r.high) : json(nullptr)}, {"unit", "%"}};
    if (r.undefined > 0) j[k]["not_defined_runs"] = r.undefined;  // the baseline was 0 there
  }
  return j;
}

void print_study(const SensitivityOptions& o, const std::vector<Input>& inputs, const std::vector<Outcome>& outcomes,
                 const std::vector<std::size_t>& order, const std::vector<RunOutput>& nominal,
                 const std::vector<RunOutput>& screen_nominal, const std::string& metric, const json& ranges,
                 const json& not_varied, const json& diff_range) {
  std::map<InputKind, int> count;
  for (const auto& in : inputs) ++count[in.kind];
  std::cout << fmt::format("\nsensitivity: {} inputs varied one at a time ({} estimates, {} calibrated, "
                           "{} workload estimates at their range ends; {} alternative mechanisms)\n",
                           inputs.size(), count[InputKind::estimate], count[InputKind::calibrated],
                           count[InputKind::workload_estimate], count[InputKind::structural]);
  std::cout << "  estimates and workload estimates: their declared plausible range\n  " << kCalibratedRangeMethod << "\n";
  if (count[InputKind::structural] > 0)
    std::cout << "  structural: a mechanism the platform names as plausible beside the one it uses, run in its place\n";
  for (const auto& r : ranges)
    if (r["low"].is_null()) std::cout << fmt::format("  {}: {}\n", r["param"].get<std::string>(), r["note"].get<std::string>());
  for (const auto& n : not_varied)
    std::cout << fmt::format("  not varied, no effect here: {} ({})\n", n["param"].get<std::string>(), n["why"].get<std::string>());
  const auto full = std::count_if(outcomes.begin(), outcomes.end(), [](const auto& x) { return x.full; });
  if (!o.screen_sets.empty())
    std::cout << fmt::format("  screened: all {} inputs with short runs ({}); run at full length: the {} that moved "
                             "{} or its difference most\n",
                             inputs.size(), set_text(o.screen_sets), full, metric);
  std::cout << fmt::format("\neffect on {} (change from nominal at the low / high end, or with the alternative", metric);
  if (o.variants.size() > 1) std::cout << "; diff: the difference to " << o.variants.front() << " there";
  std::cout << ")\n";
  std::cout << fmt::format("  {:<44} {:<17} {:<22} {:<6}", "input", "kind", "range", "run");
  for (std::size_t vi = 0; vi < o.variants.size(); ++vi) std::cout << fmt::format(" {:>19}", o.variants[vi]);
  for (std::size_t vi = 1; vi < o.variants.size(); ++vi) std::cout << fmt::format(" {:>19}", "diff " + o.variants[vi]);
  std::cout << "\n";
  for (std::size_t i : order) {
    const auto& out = outcomes[i];
    const auto& ref = out.full ? nominal : screen_nominal;
    std::cout << fmt::format("  {:<44} {:<17} {:<22} {:<6}", inputs[i].path, input_kind_name(inputs[i].kind),
                             inputs[i].range_text(), out.full ? "full" : "screen");
    if (!out.error.empty()) {
      std::cout << " FAILED: " << out.error << "\n";
      continue;
    }
    // One cell per variant and per difference: the change at each of the input's values, "low / high" or one.
    auto cell = [&](std::size_t vi, bool difference) {
      std::string text;
      for (const auto& at : out.at)
        text += (text.empty() ? "" : " / ") +
                pct_text(pct(at[vi].results.get(metric), (difference ? at[0] : ref[vi]).results.get(metric)));
      return text;
    };
    for (std::size_t vi = 0; vi < o.variants.size(); ++vi) std::cout << fmt::format(" {:>19}", cell(vi, false));
    for (std::size_t vi = 1; vi < o.variants.size(); ++vi) std::cout << fmt::format(" {:>19}", cell(vi, true));
    std::cout << "\n";
  }
  if (diff_range.empty()) return;
  std::cout << fmt::format("\nrange of each difference over the inputs' range ends and alternatives (one at a time{})\n",
                           o.screen_sets.empty() ? ""
                                                 : fmt::format("; the {} full-length inputs as run, the screened ones "
                                                               "as the full-length difference moved by their change "
                                                               "of it in the short runs",
                                                               full));
  for (auto it = diff_range.begin(); it != diff_range.end(); ++it) {
    const auto& r = it.value();
    if (r["low"].is_null()) {
      std::cout << fmt::format("  {:<48} n/a (the baseline is 0 in every run)\n", it.key());
      continue;
    }
    std::cout << fmt::format("  {:<48} {} .. {}{}\n", it.key(),
                             pct_text(r["low"].is_null() ? std::nullopt : std::optional<double>(r["low"].get<double>())),
                             pct_text(r["high"].is_null() ? std::nullopt : std::optional<double>(r["high"].get<double>())),
                             r.contains("not_defined_runs") ? " (n/a where the baseline is 0)" : "");
  }
}

}  // namespace

int run_sensitivity(const SensitivityOptions& o, const std::vector<RunOutput>& nominal, json& doc) {
  auto s = scenario::load_scenario(o.scenario, o.variants.front(), o.overrides);
  scenario::Run probe(s, 1);
  const std::string metric = o.metric.empty() ? nominal.front().results.metrics.front().first : o.metric;
  if (!nominal.front().results.has(metric))
    throw config::ConfigError(o.scenario, "--metric", fmt::format("the scenario has no metric '{}'", metric));
  json ranges = json::array(), not_varied = json::array();
  const std::vector<Input> inputs = uncertain_inputs(o, probe, s.platform.file, ranges, not_varied);

  const bool screening = !o.screen_sets.empty();
  auto short_ov = o.overrides;
  short_ov.insert(short_ov.end(), o.screen_sets.begin(), o.screen_sets.end());
  const std::vector<RunOutput> screen_nominal = screening ? run_variants(o, short_ov, nominal) : std::vector<RunOutput>{};
  std::vector<Outcome> outcomes(inputs.size());
  auto run_input = [&](std::size_t i, bool full) {
    outcomes[i].full = full;
    outcomes[i].error.clear();
    outcomes[i].at.assign(inputs[i].values.size(), {});
    for (std::size_t b = 0; b < inputs[i].values.size(); ++b) {
      auto ov = full ? o.overrides : short_ov;
      const json& value = inputs[i].values[b];
      ov.push_back({scenario::override_key(inputs[i].path), text_of(value)});
      try {
        outcomes[i].at[b] = run_variants(o, ov, nominal);
      } catch (const std::exception& e) {  // one input's failure (e.g. the watchdog) does not end the study
        const std::string what = e.what();
        outcomes[i].error = fmt::format("at {} ({}): {}", text_of(value),
                                        inputs[i].structural() ? "alternative" : b == 0 ? "low" : "high",
                                        what.substr(0, what.find('\n')));
        outcomes[i].score = 0;
        return;
      }
    }
    outcomes[i].score = score_of(outcomes[i], full ? nominal : screen_nominal, metric);
    if (!full) outcomes[i].screen_score = outcomes[i].score;
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    progress(o, fmt::format("sensitivity: {} {}/{} {}", screening ? "screening" : "input", i + 1, inputs.size(),
                            inputs[i].path));
    run_input(i, !screening);
  }
  std::vector<std::size_t> order(inputs.size());
  std::iota(order.begin(), order.end(), 0);
  auto by_score = [&](std::size_t a, std::size_t b) { return outcomes[a].score > outcomes[b].score; };
  std::stable_sort(order.begin(), order.end(), by_score);
  if (screening) {
    const std::size_t n = std::min(order.size(), static_cast<std::size_t>(std::max(o.full_runs, 0)));
    for (std::size_t k = 0; k < n; ++k) {
      progress(o, fmt::format("sensitivity: full length {}/{} {}", k + 1, n, inputs[order[k]].path));
      run_input(order[k], true);
    }
    // Full-length inputs first (by their full-length effect), then the screened ones.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return outcomes[a].full != outcomes[b].full ? outcomes[a].full : by_score(a, b);
    });
  }
  if (!inputs.empty()) progress_end(o);
  if (o.points != nullptr && o.points->emitting()) {
    o.points->write_joblist();
    std::cout << o.points->joblist_written("sensitivity");
    return 0;
  }
  if (o.points != nullptr && !o.quiet) std::cerr << o.points->summary("sensitivity");

  json table = json::array(), listed = json::array(), full_names = json::array(), screened_names = json::array();
  for (std::size_t i : order) {
    const auto& out = outcomes[i];
    const auto& ref = out.full ? nominal : screen_nominal;
    const char* run = out.full ? "full" : "screen";
    (out.full ? full_names : screened_names).push_back(inputs[i].path);
    listed.push_back({{"param", inputs[i].path}, {"kind", input_kind_name(inputs[i].kind)}, {"run", run}, {"score_pct", out.score}});
    listed.back().update(inputs[i].fields());
    if (out.screen_score) listed.back()["screen_score_pct"] = *out.screen_score;
    if (!out.error.empty()) {
      listed.back()["error"] = out.error;
      continue;
    }
    // An alternative mechanism is one value: its row gives it as both ends, so every reader of low/high works.
    for (std::size_t vi = 0; vi < o.variants.size(); ++vi) {
      const double lo = out.at.front()[vi].results.get(metric), hi = out.at.back()[vi].results.get(metric);
      const double base = ref[vi].results.get(metric);
      table.push_back({{"param", inputs[i].path}, {"kind", input_kind_name(inputs[i].kind)},
                       {"low", inputs[i].values.front()}, {"high", inputs[i].values.back()}, {"metric", metric},
                       {"variant", o.variants[vi]}, {"value_low", lo}, {"value_high", hi}, {"baseline_value", base},
                       {"change_low_pct", pct_json(pct(lo, base))}, {"change_high_pct", pct_json(pct(hi, base))},
                       {"run", run}});
      table.back().update(inputs[i].fields());
    }
  }
  doc["sensitivity"] = table;
  doc["varied_inputs"] = listed;  // "inputs" is the provenance: files read -> sha256
  doc["calibrated_ranges"] = {{"method", kCalibratedRangeMethod}, {"ranges", ranges}};
  doc["not_varied"] = not_varied;
  doc["screening"] = {{"screen_set", set_text(o.screen_sets)}, {"full_runs", o.full_runs},
                      {"full_length", full_names}, {"screened_only", screened_names}};
  doc["difference_range"] = difference_range(o, nominal, screen_nominal, outcomes);
  print_study(o, inputs, outcomes, order, nominal, screen_nominal, metric, ranges, not_varied, doc["difference_range"]);
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const auto& x) { return !x.error.empty(); }));
}

}  // namespace cohsim::cli
