// The HPET device, the clocksources and timekeeping, the local timer tick and
// SMT compute sharing: serialisation, counter values, seqcount retries, the
// shared-read scheme, tick rate, sibling shares.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "cohsim/devices/hpet.hpp"
#include "cohsim/scenario/machine.hpp"
#include "cohsim/scenario/scenario.hpp"
#include "models/kernel/tick.hpp"
#include "models/kernel/timekeeping.hpp"
#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using models::kernel::Clocksource;
using sim::Task;
using sim::Tick;

namespace {

// A platform's machine with its HPET (and timekeeping for a clocksource).
struct Bench {
  config::Registry registry;
  scenario::Machine m;
  devices::HpetParams hp;
  devices::Hpet hpet;
  std::unique_ptr<models::kernel::Timekeeping> tk;
  explicit Bench(const char* platform, Clocksource cs = Clocksource::hpet)
      : m(scenario::load_platform(std::string(COHSIM_SOURCE_DIR) + "/configs/platforms/" + platform), 1, registry),
        hp(*m.hpet_params()),
        hpet(hp, m.sim(), m.interconnect()) {
    tk = std::make_unique<models::kernel::Timekeeping>(m, hpet, cs, models::kernel::WallTimeRead::before_write_side,
                                                       models::kernel::TimekeepingCosts{});
  }
};

/// Runs a shipped aim7 scenario's variant with `overrides` and returns its metrics.
scenario::Results run_aim7(const std::string& file, const std::string& variant,
                           const std::vector<scenario::Override>& overrides) {
  auto s = scenario::load_scenario(std::string(COHSIM_SOURCE_DIR) + "/configs/scenarios/" + file, variant, overrides);
  scenario::Run run(s, 1);
  return run.execute();
}

}  // namespace

TEST_CASE("reads of the one counter serialize at the modelled occupancy, not at the read latency", "[hpet]") {
  Bench b("haswell-ex.json");
  REQUIRE(b.hp.serial);
  REQUIRE(b.hp.occupancy != b.hp.service_time);  // the test tells the two numbers apart
  const int n = 8;
  const int requester = b.m.interconnect().cpu_endpoint(3);
  std::vector<Tick> done;
  std::vector<std::uint64_t> values;
  auto reader = [&]() -> Task<void> {
    values.push_back(co_await b.hpet.read(requester, static_cast<std::uint32_t>(devices::HpetReg::counter), 8));
    done.push_back(b.m.sim().now());
  };
  // One lone read first: the idle round trip.
  b.m.sim().spawn("lone reader", reader());
  b.m.sim().run();
  const Tick idle_latency = done.front();
  CHECK(idle_latency >= 2 * b.hp.chipset_latency + b.hp.service_time);
  done.clear();
  values.clear();
  const Tick wave = b.m.sim().now() + sim::kUs;
  auto later = [&]() -> Task<void> {
    co_await b.m.sim().delay(wave - b.m.sim().now());
    co_await reader();
  };
  for (int i = 0; i < n; ++i) b.m.sim().spawn("reader", later());
  b.m.sim().run();
  REQUIRE(done.size() == static_cast<std::size_t>(n));
  CHECK(done.front() - wave == idle_latency);
  for (int i = 1; i < n; ++i) {
    CHECK(done[i] - done[i - 1] == b.hp.occupancy);
    // Each value is latched when its read starts: one occupancy of counter time later than the previous one.
    CHECK(static_cast<double>(values[i] - values[i - 1]) == Approx(b.hp.occupancy * 1e-12 * b.hp.counter_hz).margin(1));
  }
  CHECK(b.hpet.stats().max_queue == static_cast<std::uint64_t>(n));
  CHECK(b.hpet.stats().busy == static_cast<Tick>(n + 1) * b.hp.occupancy);
  CHECK(static_cast<double>(b.hpet.stats().queue_wait) ==
        Approx(static_cast<double>(b.hp.occupancy) * n * (n - 1) / 2).epsilon(0.01));
}

