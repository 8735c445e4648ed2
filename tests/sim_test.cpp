// The discrete-event core: ordering, determinism, nesting, waits, errors, watchdog.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "cohsim/sim/histogram.hpp"
#include "cohsim/sim/log.hpp"
#include "cohsim/sim/random.hpp"
#include "cohsim/sim/simulator.hpp"

using namespace cohsim::sim;

namespace {

Task<void> record_after(Simulator& sim, Tick d, std::vector<std::string>& log, std::string tag) {
  co_await sim.delay(d);
  log.push_back(tag + "@" + std::to_string(sim.now()));
}

Task<int> add_later(Simulator& sim, int a, int b) {
  co_await sim.delay(5);
  co_return a + b;
}

Task<int> nested_sum(Simulator& sim, int depth) {
  if (depth == 0) co_return 0;
  int below = co_await nested_sum(sim, depth - 1);
  int here = co_await add_later(sim, depth, 0);
  co_return below + here;
}

}  // namespace

TEST_CASE("events at equal times run in the order they were scheduled", "[sim]") {
  Simulator sim;
  std::vector<std::string> log;
  for (int i = 0; i < 5; ++i) sim.spawn("p" + std::to_string(i), record_after(sim, 10, log, "p" + std::to_string(i)));
  sim.run();
  REQUIRE(log == std::vector<std::string>{"p0@10", "p1@10", "p2@10", "p3@10", "p4@10"});
}

TEST_CASE("delays advance time exactly and events run in time order", "[sim]") {
  Simulator sim;
  std::vector<std::string> log;
  sim.spawn("late", record_after(sim, 7000, log, "late"));
  sim.spawn("early", record_after(sim, 3, log, "early"));
  sim.spawn("zero", record_after(sim, 0, log, "zero"));
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log == std::vector<std::string>{"zero@0", "early@3", "late@7000"});
  REQUIRE(sim.now() == 7000);
}

TEST_CASE("nested coroutine awaits return values and accumulate time", "[sim]") {
  Simulator sim;
  int result = -1;
  auto top = [&]() -> Task<void> { result = co_await nested_sum(sim, 100); };
  sim.spawn("top", top());
  sim.run();
  REQUIRE(result == 5050);
  REQUIRE(sim.now() == 500);
}

TEST_CASE("a done task goes on at once and the work around it keeps its order", "[sim]") {
  // A function that has nothing to wait for returns Task<void>::done(): the
  // awaiting process goes on in the same event, as when it awaits a
  // coroutine that does not suspend; a task that waits still waits.
  Simulator sim;
  std::vector<std::string> log;
  auto maybe_wait = [&](bool wait) -> Task<void> {
    if (!wait) return Task<void>::done();
    return record_after(sim, 4, log, "waited");
  };
  auto top = [&]() -> Task<void> {
    const std::uint64_t before = sim.events_executed();
    co_await maybe_wait(false);
    log.push_back("done@" + std::to_string(sim.now()) + " events+" + std::to_string(sim.events_executed() - before));
    co_await maybe_wait(true);
    log.push_back("after@" + std::to_string(sim.now()));
  };
  sim.spawn("top", top());
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log == std::vector<std::string>{"done@0 events+0", "waited@4", "after@4"});
  REQUIRE_THROWS_AS(sim.spawn("nothing", Task<void>::done()), SimError);
}

TEST_CASE("a run is deterministic: two identical runs give identical traces", "[sim]") {
  auto trace = [] {
    Simulator sim;
    std::vector<std::string> log;
    for (int i = 0; i < 50; ++i)
      sim.spawn("p", record_after(sim, static_cast<Tick>((i * 7919) % 13), log, std::to_string(i)));
    sim.run();
    return log;
  };
  REQUIRE(trace() == trace());
}

TEST_CASE("notify wakes every waiter at the notifying time, in wait order", "[sim]") {
  Simulator sim;
  Signal sig;
  std::vector<std::string> log;
  auto waiter = [&](std::string tag) -> Task<void> {
    co_await sig.wait(sim, "test signal");
    log.push_back(tag + "@" + std::to_string(sim.now()));
  };
  auto notifier = [&]() -> Task<void> {
    co_await sim.delay(42);
    REQUIRE(sig.notify_all(sim) == 2);
  };
  sim.spawn("a", waiter("a"));
  sim.spawn("b", waiter("b"));
  sim.spawn("n", notifier());
  sim.run();
  REQUIRE(log == std::vector<std::string>{"a@42", "b@42"});
}

TEST_CASE("a wait with a deadline ends by timeout when nobody notifies", "[sim]") {
  Simulator sim;
  Signal sig;
  bool timed_out = false;
  Tick woke = 0;
  auto waiter = [&]() -> Task<void> {
    co_await sig.wait(sim, "test", 0, 100);
    timed_out = sim.current()->timed_out();
    woke = sim.now();
  };
  sim.spawn("w", waiter());
  sim.run();
  REQUIRE(timed_out);
  REQUIRE(woke == 100);
}

