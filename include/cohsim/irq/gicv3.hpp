// An Arm GICv3 interrupt controller as far as software-generated interrupts
// (SGIs, the IPIs of arm64 Linux) go:
//
//   source CPU interface: msr ICC_SGI1R_EL1 = {Aff3.Aff2.Aff1, 16-bit target
//     list of Aff0 values, INTID}; one write per cluster of targets
//   -> the routing point of the source die (distributor / multi-chip GIC
//     block; where it sits is platform data) over the interconnect
//   -> the routing point of each target's die (when it is another die)
//   -> the target's redistributor, by the target's CPU: pending state, then
//     the CPU interface asserts IRQ (Cpu::raise_interrupt)
//   target: taken at its next interruptible point (interrupts enabled, or a
//     WFI that the IRQ wakes), exception entry (cpu irq_entry), then the GIC
//     driver's handler: read ICC_IAR1_EL1 (pending -> active) and DSB SY,
//     ICC_EOIR1_EL1 + ISB (priority drop), the SGI's handler, ICC_DIR_EL1
//     (deactivate), exception return (cpu irq_exit).
// Every message crosses the interconnect with Interconnect::send, so the
// SGI's latency depends on distance and on other traffic on the same links.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/interconnect.hpp"
#include "cohsim/irq/ipi_controller.hpp"
#include "cohsim/sim/simulator.hpp"
#include "cohsim/topo/topology.hpp"

namespace cohsim::irq {

using sim::Task;
using sim::Tick;

/// The number of SGI INTIDs (0..15).
inline constexpr int kSgiCount = 16;
/// The INTID ICC_IAR1_EL1 returns when nothing is pending.
inline constexpr int kSpuriousIntid = 1023;

/// The "gic" section of a platform.
struct GicParams {
  std::string routing_placement;  ///< "die" | "socket" | "system": where the SGI routing point of a die sits
  Tick sgi_register_write = 0;    ///< msr ICC_SGI1R_EL1: CPU interface until the request leaves
  Tick routing = 0;               ///< routing point: affinity decode and target-list expansion, per write
  Tick redistributor = 0;         ///< redistributor: set pending, priority check, assert IRQ to the core
  Tick iar_read = 0;              ///< mrs ICC_IAR1_EL1 (acknowledge)
  Tick eoi_write = 0;             ///< msr ICC_EOIR1_EL1 (priority drop)
  Tick dir_write = 0;             ///< msr ICC_DIR_EL1 (deactivate)
  Tick dispatch = 0;              ///< kernel: handle_domain_irq .. the SGI's handler (irq domain look-up, irq_enter)
  Tick socket_crossing = 0;       ///< a GIC message's time per socket link beyond the interconnect's crossing
  /// Reads the section and checks it against the topology; throws ConfigError.
  GicParams(config::Reader r, const topo::Topology& t);
};

/// An MPIDR affinity. Aff3.Aff2.Aff1 names the cluster one ICC_SGI1R write
/// can address; Aff0 is the CPU's bit in its 16-bit target list.
struct Affinity {
  int aff3 = 0, aff2 = 0, aff1 = 0, aff0 = 0;
};

/// One write of ICC_SGI1R_EL1: a cluster, the CPUs in it, the INTID.
struct Sgi1rWrite {
  int aff3 = 0, aff2 = 0, aff1 = 0;
  std::uint16_t target_list = 0;
  int intid = 0;
};

/// Counters of the whole controller.
struct GicStats {
  std::uint64_t sgi_writes = 0;   ///< ICC_SGI1R_EL1 writes
  std::uint64_t delivered = 0;    ///< SGIs that reached a redistributor
  std::uint64_t merged = 0;       ///< arrived while already pending (one interrupt taken for both)
  std::uint64_t acknowledged = 0; ///< IAR reads that returned an SGI
  std::uint64_t spurious = 0;     ///< IAR reads that returned 1023
  std::uint64_t deactivated = 0;  ///< DIR writes
  Tick delivery_latency = 0;      ///< sum over delivered SGIs: register write to pending at the target
};

/// The barrier at the head of gic_ipi_send_mask (Linux v5.17 irq-gic-v3.c).
/// The ICC_SGI1R_EL1 write is a system-register write, not a memory access:
/// only a DSB orders it after earlier stores (Arm ARM: a DMB orders memory
/// accesses only; kernel commit "irqchip/gic-v3: Use wmb() instead of
/// smb_wmb() in gic_raise_softirq()").
enum class GicSendBarrier {
  wmb,        ///< stock v5.17: wmb() = dsb(st), full-system completion of earlier stores
  dsb_ishst,  ///< patched: dsb(ishst), inner-shareable completion only
  dmb_ishst,  ///< too weak: dmb(ishst) orders later memory accesses, not the SGI1R write
  none,       ///< no barrier: earlier stores may still be in the store buffer when the SGI leaves
};
/// "wmb" | "dsb-ishst" | "dmb-ishst" | "none"; throws std::invalid_argument otherwise.
GicSendBarrier parse_send_barrier(const std::string& name);
/// The names parse_send_barrier accepts, in declaration order.
inline const std::vector<std::string>& send_barrier_names() {
  static const std::vector<std::string> names = {"wmb", "dsb-ishst", "dmb-ishst", "none"};
  return names;
}

/// The GICv3: routing by affinity, per-CPU pending/active state of SGIs,
/// the CPU-interface side of taking one.
class Gicv3 : public IpiController {
 public:
  /// Becomes the interrupt handler of every CPU in `cpus` (indexed by CPU number).
  Gicv3(const GicParams& params, fabric::Interconnect& icn, std::vector<cpu::Cpu*> cpus);