TEST_CASE("pipelined (the alternative), the HPET serves a read per port at once and one more waits for a port, at "
          "the serial rate",
          "[hpet]") {
  Bench b("haswell-ex.json");
  devices::HpetParams piped = b.hp;
  piped.serial = false;
  piped.outstanding_reads = 3;
  devices::Hpet dev(piped, b.m.sim(), b.m.interconnect(), "hpet (pipelined)");
  const int requester = b.m.interconnect().cpu_endpoint(3);
  std::vector<Tick> done;
  auto reader = [&]() -> Task<void> {
    co_await dev.read(requester, static_cast<std::uint32_t>(devices::HpetReg::counter), 4);
    done.push_back(b.m.sim().now());
  };
  for (int i = 0; i < piped.outstanding_reads + 1; ++i) b.m.sim().spawn("reader", reader());
  b.m.sim().run();
  REQUIRE(done.size() == 4);
  CHECK(done[2] - done[0] < sim::kNs * 10);  // three ports: together, up to the links' few ns
  // Each port is held ports x occupancy: over a burst, one read per occupancy, as serial.
  CHECK(done[3] - done[0] > 3 * piped.occupancy - 10 * sim::kNs);
  CHECK(done[3] - done[0] < 3 * piped.occupancy + 10 * sim::kNs);
  CHECK(dev.stats().busy == 4 * 3 * piped.occupancy);
  CHECK(dev.stats().queue_wait > 0);
}

TEST_CASE("An hpet section without occupancy keeps its old meaning: each read holds its port for its access time",
          "[hpet][config]") {
  scenario::PlatformDoc doc = scenario::load_platform(std::string(COHSIM_SOURCE_DIR) + "/configs/platforms/haswell-ex.json");
  auto& hpet = doc.doc["hpet"];
  hpet.erase("occupancy");
  hpet["read_overlap"] = "pipelined";
  hpet["outstanding_reads"] = 4;
  config::Registry reg;
  config::Reader root(&doc.doc, doc.file, "platform", &reg, /*sourced=*/false);
  const devices::HpetParams p(root.section("hpet", "HPET"));
  CHECK(p.hold() == p.service_time);
  CHECK(p.occupancy * 4 == p.service_time);
}

TEST_CASE("HPET counter values are monotonic and match simulated time", "[hpet]") {
  Bench b("haswell-ex.json");
  std::vector<std::uint32_t> values;
  auto reader = [&]() -> Task<void> {
    for (int i = 0; i < 40; ++i) {
      const Tick start = b.m.sim().now();
      const std::uint32_t v = co_await devices::hpet_read_counter(b.m.cpu(20), b.hpet);
      // Latched between the call and the return, at 14.31818 MHz of simulated time.
      CHECK(v >= b.hpet.counter_at(start));
      CHECK(v <= b.hpet.counter_at(b.m.sim().now()));
      values.push_back(v);
      co_await b.m.cpu(20).compute(137 * sim::kNs);
    }
  };
  b.m.sim().spawn("reader", reader());
  b.m.sim().run();
  CHECK(std::is_sorted(values.begin(), values.end()));
  CHECK(values.back() > values.front());
  CHECK(b.hpet.counter_at(sim::kSec) == 14318180);
}

TEST_CASE("a write to the read-only capabilities register is counted and ignored", "[hpet]") {
  Bench b("haswell-ex.json");
  auto prog = [&]() -> Task<void> {
    const std::uint64_t caps = co_await b.hpet.read(0, 0x0, 8);
    CHECK((caps >> 32) == 69841279);  // COUNTER_CLK_PERIOD in fs
    co_await b.hpet.write(0, 0x0, 8, 0);
    CHECK(co_await b.hpet.read(0, 0x0, 8) == caps);
  };
  b.m.sim().spawn("prog", prog());
  b.m.sim().run();
  CHECK(b.hpet.stats().rejected_writes == 1);
}

