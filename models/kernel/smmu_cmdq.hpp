// The SMMUv3 driver's command queue insertion, arm_smmu_cmdq_issue_cmdlist
// (Linux v5.9 drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c), in three
// variants of its space-allocation step:
//   cmpxchg            v5.9 as merged: a cmpxchg_relaxed loop on the
//                      {prod, cons} word, owner election by the OWNED flag;
//   spinlock-fallback  proposed in review: after one failed cmpxchg a CPU
//                      retries under a spinlock (queued spinlock, v5.9
//                      kernel/locking/qspinlock.c), new arrivals do not lock;
//   fetch-add          proposed replacement: one fetch_add claims space on a
//                      {sync_count, count, prod} word, cons on its own line.
// Everything the kernel shares lives in simulated memory on the SMMU's node
// and is reached through the CPU's loads, stores and atomics.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/devices/smmu.hpp"
#include "cohsim/fabric/memory_map.hpp"
#include "cohsim/topo/topology.hpp"
#include "models/kernel/qspinlock.hpp"

namespace cohsim::models {

using fabric::Addr;
using sim::Task;
using sim::Tick;

/// Which space-allocation scheme the driver uses.
enum class CmdqVariant { cmpxchg, spinlock_fallback, fetch_add };
/// "cmpxchg" | "spinlock-fallback" | "fetch-add".
CmdqVariant parse_cmdq_variant(const std::string& name);

/// The barrier of step 3, between writing the commands and marking them
/// valid (which lets the owner write PROD): dma_wmb() = dmb(oshst) in v5.9,
/// or none. The commands are normal memory the SMMU reads I/O-coherently
/// after PROD, an MMIO write: without the barrier nothing orders the
/// command stores before the valid-map update, nor (for the owner's own
/// entries) before the PROD write.
enum class CmdqPublishBarrier { dma_wmb, none };
/// "dma-wmb" | "none".
CmdqPublishBarrier parse_publish_barrier(const std::string& name);

/// Where spinlock-fallback's spinlock sits. The review's diff adds a
/// `spinlock_t slock` member to struct arm_smmu_cmdq; appended after
/// `atomic_t lock` it shares the line of owner_prod and lock (with_owner_prod).
/// `own_line` is the alternative: a ____cacheline_aligned member.
enum class CmdqSpinlockLine { with_owner_prod, own_line };
/// "owner-prod" | "own".
CmdqSpinlockLine parse_spinlock_line(const std::string& name);

/// How a spinlock-fallback claim starts. cmpxchg_first (the measured patch:
/// its author noted that a CPU arriving while another holds the spinlock
/// still tries the cmpxchg at once): the lock only after a failed cmpxchg.
/// lock_first (a what-if, that open problem fixed): a CPU that finds the
/// spinlock word non-zero (held, pending or queued) queues on it first.
/// always_lock (an experiment): every claim takes the spinlock first, which
/// prices the lock path alone.
enum class CmdqFallbackEntry { cmpxchg_first, lock_first, always_lock };
/// "cmpxchg-first" | "lock-first" | "always-lock".
CmdqFallbackEntry parse_fallback_entry(const std::string& name);

/// ARM_SMMU_POLL_TIMEOUT_US (v5.9 arm-smmu-v3.h): a CMD_SYNC wait gives up after 1 s.
inline constexpr Tick kCmdSyncTimeoutDefault = 1000 * sim::kMs;

/// A CMD_SYNC whose completion never came: "CMD_SYNC timeout at 0x%08x" (v5.9).
struct CmdSyncTimeout {
  int cpu = 0;
  std::uint32_t prod = 0;  ///< the CMD_SYNC's queue position
  Tick since = 0, at = 0;
  /// "CMD_SYNC timeout at 0x... on cpu N (waiting since T ns)".
  std::string message() const;
};

/// Where an issuing CPU spends its time.
enum class CmdqPhase { claim, write, owner, sync, backoff };
inline constexpr int kCmdqPhases = 5;
/// Report names of the phases: claim space, write entries and valid bits,
/// owner work (waiting for the previous owner, gathering, PROD), waiting for
/// the CMD_SYNC, udelay backoff inside queue_poll.
inline constexpr std::array<const char*, kCmdqPhases> kCmdqPhaseNames = {"claim", "write", "owner", "sync", "backoff"};
/// The same phases as timeline slices.
inline constexpr std::array<const char*, kCmdqPhases> kCmdqTraceNames = {
    "cmdq claim", "cmdq write entries", "cmdq owner: publish PROD", "cmdq wait for CMD_SYNC", "cmdq udelay backoff"};

/// Counters per issuing CPU.
struct CmdqCpuStats {
  std::array<Tick, kCmdqPhases> phase{};
  std::uint64_t calls = 0;
  std::uint64_t claim_attempts = 0;   ///< cmpxchg (or fetch_add) attempts on the claim word
  std::uint64_t claim_successes = 0;
  std::uint64_t owner_batches = 0;    ///< calls that found themselves owner
  std::uint64_t sync_spins = 0;       ///< queue_poll calls in the CMD_SYNC wait (condition false)
  std::uint64_t sync_wakeups = 0;     ///< WFE wake-ups in the CMD_SYNC wait
  std::uint64_t udelays = 0;
  std::uint64_t queue_full_waits = 0;
  std::uint64_t slock_taken = 0;      ///< spinlock-fallback: times the spinlock was taken
};

/// One gathered batch as its owner published it (recorded on request).
struct CmdqBatch {
  int owner_cpu;
  std::uint32_t start, end;  ///< queue positions (index | wrap bit, or free-running for fetch-add)
};

/// A 16-byte command.
using CmdqCommand = std::array<std::uint64_t, 2>;

/// struct arm_smmu_cmdq and the driver code that inserts into it.
class SmmuCmdq {
 public:
  /// Allocates the queue's shared state on the SMMU's node (per-CPU spinlock
  /// queue nodes on each CPU's node) for a machine of `topo.cpu_count()` CPUs.
  SmmuCmdq(CmdqVariant v, devices::Smmu& smmu, fabric::MemoryMap& mem, const topo::Topology& topo,
           CmdqSpinlockLine slock_line = CmdqSpinlockLine::with_owner_prod);

