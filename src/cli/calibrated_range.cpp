// The range of a calibrated parameter: the values at which the calibration
// rows it was fitted to reach their tolerance ends (see sensitivity.hpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <sstream>

#include "sensitivity.hpp"

namespace cohsim::cli {

using nlohmann::json;

const char* const kCalibratedRangeMethod =
    "calibrated parameters: one at a time, every other input at nominal, over the values that keep every calibration "
    "row naming it within its tolerance (rows run as in cohsim validate, at full length): steps out from the nominal "
    "value (5%, 10%, 20%, ...) until a row leaves its tolerance or the declared min/max is reached, then bisection "
    "to 1% of the nominal value";

namespace {

/// A number as written in a config file, in base units, and how to write a new value back.
struct Numeric {
  double value = 0;
  bool time = false, integer = false;
  json written(double x) const {
    if (time) return fmt::format("{:.6g}ns", std::round(x) / 1000.0);
    if (integer) return static_cast<std::int64_t>(std::llround(x));
    return x;
  }
};

std::optional<Numeric> numeric_of(const std::string& written) {
  if (!written.empty() && written.back() == 's')
    if (auto t = sim::parse_time(written)) return Numeric{static_cast<double>(*t), true, false};
  json j = config::parse_set_value(written);
  if (j.is_number_integer()) return Numeric{j.get<double>(), false, true};
  if (j.is_number()) return Numeric{j.get<double>(), false, false};
  return std::nullopt;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(path, ec).string();
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// Runs calibration rows as cohsim validate does, with extra overrides.
class RowRunner {
 public:
  RowRunner(std::string calibration_file, std::vector<scenario::Override> platform_overrides)
      : file_(std::move(calibration_file)), platform_overrides_(std::move(platform_overrides)) {
    json cal = config::load_json_file(file_);
    if (!cal.contains("rows") || !cal["rows"].is_array()) throw config::ConfigError(file_, "rows", "expected an array");
    for (const auto& r : cal["rows"]) rows_[r.at("id").get<std::string>()] = r;
  }

  /// Whether the file has a row with this id.
  bool has(const std::string& id) const { return rows_.count(id) != 0; }

  /// The row with this id; throws ConfigError naming who asked for a missing one.
  const json& row(const std::string& id, const std::string& named_by) const {
    auto it = rows_.find(id);
    if (it == rows_.end())
      throw config::ConfigError(file_, "rows", fmt::format("no row '{}' (named by the source of {})", id, named_by));
    return it->second;
  }

  /// The canonical platform files the row's scenario(s) run on.
  std::vector<std::string> platforms_of(const std::string& id, const std::string& named_by) const {
    const json& r = row(id, named_by);
    if (auto parts = derived_parts(r)) {
      auto a = platforms_of(parts->first, id), b = platforms_of(parts->second, id);
      a.insert(a.end(), b.begin(), b.end());
      return a;
    }
    return {canonical(scenario::load_scenario(scenario_path(r), variant_of(r), sets_of(r, {})).platform.file)};
  }

  /// The row's prediction with `extra` overrides.
  double predict(const std::string& id, const std::vector<scenario::Override>& extra) {
    const json& r = row(id, id);
    if (auto parts = derived_parts(r)) {
      const double a = predict(parts->first, extra), b = predict(parts->second, extra);
      return parts->divide ? a / b : a - b;
    }
    ++runs;
    return run_scenario(scenario_path(r), variant_of(r), sets_of(r, extra), std::nullopt, false)
        .results.get(r.at("metric").get<std::string>());
  }

  /// Whether `predicted` holds the row: within its tolerance, or at least `measured` for a lower-bound row.
  bool holds(const std::string& id, double predicted) const {
    const json& r = row(id, id);
    const double measured = r.at("measured").get<double>();
    if (r.value("bound", "") == "at_least") return predicted >= measured;
    return std::fabs(100.0 * (predicted - measured) / measured) <= r.at("tolerance_pct").get<double>();
  }

  int runs = 0;  ///< scenario runs so far

 private:
  struct Parts {
    std::string first, second;
    bool divide = false;
  };
  static std::optional<Parts> derived_parts(const json& r) {
    if (!r.contains("derived")) return std::nullopt;
    std::istringstream ss(r["derived"].get<std::string>());
    Parts p;
    std::string op;
    ss >> p.first >> op >> p.second;
    if (op != "-" && op != "/") throw config::ConfigError("calibration", r.value("id", "?"), "derived rows are \"a - b\" or \"a / b\"");
    p.divide = op == "/";
    return p;
  }
  static std::string scenario_path(const json& r) {
    const std::string scen = r.at("scenario").get<std::string>();
    return std::filesystem::exists(scen) ? scen : source_dir() + "/" + scen;
  }
  static std::string variant_of(const json& r) {
    return r.contains("variant") && r["variant"].is_string() ? r["variant"].get<std::string>() : "";
  }
  std::vector<scenario::Override> sets_of(const json& r, const std::vector<scenario::Override>& extra) const {
    std::vector<scenario::Override> sets;
    if (r.contains("set"))
      for (auto it = r["set"].begin(); it != r["set"].end(); ++it)
        sets.push_back({it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
    sets.insert(sets.end(), platform_overrides_.begin(), platform_overrides_.end());
    sets.insert(sets.end(), extra.begin(), extra.end());
    return sets;
  }

  std::string file_;
  std::vector<scenario::Override> platform_overrides_;
  std::map<std::string, json> rows_;
};

}  // namespace

CalibratedRange calibrated_range(const config::Provenance& p, const std::string& platform_file,
                                 const RangeSearchOptions& o) {
  CalibratedRange r;
  r.platform = platform_file;
  r.param = p.path;
  r.nominal = p.value;
  RowRunner rows(o.calibration_file, o.platform_overrides);
  const std::string here = canonical(platform_file);
  std::vector<std::string> elsewhere, missing;
  for (const auto& id : p.calibration_rows()) {
    if (!rows.has(id)) {
      missing.push_back(id);
      continue;
    }
    // A workload number is searched on its rows' own scenarios, whatever the
    // platform (the rows run with it overridden); a platform number only on
    // rows that run on this platform.
    auto on = rows.platforms_of(id, p.path);
    const bool usable = p.workload || std::all_of(on.begin(), on.end(), [&](const auto& f) { return f == here; });
    (usable ? r.rows : elsewhere).push_back(id);
  }
  auto finish = [&](const std::string& note) {
    r.note = note;
    r.runs = rows.runs;
    return r;
  };
  if (!missing.empty())
    return finish(fmt::format("not varied: its rows {} are not in {}", joined(missing), o.calibration_file));
  if (r.rows.empty()) return finish(fmt::format("not varied: its rows ({}) run on other platforms", joined(elsewhere)));
  const auto num = numeric_of(p.value);
  if (!num) return finish("not varied: not a time or a plain number");
  // Platform paths are --set keys as they are; a workload parameter's is its name.
  const std::string key = p.workload && p.path.rfind("params.", 0) == 0 ? p.path.substr(7) : p.path;
  std::vector<std::string> failed;  // values whose runs failed: outside the range, and said so
  auto holds_at = [&](double x) {
    json w = num->written(x);
    const std::string text = w.is_string() ? w.get<std::string>() : w.dump();
    const std::vector<scenario::Override> extra{{key, text}};
    try {
      return std::all_of(r.rows.begin(), r.rows.end(), [&](const auto& id) { return rows.holds(id, rows.predict(id, extra)); });
    } catch (const std::exception& e) {
      const std::string what = e.what();
      failed.push_back(fmt::format("at {} the run failed ({})", text, what.substr(0, what.find('\n'))));
      return false;
    }
  };
  const double x0 = num->value;
  if (!holds_at(x0))
    return finish(failed.empty() ? fmt::format("not varied: {} misses its tolerance at the nominal value", joined(r.rows))
                                 : "not varied: " + failed.front());
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double lowest = p.min ? *p.min : (num->time ? 0.0 : -kInf);
  const double highest = p.max ? *p.max : kInf;
  std::vector<std::string> notes;
  auto search = [&](int dir, json& end, json& outside) {
    const double bound = dir < 0 ? lowest : highest;
    double inside = x0, step = x0 != 0 ? std::fabs(x0) * 0.05 : 1.0;
    std::optional<double> out;
    for (int k = 0; k < 40 && !out; ++k, step *= 2) {
      double x = x0 + dir * step;
      if (dir * (x - bound) >= 0) x = bound;
      if (num->integer || num->time) x = std::round(x);
      if (x == inside) continue;
      if (!holds_at(x)) out = x;
      else if ((inside = x) == bound) break;
    }
    end = num->written(inside);
    if (!out) {
      notes.push_back(fmt::format("{} end: {}", dir < 0 ? "low" : "high",
                                  inside == bound ? "within tolerance at the declared bound" : "within tolerance at the search limit"));
      return;
    }
    const double width = num->integer ? 1.0 : std::max(std::fabs(x0) * o.precision, num->time ? 1.0 : 0.0);
    for (int k = 0; k < 30 && std::fabs(*out - inside) > width; ++k) {
      double mid = (inside + *out) / 2;
      if (num->integer || num->time) mid = std::round(mid);
      if (mid == inside || mid == *out) break;
      (holds_at(mid) ? inside : *out) = mid;
    }
    end = num->written(inside);
    outside = num->written(*out);
  };
  search(-1, r.low, r.low_outside);
  search(+1, r.high, r.high_outside);
  notes.insert(notes.end(), failed.begin(), failed.end());
  return finish(joined(notes));
}

}  // namespace cohsim::cli
