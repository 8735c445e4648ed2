// smp_call_function_many_cond (the cfd csds and their placement, the IPI
// only to empty queues, the wait), the x2APIC multi-CPU sends, and the x86
// TLB shootdown path (the INVLPG ceiling, lazy CPUs) with its workloads.
#include <catch2/catch.hpp>

#include <map>

#include "cohsim/irq/apic.hpp"
#include "cohsim/scenario/machine.hpp"
#include "models/kernel/smp_call.hpp"
#include "models/kernel/tlb.hpp"
#include "test_support.hpp"

using namespace cohsim;
using models::kernel::CfdPlacement;
using models::kernel::CsdLayout;
using models::kernel::SmpCall;
using config::json;
using sim::Task;
using sim::Tick;

namespace {

const std::string kPlatform = test::source_path("configs/platforms/skylake-sp-2s.json");

/// Skylake-SP with its APICs and an SmpCall whose other CPUs run busy loops.
struct Rig {
  config::Registry registry;
  scenario::PlatformDoc doc;
  std::unique_ptr<scenario::Machine> m;
  std::unique_ptr<irq::Apic> apic;
  std::unique_ptr<SmpCall> smp;
  std::map<int, int> runs;                    ///< cpu -> times the function ran there
  std::vector<std::pair<int, Tick>> run_at;   ///< (cpu, when the function ended)
  fabric::Addr fn = 0;

  explicit Rig(CfdPlacement placement = {}, const std::string& dest = "cluster")
      : doc(scenario::load_platform(kPlatform)) {
    doc.doc["apic"]["x2apic_dest"]["value"] = dest;
    m = std::make_unique<scenario::Machine>(doc, 1, registry);
    std::vector<cpu::Cpu*> cpus;
    for (int c = 0; c < m->cpu_count(); ++c) cpus.push_back(&m->cpu(c));
    apic = std::make_unique<irq::Apic>(*m->apic_params(), m->interconnect(), cpus, true);
    smp = std::make_unique<SmpCall>(*m, *apic, models::kernel::SmpCallCosts{}, models::kernel::IdleMode::busy);
    smp->prepare_cfd(placement);
    fn = smp->register_function([this](cpu::Cpu& c, std::uint64_t) -> Task<void> {
      co_await c.compute(200 * sim::kNs);  // a function that takes a while
      ++runs[c.id()];
      run_at.emplace_back(c.id(), c.sim().now());
    });
  }
  void busy(const std::vector<int>& cpus) {
    for (int c : cpus) smp->start_idle(c);
  }
  cpu::Cpu& cpu(int n) { return m->cpu(n); }
  sim::Simulator& sim() { return m->sim(); }
};

Task<void> call_many(Rig& r, int sender, std::vector<int> mask, int times, Tick start, Tick* returned = nullptr) {
  co_await r.sim().delay(start);
  const fabric::Addr stack = r.m->memory().alloc(0, 64, 64, "test stack csd");
  for (int i = 0; i < times; ++i)
    co_await r.smp->smp_call_function_many_cond(r.cpu(sender), mask, r.fn, 0, true, nullptr, stack);
  if (returned) *returned = r.sim().now();
}

bool straddles(fabric::Addr csd) { return csd % 64 + CsdLayout::bytes > 64; }

}  // namespace

TEST_CASE("smp_call_function_many_cond runs the function once per call on every target and never on the sender",
          "[tlb][smp_many]") {
  Rig r;
  const std::vector<int> targets{1, 2, 5, 17, 20, 31};
  r.busy(targets);
  r.sim().spawn("sender", call_many(r, 0, {0, 1, 2, 5, 17, 20, 31}, 3, 0));
  r.sim().run();
  for (int t : targets) CHECK(r.runs[t] == 3);
  CHECK(r.runs.count(0) == 0);
  CHECK(r.smp->many_calls() == 3);
}