  /// arm_smmu_cmdq_issue_cmdlist(smmu, cmds, n, sync): inserts the n
  /// commands (plus a CMD_SYNC when `sync`) and, with sync, waits for it.
  Task<void> issue_cmdlist(cpu::Cpu& cpu, const CmdqCommand* cmds, int n, bool sync);

  CmdqVariant variant() const { return variant_; }
  /// Chooses the barrier of step 3 (dma_wmb unless told otherwise).
  void set_publish_barrier(CmdqPublishBarrier b) { publish_barrier_ = b; }
  /// How spinlock-fallback's claims start (cmpxchg_first unless told otherwise).
  void set_fallback_entry(CmdqFallbackEntry e) { fallback_entry_ = e; }
  /// How long a CMD_SYNC wait lasts before it gives up (kCmdSyncTimeoutDefault
  /// unless told otherwise). The WFE in the wait ends at the deadline as the
  /// kernel's event stream would end it; the SmmuCmdq must outlive the run.
  void set_sync_timeout(Tick t) { sync_timeout_ = t; }
  /// The CMD_SYNC waits that timed out, in order.
  const std::vector<CmdSyncTimeout>& sync_timeouts() const { return sync_timeouts_; }
  /// The most entries (commands + CMD_SYNC) one call may insert.
  int max_entries_per_call() const;
  const CmdqCpuStats& stats(int cpu) const { return stats_.at(static_cast<std::size_t>(cpu)); }
  /// Turns on recording of every owner's batch.
  void record_batches(bool on) { recording_ = on; }
  const std::vector<CmdqBatch>& batches() const { return batches_; }
  /// Addresses of the shared objects, for reports and tests.
  Addr claim_word() const { return llq_; }
  Addr owner_prod() const { return owner_prod_; }
  Addr lock() const { return lock_; }
  Addr valid_map() const { return valid_map_; }
  Addr cons_word() const { return cons_; }
  Addr spinlock() const { return slock_; }

