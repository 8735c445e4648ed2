// Robustness: runs are deterministic, seeds act only through named random
// sources, stuck models end with a watchdog report instead of hanging, and
// every input fuzzing once broke (tests/regression/) stays handled.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/scenario/machine.hpp"
#include "src/cli/cli.hpp"
#include "tests/fuzz/fuzz_harness.hpp"

using namespace cohsim;
namespace fs = std::filesystem;

namespace {

std::string repo_path(const std::string& relative) { return std::string(COHSIM_SOURCE_DIR) + "/" + relative; }

/// --set overrides that make each known workload's run take milliseconds.
/// Per workload, the settings of a small run (tests/data/small-sizes.json, which .ci/run reads too).
const std::map<std::string, std::vector<scenario::Override>>& small_size_overrides() {
  static const std::map<std::string, std::vector<scenario::Override>> m = [] {
    std::map<std::string, std::vector<scenario::Override>> out;
    const auto doc = config::load_json_file(repo_path("tests/data/small-sizes.json"));
    for (const auto& [workload, sets] : doc.at("sizes").items())
      for (const auto& [key, value] : sets.items())
        out[workload].push_back({key, value.is_string() ? value.get<std::string>() : value.dump()});
    return out;
  }();
  return m;
}

std::string metrics_of(const std::string& scenario, const std::vector<scenario::Override>& sets,
                       std::optional<std::uint64_t> seed = std::nullopt) {
  return cli::run_scenario(scenario, "", sets, seed, false).doc.at("metrics").dump();
}

std::string workload_of(const std::string& scenario) {
  std::ifstream in(scenario);
  return config::json::parse(in).value("workload", "");
}

/// A Kunpeng 920 machine for hand-built programs.
struct Kunpeng920 {
  config::Registry registry;
  scenario::Machine machine{scenario::load_platform(repo_path("configs/platforms/kunpeng920.json")), 1, registry};
  sim::Simulator& sim() { return machine.sim(); }
  fabric::Addr object(const std::string& symbol, int node = 0) { return machine.memory().alloc(node, 64, 64, symbol); }
};

/// Runs the simulation and returns the watchdog's report ("" if it never fired).
std::string watchdog_report(sim::Simulator& sim, sim::RunLimits limits = {}) {
  try {
    sim.run(limits);
  } catch (const sim::WatchdogError& e) {
    return e.what();
  }
  return "";
}

/// A test-and-set spinlock acquire (the arm64 queued lock's fast path shape).
sim::Task<void> test_and_set_acquire(cpu::Cpu& c, fabric::Addr lock) {
  for (;;) {
    const std::uint64_t old = co_await c.cmpxchg(lock, 8, 0, 1, cpu::Order::acquire);
    if (old == 0) co_return;
    co_await c.wait_for_change(lock, "test-and-set lock held by another CPU");
  }
}

}  // namespace

TEST_CASE("every shipped scenario gives identical metrics when run twice at a small size", "[robustness]") {
  std::vector<fs::path> scenarios;
  for (const auto& e : fs::directory_iterator(repo_path("configs/scenarios")))
    if (e.path().extension() == ".json") scenarios.push_back(e.path());
  std::sort(scenarios.begin(), scenarios.end());
  REQUIRE(!scenarios.empty());
  for (const auto& path : scenarios) {
    const std::string workload = workload_of(path.string());
    auto sets = small_size_overrides().find(workload);
    if (sets == small_size_overrides().end()) {
      FAIL_CHECK(path.filename().string() << ": no small size known for workload '" << workload
                                          << "': add one to tests/data/small-sizes.json");
      continue;
    }
    DYNAMIC_SECTION(path.filename().string()) {
      const std::string first = metrics_of(path.string(), sets->second);
      CHECK(first != "{}");
      CHECK(metrics_of(path.string(), sets->second) == first);
    }
  }
}

