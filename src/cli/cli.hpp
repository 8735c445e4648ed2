// The command-line interface: one function per command, sharing output helpers.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "cohsim/scenario/scenario.hpp"

namespace cohsim::cli {

/// Exit codes: 0 success, 1 a failed check, 2 bad input.
inline constexpr int kOk = 0, kCheckFailed = 1, kBadInput = 2;

int cmd_run(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_topo(const std::vector<std::string>& args);
int cmd_schema(const std::vector<std::string>& args);
int cmd_selftest(const std::vector<std::string>& args);
int cmd_sensitivity(const std::vector<std::string>& args);
int cmd_litmus(const std::vector<std::string>& args);
int cmd_params(const std::vector<std::string>& args);
/// Dispatches argv; catches every error and maps it to an exit code.
int main_entry(int argc, char** argv);

/// One finished run: its results document and the human summary.
struct RunOutput {
  nlohmann::json doc;
  scenario::Results results;
  /// The platform numbers the run read, with their sources (validate names the rows they were fitted to).
  std::vector<config::Provenance> provenance;
};
/// Where and what to trace (cohsim run --trace FILE --trace-window FROM:TO).
struct TraceOptions {
  std::string file;
  sim::Tick from = 0, to = sim::kNever;
};
/// Loads, validates and runs one scenario variant ("" = the baseline's values, recorded as no variant);
/// a non-empty `platform_file` replaces the scenario's platform.
RunOutput run_scenario(const std::string& path, const std::string& variant,
                       const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed,
                       bool progress, const TraceOptions* trace = nullptr, const std::string& platform_file = "");
/// Throws ConfigError when a --set key is one that `variants` (the ones run) set: such a --set
/// would quietly change what the variant means. `allow` (--override-variant) permits it.
void check_sets_keep_variants(const scenario::LoadedScenario& s, const std::vector<std::string>& variants,
                              const std::vector<scenario::Override>& overrides, bool allow);
/// Parses `args` against `visible` plus one positional argument stored in
/// `positional`. On --help prints `what` and the options and returns nullopt.
std::optional<boost::program_options::variables_map> parse_command_line(
    const std::vector<std::string>& args, const boost::program_options::options_description& visible,
    std::string& positional, const std::string& what);
/// A 64-bit unsigned option value (a seed): decimal digits only. (Boost
/// reads "-1" for a std::uint64_t as 2^64 - 1, silently.)
struct Unsigned64 {
  std::uint64_t value = 0;
};
/// Boost.Program_options' parser for Unsigned64 (found by argument-dependent
/// look-up): anything but digits that fit is an invalid value (exit 2).
void validate(boost::any& out, const std::vector<std::string>& values, Unsigned64*, int);
/// Sets the log level for -q/-v (the same for every command); both at once is bad input.
void apply_verbosity(bool quiet, bool verbose);
/// Writes `text` to `path` atomically (temporary file, then rename).
void write_file_atomically(const std::string& path, const std::string& text);
/// Prints metrics as an aligned table.
std::string format_metrics(const scenario::Results& r);
/// The repository root (for data/ and scripts/), from the binary's build-time source dir.
std::string source_dir();

}  // namespace cohsim::cli
