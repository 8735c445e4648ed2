// Calibration rows (data/calibration.json): reading and checking them, running
// their scenarios (derived rows from their parts) and judging a prediction
// against the measurement. Shared by `cohsim validate` and the sensitivity
// study's calibrated ranges, so both judge a row the same way.
#pragma once

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "point_store.hpp"

namespace cohsim::cli {

/// One row of a calibration file.
struct CalibrationRow {
  std::string id, scenario, variant, metric, unit, source;
  std::vector<scenario::Override> sets;
  double measured = NAN, tolerance_pct = NAN;
  double tolerance_abs = NAN;  ///< set instead of tolerance_pct: the allowed error in the row's unit
  bool at_least = false;       ///< a lower bound: holds when the prediction is at least `measured`
  std::string part_a, part_b;  ///< a derived row's parts: predicted = part_a op part_b
  char op = 0;                 ///< '-' or '/' for a derived row, 0 for a row with a scenario
  /// Whether the row is judged by an absolute tolerance (a derived row near zero).
  bool absolute() const { return !std::isnan(tolerance_abs); }
  /// The allowed error: tolerance_abs (in the unit) or tolerance_pct (percent), whichever the row has.
  double tolerance() const { return absolute() ? tolerance_abs : tolerance_pct; }
};

/// The prediction for one row, or why there is none.
struct Prediction {
  double value = NAN;
  std::string error;  ///< non-empty: no prediction
  /// The provenance of every run the prediction came from (one, or a derived row's parts').
  std::vector<const std::vector<config::Provenance>*> provenance;
};

/// One scenario run, shared by the rows that name the same scenario, variant and settings.
struct CachedRun {
  scenario::Results results;
  std::vector<config::Provenance> provenance;
  std::string error;
};

/// Reads and checks every row of a calibration file (bad input: a ConfigError naming the row's path).
std::vector<CalibrationRow> read_calibration(const std::string& file);
/// The error of a prediction, percent of the measurement.
double error_pct(const CalibrationRow& row, double predicted);
/// Whether a prediction meets the row: within its tolerance, or for a lower
/// bound at least the measurement (less the tolerance).
bool holds(const CalibrationRow& row, double predicted);
/// The row's tolerance as written: "3%" or "8 ns".
std::string tolerance_text(const CalibrationRow& row);
/// The row's rule in words: "tol 3%", "tol 8 ns", or a lower bound's.
std::string tolerance_rule(const CalibrationRow& row);
/// Adds the row's tolerance_pct or tolerance_abs to a JSON record of it.
void add_tolerance(nlohmann::json& j, const CalibrationRow& row);
/// `cohsim run ...` for a row, so an error can be reproduced.
std::string row_command(const CalibrationRow& row);
/// The row's scenario file: as written when it exists from here, else in the source tree.
inline std::string scenario_path(const CalibrationRow& row) {
  return std::filesystem::exists(row.scenario) ? row.scenario : source_dir() + "/" + row.scenario;
}

/// The error of a row whose run became a job line (validate --emit-joblist) instead of running.
inline constexpr const char* kNotRunYet = "not run: a job line of the --emit-joblist file";

/// Runs rows on demand: each scenario run once, each row predicted once (derived rows from their parts).
class Predictor {
 public:
  /// `extra`: overrides applied to every row's run after the row's own (a sensitivity search's value).
  Predictor(const std::vector<CalibrationRow>& rows, std::string calibration_file,
            std::vector<scenario::Override> extra = {})
      : rows_(rows), file_(std::move(calibration_file)), extra_(std::move(extra)) {}

