// The x86 local APIC (x2APIC and xAPIC send paths, delivery, EOI) and the
// x86 side of smp_call_function_single (polling idle without an IPI).
#include <catch2/catch.hpp>

#include "cohsim/irq/apic.hpp"
#include "cohsim/scenario/machine.hpp"
#include "models/kernel/smp_call.hpp"

using namespace cohsim;
using sim::Task;
using sim::Tick;

namespace {

const std::string kPlatform = std::string(COHSIM_SOURCE_DIR) + "/configs/platforms/skylake-sp-2s.json";
constexpr int kVector = 0xf2;

/// A 2-socket Skylake-SP with its local APICs; `icr_busy` overrides the platform's.
struct Rig {
  config::Registry registry;
  scenario::PlatformDoc doc;
  std::unique_ptr<scenario::Machine> m;
  std::unique_ptr<irq::Apic> apic;
  std::vector<std::pair<int, Tick>> entries;  ///< (cpu, handler body start)

  explicit Rig(bool x2apic = true, const char* icr_busy = nullptr) : doc(scenario::load_platform(kPlatform)) {
    if (icr_busy) doc.doc["apic"]["icr_busy"]["value"] = icr_busy;
    m = std::make_unique<scenario::Machine>(doc, 1, registry);
    std::vector<cpu::Cpu*> cpus;
    for (int c = 0; c < m->cpu_count(); ++c) cpus.push_back(&m->cpu(c));
    apic = std::make_unique<irq::Apic>(*m->apic_params(), m->interconnect(), cpus, x2apic);
    apic->set_ipi_handler(kVector, [this](cpu::Cpu& c) -> Task<void> {
      entries.emplace_back(c.id(), m->sim().now());
      co_return;
    });
  }
  cpu::Cpu& cpu(int n) { return m->cpu(n); }
  sim::Simulator& sim() { return m->sim(); }
};

}  // namespace

TEST_CASE("x2APIC puts the 32-bit destination in the ICR's high half and xAPIC the 8-bit one in ICR2 bits 31..24", "[apic]") {
  CHECK(irq::x2apic_icr(0x12345, 0xfb) == ((0x12345ull << 32) | 0xfb));
  CHECK(irq::xapic_icr2(17) == (17u << 24));
  CHECK(irq::xapic_icr2(0x1ff) == (0xffu << 24));  // only 8 bits fit
  for (bool x2apic : {true, false}) {
    Rig r(x2apic);
    r.sim().spawn("sender", [](Rig& r) -> Task<void> {
      const std::vector<int> targets{17, 3};
      co_await r.apic->send_ipi(r.cpu(0), targets, kVector);
    }(r));
    r.sim().spawn("busy", [](cpu::Cpu& a, cpu::Cpu& b) -> Task<void> {
      co_await a.compute(5 * sim::kUs);
      co_await b.compute(sim::kUs);
    }(r.cpu(17), r.cpu(3)));
    r.sim().run();
    REQUIRE(r.entries.size() == 2);
    CHECK(r.entries[0].first == 17);  // sent first
    CHECK(r.entries[1].first == 3);
    CHECK(r.apic->stats().icr_writes == 2);
  }
}

TEST_CASE("the x2APIC send path's mfence makes earlier stores visible before the ICR write", "[apic]") {
  // CPU 0 fills its store buffer with writes to lines CPU 20 (other socket)
  // owns, then writes a flag; the handler on CPU 20 reads the flag.
  auto flag_seen = [](bool fenced) {
    Rig r;
    std::vector<fabric::Addr> lines;
    for (int i = 0; i < 40; ++i) lines.push_back(r.m->memory().alloc(1, 64, 64, "remote"));
    const fabric::Addr flag = r.m->memory().alloc(1, 64, 64, "flag");
    std::uint64_t seen = 7;
    r.apic->set_ipi_handler(kVector, [&](cpu::Cpu& c) -> Task<void> { seen = co_await c.load(flag, 8); });
    r.sim().spawn("owner", [](cpu::Cpu& c, std::vector<fabric::Addr> ls) -> Task<void> {
      for (auto a : ls) co_await c.store(a, 8, 1);
      co_await c.mfence();
      co_await c.compute(20 * sim::kUs);
    }(r.cpu(20), lines));
    r.sim().spawn("sender", [](Rig& r, std::vector<fabric::Addr> ls, fabric::Addr flag, bool fenced) -> Task<void> {
      co_await r.sim().delay(2 * sim::kUs);
      for (auto a : ls) co_await r.cpu(0).store(a, 8, 2);
      co_await r.cpu(0).store(flag, 8, 1);
      const std::vector<int> target(1, 20);
      if (fenced) co_await r.apic->send_ipi(r.cpu(0), target, kVector);
      else co_await r.apic->wrmsr(r.cpu(0), irq::kMsrX2apicIcr, irq::x2apic_icr(20, kVector));
    }(r, lines, flag, fenced));
    r.sim().run();
    return seen;
  };
  CHECK(flag_seen(true) == 1);
  CHECK(flag_seen(false) == 0);  // the bare WRMSR overtakes the buffered stores
}

