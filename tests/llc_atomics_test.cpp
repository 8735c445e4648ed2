// Atomics executed in a die's L3 (Kunpeng 920 as shipped: a per-die LLC and
// every LSE class placed in it): where the line goes, what the cores keep,
// how atomics on one line queue there, and LL/SC staying in the core.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using fabric::CacheState;
using fabric::RmwOp;

namespace {

json shipped_kunpeng() { return platform_json_as_shipped("kunpeng920"); }

/// Runs `body` on the rig from time 0 to the end.
void run_program(Rig& r, std::function<Task<void>()> body) {
  spawn_at(r.sim, 0, std::move(body));
  r.run();
}

/// Two adds to one line the L3 of die 0 holds, from CPUs 4 and 8 at once: when each finished, and when they issued.
struct TwoAdds {
  Tick issued = 0, done[2] = {0, 0};
  Tick gap() const { return done[0] > done[1] ? done[0] - done[1] : done[1] - done[0]; }
};
TwoAdds two_adds_in_the_l3(Rig& r, fabric::Addr x) {
  TwoAdds t;
  run_program(r, [&]() -> Task<void> {
    co_await r.cpu(0).rmw(x, 8, RmwOp::add, 1);  // the L3 of die 0 now holds the line
    co_await r.sim.delay(sim::kUs);
    t.issued = r.sim.now();
    for (int i = 0; i < 2; ++i)
      r.sim.spawn("adder", [](Rig& r, fabric::Addr x, int cpu, Tick& at) -> Task<void> {
        co_await r.cpu(cpu).rmw(x, 8, RmwOp::add, 1);
        at = r.sim.now();
      }(r, x, i == 0 ? 4 : 8, t.done[i]));
  });
  return t;
}

}  // namespace

TEST_CASE("an atomic executed in the L3 takes the line from every core and leaves the requester no copy",
          "[fabric][llc]") {
  Rig r(shipped_kunpeng());
  REQUIRE(r.fab->params().llc_per_die);
  const fabric::Addr x = r.line(0, "x");
  r.fab->poke(x, 8, 5);
  std::uint64_t old = 0;
  run_program(r, [&]() -> Task<void> {
    co_await r.cpu(1).load(x);  // two readers of the die, and the requester itself
    co_await r.cpu(2).load(x);
    co_await r.cpu(0).load(x);
    old = co_await r.cpu(0).rmw(x, 8, RmwOp::add, 1);
  });
  CHECK(old == 5);
  CHECK(r.fab->peek(x, 8) == 6);
  for (int c : {0, 1, 2}) CHECK(r.fab->state_of(c, x) == CacheState::I);
  CHECK(r.fab->stats().llc_atomics == 1);
  CHECK(r.fab->line_stats().at(x).llc_atomics == 1);
}

TEST_CASE("atomics of two CPUs on one line run one after the other on the L3's ALU", "[fabric][llc]") {
  Rig r(shipped_kunpeng());
  const fabric::Addr x = r.line(0, "x");
  const TwoAdds t = two_adds_in_the_l3(r, x);
  CHECK(r.fab->peek(x, 8) == 3);
  const auto& p = r.fab->params();
  const Tick occupancy = p.llc.latency + p.llc_atomic_latency;  // data read, then the ALU, the line held
  INFO("done at " << t.done[0] << " and " << t.done[1] << " ps; occupancy " << occupancy << " ps");
  CHECK(t.gap() >= occupancy);
}

TEST_CASE("a CAS ping-pong across two dies moves the line between the dies' L3s, never into a core",
          "[fabric][llc]") {
  Rig r(shipped_kunpeng());
  const fabric::Addr x = r.line(0, "x");
  const int rounds = 10;
  run_program(r, [&]() -> Task<void> {
    for (int i = 0; i < rounds; ++i) {
      co_await r.cpu(0).cmpxchg(x, 8, 2 * static_cast<std::uint64_t>(i), 2 * static_cast<std::uint64_t>(i) + 1);
      co_await r.cpu(24).cmpxchg(x, 8, 2 * static_cast<std::uint64_t>(i) + 1, 2 * static_cast<std::uint64_t>(i) + 2);
    }
  });
  CHECK(r.fab->peek(x, 8) == 2 * rounds);
  const auto& s = r.fab->line_stats().at(x);
  // Every CAS but the first takes the line from the other die's L3.
  CHECK(s.transfers[static_cast<std::size_t>(topo::HopClass::cross_die)] == 2 * rounds - 1);
  CHECK(s.llc_atomics == 2 * rounds);
  CHECK(r.fab->state_of(0, x) == CacheState::I);
  CHECK(r.fab->state_of(24, x) == CacheState::I);
}

