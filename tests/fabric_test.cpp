// The MESI fabric: every protocol row, the races between forwards and
// write-backs and between invalidations and upgrades, fan-out, evictions,
// exact atomic counts, the random tester, and the checker catching a broken row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "src/cli/cli.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;
using fabric::Addr;
using fabric::CacheEvent;
using fabric::CacheState;
using fabric::DirEvent;
using fabric::DirState;
using sim::kNs;

namespace {

/// Runs one program on the rig to its end.
void step(Rig& r, std::function<Task<void>()> body) {
  spawn_at(r.sim, 0, std::move(body));
  r.run();
}
void load_on(Rig& r, int c, Addr a) {
  step(r, [&r, c, a]() -> Task<void> { co_await r.cpu(c).load(a); });
}
void store_on(Rig& r, int c, Addr a, std::uint64_t v) {
  step(r, [&r, c, a, v]() -> Task<void> {
    co_await r.cpu(c).store(a, 8, v);
    co_await r.cpu(c).drain_store_buffer();
  });
}
/// Puts CPU 0's copy of `x` in stable state `s` (CPU 1 helps for S).
void make_state(Rig& r, Addr x, CacheState s) {
  if (s == CacheState::E) load_on(r, 0, x);
  if (s == CacheState::M) store_on(r, 0, x, 7);
  if (s == CacheState::S) {
    load_on(r, 0, x);
    load_on(r, 1, x);
  }
  REQUIRE(r.fab->state_of(0, x) == s);
}

/// Protocol tables shared by several rigs, to count rows across runs.
struct SharedTables {
  fabric::CacheTable cache{fabric::kCacheRows};
  fabric::DirTable dir{fabric::kDirRows};
};

std::string untaken_rows(const fabric::CacheTable& c, const fabric::DirTable& d) {
  std::string out;
  for (const auto& row : fabric::kCacheRows)
    if (c.taken(row.state, row.event) == 0)
      out += fmt::format(" cache({},{})", fabric::name(row.state), fabric::name(row.event));
  for (const auto& row : fabric::kDirRows)
    if (d.taken(row.state, row.event) == 0)
      out += fmt::format(" dir({},{})", fabric::name(row.state), fabric::name(row.event));
  return out;
}

}  // namespace

TEST_CASE("each stable state answers its own core's load and store as the table says", "[fabric]") {
  const auto s = GENERATE(CacheState::I, CacheState::S, CacheState::E, CacheState::M);
  const bool is_store = GENERATE(false, true);
  Rig r(platform_json());
  Addr x = r.line(0, "x");
  make_state(r, x, s);
  const auto ev = is_store ? CacheEvent::Store : CacheEvent::Load;
  const auto before = r.fab->cache_table().taken(s, ev);
  // The rig's coherence checker throws on the first violation.
  if (is_store) {
    REQUIRE_NOTHROW(store_on(r, 0, x, 99));
  } else {
    REQUIRE_NOTHROW(load_on(r, 0, x));
  }
  CHECK(r.fab->cache_table().taken(s, ev) == before + 1);
  const CacheState want = is_store ? CacheState::M : (s == CacheState::I ? CacheState::E : s);
  CHECK(r.fab->state_of(0, x) == want);
  CHECK(r.fab->peek(x, 8) == (is_store ? 99u : (s == CacheState::M ? 7u : 0u)));
}