TEST_CASE("a notify before the deadline wins and the stale timeout is ignored", "[sim]") {
  Simulator sim;
  Signal sig;
  int wakeups = 0;
  auto waiter = [&]() -> Task<void> {
    co_await sig.wait(sim, "test", 0, 100);
    REQUIRE_FALSE(sim.current()->timed_out());
    ++wakeups;
    co_await sim.delay(500);
  };
  auto notifier = [&]() -> Task<void> {
    co_await sim.delay(10);
    sig.notify_all(sim);
  };
  sim.spawn("w", waiter());
  sim.spawn("n", notifier());
  sim.run();
  REQUIRE(wakeups == 1);
  REQUIRE(sim.now() == 510);
}

TEST_CASE("an exception inside a task reaches run()", "[sim]") {
  Simulator sim;
  auto thrower = [&]() -> Task<int> {
    co_await sim.delay(3);
    throw std::runtime_error("model failed");
    co_return 0;
  };
  auto top = [&]() -> Task<void> { co_await thrower(); };
  sim.spawn("top", top());
  REQUIRE_THROWS_WITH(sim.run(), "model failed");
}

TEST_CASE("the watchdog names a process that waits forever", "[sim][watchdog]") {
  Simulator sim;
  Signal never;
  sim.set_address_describer([](std::uint64_t) { return std::string("csd.flags"); });
  auto stuck = [&]() -> Task<void> { co_await never.wait(sim, "csd_lock_wait", 0x1040); };
  sim.spawn("cpu0", stuck());
  try {
    sim.run();
    FAIL("run() returned");
  } catch (const WatchdogError& e) {
    std::string what = e.what();
    CHECK(what.find("deadlock") != std::string::npos);
    CHECK(what.find("cpu0") != std::string::npos);
    CHECK(what.find("csd_lock_wait") != std::string::npos);
    CHECK(what.find("csd.flags") != std::string::npos);
  }
}

TEST_CASE("the watchdog report puts the stuck model first and only a few idle daemons", "[sim][watchdog]") {
  Simulator sim;
  Signal never;
  auto wait_forever = [&](const char* what) -> Task<void> { co_await never.wait(sim, what); };
  for (int i = 0; i < 20; ++i) sim.spawn("engine" + std::to_string(i), wait_forever("work to do"), /*daemon=*/true);
  sim.spawn("cpu7", wait_forever("a lock never released"));
  try {
    sim.run();
    FAIL("run() returned");
  } catch (const WatchdogError& e) {
    const std::string what = e.what();
    const auto cpu = what.find("cpu7: waits on a lock never released");
    REQUIRE(cpu != std::string::npos);
    CHECK(cpu < what.find("engine0 (daemon)"));
    CHECK(what.find("engine7 (daemon)") != std::string::npos);
    CHECK(what.find("engine8 (daemon)") == std::string::npos);
    CHECK(what.find("... and 12 more daemons waiting for work") != std::string::npos);
  }
}

TEST_CASE("the watchdog report of a big machine lists a few dozen model processes, the odd ones out, and counts the rest",
          "[sim][watchdog]") {
  Simulator sim;
  Signal never;
  auto wait_forever = [&](const char* what) -> Task<void> { co_await never.wait(sim, what); };
  auto spin = [&]() -> Task<void> {
    for (;;) co_await sim.delay(1000);
  };
  for (int i = 0; i < 1000; ++i) sim.spawn("cpu" + std::to_string(i), wait_forever("a lock never released"));
  sim.spawn("cpu1000", wait_forever("csd_lock_wait"));  // the odd one out, past the first 24
  for (int i = 1001; i < 1006; ++i) sim.spawn("cpu" + std::to_string(i), spin());
  for (int i = 0; i < 20; ++i) sim.spawn("engine" + std::to_string(i), wait_forever("work to do"), /*daemon=*/true);
  RunLimits limits;
  limits.max_time_without_progress = 10'000'000;  // 10 us
  try {
    sim.run(limits);
    FAIL("run() returned");
  } catch (const WatchdogError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("cpu23: waits on a lock never released") != std::string::npos);
    CHECK(what.find("cpu24:") == std::string::npos);
    const auto odd = what.find("cpu1000: waits on csd_lock_wait");
    const auto rest = what.find("... and 981 more model processes: 976 waiting on a lock never released, 5 waiting on delay");
    const auto daemons = what.find("engine0 (daemon)");
    REQUIRE(odd != std::string::npos);
    REQUIRE(rest != std::string::npos);
    REQUIRE(daemons != std::string::npos);
    CHECK(odd < rest);
    CHECK(rest < daemons);
    CHECK(std::count(what.begin(), what.end(), '\n') < 40);
  }
}

