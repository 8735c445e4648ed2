// CNA, the compact NUMA-aware slow path of the qspinlock (Alex Kogan, LKML
// "Add NUMA-awareness to qspinlock", modelled as of v11, September 2020, on
// v5.9; never merged). docs/reference/kernel-algorithms.md section 8.
//
// The fast path, the pending bit, the MCS queue and the unlock are the stock
// qspinlock's (qspinlock.cpp); a Qspinlock with a `cna` runs that code with
// the four hooks the series adds, in the places it adds them:
//   cna_init_node           (pv_init_node) the node's preferred NUMA node, or
//                           the priority mark when interrupts are off
//   cna_wait_head_or_lock   (pv_wait_head_or_lock) the new head scans the
//                           main queue for the first waiter on its node and
//                           moves the waiters it skipped to the secondary
//                           queue (cna_scan_main_queue), or marks a flush
//                           once the threshold is reached
//   cna_try_clear_tail      an empty main queue with a secondary one: the
//                           secondary queue becomes the queue
//   cna_lock_handoff        pass the MCS lock to the local waiter found
//                           (re-scanning the waiters that arrived meanwhile),
//                           carrying the secondary queue's tail in `locked`;
//                           with none found, or to flush, splice the
//                           secondary queue in front of the next waiter and
//                           pass to its head
// The CNA node is the 32-byte qnode (Qnodes::kWideNodeBytes):
//   next @0, locked @8 (0 wait; 1 lock passed, no secondary queue; > 1 the
//   encoded tail of the secondary queue), count @12, numa_node u16 @16 (the
//   preferred node, kCnaPriorityNode for a priority waiter), real_numa_node
//   u16 @18, encoded_tail u32 @20 (set at boot), v15's start_time u64 @24
//   (the time threshold's variant of this model) or v10/v11's intra_count u32
//   @28. The secondary queue is a ring through `next`: only its tail is known
//   (the holder's `locked`), and tail->next is its head. v10/v11 keep the scan
//   result (partial_order) in the node too; here it is the CPU's own state,
//   kept in the model (a hit on the CPU's own line, not charged).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/sim/random.hpp"
#include "models/kernel/qspinlock.hpp"

namespace cohsim::models::kernel {

/// numa_node of a waiter that must not be moved to the secondary queue (v15's CNA_PRIORITY_NODE).
inline constexpr std::uint32_t kCnaPriorityNode = 0xffff;

/// CNA's boot and module options (one set per machine, as in the kernel).
struct CnaParams {
  /// What ends the preference for the holder's node: v10-v13 count intra-node
  /// hand-offs (numa_spinlock_threshold=N, 2^N, default 16); v15 measures the
  /// time since the secondary queue was made (numa_spinlock_threshold_ns, 1 ms).
  enum class Threshold { count, time };
  Threshold threshold = Threshold::count;
  std::uint32_t handoff_threshold = 1u << 16;  ///< intra-node hand-offs before a flush (count)
  sim::Tick time_threshold = sim::kMs;         ///< age of the secondary queue before a flush (time)
  /// The series' shuffle reduction: with an empty secondary queue the head
  /// skips the scan with probability 127/128 (a per-CPU pseudo-random seed).
  bool shuffle_reduction = true;
};

/// Declares and reads CNA's options as workload parameters (cna_threshold,
/// cna_handoffs, cna_threshold_time, cna_shuffle_reduction); `used` false
/// (the stock lock) marks them as having no effect here.
CnaParams read_cna_params(config::Reader& p, bool used);

/// The CNA slow path's per-machine state: its options, the per-CPU seeds and counts of what it did.
class Cna {
 public:
  /// cna_init_nodes: writes every CPU's nodes' real_numa_node and encoded_tail
  /// (boot-time state, no simulated cost); the seeds are per-CPU lines on each CPU's node.
  Cna(CnaParams p, fabric::Fabric& fab, fabric::MemoryMap& mem, const Qnodes& qnodes, const topo::Topology& topo,
      std::uint64_t seed);

