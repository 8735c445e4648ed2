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

TEST_CASE("with one service slot, two simultaneous HPET reads serialize: the second finishes one service time after "
          "the first",
          "[hpet]") {
  Bench b("haswell-ex.json");
  devices::HpetParams serial = b.hp;
  serial.outstanding_reads = 1;
  devices::Hpet one(serial, b.m.sim(), b.m.interconnect(), "hpet (one slot)");
  std::vector<Tick> done;
  auto reader = [&](int cpu) -> Task<void> {
    co_await devices::hpet_read_counter(b.m.cpu(cpu), one);
    done.push_back(b.m.sim().now());
  };
  b.m.sim().spawn("reader 1", reader(1));
  b.m.sim().spawn("reader 2", reader(2));
  b.m.sim().run();
  REQUIRE(done.size() == 2);
  CHECK(done[1] - done[0] == serial.service_time);
  CHECK(one.stats().max_queue == 2);
  CHECK(one.stats().queue_wait > 0);
}

TEST_CASE("the HPET serves as many reads at once as it has service slots, one more waits for a slot", "[hpet]") {
  Bench b("haswell-ex.json");
  const int slots = b.hp.outstanding_reads;
  REQUIRE(slots > 1);
  auto reader = [&](int cpu) -> Task<void> { co_await devices::hpet_read_counter(b.m.cpu(cpu), b.hpet); };
  for (int cpu = 1; cpu <= slots; ++cpu) b.m.sim().spawn("reader", reader(cpu));
  b.m.sim().run();
  CHECK(b.hpet.stats().queue_wait == 0);
  CHECK(b.hpet.stats().busy == slots * b.hp.service_time);
  // A second wave of slots + 1 simultaneous reads: the last one waits (less than) one service time.
  const Tick wave = b.m.sim().now();
  for (int cpu = 1; cpu <= slots + 1; ++cpu) b.m.sim().spawn("reader", reader(cpu));
  b.m.sim().run();
  CHECK(b.hpet.stats().queue_wait > 0);
  CHECK(b.hpet.stats().queue_wait <= b.hp.service_time);
  CHECK(b.m.sim().now() - wave >= 2 * b.hp.service_time);
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

TEST_CASE("aim7: every blocking wait reads the clock on idle entry and exit, and busy CPUs tick at HZ", "[hpet]") {
  const int entry = 2, exit = 3;
  auto r = run_aim7("hpet-haswell-ex.json", "tsc",
                    {{"vdso_reads_per_job", "0"}, {"timers_per_job", "0"}, {"blocking_ops_per_job", "40"},
                     {"block_wait", "20us"}, {"idle_entry_clock_reads", std::to_string(entry)},
                     {"idle_exit_clock_reads", std::to_string(exit)}, {"warmup", "2ms"}, {"duration", "20ms"}});
  const double idles = r.get("idle_periods_per_cpu_per_s"), ticks = r.get("ticks_per_cpu_per_s");
  // 40 waits per 6.33 ms job, ~21 us idle each.
  CHECK(idles == Approx(40 / 7.2e-3).epsilon(0.05));
  CHECK(r.get("idle_cpu_pct") == Approx(100 * idles * 21e-6).epsilon(0.05));
  // nohz: a CPU ticks at HZ while busy and not while idle (tick_clock_reads = 2 per tick).
  CHECK(ticks == Approx(1000 * (1 - r.get("idle_cpu_pct") / 100)).epsilon(0.02));
  CHECK(r.get("ktime_get_per_cpu_per_s") == Approx(2 * ticks + (entry + exit) * idles).epsilon(0.01));
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
