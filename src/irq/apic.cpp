#include "cohsim/irq/apic.hpp"

#include <fmt/format.h>

namespace cohsim::irq {

using config::Spec;

namespace {
/// The highest set bit of a vector bitmap, or -1.
int highest(const std::bitset<kVectorCount>& b) {
  for (int v = kVectorCount - 1; v >= 0; --v)
    if (b.test(static_cast<std::size_t>(v))) return v;
  return -1;
}
/// The priority class of a vector (bits 7..4); -1 for none.
int priority_class(int vector) { return vector < 0 ? -1 : vector >> 4; }
}  // namespace

ApicParams::ApicParams(config::Reader r, const topo::Topology& t) {
  mode = r.choice("mode", Spec{.doc = "local APIC mode the firmware hands over: x2apic (MSR access) or xapic (MMIO "
                                      "page, 8-bit APIC IDs)",
                               .choices = {"x2apic", "xapic"}});
  x2apic_dest = r.choice(
      "x2apic_dest",
      Spec{.doc = "x2APIC: the kernel's driver for an IPI to several CPUs: cluster (x2apic_cluster, one logical-mode "
                  "ICR write per 16-CPU cluster) or physical (x2apic_phys, one ICR write per CPU); a single-CPU IPI "
                  "is one ICR write either way",
           .def = "cluster", .choices = {"cluster", "physical"}});
  icr_wrmsr = r.time("icr_wrmsr", Spec{.doc = "x2APIC: WRMSR to the ICR (0x830) until the IPI message leaves the core",
                                       .max = 1e7});
  eoi_wrmsr = r.time("eoi_wrmsr", Spec{.doc = "x2APIC: WRMSR to EOI (0x80B)", .max = 1e7});
  mmio_read = r.time("mmio_read", Spec{.doc = "xAPIC: one uncached read of an APIC register (the ICR poll)", .max = 1e7});
  mmio_write = r.time("mmio_write", Spec{.doc = "xAPIC: one uncached write of an APIC register (ICR2, ICR, EOI)",
                                         .max = 1e7});
  icr_busy = r.time("icr_busy", Spec{.doc = "xAPIC: the ICR's delivery status stays busy this long after the ICR "
                                            "write, until the local APIC has handed the message on",
                                     .max = 1e7});
  delivery = r.time("delivery", Spec{.doc = "target local APIC: accept the message, set IRR, prioritise, signal the "
                                            "core's interrupt logic",
                                     .max = 1e7});
  dispatch = r.time("dispatch", Spec{.doc = "kernel sysvec glue from the handler's first instruction to its body "
                                            "(irqentry_enter, irq_enter_rcu, stack switch)",
                                     .max = 1e7});
  if (r.schema_mode()) return;
  if (mode == "xapic" && t.cpu_count() > static_cast<int>(kXapicMaxApicId) + 1)
    r.fail("mode", fmt::format("xAPIC destinations are 8-bit APIC IDs (at most {} CPUs); this topology has {} CPUs",
                               kXapicMaxApicId + 1, t.cpu_count()));
}

Apic::Apic(const ApicParams& params, fabric::Interconnect& icn, std::vector<cpu::Cpu*> cpus, bool x2apic)
    : p_(params), icn_(icn), sim_(cpus.at(0)->sim()), cpus_(std::move(cpus)), x2apic_(x2apic),
      dest_mode_(params.x2apic_dest == "physical" ? X2apicDestMode::physical : X2apicDestMode::cluster) {
  if (static_cast<int>(cpus_.size()) != icn_.topology().cpu_count())
    throw sim::SimError(fmt::format("APIC: {} CPUs given, the topology has {}", cpus_.size(),
                                    icn_.topology().cpu_count()));
  if (!x2apic_ && cpus_.size() > kXapicMaxApicId + 1)
    throw sim::SimError(fmt::format("xAPIC mode addresses at most {} CPUs, not {}", kXapicMaxApicId + 1, cpus_.size()));
  cpu_state_.assign(cpus_.size(), CpuState{});
  for (cpu::Cpu* c : cpus_) c->set_interrupt_handler([this](cpu::Cpu& cpu) { return take_irq(cpu); });
}

void Apic::set_ipi_handler(int vector, IpiHandler handler) {
  if (vector < kFirstIpiVector || vector >= kVectorCount)
    throw sim::SimError(fmt::format("APIC vector {} out of {}..{}", vector, kFirstIpiVector, kVectorCount - 1));
  handlers_[static_cast<std::size_t>(vector)] = std::move(handler);
}

bool Apic::icr_busy(int cpu) const { return state(cpu).icr_busy_until > sim_.now(); }

// ------------------------------------------------------------- sending ---
Task<void> Apic::send_ipi(cpu::Cpu& source, const std::vector<int>& targets, int vector) {
  if (x2apic_) co_await x2apic_send_ipi(source, targets, vector);
  else co_await xapic_send_ipi(source, targets, vector);
}

Task<void> Apic::x2apic_send_ipi(cpu::Cpu& c, const std::vector<int>& targets, int vector) {
  // v5.17 arch/x86/kernel/apic/x2apic_phys.c x2apic_send_IPI / __x2apic_send_IPI_mask:
  // weak_wrmsr_fence() ("mfence; lfence": x2APIC MSR writes are not
  // serializing, so earlier stores must be visible before the IPI), then
  // __x2apic_send_IPI_dest -> native_x2apic_icr_write per destination.
  co_await c.mfence();
  co_await c.lfence();
  if (dest_mode_ == X2apicDestMode::physical || targets.size() == 1) {
    // x2apic_cluster.c x2apic_send_IPI (one CPU) writes its logical ID: one
    // ICR write to one APIC either way.
    for (int t : targets) co_await wrmsr(c, kMsrX2apicIcr, x2apic_icr(apic_id(t), vector));
    co_return;
  }
  // v5.10 x2apic_cluster.c __x2apic_send_IPI_mask: local_irq_save; copy the
  // mask to the per-CPU ipi_mask; for each CPU left in it, OR the logical IDs
  // of its cluster's CPUs in the mask, one WRMSR, drop the cluster; restore.
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  std::vector<std::uint32_t> dests;  // per cluster, in the order first met
  std::vector<std::uint32_t> clusters;
  for (int t : targets) {
    const std::uint32_t cl = apic_id(t) / kX2apicClusterSize;
    std::size_t k = 0;
    while (k < clusters.size() && clusters[k] != cl) ++k;
    if (k == clusters.size()) {
      clusters.push_back(cl);
      dests.push_back(0);
    }
    dests[k] |= x2apic_logical_id(apic_id(t));
  }
  for (std::uint32_t d : dests)
    co_await wrmsr(c, kMsrX2apicIcr, (static_cast<std::uint64_t>(d) << 32) | icr_low(vector) | kIcrDestLogical);
  if (were_enabled) co_await c.local_irq_enable();
}

Task<void> Apic::send_ipi_allbutself(cpu::Cpu& c, int vector, int /*cpu_count*/) {
  // v5.10 x2apic_send_IPI_allbutself -> __x2apic_send_IPI_shorthand(vector,
  // APIC_DEST_ALLBUT): weak_wrmsr_fence, one ICR write. xAPIC
  // default_send_IPI_allbutself -> __default_send_IPI_shorthand: wait for the
  // ICR idle, one ICR write (no ICR2).
  if (x2apic_) {
    co_await c.mfence();
    co_await c.lfence();
    co_await wrmsr(c, kMsrX2apicIcr, icr_low(vector) | kIcrAllButSelf);
    co_return;
  }
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  while (co_await mmio_read(c, kApicIcr) & kIcrBusy) ++stats_.busy_reads;
  co_await mmio_write(c, kApicIcr, icr_low(vector) | kIcrAllButSelf);
  if (were_enabled) co_await c.local_irq_enable();
}

Task<void> Apic::xapic_send_ipi(cpu::Cpu& c, const std::vector<int>& targets, int vector) {
  // v5.17 arch/x86/kernel/apic/ipi.c default_send_IPI_single_phys /
  // default_send_IPI_mask_sequence_phys: local_irq_save, then per CPU
  // __default_send_IPI_dest_field: __xapic_wait_icr_idle (while
  // (apic_read(APIC_ICR) & APIC_ICR_BUSY) cpu_relax()), apic_write(APIC_ICR2,
  // SET_XAPIC_DEST_FIELD(id)), apic_write(APIC_ICR, vector | dest mode).
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  for (int t : targets) {
    while (co_await mmio_read(c, kApicIcr) & kIcrBusy) ++stats_.busy_reads;
    co_await mmio_write(c, kApicIcr2, xapic_icr2(apic_id(t)));
    co_await mmio_write(c, kApicIcr, icr_low(vector));
  }
  if (were_enabled) co_await c.local_irq_enable();
}

Task<void> Apic::wrmsr(cpu::Cpu& c, std::uint32_t msr, std::uint64_t value) {
  if (!x2apic_) throw sim::SimError(fmt::format("cpu{}: WRMSR {:#x} in xAPIC mode (#GP)", c.id(), msr));
  if (msr == kMsrX2apicIcr) {
    co_await sim_.delay(p_.icr_wrmsr);
    icr_write(c.id(), static_cast<std::uint32_t>(value >> 32), static_cast<std::uint32_t>(value), sim_.now());
  } else if (msr == kMsrX2apicEoi) {
    co_await sim_.delay(p_.eoi_wrmsr);
    CpuState& s = state(c.id());
    const int v = highest(s.isr);
    if (v >= 0) s.isr.reset(static_cast<std::size_t>(v));
    ++stats_.eois;
    update_signal(c.id());
  } else {
    throw sim::SimError(fmt::format("cpu{}: WRMSR {:#x}: not an x2APIC register this model has", c.id(), msr));
  }
}

Task<std::uint32_t> Apic::mmio_read(cpu::Cpu& c, std::uint32_t reg) {
  if (x2apic_) throw sim::SimError(fmt::format("cpu{}: MMIO read of APIC register {:#x} in x2APIC mode", c.id(), reg));
  co_await c.drain_store_buffer();  // UC: strongly ordered after earlier stores
  co_await sim_.delay(p_.mmio_read);
  const CpuState& s = state(c.id());
  if (reg == kApicIcr) {
    ++stats_.icr_reads;
    co_return icr_busy(c.id()) ? kIcrBusy : 0u;
  }
  if (reg == kApicIcr2) co_return s.icr2;
  throw sim::SimError(fmt::format("cpu{}: MMIO read of APIC register {:#x}: not modelled", c.id(), reg));
}

Task<void> Apic::mmio_write(cpu::Cpu& c, std::uint32_t reg, std::uint32_t value) {
  if (x2apic_) throw sim::SimError(fmt::format("cpu{}: MMIO write of APIC register {:#x} in x2APIC mode", c.id(), reg));
  co_await c.drain_store_buffer();  // UC: earlier stores become visible first
  co_await sim_.delay(p_.mmio_write);
  CpuState& s = state(c.id());
  if (reg == kApicIcr2) {
    s.icr2 = value;
  } else if (reg == kApicIcr) {
    if (icr_busy(c.id()))
      throw sim::SimError(fmt::format("cpu{}: ICR written while busy (the driver waits for idle)", c.id()));
    s.icr_busy_until = sim_.now() + p_.icr_busy;
    icr_write(c.id(), s.icr2 >> 24, value, s.icr_busy_until);
  } else if (reg == kApicEoi) {
    const int v = highest(s.isr);
    if (v >= 0) s.isr.reset(static_cast<std::size_t>(v));
    ++stats_.eois;
    update_signal(c.id());
  } else {
    throw sim::SimError(fmt::format("cpu{}: MMIO write of APIC register {:#x}: not modelled", c.id(), reg));
  }
}

Task<void> Apic::eoi(cpu::Cpu& c) {
  // v5.17 ack_APIC_irq -> apic_eoi: native_apic_msr_eoi_write (x2APIC) or
  // native_apic_mem_write(APIC_EOI, APIC_EOI_ACK) (xAPIC).
  if (x2apic_) co_await wrmsr(c, kMsrX2apicEoi, 0);
  else co_await mmio_write(c, kApicEoi, 0);
}

void Apic::icr_write(int source, std::uint32_t dest, std::uint32_t low, Tick leave) {
  const int vector = static_cast<int>(low & 0xFF);
  if (vector < kFirstIpiVector) throw sim::SimError(fmt::format("cpu{}: IPI vector {} < 32", source, vector));
  ++stats_.icr_writes;
  const int n = static_cast<int>(cpus_.size());
  if ((low & kIcrAllButSelf) == kIcrAllButSelf) {
    for (int t = 0; t < n; ++t)
      if (t != source) send_message(source, t, vector, leave);
    return;
  }
  if ((low & kIcrAllButSelf) != 0)
    throw sim::SimError(fmt::format("cpu{}: ICR shorthand {:#x}: not modelled", source, low & kIcrAllButSelf));
  if (low & kIcrDestLogical) {
    if (!x2apic_) throw sim::SimError(fmt::format("cpu{}: xAPIC logical destination: not modelled", source));
    // x2APIC logical: cluster in bits 31..16, a bitmap of its 16 APICs below.
    const std::uint32_t cluster = dest >> 16;
    for (int b = 0; b < kX2apicClusterSize; ++b) {
      if (!(dest & (1u << b))) continue;
      const std::uint32_t id = cluster * kX2apicClusterSize + static_cast<std::uint32_t>(b);
      if (id >= cpus_.size())
        throw sim::SimError(fmt::format("cpu{}: IPI to logical ID {:#x}: no APIC {}", source, dest, id));
      send_message(source, static_cast<int>(id), vector, leave);
    }
    return;
  }
  if (dest >= cpus_.size())
    throw sim::SimError(fmt::format("cpu{}: IPI to APIC ID {}: no such APIC", source, dest));
  send_message(source, static_cast<int>(dest), vector, leave);
}

void Apic::send_message(int source, int target, int vector, Tick leave) {
  const Tick issued = sim_.now();
  const Tick at = icn_.send(icn_.cpu_endpoint(source), icn_.cpu_endpoint(target), leave) + p_.delivery;
  std::size_t slot;
  if (free_slots_.empty()) {
    slot = messages_.size();
    messages_.push_back({});
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  messages_[slot] = Message{target, vector, issued};
  sim_.schedule(at, &Apic::deliver_event, this, slot);
}

// ----------------------------------------------------------- receiving ---
void Apic::deliver_event(void* ctx, std::uint64_t slot) { static_cast<Apic*>(ctx)->deliver(static_cast<std::size_t>(slot)); }

void Apic::deliver(std::size_t slot) {
  const Message m = messages_[slot];
  free_slots_.push_back(slot);
  CpuState& s = state(m.target);
  ++stats_.delivered;
  stats_.delivery_latency += sim_.now() - m.issued;
  if (s.irr.test(static_cast<std::size_t>(m.vector))) ++stats_.merged;  // one interrupt serves both
  s.irr.set(static_cast<std::size_t>(m.vector));
  update_signal(m.target);
}

void Apic::update_signal(int cpu) {
  CpuState& s = state(cpu);
  if (s.asserted) return;
  if (priority_class(highest(s.irr)) <= priority_class(highest(s.isr))) return;
  s.asserted = true;
  cpus_[static_cast<std::size_t>(cpu)]->raise_interrupt();
}

Task<void> Apic::take_irq(cpu::Cpu& c) {
  // The core took INTR: the APIC moves the highest requested vector to ISR
  // (INTA). Then the kernel: v5.17 DEFINE_IDTENTRY_SYSVEC glue, ack_APIC_irq()
  // first thing in the handler (e.g. sysvec_call_function_single), the body.
  CpuState& s = state(c.id());
  s.asserted = false;
  const int v = highest(s.irr);
  if (priority_class(v) <= priority_class(highest(s.isr))) {
    ++stats_.spurious;
    co_return;
  }
  s.irr.reset(static_cast<std::size_t>(v));
  s.isr.set(static_cast<std::size_t>(v));
  s.entered = sim_.now();
  ++stats_.accepted;
  co_await sim_.delay(p_.dispatch);
  co_await eoi(c);
  if (auto& h = handlers_[static_cast<std::size_t>(v)]) co_await h(c);
}

}  // namespace cohsim::irq
