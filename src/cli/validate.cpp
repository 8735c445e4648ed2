// validate: runs the calibration rows (data/calibration.json) and judges each
// prediction against its measurement and tolerance, against the list of rows
// known to miss (known-misses.json: row id -> reason) and against the
// predictions as of the last intended model change (validate-expected.json:
// a row that holds must stay within 1 % of it). Both files sit beside the
// calibration file unless --known-misses / --expected name others;
// --write-expected rewrites them both from the current model.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "calibration.hpp"
#include "cli.hpp"
#include "validate_report.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

/// How far (percent) the prediction of a row that holds may move from its expected value.
constexpr double kRegressionTolerancePct = 1.0;

/// The "about" of the known-miss file, written by --write-expected.
constexpr const char* kKnownMissesAbout =
    "Calibration rows the model is known to miss: row id -> why. `cohsim validate` marks them 'known miss' and "
    "passes while they miss; one that fits again fails (remove it here), and so does an entry without a reason. "
    "`cohsim validate --write-expected` rewrites this list from the current model: it drops rows that fit, keeps "
    "the reasons of rows that still miss and adds new misses with an empty reason for you to write.";

/// The "about" of the expected-predictions file, written by --write-expected.
constexpr const char* kExpectedAbout =
    "Every calibration row's prediction as of the last intended model change. `cohsim validate` fails a row that "
    "holds (not a known miss) whose prediction moves more than 1 % from its value here. After an intended change "
    "regenerate it (and data/known-misses.json) with: cohsim validate --write-expected";

