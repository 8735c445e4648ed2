// The range of a calibrated parameter: the values at which the calibration
// rows it was fitted to reach their tolerance ends (see sensitivity.hpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

#include "calibration.hpp"
#include "sensitivity.hpp"

namespace cohsim::cli {

using nlohmann::json;

std::string canonical(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(path, ec).string();
}

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

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// The canonical platform files row `id`'s scenario(s) run on.
std::vector<std::string> platforms_of(const Predictor& rows, const std::string& id,
                                      const std::vector<scenario::Override>& overrides) {
  const CalibrationRow& r = *rows.find(id);
  if (r.op != 0) {
    auto a = platforms_of(rows, r.part_a, overrides), b = platforms_of(rows, r.part_b, overrides);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  auto sets = r.sets;
  sets.insert(sets.end(), overrides.begin(), overrides.end());
  return {canonical(scenario::load_scenario(scenario_path(r), r.variant, sets).platform.file)};
}

}  // namespace

CalibratedRange calibrated_range(const config::Provenance& p, const std::string& platform_file,
                                 const RangeSearchOptions& o) {
  CalibratedRange r;
  r.platform = platform_file;
  r.param = p.path;
  r.nominal = p.value;
  const std::vector<CalibrationRow> all_rows = read_calibration(o.calibration_file);
  const Predictor rows(all_rows, o.calibration_file);
  const std::string here = canonical(platform_file);
  std::vector<std::string> elsewhere, missing;
  for (const auto& id : p.calibration_rows()) {
    if (rows.find(id) == nullptr) {
      missing.push_back(id);
      continue;
    }
    // A workload number is searched on its rows' own scenarios, whatever the
    // platform (the rows run with it overridden); a platform number only on
    // rows that run on this platform.
    auto on = platforms_of(rows, id, o.platform_overrides);
    const bool usable = p.workload || std::all_of(on.begin(), on.end(), [&](const auto& f) { return f == here; });
    (usable ? r.rows : elsewhere).push_back(id);
  }
  int runs = 0;
  auto finish = [&](const std::string& note) {
    r.note = note;
    r.runs = runs;
    return r;
  };
  if (!missing.empty())
    return finish(fmt::format("not varied: its rows {} are not in {}", joined(missing), o.calibration_file));
  if (r.rows.empty()) return finish(fmt::format("not varied: its rows ({}) run on other platforms", joined(elsewhere)));
  const auto num = numeric_of(p.value);
  if (!num) return finish("not varied: not a time or a plain number");
  const std::string key = scenario::override_key(p.path);
  std::vector<std::string> failed;  // values whose runs failed: outside the range, and said so
  auto holds_at = [&](double x) {
    json w = num->written(x);
    const std::string text = w.is_string() ? w.get<std::string>() : w.dump();
    std::vector<scenario::Override> extra = o.platform_overrides;
    extra.push_back({key, text});
    Predictor at(all_rows, o.calibration_file, extra);  // the rows judged as cohsim validate judges them
    const bool ok = std::all_of(r.rows.begin(), r.rows.end(), [&](const auto& id) {
      const Prediction& pr = at.predict(id);
      if (pr.error.empty()) return holds(*at.find(id), pr.value);
      failed.push_back(fmt::format("at {} the run failed ({})", text, pr.error.substr(0, pr.error.find('\n'))));
      return false;
    });
    runs += static_cast<int>(at.runs());
    return ok;
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
