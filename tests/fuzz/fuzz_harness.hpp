// What one fuzz input does, shared by the libFuzzer targets (tests/fuzz/
// fuzz_*.cpp) and the Catch2 test that replays tests/regression/ inputs.
//
// Each function feeds untrusted bytes to one entry point and lets only the
// expected rejection through: a ConfigError (bad config, exit 2) or a command
// line error. Any other exception, a crash or a sanitizer report is a bug.
// Nothing here runs simulated time, and files are written only inside the
// sandbox directory made by FuzzSandbox.
#pragma once

#include <boost/program_options/errors.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/scenario/machine.hpp"
#include "cohsim/scenario/scenario.hpp"
#include "src/cli/cli.hpp"

namespace cohsim::fuzz {

/// A private temporary directory laid out like the repository's configs/:
/// sandbox/platforms -> the shipped platforms, sandbox/scenarios for inputs.
class FuzzSandbox {
 public:
  FuzzSandbox() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cohsim-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    std::filesystem::create_directory(root_ / "scenarios");
    const std::filesystem::path source = COHSIM_SOURCE_DIR;
    std::filesystem::create_directory_symlink(source / "configs" / "platforms", root_ / "platforms");
    std::filesystem::create_directory_symlink(source / "configs", root_ / "configs");
    std::filesystem::create_directory_symlink(source / "data", root_ / "data");
  }
  ~FuzzSandbox() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FuzzSandbox(const FuzzSandbox&) = delete;
  FuzzSandbox& operator=(const FuzzSandbox&) = delete;
  /// The sandbox directory.
  const std::filesystem::path& root() const { return root_; }
  /// Writes `bytes` to sandbox/<dir>/<name> ("" = the sandbox itself) and returns the path.
  std::string write(const std::string& dir, const std::string& name, std::string_view bytes) const {
    std::filesystem::path p = (dir.empty() ? root_ : root_ / dir) / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }

 private:
  std::filesystem::path root_;
};

/// Platform loader: the bytes are a platform file in the sandbox (so
/// "include": "platforms/kunpeng920.json" reaches a shipped one); builds the Machine.
/// Returns true when the platform was accepted, false on a ConfigError.
inline bool load_platform_bytes(const FuzzSandbox& box, std::string_view bytes) {
  const std::string path = box.write("", "platform.json", bytes);
  try {
    config::Registry registry;
    scenario::Machine machine(scenario::load_platform(path), 1, registry);
    machine.check_platform_fully_read();
    return true;
  } catch (const config::ConfigError&) {
    return false;
  }
}

/// Splits "SCENARIO JSON\n--set K=V\n--set K=V..." into the JSON and the overrides.
inline std::pair<std::string_view, std::vector<std::string>> split_scenario_input(std::string_view bytes) {
  static constexpr std::string_view kMarker = "\n--set ";
  std::size_t at = bytes.find(kMarker);
  std::string_view json_part = bytes.substr(0, at);
  std::vector<std::string> sets;
  while (at != std::string_view::npos) {
    std::size_t start = at + kMarker.size();
    at = bytes.find(kMarker, start);
    sets.emplace_back(bytes.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
  }
  return {json_part, sets};
}

/// Scenario loader with --set overrides, against the shipped platforms
/// ("platform": "../platforms/X.json"): loads, applies the variant and
/// overrides, builds the machine and the workload, checks every key was read.
/// Never runs simulated time. Returns true when the scenario was accepted.
inline bool load_scenario_bytes(const FuzzSandbox& box, std::string_view bytes) {
  auto [json_part, sets] = split_scenario_input(bytes);
  const std::string path = box.write("scenarios", "scenario.json", json_part);
  try {
    std::vector<scenario::Override> overrides;
    for (const auto& s : sets) overrides.push_back(scenario::parse_override(s));
    scenario::LoadedScenario loaded = scenario::load_scenario(path, "", overrides);
    for (const auto& variant : loaded.variants) scenario::load_scenario(path, variant, overrides);
    scenario::Run run(loaded, loaded.seed);
    return true;
  } catch (const config::ConfigError&) {
    return false;
  }
}

/// Turns fuzz bytes into a command line that cannot run a simulation or
/// write a file: tokens are the lines of the input; commands that simulate
/// (run, compare, selftest, sensitivity) are only asked for their help, and
/// validate keeps only -h/-q and is given --only with a prefix no row has.
inline std::vector<std::string> safe_argv(std::string_view bytes) {
  std::vector<std::string> tokens;
  std::size_t start = 0;
  while (start <= bytes.size() && tokens.size() < 16) {
    std::size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) nl = bytes.size();
    // argv entries are C strings: a token ends at its first NUL, as main() would see it.
    std::string_view token = bytes.substr(start, nl - start);
    tokens.emplace_back(token.substr(0, token.find('\0')));
    start = nl + 1;
  }
  if (!tokens.empty() && tokens.back().empty()) tokens.pop_back();
  std::vector<std::string> argv = {"cohsim"};
  if (tokens.empty()) return argv;
  const std::string& command = tokens[0];
  if (command == "run" || command == "compare" || command == "selftest" || command == "sensitivity")
    return {"cohsim", "help", command};
  if (command == "validate") {
    argv.push_back("validate");
    for (std::size_t i = 1; i < tokens.size(); ++i) {
      const std::string& t = tokens[i];
      bool flags_only = t.size() >= 2 && t[0] == '-' && t[1] != '-' &&
                        t.find_first_not_of("qh", 1) == std::string::npos;
      if (t == "--help" || t == "--quiet" || flags_only || (!t.empty() && t[0] != '-')) argv.push_back(t);
    }
    argv.push_back("--only");
    argv.push_back("no-such-row-prefix/");
    return argv;
  }
  argv.insert(argv.end(), tokens.begin(), tokens.end());
  return argv;
}

/// Command-line parser: cli::main_entry on safe_argv(bytes); returns its exit code.
inline int run_cli_bytes(std::string_view bytes) {
  std::vector<std::string> args = safe_argv(bytes);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return cli::main_entry(static_cast<int>(args.size()), argv.data());
}

}  // namespace cohsim::fuzz
