// The x86 local APIC as far as IPIs go, and the Linux v5.17 apic driver's
// send path for one vector (arch/x86/kernel/apic):
//
//   x2APIC (x2apic_phys.c x2apic_send_IPI): weak_wrmsr_fence = mfence; lfence,
//     then one WRMSR to the ICR (MSR 0x830: destination APIC ID in bits
//     63..32, vector and delivery mode in the low half); no busy polling.
//     EOI: WRMSR 0x80B.
//   x2APIC cluster mode (v5.10 x2apic_cluster.c __x2apic_send_IPI_mask):
//     weak_wrmsr_fence, interrupts off, then one WRMSR per 16-CPU cluster of
//     the mask with the OR of the targets' logical IDs (cluster << 16 | 1 <<
//     (APIC ID & 15)) and the logical destination mode; the message reaches
//     every APIC of the cluster whose bit is set.
//   shorthand (v5.10 __x2apic_send_IPI_shorthand, __default_send_IPI_shorthand):
//     one ICR write with destination shorthand "all excluding self".
//   xAPIC (ipi.c __default_send_IPI_dest_field, interrupts off around it):
//     read the ICR (MMIO 0x300) until its delivery-status bit is clear, write
//     ICR2 (0x310, destination in bits 31..24), write the ICR (0x300) to
//     send. The register page is uncached (UC): an access waits for earlier
//     stores. EOI: MMIO write of 0 to 0xB0.
//   the message: Interconnect::send from the source CPU to the target CPU,
//     then the target APIC accepts it (IRR), and signals the core when the
//     vector's priority class beats the one in service (Cpu::raise_interrupt).
//   target: taken at its next interruptible point (Cpu irq_entry: IDT entry
//     to the handler's first instruction = "handler entry"), the kernel's
//     sysvec glue, ack_APIC_irq (EOI) first, the vector's handler, then the
//     Cpu's irq_exit.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
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

/// x2APIC MSRs (Intel SDM vol. 3 table 10-6): ICR and EOI.
inline constexpr std::uint32_t kMsrX2apicIcr = 0x830, kMsrX2apicEoi = 0x80B;
/// xAPIC register offsets in the APIC page: ICR low, ICR high (ICR2), EOI.
inline constexpr std::uint32_t kApicIcr = 0x300, kApicIcr2 = 0x310, kApicEoi = 0xB0;
/// ICR delivery status (send pending), bit 12.
inline constexpr std::uint32_t kIcrBusy = 1u << 12;
/// ICR destination mode logical (bit 11) and shorthand "all excluding self" (bits 19..18 = 11).
inline constexpr std::uint32_t kIcrDestLogical = 1u << 11, kIcrAllButSelf = 3u << 18;
/// CPUs per x2APIC logical cluster (the logical ID's 16-bit bitmap).
inline constexpr int kX2apicClusterSize = 16;
/// Vectors below 32 are exceptions; an IPI vector is 32..255.
inline constexpr int kFirstIpiVector = 32, kVectorCount = 256;
/// The largest destination an xAPIC ICR2 holds (8 bits).
inline constexpr std::uint32_t kXapicMaxApicId = 0xFF;

/// __prepare_ICR(0, vector, APIC_DEST_PHYSICAL): fixed delivery, physical destination, no shorthand.
inline std::uint32_t icr_low(int vector) { return static_cast<std::uint32_t>(vector) & 0xFFu; }
/// x2APIC ICR value (native_x2apic_icr_write): destination in bits 63..32.
inline std::uint64_t x2apic_icr(std::uint32_t dest, int vector) {
  return (static_cast<std::uint64_t>(dest) << 32) | icr_low(vector);
}
/// x2APIC logical ID of APIC ID `id` (x2apic_cluster.c: cluster in bits 31..16, one bit of 16 below).
inline std::uint32_t x2apic_logical_id(std::uint32_t id) {
  return ((id / kX2apicClusterSize) << 16) | (1u << (id % kX2apicClusterSize));
}
/// xAPIC ICR2 value (SET_XAPIC_DEST_FIELD): the 8-bit destination in bits 31..24 (ICR bits 63..56).
inline std::uint32_t xapic_icr2(std::uint32_t dest) { return (dest & kXapicMaxApicId) << 24; }

/// Which x2APIC driver the kernel runs: x2apic_phys (one ICR write per
/// target) or x2apic_cluster (one per cluster of the mask, logical mode).
enum class X2apicDestMode { physical, cluster };

/// The "apic" section of a platform.
struct ApicParams {
  std::string mode;        ///< "x2apic" | "xapic": what the firmware hands the kernel
  std::string x2apic_dest; ///< "cluster" | "physical": the kernel's x2APIC driver for multi-CPU sends
  Tick icr_wrmsr = 0;      ///< x2APIC: WRMSR 0x830 until the message leaves the core
  Tick eoi_wrmsr = 0;      ///< x2APIC: WRMSR 0x80B
  Tick mmio_read = 0;      ///< xAPIC: one UC read of an APIC register
  Tick mmio_write = 0;     ///< xAPIC: one UC write of an APIC register
  Tick icr_busy = 0;       ///< xAPIC: ICR delivery status stays busy this long after the ICR write
  Tick delivery = 0;       ///< target APIC: accept the message, set IRR, prioritise, signal the core
  Tick dispatch = 0;       ///< kernel: sysvec glue from the handler's entry to its body (irqentry_enter...)
  /// Reads the section and checks it against the topology; throws ConfigError.
  ApicParams(config::Reader r, const topo::Topology& t);
};

