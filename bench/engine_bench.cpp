// engine_bench: the cohsim discrete-event core against SystemC, one process.
//
//   engine_bench [--json] [--reps N] [--warmup N] [--tasks N] [--iterations N]
//                [--pairs N] [--rounds N] [--no-systemc]
//
// Workloads (see workloads.hpp): (a) "delay", independent tasks looping over
// 1-7 ns timed waits; (b) "pingpong", pairs of tasks bouncing a token through
// notify/wait at zero time. Each workload runs `warmup` untimed times and
// then `reps` timed times per engine, interleaved (cohsim, SystemC, cohsim,
// ...); the figures are the medians, in events per second of thread CPU time
// (--json also gives wall-clock rates). Both engines count events the same way:
// one resumption of a waiting thread = one event. The bench fails (exit 1)
// if the counts or the simulated time spans of the two engines differ.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cohsim_workloads.hpp"
#include "workloads.hpp"

#ifndef COHSIM_BENCH_HAVE_SYSTEMC
#define COHSIM_BENCH_HAVE_SYSTEMC 0
#endif

namespace {

using namespace cohsim_bench;

struct Options {
  bool json = false;
  bool systemc = COHSIM_BENCH_HAVE_SYSTEMC != 0;
  int reps = 3;
  int warmup = 1;
  DelayParams delay;
  PingPongParams pingpong;
};

constexpr const char* kUsage =
    "usage: engine_bench [--json] [--reps N] [--warmup N] [--tasks N] [--iterations N] [--pairs N] [--rounds N] "
    "[--no-systemc]\n";

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "engine_bench: %s\n%s", why, kUsage);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto number = [&](int min) {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < min || v > 1'000'000'000) usage(("bad value for " + a).c_str());
      return static_cast<int>(v);
    };
    if (a == "--json") o.json = true;
    else if (a == "--no-systemc") o.systemc = false;
    else if (a == "--reps") o.reps = number(1);
    else if (a == "--warmup") o.warmup = number(0);
    else if (a == "--tasks") o.delay.tasks = number(1);
    else if (a == "--iterations") o.delay.iterations = number(1);
    else if (a == "--pairs") o.pingpong.pairs = number(1);
    else if (a == "--rounds") o.pingpong.rounds = number(1);
    else if (a == "--help" || a == "-h") {
      std::printf(
          "%s"
          "The cohsim discrete-event core against SystemC in one process: (a) --tasks tasks (default 1000)\n"
          "each doing --iterations timed waits of 1-7 ns (default 5000); (b) --pairs pairs (default 500)\n"
          "bouncing a token --rounds times (default 10000) through notify/wait at zero time. Each runs\n"
          "--warmup untimed (default 1) and --reps timed times (default 3) per engine, alternated; the\n"
          "figures are medians in events per second of thread CPU time (--json: wall-clock rates too).\n",
          kUsage);
      std::exit(0);
    }
    else usage(("unknown option " + a).c_str());
  }
  return o;
}

struct WorkloadResult {
  std::string name;
  std::uint64_t expected = 0;
  std::vector<CohsimMeasurement> cohsim;
  std::vector<Measurement> systemc;
  std::vector<std::string> errors;

  template <class M>
  static double median_rate(const std::vector<M>& runs, bool wall) {
    if (runs.empty()) return 0;
    std::vector<double> r;
    for (const auto& m : runs) r.push_back(wall ? m.wall_events_per_s() : m.events_per_s());
    return median(r);
  }
  double cohsim_rate(bool wall = false) const { return median_rate(cohsim, wall); }
  double systemc_rate(bool wall = false) const { return median_rate(systemc, wall); }
};

void check(WorkloadResult& w) {
  for (const auto& m : w.cohsim) {
    if (m.events != w.expected)
      w.errors.push_back(fmt::format("cohsim counted {} events, expected {}", m.events, w.expected));
    if (m.events_executed != m.events)
      w.errors.push_back(fmt::format("cohsim events_executed() = {} but {} resumptions were counted",
                                     m.events_executed, m.events));
  }
  for (const auto& m : w.systemc) {
    if (m.events != w.expected)
      w.errors.push_back(fmt::format("SystemC counted {} events, expected {}", m.events, w.expected));
    if (!w.cohsim.empty() && m.sim_span_ps != w.cohsim.front().sim_span_ps)
      w.errors.push_back(fmt::format("simulated span differs: cohsim {} ps, SystemC {} ps",
                                     w.cohsim.front().sim_span_ps, m.sim_span_ps));
  }
}

template <class CohsimRun, class SystemcRun>
WorkloadResult measure(const std::string& name, std::uint64_t expected, const Options& o, CohsimRun cohsim_run,
                       SystemcRun systemc_run) {
  WorkloadResult w;
  w.name = name;
  w.expected = expected;
  for (int i = 0; i < o.warmup; ++i) {
    (void)cohsim_run();
    if (o.systemc) (void)systemc_run();
  }
  for (int i = 0; i < o.reps; ++i) {
    w.cohsim.push_back(cohsim_run());
    if (o.systemc) w.systemc.push_back(systemc_run());
  }
  check(w);
  return w;
}