TEST_CASE("ktime_get waits while the writer holds tk_core.seq and retries a pass it overlapped", "[hpet]") {
  Bench b("haswell-ex.json");
  const fabric::Addr seq = b.tk->tk_core() + models::kernel::TkCoreLayout::seq;
  cpu::Cpu &writer = b.m.cpu(0), &reader = b.m.cpu(5);
  Tick returned = 0;
  auto write_side = [&](Tick open, Tick hold) -> Task<void> {
    co_await b.m.sim().delay(open);
    co_await writer.store(seq, 4, 1);  // write_seqcount_begin
    co_await b.m.sim().delay(hold);
    co_await writer.store(seq, 4, 2);  // write_seqcount_end
  };
  auto read_side = [&]() -> Task<void> {
    co_await b.tk->ktime_get(reader);  // starts at 0: its HPET read overlaps the write side
    returned = b.m.sim().now();
  };
  b.m.sim().spawn("writer", write_side(300 * sim::kNs, 2 * sim::kUs));
  b.m.sim().spawn("reader", read_side());
  b.m.sim().run();
  const auto& a = b.tk->accounting(5);
  CHECK(a.ktime_retries == 1);
  CHECK(a.read_fn_calls == 2);
  CHECK(returned > 2300 * sim::kNs);
  CHECK(a.seq_retry > 0);
}

TEST_CASE("hpet-shared: one CPU at a time reads the device, and no reader gets a value older than its call", "[hpet]") {
  Bench b("haswell-ex.json", Clocksource::hpet_shared);
  b.tk->record_shared_reads(true);
  struct Call {
    Tick start, end;
    std::uint32_t value;
  };
  std::vector<Call> calls;
  auto reader = [&](int cpu) -> Task<void> {
    for (int i = 0; i < 20; ++i) {
      const Tick start = b.m.sim().now();
      const auto v = static_cast<std::uint32_t>(co_await b.tk->read_clocksource(b.m.cpu(cpu)));
      calls.push_back({start, b.m.sim().now(), v});
      co_await b.m.cpu(cpu).compute((50 + 13 * cpu) * sim::kNs);
    }
  };
  for (int cpu = 0; cpu < 72; cpu += 4) b.m.sim().spawn("reader", reader(cpu));
  b.m.sim().run();
  CHECK(b.hpet.stats().max_queue == 1);
  const auto& reads = b.tk->shared_reads();
  REQUIRE(reads.size() < calls.size());  // values were shared
  for (std::size_t i = 1; i < reads.size(); ++i) CHECK(reads[i].locked >= reads[i - 1].unlocked);
  for (const Call& c : calls) {
    auto r = std::find_if(reads.begin(), reads.end(), [&](const auto& s) { return s.value == c.value; });
    REQUIRE(r != reads.end());
    CHECK(r->locked <= c.end);  // read by then: not a value from the future
    // Older than the call would mean: a newer device read had already been published when it began.
    if (r + 1 != reads.end()) CHECK((r + 1)->unlocked > c.start);
  }
}

TEST_CASE("plain hpet lets many CPUs queue at the device", "[hpet]") {
  Bench b("haswell-ex.json", Clocksource::hpet);
  auto reader = [&](int cpu) -> Task<void> { co_await b.tk->read_clocksource(b.m.cpu(cpu)); };
  for (int cpu = 0; cpu < 8; ++cpu) b.m.sim().spawn("reader", reader(cpu));
  b.m.sim().run();
  CHECK(b.hpet.stats().max_queue == 8);
  CHECK(b.hpet.stats().reads == 8);
}

TEST_CASE("local timer ticks arrive at HZ on every CPU, spread by their offsets", "[hpet]") {
  Bench b("haswell-ex.json");
  std::vector<int> cpus = {0, 1, 2, 3};
  int handlers = 0;
  models::kernel::LocalTimerTick tick(b.m, 1000, models::kernel::TickSkew::spread, cpus,
                                      [&](cpu::Cpu& c) -> Task<void> {
                                        ++handlers;
                                        co_await c.compute(sim::kUs);
                                      });
  tick.record_handler_starts(true);
  for (int cpu : cpus) b.m.sim().spawn("busy", b.m.cpu(cpu).compute(9950 * sim::kUs));
  tick.start(0);
  b.m.sim().run();
  tick.stop();
  const Tick entry = b.m.cpu_params().irq_entry;
  for (int cpu : cpus) {
    CHECK(tick.handled(cpu) == 10);
    const auto& starts = tick.handler_starts(cpu);
    for (std::size_t i = 0; i < starts.size(); ++i) CHECK(starts[i] == tick.offset(cpu) + i * tick.period() + entry);
  }
  CHECK(tick.offset(1) - tick.offset(0) == tick.period() / 4);
  CHECK(handlers == 40);
}

