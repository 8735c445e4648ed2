// An Arm SMMUv3 as an agent on the coherence fabric: PROD and CONS MMIO
// registers, a command queue of 16-byte entries in normal memory that it
// reads coherently after each PROD write, in-order execution of
// CMD_TLBI_NH_VA and CMD_SYNC, and the CMD_SYNC MSI completion written back
// into the CMD_SYNC entry (a coherent write that wakes the waiting CPU).
// Register layout and command encodings follow the SMMUv3 architecture
// (ARM IHI 0070) as Linux v5.9 drivers/iommu/arm/arm-smmu-v3 uses them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/fabric.hpp"
#include "cohsim/sim/random.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::devices {

using fabric::Addr;
using sim::Task;
using sim::Tick;

/// The "smmu" section of a platform: placement and the device's own timing.
struct SmmuParams {
  int socket = 0;               ///< the socket whose I/O die holds the SMMU
  int node = 0;                 ///< NUMA node of its queues (the SMMU's node)
  Tick register_access = 0;     ///< a PROD/CONS register read or write at the device
  Tick command_fetch = 0;       ///< decoding one command after its line arrived
  Tick tlbi_time = 0;           ///< executing CMD_TLBI_NH_VA (the TLB walk-cache invalidation)
  Tick sync_time = 0;           ///< CMD_SYNC: draining earlier invalidations before the MSI write
  /// Each TLBI's and CMD_SYNC's time is drawn uniformly from its time x
  /// [1 - s, 1 + s] (random source smmu.service); 0: every one takes exactly its time.
  double service_spread = 0;
  bool msi_acknowledged = false;  ///< msi_write: the next command waits for the MSI write's completion (else posted)
  Tick map_cpu_work = 0;        ///< dma_map_single's CPU work outside the queue (IOVA, io-pgtable walk)
  Tick unmap_cpu_work = 0;      ///< dma_unmap_single's CPU work outside the queue
  /// Reads platform.smmu; throws ConfigError.
  explicit SmmuParams(config::Reader r);
  SmmuParams() = default;
};

/// MMIO registers of the command queue.
enum class SmmuReg : std::uint32_t { cmdq_prod = 0x98, cmdq_cons = 0x9c };

/// Command opcodes (SMMUv3 CMD_* encodings).
inline constexpr std::uint64_t kCmdTlbiNhVa = 0x12;
inline constexpr std::uint64_t kCmdSync = 0x46;
/// CMD_SYNC completion signal field: CS=IRQ (signal by MSI write), bits [13:12].
inline constexpr std::uint64_t kSyncCsIrq = 1ull << 12;
/// Bytes per command queue entry.
inline constexpr int kCmdBytes = 16;

/// Builds CMD_TLBI_NH_VA for `asid`, `va` (two 64-bit words).
inline std::pair<std::uint64_t, std::uint64_t> cmd_tlbi_nh_va(std::uint64_t asid, std::uint64_t va) {
  return {kCmdTlbiNhVa | (asid << 48), va & ~0xfffull};
}
/// Builds CMD_SYNC that signals completion by writing 0 (MSIData) to `msi_addr`.
inline std::pair<std::uint64_t, std::uint64_t> cmd_sync_msi(Addr msi_addr) {
  return {kCmdSync | kSyncCsIrq, msi_addr & 0x000ffffffffffffcull};
}

/// What the device did, counted at the device.
struct SmmuStats {
  std::uint64_t prod_writes = 0, cons_reads = 0;
  std::uint64_t commands = 0, tlbi = 0, syncs = 0, msi_writes = 0;
  std::uint64_t command_errors = 0;  ///< CERROR_ILL: malformed commands skipped
  std::uint64_t line_reads = 0;      ///< queue lines fetched through the fabric
  std::uint64_t stale_commands = 0;  ///< entries read with other content than the driver wrote there
  Tick busy = 0;                     ///< time spent executing commands
};

