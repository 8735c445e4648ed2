// A last-level cache per die or socket (caches.llc.placement die) as the
// x86 server platforms ship it: the socket's L3 serves its cores whatever
// the line's home, holds one miss per line (merge_reads), and looks its tags
// up again for a request that waited behind another one.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

constexpr auto kSocket = static_cast<std::size_t>(topo::HopClass::socket);

/// Haswell-EX as shipped, with `path` set to `value` when a path is given.
json haswell(const std::string& path = "", const json& value = nullptr) {
  json doc = platform_json_as_shipped("haswell-ex");
  if (!path.empty()) set_value(doc, path, value);
  return doc;
}

/// `cpu` stores `v` to `x` and drains its store buffer (the store is visible when it returns).
Task<void> store_visible(Rig& r, int cpu, fabric::Addr x, std::uint64_t v) {
  co_await r.cpu(cpu).store(x, 8, v);
  co_await r.cpu(cpu).drain_store_buffer();
}

/// CPU 0 writes 1 to a line homed on node 0; at 1 us each CPU of `readers` reads it. With `writer` >= 0 that CPU
/// writes 2 to it 20 ns after the reads start. The line's counters, the fabric's L3 hits, and when the last read
/// completed (after 1 us); each read's value is checked (1, or 2 once the writer may have gone first).
struct Burst {
  fabric::LineStats line;
  std::uint64_t llc_hits = 0;
  Tick last_read = 0;
};
Burst burst(const json& platform, const std::vector<int>& readers, int writer = -1) {
  Rig r(platform);
  const fabric::Addr x = r.line(0, "x");
  Burst b;
  spawn_at(r.sim, 0, [&r, x]() { return store_visible(r, 0, x, 1); });
  for (int cpu : readers)
    spawn_at(r.sim, sim::kUs, [&r, &b, x, cpu, writer]() -> Task<void> {
      const std::uint64_t v = co_await r.cpu(cpu).load(x);
      CHECK((v == 1 || (writer >= 0 && v == 2)));
      b.last_read = std::max(b.last_read, r.sim.now() - sim::kUs);
    });
  if (writer >= 0)
    spawn_at(r.sim, sim::kUs + 20 * sim::kNs, [&r, x, writer]() { return store_visible(r, writer, x, 2); });
  r.run();  // (the rig checks every transition, and every read against the coherence order)
  CHECK(r.fab->peek(x, 8) == (writer >= 0 ? 2U : 1U));
  b.line = r.fab->line_stats().at(x);
  b.llc_hits = r.fab->stats().llc_hits;
  return b;
}

}  // namespace

TEST_CASE("a socket's reads of a line its L3 is already fetching wait for that fetch and are served by the L3",
          "[fabric][llc]") {
  // Merged, the three later reads of socket 1 wait for the first and take
  // the line from socket 1's L3; apart, they go to the home on socket 0.
  const Burst merged = burst(haswell(), {18, 19, 20, 21});
  const Burst apart = burst(haswell("caches.llc.merge_reads", "no"), {18, 19, 20, 21});
  CHECK(merged.line.transfers[kSocket] == 1);  // the first read, from CPU 0
  CHECK(merged.llc_hits == 3);
  CHECK(apart.llc_hits == 0);
  // One miss per socket: socket 2's second reader waits for socket 2's read, not for socket 1's.
  CHECK(burst(haswell(), {18, 19, 36, 37}).llc_hits == 2);
}

TEST_CASE("a write from another socket while a socket's reads wait behind its read: every value right",
          "[fabric][llc]") {
  // CPU 54 (socket 3) writes while socket 1's read is on its way and three
  // more wait for it; the waiters may find the line gone and go on.
  const Burst b = burst(haswell(), {18, 19, 20, 21}, /*writer=*/54);
  CHECK(b.line.invalidations > 0);
}

TEST_CASE("a die that never serves a remote line does not hold its reads back (remote_home_lines home)",
          "[fabric][llc]") {
  // Kunpeng 920 with every line of another die moved through its home: the
  // die keeps no miss for such a line, so four reads of die 1 go to the home
  // together, as with merge_reads no.
  auto last = [](const std::string& merge) {
    json doc = platform_json_as_shipped("kunpeng920");
    set_value(doc, "caches.llc.remote_home_lines", "home");
    set_value(doc, "caches.llc.merge_reads", merge);
    return burst(doc, {24, 28, 32, 36}).last_read;
  };
  CHECK(last("yes") == last("no"));
}

TEST_CASE("a request the die serves after another one for the line went first looks the tags up again",
          "[fabric][llc]") {
  // CPUs 1, 2 and 3 write a line CPU 0 (all on socket 0) holds modified, at
  // once, and queue at the socket's L3. The last waits while the second's
  // request goes through the directory, so each nanosecond more of
  // llc.tag_latency costs it two (its look-up on arrival and again at its
  // turn), and the first one (docs/model.md, "What is simplified", says which
  // waits count).
  auto done = [](const std::string& tag) {
    Rig r(haswell("caches.llc.tag_latency", tag));
    const fabric::Addr x = r.line(0, "x");
    std::vector<Tick> at;
    spawn_at(r.sim, 0, [&r, x]() { return store_visible(r, 0, x, 1); });
    for (int cpu : {1, 2, 3})
      spawn_at(r.sim, sim::kUs, [&r, &at, x, cpu]() -> Task<void> {
        co_await store_visible(r, cpu, x, 2);
        at.push_back(r.sim.now());
      });
    r.run();
    REQUIRE(at.size() == 3);
    return at;
  };
  const auto base = done("40ns"), more = done("50ns");
  CHECK(more[0] - base[0] == 10 * sim::kNs);
  CHECK(more[2] - base[2] == 20 * sim::kNs);
}

