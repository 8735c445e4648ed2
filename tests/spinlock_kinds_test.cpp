// pthread_spin_lock and the ticket lock (models/kernel/spinlock_kinds.hpp) on arm64 and x86.
#include <catch2/catch.hpp>

#include <vector>

#include "models/kernel/spinlock_kinds.hpp"
#include "test_support.hpp"

using namespace cohsim;
using sim::Task;
using sim::Tick;

namespace {

constexpr Tick kNs = 1000;

/// One lock word and a counter on node 0 of a platform, and who took the lock in which order.
struct KindRig {
  test::Rig r;
  fabric::Addr lock, counter;
  bool ticket;
  std::vector<int> order;
  int inside = 0, most_inside = 0;

  KindRig(const std::string& arch, const std::string& kind)
      : r(arch == "x86" ? test::platform_json("haswell-ex") : test::platform_json("kunpeng920")),
        lock(r.line(0, "lock")), counter(r.line(0, "counter")), ticket(kind == "ticket") {}

  /// Locks on `cpu`, increments the counter with a plain load and store, holds for `hold`, unlocks.
  Task<void> take(int cpu, Tick hold) {
    cpu::Cpu& c = r.cpu(cpu);
    if (ticket) co_await models::kernel::ticket_spin_lock(c, lock);
    else co_await models::kernel::pthread_spin_lock(c, lock);
    order.push_back(cpu);
    most_inside = std::max(most_inside, ++inside);
    const std::uint64_t v = co_await c.load(counter, 8);
    co_await r.sim.delay(hold);
    co_await c.store(counter, 8, v + 1);
    --inside;
    if (ticket) co_await models::kernel::ticket_spin_unlock(c, lock);
    else co_await models::kernel::pthread_spin_unlock(c, lock);
  }
  void take_at(int cpu, Tick start, Tick hold) {
    test::spawn_at(r.sim, start, [this, cpu, hold]() -> Task<void> { co_await take(cpu, hold); });
  }
};

}  // namespace

TEST_CASE("pthread_spin_lock and the ticket lock admit one holder at a time and lose no increment", "[spinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  const std::string kind = GENERATE("tas", "ticket");
  KindRig k(arch, kind);
  const int cpus = 6, rounds = 30;
  const int step = k.r.topo->cpu_count() / cpus;
  for (int i = 0; i < cpus; ++i) {
    test::spawn_at(k.r.sim, static_cast<Tick>(i) * 3 * kNs, [&k, i, step]() -> Task<void> {
      for (int n = 0; n < rounds; ++n) {
        co_await k.take(i * step, static_cast<Tick>(10 + i) * kNs);
        co_await k.r.sim.delay(static_cast<Tick>(n % 3) * 20 * kNs);
      }
    });
  }
  k.r.run();
  CHECK(k.r.fab->peek(k.counter, 8) == static_cast<std::uint64_t>(cpus * rounds));
  CHECK(k.most_inside == 1);
}

TEST_CASE("The ticket lock serves waiters in ticket order, its arm64 LSE unlock is one atomic", "[spinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  KindRig k(arch, "ticket");
  const int far = k.r.topo->cpu_count() - 1;
  const std::vector<int> arrivals{0, far, 1, 2};
  for (std::size_t i = 0; i < arrivals.size(); ++i)
    k.take_at(arrivals[i], static_cast<Tick>(i) * 500 * kNs, i == 0 ? 3000 * kNs : 50 * kNs);
  std::uint64_t final_word = 0;
  test::spawn_at(k.r.sim, 20000 * kNs, [&]() -> Task<void> {
    const std::uint64_t v = co_await k.r.cpu(5).load(k.lock, 4);
    final_word = v;
  });
  k.r.run();
  CHECK(k.order == arrivals);
  CHECK(final_word == 0x00040004);  // four tickets taken, four served
  CHECK(k.r.cpu(0).stats().atomics == (arch == "arm64" ? 2u : 1u));  // LDADDA + STADDLH, or LOCK XADD + ADD
}

TEST_CASE("A pthread_spin_lock waiter spins on loads: one atomic to find it held, one to take it", "[spinlock]") {
  const std::string arch = GENERATE("arm64", "x86");
  KindRig k(arch, "tas");
  k.take_at(0, 0, 2000 * kNs);
  k.take_at(1, 100 * kNs, 10 * kNs);
  k.r.run();
  CHECK(k.order == std::vector<int>{0, 1});
  CHECK(k.r.cpu(1).stats().atomics == 2);  // the failed exchange and the CAS once the word read 0
  CHECK(k.r.fab->peek(k.lock, 4) == 0);
}