TEST_CASE("each stable state answers another core's load and store as the table says", "[fabric]") {
  const auto s = GENERATE(CacheState::I, CacheState::S, CacheState::E, CacheState::M);
  const bool is_store = GENERATE(false, true);
  Rig r(platform_json());
  Addr x = r.line(0, "x");
  make_state(r, x, s);
  // What arrives at CPU 0 when CPU 2 (another cluster member) asks.
  const CacheEvent arriving = s == CacheState::S ? (is_store ? CacheEvent::Inv : CacheEvent::Load)
                                                 : (is_store ? CacheEvent::FwdGetM : CacheEvent::FwdGetS);
  const auto before = r.fab->cache_table().taken(s, arriving);
  if (is_store) store_on(r, 2, x, 99);
  else load_on(r, 2, x);
  INFO("state " << fabric::name(s) << (is_store ? " store" : " load"));
  if (s != CacheState::I && !(s == CacheState::S && !is_store))  // in S, CPU 1's copy is invalidated too
    CHECK(r.fab->cache_table().taken(s, arriving) == before + (s == CacheState::S ? 2 : 1));
  const CacheState want = is_store || s == CacheState::I ? CacheState::I : CacheState::S;
  CHECK(r.fab->state_of(0, x) == want);
  CHECK(r.fab->state_of(2, x) == (is_store ? CacheState::M : (s == CacheState::I ? CacheState::E : CacheState::S)));
  CHECK(r.fab->dir_state_of(x) == (want == CacheState::S ? DirState::S : DirState::EM));
  CHECK(r.fab->peek(x, 8) == (is_store ? 99u : (s == CacheState::M ? 7u : 0u)));
}

TEST_CASE("evicting a shared, exclusive or modified line keeps its value and tells the home as the table says", "[fabric]") {
  const auto s = GENERATE(CacheState::S, CacheState::E, CacheState::M);
  Rig r(with_tiny_caches(platform_json()));
  Addr x = r.line(0, "x"), y = r.line(0, "y"), z = r.line(0, "z");
  make_state(r, x, s);
  const auto puts = r.fab->dir_table().taken(DirState::EM, s == CacheState::M ? DirEvent::PutM : DirEvent::PutE);
  load_on(r, 0, y);
  load_on(r, 0, z);  // the third line evicts x, the least recent
  CHECK(r.fab->state_of(0, x) == CacheState::I);
  CHECK(r.fab->cache_table().taken(s, CacheEvent::Replacement) == 1);
  if (s != CacheState::S) {  // E and M send a Put; S is dropped silently and stays listed
    CHECK(r.fab->dir_table().taken(DirState::EM, s == CacheState::M ? DirEvent::PutM : DirEvent::PutE) == puts + 1);
    CHECK(r.fab->dir_state_of(x) == DirState::I);
  }
  const auto llc_hits = r.fab->stats().llc_hits;
  load_on(r, 5, x);  // another core reads it back: from memory, value intact
  CHECK(r.fab->peek(x, 8) == (s == CacheState::M ? 7u : 0u));
  if (s == CacheState::M) CHECK(r.fab->stats().llc_hits == llc_hits + 1);  // the write-back filled the LLC
  if (s == CacheState::S) {
    store_on(r, 6, x, 1);  // the stale sharer entry gets an invalidation it acknowledges from I
    CHECK(r.fab->cache_table().taken(CacheState::I, CacheEvent::Inv) >= 1);
  }
}

TEST_CASE("a forward racing a write-back is answered from the write-back buffer", "[fabric]") {
  // CPU 48 (other socket) owns x homed on node 0, then evicts it; CPU 1 (next
  // to the home) asks for x at a range of moments, so that some requests
  // reach the home before the Put and are forwarded to the evicting cache.
  const bool dirty = GENERATE(false, true);
  const bool remote_store = GENERATE(false, true);
  SharedTables tables;
  for (Tick offset = 0; offset <= 900 * sim::kNs; offset += 6 * sim::kNs) {
    Rig r(with_tiny_caches(platform_json()), &tables.cache, &tables.dir);
    Addr x = r.line(0, "x"), y = r.line(2, "y"), z = r.line(2, "z");
    spawn_at(r.sim, 0, [&]() -> Task<void> {
      auto& a = r.cpu(48);
      if (dirty) co_await a.store(x, 8, 5);
      else co_await a.load(x);
      co_await a.drain_store_buffer();
      co_await a.load(y);
      co_await a.load(z);
    });
    std::uint64_t seen = 9;
    spawn_at(r.sim, offset, [&]() -> Task<void> {
      if (remote_store) seen = co_await r.cpu(1).rmw(x, 8, fabric::RmwOp::add, 1);
      else seen = co_await r.cpu(1).load(x);
    });
    r.run();
    // CPU 1 saw the line before or after CPU 48's store; the final value agrees with what it saw.
    CHECK((seen == 0 || seen == (dirty ? 5u : 0u)));
    const std::uint64_t final_value = remote_store ? (dirty ? (seen == 5 ? 6 : 5) : 1) : (dirty ? 5 : 0);
    CHECK(r.fab->peek(x, 8) == final_value);
    CHECK(r.fab->state_of(48, x) == fabric::CacheState::I);  // the write-back finished within the run
  }
  const CacheState evicting = dirty ? CacheState::MI_A : CacheState::EI_A;
  CHECK(tables.cache.taken(evicting, remote_store ? CacheEvent::FwdGetM : CacheEvent::FwdGetS) > 0);
  CHECK(tables.cache.taken(CacheState::II_A, CacheEvent::PutAck) > 0);
  CHECK(tables.dir.taken(DirState::S, DirEvent::PutStale) + tables.dir.taken(DirState::EM, DirEvent::PutStale) > 0);
}

