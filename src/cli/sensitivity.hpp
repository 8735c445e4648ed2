// Sensitivity: every uncertain input of a scenario (platform estimates,
// calibrated platform numbers, workload estimates) run at the two ends of its
// range, and every structural choice at each of its alternative mechanisms,
// one at a time, with optional screening of long scenarios.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace cohsim::cli {

class PointStore;

/// Percent change of `value` from `base`; nullopt (not defined) when `base` is 0.
std::optional<double> pct(double value, double base);
/// A percent change as JSON: the number, or null when it is not defined.
nlohmann::json pct_json(std::optional<double> p);

/// Why an input is uncertain: a number's range (estimated, calibrated) or another plausible mechanism (structural).
enum class InputKind { estimate, calibrated, workload_estimate, structural };
/// "estimate", "calibrated", "workload estimate" or "structural".
const char* input_kind_name(InputKind kind);

/// Where the rows of a calibrated parameter reach their tolerance ends.
struct CalibratedRange {
  std::string platform;                ///< the platform file
  std::string param;                   ///< dotted path, e.g. "platform.coherence.directory_latency"
  std::string nominal;                 ///< the value as written
  std::vector<std::string> rows;       ///< the calibration rows that pin it (and that run on this platform)
  nlohmann::json low, high;            ///< the ends within tolerance (config notation); null when not varied
  nlohmann::json low_outside, high_outside;  ///< the nearest values found outside; null when a declared bound was reached
  int runs = 0;                        ///< scenario runs the search took
  std::string note;                    ///< why it is not varied, or which bound it reached
};

/// How calibrated ranges are found.
struct RangeSearchOptions {
  std::string calibration_file;                        ///< data/calibration.json or --calibration
  std::vector<scenario::Override> platform_overrides;  ///< the study's platform.* --set, applied to the rows too
  double precision = 0.01;                             ///< bisection stops below this fraction of the nominal value
};

/// A file's canonical path (as given when it cannot be resolved), so two names of one platform compare equal.
std::string canonical(const std::string& path);

/// The method calibrated ranges are found with, as printed and written to JSON.
extern const char* const kCalibratedRangeMethod;

/// Finds, for calibrated parameter `p` of `platform_file`, the values at which the calibration rows it names reach
/// their tolerance ends (every other parameter at nominal), within its declared min/max: steps outward from the
/// nominal value (5 %, 10 %, 20 %, ...) until a row leaves its tolerance, then bisection.
CalibratedRange calibrated_range(const config::Provenance& p, const std::string& platform_file,
                                 const RangeSearchOptions& o);

/// What a sensitivity study runs and how.
struct SensitivityOptions {
  std::string scenario;
  std::vector<std::string> variants;           ///< baseline first
  std::vector<scenario::Override> overrides;   ///< the user's --set
  std::optional<std::uint64_t> seed;
  std::string metric;                          ///< of the per-input table; "" = the workload's first
  std::vector<scenario::Override> screen_sets; ///< short-run overrides; empty = every input at full length
  int full_runs = 5;                           ///< with screening: inputs re-run at full length
  std::string calibration_file;
  std::string ranges_from;                     ///< an earlier --json output whose calibrated ranges are reused
  /// Whether a calibrated input with no reusable range is searched (false: it is not varied, and says so).
  bool search_ranges = true;
  bool quiet = false;
  /// --points DIR: each run is read from the folder when it is there (and written to it when run here);
  /// with --emit-joblist the missing ones become job lines instead.
  PointStore* points = nullptr;
};

/// Runs the study around `nominal` (one full run per variant) and adds "sensitivity", "varied_inputs",
/// "calibrated_ranges", "screening" and "difference_range" to `doc`; prints the tables. Returns the
/// number of inputs whose runs failed (each is reported, the others still run).
int run_sensitivity(const SensitivityOptions& o, const std::vector<RunOutput>& nominal, nlohmann::json& doc);

}  // namespace cohsim::cli