TEST_CASE("a CPU in nohz idle takes no tick, and its tick comes back on the same grid", "[hpet]") {
  Bench b("haswell-ex.json");
  std::vector<int> cpus = {0, 1};
  models::kernel::LocalTimerTick tick(b.m, 1000, models::kernel::TickSkew::none, cpus,
                                      [](cpu::Cpu& c) -> Task<void> { co_await c.compute(sim::kUs); });
  tick.record_handler_starts(true);
  auto busy = [&](int cpu) -> Task<void> { co_await b.m.cpu(cpu).compute(9950 * sim::kUs); };
  // CPU 1 is idle from 2.5 ms to 6.5 ms (the ticks at 3, 4, 5 and 6 ms do not fire), then busy.
  auto idle_then_busy = [&]() -> Task<void> {
    co_await b.m.cpu(1).compute(2500 * sim::kUs);
    tick.set_idle(1, true);
    co_await b.m.sim().delay(4000 * sim::kUs);
    tick.set_idle(1, false);
    co_await b.m.cpu(1).compute(3450 * sim::kUs);
  };
  b.m.sim().spawn("busy", busy(0));
  b.m.sim().spawn("idle then busy", idle_then_busy());
  tick.start(0);
  b.m.sim().run();
  tick.stop();
  CHECK(tick.handled(0) == 10);
  CHECK(tick.handled(1) == 6);
  CHECK(tick.fired(1) == 6);
  const auto& starts = tick.handler_starts(1);
  REQUIRE(starts.size() == 6);
  CHECK(starts[3] == 7 * tick.period() + b.m.cpu_params().irq_entry);
}

TEST_CASE("aim7: with one task per CPU every blocking wait idles, reading the clock on idle entry and exit, and busy "
          "CPUs tick at HZ",
          "[hpet]") {
  const int entry = 2, exit = 3;
  auto r = run_aim7("hpet-haswell-ex.json", "tsc",
                    {{"users", "72"}, {"tick_skew", "random"}, {"vdso_reads_per_job", "0"}, {"timers_per_job", "0"}, {"blocking_ops_per_job", "40"},
                     {"block_wait", "20us"}, {"idle_entry_clock_reads", std::to_string(entry)},
                     {"idle_exit_clock_reads", std::to_string(exit)}, {"warmup", "2ms"}, {"duration", "20ms"}});
  const double idles = r.get("idle_periods_per_cpu_per_s"), ticks = r.get("ticks_per_cpu_per_s");
  // Random tick phases: with aligned ticks and every CPU's jobs in the same phase, whether a tick lands in idle
  // would be the same on every CPU. 40 waits per job, ~21 us idle each (block_wait and the wake-up).
  CHECK(idles == Approx(40 * r.get("jobs_per_min") / 60 / 72).epsilon(0.02));
  CHECK(r.get("idle_cpu_pct") == Approx(100 * idles * 21e-6).epsilon(0.05));
  // nohz: a CPU ticks at HZ while busy and not while idle (tick_clock_reads = 3 per tick, as Linux 4.6).
  CHECK(ticks == Approx(1000 * (1 - r.get("idle_cpu_pct") / 100)).epsilon(0.02));
  CHECK(r.get("ktime_get_per_cpu_per_s") == Approx(3 * ticks + (entry + exit) * idles).epsilon(0.01));
}

