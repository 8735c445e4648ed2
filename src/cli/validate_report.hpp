// `cohsim validate --report DIR`: report.md (80 columns: every row's
// measurement, prediction, error, tolerance and status, grouped by platform,
// the parameters each row pins and the estimates no row pins) and, through
// scripts/report.py, a self-contained report.html with the parity plot and
// the error of every row against its tolerance. docs/validation.md describes it.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "report_output.hpp"

namespace cohsim::cli {

/// What validate concluded about one row.
struct Verdict {
  std::string status;  ///< ok | known miss | MISS | NOW FITS | MOVED | ERROR
  double predicted = NAN, error_pct = NAN, expected = NAN, moved_pct = NAN;
  std::string kind;               ///< fitted | identity | predicted | unknown (no run to tell)
  std::vector<std::string> pins;  ///< the platform parameters fitted to this row; empty: the row is a prediction
  std::string note;               ///< why, for every status but ok
};

/// One row of a validation report.
struct ReportRow {
  const CalibrationRow* row = nullptr;
  Verdict verdict;
  std::string platform_file;  ///< the platform the row runs on; empty when its scenario cannot be loaded
};

/// Everything a validation report shows.
struct ValidationReport {
  std::vector<ReportRow> rows;                ///< the rows run, in calibration-file order
  std::vector<std::string> calibration_rows;  ///< every row id of the calibration file (what a parameter may pin)
  std::string calibration_file;               ///< as given
  std::string selection;                      ///< "--only PREFIX", "--row ID" or empty (every row)
  std::string summary;                        ///< validate's summary line
  int exit_code = 0;                          ///< validate's exit code
};

/// The platform file row `id` runs on (a derived row: its first part's); empty when it cannot be told.
std::string row_platform_file(const std::string& id, const Predictor& predictor);
/// `value` with 4 significant digits and its unit, in the one format of the report ("95.12 ns", "345.6k/s").
std::string format_quantity(double value, const std::string& unit);
/// report.md: readable in 80 columns.
std::string validation_report_markdown(const ValidationReport& report);
/// The data of the report's plots (validate.json in the report directory).
nlohmann::json validation_report_json(const ValidationReport& report);
/// Writes report.md, validate.json, report.html and the plots into the report directory, all or nothing; false
/// when the plotting script failed (it said why, and nothing was written).
bool write_validation_report(ReportStaging& staging, const ValidationReport& report);

}  // namespace cohsim::cli
