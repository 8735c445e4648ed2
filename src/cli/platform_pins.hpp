// The parameters each calibration row pins, read from the platform files
// themselves: every {"value", "source"} leaf is a parameter (its dotted key
// path), and a "calibration: ..." source names the rows it was fitted to. So
// the mapping stays true whenever a platform file is refitted.
#pragma once

#include <string>
#include <vector>

namespace cohsim::cli {

/// One sourced number of a platform file.
struct PlatformParameter {
  std::string path;               ///< dotted path as --set takes it, e.g. "platform.interconnect.die.latency"
  std::string value;              ///< as written ("5ns", 2)
  std::string source;             ///< the "source" text
  std::string range;              ///< "low .. high" as written; empty without a "range"
  bool estimate = false;          ///< its source starts with "estimate" or it declares a plausible range
  std::vector<std::string> rows;  ///< the calibration row ids its "calibration: ..." source names
};

/// Every sourced number of a platform file, in key order (bad JSON: a ConfigError naming the file).
std::vector<PlatformParameter> platform_parameters(const std::string& platform_file);

}  // namespace cohsim::cli
