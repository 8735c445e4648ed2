// cohsim litmus: herd7-format litmus tests run on the simulated cores.
#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>
#include <unistd.h>

#include "cli.hpp"
#include "cohsim/litmus/suite.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;

namespace {
/// --cpus "0,48" or "0-3,48": CPU numbers in the order the threads take them (checked against the
/// platform when a test runs).
std::vector<int> parse_litmus_cpus(const std::string& text) {
  std::string bad;
  const auto listed = config::parse_cpu_ranges(text, bad);
  if (!listed) throw config::ConfigError("--cpus", "", fmt::format("cannot read '{}' as a CPU or range (e.g. 0,48 or 0-3)", bad));
  std::vector<int> cpus;
  for (long long c : *listed) {
    if (const auto why = config::cpu_list_refusal(cpus, c, /*cpu_count=*/-1)) throw config::ConfigError("--cpus", "", *why);
    cpus.push_back(static_cast<int>(c));
  }
  if (cpus.empty()) throw config::ConfigError("--cpus", "", "the CPU list is empty");
  return cpus;
}
}  // namespace

int cmd_litmus(const std::vector<std::string>& args) {
  litmus::SuiteOptions options;
  options.aarch64_platform = source_dir() + "/configs/platforms/kunpeng920.json";
  options.x86_platform = source_dir() + "/configs/platforms/skylake-sp-2s.json";
  std::string platform, kinds_file, json_file, cpus;
  Unsigned64 seed;
  std::vector<std::string> paths;
  po::options_description d("cohsim litmus [options] PATH...");
  d.add_options()("help,h", "this help")(
      "platform", po::value(&platform),
      "platform file for every test (default: configs/platforms/kunpeng920.json for AArch64 tests, "
      "skylake-sp-2s.json for x86 tests)")("runs", whole(&options.runs)->default_value(Unsigned64{1000}, "1000"), "runs per test")(
      "seed", po::value(&seed)->default_value(Unsigned64{1}, "1"), "seed of the named random streams litmus.home, litmus.start, litmus.jitter, litmus.noise, litmus.cache, litmus.branch")(
      "cpus", po::value(&cpus),
      "thread i of each test on the i-th CPU of this list (e.g. 0,48 or 0-3); default: spread over the cores "
      "(kunpeng920: 0,48 for two threads)")(
      "kinds", po::value(&kinds_file),
      "herd kinds file (NAME Allowed|Forbidden|Required per line) for every test; default: each test's "
      "folder's kinds.txt (an @list's: the list's folder's)")("json", po::value(&json_file), "write the results as JSON (atomically)");
  po::options_description hidden;
  hidden.add_options()("paths", po::value(&paths));
  po::options_description all;
  all.add(d).add(hidden);
  po::positional_options_description pos;
  pos.add("paths", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  options.seed = seed.value;
  if (vm.count("help")) {
    std::cout << "Runs herd7-format litmus tests (AArch64; x86 as X86 or X86_64) on the simulated cores of a\n"
                 "platform: each test N times on fresh addresses, its threads spread over the machine's cores,\n"
                 "with random start offsets and per-access timing jitter. Prints the outcome histogram, the\n"
                 "Observation line herd prints and, with kinds, a verdict per test: ok, UNSOUND (a forbidden\n"
                 "outcome witnessed: exit 1) or not-seen (an allowed outcome never witnessed). PATH is a .litmus\n"
                 "file, a directory (its *.litmus files) or an @list. Bad input exits 2; a run with no supported\n"
                 "test exits 1. See docs/memory-model.md.\n\n"
              << d << "\n";
    return kOk;
  }
  if (paths.empty()) throw po::error("cohsim litmus needs at least one PATH (a .litmus file, a directory or an @list)");
  if (options.runs < 1) throw config::ConfigError("--runs", "", fmt::format("{}: must be at least 1", options.runs));
  if (!platform.empty()) options.platform = platform;
  check_output_file("--json", json_file, paths);
  if (vm.count("cpus")) options.cpus = parse_litmus_cpus(cpus);
  try {
    std::vector<std::string> kinds_files, file_kinds;
    const auto files = litmus::expand_paths(paths, kinds_files, &file_kinds);
    // Each test is judged by --kinds, else by the kinds.txt of its own folder (or @list's): an x86 MP and
    // an AArch64 MP run together each get their own architecture's verdict.
    std::map<std::string, litmus::SuiteOptions> judged_by;  // kinds file ("": none) -> the options with its kinds
    for (const auto& k : kinds_file.empty() ? kinds_files : std::vector<std::string>{kinds_file}) {
      judged_by[k] = options;
      judged_by[k].kinds = litmus::read_kinds(k);
    }
    judged_by[""] = options;
    auto options_for = [&](std::size_t i) -> const litmus::SuiteOptions& {
      return judged_by.at(!kinds_file.empty() ? kinds_file : file_kinds[i]);
    };
    std::map<std::string, scenario::PlatformDoc> platforms;
    if (options.platform) platforms.emplace(*options.platform, scenario::load_platform(*options.platform));  // bad: exit 2 now
    std::vector<litmus::Entry> entries;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (files.size() > 1 && (tty || i % 25 == 0))
        std::cerr << fmt::format("{}litmus: [{}/{}] {}{}", tty ? "\r" : "", i + 1, files.size(), files[i], tty ? "\033[K" : "\n");
      entries.push_back(litmus::run_file(files[i], options_for(i), platforms));
      if (entries.back().status == litmus::Entry::Status::error && tty) std::cerr << "\n";
      if (entries.back().status == litmus::Entry::Status::error) std::cerr << "cohsim: error: " << entries.back().reason << "\n";
      std::cout << litmus::format_entry(entries.back()) << std::flush;
    }
    if (files.size() > 1 && tty) std::cerr << "\r\033[K";
    std::cout << litmus::format_summary(entries);
    if (!json_file.empty()) write_file_atomically(json_file, litmus::to_json(entries).dump(1) + "\n");
    const litmus::Summary summary = litmus::summarize(entries);
    if (summary.errors > 0) return kBadInput;
    if (summary.supported() == 0) {  // nothing judged is not a pass
      std::cerr << "cohsim: error: no test was run: every one is unsupported\n";
      return kCheckFailed;
    }
    return summary.unsound > 0 ? kCheckFailed : kOk;
  } catch (const litmus::ParseError& e) {
    std::cerr << "cohsim: error: " << e.what() << "\n";
    return kBadInput;
  }
}

}  // namespace cohsim::cli
