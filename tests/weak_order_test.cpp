// The weakly ordered arm64 core against the x86 (TSO) one: which reorderings
// each shows, and which barriers, acquires and dependencies forbid them.
// Each test sets up cache states that open the window deterministically (a
// line owned far away next to one owned locally) and sweeps relative start
// times, so an allowed reordering must appear and a forbidden one never does.
#include <catch2/catch.hpp>

#include <set>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using cpu::BarrierType;
using cpu::Domain;
using cpu::Order;
using fabric::Addr;

namespace {

json platform_for(const std::string& arch) { return arch == "x86" ? as_x86(platform_json()) : platform_json(); }

/// Makes CPU `c` own `a` (written with `v`), before the test proper starts.
Task<void> own(cpu::Cpu& c, Addr a, std::uint64_t v) {
  co_await c.store(a, 8, v);
  co_await c.drain_store_buffer();
}

/// Makes CPU `c` hold `a` shared.
Task<void> share(cpu::Cpu& c, Addr a) { co_await c.load(a); }

constexpr Tick kSetup = 5 * sim::kUs;  // every setup access is done by then

}  // namespace

TEST_CASE("arm64 writes a store to a line it owns before an earlier store to a line owned far away, x86 and dmb ishst keep program order",
          "[cpu][weak]") {
  const auto arch = GENERATE(as<std::string>{}, "arm64", "x86");
  const bool dmb_st = GENERATE(false, true);
  std::set<std::uint64_t> seen;  // flag * 10 + data as the reader saw them
  for (int skew = -40; skew <= 60; ++skew) {
    Rig r(platform_for(arch));
    cpu::Cpu &writer = r.cpu(0), &reader = r.cpu(1), &far = r.cpu(72);
    Addr data = r.line(3, "data"), flag = r.line(0, "flag");
    spawn_at(r.sim, 0, [&]() -> Task<void> {
      co_await own(far, data, 0);  // data: homed and last written on the other socket,
      co_await share(reader, data);  // read by the reader (its copy lives until invalidated)
      co_await own(writer, flag, 0);
    });
    spawn_at(r.sim, kSetup, [&]() -> Task<void> {
      co_await writer.store(data, 8, 1);
      if (dmb_st && writer.is_arm()) co_await writer.dmb(Domain::ish, BarrierType::st);
      co_await writer.store(flag, 8, 1);
    });
    spawn_at(r.sim, kSetup - 200 * sim::kNs + static_cast<Tick>(skew + 40) * 5 * sim::kNs, [&]() -> Task<void> {
      std::uint64_t f = co_await reader.load(flag, 8, Order::acquire);
      std::uint64_t d = co_await reader.load(data);
      seen.insert(f * 10 + d);
    });
    r.run();
  }
  const bool reorders = arch == "arm64" && !dmb_st;
  CHECK(seen.count(10) == (reorders ? 1u : 0u));
  CHECK(seen.count(0) == 1);
  CHECK(seen.count(11) == 1);
}

TEST_CASE("arm64 binds a load that hits before an earlier load that misses, dmb ishld, an acquire or x86 keep program order",
          "[cpu][weak]") {
  const auto arch = GENERATE(as<std::string>{}, "arm64", "x86");
  const auto order = GENERATE(as<std::string>{}, "none", "dmb ishld", "ldar", "ldapr");
  if (arch == "x86" && order != "none") return;
  std::set<std::uint64_t> seen;
  for (int skew = 0; skew <= 80; ++skew) {
    Rig r(platform_for(arch));
    cpu::Cpu &writer = r.cpu(72), &reader = r.cpu(0);
    Addr data = r.line(0, "data"), flag = r.line(3, "flag");
    spawn_at(r.sim, 0, [&]() -> Task<void> {
      co_await own(writer, flag, 0);
      co_await share(reader, data);  // a stale copy the reader's second load hits
    });
    spawn_at(r.sim, kSetup, [&]() -> Task<void> {
      co_await writer.store(data, 8, 1);
      if (writer.is_arm()) co_await writer.dmb(Domain::ish, BarrierType::st);
      co_await writer.store(flag, 8, 1);
    });
    spawn_at(r.sim, kSetup + static_cast<Tick>(skew) * 5 * sim::kNs, [&]() -> Task<void> {
      const Order o = order == "ldar" ? Order::acquire : order == "ldapr" ? Order::acquire_pc : Order::relaxed;
      cpu::LoadFuture f = reader.issue_load(flag, 8, o);  // misses: the line is on the other socket
      if (order == "dmb ishld") co_await reader.dmb(Domain::ish, BarrierType::ld);
      cpu::LoadFuture d = reader.issue_load(data);  // hits the stale copy unless invalidated first
      const std::uint64_t fv = co_await f.value();
      seen.insert(fv * 10 + co_await d.value());
    });
    r.run();
  }
  const bool reorders = arch == "arm64" && order == "none";
  CHECK(seen.count(10) == (reorders ? 1u : 0u));
  CHECK(seen.count(11) == 1);
}