/// Counters of all local APICs.
struct ApicStats {
  std::uint64_t icr_writes = 0;   ///< ICR writes (one per target in physical mode; per cluster or shorthand else)
  std::uint64_t icr_reads = 0;    ///< xAPIC ICR reads while waiting for idle
  std::uint64_t busy_reads = 0;   ///< ICR reads that found the previous IPI still pending
  std::uint64_t delivered = 0;    ///< messages accepted by a target APIC
  std::uint64_t merged = 0;       ///< arrived while the vector was already requested
  std::uint64_t accepted = 0;     ///< interrupts the cores took (IRR -> ISR)
  std::uint64_t spurious = 0;     ///< interrupts taken with nothing deliverable
  std::uint64_t eois = 0;         ///< EOI writes
  Tick delivery_latency = 0;      ///< sum over delivered: ICR write to IRR at the target
};

/// The local APICs of a machine (one per CPU; APIC ID = CPU number).
class Apic : public IpiController {
 public:
  /// Becomes the interrupt handler of every CPU in `cpus` (indexed by CPU number).
  /// `x2apic` false runs the APICs in xAPIC mode (the kernel's nox2apic).
  Apic(const ApicParams& params, fabric::Interconnect& icn, std::vector<cpu::Cpu*> cpus, bool x2apic);

  /// The platform's "apic" parameters.
  const ApicParams& params() const { return p_; }
  /// Counters since construction.
  const ApicStats& stats() const { return stats_; }
  /// True in x2APIC mode, false in xAPIC mode.
  bool x2apic() const { return x2apic_; }
  /// per_cpu(x86_cpu_to_apicid, cpu).
  std::uint32_t apic_id(int cpu) const { return static_cast<std::uint32_t>(cpu); }

  /// The driver's send_IPI / send_IPI_mask for one vector (x2APIC or xAPIC path above).
  Task<void> send_ipi(cpu::Cpu& source, const std::vector<int>& targets, int vector) override;
  /// apic->send_IPI_allbutself: one ICR write with the all-excluding-self shorthand.
  Task<void> send_ipi_allbutself(cpu::Cpu& source, int vector, int cpu_count) override;
  /// The x2APIC driver's destination mode for masks (the platform's x2apic_dest unless set).
  void set_x2apic_dest_mode(X2apicDestMode m) { dest_mode_ = m; }
  X2apicDestMode x2apic_dest_mode() const { return dest_mode_; }
  /// The handler of `vector`, run after the EOI (sysvec handlers ack first).
  void set_ipi_handler(int vector, IpiHandler handler) override;

  /// x2APIC WRMSR by `c` (the ICR sends an IPI; EOI ends the one in service). No fence.
  Task<void> wrmsr(cpu::Cpu& c, std::uint32_t msr, std::uint64_t value);
  /// xAPIC UC read of register `reg` of `c`'s APIC (the ICR shows the busy bit).
  Task<std::uint32_t> mmio_read(cpu::Cpu& c, std::uint32_t reg);
  /// xAPIC UC write of register `reg` (ICR2 holds the destination, ICR sends, EOI ends).
  Task<void> mmio_write(cpu::Cpu& c, std::uint32_t reg, std::uint32_t value);
  /// ack_APIC_irq on `c` in the current mode.
  Task<void> eoi(cpu::Cpu& c);

  /// True while `vector` is requested (IRR) at `cpu`.
  bool requested(int cpu, int vector) const { return state(cpu).irr.test(static_cast<std::size_t>(vector)); }
  /// True while `vector` is in service (ISR) at `cpu`.
  bool in_service(int cpu, int vector) const { return state(cpu).isr.test(static_cast<std::size_t>(vector)); }
  /// True while `cpu`'s ICR shows a send pending (xAPIC delivery status).
  bool icr_busy(int cpu) const;
  /// When the handler of the interrupt `cpu` took last was entered (after Cpu irq_entry).
  Tick handler_entered(int cpu) const { return state(cpu).entered; }

 private:
  struct CpuState {
    std::bitset<kVectorCount> irr, isr;
    bool asserted = false;  ///< INTR signalled to the core, not yet taken
    std::uint32_t icr2 = 0;
    Tick icr_busy_until = 0;
    Tick entered = 0;
  };
  struct Message {
    int target = 0;
    int vector = 0;
    Tick issued = 0;
  };
  const CpuState& state(int cpu) const { return cpu_state_[static_cast<std::size_t>(cpu)]; }
  CpuState& state(int cpu) { return cpu_state_[static_cast<std::size_t>(cpu)]; }
  /// An ICR write with low half `low` and destination `dest`: one message per
  /// APIC it names (physical, logical or shorthand), leaving `source` at `leave`.
  void icr_write(int source, std::uint32_t dest, std::uint32_t low, Tick leave);
  /// One interrupt message from `source` to CPU `target`, leaving at `leave`.
  void send_message(int source, int target, int vector, Tick leave);
  static void deliver_event(void* ctx, std::uint64_t slot);
  void deliver(std::size_t slot);
  /// Signals INTR when the highest requested priority class beats the one in service.
  void update_signal(int cpu);
  Task<void> take_irq(cpu::Cpu& c);
  Task<void> x2apic_send_ipi(cpu::Cpu& c, const std::vector<int>& targets, int vector);
  Task<void> xapic_send_ipi(cpu::Cpu& c, const std::vector<int>& targets, int vector);

  ApicParams p_;
  fabric::Interconnect& icn_;
  sim::Simulator& sim_;
  std::vector<cpu::Cpu*> cpus_;
  bool x2apic_;
  X2apicDestMode dest_mode_;
  std::vector<CpuState> cpu_state_;
  std::vector<Message> messages_;
  std::vector<std::size_t> free_slots_;
  std::array<IpiHandler, kVectorCount> handlers_;
  ApicStats stats_;
};

}  // namespace cohsim::irq