TEST_CASE("an upgrade that loses the race to another upgrade becomes a full miss", "[fabric]") {
  SharedTables tables;
  Rig r(platform_json(), &tables.cache, &tables.dir);
  Addr x = r.line(0, "x");
  load_on(r, 0, x);
  load_on(r, 1, x);
  for (int c : {0, 1})
    spawn_at(r.sim, 0, [&r, c, x]() -> Task<void> { co_await r.cpu(c).rmw(x, 8, fabric::RmwOp::add, 1); });
  r.run();
  CHECK(tables.cache.taken(CacheState::SM_D, CacheEvent::Inv) == 1);
  CHECK(tables.dir.taken(DirState::S, DirEvent::Upgrade) == 1);
  CHECK(tables.dir.taken(DirState::EM, DirEvent::GetM) == 1);  // the loser's upgrade, turned into GetM
  CHECK(r.fab->peek(x, 8) == 2);
}

TEST_CASE("a write to a line with N sharers sends N invalidations and waits for every ack", "[fabric]") {
  const std::vector<int> sharers = {1, 8, 24, 48, 72};
  Rig r(platform_json());
  Addr x = r.line(0, "x");
  for (int c : sharers) load_on(r, c, x);
  for (int c : sharers) REQUIRE(r.fab->state_of(c, x) == CacheState::S);
  const auto invs = r.fab->stats().invalidations;
  Tick took = 0;
  step(r, [&]() -> Task<void> {
    Tick t0 = r.sim.now();
    co_await r.cpu(2).store(x, 8, 1);
    co_await r.cpu(2).drain_store_buffer();
    took = r.sim.now() - t0;
    for (int c : sharers) CHECK(r.fab->state_of(c, x) == CacheState::I);  // acked before the writer went on
  });
  CHECK(r.fab->stats().invalidations - invs == sharers.size());
  CHECK(r.fab->line_stats().at(x).invalidations == sharers.size());
  auto& icn = *r.icn;
  const int home = icn.home_endpoint(0);
  CHECK(took > icn.latency(2, home) + icn.latency(home, 72) + icn.latency(72, 2));  // the farthest ack
}

TEST_CASE("reads of a shared line overlap at the home instead of queueing one round trip each", "[fabric]") {
  Rig r(platform_json());
  Addr x = r.line(0, "x");
  load_on(r, 0, x);
  load_on(r, 1, x);  // the line is now S at the home
  const int readers = 16;
  std::vector<Tick> done;
  for (int i = 0; i < readers; ++i)
    spawn_at(r.sim, r.sim.now(), [&r, &done, i, x]() -> Task<void> {
      co_await r.cpu(4 + i).load(x);  // CPUs 4-19: same die as the home
      done.push_back(r.sim.now());
    });
  const Tick t0 = r.sim.now();
  r.run();
  REQUIRE(done.size() == static_cast<std::size_t>(readers));
  const Tick one_read = *std::min_element(done.begin(), done.end()) - t0;
  const Tick all_reads = *std::max_element(done.begin(), done.end()) - t0;
  // Served one at a time, the last would finish about `readers` reads after the first.
  CHECK(all_reads < 2 * one_read);
  CHECK(r.fab->dir_state_of(x) == DirState::S);
  for (int i = 0; i < readers; ++i) CHECK(r.fab->state_of(4 + i, x) == CacheState::S);
}