nlohmann::json to_json(const WorkloadResult& w) {
  nlohmann::json j;
  const double x = w.cohsim_rate();
  j["cohsim_events_per_s"] = x;  // per CPU second
  if (!w.systemc.empty()) {
    const double y = w.systemc_rate();
    j["systemc_events_per_s"] = y;
    j["ratio"] = y > 0 ? x / y : 0.0;
  } else {
    j["systemc_events_per_s"] = nullptr;
    j["ratio"] = nullptr;
  }
  j["cohsim_wall_events_per_s"] = x == 0 ? 0.0 : w.cohsim_rate(true);
  j["systemc_wall_events_per_s"] = w.systemc.empty() ? nlohmann::json(nullptr) : nlohmann::json(w.systemc_rate(true));
  j["events_per_run"] = w.expected;
  j["sim_span_ps"] = w.cohsim.empty() ? 0 : w.cohsim.front().sim_span_ps;
  auto& s = j["samples"];
  s["cohsim_events_per_s"] = nlohmann::json::array();
  s["systemc_events_per_s"] = nlohmann::json::array();
  for (const auto& m : w.cohsim) s["cohsim_events_per_s"].push_back(m.events_per_s());
  for (const auto& m : w.systemc) s["systemc_events_per_s"].push_back(m.events_per_s());
  j["checks_ok"] = w.errors.empty();
  if (!w.errors.empty()) j["errors"] = w.errors;
  return j;
}

void print_table(const Options& o, const std::vector<WorkloadResult>& results) {
  std::printf("cohsim engine benchmark: median of %d runs (after %d warm-up), events = thread resumptions,\n"
              "rates per second of thread CPU time (wall-clock rates: see --json)\n",
              o.reps, o.warmup);
  std::printf("  delay:    %d tasks x %d timed waits of 1-7 ns\n", o.delay.tasks, o.delay.iterations);
  std::printf("  pingpong: %d pairs x %d rounds of notify/wait at zero time\n\n", o.pingpong.pairs,
              o.pingpong.rounds);
  std::printf("%-10s %12s %16s %16s %8s\n", "workload", "events/run", "cohsim ev/s", "SystemC ev/s", "ratio");
  for (const auto& w : results) {
    const double x = w.cohsim_rate();
    if (w.systemc.empty()) {
      std::printf("%-10s %12llu %16.0f %16s %8s\n", w.name.c_str(), static_cast<unsigned long long>(w.expected), x,
                  "n/a", "n/a");
    } else {
      const double y = w.systemc_rate();
      std::printf("%-10s %12llu %16.0f %16.0f %8.2f\n", w.name.c_str(), static_cast<unsigned long long>(w.expected),
                  x, y, y > 0 ? x / y : 0.0);
    }
  }
  for (const auto& w : results)
    for (const auto& e : w.errors) std::printf("CHECK FAILED (%s): %s\n", w.name.c_str(), e.c_str());
}

int bench_main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (!COHSIM_BENCH_HAVE_SYSTEMC)
    std::fprintf(stderr, "engine_bench: built without SystemC (pkg-config 'systemc' not found at configure "
                         "time); measuring cohsim only\n");

  std::string sc_version;
#if COHSIM_BENCH_HAVE_SYSTEMC
  if (o.systemc) {
    systemc_setup(o.delay, o.pingpong);  // the one elaboration of this process
    sc_version = systemc_version();
  }
  auto run_sc_delay = [] { return systemc_run_delay(); };
  auto run_sc_pingpong = [] { return systemc_run_pingpong(); };
#else
  auto run_sc_delay = [] { return Measurement{}; };
  auto run_sc_pingpong = [] { return Measurement{}; };
#endif

  std::vector<WorkloadResult> results;
  results.push_back(measure("delay", expected_events(o.delay), o, [&] { return cohsim_run_delay(o.delay); },
                            run_sc_delay));
  results.push_back(measure("pingpong", expected_events(o.pingpong), o,
                            [&] { return cohsim_run_pingpong(o.pingpong); }, run_sc_pingpong));

  bool ok = true;
  for (const auto& w : results) ok = ok && w.errors.empty();
  if (o.json) {
    nlohmann::json j;
    j["delay"] = to_json(results[0]);
    j["delay"]["tasks"] = o.delay.tasks;
    j["delay"]["iterations"] = o.delay.iterations;
    j["pingpong"] = to_json(results[1]);
    j["pingpong"]["pairs"] = o.pingpong.pairs;
    j["pingpong"]["rounds"] = o.pingpong.rounds;
    j["reps"] = o.reps;
    j["warmup"] = o.warmup;
    j["systemc"] = o.systemc ? nlohmann::json(sc_version) : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump().c_str());
  } else {
    print_table(o, results);
    if (!o.systemc)
      std::printf("\nSystemC side not measured (%s).\n",
                  COHSIM_BENCH_HAVE_SYSTEMC ? "--no-systemc" : "SystemC not found at configure time");
    else
      std::printf("\nSystemC: %s\n", sc_version.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
#if COHSIM_BENCH_HAVE_SYSTEMC
  return cohsim_bench::systemc_main(argc, argv, &bench_main);
#else
  return bench_main(argc, argv);
#endif
}