TEST_CASE("in xAPIC mode a second send polls the ICR until the first has left", "[apic]") {
  Rig r(false, "500ns");
  Tick second_sent = 0;
  r.sim().spawn("sender", [](Rig& r, Tick& t) -> Task<void> {
    const std::vector<int> five(1, 5), six(1, 6);
    co_await r.apic->send_ipi(r.cpu(0), five, kVector);
    const Tick first = r.sim().now();
    co_await r.apic->send_ipi(r.cpu(0), six, kVector);
    t = r.sim().now() - first;
  }(r, second_sent));
  r.sim().spawn("busy", [](Rig& r) -> Task<void> {
    co_await r.cpu(5).compute(3 * sim::kUs);
    co_await r.cpu(6).compute(sim::kUs);
  }(r));
  r.sim().run();
  CHECK(r.apic->stats().busy_reads > 0);
  CHECK(second_sent >= 500 * sim::kNs);  // the ICR stayed busy that long after the first write
  CHECK(r.entries.size() == 2);
}

TEST_CASE("the handler runs after the EOI so the vector is no longer in service", "[apic]") {
  for (bool x2apic : {true, false}) {
    Rig r(x2apic);
    bool in_service = true;
    r.apic->set_ipi_handler(kVector, [&](cpu::Cpu& c) -> Task<void> {
      in_service = r.apic->in_service(c.id(), kVector);
      co_return;
    });
    r.sim().spawn("sender", [](Rig& r) -> Task<void> {
      const std::vector<int> two(1, 2);
      co_await r.apic->send_ipi(r.cpu(1), two, kVector);
    }(r));
    r.sim().spawn("busy", [](cpu::Cpu& c) -> Task<void> { co_await c.compute(2 * sim::kUs); }(r.cpu(2)));
    r.sim().run();
    CHECK_FALSE(in_service);
    CHECK(r.apic->stats().eois == 1);
    CHECK(r.apic->stats().accepted == 1);
    CHECK_FALSE(r.apic->requested(2, kVector));
  }
}

TEST_CASE("a polling idle CPU gets no IPI yet the call runs, a halted one gets the IPI", "[apic]") {
  using models::kernel::IdleMode;
  for (IdleMode idle : {IdleMode::poll, IdleMode::halt}) {
    Rig r;
    models::kernel::SmpCall smp(*r.m, *r.apic, models::kernel::SmpCallCosts{}, idle);
    int ran = 0;
    const fabric::Addr fn = smp.register_function([&ran](cpu::Cpu&, std::uint64_t) -> Task<void> { ++ran; co_return; });
    smp.start_idle(20);
    const fabric::Addr csd = r.m->memory().alloc(0, 64, 64, "test.stack");
    r.sim().spawn("sender", [](models::kernel::SmpCall& s, cpu::Cpu& c, fabric::Addr fn, fabric::Addr csd) -> Task<void> {
      co_await c.sim().delay(sim::kUs);  // the target is in its idle loop by then
      co_await s.smp_call_function_single(c, 20, fn, 0, true, csd);
    }(smp, r.cpu(0), fn, csd));
    r.sim().run();
    CHECK(ran == 1);
    if (idle == IdleMode::poll) {
      CHECK(smp.ipis_sent() == 0);
      CHECK(smp.woken_without_ipi() == 1);
      CHECK(r.apic->stats().icr_writes == 0);
    } else {
      CHECK(smp.ipis_sent() == 1);
      CHECK(r.apic->stats().accepted == 1);
    }
  }
}