TEST_CASE("a write waits for the shared fills in flight, and readers after it do not overtake it", "[fabric]") {
  const auto policy = GENERATE(as<std::string>{}, "arrival", "nearest", "random");
  INFO("arbitration: " << policy);
  json doc = platform_json();
  doc["coherence"]["arbitration"] = policy;
  Rig r(doc);
  Addr x = r.line(0, "x");
  store_on(r, 0, x, 1);
  load_on(r, 1, x);  // S at node 0's home, value 1
  std::vector<std::uint64_t> early(8), late(8);
  std::vector<Tick> early_done(8);
  Tick write_done = 0;
  const Tick t0 = r.sim.now();
  // Fills from the other socket (long) and from the home's die (short) are in
  // flight when the writer (home die) arrives; it is picked when the short
  // fills end, and the late readers (home die, nearer than the writer's
  // wait suggests) arrive while the long fills still run.
  auto read = [&r, x](int cpu, Tick at, std::uint64_t& got, Tick* done) {
    spawn_at(r.sim, at, [&r, x, cpu, &got, done]() -> Task<void> {
      got = co_await r.cpu(cpu).load(x);
      if (done) *done = r.sim.now();
    });
  };
  for (int i = 0; i < 4; ++i) read(48 + i, t0, early[i], &early_done[i]);
  for (int i = 4; i < 8; ++i) read(i, t0 + 45 * kNs, early[i], &early_done[i]);
  spawn_at(r.sim, t0 + 55 * kNs, [&r, &write_done, x]() -> Task<void> {
    co_await r.cpu(8).store(x, 8, 2);
    co_await r.cpu(8).drain_store_buffer();
    write_done = r.sim.now();
  });
  for (int i = 0; i < 8; ++i) read(12 + i, t0 + 80 * kNs, late[i], nullptr);
  REQUIRE_NOTHROW(r.run());  // the coherence checker throws on the first violation
  for (int i = 0; i < 8; ++i) {
    CHECK(early[i] == 1);  // arrived before the write: served before it
    CHECK(late[i] == 2);   // arrived after it: queued behind it
  }
  CHECK(write_done > *std::max_element(early_done.begin(), early_done.end()));  // it invalidated their copies
}

TEST_CASE("a load of a modified line is forwarded by its owner, which keeps a shared copy", "[fabric]") {
  Rig r(platform_json());
  Addr x = r.line(0, "x");
  store_on(r, 0, x, 42);
  std::uint64_t got = 0;
  step(r, [&]() -> Task<void> { got = co_await r.cpu(8).load(x); });
  CHECK(got == 42);
  CHECK(r.fab->cache_table().taken(CacheState::M, CacheEvent::FwdGetS) == 1);
  CHECK(r.fab->state_of(0, x) == CacheState::S);
  CHECK(r.fab->state_of(8, x) == CacheState::S);
  CHECK(r.fab->dir_state_of(x) == DirState::S);
  CHECK(r.fab->line_stats().at(x).transfers[static_cast<std::size_t>(topo::HopClass::die)] == 1);
}

TEST_CASE("N CPUs doing K atomic increments each leave exactly N*K", "[fabric]") {
  const auto flavour = GENERATE(as<std::string>{}, "lse", "llsc", "far", "x86");
  INFO("atomics: " << flavour);
  json doc = platform_json();
  if (flavour == "llsc") doc["cpu"]["lse_atomics"] = false;
  if (flavour == "far") doc["coherence"]["atomics"] = all_atomics("home");
  if (flavour == "x86") doc = as_x86(doc);
  Rig r(doc);
  Addr counter = r.line(1, "counter");
  const int n = 16, k = 100;
  for (int i = 0; i < n; ++i)
    spawn_at(r.sim, static_cast<Tick>(i) * 300, [&r, i, counter]() -> Task<void> {
      for (int j = 0; j < k; ++j) co_await r.cpu(i * 6).rmw(counter, 8, fabric::RmwOp::add, 1);
    });
  REQUIRE_NOTHROW(r.run());  // the coherence checker throws on the first violation
  CHECK(r.fab->peek(counter, 8) == static_cast<std::uint64_t>(n * k));
}

