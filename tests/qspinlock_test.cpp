// The kernel's qspinlock (models/kernel/qspinlock.hpp) on arm64 and x86:
// mutual exclusion, the fast path, the pending bit, the MCS queue's FIFO
// hand-off, trylock, and the nesting fallback.
#include <catch2/catch.hpp>

#include <vector>

#include "models/kernel/qspinlock.hpp"
#include "test_support.hpp"

using namespace cohsim;
using models::kernel::encode_tail;
using models::kernel::kQLockedVal;
using models::kernel::kQPendingVal;
using models::kernel::Qnodes;
using models::kernel::Qspinlock;
using config::json;
using sim::Task;
using sim::Tick;

namespace {

constexpr Tick kNs = 1000;

/// A machine of one platform with one qspinlock on node 0 and a record of who held it when.
struct LockRig {
  test::Rig r;
  Qnodes qnodes;
  Qspinlock lock;
  fabric::Addr counter;
  std::vector<int> order;  ///< CPUs (or context numbers) in the order they took the lock
  int inside = 0, most_inside = 0;

  explicit LockRig(const std::string& platform)
      : r(platform == "x86" ? test::platform_json("haswell-ex") : test::platform_json("kunpeng920")),
        qnodes(*r.mem, *r.topo),
        lock{r.line(0, "lock"), &qnodes},
        counter(r.line(0, "counter")) {}

  /// Takes the lock at `start` on `cpu`, increments the counter with a plain
  /// load and store, holds it for `hold`, unlocks; `who` goes into `order`.
  void take_at(int cpu, Tick start, Tick hold, int who = -1) {
    test::spawn_at(r.sim, start, [this, cpu, hold, who]() -> Task<void> { co_await take(cpu, hold, who); });
  }
  Task<void> take(int cpu, Tick hold, int who) {
    cpu::Cpu& c = r.cpu(cpu);
    co_await models::kernel::queued_spin_lock(c, lock);
    order.push_back(who < 0 ? cpu : who);
    most_inside = std::max(most_inside, ++inside);
    const std::uint64_t v = co_await c.load(counter, 8);
    co_await r.sim.delay(hold);
    co_await c.store(counter, 8, v + 1);
    --inside;
    co_await models::kernel::queued_spin_unlock(c, lock);
  }
  /// The lock word as memory holds it now.
  std::uint32_t word() const { return static_cast<std::uint32_t>(r.fab->peek(lock.val, 4)); }
  /// Calls `probe` at time `t`.
  void at(Tick t, std::function<void()> probe) {
    test::spawn_at(r.sim, t, [probe]() -> Task<void> {
      probe();
      co_return;
    });
  }
};

}  // namespace

TEST_CASE("Under contention the qspinlock admits one holder at a time and loses no increment", "[qspinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  LockRig l(arch);
  const int cpus = 8, rounds = 40;
  const int step = l.r.topo->cpu_count() / cpus;  // spread over every die and socket
  for (int i = 0; i < cpus; ++i) {
    const int cpu = i * step;
    test::spawn_at(l.r.sim, static_cast<Tick>(i) * 3 * kNs, [&l, cpu, i]() -> Task<void> {
      for (int k = 0; k < rounds; ++k) {
        co_await l.take(cpu, static_cast<Tick>(10 + i) * kNs, cpu);
        co_await l.r.sim.delay(static_cast<Tick>(k % 3) * 20 * kNs);
      }
    });
  }
  l.r.run();
  CHECK(l.r.fab->peek(l.counter, 8) == static_cast<std::uint64_t>(cpus * rounds));
  CHECK(l.order.size() == static_cast<std::size_t>(cpus * rounds));
  CHECK(l.most_inside == 1);
  CHECK(l.word() == 0);
  for (int i = 0; i < cpus; ++i) CHECK(l.r.fab->peek(l.qnodes.node(i * step, 0) + Qnodes::kCount, 4) == 0);
}

TEST_CASE("An uncontended qspinlock is taken with one atomic and unlocked with one store", "[qspinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  LockRig l(arch);
  l.take_at(3, 0, 1000 * kNs);
  l.at(800 * kNs, [&] { CHECK(l.word() == kQLockedVal); });
  l.r.run();
  CHECK(l.r.cpu(3).stats().atomics == 1);
  CHECK(l.r.cpu(3).stats().stores == 2);  // the counter and the locked byte
  CHECK(l.word() == 0);
  CHECK(l.r.fab->peek(l.qnodes.node(3, 0) + Qnodes::kCount, 4) == 0);  // no MCS node taken
}

TEST_CASE("A second contender sets the pending bit, which a third contender sees", "[qspinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  LockRig l(arch);
  l.take_at(0, 0, 2000 * kNs);
  l.take_at(1, 100 * kNs, 10 * kNs);
  std::uint64_t seen = 0;
  test::spawn_at(l.r.sim, 1000 * kNs, [&]() -> Task<void> {
    const std::uint64_t v = co_await l.r.cpu(2).load(l.lock.val, 4);
    seen = v;
  });
  l.r.run();
  CHECK(seen == (kQLockedVal | kQPendingVal));
  CHECK(l.order == std::vector<int>{0, 1});
  CHECK(l.r.fab->peek(l.qnodes.node(1, 0) + Qnodes::kCount, 4) == 0);  // pending, not queued
  CHECK(l.word() == 0);
}