 private:
  /// struct arm_smmu_queue_poll (qp.wfe is always false here: no SEV).
  struct Poll {
    int spin_cnt = 0;
    std::uint64_t delay = 1;  ///< the next udelay argument, us
  };
  struct Claim {
    std::uint32_t prod;  ///< first entry (position)
    bool owner;
  };
  Task<Claim> claim_cmpxchg(cpu::Cpu& c, int n, bool sync, bool fallback);
  Task<Claim> claim_fetch_add(cpu::Cpu& c, int n, bool sync);
  Task<void> poll_until_not_full(cpu::Cpu& c, std::uint64_t& llq, CmdqCpuStats& s);
  Task<void> fetch_add_wait_for_space(cpu::Cpu& c, std::uint32_t end, CmdqCpuStats& s);
  Task<void> owner_publish(cpu::Cpu& c, std::uint32_t start, CmdqCpuStats& s);
  Task<void> poll_set_valid_map(cpu::Cpu& c, std::uint32_t sprod, std::uint32_t eprod, bool set);
  Task<void> wait_for_sync(cpu::Cpu& c, std::uint32_t sync_prod, CmdqCpuStats& s);
  /// The CMD_SYNC wait deadline of CPU `cpu` (a Simulator event).
  static void sync_deadline_event(void* ctx, std::uint64_t cpu);
  Task<void> queue_poll(cpu::Cpu& c, Poll& qp, CmdqCpuStats& s);
  Task<void> shared_lock(cpu::Cpu& c, std::int32_t count);
  Task<void> shared_unlock_after_sync(cpu::Cpu& c, std::uint32_t cons_after);
  Task<bool> exclusive_trylock(cpu::Cpu& c);
  Task<void> exclusive_unlock(cpu::Cpu& c);

  // Queue position arithmetic (struct arm_smmu_ll_queue helpers).
  std::uint32_t q_idx(std::uint32_t p) const { return p & ((1u << shift_) - 1); }
  std::uint32_t q_wrp(std::uint32_t p) const { return p & (1u << shift_); }
  std::uint32_t inc_prod_n(std::uint32_t prod, std::uint32_t n) const;
  bool has_space(std::uint64_t llq, std::uint32_t n) const;
  bool full(std::uint64_t llq) const;
  /// Converts a free-running position (fetch-add) to index | wrap bit.
  std::uint32_t wrapped(std::uint32_t p) const { return p & ((2u << shift_) - 1); }
  Addr entry_addr(std::uint32_t p) const {
    return smmu_.queue_base() + static_cast<Addr>(q_idx(p)) * devices::kCmdBytes;
  }
  /// Adds a phase's time to the CPU's statistics and, when tracing, a slice.
  void account(cpu::Cpu& c, CmdqCpuStats& s, CmdqPhase p, Tick since, Tick now) {
    s.phase[static_cast<std::size_t>(p)] += now - since;
    if (auto* tr = c.sim().tracer()) tr->slice(c.id(), kCmdqTraceNames[static_cast<std::size_t>(p)], "smmu", since, now);
  }

  CmdqVariant variant_;
  devices::Smmu& smmu_;
  int shift_;
  int cpu_count_;
  Addr llq_;         ///< L: {u32 prod, u32 cons} (fetch-add: {u32 prod, u16 count, u16 sync_count})
  Addr valid_map_ptr_;  ///< the `valid_map` pointer field, first on the line of owner_prod and lock
  Addr owner_prod_;  ///< OP (atomic_t), sharing its line with the lock
  Addr lock_;        ///< LK (atomic_t): > 0 shared holders, INT_MIN exclusive
  Addr valid_map_;   ///< VM: one bit per entry, polarity flips on every wrap
  Addr cons_ = 0;    ///< fetch-add: the driver's copy of cons on its own line
  Addr slock_ = 0;   ///< spinlock-fallback: the queued spinlock word (after lock, or its own line)
  std::optional<kernel::Qnodes> qnodes_;  ///< spinlock-fallback: the per-CPU qspinlock nodes
  std::vector<CmdqCpuStats> stats_;
  bool recording_ = false;
  std::vector<CmdqBatch> batches_;
  CmdqPublishBarrier publish_barrier_ = CmdqPublishBarrier::dma_wmb;
  CmdqFallbackEntry fallback_entry_ = CmdqFallbackEntry::cmpxchg_first;
  /// One CPU's CMD_SYNC wait, for its deadline.
  struct SyncWait {
    bool waiting = false;
    bool check_scheduled = false;  ///< a deadline event for this CPU is in the queue
    cpu::Cpu* asleep = nullptr;  ///< the CPU while in its WFE loop (its deadline ends the WFE wait only)
    Tick deadline = 0;
  };
  Tick sync_timeout_ = kCmdSyncTimeoutDefault;
  std::vector<SyncWait> sync_waits_;
  std::vector<CmdSyncTimeout> sync_timeouts_;
};

}  // namespace cohsim::models
