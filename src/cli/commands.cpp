#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "cli.hpp"
#include "cohsim/config/inputs_read.hpp"
#include "provenance.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

RunOutput finish_run(const std::string& path, const scenario::LoadedScenario& s, const std::string& named_variant,
                     scenario::Run& run, const scenario::Results& r, std::uint64_t used_seed,
                     const std::vector<scenario::Override>& overrides,
                     std::chrono::steady_clock::time_point wall0);

std::string source_dir() { return COHSIM_SOURCE_DIR; }

std::optional<po::variables_map> parse_command_line(const std::vector<std::string>& args,
                                                    const po::options_description& visible, std::string& positional,
                                                    const std::string& what) {
  po::options_description hidden;
  hidden.add_options()("positional", po::value(&positional));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("positional", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << what << "\n\n" << visible << "\n";
    return std::nullopt;
  }
  return vm;
}

namespace {
/// A progress line on a terminal: simulated time, host rate, time left; from
/// one second of host time on (a shorter run prints none), twice a second.
void install_progress_line(sim::Simulator& sim, std::chrono::steady_clock::time_point wall0) {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(wall0);
  sim.set_progress_hook([&sim, last, wall0] {
    auto now = std::chrono::steady_clock::now();
    if (now - wall0 < std::chrono::seconds(1) || now - *last < std::chrono::milliseconds(500)) return;
    *last = now;
    double wall = std::chrono::duration<double>(now - wall0).count();
    std::string left;
    if (sim.expected_end() != sim::kNever && sim.now() > 0) {
      double frac = static_cast<double>(sim.now()) / static_cast<double>(sim.expected_end());
      if (frac > 0 && frac <= 1) left = fmt::format(", about {:.0f} s left", wall * (1 - frac) / frac);
    }
    std::fprintf(stderr, "\r  simulated %s, %.3g events/s%s   ", sim::format_time(sim.now()).c_str(),
                 static_cast<double>(sim.events_executed()) / wall, left.c_str());
  });
}
}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  std::filesystem::path target(path);
  std::filesystem::path tmp = target;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw config::ConfigError(path, "", "cannot write the output file (missing directory or no permission)");
    out << text;
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp);
      throw config::ConfigError(path, "", "writing the output file failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw config::ConfigError(path, "", "cannot rename the temporary output into place: " + ec.message());
  }
}