TEST_CASE("a daemon that livelocks is named even behind many idle daemons", "[sim][watchdog]") {
  Simulator sim;
  Signal never;
  auto idle = [&]() -> Task<void> { co_await never.wait(sim, "work to do"); };
  auto spinner = [&]() -> Task<void> {
    for (;;) co_await sim.delay(0);
  };
  for (int i = 0; i < 20; ++i) sim.spawn("engine" + std::to_string(i), idle(), /*daemon=*/true);
  sim.spawn("poller", spinner(), /*daemon=*/true);
  sim.spawn("cpu0", idle());
  RunLimits limits;
  limits.max_events_per_tick = 10'000;
  REQUIRE_THROWS_WITH(sim.run(limits), Catch::Contains("poller (daemon): waits on delay"));
}

TEST_CASE("the watchdog stops a livelock that never advances time", "[sim][watchdog]") {
  Simulator sim;
  auto spinner = [&]() -> Task<void> {
    for (;;) co_await sim.delay(0);
  };
  sim.spawn("spinner", spinner());
  RunLimits limits;
  limits.max_events_per_tick = 10'000;
  REQUIRE_THROWS_AS(sim.run(limits), WatchdogError);
}

TEST_CASE("the watchdog stops a run that advances time without progress", "[sim][watchdog]") {
  Simulator sim;
  auto spinner = [&]() -> Task<void> {
    for (;;) co_await sim.delay(kNs);
  };
  sim.spawn("spinner", spinner());
  RunLimits limits;
  limits.max_time_without_progress = kUs;
  REQUIRE_THROWS_WITH(sim.run(limits), Catch::Contains("no progress"));
}

TEST_CASE("daemons do not keep a run alive", "[sim]") {
  Simulator sim;
  Signal never;
  auto idle = [&]() -> Task<void> { co_await never.wait(sim, "idle"); };
  std::vector<std::string> log;
  sim.spawn("idle", idle(), /*daemon=*/true);
  sim.spawn("work", record_after(sim, 9, log, "work"));
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log.size() == 1);
}

TEST_CASE("run stops at the time limit and can continue", "[sim]") {
  Simulator sim;
  std::vector<std::string> log;
  sim.spawn("a", record_after(sim, 100, log, "a"));
  RunLimits limits;
  limits.until = 50;
  REQUIRE(sim.run(limits) == RunEnd::time_limit);
  REQUIRE(log.empty());
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log.size() == 1);
}

TEST_CASE("time units parse once into picoseconds", "[sim]") {
  REQUIRE(parse_time("34ns") == 34000u);
  REQUIRE(parse_time("1.5us") == 1500000u);
  REQUIRE(parse_time("0") == 0u);
  REQUIRE_FALSE(parse_time("34").has_value());
  REQUIRE_FALSE(parse_time("-3ns").has_value());
  REQUIRE_FALSE(parse_time("3 parsecs").has_value());
  REQUIRE(parse_frequency("2.6GHz") == Approx(2.6e9));
  REQUIRE(parse_size("24MiB") == 24u * 1024 * 1024);
  REQUIRE_FALSE(parse_size("1.5B").has_value());
}

TEST_CASE("a latency histogram keeps the exact mean and percentiles within 1/256 of the samples", "[sim]") {
  LatencyHistogram h;
  CHECK(h.percentile_ns(99) == 0);
  std::vector<Tick> samples;
  RandomStream rng(7, "histogram-test");
  for (int i = 0; i < 20000; ++i) {
    // From a few picoseconds (exact bins) to milliseconds (wide bins).
    samples.push_back(rng.below(200) + (rng.below(4) == 0 ? rng.below(3 * kMs) : rng.below(2 * kUs)));
    h.add(samples.back());
  }
  std::sort(samples.begin(), samples.end());
  long double sum = 0;
  for (Tick t : samples) sum += static_cast<long double>(t);
  CHECK(h.count() == samples.size());
  CHECK(h.mean_ns() == Approx(static_cast<double>(sum / samples.size() / 1000)).epsilon(1e-12));
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 100.0}) {
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(samples.size() - 1) + 0.5);
    const double exact = to_ns(samples[rank]);
    INFO("p" << p << " exact " << exact);
    CHECK(std::abs(h.percentile_ns(p) - exact) <= exact / 256 + 0.001);
  }
}

namespace {

/// A callback event that records the count events_executed() gives while it runs.
struct CountLog {
  Simulator* sim;
  std::vector<std::uint64_t> seen;
  static void record(void* ctx, std::uint64_t) {
    auto* log = static_cast<CountLog*>(ctx);
    log->seen.push_back(log->sim->events_executed());
  }
  static void record_and_stop(void* ctx, std::uint64_t arg) {
    record(ctx, arg);
    static_cast<CountLog*>(ctx)->sim->stop();
  }
};

}  // namespace