TEST_CASE("with wait the sender returns only after every target has run the function and released its csd",
          "[tlb][smp_many]") {
  Rig r;
  const std::vector<int> targets{3, 4, 16, 30};
  r.busy(targets);
  Tick returned = 0;
  r.sim().spawn("sender", call_many(r, 0, targets, 1, 0, &returned));
  r.sim().run();
  REQUIRE(r.run_at.size() == targets.size());
  for (const auto& [cpu, at] : r.run_at) CHECK(at <= returned);
  for (int t : targets) CHECK((r.m->fabric().peek(r.smp->cfd_csd(0, t) + CsdLayout::flags, 4) & 1) == 0);
}

TEST_CASE("an IPI goes only to a target whose call queue was empty, a second sender queues behind without one",
          "[tlb][smp_many]") {
  Rig r;
  // Targets 2 and 3 run with interrupts off for 3 us: the first sender's
  // entries stay queued while the second sender adds its own.
  for (int t : {2, 3})
    r.sim().spawn("irqs off", [](cpu::Cpu& c) -> Task<void> {
      c.local_irq_disable();
      co_await c.compute(3 * sim::kUs);
      co_await c.local_irq_enable();
      for (;;) co_await c.compute(100 * sim::kUs);
    }(r.cpu(t)), true);
  r.sim().spawn("sender 0", call_many(r, 0, {2, 3}, 1, 0));
  r.sim().spawn("sender 1", call_many(r, 1, {2, 3}, 1, sim::kUs));
  r.sim().run();
  CHECK(r.runs[2] == 2);
  CHECK(r.runs[3] == 2);
  CHECK(r.smp->ipis_sent() == 2);            // sender 0's, one per target
  CHECK(r.smp->queued_without_ipi() == 2);   // sender 1 found both queues non-empty
  CHECK(r.apic->stats().delivered == 2);
}

TEST_CASE("with csd_align=size no cfd csd straddles a line, with none the allocator's offset decides",
          "[tlb][smp_many]") {
  for (fabric::Addr offset : {0u, 8u, 24u, 40u, 56u})
    for (fabric::Addr gap : {0u, 8u, 16u}) {
      Rig r(CfdPlacement{.align_to_size = true, .first_offset = offset, .gap = gap});
      for (int s = 0; s < r.m->cpu_count(); s += 3)
        for (int t : {0, 7, 31}) CHECK_FALSE(straddles(r.smp->cfd_csd(s, t)));
    }
  // Unaligned, CPU 0's area at unit offset 8: sender 0's csd fits in one
  // line (8..39), sender 1's follows at 40 and runs into the next line.
  Rig r(CfdPlacement{.align_to_size = false, .first_offset = 8, .gap = 0});
  for (int t : {0, 9, 31}) {
    CHECK(r.smp->cfd_csd(0, t) % 64 == 8);
    CHECK_FALSE(straddles(r.smp->cfd_csd(0, t)));
    CHECK(r.smp->cfd_csd(1, t) % 64 == 40);
    CHECK(straddles(r.smp->cfd_csd(1, t)));
  }
  // At offset 0 the same allocator packs two csds per line and none straddles.
  Rig r0(CfdPlacement{.align_to_size = false, .first_offset = 0, .gap = 0});
  for (int s = 0; s < r0.m->cpu_count(); ++s) CHECK_FALSE(straddles(r0.smp->cfd_csd(s, 5)));
}

TEST_CASE("a cfd csd is homed on its target's node, the sender's cpumasks on the sender's", "[tlb][smp_many]") {
  Rig r;
  const auto& topo = r.m->topology();
  for (int s : {0, 20})
    for (int t : {1, 17, 31}) CHECK(r.m->memory().home_node(r.smp->cfd_csd(s, t)) == topo.node_of_cpu(t));
}