TEST_CASE("a line homed on another socket moves between two cores of one socket as fast as a local line",
          "[fabric][llc]") {
  // The socket's L3 forwards it (core-valid bits): the home is not asked. A
  // memory-side LLC (placement home) sends every transfer to the home.
  auto one_way = [](const std::string& placement, int line_node) {
    auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-haswell-ex.json"), "",
                                     {{"cpu_a", "18"}, {"cpu_b", "19"}, {"line_node", std::to_string(line_node)},
                                      {"rounds", "100"}, {"warmup", "10"},
                                      {"platform.caches.llc.placement", placement}});
    scenario::Run run(s, 1);
    return run.execute().get("one_way_ns");
  };
  const double local = one_way("die", 1), remote = one_way("die", 0);
  CHECK(remote == Approx(local).epsilon(0.01));
  CHECK(one_way("home", 0) > local + 50);
}

TEST_CASE("a line left in no core's cache is read again from the die's L3 until another socket takes it exclusive",
          "[fabric][llc]") {
  // Private caches of two lines, so a third line pushes x out of CPU 0's L2.
  Rig r(with_tiny_caches(haswell()));
  const fabric::Addr x = r.line(0, "x"), y = r.line(0, "y"), z = r.line(0, "z");
  auto read = [&r](int cpu, fabric::Addr a) {
    spawn_at(r.sim, r.sim.now(), [&r, cpu, a]() -> Task<void> { co_await r.cpu(cpu).load(a); });
    r.run();
  };
  auto write = [&r](int cpu, fabric::Addr a, std::uint64_t v) {
    spawn_at(r.sim, r.sim.now(), [&r, cpu, a, v]() { return store_visible(r, cpu, a, v); });
    r.run();
  };
  auto evict_x = [&](int cpu) {
    read(cpu, y);
    read(cpu, z);
    REQUIRE(r.fab->state_of(cpu, x) == fabric::CacheState::I);
  };
  write(0, x, 1);
  evict_x(0);  // written back: no core holds x, socket 0's L3 still does
  REQUIRE(r.fab->dir_state_of(x) == fabric::DirState::I);
  auto hits = r.fab->stats().llc_hits;
  auto dram = r.fab->stats().dram_reads;
  read(0, x);
  CHECK(r.fab->stats().llc_hits == hits + 1);
  CHECK(r.fab->stats().dram_reads == dram);
  evict_x(0);
  write(18, x, 2);  // socket 1 takes it exclusive: socket 0's L3 copy is gone
  evict_x(18);
  hits = r.fab->stats().llc_hits;
  dram = r.fab->stats().dram_reads;
  read(0, x);
  CHECK(r.fab->stats().llc_hits == hits);
  CHECK(r.fab->stats().dram_reads == dram + 1);
  CHECK(r.fab->peek(x, 8) == 2U);
}

TEST_CASE("a pointer chase never gets cheaper as its buffer grows, and one between the L2 and the L3 hits the L3",
          "[fabric][llc]") {
  struct Curve {
    const char* platform;
    const char* in_l2;
    const char* in_l3;   // larger than the L2, inside the L3
    const char* in_dram; // larger than the L3
  };
  for (const Curve& c : {Curve{"kunpeng920", "256KiB", "1MiB", "64MiB"}, Curve{"haswell-ex", "128KiB", "512KiB", "64MiB"},
                         Curve{"skylake-sp-8s", "512KiB", "4MiB", "64MiB"}}) {
    INFO(c.platform);
    auto chase = [&c](const char* buffer) {
      auto s = scenario::load_scenario(source_path("configs/scenarios/mem-latency-kunpeng920.json"), "",
                                       {{"buffer", buffer}, {"loads", "2000"}},
                                       source_path(std::string("configs/platforms/") + c.platform + ".json"));
      scenario::Run run(s, 1);
      return run.execute();
    };
    const auto l2 = chase(c.in_l2), l3 = chase(c.in_l3), dram = chase(c.in_dram);
    CHECK(l2.get("load_ns") < l3.get("load_ns"));
    CHECK(l3.get("load_ns") < dram.get("load_ns"));
    CHECK(l3.get("llc_hits") == 2000);
    CHECK(dram.get("dram_reads") == 2000);
  }
}

TEST_CASE("a chase a little larger than the L3 still hits it in the sets that keep their lines", "[fabric][llc]") {
  // Kunpeng 920: 24 MiB, 16 ways. 25 MiB puts 17 lines in two thirds of the sets (they miss every pass)
  // and 16 in the rest (they hit), so the default warm-up is a whole pass there: a third of the loads hit.
  auto s = scenario::load_scenario(source_path("configs/scenarios/mem-latency-kunpeng920.json"), "",
                                   {{"buffer", "25MiB"}, {"loads", "4000"}});
  scenario::Run run(s, 1);
  const auto r = run.execute();
  CHECK(r.get("llc_hits") > 0.25 * 4000);
  CHECK(r.get("dram_reads") > 0.5 * 4000);
}