TEST_CASE("aim7: a tick reads the clock as Linux 4.6 does: twice in a row, then once more after its work",
          "[hpet]") {
  // hrtimer_update_base and tick_sched_timer's ktime_get back to back, then
  // update_process_times (tick_work), then clockevents_program_event's read.
  test::TempDir dir;
  const std::string file = dir.file("trace.json");
  const cli::TraceOptions trace{file, sim::from_ns(2e6), sim::from_ns(5e6)};
  cli::run_scenario(test::source_path("configs/scenarios/hpet-haswell-ex.json"), "tsc",
                    {scenario::parse_override("timers_per_job=0"), scenario::parse_override("warmup=1ms"),
                     scenario::parse_override("duration=4ms")},
                    std::nullopt, false, &trace);
  std::ifstream in(file);
  const auto doc = config::json::parse(in);
  std::vector<std::pair<double, double>> reads;  // CPU 1's clock reads: start and end, in us
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == 1 && e["name"] == "read_tsc")
      reads.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  // One tick's reads lie within a few us; ticks are 1 ms apart.
  std::vector<std::vector<std::pair<double, double>>> ticks;
  for (const auto& r : reads) {
    if (ticks.empty() || r.first - ticks.back().back().second > 100) ticks.emplace_back();
    ticks.back().push_back(r);
  }
  REQUIRE(ticks.size() >= 2);
  const double tick_work_us = 1.0;  // aim7's default tick_work
  for (const auto& t : ticks) {
    REQUIRE(t.size() == 3);
    CHECK(t[1].first - t[0].second < 0.1);           // the second read follows the first at once
    CHECK(t[2].first - t[1].second >= tick_work_us);  // the third comes after the tick's work
  }
}

TEST_CASE("SMT siblings that both compute each get the platform's share of the core", "[hpet][smt]") {
  Bench b("ivybridge-ex.json");
  const double share = b.m.cpu_params().smt_compute_share;
  REQUIRE(share < 1.0);
  std::vector<Tick> done(2);
  auto work = [&](int cpu, Tick d, std::size_t slot) -> Task<void> {
    co_await b.m.cpu(cpu).compute(d);
    done[slot] = b.m.sim().now();
  };
  SECTION("both busy for the whole time") {
    b.m.sim().spawn("thread 0", work(0, sim::kUs, 0));
    b.m.sim().spawn("thread 240", work(240, sim::kUs, 1));
    b.m.sim().run();
    CHECK(done[0] == Tick(std::ceil(1e6 / share)));
    CHECK(done[1] == done[0]);
  }
  SECTION("the sibling stops half way: the rest runs at full speed") {
    const Tick short_work = sim::from_ns(500 * share);  // ends at 500 ns of wall time
    b.m.sim().spawn("thread 0", work(0, sim::kUs, 0));
    b.m.sim().spawn("thread 240", work(240, short_work, 1));
    b.m.sim().run();
    CHECK(done[1] == 500 * sim::kNs);
    CHECK(done[0] == 500 * sim::kNs + (sim::kUs - short_work));
  }
  SECTION("a sibling stalled on an HPET read leaves the core whole") {
    b.m.sim().spawn("thread 0", work(0, sim::kUs, 0));
    auto stalled = [&]() -> Task<void> { co_await devices::hpet_read_counter(b.m.cpu(240), b.hpet); };
    b.m.sim().spawn("thread 240", stalled());
    b.m.sim().run();
    CHECK(done[0] == sim::kUs);
  }
}

TEST_CASE("hpet-shared: readers arriving while one CPU reads the device share its read: one device read, every "
          "reader gets its value",
          "[hpet]") {
  Bench b("ivybridge-ex.json", Clocksource::hpet_shared);
  b.tk->record_shared_reads(true);
  const int n = 24;  // waiters, on every socket of the machine
  std::vector<std::uint64_t> values;
  auto reader = [&](int cpu, Tick at) -> Task<void> {
    co_await b.m.sim().delay(at);
    values.push_back(co_await b.tk->read_clocksource(b.m.cpu(cpu)));
  };
  b.m.sim().spawn("holder", reader(0, 0));
  // The holder's device read takes over a microsecond; the others arrive while it holds the lock.
  for (int i = 1; i <= n; ++i) b.m.sim().spawn("waiter", reader((i * 37) % 480, 400 * sim::kNs + i * 10 * sim::kNs));
  b.m.sim().run();
  REQUIRE(values.size() == static_cast<std::size_t>(n + 1));
  CHECK(b.hpet.stats().reads == 1);
  REQUIRE(b.tk->shared_reads().size() == 1);
  for (std::uint64_t v : values) CHECK(v == b.tk->shared_reads().front().value);
}