TEST_CASE("x2APIC cluster mode sends one ICR write per 16-CPU cluster, physical mode one per CPU, the shorthand one",
          "[tlb][apic]") {
  const std::vector<int> targets{1, 2, 3, 17, 20};
  for (const std::string dest : {"cluster", "physical"}) {
    Rig r({}, dest);
    r.sim().spawn("send", [](Rig& r, const std::vector<int>& t) -> Task<void> {
      co_await r.apic->send_ipi(r.cpu(0), t, 0xfc);
      co_await r.sim().delay(5 * sim::kUs);  // the messages arrive
    }(r, targets));
    r.busy(targets);
    r.sim().run();
    CHECK(r.apic->stats().icr_writes == (dest == "cluster" ? 2u : 5u));
    CHECK(r.apic->stats().delivered == 5);
  }
  Rig r;
  std::vector<int> others;
  for (int c = 0; c < 32; ++c)
    if (c != 4) others.push_back(c);
  r.busy(others);
  r.sim().spawn("send", [](Rig& r) -> Task<void> {
    co_await r.apic->send_ipi_allbutself(r.cpu(4), 0xfc, 32);
    co_await r.sim().delay(5 * sim::kUs);
  }(r));
  r.sim().run();
  CHECK(r.apic->stats().icr_writes == 1);
  CHECK(r.apic->stats().delivered == 31);
}

namespace {

/// A TlbShootdown on the Rig's machine: the mm live on `cpus` (the first one flushes).
struct TlbRig : Rig {
  std::unique_ptr<models::kernel::TlbShootdown> tlb;
  explicit TlbRig(const std::vector<int>& cpus, const std::vector<int>& lazy = {}) {
    tlb = std::make_unique<models::kernel::TlbShootdown>(*m, *smp, models::kernel::TlbCosts{}, 0);
    for (int c : cpus)
      sim().spawn("switch_mm", [](TlbRig& r, int c, bool lazy) -> Task<void> {
        co_await r.tlb->switch_to_mm(r.cpu(c));
        if (lazy) co_await r.tlb->enter_lazy(r.cpu(c));
        if (c != 0) r.smp->start_idle(c);
      }(*this, c, std::find(lazy.begin(), lazy.end(), c) != lazy.end()));
    sim().run();
  }
  /// flush_tlb_mm_range of `pages` pages from CPU 0.
  void flush(std::uint64_t pages) {
    const fabric::Addr stack = m->memory().alloc(0, 64, 64, "stack csd");
    sim().spawn("flush", [](TlbRig& r, std::uint64_t pages, fabric::Addr csd) -> Task<void> {
      co_await r.tlb->flush_tlb_mm_range(r.cpu(0), 0x10000000, 0x10000000 + pages * 4096, 12, false, csd);
    }(*this, pages, stack));
    sim().run();
  }
};

}  // namespace

TEST_CASE("a flush of 33 pages is one INVLPG per page on each CPU of the mm, of 34 pages a full flush", "[tlb]") {
  const std::vector<int> cpus{0, 1, 2, 20};
  for (std::uint64_t pages : {33u, 34u}) {
    TlbRig r(cpus);
    const auto before = r.tlb->stats();
    r.flush(pages);
    const auto& s = r.tlb->stats();
    CHECK(s.shootdowns - before.shootdowns == 1);
    CHECK(s.remote_flushes - before.remote_flushes == 3);
    CHECK(s.local_flushes - before.local_flushes == 1);
    if (pages == 33) {
      CHECK(s.invlpgs - before.invlpgs == 4 * 33);  // the sender and its 3 targets
      CHECK(s.full_flushes == before.full_flushes);
    } else {
      CHECK(s.invlpgs == before.invlpgs);
      CHECK(s.full_flushes - before.full_flushes == 4);
    }
    for (int c : cpus)
      CHECK(r.m->fabric().peek(r.tlb->tlb_state(c) + models::kernel::TlbStateLayout::ctx0_tlb_gen, 8) ==
            r.tlb->mm_tlb_gen());
  }
}

TEST_CASE("a lazy CPU of the mm gets no IPI and no flush, with one non-lazy target the single-CPU call is used",
          "[tlb]") {
  TlbRig r({0, 1, 2}, {2});
  const std::uint64_t ipis = r.smp->ipis_sent();
  r.flush(1);
  CHECK(r.smp->ipis_sent() - ipis == 1);  // to CPU 1 only
  CHECK(r.smp->many_calls() == 1);        // the cond skipped CPU 2 inside the many path
  CHECK(r.tlb->stats().remote_flushes == 1);
  TlbRig two({0, 1});
  two.flush(1);
  CHECK(two.smp->many_calls() == 0);  // cpumask_next_and found no second CPU: smp_call_function_single
  CHECK(two.tlb->stats().remote_flushes == 1);
}