  /// The prediction of row `id`, which must be a row of the file.
  const Prediction& predict(const std::string& id) {
    if (auto done = predictions_.find(id); done != predictions_.end()) return done->second;
    const CalibrationRow& row = *find(id);
    Prediction p;
    if (!in_progress_.insert(id).second) {
      p.error = fmt::format("derived rows form a cycle through {}", id);
      return predictions_[id] = p;
    }
    p = row.op != 0 ? derive(row) : run(row);
    in_progress_.erase(id);
    return predictions_[id] = p;
  }
  /// Scenario runs made so far.
  std::size_t runs() const { return runs_.size(); }
  /// Takes each run from `points` (validate --points DIR): read when it is there, else run and kept, or
  /// when emitting a job line (the row then has no prediction).
  void use_points(PointStore* points) { points_ = points; }
  /// The row with `id`; nullptr when the file has none.
  const CalibrationRow* find(const std::string& id) const {
    for (const auto& r : rows_)
      if (r.id == id) return &r;
    return nullptr;
  }
  const std::vector<CalibrationRow>& rows() const { return rows_; }

 private:
  Prediction derive(const CalibrationRow& row) {
    Prediction p;
    std::vector<const Prediction*> parts;
    for (const std::string& part : {row.part_a, row.part_b}) {
      if (find(part) == nullptr) {
        p.error = fmt::format("derived from '{}', which is not a row of {}", part, file_);
        return p;
      }
      const Prediction& q = predict(part);
      if (!q.error.empty()) {
        p.error = fmt::format("derived from '{}', which has no prediction ({})", part, q.error);
        return p;
      }
      parts.push_back(&q);
      p.provenance.insert(p.provenance.end(), q.provenance.begin(), q.provenance.end());
    }
    if (row.op == '/' && parts[1]->value == 0) {
      p.error = fmt::format("derived as {} / {}, and {} predicts 0", row.part_a, row.part_b, row.part_b);
      return p;
    }
    p.value = row.op == '-' ? parts[0]->value - parts[1]->value : parts[0]->value / parts[1]->value;
    return p;
  }

  Prediction run(const CalibrationRow& row) {
    Prediction p;
    const std::string path = scenario_path(row);
    if (!std::filesystem::exists(path)) {
      p.error =
          fmt::format("scenario not found: {} (looked in the working directory and in {})", row.scenario, source_dir());
      return p;
    }
    std::vector<scenario::Override> sets = row.sets;
    sets.insert(sets.end(), extra_.begin(), extra_.end());
    std::string key = path + "\n" + row.variant;
    for (const auto& s : sets) key += "\n" + s.key + "=" + s.value;
    auto cached = runs_.find(key);
    if (cached == runs_.end()) {
      CachedRun c;
      try {
        RunOutput out = points_ ? points_->run(path, row.variant, sets, std::nullopt, RunOutput{})
                                : run_scenario(path, row.variant, sets, std::nullopt, false);
        if (out.doc.is_null()) throw std::runtime_error(kNotRunYet);
        // A run read from the folder has its numbers; the platform's sources come from loading it again.
        if (out.provenance.empty()) out.provenance = scenario_provenance(path, row.variant, sets);
        c.results = std::move(out.results);
        c.provenance = std::move(out.provenance);
      } catch (const std::exception& e) {
        c.error = fmt::format("{} ({})", e.what(), row_command(row));
      }
      cached = runs_.emplace(key, std::move(c)).first;
    }
    const CachedRun& c = cached->second;
    if (!c.error.empty()) {
      p.error = c.error;
      return p;
    }
    p.provenance.push_back(&c.provenance);
    if (!c.results.has(row.metric)) {
      constexpr std::size_t kNamesShown = 12;
      std::string known;
      for (std::size_t i = 0; i < c.results.metrics.size() && i <= kNamesShown; ++i)
        known += i == kNamesShown ? ", ..." : (i == 0 ? "" : ", ") + c.results.metrics[i].first;
      p.error = fmt::format("the run has no metric '{}' ({}; it has: {})", row.metric, row_command(row), known);
      return p;
    }
    p.value = c.results.get(row.metric);
    return p;
  }

  const std::vector<CalibrationRow>& rows_;
  std::string file_;
  std::vector<scenario::Override> extra_;
  PointStore* points_ = nullptr;
  std::map<std::string, CachedRun> runs_;
  std::map<std::string, Prediction> predictions_;
  std::set<std::string> in_progress_;
};


}  // namespace cohsim::cli