TEST_CASE("a failed CAS in the L3 still takes the line exclusive there and changes nothing", "[fabric][llc]") {
  Rig r(shipped_kunpeng());
  const fabric::Addr x = r.line(0, "x");
  std::uint64_t old = 0;
  run_program(r, [&]() -> Task<void> {
    co_await r.cpu(1).store(x, 8, 7);
    co_await r.cpu(1).dsb(cpu::Domain::sy, cpu::BarrierType::all);
    old = co_await r.cpu(0).cmpxchg(x, 8, 3, 9);  // expects 3, finds 7
  });
  CHECK(old == 7);
  CHECK(r.fab->peek(x, 8) == 7);
  CHECK(r.fab->state_of(1, x) == CacheState::I);  // the writer's modified copy went to the L3
  CHECK(r.fab->state_of(0, x) == CacheState::I);
  CHECK(r.fab->dir_state_of(x) == fabric::DirState::EM);  // held by die 0's L3
}

TEST_CASE("load-exclusive / store-exclusive loops keep the line in the core", "[fabric][llc]") {
  json doc = shipped_kunpeng();
  doc["cpu"]["lse_atomics"] = false;
  Rig r(doc);
  const fabric::Addr x = r.line(0, "x");
  run_program(r, [&]() -> Task<void> { co_await r.cpu(0).rmw(x, 8, RmwOp::add, 1); });
  CHECK(r.fab->peek(x, 8) == 1);
  CHECK(r.fab->state_of(0, x) == CacheState::M);
  CHECK(r.fab->stats().llc_atomics == 0);
}

TEST_CASE("a core's miss on a line its die's L3 holds is served in the die, without the home", "[fabric][llc]") {
  Rig r(shipped_kunpeng());
  const fabric::Addr x = r.line(2, "x");  // homed on the other socket
  Tick in_die = 0, first = 0;
  run_program(r, [&]() -> Task<void> {
    Tick t0 = r.sim.now();
    co_await r.cpu(1).load(x);  // from DRAM on node 2, through its home
    first = r.sim.now() - t0;
    t0 = r.sim.now();
    co_await r.cpu(2).load(x);  // forwarded by CPU 1 inside the die
    in_die = r.sim.now() - t0;
    co_await r.cpu(3).load(x);  // shared now: from the die's L3 data
  });
  INFO("first " << first << " ps, second " << in_die << " ps");
  CHECK(in_die < r.fab->params().dram_latency);
  CHECK(in_die < first / 3);
  CHECK(r.fab->stats().llc_hits == 1);
  CHECK(r.fab->line_stats().at(x).memory_reads == 2);  // DRAM once at the home, the L3 once
}

TEST_CASE("a pipelined L3 atomic unit starts atomics on one line every atomic_occupancy, each done after its latency",
          "[fabric][llc]") {
  // The structural alternative to the serial unit (caches.llc.atomic_unit):
  // occupancy and latency are different numbers.
  const bool pipelined = GENERATE(false, true);
  json doc = shipped_kunpeng();
  doc["caches"]["llc"]["atomic_unit"] = pipelined ? "pipelined" : "serial";
  doc["caches"]["llc"]["atomic_occupancy"] = {{"value", "4ns"}, {"source", "estimate: test"}, {"range", {"2ns", "8ns"}}};
  Rig r(doc);
  const fabric::Addr x = r.line(0, "x");
  const TwoAdds t = two_adds_in_the_l3(r, x);
  CHECK(r.fab->peek(x, 8) == 3);
  const auto& p = r.fab->params();
  REQUIRE(p.llc_atomic_pipelined == pipelined);
  const Tick latency = p.llc.latency + p.llc_atomic_latency;
  const Tick gap = t.gap();
  INFO("done at " << t.done[0] << " and " << t.done[1] << " ps, issued at " << t.issued << "; latency " << latency);
  for (Tick d : t.done) CHECK(d - t.issued >= latency);  // every result after the full latency
  if (pipelined) {
    CHECK(gap < latency);                     // the second started before the first was done
    CHECK(gap <= 4 * sim::kNs + 2 * sim::kNs);  // about one occupancy apart (the two paths to the L3 differ a little)
  } else {
    CHECK(gap >= latency);
  }
}