TEST_CASE("madvise-dontneed sends one IPI per other thread and each shootdown moves csd lines", "[tlb][workload]") {
  auto s = scenario::load_scenario(test::source_path("configs/scenarios/tlb-madvise-haswell-ex.json"), "csd-aligned",
                                   {{"iterations", "30"}, {"warmup_iterations", "3"}});
  scenario::Run run(s, 1);
  const scenario::Results res = run.execute();
  CHECK(res.get("shootdowns") == 30);
  CHECK(res.get("ipis_per_shootdown") == 3);
  CHECK(res.get("icr_writes_per_shootdown") == 1);  // CPUs 1..3: one x2APIC cluster
  CHECK(res.get("csd_lines_per_shootdown") >= 3);
  CHECK(res.get("ns_per_iteration") > 0);
}

TEST_CASE("swap-mt flushes every writer's CPU from every writer and its unaligned csds never move fewer lines",
          "[tlb][workload]") {
  std::map<std::string, scenario::Results> res;
  for (const char* v : {"csd-aligned", "csd-unaligned"}) {
    auto s = scenario::load_scenario(test::source_path("configs/scenarios/swap-mt-skylake.json"), v,
                                     {{"threads", "8"}, {"duration", "300us"}, {"warmup", "150us"}});
    scenario::Run run(s, 1);
    res[v] = run.execute();
  }
  for (auto& [v, r] : res) {
    CHECK(r.get("pages_per_s") > 0);
    CHECK(r.get("shootdowns") > 0);
    CHECK(r.get("ipis_per_shootdown") <= 7);
  }
  CHECK(res["csd-unaligned"].get("csd_lines_per_shootdown") >= res["csd-aligned"].get("csd_lines_per_shootdown"));
}

TEST_CASE("a TLB workload on a platform without the flush costs is a config error naming cpu.invlpg", "[tlb][config]") {
  test::TempDir dir;
  json doc = test::platform_json_as_shipped("skylake-sp-2s");
  doc["cpu"].erase("invlpg");
  doc["cpu"].erase("tlb_flush_full");
  const std::string plat = dir.write("p.json", doc.dump());
  const std::string scen = dir.write(
      "s.json", json{{"platform", plat}, {"workload", "madvise-dontneed"}, {"params", json::object()}}.dump());
  const test::CliResult r = test::run_cli("run " + test::quoted(scen));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("platform.cpu.invlpg"));
}

TEST_CASE("compare of the swap-mt csd variants writes a report with the csd lines moved per shootdown",
          "[tlb][cli]") {
  test::TempDir dir;
  const test::CliResult r = test::run_cli(
      "compare " + test::quoted(test::source_path("configs/scenarios/swap-mt-skylake.json")) +
      " --variants csd-aligned,csd-unaligned --set threads=4 --set duration=300us --set warmup=150us --report " +
      test::quoted(dir.file("rep")));
  REQUIRE(r.exit_code == 0);
  std::ifstream md(dir.file("rep/report.md"));
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("csd_lines_per_shootdown"));
  CHECK_THAT(text, Catch::Contains("csd-unaligned"));
}

TEST_CASE("a TLB shootdown to more CPUs never costs less, across all four Haswell-EX sockets", "[tlb][workload]") {
  const char* variant = "csd-aligned";  // one sender: the layouts give the same times here
  double previous = 0;
  int previous_threads = 0;
  // 18 CPUs per socket: 19, 37 and 55 threads each reach one more socket.
  for (int threads : {2, 3, 4, 8, 18, 19, 36, 37, 55, 72}) {
    auto s = scenario::load_scenario(test::source_path("configs/scenarios/tlb-madvise-haswell-ex.json"), variant,
                                     {{"threads", std::to_string(threads)}, {"iterations", "20"},
                                      {"warmup_iterations", "3"}});
    scenario::Run run(s, 1);
    const double ns = run.execute().get("ns_per_iteration");
    INFO(variant << ": " << previous_threads << " threads " << previous << " ns, " << threads << " threads " << ns
                 << " ns");
    CHECK(ns > previous);
    previous = ns;
    previous_threads = threads;
  }
}
