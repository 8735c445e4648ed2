// The command-line interface: one function per command, sharing output helpers.
#pragma once

#include <charconv>
#include <limits>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>
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
/// The same for a scenario already loaded from `path` (with that variant and those overrides).
RunOutput run_scenario(const std::string& path, scenario::LoadedScenario s, const std::string& variant,
                       const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed,
                       bool progress, const TraceOptions* trace = nullptr);
/// The platform numbers a run of the scenario variant with these overrides reads, with their sources,
/// from loading it (nothing runs).
std::vector<config::Provenance> scenario_provenance(const std::string& path, const std::string& variant,
                                                    const std::vector<scenario::Override>& overrides);
/// Throws ConfigError when a --set key is one that `variants` (the ones run) set: such a --set
/// would quietly change what the variant means. `allow` (--override-variant) permits it.
void check_sets_keep_variants(const scenario::LoadedScenario& s, const std::vector<std::string>& variants,
                              const std::vector<scenario::Override>& overrides, bool allow);
/// Parses `args` against `visible` plus one positional argument stored in
/// `positional`. On --help prints `what` and the options and returns nullopt.
std::optional<boost::program_options::variables_map> parse_command_line(
    const std::vector<std::string>& args, const boost::program_options::options_description& visible,
    std::string& positional, const std::string& what);
/// A whole-number option value of type T: decimal digits, with a leading '-'
/// for a signed T, that fit in T. (Boost reads "-1" for a std::uint64_t as
/// 2^64 - 1, silently, and calls a number too big for an int only
/// "invalid".) Ranges a command needs (at least 1 CPU...) it checks itself.
template <class T>
struct Whole {
  T value{};
};
using Unsigned64 = Whole<std::uint64_t>;
/// Boost.Program_options' parser for Whole<T> (found by argument-dependent
/// look-up): anything else is bad input (exit 2) whose message says what a
/// value must be.
template <class T>
void validate(boost::any& out, const std::vector<std::string>& values, Whole<T>*, int) {
  namespace po = boost::program_options;
  po::validators::check_first_occurrence(out);
  const std::string& s = po::validators::get_single_string(values);
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);  // no '+', no space
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) {
    po::error_with_option_name e(fmt::format("the argument ('%value%') for option '%canonical_option%' is invalid: "
                                             "expected decimal digits{} from {} to {}",
                                             std::is_signed_v<T> ? " (with '-' for a negative number)" : "",
                                             std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    e.set_substitute("value", s);
    throw e;
  }
  out = Whole<T>{v};
}
/// An option whose value, a whole number (see Whole), is stored in *target.
template <class T>
boost::program_options::typed_value<Whole<T>>* whole(T* target) {
  return boost::program_options::value<Whole<T>>()->notifier([target](const Whole<T>& w) { *target = w.value; });
}
/// Sets the log level for -q/-v (the same for every command); both at once is bad input.
void apply_verbosity(bool quiet, bool verbose);
/// Writes `text` to `path` atomically (temporary file, then rename).
void write_file_atomically(const std::string& path, const std::string& text);
/// Bad input (a ConfigError, exit 2) before any run when output `path` of `option` cannot be written: a
/// directory, a missing or read-only directory, or one of the run's `inputs`. An empty path passes.
void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs = {});
/// Every input file read so far (scenarios, platforms and their includes), as read.
std::vector<std::string> files_read();
/// Prints metrics as an aligned table.
std::string format_metrics(const scenario::Results& r);
/// The repository root (for data/ and scripts/), from the binary's build-time source dir.
std::string source_dir();

}  // namespace cohsim::cli