TEST_CASE("the random coherence tester passes at several seeds and sizes, reordered accesses included",
          "[fabric][selftest]") {
  struct Case {
    std::string platform;
    int cpus, ops;
    std::uint64_t seed;
    int lines = 8;
  };
  // One shared line: its eight words change often enough for reordered
  // same-word accesses to meet a new write (the per-location check's case).
  std::vector<Case> cases = {{"kunpeng920", 2, 3000, 1},  {"kunpeng920", 4, 3000, 2}, {"kunpeng920", 4, 3000, 3},
                             {"kunpeng920", 32, 600, 4},  {"kunpeng920", 96, 300, 5}, {"ivybridge-ex", 480, 60, 6},
                             {"haswell-ex", 16, 1000, 7}, {"kunpeng920", 16, 2000, 8, 1}, {"skylake-sp-2s", 16, 2000, 9, 1}};
  for (const auto& c : cases) {
    INFO(c.platform << " cpus " << c.cpus << " seed " << c.seed << " lines " << c.lines);
    CHECK(cli::cmd_selftest({"coherence", "--quiet", "--platform", source_path("configs/platforms/" + c.platform + ".json"),
                             "--cpus", std::to_string(c.cpus), "--ops", std::to_string(c.ops), "--seed",
                             std::to_string(c.seed), "--lines", std::to_string(c.lines)}) == cli::kOk);
  }
}

TEST_CASE("the checker catches a table whose shared copies ignore invalidations", "[fabric]") {
  std::array<fabric::CacheRow, fabric::kCacheRows.size()> rows = fabric::kCacheRows;
  for (auto& row : rows)
    if (row.state == CacheState::S && row.event == CacheEvent::Inv)
      row = {.state = CacheState::S, .event = CacheEvent::Inv, .next = CacheState::S, .actions = fabric::ca_send_inv_ack};
  fabric::CacheTable broken(rows);
  Rig r(platform_json(), &broken);
  Addr x = r.line(0, "x");
  load_on(r, 0, x);
  load_on(r, 1, x);
  REQUIRE_THROWS_WITH(store_on(r, 2, x, 1), Catch::Contains("coherence violation") && Catch::Contains("1 writers"));
}

TEST_CASE("the checker catches an owner that forwards no data", "[fabric]") {
  std::array<fabric::CacheRow, fabric::kCacheRows.size()> rows = fabric::kCacheRows;
  for (auto& row : rows)
    if (row.state == CacheState::M && row.event == CacheEvent::FwdGetS) row.actions = fabric::ca_data_to_home;
  fabric::CacheTable broken(rows);
  Rig r(platform_json(), &broken);
  Addr x = r.line(0, "x");
  store_on(r, 0, x, 42);
  REQUIRE_THROWS_WITH(load_on(r, 1, x), Catch::Contains("coherence violation") && Catch::Contains("stale"));
}

TEST_CASE("a duplicate protocol row is rejected when the table is built", "[fabric]") {
  std::array<fabric::DirRow, 2> rows = {fabric::kDirRows[0], fabric::kDirRows[0]};
  REQUIRE_THROWS_WITH(fabric::DirTable(rows), Catch::Contains("duplicate protocol row (I, GetS)"));
}