void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (fs::is_directory(target, ec))
    throw config::ConfigError(path, "", option + ": this is a directory: name a file to write");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw config::ConfigError(path, "", fmt::format("{}: its directory {} does not exist", option, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw config::ConfigError(path, "", fmt::format("{}: cannot write in {} (no permission)", option, dir.string()));
  auto same = [&](const std::string& other) {
    if (fs::exists(target, ec) && fs::exists(other, ec)) return fs::equivalent(target, other, ec);
    return fs::weakly_canonical(target, ec) == fs::weakly_canonical(other, ec);  // one not written yet
  };
  for (const auto& other : inputs)
    if (!other.empty() && same(other))
      throw config::ConfigError(path, "", fmt::format("{}: the run also reads or writes {}: name another file", option, other));
}

std::vector<std::string> files_read() {
  std::vector<std::string> out;
  for (const auto& [path, digest] : config::inputs_read()) out.push_back(path);
  return out;
}

std::string format_metrics(const scenario::Results& r) {
  std::size_t width = 0;
  for (const auto& [k, v] : r.metrics) width = std::max(width, k.size());
  std::string out;
  for (const auto& [k, v] : r.metrics) out += fmt::format("  {:<{}}  {:>14.6g}\n", k, width, v);
  if (auto pair = r.extra.find("pair"); pair != r.extra.end() && pair->contains("hop_class"))  // c2c: the class by name
    out += fmt::format("  (cpu {} -> cpu {}: hop class {})\n", (*pair)["cpu_a"].dump(), (*pair)["cpu_b"].dump(),
                       (*pair)["hop_class"].get<std::string>());
  if (!r.failures.empty()) {
    out += fmt::format("  INCORRECT: {} failure(s); the metrics above cover the operations that completed\n",
                       r.failures.size());
    for (const auto& f : r.failures) out += "    " + f + "\n";
  }
  return out;
}

namespace {
/// Names the trace's process (scenario, variant, platform) and its tracks: CPUs
/// by number and place, devices by their endpoint names.
void name_trace(sim::Tracer& tracer, const std::string& scenario_path, const std::string& named_variant,
                scenario::Machine& machine) {
  const std::string scenario = std::filesystem::path(scenario_path).stem().string();
  tracer.name_process(named_variant.empty()
                          ? fmt::format("cohsim: {} on {}", scenario, machine.name())
                          : fmt::format("cohsim: {} ({}) on {}", scenario, named_variant, machine.name()));
  const topo::Topology& topology = machine.topology();
  const auto& icn = machine.interconnect();
  for (int c = 0; c < machine.cpu_count(); ++c) {
    const topo::CpuPlace& at = topology.cpu(c);
    const std::string thread =
        topology.threads_per_core() > 1 ? fmt::format(" core {} thread {}", at.core, at.thread) : "";
    tracer.name_track(icn.cpu_endpoint(c),
                      fmt::format("cpu {} (socket {} die {} cluster {}{})", c, at.socket, at.die, at.cluster, thread));
  }
  for (int ep = machine.cpu_count(); ep < static_cast<int>(icn.endpoint_count()); ++ep)
    tracer.name_track(ep, icn.endpoint(ep).name);
}
}  // namespace

RunOutput run_scenario(const std::string& path, const std::string& variant,
                       const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed,
                       bool progress, const TraceOptions* trace, const std::string& platform_file) {
  return run_scenario(path, scenario::load_scenario(path, variant, overrides, platform_file), variant, overrides, seed,
                      progress, trace);
}

RunOutput run_scenario(const std::string& path, scenario::LoadedScenario s, const std::string& variant,
                       const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed,
                       bool progress, const TraceOptions* trace) {
  const std::uint64_t used_seed = seed.value_or(s.seed);
  auto wall0 = std::chrono::steady_clock::now();
  std::optional<scenario::Run> built;
  try {
    built.emplace(s, used_seed);
  } catch (const config::ConfigError& e) {
    // A platform the --sets changed can fail on a value the file itself has right (one socket left
    // and the socket link still there): say which --sets the file was read with.
    std::string sets;
    for (const auto& o : overrides)
      if (o.key.rfind("platform.", 0) == 0 && o.key != e.path() && e.path().rfind("platform.", 0) == 0)
        sets += fmt::format("{}--set {}={}", sets.empty() ? "" : ", ", o.key, o.value);
    if (sets.empty()) throw;
    throw config::ConfigError(e.file(), e.path(), fmt::format("{} (the file as changed by {})", e.message(), sets));
  }
  scenario::Run& run = *built;
  if (progress && ::isatty(STDERR_FILENO)) install_progress_line(run.machine().sim(), wall0);
  std::unique_ptr<sim::Tracer> tracer;
  if (trace != nullptr && !trace->file.empty()) {
    tracer = std::make_unique<sim::Tracer>(trace->from, trace->to);
    run.machine().sim().set_tracer(tracer.get());
  }
  scenario::Results r = run.execute();
  if (progress && ::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%60s\r", "");
  if (tracer) {
    run.machine().sim().set_tracer(nullptr);
    name_trace(*tracer, path, variant, run.machine());
    constexpr std::uint64_t kWarnBytes = 100ull << 20;
    if (tracer->events() == 0)
      spdlog::warn("the trace holds no events: the window misses the run, or nothing traced happened (traced are "
                   "kernel functions, barriers, waits, interrupts, IPIs and line transfers forwarded by a home)");
    else if (tracer->bytes_estimate() > kWarnBytes)
      spdlog::warn("the trace is about {} MB ({} events): narrow it with --trace-window FROM:TO",
                   tracer->bytes_estimate() >> 20, tracer->events());
    write_file_atomically(trace->file, tracer->to_json());
  }
  return finish_run(path, s, variant, run, r, used_seed, overrides, wall0);
}

std::vector<config::Provenance> scenario_provenance(const std::string& path, const std::string& variant,
                                                    const std::vector<scenario::Override>& overrides) {
  const auto s = scenario::load_scenario(path, variant, overrides);
  scenario::Run run(s, s.seed);  // (keeps a reference to `s`)
  return run.registry().provenance();
}

RunOutput finish_run(const std::string& path, const scenario::LoadedScenario& s, const std::string& named_variant,
                     scenario::Run& run, const scenario::Results& r, std::uint64_t used_seed,
                     const std::vector<scenario::Override>& overrides,
                     std::chrono::steady_clock::time_point wall0) {
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  json metrics = json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = v;
  // A variant's name is recorded only when the user named it: without
  // --variant the baseline's values ran, perhaps changed by --set.
  const json variant_params = named_variant.empty() ? json::object() : s.variant_settings.at(named_variant);
  json doc = {{"scenario", path},
              {"platform", run.machine().name()},
              {"platform_file", s.platform.file},
              {"workload", s.workload},
              {"variant", named_variant},
              {"baseline", s.baseline},
              {"variant_params", variant_params},
              {"params", run.params_used()},
              {"unused_params", run.unused_params()},
              {"seed", used_seed},
              {"version", COHSIM_VERSION},
              {"metrics", metrics},
              {"host", {{"wall_s", wall},
                        {"events", run.machine().sim().events_executed()},
                        {"events_per_s", wall > 0 ? static_cast<double>(run.machine().sim().events_executed()) / wall : 0},
                        {"simulated_ns", sim::to_ns(run.machine().sim().now())}}}};
  json overrides_json = json::object();
  for (const auto& o : overrides) overrides_json[o.key] = o.value;
  doc["overrides"] = overrides_json;
  json headline = json::array();  // what reports show and plot first
  for (const auto& h : scenario::workloads().at(s.workload).headline)
    headline.push_back({{"metric", h.name}, {"unit", h.unit}, {"lower_is_better", h.lower_is_better}});
  doc["headline"] = headline;
  // A workload's extras never replace the run's own keys (the dma-map-bench's
  // "variant" is its space-allocation scheme, not the scenario variant).
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it)
    if (!doc.contains(it.key())) doc[it.key()] = it.value();
  doc["failures"] = r.failures;
  return {doc, r, run.registry().provenance()};
}

void check_sets_keep_variants(const scenario::LoadedScenario& s, const std::vector<std::string>& variants,
                              const std::vector<scenario::Override>& overrides, bool allow) {
  if (allow) return;
  for (const auto& o : overrides) {
    std::string named;
    for (const auto& v : scenario::variants_setting(s, o.key))
      if (std::find(variants.begin(), variants.end(), v.variant) != variants.end())
        named += fmt::format("{}'{}' sets {} to {}", named.empty() ? "" : ", ", v.variant,
                             v.key == o.key ? "it" : v.key, v.value.dump());
    if (named.empty()) continue;
    throw config::ConfigError(
        "--set", o.key + "=" + o.value,
        fmt::format("{}: the --set would quietly change what the variant means. Drop the --set, run without "
                    "--variant (the baseline's values, then your --set; no variant name is recorded), or pass "
                    "--override-variant",
                    named));
  }
}

void apply_verbosity(bool quiet, bool verbose) {
  if (quiet && verbose) throw po::error("-q (--quiet) and -v (--verbose) exclude each other");
  // Sets the default and every component logger already created (cohsim::log).
  spdlog::set_level(verbose ? spdlog::level::debug : quiet ? spdlog::level::err : spdlog::level::warn);
}

namespace {

struct CommonOptions {
  std::vector<std::string> sets;
  std::optional<std::uint64_t> seed;
  std::string json_out;
  bool verbose = false, quiet = false;
};

void add_common(po::options_description& d, CommonOptions& o) {
  d.add_options()
      ("set", po::value(&o.sets)->composing(), "override a parameter: KEY=VALUE (params.KEY, or platform.PATH); repeatable")
      ("seed", po::value<Unsigned64>(), "seed of the named random sources (default: the scenario's)")
      ("json", po::value(&o.json_out), "write the results document to FILE (atomically)")
      ("verbose,v", po::bool_switch(&o.verbose), "debug logging")
      ("quiet,q", po::bool_switch(&o.quiet), "print only the results (the metrics) and errors: no progress");
}

std::vector<scenario::Override> overrides_of(const CommonOptions& o) {
  std::vector<scenario::Override> out;
  for (const auto& s : o.sets) out.push_back(scenario::parse_override(s));
  return out;
}

void apply_logging(const CommonOptions& o) { apply_verbosity(o.quiet, o.verbose); }

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string scenario_path, variant;
  po::options_description d("cohsim run SCENARIO [options]");
  std::string trace_window, platform_file;
  TraceOptions trace;
  bool override_variant = false;
  d.add_options()("help,h", "this help")(
      "variant", po::value(&variant),
      "variant to run (default: the baseline's values, recorded as no variant; --set then may change them)")(
      "override-variant", po::bool_switch(&override_variant), "allow a --set of a key the --variant sets")(
      "platform", po::value(&platform_file), "run on this platform file instead of the scenario's")(
      "trace", po::value(&trace.file), "write a Chrome trace-event JSON timeline to FILE (open in Perfetto)")(
      "trace-window", po::value(&trace_window), "only trace FROM:TO of simulated time, e.g. 10us:20us");
  add_common(d, common);
  auto parsed = parse_command_line(args, d, scenario_path, "Runs one scenario variant and prints its metrics.");
  if (!parsed) return kOk;
  po::variables_map& vm = *parsed;
  if (scenario_path.empty()) throw po::error("missing SCENARIO (a file under configs/scenarios/)");
  if (vm.count("seed")) common.seed = vm["seed"].as<Unsigned64>().value;
  apply_logging(common);
  if (!trace_window.empty()) {
    auto colon = trace_window.find(':');
    auto from = sim::parse_time(trace_window.substr(0, colon));
    auto to = colon == std::string::npos ? std::nullopt : sim::parse_time(trace_window.substr(colon + 1));
    if (!from || !to || *to <= *from)
      throw config::ConfigError("--trace-window", trace_window, "expected FROM:TO with units, FROM < TO (e.g. 10us:20us)");
    trace.from = *from;
    trace.to = *to;
    if (trace.file.empty()) throw config::ConfigError("--trace-window", trace_window, "needs --trace FILE to write the trace to");
  }
  const auto overrides = overrides_of(common);
  // Loaded once, before anything runs: bad input fails now, and the files it reads (scenario, platform,
  // includes) are inputs no output may replace.
  auto loaded = scenario::load_scenario(scenario_path, variant, overrides, platform_file);
  if (!variant.empty()) check_sets_keep_variants(loaded, {variant}, overrides, override_variant);
  auto inputs = files_read();
  check_output_file("--trace", trace.file, inputs);
  inputs.push_back(trace.file);
  check_output_file("--json", common.json_out, inputs);
  RunOutput out = run_scenario(scenario_path, std::move(loaded), variant, overrides, common.seed, !common.quiet, &trace);
  add_provenance(out.doc);
  if (!common.json_out.empty()) write_file_atomically(common.json_out, out.doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (common.quiet) {
    std::cout << format_metrics(out.results);
  } else {
    std::cout << fmt::format("scenario  {}\nplatform  {}\nworkload  {}\nvariant   {}\nseed      {}\n\nmetrics\n{}",
                             scenario_path, out.doc["platform"].get<std::string>(), out.doc["workload"].get<std::string>(),
                             !variant.empty() ? variant
                             : out.doc["baseline"].get<std::string>().empty()
                                 ? std::string("(none: the scenario has no variants)")
                                 : fmt::format("(none named: the baseline {}'s values)", out.doc["baseline"].get<std::string>()),
                             out.doc["seed"].get<std::uint64_t>(),
                             format_metrics(out.results));
    if (out.doc.contains("contention") && !out.doc["contention"].empty()) {
      std::cout << "\ntop contended lines (symbol, home node, transfers by hop class, invalidations, wait)\n";
      int shown = 0;
      for (const auto& l : out.doc["contention"]) {
        if (++shown > 5) break;
        std::cout << fmt::format("  {:<28} node {}  {}  inv {}  wait {}\n", l["symbol"].get<std::string>(),
                                 l["home_node"].get<int>(), l["transfers"].dump(), l["invalidations"].get<std::uint64_t>(),
                                 sim::format_time(sim::from_ns(l["wait_ns"].get<double>())));
      }
    }
    if (out.doc.contains("links") && !out.doc["links"].empty()) {
      std::cout << "\nbusiest links (utilisation of the run, messages, queueing mean / max)\n";
      int shown = 0;
      for (const auto& l : out.doc["links"]) {
        if (++shown > 5) break;
        std::cout << fmt::format("  {:<16} {:<10} {:5.1f}%  {:>9} msgs  queue {:.2f} / {:.1f} ns\n",
                                 l["link"].get<std::string>(), l["class"].get<std::string>(),
                                 100 * l["utilisation"].get<double>(), l["messages"].get<std::uint64_t>(),
                                 l["queue_mean_ns"].get<double>(), l["queue_max_ns"].get<double>());
      }
    }
    std::cout << fmt::format("\nhost: {:.2f} s, {} events ({:.3g} events/s), {} simulated\n",
                             out.doc["host"]["wall_s"].get<double>(), out.doc["host"]["events"].get<std::uint64_t>(),
                             out.doc["host"]["events_per_s"].get<double>(),
                             sim::format_time(sim::from_ns(out.doc["host"]["simulated_ns"].get<double>())));
  }
  return kOk;
}

}  // namespace cohsim::cli
