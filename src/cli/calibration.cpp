#include "calibration.hpp"

#include <sstream>

namespace cohsim::cli {

using nlohmann::json;

namespace {

/// The text of `key` in calibration row `at`; empty when absent and not required.
std::string row_text(const json& r, const std::string& file, const std::string& at, const char* key, bool required) {
  if (!r.contains(key) || r[key].is_null()) {
    if (required) throw config::ConfigError(file, at + "." + key, "missing required key");
    return {};
  }
  if (!r[key].is_string())
    throw config::ConfigError(file, at + "." + key, fmt::format("value {}: expected a string", r[key].dump()));
  return r[key].get<std::string>();
}

double row_number(const json& r, const std::string& file, const std::string& at, const char* key) {
  if (!r.contains(key)) throw config::ConfigError(file, at + "." + key, "missing required key");
  if (!r[key].is_number())
    throw config::ConfigError(file, at + "." + key, fmt::format("value {}: expected a number", r[key].dump()));
  return r[key].get<double>();
}

}  // namespace

std::vector<CalibrationRow> read_calibration(const std::string& file) {
  static const std::set<std::string> kKeys = {
      "id",   "scenario", "variant", "set",     "metric", "measured", "tolerance_pct",
      "tolerance_abs", "unit",     "source",  "derived", "bound"};
  const json cal = config::load_json_file(file);
  if (!cal.is_object() || !cal.contains("rows") || !cal["rows"].is_array())
    throw config::ConfigError(file, "rows", "expected an array of calibration rows");
  std::vector<CalibrationRow> rows;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cal["rows"].size(); ++i) {
    const json& r = cal["rows"][i];
    const std::string at = fmt::format("rows[{}]", i);
    if (!r.is_object()) throw config::ConfigError(file, at, fmt::format("value {}: expected an object", r.dump()));
    for (auto it = r.begin(); it != r.end(); ++it)
      if (!kKeys.count(it.key()))
        throw config::ConfigError(
            file, at + "." + it.key(),
            "unknown key (a row has: id, scenario, variant, set, metric, measured, tolerance_pct or "
            "tolerance_abs, unit, source, derived, bound)");
    CalibrationRow row;
    row.id = row_text(r, file, at, "id", true);
    if (!ids.insert(row.id).second)
      throw config::ConfigError(file, at + ".id", fmt::format("value \"{}\": an earlier row has this id", row.id));
    row.measured = row_number(r, file, at, "measured");
    const bool pct = r.contains("tolerance_pct"), abs = r.contains("tolerance_abs");
    if (pct == abs)
      throw config::ConfigError(file, at + (abs ? ".tolerance_abs" : ".tolerance_pct"),
                                pct ? "a row has tolerance_pct or tolerance_abs, not both"
                                    : "missing required key (tolerance_pct, or tolerance_abs in the row's unit)");
    const char* tol_key = pct ? "tolerance_pct" : "tolerance_abs";
    double& tol = pct ? row.tolerance_pct : row.tolerance_abs;
    tol = row_number(r, file, at, tol_key);
    if (tol < 0) throw config::ConfigError(file, at + "." + tol_key, fmt::format("value {}: must be at least 0", tol));
    if (row.measured == 0 && pct)
      throw config::ConfigError(file, at + ".measured",
                                "value 0: a relative tolerance needs a measurement that is not 0 (use tolerance_abs)");
    row.unit = row_text(r, file, at, "unit", false);
    row.source = row_text(r, file, at, "source", false);
    const std::string bound = row_text(r, file, at, "bound", false);
    if (!bound.empty() && bound != "at_least")
      throw config::ConfigError(file, at + ".bound",
                                fmt::format("value \"{}\": expected \"at_least\" (a lower bound) or no bound", bound));
    row.at_least = bound == "at_least";
    const std::string derived = row_text(r, file, at, "derived", false);
    if (!derived.empty()) {
      std::istringstream words(derived);
      std::string op, rest;
      words >> row.part_a >> op >> row.part_b;
      if (row.part_b.empty() || (op != "-" && op != "/") || (words >> rest))
        throw config::ConfigError(file, at + ".derived",
                                  fmt::format("value \"{}\": expected \"ROW - ROW\" or \"ROW / ROW\"", derived));
      row.op = op[0];
    } else {
      row.scenario = row_text(r, file, at, "scenario", true);
      row.metric = row_text(r, file, at, "metric", true);
      row.variant = row_text(r, file, at, "variant", false);
      if (r.contains("set")) {
        if (!r["set"].is_object())
          throw config::ConfigError(file, at + ".set",
                                    fmt::format("value {}: expected an object KEY: VALUE", r["set"].dump()));
        for (auto it = r["set"].begin(); it != r["set"].end(); ++it)
          row.sets.push_back({it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double error_pct(const CalibrationRow& row, double predicted) {
  return 100.0 * (predicted - row.measured) / std::fabs(row.measured);
}

bool holds(const CalibrationRow& row, double predicted) {
  // The error in the tolerance's own terms: in the unit, or percent of the measurement.
  const double e = row.absolute() ? predicted - row.measured : error_pct(row, predicted);
  return row.at_least ? e >= -row.tolerance() : std::fabs(e) <= row.tolerance();
}

std::string tolerance_text(const CalibrationRow& row) {
  return row.absolute() ? fmt::format("{:g} {}", row.tolerance_abs, row.unit) : fmt::format("{:g}%", row.tolerance_pct);
}

std::string tolerance_rule(const CalibrationRow& row) {
  if (!row.at_least) return "tol " + tolerance_text(row);
  return row.tolerance() == 0 ? "bound: holds at >= measured" : "bound: holds at >= measured - " + tolerance_text(row);
}

void add_tolerance(nlohmann::json& j, const CalibrationRow& row) {
  if (row.absolute())
    j["tolerance_abs"] = row.tolerance_abs;
  else
    j["tolerance_pct"] = row.tolerance_pct;
}

std::string row_command(const CalibrationRow& row) {
  std::string cmd = "cohsim run " + row.scenario;
  if (!row.variant.empty()) cmd += " --variant " + row.variant;
  for (const auto& s : row.sets) cmd += fmt::format(" --set {}={}", s.key, s.value);
  return cmd;
}

}  // namespace cohsim::cli