TEST_CASE("plain hpet: the same readers each read the device", "[hpet]") {
  Bench b("ivybridge-ex.json", Clocksource::hpet);
  const int n = 24;
  auto reader = [&](int cpu, Tick at) -> Task<void> {
    co_await b.m.sim().delay(at);
    co_await b.tk->read_clocksource(b.m.cpu(cpu));
  };
  b.m.sim().spawn("first", reader(0, 0));
  for (int i = 1; i <= n; ++i) b.m.sim().spawn("other", reader((i * 37) % 480, 400 * sim::kNs + i * 10 * sim::kNs));
  b.m.sim().run();
  CHECK(b.hpet.stats().reads == static_cast<std::uint64_t>(n + 1));
}

TEST_CASE("the tick follows skew_tick: aligned on every CPU with 0, the kernel's offsets with 1", "[hpet]") {
  const Tick period = sim::kMs;
  std::vector<int> cpus = {0, 1, 17, 40, 71};
  for (const bool skew : {false, true}) {
    Bench t("haswell-ex.json");
    models::kernel::LocalTimerTick tick(t.m, 1000,
                                        skew ? models::kernel::TickSkew::kernel_skew : models::kernel::TickSkew::none,
                                        cpus, [](cpu::Cpu& c) -> Task<void> { co_await c.compute(sim::kUs); });
    tick.record_handler_starts(true);
    for (int cpu : cpus) t.m.sim().spawn("busy", t.m.cpu(cpu).compute(4950 * sim::kUs));
    tick.start(0);
    t.m.sim().run();
    tick.stop();
    for (int cpu : cpus) {
      // tick_setup_sched_timer: offset = (period / 2) / num_possible_cpus * cpu with skew_tick=1, none with 0.
      const Tick want = skew ? period / 2 / 72 * static_cast<Tick>(cpu) : 0;
      CHECK(tick.offset(cpu) == want);
      CHECK(models::kernel::LocalTimerTick::kernel_offset(period, 72, cpu, skew) == want);
      REQUIRE(tick.handler_starts(cpu).size() == 5);
      CHECK(tick.handler_starts(cpu)[2] == want + 2 * period + t.m.cpu_params().irq_entry);
    }
  }
}

TEST_CASE("aim7: with skew_tick=0 every CPU's tick reads the HPET at once, with skew_tick=1 the reads spread", "[hpet]") {
  auto run = [](const char* skew) {
    return run_aim7("hpet-haswell-ex.json", "hpet", {{"skew_tick", skew}, {"warmup", "1ms"}, {"duration", "5ms"}});
  };
  const auto aligned = run("0"), skewed = run("1");
  CHECK(aligned.get("hpet_max_queue") >= 72);  // the whole machine at the device
  CHECK(skewed.get("hpet_max_queue") < 10);
  CHECK(aligned.get("clock_read_ns_mean") > 10 * skewed.get("clock_read_ns_mean"));
}

TEST_CASE("aim7: a blocking operation switches to another runnable task, and a CPU idles only when none is runnable",
          "[hpet]") {
  const std::vector<scenario::Override> common = {{"blocking_ops_per_job", "40"}, {"block_wait", "20us"},
                                                  {"warmup", "2ms"}, {"duration", "20ms"}};
  auto with_users = [&](const char* users) {
    auto o = common;
    o.push_back({"users", users});
    return run_aim7("hpet-haswell-ex.json", "tsc", o);
  };
  const auto loaded = with_users("1500"), alone = with_users("72");
  // 20.8 tasks per CPU: every block finds another task runnable.
  CHECK(loaded.get("idle_periods_per_cpu_per_s") == 0);
  CHECK(loaded.get("context_switches_per_cpu_per_s") > 0);
  // One task per CPU: every blocking operation leaves the CPU idle, then switches back.
  CHECK(alone.get("idle_periods_per_cpu_per_s") == Approx(alone.get("context_switches_per_cpu_per_s")).epsilon(0.01));
  CHECK(alone.get("idle_cpu_pct") > 5);
}
