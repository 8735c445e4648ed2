#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "provenance.hpp"
#include "cohsim/sim/log.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::cli {

namespace {

struct Command {
  int (*fn)(const std::vector<std::string>&);
  const char* summary;
};

int cmd_version(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: cohsim version [--json]\n\nPrints the version and build id; with --json the build's version, "
                 "git commit, whether the tree was dirty and build id (what a results document records).\n";
    return kOk;
  }
  if (args.size() == 1 && args[0] == "--json") {  // what sweep.py compares a point's build_id with
    std::cout << build_info().dump(1) << "\n";
    return kOk;
  }
  if (!args.empty()) throw boost::program_options::error("usage: cohsim version [--json]");
  std::cout << "cohsim " << COHSIM_VERSION << " (build " << build_info()["build_id"].get<std::string>() << ")\n";
  return kOk;
}

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> c = {
      {"run", {cmd_run, "run one scenario variant: cohsim run configs/scenarios/X.json [--variant V] [--set K=V]... [--json F]"}},
      {"compare", {cmd_compare, "run every variant with the same parameters and seed; one table (--report DIR for a report)"}},
      {"validate", {cmd_validate, "predicted vs measured for every calibration row (data/calibration.json)"}},
      {"topo", {cmd_topo, "show a platform: tree, hop paths and latencies, nodes, parameters with sources"}},
      {"params", {cmd_params, "every workload and platform parameter of a scenario: value, kind, bounds, range, source, doc"}},
      {"schema", {cmd_schema, "export the JSON Schema of platform or scenario files (cohsim schema platform|scenario)"}},
      {"selftest", {cmd_selftest, "random coherence tester: cohsim selftest coherence [--cpus N] [--ops M] [--seed S]"}},
      {"litmus", {cmd_litmus, "run herd7 litmus tests on the simulated cores: cohsim litmus [--kinds F] [--json F] PATH..."}},
      {"rerun", {cmd_rerun, "run again what a run --json results file records; exit 1 when a metric differs"}},
      {"version", {cmd_version, "the version and build id: cohsim version [--json]"}},
      {"sensitivity", {cmd_sensitivity, "re-run a scenario with each uncertain input (estimate, calibrated, workload estimate) at its range ends"}},
  };
  return c;
}

/// The message of a command-line error. Boost.Program_options fills its
/// %option%, %value%, ... placeholders by find-and-replace until none is left,
/// so a user's word that itself holds such a token never finishes (fuzz_cli
/// found `--t%canonical_option%`). Each '%' the user typed is shown as the
/// full-width U+FF05 instead, which reads the same and forms no token.
/// Reaches the protected m_substitutions of error_with_option_name (checked
/// against Boost 1.74; a Boost that renames it fails to compile, not silently).
std::string command_line_message(boost::program_options::error& e) {
  namespace po = boost::program_options;
  struct Substitutions : po::error_with_option_name {
    using po::error_with_option_name::m_substitutions;
  };
  if (auto* named = dynamic_cast<po::error_with_option_name*>(&e)) {
    const auto words = named->*(&Substitutions::m_substitutions);  // a copy: set_substitute changes it
    for (const auto& [key, word] : words) {
      std::string shown;
      for (char c : word) shown += c == '%' ? std::string("\uFF05") : std::string(1, c);
      if (shown != word) named->set_substitute(key, shown);
    }
  }
  return e.what();
}

void print_help() {
  std::cout << "cohsim " << COHSIM_VERSION
            << ": a cycle-approximate multicore coherence and interconnect simulator\n\n"
               "usage: cohsim COMMAND [options]      (cohsim help COMMAND for its options)\n\ncommands:\n";
  for (const auto& [name, c] : commands()) std::cout << fmt::format("  {:<12} {}\n", name, c.summary);
  std::cout << "\nexit codes: 0 success, 1 a failed check (validate, selftest, litmus UNSOUND), 2 bad input\n";
}

}  // namespace

namespace {

int run_command(std::vector<std::string> args) {
  try {
    if (args.empty() || args[0] == "-h" || args[0] == "--help") {
      print_help();
      return args.empty() ? kBadInput : kOk;
    }
    if (args[0] == "--version") return cmd_version(std::vector<std::string>(args.begin() + 1, args.end()));
    if (args[0] == "help") {
      if (args.size() == 1) {
        print_help();
        return kOk;
      }
      if (args[1] == "help") {
        std::cout << "usage: cohsim help [COMMAND]\n\nWithout COMMAND: the commands and exit codes. With one: that "
                     "command's options (the same as cohsim COMMAND --help).\n";
        return kOk;
      }
      auto it = commands().find(args[1]);
      if (it == commands().end())
        throw boost::program_options::error("unknown command '" + args[1] + "' (see cohsim --help)");
      return it->second.fn({"--help"});
    }
    auto it = commands().find(args[0]);
    if (it == commands().end()) throw boost::program_options::error("unknown command '" + args[0] + "' (see cohsim --help)");
    return it->second.fn(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const config::ConfigError& e) {
    std::cerr << "cohsim: error: " << e.what() << "\n";
    return kBadInput;
  } catch (boost::program_options::error& e) {
    std::cerr << "cohsim: error: " << command_line_message(e) << "\n";
    return kBadInput;
  } catch (const sim::WatchdogError& e) {
    std::cerr << "cohsim: the simulation cannot make progress\n" << e.what() << "\n";
    return kCheckFailed;
  } catch (const std::exception& e) {
    std::cerr << "cohsim: internal error: " << e.what() << "\n";
    return kCheckFailed;
  }
}

}  // namespace

int main_entry(int argc, char** argv) {
  record_command_line(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  route_default_logger();
  const int status = run_command(std::vector<std::string>(argv + 1, argv + argc));
  std::cerr << repeated_log_summary();
  return status;
}

}  // namespace cohsim::cli