TEST_CASE("random traffic from CPUs, a device and far atomics exercises every protocol row", "[fabric][selftest]") {
  SharedTables tables;
  // Atomics in the core, at the home, and in the requester die's L3 with a
  // per-die LLC (tiny, so that its victims evict the L3's own copies).
  for (const std::string mode : {"near", "home", "die-llc"}) {
    INFO("atomics: " << mode);
    json doc = with_tiny_caches(mode == "die-llc" ? platform_json_as_shipped() : platform_json());
    if (mode == "home") doc["coherence"]["atomics"] = all_atomics("home");
    if (mode == "die-llc") {
      REQUIRE(doc["caches"]["llc"]["placement"] == "die");
      set_value(doc, "caches.llc.size", "256B");
      set_value(doc, "caches.llc.assoc", 2);
    }
    Rig r(doc, &tables.cache, &tables.dir, mode == "near" ? 1 : 2);
    const int dev = r.icn->add_device("test-device", 0);
    std::vector<Addr> lines;
    for (int i = 0; i < 6; ++i) lines.push_back(r.line(i % 4, fmt::format("line{}", i)));
    for (int c : {0, 1, 9, 30, 50, 80})
      spawn_at(r.sim, 0, [&r, &lines, c]() -> Task<void> {
        sim::RandomStream rng(c, "test");
        for (int i = 0; i < 3000; ++i) {
          Addr a = lines[rng.below(lines.size())] + 8 * rng.below(8);
          switch (rng.below(3)) {
            case 0: co_await r.cpu(c).load(a); break;
            case 1: co_await r.cpu(c).store(a, 8, rng.next()); break;
            default: co_await r.cpu(c).rmw(a, 8, fabric::RmwOp::add, 1); break;
          }
        }
      });
    spawn_at(r.sim, 0, [&r, &lines, dev]() -> Task<void> {
      sim::RandomStream rng(7, "device");
      for (int i = 0; i < 2000; ++i) {
        Addr l = lines[rng.below(lines.size())];
        if (rng.below(2) == 0) co_await r.fab->device_read(dev, l);
        else co_await r.fab->device_write(dev, l + 8 * rng.below(8), 8, rng.next());
        co_await r.sim.delay(rng.below(40) * sim::kNs);
      }
    });
    REQUIRE_NOTHROW(r.run());  // the coherence checker throws on the first violation
  }
  INFO("rows never taken:" << untaken_rows(tables.cache, tables.dir));
  CHECK(untaken_rows(tables.cache, tables.dir).empty());
}

TEST_CASE("a write reaches every sharer of a 1,200-core machine, the checker watching", "[fabric][scale]") {
  json doc = platform_json_as_shipped("ivybridge-ex");
  set_value(doc, "topology.sockets", 40);
  set_value(doc, "topology.cores_per_cluster", 30);  // 40 sockets x 30 cores: agents far above 512
  Rig r(doc);
  REQUIRE(r.topo->core_count() == 1200);
  Addr x = r.line(3, "x");
  const std::vector<int> sharers = {1, 511, 512, 513, 700, 1023, 1024, 1199};
  for (int c : sharers) load_on(r, c, x);
  for (int c : sharers) REQUIRE(r.fab->state_of(c, x) == CacheState::S);
  const auto invs = r.fab->stats().invalidations;
  store_on(r, 0, x, 42);
  for (int c : sharers) CHECK(r.fab->state_of(c, x) == CacheState::I);
  CHECK(r.fab->stats().invalidations - invs == sharers.size());
  CHECK(r.fab->violations() == 0);
  for (int c : sharers) CHECK(r.fab->line_stats().at(x).touched.test(static_cast<std::size_t>(c)));
  // Every sharer reads the new value again (the checker compares each read with the coherence order).
  for (int c : sharers) {
    std::uint64_t got = 0;
    step(r, [&r, c, x, &got]() -> Task<void> { got = co_await r.cpu(c).load(x); });
    CHECK(got == 42);
  }
  CHECK(r.fab->dir_state_of(x) == DirState::S);
}

namespace {
/// IvyBridge-EX (16 sockets, 15 cores each, node controllers between pairs) with the given directory organisation.
json ivb_with_directory(const std::string& presence, const std::string& unit_snoop = "filtered") {
  json doc = platform_json_as_shipped("ivybridge-ex");
  doc["coherence"]["directory"] = {
      {"presence", presence},
      {"unit_snoop", unit_snoop},
      {"unit_lookup", {{"value", "20ns"}, {"source", "estimate: test value"}, {"range", {"10ns", "40ns"}}}}};
  return doc;
}
/// The sharers read x, then CPU 0 writes it; returns the write's time.
Tick write_to_three_sockets(Rig& r, Addr x, const std::vector<int>& sharers) {
  for (int c : sharers) load_on(r, c, x);
  Tick took = 0;
  step(r, [&]() -> Task<void> {
    const Tick t0 = r.sim.now();
    co_await r.cpu(0).store(x, 8, 9);
    co_await r.cpu(0).drain_store_buffer();
    took = r.sim.now() - t0;
  });
  return took;
}
}  // namespace