  /// CNA node field offsets within a 32-byte qnode.
  static constexpr Addr kNumaNode = 16, kRealNumaNode = 18, kEncodedTail = 20, kStartTime = 24, kIntraCount = 28;
  /// The scan's results (partial_order) that are not an encoded tail.
  static constexpr std::uint32_t kNoScan = 1, kLocalWaiterFound = 2, kFlush = 3;

  /// What the slow path did, counted since the start.
  struct Stats {
    std::uint64_t local_handoffs = 0;    ///< MCS hand-offs to a waiter found on the holder's node
    std::uint64_t moved = 0;             ///< waiters moved to the secondary queue
    std::uint64_t flushes = 0;           ///< secondary queues passed back (threshold, no local waiter, empty queue)
    std::uint64_t threshold_flushes = 0; ///< of which because the threshold was reached
    std::uint64_t scans = 0;             ///< scans of the main queue (cna_scan_main_queue)
    std::uint64_t skipped_scans = 0;     ///< scans the shuffle reduction skipped
  };
  const Stats& stats() const { return stats_; }
  const CnaParams& params() const { return p_; }
  /// The next queue head of the lock whose word is `lock_val` finds the threshold reached (as at the
  /// 2^16-th intra-node hand-off): a workload's way to go through several of CNA's preference epochs in a
  /// short run. The other locks this CNA serves are not touched.
  void expire_threshold(Addr lock_val) { expire_lock_ = lock_val; }

 private:
  friend Task<void> cna_init_node(cpu::Cpu& c, Cna& cna, Addr node);
  friend Task<void> cna_wait_head_or_lock(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node);
  friend Task<bool> cna_try_clear_tail(cpu::Cpu& c, Cna& cna, Qspinlock lock, std::uint32_t val, Addr node);
  friend Task<void> cna_lock_handoff(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node, Addr next);
  friend struct CnaSteps;

  CnaParams p_;
  const Qnodes& qnodes_;
  std::vector<Addr> seed_;                 ///< per-CPU `seed` of probably()
  std::vector<std::uint32_t> partial_order_;  ///< per CPU: the head's scan result
  std::vector<std::uint64_t> skipped_;        ///< per CPU: waiters its scans passed over (for stats_.moved)
  Stats stats_;
  Addr expire_lock_ = 0;  ///< the lock word whose next head flushes (0: none)
};

/// The per-CPU qnodes of a machine's spinlocks and, with numa_spinlock=on, the CNA state they share.
class KernelSpinlocks {
 public:
  /// 32-byte qnodes (a CNA kernel needs PARAVIRT_SPINLOCKS, whose qnode is 32 bytes; the stock
  /// lock gets the same so that only the slow path differs). CNA only on a machine of more
  /// than one NUMA node, as numa_spinlock=auto enables it.
  KernelSpinlocks(bool cna, const CnaParams& p, fabric::Fabric& fab, fabric::MemoryMap& mem, const topo::Topology& topo,
                  std::uint64_t seed);
  /// The struct qspinlock whose word is at `val`.
  Qspinlock lock(Addr val) { return Qspinlock{val, &qnodes_, cna_ ? &*cna_ : nullptr}; }
  /// The CNA state, nullptr for the stock slow path.
  const Cna* cna() const { return cna_ ? &*cna_ : nullptr; }
  Cna* cna() { return cna_ ? &*cna_ : nullptr; }

 private:
  Qnodes qnodes_;
  std::optional<Cna> cna_;
};

/// pv_init_node: numa_node = kCnaPriorityNode when interrupts are off, else real_numa_node; the count reset.
Task<void> cna_init_node(cpu::Cpu& c, Cna& cna, Addr node);
/// pv_wait_head_or_lock: the head sorts the main queue before it waits for the lock word.
Task<void> cna_wait_head_or_lock(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node);
/// try_clear_tail: with only this waiter in the main queue, take the lock; true when no hand-off is left to do.
Task<bool> cna_try_clear_tail(cpu::Cpu& c, Cna& cna, Qspinlock lock, std::uint32_t val, Addr node);
/// lock_handoff: pass the MCS lock (the holder has set the locked byte) to the next holder.
Task<void> cna_lock_handoff(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node, Addr next);

}  // namespace cohsim::models::kernel