TEST_CASE("events_executed counts the running event and every event before it", "[sim]") {
  Simulator sim;
  CountLog log{&sim, {}};
  for (int i = 0; i < 3; ++i) sim.schedule(0, &CountLog::record, &log);
  sim.schedule(5, &CountLog::record, &log);
  sim.schedule(5, &CountLog::record, &log);
  sim.run();
  REQUIRE(log.seen == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  REQUIRE(sim.events_executed() == 5);
}

TEST_CASE("stop ends the run after the current event and the next run goes on from the one after", "[sim]") {
  Simulator sim;
  CountLog log{&sim, {}};
  sim.schedule(0, &CountLog::record, &log);
  sim.schedule(0, &CountLog::record_and_stop, &log);
  sim.schedule(0, &CountLog::record, &log);
  REQUIRE(sim.run() == RunEnd::stopped);
  REQUIRE(log.seen == std::vector<std::uint64_t>{1, 2});
  REQUIRE(sim.events_executed() == 2);
  REQUIRE(sim.run() == RunEnd::queue_empty);
  REQUIRE(log.seen == std::vector<std::uint64_t>{1, 2, 3});
}

TEST_CASE("the livelock watchdog fails right after the first event past the per-tick limit", "[sim][watchdog]") {
  Simulator sim;
  struct Again {
    static void fire(void* ctx, std::uint64_t) {
      auto* s = static_cast<Simulator*>(ctx);
      s->schedule(s->now(), &Again::fire, s);
      s->schedule(s->now(), &Again::fire, s);  // the tick's queue keeps growing
    }
  };
  sim.schedule(3, &Again::fire, &sim);
  RunLimits limits;
  limits.max_events_per_tick = 100;
  REQUIRE_THROWS_WITH(sim.run(limits), Catch::Contains("101 events without time moving"));
  REQUIRE(sim.events_executed() == 101);
}

TEST_CASE("the progress hook runs after every 2^k-th event", "[sim]") {
  Simulator sim;
  std::vector<std::uint64_t> at;
  sim.set_progress_hook([&] { at.push_back(sim.events_executed()); }, 10);
  CountLog log{&sim, {}};
  for (int i = 0; i < 5000; ++i) sim.schedule(static_cast<Tick>(i % 3), &CountLog::record, &log);
  sim.run();
  REQUIRE(at == std::vector<std::uint64_t>{1024, 2048, 3072, 4096});
}

TEST_CASE("a run ends as all done right after the event that finishes the last process", "[sim]") {
  Simulator sim;
  CountLog log{&sim, {}};
  auto quick = [&]() -> Task<void> { co_return; };
  sim.spawn("quick", quick());
  sim.schedule(0, &CountLog::record, &log);  // same tick, after the process's start
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log.seen.empty());
  REQUIRE(sim.events_executed() == 1);
}

TEST_CASE("a released hold ends the run after the releasing event", "[sim]") {
  Simulator sim;
  CountLog log{&sim, {}};
  auto work = [&]() -> Task<void> { co_await sim.delay(10); };
  struct Release {
    static void fire(void* ctx, std::uint64_t) { static_cast<Simulator*>(ctx)->release_run(); }
  };
  sim.spawn("work", work());
  sim.hold_run();
  sim.schedule(20, &Release::fire, &sim);
  sim.schedule(20, &CountLog::record, &log);
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(sim.now() == 20);
  REQUIRE(log.seen.empty());
}

TEST_CASE("notify wakes many waiters in wait order and skips one whose wait ended by timeout", "[sim]") {
  Simulator sim;
  Signal sig;
  std::vector<std::string> log;
  auto waiter = [&](std::string tag, Tick deadline) -> Task<void> {
    co_await sig.wait(sim, "test signal", 0, deadline);
    log.push_back(tag + (sim.current()->timed_out() ? " timed out@" : "@") + std::to_string(sim.now()));
  };
  auto notifier = [&]() -> Task<void> {
    co_await sim.delay(42);
    REQUIRE(sig.waiter_count() == 5);
    REQUIRE(sig.notify_all(sim) == 4);
    REQUIRE(sig.waiter_count() == 0);
    REQUIRE(sig.notify_all(sim) == 0);
  };
  sim.spawn("a", waiter("a", kNever));
  sim.spawn("b", waiter("b", 7));
  sim.spawn("c", waiter("c", kNever));
  sim.spawn("d", waiter("d", kNever));
  sim.spawn("e", waiter("e", kNever));
  sim.spawn("n", notifier());
  sim.run();
  REQUIRE(log == std::vector<std::string>{"b timed out@7", "a@42", "c@42", "d@42", "e@42"});
}

TEST_CASE("a stale signal entry does not wake a process that now waits on something else", "[sim]") {
  Simulator sim;
  Signal first, second;
  std::vector<std::string> log;
  auto waiter = [&]() -> Task<void> {
    co_await first.wait(sim, "first", 0, 5);  // times out: its entry in `first` is stale
    co_await second.wait(sim, "second");
    log.push_back("woken@" + std::to_string(sim.now()));
  };
  auto notifier = [&]() -> Task<void> {
    co_await sim.delay(10);
    REQUIRE(first.notify_all(sim) == 0);
    co_await sim.delay(10);
    REQUIRE(second.notify_all(sim) == 1);
  };
  sim.spawn("w", waiter());
  sim.spawn("n", notifier());
  sim.run();
  REQUIRE(log == std::vector<std::string>{"woken@20"});
}