TEST_CASE("Later contenders queue on their MCS nodes and get the lock in arrival order", "[qspinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  LockRig l(arch);
  const int far = l.r.topo->cpu_count() - 1;  // the last socket: a slower hand-off does not overtake
  const std::vector<int> arrivals{0, 1, far, 2, 3};
  for (std::size_t i = 0; i < arrivals.size(); ++i)
    l.take_at(arrivals[i], static_cast<Tick>(i) * 1000 * kNs, i == 0 ? 6000 * kNs : 50 * kNs);
  l.at(5000 * kNs, [&] {
    // Owner and pending waiter in the low half, the last arrival's node in the tail.
    CHECK((l.word() & 0xffff) == (kQLockedVal | kQPendingVal));
    CHECK((l.word() & models::kernel::kQTailMask) == encode_tail(3, 0));
    // The queue: far's node links to 2's, 2's to 3's.
    CHECK(l.r.fab->peek(l.qnodes.node(far, 0) + Qnodes::kNext, 8) == l.qnodes.node(2, 0));
    CHECK(l.r.fab->peek(l.qnodes.node(2, 0) + Qnodes::kNext, 8) == l.qnodes.node(3, 0));
  });
  l.r.run();
  CHECK(l.order == arrivals);
  CHECK(l.word() == 0);
}

TEST_CASE("queued_spin_trylock fails while the lock is held and succeeds once it is free", "[qspinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  LockRig l(arch);
  l.take_at(0, 0, 500 * kNs);
  std::vector<bool> got;
  for (Tick t : {200 * kNs, 2000 * kNs}) {
    test::spawn_at(l.r.sim, t, [&]() -> Task<void> {
      const bool taken = co_await models::kernel::queued_spin_trylock(l.r.cpu(5), l.lock);
      got.push_back(taken);
    });
  }
  l.r.run();
  CHECK(got == std::vector<bool>{false, true});
  CHECK(l.r.cpu(5).stats().atomics == 1);  // the failed try only read the word
  CHECK(l.word() == kQLockedVal);  // the successful trylock holds it
}

TEST_CASE("Nested contexts of one CPU queue on its next MCS nodes, past the last they spin on trylock",
          "[qspinlock]") {
  LockRig l("arm64");
  // CPU 1 holds the lock and CPU 5 waits pending. Then five contexts of CPU 0
  // (as if interrupts nested) queue, each behind another CPU's node, so every
  // hand-off comes from another CPU; the fifth finds all four nodes in use.
  l.take_at(1, 0, 12000 * kNs);
  l.take_at(5, 1000 * kNs, 20 * kNs);
  std::vector<int> expected{1, 5};
  for (int ctx = 0; ctx < 5; ++ctx) {
    l.take_at(0, static_cast<Tick>(2 + 2 * ctx) * 1000 * kNs, 20 * kNs, 100 + ctx);
    expected.push_back(100 + ctx);
    if (ctx < 4) {
      l.take_at(6 + ctx, static_cast<Tick>(3 + 2 * ctx) * 1000 * kNs, 20 * kNs);
      expected.push_back(6 + ctx);
    }
  }
  l.at(11500 * kNs, [&] {
    CHECK(l.r.fab->peek(l.qnodes.node(0, 0) + Qnodes::kCount, 4) == 5);
    for (int idx = 0; idx < 4; ++idx)  // context idx queued on node idx, followed by CPU 6 + idx
      CHECK(l.r.fab->peek(l.qnodes.node(0, idx) + Qnodes::kNext, 8) == l.qnodes.node(6 + idx, 0));
    CHECK((l.word() & models::kernel::kQTailMask) == encode_tail(9, 0));
  });
  l.r.run();
  CHECK(l.order == expected);
  CHECK(l.most_inside == 1);
  CHECK(l.r.fab->peek(l.counter, 8) == expected.size());
  CHECK(l.r.fab->peek(l.qnodes.node(0, 0) + Qnodes::kCount, 4) == 0);
}

TEST_CASE("On arm64 a contender that finds a pending hand-over re-reads once, then queues", "[qspinlock]") {
  json doc = test::platform_json("kunpeng920");
  test::set_value(doc, "cpu.wfe_event_stream", "100ns");  // WFE wakes without a change of the line
  test::Rig r(doc);
  const Qnodes qnodes(*r.mem, *r.topo);
  const Qspinlock lock{r.line(0, "lock"), &qnodes};
  r.fab->poke(lock.val, 4, kQPendingVal);  // 0,1,0: a pending waiter about to set locked
  bool locked = false;
  test::spawn_at(r.sim, 0, [&]() -> Task<void> {
    co_await models::kernel::queued_spin_lock(r.cpu(1), lock);
    locked = true;
  });
  std::uint64_t word = 0;
  test::spawn_at(r.sim, 2000 * kNs, [&]() -> Task<void> {
    word = r.fab->peek(lock.val, 4);
    co_await r.cpu(2).store(lock.val, 2, 0, cpu::Order::release);  // the pending waiter took and released it
  });
  r.run();
  // _Q_PENDING_LOOPS is 1: after two reads the contender stopped waiting and queued on its node.
  CHECK(word == (kQPendingVal | encode_tail(1, 0)));
  CHECK(locked);
}