TEST_CASE("a per-socket directory invalidates every sharer through one message per socket", "[fabric][directory]") {
  const std::vector<int> sharers = {15, 16, 29, 75, 80, 89, 135, 140, 149};  // sockets 1, 5, 9
  Rig exact(platform_json_as_shipped("ivybridge-ex"));
  Rig coarse(ivb_with_directory("socket"));
  const Tick t_exact = write_to_three_sockets(exact, exact.line(0, "x"), sharers);
  Addr x = coarse.line(0, "x");
  const Tick t_coarse = write_to_three_sockets(coarse, x, sharers);
  for (int c : sharers) CHECK(coarse.fab->state_of(c, x) == CacheState::I);
  CHECK(coarse.fab->violations() == 0);
  CHECK(coarse.fab->stats().invalidations == exact.fab->stats().invalidations);  // the same copies lost
  CHECK(coarse.fab->stats().unit_invalidations == 3);
  CHECK(coarse.fab->stats().blind_snoops == 0);
  CHECK(exact.fab->stats().unit_invalidations == 0);
  CHECK(t_coarse > 0);
  CHECK(t_exact > 0);
}

TEST_CASE("a per-socket directory's detour costs two sharers of one socket the unit's look-up and its ring",
          "[fabric][directory]") {
  Rig exact(platform_json_as_shipped("ivybridge-ex"));
  Rig coarse(ivb_with_directory("socket"));
  const Tick t_exact = write_to_three_sockets(exact, exact.line(0, "x"), {80, 81});
  const Tick t_coarse = write_to_three_sockets(coarse, coarse.line(0, "x"), {80, 81});
  CHECK(t_coarse >= t_exact + 20 * kNs);  // unit_lookup
  CHECK(t_coarse < t_exact + 20 * kNs + 4 * 6 * kNs + 4 * kNs);  // plus at most the socket's ring both ways, twice
}

TEST_CASE("an unfiltered unit snoops every core of a marked socket, holders or not", "[fabric][directory]") {
  const std::vector<int> sharers = {15, 16, 29, 75, 80, 89, 135, 140, 149};
  Rig r(ivb_with_directory("socket", "broadcast"));
  Addr x = r.line(0, "x");
  write_to_three_sockets(r, x, sharers);
  for (int c : sharers) CHECK(r.fab->state_of(c, x) == CacheState::I);
  CHECK(r.fab->violations() == 0);
  CHECK(r.fab->stats().blind_snoops == 3 * 15 - sharers.size());
}

TEST_CASE("a per-group directory sends one invalidation per node-controller group", "[fabric][directory]") {
  const std::vector<int> sharers = {15, 16, 29, 75, 80, 89, 135, 140, 149};  // groups 0 (socket 1), 2 and 4
  Rig r(ivb_with_directory("group"));
  Addr x = r.line(0, "x");
  write_to_three_sockets(r, x, sharers);
  for (int c : sharers) CHECK(r.fab->state_of(c, x) == CacheState::I);
  CHECK(r.fab->violations() == 0);
  // Socket 1 shares group 0 with the home (socket 0): the home looks it up itself.
  CHECK(r.fab->stats().unit_invalidations == 2);
}

TEST_CASE("a line homed on a group's second socket is looked up by its home for that group", "[fabric][directory]") {
  const std::vector<int> sharers = {0, 1, 75, 80};  // socket 0 (group 0, the home's) and socket 5 (group 2)
  Rig r(ivb_with_directory("group"));
  Addr x = r.line(1, "x");  // node 1: socket 1, the second socket of group 0
  for (int c : sharers) load_on(r, c, x);
  store_on(r, 16, x, 5);  // CPU 16 is on socket 1
  for (int c : sharers) CHECK(r.fab->state_of(c, x) == CacheState::I);
  CHECK(r.fab->violations() == 0);
  CHECK(r.fab->stats().unit_invalidations == 1);  // group 2 only: group 0 is the home's own
}