  /// The platform's "gic" parameters.
  const GicParams& params() const { return p_; }
  /// Counters since construction.
  const GicStats& stats() const { return stats_; }
  /// The affinity of a CPU: Aff3 socket, Aff2 die, Aff1 cluster, Aff0 CPU in the cluster.
  Affinity affinity(int cpu) const { return affinity_.at(static_cast<std::size_t>(cpu)); }
  /// gic_compute_target_list: one write per cluster of `cpus`, in ascending CPU order.
  std::vector<Sgi1rWrite> target_lists(std::vector<int> cpus, int intid) const;
  /// The source CPU executes msr ICC_SGI1R_EL1; the SGI then travels on its own.
  Task<void> write_sgi1r(cpu::Cpu& source, const Sgi1rWrite& w);
  /// The handler of SGI `intid`, run between the priority drop and the deactivation.
  void set_sgi_handler(int intid, std::function<Task<void>(cpu::Cpu&)> handler);
  /// gic_ipi_send_mask (v5.17): the barrier, one ICC_SGI1R_EL1 write per cluster, isb.
  Task<void> send_ipi(cpu::Cpu& source, const std::vector<int>& targets, int intid) override;
  /// IpiController: the same as set_sgi_handler.
  void set_ipi_handler(int intid, IpiHandler handler) override { set_sgi_handler(intid, std::move(handler)); }
  /// Chooses the barrier of send_ipi (wmb unless told otherwise).
  void set_send_barrier(GicSendBarrier b) { send_barrier_ = b; }
  /// True while SGI `intid` is pending at `cpu`'s redistributor.
  bool pending(int cpu, int intid) const { return (state(cpu).pending >> intid) & 1u; }
  /// True while SGI `intid` is active at `cpu` (acknowledged, not yet deactivated).
  bool active(int cpu, int intid) const { return (state(cpu).active >> intid) & 1u; }
  /// Where the routing point of `die` sits (an interconnect endpoint).
  int routing_endpoint(int die) const { return routing_ep_.at(static_cast<std::size_t>(die)); }

 private:
  /// A GIC message sent at `at` from one endpoint to another: when it
  /// arrives (the interconnect, plus socket_crossing per socket link).
  Tick gic_send(int from_ep, int to_ep, Tick at);
  struct CpuState {
    std::uint16_t pending = 0;
    std::uint16_t active = 0;
    bool priority_running = false;  ///< acknowledged and not yet priority-dropped
    bool asserted = false;          ///< IRQ asserted to the core, not yet acknowledged
  };
  /// An SGI on its way: from the source to its routing point (target = -1), then to one target.
  struct Message {
    int source = 0;
    int target = -1;
    Sgi1rWrite write;
    Tick issued = 0;
  };
  const CpuState& state(int cpu) const { return cpu_state_[static_cast<std::size_t>(cpu)]; }
  std::size_t new_message(const Message& m);
  static void route_event(void* ctx, std::uint64_t slot);
  static void deliver_event(void* ctx, std::uint64_t slot);
  void route(std::size_t slot);
  void deliver(std::size_t slot);
  /// The CPU interface: asserts IRQ when a pending SGI is not active and no priority is running.
  void update_signal(int cpu);
  int acknowledge(int cpu);
  Task<void> take_irq(cpu::Cpu& c);
  int group_of(int aff3, int aff2, int aff1) const;

  GicParams p_;
  fabric::Interconnect& icn_;
  sim::Simulator& sim_;
  std::vector<cpu::Cpu*> cpus_;
  std::vector<Affinity> affinity_;
  std::vector<int> routing_ep_;                  ///< per die
  std::vector<std::array<int, 16>> group_cpus_;  ///< per cluster: Aff0 -> CPU (-1 when none)
  int dies_per_socket_ = 1, clusters_per_die_ = 1;
  std::vector<CpuState> cpu_state_;
  std::vector<Message> messages_;  ///< SGIs in flight, by slot
  std::vector<std::size_t> free_slots_;
  std::array<std::function<Task<void>(cpu::Cpu&)>, kSgiCount> handlers_;
  GicStats stats_;
  GicSendBarrier send_barrier_ = GicSendBarrier::wmb;
};

}  // namespace cohsim::irq