TEST_CASE("arm64 makes a store visible before an earlier load to another line binds (load buffering), x86 never",
          "[cpu][weak]") {
  const auto arch = GENERATE(as<std::string>{}, "arm64", "x86");
  const bool dmb = GENERATE(false, true);
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (int skew = -20; skew <= 20; ++skew) {
    Rig r(platform_for(arch));
    cpu::Cpu &a = r.cpu(0), &b = r.cpu(72);
    Addr x = r.line(0, "x"), y = r.line(3, "y");
    spawn_at(r.sim, 0, [&]() -> Task<void> {
      co_await own(a, y, 0);  // each stores to a line it owns and loads the other's
      co_await own(b, x, 0);
    });
    std::uint64_t r0 = 9, r1 = 9;
    auto thread = [&](cpu::Cpu& c, Addr load_from, Addr store_to, std::uint64_t& out) -> Task<void> {
      cpu::LoadFuture v = c.issue_load(load_from);
      if (dmb && c.is_arm()) co_await c.dmb(Domain::ish);
      co_await c.store(store_to, 8, 1);
      out = co_await v.value();
    };
    const Tick shift = static_cast<Tick>(skew < 0 ? -skew : skew) * 10 * sim::kNs;
    spawn_at(r.sim, kSetup + (skew > 0 ? shift : 0), [&]() -> Task<void> { co_await thread(a, x, y, r0); });
    spawn_at(r.sim, kSetup + (skew < 0 ? shift : 0), [&]() -> Task<void> { co_await thread(b, y, x, r1); });
    r.run();
    seen.insert({r0, r1});
  }
  CHECK(seen.count({1, 1}) == (arch == "arm64" && !dmb ? 1u : 0u));
}

TEST_CASE("two loads of one location never see a newer value before an older one, whatever the timing",
          "[cpu][weak]") {
  const auto arch = GENERATE(as<std::string>{}, "arm64", "x86");
  sim::RandomStream jitter(7, "test.jitter");
  for (int skew = 0; skew <= 60; ++skew) {
    Rig r(platform_for(arch));
    r.cpu(0).set_jitter(&jitter, 300 * sim::kNs);  // the loads may bind in any order the rules allow
    cpu::Cpu &writer = r.cpu(72), &reader = r.cpu(0);
    Addr x = r.line(3, "x");
    spawn_at(r.sim, 0, [&]() -> Task<void> { co_await share(reader, x); });
    spawn_at(r.sim, kSetup, [&]() -> Task<void> { co_await writer.store(x, 8, 1); });
    std::uint64_t first = 9, second = 9;
    spawn_at(r.sim, kSetup + static_cast<Tick>(skew) * 5 * sim::kNs, [&]() -> Task<void> {
      cpu::LoadFuture a = reader.issue_load(x);
      cpu::LoadFuture b = reader.issue_load(x);
      first = co_await a.value();
      second = co_await b.value();
    });
    r.run();
    CHECK(first <= second);
  }
}

TEST_CASE("a store is never read by an earlier load of its own location, and stores to one line keep program order",
          "[cpu][weak]") {
  const auto arch = GENERATE(as<std::string>{}, "arm64", "x86");
  Rig r(platform_for(arch));
  cpu::Cpu& c = r.cpu(0);
  Addr x = r.line(3, "x"), far = r.line(3, "far");
  std::uint64_t before = 9;
  spawn_at(r.sim, 0, [&]() -> Task<void> {
    cpu::LoadFuture first = c.issue_load(far);  // a miss on the other socket
    if (c.is_arm()) co_await c.dmb(Domain::ish, BarrierType::ld);
    cpu::LoadFuture old = c.issue_load(x);  // waits for the first to bind
    co_await c.store(x, 8, 1);
    co_await c.store(x + 8, 8, 2);
    co_await c.store(x, 8, 3);
    before = co_await old.value();
    co_await first.value();
  });
  r.run();
  CHECK(before == 0);
  CHECK(r.fab->peek(x, 8) == 3);
  CHECK(r.fab->peek(x + 8, 8) == 2);
}

TEST_CASE("an atomic without a result is posted like a store: later loads do not wait for it, a load of its word does",
          "[cpu][weak]") {
  Rig r(platform_json());
  cpu::Cpu& c = r.cpu(0);
  Addr counter = r.line(3, "counter"), other = r.line(0, "other");
  r.fab->poke(counter, 8, 5);
  Tick other_bound = 0, posted_done = 0;
  std::uint64_t own = 0;
  spawn_at(r.sim, 0, [&]() -> Task<void> {
    co_await c.post_rmw(counter, 8, fabric::RmwOp::add, 2);  // STADD to a line on the other socket
    co_await c.dmb(Domain::ish, BarrierType::ld);             // orders loads only: not the STADD's read
    co_await c.load(other);
    other_bound = r.sim.now();
    own = co_await c.load(counter);  // no forwarding from an atomic: waits for it
    posted_done = r.sim.now();
  });
  r.run();
  CHECK(other_bound < posted_done);
  CHECK(other_bound < 300 * sim::kNs);  // a local miss, not behind the remote atomic
  CHECK(own == 7);
  CHECK(r.fab->peek(counter, 8) == 7);
}