TEST_CASE("a waiting process shows what it waits on and since when, a running one nothing", "[sim]") {
  Simulator sim;
  Signal sig;
  Process* w = nullptr;
  auto waiter = [&]() -> Task<void> {
    co_await sim.delay(3);
    co_await sig.wait(sim, "the flag", 0x40);
  };
  auto observer = [&]() -> Task<void> {
    co_await sim.delay(1);
    CHECK(w->waiting());
    CHECK(w->waiting_on() == Simulator::kDelayWait);
    co_await sim.delay(9);
    CHECK(w->waiting());
    CHECK(w->waiting_on() == "the flag");
    CHECK(w->wait_address() == 0x40);
    CHECK(w->wait_since() == 3);
    const std::uint64_t id = w->wait_id();
    sim.wake(w, id);
    sim.wake(w, id);  // a second wake-up for the same wait is stale
    CHECK_FALSE(sim.current()->waiting());
    CHECK(sim.current()->waiting_on().empty());
  };
  w = &sim.spawn("w", waiter());
  sim.spawn("o", observer());
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE_FALSE(w->waiting());
  REQUIRE(w->waiting_on().empty());
}

namespace {

// Events that record (time, id) and may schedule more when they run.
struct Plan {
  Simulator sim;
  std::vector<std::vector<std::pair<Tick, int>>> then;  // then[id]: what event id schedules
  std::vector<std::pair<Tick, int>> ran;
  void add(Tick at, int id) { sim.schedule(at, &Plan::fire, this, static_cast<std::uint64_t>(id)); }
  static void fire(void* ctx, std::uint64_t id) {
    auto* p = static_cast<Plan*>(ctx);
    p->ran.push_back({p->sim.now(), static_cast<int>(id)});
    for (auto [at, next] : p->then[id]) p->add(at, next);
  }
};

}  // namespace

TEST_CASE("a delay ends without an event only when no event is queued at or before its end", "[sim]") {
  // delay() decides this from the queue slot of the delay's end: an event in
  // a lower or the same slot (even a later one) sends the delay the event's
  // way, and one in a higher slot does not. Check the decision against the
  // queued times themselves, with queue bases and distances of every
  // magnitude (0 to 8 bytes apart) and ends next to the earliest queued
  // time, where the answer turns; each process delays twice, the second
  // time with the queue's base behind the current time when the first
  // delay ended without an event.
  std::mt19937_64 rng(2026);
  auto after = [&](Tick from) {  // a time after `from` (< kNever), 1 to 8 bytes away
    const unsigned bits = 1 + static_cast<unsigned>(rng() % 64);
    const Tick room = kNever - from;
    const Tick span = bits == 64 ? room : std::min(Tick{1} << bits, room);
    return from + 1 + rng() % span;
  };
  struct Go {
    Simulator* sim;
    Signal* signal;
    static void fire(void* ctx, std::uint64_t) {
      auto* g = static_cast<Go*>(ctx);
      g->signal->notify_all(*g->sim);
    }
    static void nothing(void*, std::uint64_t) {}
  };
  struct Seen {
    Tick queue_base, end, earliest;  // earliest: of the events queued after the delay's start
    bool queued, inlined;
  };
  std::vector<Seen> seen;
  for (int trial = 0; trial < 1000; ++trial) {
    Simulator sim;
    Signal signal;
    Go go{&sim, &signal};
    const Tick base = (rng() >> (rng() % 64)) >> 1;  // the tick the process resumes at, from the queue
    std::vector<Tick> times;
    // One delay from now to an end picked near the earliest queued time or anywhere after now.
    auto one_delay = [&](Tick queue_base) -> Task<void> {
      Seen d{queue_base, 0, kNever, false, false};
      for (Tick t : times)
        if (t > sim.now()) {
          d.earliest = std::min(d.earliest, t);
          d.queued = true;
        }
      const Tick k = rng() % 4;
      if (k < 3 && d.queued)
        d.end = std::max(sim.now(), d.earliest - 1 + (d.earliest > kNever - 2 ? 0 : k));
      else
        d.end = rng() % 8 == 0 || sim.now() == kNever ? sim.now() : after(sim.now());
      const std::uint64_t before = sim.delays_taken_inline();
      co_await sim.delay(d.end - sim.now());
      d.inlined = sim.delays_taken_inline() > before;
      seen.push_back(d);
    };
    auto process = [&]() -> Task<void> {
      co_await signal.wait(sim, "go");
      for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
        times.push_back(after(base));
        sim.schedule(times.back(), &Go::nothing, nullptr);
      }
      co_await one_delay(base);
      // The queue's base stays behind when the delay ended without an event.
      co_await one_delay(seen.back().inlined ? base : sim.now());
    };
    sim.spawn("p", process());
    sim.schedule(base, &Go::fire, &go);
    sim.run();
  }
  int inline_lower_level = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const Seen& d = seen[i];
    INFO("delay " << i << " queue base " << d.queue_base << " end " << d.end << " earliest " << d.earliest
                  << (d.queued ? "" : " (nothing queued)"));
    if (d.inlined) REQUIRE((!d.queued || d.earliest > d.end));
    if (!d.queued && d.end != kNever) REQUIRE(d.inlined);
    if (d.end == d.queue_base) REQUIRE(d.inlined);  // every queued time is later
    // The end's level (its highest byte that differs from the queue's base)
    // below the earliest event's: a lower slot.
    auto level = [&](Tick t) { return (std::bit_width(t ^ d.queue_base) - 1) / 8; };
    if (d.queued && d.end != d.queue_base && level(d.end) < level(d.earliest)) {
      REQUIRE(d.inlined);
      ++inline_lower_level;
    }
  }
  REQUIRE(inline_lower_level > 50);  // the case is exercised
}

