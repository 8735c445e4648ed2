// A litmus command's work list: PATH arguments expanded into test files, the
// kinds that apply, and one test file parsed, run on its platform and judged.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cohsim/litmus/report.hpp"
#include "cohsim/scenario/machine.hpp"

namespace cohsim::litmus {

/// Test files named by `paths`: a file as is, a directory's *.litmus files
/// (sorted), an `@list` file's entries (relative to the list; `#` comments).
/// `kinds_files` receives the kinds.txt of each directory, test file's folder or list's directory, and
/// `file_kinds` (when given), for each test file, the one of those that judges it ("" for none).
/// Throws ParseError for a path that does not exist.
std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<std::string>& kinds_files,
                                      std::vector<std::string>* file_kinds = nullptr);

/// How to run the tests.
struct SuiteOptions {
  std::optional<std::string> platform;  ///< every test on this platform; else by the test's arch:
  std::string aarch64_platform;         ///< the default for AArch64 tests
  std::string x86_platform;             ///< the default for x86 tests
  std::uint64_t runs = 1000;
  std::uint64_t seed = 1;
  std::vector<int> cpus;                ///< --cpus: thread i runs on cpus[i]; empty: spread over the cores
  Kinds kinds;                          ///< empty: no verdicts
};

/// Parses, runs and judges one test file. Malformed text, a platform that does
/// not fit the test, or a run that fails give status error; a feature outside
/// the subset gives status unsupported. Platforms are loaded once into `platforms`.
Entry run_file(const std::string& file, const SuiteOptions& options, std::map<std::string, scenario::PlatformDoc>& platforms);

}  // namespace cohsim::litmus