TEST_CASE("the seed changes nothing when the model's random sources are off", "[robustness]") {
  // c2c on Kunpeng 920 draws no random number: the home arbitrates by arrival.
  const std::string c2c = repo_path("configs/scenarios/c2c-kunpeng920.json");
  const auto& sets = small_size_overrides().at("c2c");
  REQUIRE(metrics_of(c2c, sets, 1) == metrics_of(c2c, sets, 987654321));
  // dma-map-bench's random sources: the threads' start jitter and the CPU work's spread.
  const std::string smmu = repo_path("configs/scenarios/smmu-kunpeng920.json");
  auto no_jitter = small_size_overrides().at("dma-map-bench");
  no_jitter.push_back({"start_jitter", "0"});
  no_jitter.push_back({"cpu_work_spread", "0"});  // and the CPU work's spread
  REQUIRE(metrics_of(smmu, no_jitter, 1) == metrics_of(smmu, no_jitter, 2));
}

TEST_CASE("the seed reaches a model through its named random source", "[robustness]") {
  // With the start jitter on, the seed moves the threads' start times.
  const std::string smmu = repo_path("configs/scenarios/smmu-kunpeng920.json");
  const auto& sets = small_size_overrides().at("dma-map-bench");
  REQUIRE(metrics_of(smmu, sets, 1) != metrics_of(smmu, sets, 2));
  REQUIRE(metrics_of(smmu, sets, 2) == metrics_of(smmu, sets, 2));
}

TEST_CASE("a CPU spinning on a line nobody writes ends with a report naming it, the line and the wait", "[robustness]") {
  Kunpeng920 kp;
  const fabric::Addr flag = kp.object("never_written_flag");
  cpu::Cpu& waiter = kp.machine.cpu(5);
  auto spin = [&]() -> sim::Task<void> {
    co_await waiter.spin_until(flag, 8, [](std::uint64_t v) { return v == 1; }, cpu::Order::acquire,
                               "smp_cond_load_acquire(flag == 1)");
  };
  kp.sim().spawn("cpu5 spinner", spin());
  // Without an event stream nothing is left to run (a deadlock); with one,
  // WFE wakes periodically and time advances without progress.
  const std::string report = watchdog_report(kp.sim(), {.max_time_without_progress = 2 * sim::kMs});
  INFO(report);
  CHECK((report.find("deadlock") != std::string::npos || report.find("no progress for") != std::string::npos));
  CHECK(report.find("cpu5 spinner") != std::string::npos);
  CHECK(report.find("never_written_flag") != std::string::npos);
  CHECK(report.find("smp_cond_load_acquire(flag == 1)") != std::string::npos);
  CHECK(report.find(" ago)") != std::string::npos);
}

TEST_CASE("a test-and-set lock that is never released is reported with every waiter", "[robustness]") {
  Kunpeng920 kp;
  const fabric::Addr lock = kp.object("leaked_lock", 1);
  kp.machine.fabric().poke(lock, 8, 1);  // left held by a CPU that returned without unlocking
  kp.sim().spawn("cpu30 waiter", test_and_set_acquire(kp.machine.cpu(30), lock));
  kp.sim().spawn("cpu60 waiter", test_and_set_acquire(kp.machine.cpu(60), lock));
  const std::string report = watchdog_report(kp.sim(), {.max_time_without_progress = 1 * sim::kMs});
  INFO(report);
  CHECK(report.find("cpu30 waiter") != std::string::npos);
  CHECK(report.find("cpu60 waiter") != std::string::npos);
  CHECK(report.find("leaked_lock") != std::string::npos);
  // Each failing cmpxchg takes the line from the other waiter: a livelock.
  CHECK(report.find("no progress for") != std::string::npos);
}