TEST_CASE("events of one far tick run in scheduling order, also those scheduled after the queue moved closer",
          "[sim]") {
  // t is 5 bytes away from 0: its events start in the queue's top level and
  // move down level by level as the earlier events bring the base closer;
  // 7, 8 and 9 are scheduled from there (on their way down, and from one
  // byte away).
  const Tick t = 0x0102'0304'0506;
  const Tick closer = 0x0102'0300'0000, one_byte_before = t - 0x100;
  Plan plan;
  plan.then.resize(10);
  plan.then[5] = {{t, 7}, {t + 1, 9}};
  plan.then[6] = {{t, 8}};
  plan.add(t, 1);
  plan.add(t + 1, 2);
  plan.add(t, 3);
  plan.add(t + 0x10000, 4);
  plan.add(closer, 5);
  plan.add(one_byte_before, 6);
  plan.sim.run();
  REQUIRE(plan.ran == std::vector<std::pair<Tick, int>>{{closer, 5},
                                                        {one_byte_before, 6},
                                                        {t, 1},
                                                        {t, 3},
                                                        {t, 7},
                                                        {t, 8},
                                                        {t + 1, 2},
                                                        {t + 1, 9},
                                                        {t + 0x10000, 4}});
}

TEST_CASE("a reaped process's stale timeouts do not touch a process spawned after the reap", "[sim]") {
  // Many processes wait with a deadline, are woken early and end; they are
  // reaped (more than 64 done, most of the list) before their deadlines come.
  // A process spawned after the reap may reuse one of their objects: the
  // stale timeouts must find a wait id that is not current (under the
  // sanitizers, a freed object would be a use after free).
  constexpr int kWaiters = 100;
  constexpr Tick kDeadline = 1000;
  Simulator sim;
  Signal sig;
  int woken = 0, timed_out = 0;
  Tick late_resumed = 0;
  auto waiter = [&]() -> Task<void> {
    co_await sig.wait(sim, "test", 0, kDeadline);
    if (sim.current()->timed_out()) ++timed_out;
    ++woken;
  };
  auto late = [&]() -> Task<void> {
    co_await sim.delay(5000);
    late_resumed = sim.now();
  };
  auto driver = [&]() -> Task<void> {
    co_await sim.delay(10);
    sig.notify_all(sim);
    co_await sim.delay(10);  // the waiters ended at 10; the reap comes with this tick
    for (int i = 0; i < kWaiters; ++i) sim.spawn("late", late());
  };
  for (int i = 0; i < kWaiters; ++i) sim.spawn("w", waiter());
  sim.spawn("driver", driver());
  sim.run();
  CHECK(woken == kWaiters);
  CHECK(timed_out == 0);
  CHECK(late_resumed == 20 + 5000);  // not at the stale deadline (1000)
  CHECK(sim.now() == 20 + 5000);
}