class Smmu {
 public:
  /// Places the device on the fabric (an endpoint on `p.socket`), allocates
  /// a command queue of `queue_entries` (a power of two) on `p.node`, and
  /// starts its command processor as a daemon process. `seed` seeds the
  /// random source of its service times (read only with a service_spread).
  Smmu(const SmmuParams& p, fabric::Fabric& fabric, int queue_entries, std::uint64_t seed = 1,
       const std::string& name = "smmu0");

  const SmmuParams& params() const { return p_; }
  /// The simulator the device runs in.
  sim::Simulator& simulator() { return sim_; }
  /// Base address of the command queue memory (entry i at base + 16 * i).
  Addr queue_base() const { return queue_base_; }
  int queue_entries() const { return entries_; }
  /// log2(queue_entries): the position of the wrap bit in PROD/CONS.
  int max_n_shift() const { return shift_; }
  int endpoint() const { return endpoint_; }
  /// The device name (in process names and logs).
  const std::string& name() const { return name_; }
  const SmmuStats& stats() const { return stats_; }
  /// Every command executed, in execution order (dword0, entry index), when recording.
  void record_commands(bool on) { recording_ = on; }
  struct Executed {
    std::uint64_t dword0, dword1;
    std::uint32_t index;
    Tick start = 0;  ///< when the command processor began it (its decoding)
  };
  const std::vector<Executed>& executed() const { return executed_; }

  /// The driver's stores into entry `index`, announced when it executes them:
  /// the next read of that entry is checked against them (entries never
  /// announced are not checked).
  void expect_command(std::uint32_t index, std::uint64_t dword0, std::uint64_t dword1);
  /// An entry read before the driver's stores to it were visible.
  struct StaleRead {
    std::uint32_t index;
    Tick at;
    std::uint64_t read0, read1, written0, written1;
    /// "stale command read by the SMMU at slot N at T ns: read ..., the driver wrote ...".
    std::string message() const;
  };
  /// Every stale read, in order.
  const std::vector<StaleRead>& stale_reads() const { return stale_reads_; }

  /// An MMIO write of a queue register, as the device sees it on arrival.
  void register_write(SmmuReg r, std::uint32_t value);
  /// An MMIO read of a queue register.
  std::uint32_t register_read(SmmuReg r);

 private:
  Task<void> command_processor();
  Task<void> execute(std::uint64_t dword0, std::uint64_t dword1, std::uint32_t index);
  /// `t` spread by service_spread (t itself without one).
  Tick service(Tick t);
  /// Compares a read entry with what the driver announced for it.
  void check_expected(std::uint32_t index, std::uint64_t dword0, std::uint64_t dword1);

  SmmuParams p_;
  fabric::Fabric& fab_;
  sim::Simulator& sim_;
  std::string name_;
  int endpoint_;
  int entries_;
  int shift_;
  Addr queue_base_;
  std::uint32_t prod_ = 0, cons_ = 0;  ///< register values: index | wrap bit
  sim::Signal prod_written_;
  SmmuStats stats_;
  sim::RandomStream service_rng_;
  bool recording_ = false;
  std::vector<Executed> executed_;
  /// Per entry: what the driver last wrote there and has not been read yet.
  struct Expected {
    bool pending = false;
    std::uint64_t dword0 = 0, dword1 = 0;
  };
  std::vector<Expected> expected_;
  std::vector<StaleRead> stale_reads_;
};

/// writel_relaxed to an SMMU register (Device-nGnRE, posted): the CPU goes
/// on after issuing it; the store travels to the device endpoint over the
/// interconnect, in order behind this CPU's earlier writes to the device, and
/// takes effect a register access time after it arrives. dsb sy/osh, a dmb
/// osh/sy before a later access and a later mmio_read wait for its arrival.
Task<void> mmio_write(cpu::Cpu& cpu, Smmu& smmu, SmmuReg r, std::uint32_t value);
/// readl_relaxed of an SMMU register: a round trip to the device plus its
/// register access time; it arrives after this CPU's earlier posted writes.
Task<std::uint32_t> mmio_read(cpu::Cpu& cpu, Smmu& smmu, SmmuReg r);

}  // namespace cohsim::devices