TEST_CASE("a lost wake-up is reported as a deadlock naming the sleeper and what it waits for", "[robustness]") {
  Kunpeng920 kp;
  const fabric::Addr done = kp.object("completion.done");
  sim::Signal completion;
  auto complete = [&]() -> sim::Task<void> {
    co_await kp.machine.cpu(1).store(done, 8, 1, cpu::Order::release);
    completion.notify_all(kp.sim());  // nobody waits yet: this wake-up is lost
  };
  auto wait_for_completion = [&]() -> sim::Task<void> {
    co_await kp.machine.cpu(2).compute(1 * sim::kUs);  // checked `done` too early, then slept
    co_await completion.wait(kp.sim(), "wait_for_completion", done);
  };
  kp.sim().spawn("cpu1 complete", complete());
  kp.sim().spawn("cpu2 wait_for_completion", wait_for_completion());
  const std::string report = watchdog_report(kp.sim());
  INFO(report);
  CHECK(report.find("deadlock") != std::string::npos);
  CHECK(report.find("cpu2 wait_for_completion: waits on wait_for_completion") != std::string::npos);
  CHECK(report.find("completion.done") != std::string::npos);
}

TEST_CASE("a livelock that advances time without progress is stopped by the progress limit", "[robustness]") {
  Kunpeng920 kp;
  const fabric::Addr ready0 = kp.object("handshake.ready[0]");
  const fabric::Addr ready1 = kp.object("handshake.ready[1]", 2);
  // Two CPUs keep toggling their own flag and polling the peer's for a value
  // the peer never writes: lines bounce and time advances, nothing progresses.
  auto polite = [&](int cpu, fabric::Addr mine, fabric::Addr peer) -> sim::Task<void> {
    cpu::Cpu& c = kp.machine.cpu(cpu);
    for (std::uint64_t round = 0;; ++round) {
      co_await c.store(mine, 8, round & 1, cpu::Order::release);
      if (co_await c.load(peer, 8, cpu::Order::acquire) == 2) co_return;
      co_await c.compute(100 * sim::kNs);
    }
  };
  kp.sim().spawn("cpu0 polite", polite(0, ready0, ready1));
  kp.sim().spawn("cpu48 polite", polite(48, ready1, ready0));
  const std::string report = watchdog_report(kp.sim(), {.max_time_without_progress = 100 * sim::kUs});
  INFO(report);
  CHECK(report.find("no progress for") != std::string::npos);
  CHECK(report.find("cpu0 polite") != std::string::npos);
  CHECK(report.find("cpu48 polite") != std::string::npos);
}

TEST_CASE("a livelock that stops simulated time is caught by the per-tick event limit", "[robustness]") {
  sim::Simulator sim;
  auto yield_forever = [&]() -> sim::Task<void> {
    for (;;) co_await sim.delay(0);
  };
  sim.spawn("yielder", yield_forever());
  const std::string report = watchdog_report(sim, {.max_events_per_tick = 10'000});
  INFO(report);
  CHECK(report.find("simulated time stopped advancing") != std::string::npos);
  CHECK(report.find("yielder") != std::string::npos);
}

TEST_CASE("every input that fuzzing found is handled: accepted or rejected with an error", "[robustness]") {
  const fs::path dir = repo_path("tests/regression");
  const cohsim::fuzz::FuzzSandbox box;
  std::size_t replayed = 0;
  for (const char* target : {"platform", "scenario", "cli"}) {
    if (!fs::is_directory(dir / target)) continue;
    for (const auto& e : fs::directory_iterator(dir / target)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO(e.path().string());
      const std::string t = target;
      if (t == "platform") CHECK_NOTHROW(cohsim::fuzz::load_platform_bytes(box, bytes));
      if (t == "scenario") CHECK_NOTHROW(cohsim::fuzz::load_scenario_bytes(box, bytes));
      if (t == "cli") {
        std::ostringstream out, err;
        auto* old_out = std::cout.rdbuf(out.rdbuf());
        auto* old_err = std::cerr.rdbuf(err.rdbuf());
        int code = cohsim::fuzz::run_cli_bytes(bytes);
        std::cout.rdbuf(old_out);
        std::cerr.rdbuf(old_err);
        CHECK((code == cli::kOk || code == cli::kBadInput));
      }
      ++replayed;
    }
  }
  WARN(replayed << " regression inputs replayed from tests/regression/");
}