namespace {

/// A mixed workload whose log is every resumption and callback with its time
/// and event count: delays of 0 to 1,000 ps (some alone in the queue, some
/// not), notifies, waits with deadlines, callbacks, short-lived processes
/// (enough to be reaped; their wait ids show which objects were reused),
/// stops, both watchdogs armed, every time above 2^40, then one process
/// alone. Each process draws from its own generator, so its choices do not
/// depend on the interleaving.
struct MixedRun {
  std::vector<std::string> log;
  std::vector<std::string> hooks;
  std::uint64_t events = 0;
  std::uint64_t inline_delays = 0;
  Tick end = 0;
};

MixedRun mixed_run(bool inline_delays) {
  constexpr Tick kStart = (Tick{1} << 40) + 123'456;
  Simulator sim;
  sim.set_inline_delays(inline_delays);
  MixedRun out;
  std::vector<Signal> signals(4);
  auto stamp = [&] { return "@" + std::to_string(sim.now()) + "#" + std::to_string(sim.events_executed()); };
  struct Note {
    MixedRun* out;
    Simulator* sim;
    std::function<std::string()> stamp;
    static void fire(void* ctx, std::uint64_t arg) {
      auto* n = static_cast<Note*>(ctx);
      n->out->log.push_back("cb" + std::to_string(arg) + n->stamp());
      if (arg == 7) n->sim->stop();  // worker 7's callbacks (a few) stop the run
    }
  } note{&out, &sim, stamp};
  auto child = [&](Tick d) -> Task<void> {
    if (d > 0) co_await sim.delay(d);
  };
  auto worker = [&](int id, int steps) -> Task<void> {
    std::mt19937_64 rng(static_cast<std::uint64_t>(id) * 7919 + 1);
    auto pick = [&](std::uint64_t n) { return rng() % n; };
    co_await sim.delay(kStart);
    for (int s = 0; s < steps; ++s) {
      switch (pick(8)) {
        case 0:
        case 1: co_await sim.delay(pick(4) == 0 ? 0 : pick(3) == 0 ? 1000 : 1 + pick(5)); break;
        case 2: signals[pick(signals.size())].notify_all(sim); break;
        case 3: co_await signals[pick(signals.size())].wait(sim, "mixed", 0, sim.now() + 1 + pick(50)); break;
        case 4:
          if (id != 7 || pick(20) == 0)
            sim.schedule(sim.now() + pick(8), &Note::fire, &note, static_cast<std::uint64_t>(id));
          break;
        case 5: out.log.push_back("spawn" + std::to_string(sim.spawn("c", child(pick(3))).wait_id())); break;
        case 6: sim.note_progress(); break;
        default: co_await sim.delay(1 + pick(3)); break;
      }
      out.log.push_back("p" + std::to_string(id) + "." + std::to_string(s) + stamp() +
                        (sim.current()->timed_out() ? "t" : ""));
    }
  };
  for (int id = 0; id < 12; ++id) sim.spawn("w" + std::to_string(id), worker(id, 400));
  sim.spawn("alone", worker(99, 20'000));  // outlives the others by far
  sim.set_progress_hook([&] { out.hooks.push_back(stamp()); }, 10);
  // Time limits before the workers start (a run restarts the no-progress
  // clock) and in the middle of their work.
  const Tick untils[] = {kStart - 1, kStart + 3'000, kNever};
  std::size_t next_until = 0;
  RunLimits limits;
  limits.max_events_per_tick = 500;
  limits.max_time_without_progress = 20'000;
  limits.until = untils[next_until++];
  for (;;) {
    const RunEnd end = sim.run(limits);
    out.log.push_back("end" + std::to_string(static_cast<int>(end)) + stamp());
    if (end == RunEnd::all_done) break;
    REQUIRE(end != RunEnd::queue_empty);
    if (end == RunEnd::time_limit) limits.until = untils[next_until++];
  }
  out.events = sim.events_executed();
  out.inline_delays = sim.delays_taken_inline();
  out.end = sim.now();
  return out;
}

}  // namespace

TEST_CASE("delays ended without an event change no event's order, time or count", "[sim]") {
  const MixedRun events = mixed_run(false);
  const MixedRun inlined = mixed_run(true);
  REQUIRE(events.inline_delays == 0);
  REQUIRE(inlined.inline_delays > 1000);  // the lone process's delays at least
  REQUIRE(inlined.events == events.events);
  REQUIRE(inlined.end == events.end);
  REQUIRE(inlined.hooks == events.hooks);
  REQUIRE(inlined.log.size() == events.log.size());
  for (std::size_t i = 0; i < events.log.size(); ++i) {
    INFO("entry " << i);
    REQUIRE(inlined.log[i] == events.log[i]);
  }
}

TEST_CASE("a lone process's delays end without events up to the time limit", "[sim]") {
  Simulator sim;
  int done = 0;
  auto ticker = [&]() -> Task<void> {
    for (;;) {
      co_await sim.delay(kNs);
      ++done;
    }
  };
  sim.spawn("ticker", ticker());
  RunLimits limits;
  limits.until = 10 * kNs + 500;
  REQUIRE(sim.run(limits) == RunEnd::time_limit);
  REQUIRE(done == 10);
  REQUIRE(sim.now() == limits.until);
  REQUIRE(sim.events_executed() == 11);  // the start and ten delays
  REQUIRE(sim.delays_taken_inline() == 10);
}

TEST_CASE("a stop inside a process ends the run before the process's next delay ends", "[sim]") {
  Simulator sim;
  std::vector<std::string> log;
  auto stopper = [&]() -> Task<void> {
    sim.stop();
    co_await sim.delay(5);  // alone in the queue: the next event, but the run is over first
    log.push_back("after@" + std::to_string(sim.now()));
  };
  sim.spawn("stopper", stopper());
  REQUIRE(sim.run() == RunEnd::stopped);
  REQUIRE(log.empty());
  REQUIRE(sim.now() == 0);
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(log == std::vector<std::string>{"after@5"});
}

TEST_CASE("delays ended without an event each start a tick for the livelock watchdog", "[sim][watchdog]") {
  Simulator sim;
  auto ticker = [&]() -> Task<void> {
    for (int i = 0; i < 1000; ++i) co_await sim.delay(1);
  };
  sim.spawn("ticker", ticker());
  RunLimits limits;
  limits.max_events_per_tick = 100;  // far below the 1,001 events of the run, all at different ticks
  REQUIRE(sim.run(limits) == RunEnd::all_done);
  // Every delay but those that end a chain of kMaxInlineChain ended inline.
  REQUIRE(sim.delays_taken_inline() == 1000 - 1000 / (Simulator::kMaxInlineChain + 1));
}

TEST_CASE("a lone process whose every delay ends inline still returns to the event loop, so nested tasks take no stack",
          "[sim]") {
  // A thread alone on a line it holds: each step is a nested task whose delay
  // ends inline. Without a bound on the chain the process never left the
  // coroutine the loop resumed, and a build without tail calls for the
  // symmetric transfers (ASan) ran out of stack.
  Simulator sim;
  constexpr int kSteps = 200'000;
  int done = 0;
  auto step = [&]() -> Task<void> { co_await sim.delay(1); };
  auto worker = [&]() -> Task<void> {
    for (int i = 0; i < kSteps; ++i) {
      co_await step();
      ++done;
    }
  };
  sim.spawn("worker", worker());
  REQUIRE(sim.run() == RunEnd::all_done);
  REQUIRE(done == kSteps);
  REQUIRE(sim.now() == Tick{kSteps});
  const std::uint64_t by_loop = sim.events_executed() - sim.delays_taken_inline();  // the start and the chain ends
  REQUIRE(by_loop == 1 + kSteps / (Simulator::kMaxInlineChain + 1));
}

TEST_CASE("a delay that wraps around time fails as scheduled in the past", "[sim]") {
  Simulator sim;
  auto wrapper = [&]() -> Task<void> {
    co_await sim.delay(1000);
    co_await sim.delay(Tick{0} - 100);  // now + d = 900: a model's "until t" with t already past
  };
  sim.spawn("wrapper", wrapper());
  REQUIRE_THROWS_WITH(sim.run(), Catch::Contains("in the past"));
}

TEST_CASE("processes ended in a tick are reaped at the next tick, also after a delay ended without an event",
          "[sim]") {
  // 64 processes end at once, then `last` ends after its delay (taken inline:
  // `keeper` waits longer), leaving a callback for the same time that spawns
  // a process. Reaping waits for the next tick, so the new process gets a new
  // object (wait id 1), not a reaped one, with inline delays on or off.
  for (const bool inline_delays : {false, true}) {
    Simulator sim;
    sim.set_inline_delays(inline_delays);
    std::uint64_t spawned_wait_id = 0;
    auto quick = []() -> Task<void> { co_return; };
    auto keeper = [&]() -> Task<void> { co_await sim.delay(100); };
    struct Spawner {
      Simulator* sim;
      std::uint64_t* id;
      static void fire(void* ctx, std::uint64_t) {
        auto* s = static_cast<Spawner*>(ctx);
        *s->id = s->sim->spawn("late", []() -> Task<void> { co_return; }()).wait_id();
      }
    } spawner{&sim, &spawned_wait_id};
    auto last = [&]() -> Task<void> {
      co_await sim.delay(10);
      sim.schedule(sim.now(), &Spawner::fire, &spawner);
    };
    for (int i = 0; i < 64; ++i) sim.spawn("quick", quick());
    sim.spawn("keeper", keeper());
    sim.spawn("last", last());
    REQUIRE(sim.run() == RunEnd::all_done);
    INFO("inline delays " << inline_delays);
    REQUIRE(sim.delays_taken_inline() == (inline_delays ? 1 : 0));
    REQUIRE(spawned_wait_id == 1);
  }
}

TEST_CASE("a warning repeated with other numbers is shown a few times and then counted", "[sim][log]") {
  (void)cohsim::repeated_log_summary();  // counts of earlier tests
  auto l = cohsim::log("log-test");
  for (int i = 0; i < 10; ++i) l->warn("each CPU completed about {} operations in the {}us window", i, 5 * i);
  l->warn("another message");
  l->error("an error {}", 1);
  const std::string summary = cohsim::repeated_log_summary();
  CHECK(summary ==
        "cohsim: 7 more warnings like this one not shown (-v shows every one): [log-test] each CPU completed about 0 "
        "operations in the 0us window\n");
  CHECK(cohsim::repeated_log_summary().empty());  // reported once
}