/// Row id -> why the model misses it; empty when the file does not exist.
std::map<std::string, std::string> read_known_misses(const std::string& file) {
  std::map<std::string, std::string> out;
  if (!std::filesystem::exists(file)) return out;
  const json doc = config::load_json_file(file);
  if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_object())
    throw config::ConfigError(file, "rows", "expected an object: row id -> why the model misses it");
  for (auto it = doc["rows"].begin(); it != doc["rows"].end(); ++it) {
    if (!it.value().is_string())
      throw config::ConfigError(
          file, "rows." + it.key(),
          fmt::format("value {}: expected the reason the model misses it, as text", it.value().dump()));
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

/// Row id -> expected prediction; nullopt when the file does not exist (no regression check).
std::optional<std::map<std::string, double>> read_expected(const std::string& file) {
  if (!std::filesystem::exists(file)) return std::nullopt;
  const json doc = config::load_json_file(file);
  if (!doc.is_object() || !doc.contains("predicted") || !doc["predicted"].is_object())
    throw config::ConfigError(file, "predicted", "expected an object: row id -> predicted value");
  std::map<std::string, double> out;
  for (auto it = doc["predicted"].begin(); it != doc["predicted"].end(); ++it) {
    if (!it.value().is_number())
      throw config::ConfigError(file, "predicted." + it.key(),
                                fmt::format("value {}: expected a number", it.value().dump()));
    out[it.key()] = it.value().get<double>();
  }
  return out;
}

/// The prediction's error relative to the measurement, percent.
/// The platform parameters whose "calibration: ..." source names row `id`.
std::vector<std::string> pins_of(const std::string& id, const Prediction& p) {
  std::vector<std::string> pins;
  for (const auto* provenance : p.provenance)
    for (const auto& param : *provenance)
      for (const auto& row : param.calibration_rows())
        if (row == id && std::find(pins.begin(), pins.end(), param.path) == pins.end()) pins.push_back(param.path);
  return pins;
}

/// The files a validation reads besides the calibration file, and how to regenerate them.
struct Judging {
  std::string known_misses_file, expected_file, regenerate;
  std::map<std::string, std::string> known_misses;
  std::optional<std::map<std::string, double>> expected;
};

/// Whether the fits alone fix row `id`'s value: a fitted row; a derived row whose parts are both fixed; or a part
/// of a fitted derived row whose other part is fixed (wmb = nowrites + write-delta).
bool fixed_by_fits(const std::string& id, const Prediction& p, const std::vector<CalibrationRow>& rows,
                   std::set<std::string>& seen) {
  if (!pins_of(id, p).empty()) return true;
  if (!seen.insert(id).second) return false;
  for (const CalibrationRow& r : rows) {
    if (r.op == 0) continue;
    if (r.id == id && fixed_by_fits(r.part_a, p, rows, seen) && fixed_by_fits(r.part_b, p, rows, seen)) return true;
    if (pins_of(r.id, p).empty() || (r.part_a != id && r.part_b != id)) continue;
    if (fixed_by_fits(r.part_a == id ? r.part_b : r.part_a, p, rows, seen)) return true;
  }
  return false;
}

Verdict judge(const CalibrationRow& row, const Prediction& p, const Judging& j, const std::vector<CalibrationRow>& rows) {
  Verdict v;
  v.pins = pins_of(row.id, p);
  // An identity: the fitted rows' sum, difference or ratio, not something the model predicted.
  std::set<std::string> seen;
  const bool identity = v.pins.empty() && fixed_by_fits(row.id, p, rows, seen);
  v.kind = !v.pins.empty() ? "fitted" : identity ? "identity" : p.provenance.empty() ? "unknown" : "predicted";
  if (!p.error.empty()) {
    v.status = "ERROR";
    v.note = p.error;
    return v;
  }
  v.predicted = p.value;
  v.error_pct = error_pct(row, p.value);
  const bool fits = holds(row, p.value);
  // The 1 % regression guard, for rows that fit and for known misses alike
  // (a known miss is a headline row too: its drift must show).
  auto moved = [&]() {
    if (!j.expected) return false;
    auto e = j.expected->find(row.id);
    if (e == j.expected->end()) {
      v.status = "ERROR";
      v.note = fmt::format("no expected prediction in {}: regenerate it with `{}`", j.expected_file, j.regenerate);
      return true;
    }
    v.expected = e->second;
    v.moved_pct =
        e->second != 0 ? 100.0 * (p.value - e->second) / std::fabs(e->second) : (p.value == 0 ? 0.0 : INFINITY);
    if (std::fabs(v.moved_pct) <= kRegressionTolerancePct) return false;
    v.status = "MOVED";
    v.note = fmt::format(
        "moved {:+.2f}% from the expected {:.6g} in {} (more than {:g}%): find the change that moved it, or after "
        "an intended change regenerate with `{}`",
        v.moved_pct, e->second, j.expected_file, kRegressionTolerancePct, j.regenerate);
    return true;
  };
  if (auto known = j.known_misses.find(row.id); known != j.known_misses.end()) {
    if (known->second.empty()) {
      v.status = "ERROR";
      v.note = fmt::format("a known miss without a reason: write why the model misses it in {}", j.known_misses_file);
    } else if (fits) {
      v.status = "NOW FITS";
      v.note = fmt::format("now fits: remove it from {} (it was listed as: {})", j.known_misses_file, known->second);
    } else if (!moved()) {
      v.status = "known miss";
      v.note = known->second;
    }
    return v;
  }
  if (!fits) {
    v.status = "MISS";
    v.note = fmt::format("if the model cannot fit it yet, list it with the reason in {}", j.known_misses_file);
    return v;
  }
  if (moved()) return v;
  v.status = "ok";
  return v;
}

std::string row_line(const CalibrationRow& row, const Verdict& v) {
  std::string line;
  if (std::isnan(v.predicted)) {
    line = fmt::format("{:<34} {:>10}  {:<9} {:>10}  measured {:>10.4g} {}\n", row.id, v.status, v.kind, "-",
                       row.measured, row.unit);
  } else {
    const std::string rule = tolerance_rule(row);
    const std::string error = row.absolute() ? fmt::format("{:>+7.1f} {}", v.predicted - row.measured, row.unit)
                                             : fmt::format("{:>+7.1f}%", v.error_pct);
    line = fmt::format("{:<34} {:>10}  {:<9} {:>10.4g}  measured {:>10.4g} {:<5} error {}  ({})\n", row.id, v.status,
                       v.kind, v.predicted, row.measured, row.unit, error, rule);
  }
  if (!v.pins.empty()) {
    line += "    pins";
    for (std::size_t i = 0; i < v.pins.size(); ++i) line += (i == 0 ? " " : ", ") + v.pins[i];
    line += "\n";
  }
  if (!v.note.empty()) line += "    " + v.note + "\n";
  return line;
}

json row_json(const CalibrationRow& row, const Verdict& v) {
  json j = {{"id", row.id},     {"status", v.status},       {"kind", v.kind},
            {"pins", v.pins},   {"measured", row.measured}, {"unit", row.unit},
            {"source", row.source}};
  add_tolerance(j, row);
  if (row.at_least) j["bound"] = "at_least";
  if (!std::isnan(v.predicted)) {
    j["predicted"] = v.predicted;
    j["error_pct"] = v.error_pct;
  }
  if (!std::isnan(v.expected)) {
    j["expected"] = v.expected;
    j["moved_pct"] = v.moved_pct;
  }
  if (!v.note.empty()) j["note"] = v.note;
  return j;
}

/// Rewrites the expected predictions and the known-miss list from the rows run
/// (entries of rows not run are kept, unless every row was run). Prints what changed in the list.
void write_expected(const std::vector<const CalibrationRow*>& selected, Predictor& predictor, const Judging& j,
                    bool every_row) {
  std::map<std::string, double> expected;
  if (!every_row && j.expected) expected = *j.expected;
  std::map<std::string, std::string> known;
  for (const auto& [id, reason] : j.known_misses) {
    if (predictor.find(id) != nullptr || !every_row)
      known[id] = reason;
    else
      std::cout << fmt::format("{}: dropped {} (no such row)\n", j.known_misses_file, id);
  }
  for (const CalibrationRow* row : selected) {
    const Prediction& p = predictor.predict(row->id);
    expected[row->id] = p.value;
    const bool fits = holds(*row, p.value);
    if (fits && known.erase(row->id) == 1)
      std::cout << fmt::format("{}: removed {} (it fits now)\n", j.known_misses_file, row->id);
    if (!fits && known.emplace(row->id, "").second)
      std::cout << fmt::format("{}: added {}: write why the model misses it there\n", j.known_misses_file, row->id);
  }
  json predicted = json::object();
  for (const auto& [id, value] : expected) predicted[id] = value;
  json rows = json::object();
  for (const auto& [id, reason] : known) rows[id] = reason;
  write_file_atomically(j.expected_file, json{{"about", kExpectedAbout}, {"predicted", predicted}}.dump(1) + "\n");
  write_file_atomically(j.known_misses_file, json{{"about", kKnownMissesAbout}, {"rows", rows}}.dump(1) + "\n");
  std::cout << fmt::format("wrote {} and {}\n", j.expected_file, j.known_misses_file);
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  const std::string default_calibration = source_dir() + "/data/calibration.json";
  std::string only, row_id, json_out, report_dir, calibration = default_calibration, known_file, expected_file;
  std::string fail_on = "any", points_dir, joblist;
  bool quiet = false, write = false;
  po::options_description d("cohsim validate [options]");
  d.add_options()("help,h", "this help")("only", po::value(&only), "run only rows whose id starts with PREFIX")(
      "row", po::value(&row_id), "run only the row ID (and, for a derived row, the rows it is computed from)")(
      "json", po::value(&json_out), "write the table as JSON to FILE")(
      "report", po::value(&report_dir),
      "also write DIR/report.md and a self-contained DIR/report.html (parity plot, error per row, the parameters "
      "each row pins; docs/validation.md); the exit code is the same")(
      "calibration", po::value(&calibration), "calibration rows (default: data/calibration.json)")(
      "known-misses", po::value(&known_file),
      "rows known to miss, id -> reason (default: known-misses.json beside the calibration file)")(
      "expected", po::value(&expected_file),
      "expected predictions, the 1 % regression check (default: validate-expected.json beside the calibration file)")(
      "write-expected", po::bool_switch(&write),
      "after an intended model change: rewrite the expected predictions and the known-miss list from the rows run")(
      "fail-on", po::value(&fail_on),
      "any (default): exit 1 on MISS, NOW FITS, MOVED or ERROR; new-misses: only on MISS or ERROR (a CI that "
      "tracks the model's misses, not its drift)")(
      "points", po::value(&points_dir),
      "read each row's run from DIR when it is there (made by this build from the same input files), and keep "
      "the runs made here in it")(
      "emit-joblist", po::value(&joblist),
      "with --points DIR: write the runs not in DIR as job lines to FILE (one `cohsim run` each, for GNU parallel "
      "or scripts/sweep.py --joblist FILE --backend slurm) instead of running them; then the same command with "
      "--points DIR judges the rows")(
      "quiet,q", po::bool_switch(&quiet), "print only the summary line");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  apply_verbosity(quiet, false);  // -q: only the summary line, no model's warnings either
  if (vm.count("help")) {
    std::cout
        << "Runs every calibration row and prints predicted vs measured. A row is 'fitted' when a platform\n"
           "parameter's source names it (the parameters it pins are listed), 'identity' when the fitted rows\n"
           "fix it between them (the difference of two, or a part of a fitted difference whose other part\n"
           "is fitted: no test of the model), else 'predicted'\n"
           "('unknown': not run). Statuses:\n"
           "  ok          holds its tolerance (a \"bound\": \"at_least\" row: the prediction is at least measured)\n"
           "              and is within 1 % of its expected prediction\n"
           "  known miss  misses, and the known-miss file says why (passes)\n"
           "  MISS        misses its tolerance and is not a known miss\n"
           "  NOW FITS    a known miss that holds: remove it from the known-miss file\n"
           "  MOVED       holds, but moved more than 1 % from its expected prediction: after an intended change\n"
           "              run `cohsim validate --write-expected`\n"
           "  ERROR       cannot be judged: the scenario, the metric or a derived row's part is missing, the\n"
           "              run failed, or the row lacks its expected prediction or its known-miss reason\n"
           "Exit 1 if any row is MISS, NOW FITS, MOVED or ERROR (--fail-on new-misses: MISS or ERROR); 2 for a malformed file or option, or a --report\n"
           "DIR that is a file or cannot be written (found before any row runs). --report does not change the exit\n"
           "code; only a failure of its plotting script (scripts/report.py) makes it 1, and then no report is\n"
           "left in DIR.\n\n"
        << d << "\n";
    return kOk;
  }
  if (fail_on != "any" && fail_on != "new-misses")
    throw config::ConfigError("--fail-on", fail_on, "expected any or new-misses");
  if (!joblist.empty()) {
    if (points_dir.empty())
      throw config::ConfigError("--emit-joblist", joblist, "needs --points DIR: the folder the jobs write their runs to");
    if (!json_out.empty() || !report_dir.empty() || write)
      throw config::ConfigError("--emit-joblist", joblist,
                                "judges no row: give --json/--report/--write-expected to the collecting command "
                                "(--points alone)");
  }
  const std::string dir = std::filesystem::path(calibration).parent_path().string();
  Judging j;
  j.known_misses_file = known_file.empty() ? (dir.empty() ? "" : dir + "/") + "known-misses.json" : known_file;
  j.expected_file = expected_file.empty() ? (dir.empty() ? "" : dir + "/") + "validate-expected.json" : expected_file;
  j.regenerate = "cohsim validate --write-expected";
  if (calibration != default_calibration) j.regenerate += " --calibration " + calibration;
  if (!known_file.empty()) j.regenerate += " --known-misses " + known_file;
  if (!expected_file.empty()) j.regenerate += " --expected " + expected_file;
  const std::vector<CalibrationRow> rows = read_calibration(calibration);
  std::optional<ReportStaging> report;  // a bad DIR fails now, before the rows run
  if (!report_dir.empty()) report.emplace(report_dir);
  check_output_file("--json", json_out, {calibration, j.known_misses_file, j.expected_file});
  j.known_misses = read_known_misses(j.known_misses_file);
  j.expected = read_expected(j.expected_file);

  // The rows asked for, and the parts of the derived ones among them.
  Predictor predictor(rows, calibration);
  std::optional<PointStore> points;
  if (!points_dir.empty()) predictor.use_points(&points.emplace(points_dir, joblist));
  std::set<std::string> wanted;
  std::vector<std::string> todo;
  for (const auto& r : rows)
    if ((only.empty() || r.id.rfind(only, 0) == 0) && (row_id.empty() || r.id == row_id)) todo.push_back(r.id);
  if (todo.empty())
    throw config::ConfigError(calibration, "rows",
                              row_id.empty() ? fmt::format("no row id starts with '{}' (--only)", only)
                                             : fmt::format("no row '{}' (--row)", row_id));
  while (!todo.empty()) {
    const std::string id = todo.back();
    todo.pop_back();
    const CalibrationRow* r = predictor.find(id);
    if (r == nullptr || !wanted.insert(id).second) continue;
    if (r->op != 0) todo.insert(todo.end(), {r->part_a, r->part_b});
  }
  std::vector<const CalibrationRow*> selected;
  for (const auto& r : rows)
    if (wanted.count(r.id)) selected.push_back(&r);
  const bool every_row = selected.size() == rows.size();
  if (points && points->emitting()) {
    // A row that cannot run (its scenario missing, a bad setting) gets no job line: an ERROR now, not later.
    int errors = 0;
    for (const CalibrationRow* r : selected)
      if (const Prediction& p = predictor.predict(r->id);
          !p.error.empty() && p.error.find(kNotRunYet) == std::string::npos && r->op == 0) {
        ++errors;
        std::cout << fmt::format("ERROR {}: {}\n", r->id, p.error);
      }
    points->write_joblist();
    std::cout << points->joblist_written("validate");
    return errors > 0 ? kCheckFailed : kOk;
  }

  if (write) {
    for (const CalibrationRow* r : selected)
      if (const Prediction& p = predictor.predict(r->id); !p.error.empty()) {
        std::cout << row_line(*r, judge(*r, p, j, predictor.rows()));
        std::cout << fmt::format("validate: nothing written: {} has no prediction\n", r->id);
        return kCheckFailed;
      }
    write_expected(selected, predictor, j, every_row);
    j.known_misses = read_known_misses(j.known_misses_file);
    j.expected = read_expected(j.expected_file);
  }
  if (!j.expected && !quiet)
    std::cout << fmt::format("no {}: the 1 % regression check is off (`{}` writes it)\n", j.expected_file,
                             j.regenerate);

  std::map<std::string, int> count;
  json out = json::array();
  ValidationReport shown;
  for (const CalibrationRow* r : selected) {
    const Verdict v = judge(*r, predictor.predict(r->id), j, predictor.rows());
    ++count[v.status];
    out.push_back(row_json(*r, v));
    if (report) shown.rows.push_back({r, v, row_platform_file(r->id, predictor)});
    if (!quiet) {
      std::cout << row_line(*r, v);
      std::cout.flush();
    }
  }
  // Entries that name no row hide a renamed or removed row: every row run, none may be left.
  if (every_row) {
    auto stale = [&](const std::string& file, const std::string& id) {
      ++count["ERROR"];
      std::cout << fmt::format("ERROR {}: '{}' names no row of {} (remove it, or regenerate with `{}`)\n", file, id,
                               calibration, j.regenerate);
    };
    for (const auto& [id, reason] : j.known_misses)
      if (predictor.find(id) == nullptr) stale(j.known_misses_file, id);
    if (j.expected)
      for (const auto& [id, value] : *j.expected)
        if (predictor.find(id) == nullptr) stale(j.expected_file, id);
  }
  const std::string summary =
      fmt::format("validate: {} ok, {} known misses, {} missed, {} moved, {} now fit, {} errors", count["ok"],
                  count["known miss"], count["MISS"], count["MOVED"], count["NOW FITS"], count["ERROR"]);
  std::cout << summary << "\n";
  if (points && !quiet) std::cerr << points->summary("validate");
  if (!json_out.empty())
    write_file_atomically(json_out,
                          json{{"rows", out}}.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  const int failed =
      count["MISS"] + count["ERROR"] + (fail_on == "any" ? count["MOVED"] + count["NOW FITS"] : 0);
  const int exit_code = failed > 0 ? kCheckFailed : kOk;
  if (!report) return exit_code;
  for (const auto& r : rows) shown.calibration_rows.push_back(r.id);
  shown.calibration_file = calibration == default_calibration ? "data/calibration.json" : calibration;
  shown.selection = !row_id.empty() ? "--row " + row_id : only.empty() ? "" : "--only " + only;
  shown.summary = summary;
  shown.exit_code = exit_code;
  if (!write_validation_report(*report, shown)) return kCheckFailed;
  if (!quiet) std::cout << fmt::format("report: {}/report.md and report.html\n", report_dir);
  return exit_code;
}

}  // namespace cohsim::cli
