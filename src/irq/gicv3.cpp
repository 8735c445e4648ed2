#include "cohsim/irq/gicv3.hpp"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <stdexcept>

namespace cohsim::irq {

using config::Spec;

GicParams::GicParams(config::Reader r, const topo::Topology& t) {
  routing_placement = r.choice(
      "routing_placement",
      Spec{.doc = "where a die's SGI routing point (distributor / GIC block) sits: on every die's fabric, "
                  "one per socket on its gateway die, or one for the system on socket 0's gateway die (every SGI "
                  "passes it)",
           .def = "die", .choices = {"die", "socket", "system"}});
  sgi_register_write = r.time(
      "sgi_register_write",
      Spec{.doc = "msr ICC_SGI1R_EL1: the CPU interface until the SGI request leaves the core", .max = 1e6});
  routing = r.time("routing", Spec{.doc = "routing point: decode Aff3.Aff2.Aff1 and the target list, per routing "
                                          "point an SGI passes",
                                   .max = 1e6});
  redistributor = r.time(
      "redistributor",
      Spec{.doc = "target's redistributor: set pending, priority check, CPU interface asserts IRQ to the core",
           .max = 1e6});
  iar_read = r.time("iar_read", Spec{.doc = "mrs ICC_IAR1_EL1: acknowledge (pending -> active)", .max = 1e6});
  eoi_write = r.time("eoi_write", Spec{.doc = "msr ICC_EOIR1_EL1: priority drop", .max = 1e6});
  dir_write = r.time("dir_write", Spec{.doc = "msr ICC_DIR_EL1: deactivate", .max = 1e6});
  dispatch = r.time(
      "dispatch",
      Spec{.doc = "kernel instructions from gic_handle_irq to the SGI's handler (handle_domain_irq, irq_enter, "
                  "irq domain look-up, handle_percpu_devid_irq, ipi_handler, do_handle_IPI)",
           .max = 1e7});
  socket_crossing = r.time(
      "socket_crossing",
      Spec{.doc = "a GIC message (SGI request or forward), per socket link it crosses: its time beyond the "
                  "interconnect's crossing of that link",
           .def = "0ns", .max = 1e6});
  if (r.schema_mode()) return;
  const int per_cluster = t.cores_per_cluster() * t.threads_per_core();
  if (per_cluster > 16)
    r.fail("routing_placement", fmt::format("a GICv3 target list addresses 16 CPUs (Aff0 0..15); this topology "
                                            "puts {} CPUs in a cluster",
                                            per_cluster));
  if (routing_placement == "die" && t.node_count() != t.die_count())
    r.fail("routing_placement", "'die' needs an agent on every die (one NUMA node per die); use 'socket'");
}

GicSendBarrier parse_send_barrier(const std::string& name) {
  const auto& names = send_barrier_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<GicSendBarrier>(i);
  throw std::invalid_argument("unknown gic_ipi_send_mask barrier " + name);
}

Gicv3::Gicv3(const GicParams& params, fabric::Interconnect& icn, std::vector<cpu::Cpu*> cpus)
    : p_(params), icn_(icn), sim_(cpus.at(0)->sim()), cpus_(std::move(cpus)) {
  const topo::Topology& t = icn_.topology();
  dies_per_socket_ = t.dies_per_socket();
  clusters_per_die_ = t.clusters_per_die();
  if (static_cast<int>(cpus_.size()) != t.cpu_count())
    throw sim::SimError(fmt::format("GICv3: {} CPUs given, the topology has {}", cpus_.size(), t.cpu_count()));
  group_cpus_.assign(static_cast<std::size_t>(t.cluster_count()), {});
  for (auto& g : group_cpus_) g.fill(-1);
  for (int c = 0; c < t.cpu_count(); ++c) {
    const topo::CpuPlace& pl = t.cpu(c);
    Affinity a{pl.socket, pl.die, pl.cluster, pl.core * t.threads_per_core() + pl.thread};
    affinity_.push_back(a);
    group_cpus_[static_cast<std::size_t>(pl.cluster_global)][static_cast<std::size_t>(a.aff0)] = c;
  }
  // The routing point of each die. "die": a GIC block on every die's fabric,
  // at the same place as the die's home agent (one NUMA node per die), so a
  // message to it pays the die's ring and the die-to-die links like any agent
  // there. "socket": one per socket, a device on the socket's gateway die.
  // "system": one for the machine, a device on socket 0's gateway die that
  // every SGI passes (from socket 1 to socket 1 across the link and back).
  for (int d = 0; d < t.die_count(); ++d) {
    if (p_.routing_placement == "die") {
      routing_ep_.push_back(icn_.home_endpoint(d));
    } else if (p_.routing_placement == "system") {
      if (d == 0) routing_ep_.push_back(icn_.add_device("gic.system", 0));
      else routing_ep_.push_back(routing_ep_.back());
    } else {
      const int socket = d / t.dies_per_socket();
      if (d % t.dies_per_socket() == 0) routing_ep_.push_back(icn_.add_device(fmt::format("gic.socket{}", socket), socket));
      else routing_ep_.push_back(routing_ep_.back());
    }
  }
  cpu_state_.assign(cpus_.size(), CpuState{});
  for (cpu::Cpu* c : cpus_) c->set_interrupt_handler([this](cpu::Cpu& cpu) { return take_irq(cpu); });
}

int Gicv3::group_of(int aff3, int aff2, int aff1) const { return (aff3 * dies_per_socket_ + aff2) * clusters_per_die_ + aff1; }

std::vector<Sgi1rWrite> Gicv3::target_lists(std::vector<int> cpus, int intid) const {
  // v5.17 gic_ipi_send_mask: for_each_cpu, gic_compute_target_list gathers
  // the following CPUs of the same cluster into one 16-bit list.
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::vector<Sgi1rWrite> out;
  for (int c : cpus) {
    const Affinity& a = affinity(c);
    if (out.empty() || out.back().aff3 != a.aff3 || out.back().aff2 != a.aff2 || out.back().aff1 != a.aff1)
      out.push_back(Sgi1rWrite{a.aff3, a.aff2, a.aff1, 0, intid});
    out.back().target_list = static_cast<std::uint16_t>(out.back().target_list | (1u << a.aff0));
  }
  return out;
}

std::size_t Gicv3::new_message(const Message& m) {
  if (free_slots_.empty()) {
    messages_.push_back(m);
    return messages_.size() - 1;
  }
  std::size_t slot = free_slots_.back();
  free_slots_.pop_back();
  messages_[slot] = m;
  return slot;
}

Task<void> Gicv3::write_sgi1r(cpu::Cpu& source, const Sgi1rWrite& w) {
  if (w.intid < 0 || w.intid >= kSgiCount) throw sim::SimError(fmt::format("SGI INTID {} out of 0..15", w.intid));
  ++stats_.sgi_writes;
  const Tick issued = sim_.now();
  co_await sim_.delay(p_.sgi_register_write);
  const std::size_t slot = new_message(Message{source.id(), -1, w, issued});
  const int ep = icn_.cpu_endpoint(source.id());
  const int routing_ep = routing_endpoint(icn_.endpoint(ep).die_global);
  const Tick at = gic_send(ep, routing_ep, sim_.now()) + p_.routing;
  sim_.schedule(at, &Gicv3::route_event, this, slot);
}

Task<void> Gicv3::send_ipi(cpu::Cpu& source, const std::vector<int>& targets, int intid) {
  // v5.17 drivers/irqchip/irq-gic-v3.c: "Ensure that stores to Normal memory
  // are visible to the other CPUs before issuing the IPI": wmb() (= dsb(st))
  // in the stock kernel, dsb(ishst) in the patched one. Then one
  // ICC_SGI1R_EL1 write per cluster (gic_compute_target_list), and isb().
  // A dmb orders later memory accesses only: the SGI1R write below does not
  // wait for it, so stores still buffered may become visible after the SGI
  // arrives (the variants dmb-ishst and none show that window).
  sim::TraceScope trace(sim_.tracer(), source.id(), "gic_ipi_send_mask", "kernel", sim_.now());
  switch (send_barrier_) {
    case GicSendBarrier::wmb: co_await source.dsb(cpu::Domain::sy, cpu::BarrierType::st); break;
    case GicSendBarrier::dsb_ishst: co_await source.dsb(cpu::Domain::ish, cpu::BarrierType::st); break;
    case GicSendBarrier::dmb_ishst: co_await source.dmb(cpu::Domain::ish, cpu::BarrierType::st); break;
    case GicSendBarrier::none: break;
  }
  for (const Sgi1rWrite& w : target_lists(targets, intid)) co_await write_sgi1r(source, w);
  co_await source.isb();
  trace.finish(sim_.now());
}

Tick Gicv3::gic_send(int from_ep, int to_ep, Tick at) {
  // The GIC's own time per socket link is a delay, not link occupancy: its
  // messages are few beside the coherence traffic the links carry.
  const int links = icn_.socket_crossings(icn_.endpoint(from_ep).socket, icn_.endpoint(to_ep).socket);
  return icn_.send(from_ep, to_ep, at) + links * p_.socket_crossing;
}

void Gicv3::route_event(void* ctx, std::uint64_t slot) { static_cast<Gicv3*>(ctx)->route(static_cast<std::size_t>(slot)); }
void Gicv3::deliver_event(void* ctx, std::uint64_t slot) { static_cast<Gicv3*>(ctx)->deliver(static_cast<std::size_t>(slot)); }

void Gicv3::route(std::size_t slot) {
  const Message m = messages_[slot];
  free_slots_.push_back(slot);
  const auto& group = group_cpus_.at(static_cast<std::size_t>(group_of(m.write.aff3, m.write.aff2, m.write.aff1)));
  const int from_ep = routing_endpoint(icn_.endpoint(icn_.cpu_endpoint(m.source)).die_global);
  for (int aff0 = 0; aff0 < 16; ++aff0) {
    if (!((m.write.target_list >> aff0) & 1u)) continue;
    const int target = group[static_cast<std::size_t>(aff0)];
    if (target < 0) continue;  // no CPU with that Aff0: the GIC ignores the bit
    const int target_ep = icn_.cpu_endpoint(target);
    const int to_ep = routing_endpoint(icn_.endpoint(target_ep).die_global);
    Tick at = sim_.now();
    if (to_ep != from_ep) at = gic_send(from_ep, to_ep, at) + p_.routing;
    at = gic_send(to_ep, target_ep, at) + p_.redistributor;
    Message one = m;
    one.target = target;
    sim_.schedule(at, &Gicv3::deliver_event, this, new_message(one));
  }
}

void Gicv3::deliver(std::size_t slot) {
  const Message m = messages_[slot];
  free_slots_.push_back(slot);
  CpuState& s = cpu_state_[static_cast<std::size_t>(m.target)];
  const auto bit = static_cast<std::uint16_t>(1u << m.write.intid);
  ++stats_.delivered;
  stats_.delivery_latency += sim_.now() - m.issued;
  if (auto* tr = sim_.tracer()) tr->flow(fmt::format("SGI {}", m.write.intid), m.source, m.issued, m.target, sim_.now());
  if (s.pending & bit) ++stats_.merged;  // already pending: one interrupt serves both
  s.pending = static_cast<std::uint16_t>(s.pending | bit);
  update_signal(m.target);
}

void Gicv3::update_signal(int cpu) {
  CpuState& s = cpu_state_[static_cast<std::size_t>(cpu)];
  // SGIs share one priority: while one runs (acknowledged, priority not yet
  // dropped) no other is signalled; an active SGI is not signalled again
  // until deactivated.
  if (s.asserted || s.priority_running || (s.pending & ~s.active) == 0) return;
  s.asserted = true;
  cpus_[static_cast<std::size_t>(cpu)]->raise_interrupt();
}

int Gicv3::acknowledge(int cpu) {
  CpuState& s = cpu_state_[static_cast<std::size_t>(cpu)];
  s.asserted = false;
  const unsigned ready = static_cast<unsigned>(s.pending & ~s.active);
  if (ready == 0 || s.priority_running) return kSpuriousIntid;
  const int intid = std::countr_zero(ready);  // equal priority: the lowest INTID first
  const auto bit = static_cast<std::uint16_t>(1u << intid);
  s.pending = static_cast<std::uint16_t>(s.pending & ~bit);
  s.active = static_cast<std::uint16_t>(s.active | bit);
  s.priority_running = true;
  return intid;
}

void Gicv3::set_sgi_handler(int intid, std::function<Task<void>(cpu::Cpu&)> handler) {
  if (intid < 0 || intid >= kSgiCount) throw sim::SimError(fmt::format("SGI INTID {} out of 0..15", intid));
  handlers_[static_cast<std::size_t>(intid)] = std::move(handler);
}

Task<void> Gicv3::take_irq(cpu::Cpu& c) {
  // Linux v5.17 drivers/irqchip/irq-gic-v3.c gic_handle_irq, host kernel
  // (EOImode 1, supports_deactivate_key): gic_read_iar = mrs ICC_IAR1_EL1
  // then dsb(sy); gic_write_eoir = msr ICC_EOIR1_EL1 + isb (priority drop)
  // before the handler; the irq_chip's eoi after it (gic_eoimode1_eoi_irq ->
  // gic_write_dir = msr ICC_DIR_EL1 + isb: deactivation).
  CpuState& s = cpu_state_[static_cast<std::size_t>(c.id())];
  sim::TraceScope entry(sim_.tracer(), c.id(), "gic_handle_irq: IAR, dsb sy, EOI, dispatch", "irq", sim_.now());
  co_await sim_.delay(p_.iar_read);
  const int intid = acknowledge(c.id());
  co_await c.dsb(cpu::Domain::sy);
  if (intid == kSpuriousIntid) {
    ++stats_.spurious;
    co_return;
  }
  ++stats_.acknowledged;
  co_await sim_.delay(p_.eoi_write);
  s.priority_running = false;
  update_signal(c.id());
  co_await c.isb();
  co_await sim_.delay(p_.dispatch);
  entry.finish(sim_.now());
  if (auto& h = handlers_[static_cast<std::size_t>(intid)]) co_await h(c);
  co_await sim_.delay(p_.dir_write);
  s.active = static_cast<std::uint16_t>(s.active & ~(1u << intid));
  ++stats_.deactivated;
  update_signal(c.id());
  co_await c.isb();
}

}  // namespace cohsim::irq
