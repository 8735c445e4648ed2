// The kernel's queued spinlock, Linux v5.9 kernel/locking/qspinlock.c and
// include/asm-generic/qspinlock.h, without paravirt, for NR_CPUS < 16K
// (_Q_PENDING_BITS == 8). arm64 and x86 run the same generic code; x86 sets
// _Q_PENDING_LOOPS to 512 and claims the pending bit with LOCK BTS plus a
// read (arch/x86/include/asm/qspinlock.h).
//   struct qspinlock (u32 val): locked byte [7:0], pending byte [15:8],
//     tail [31:16] = idx [17:16] (the nesting level of the CPU's lock
//     context) | (cpu + 1) [31:18].
//   qnodes: per CPU, MAX_NODES (4) struct mcs_spinlock {next at +0, locked
//     at +8, count at +12}, 16 bytes each: one cacheline on the CPU's node.
// The lock itself is a word wherever its owner put it (a global on the node
// of whoever allocated it); the functions take it by address and read like
// the kernel: `co_await queued_spin_lock(cpu, lock)`. The slow path's
// prefetchw of the successor's node is left out.
// A lock with a `cna` runs the same slow path with the CNA hooks in the
// places the series puts them (models/kernel/cna.hpp): node init, the head's
// wait for the lock word, the clear of the tail and the MCS hand-off.
#pragma once

#include <cstdint>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/memory_map.hpp"
#include "cohsim/topo/topology.hpp"

namespace cohsim::models::kernel {

using fabric::Addr;
using sim::Task;

/// _Q_LOCKED_VAL: the locked byte set.
inline constexpr std::uint32_t kQLockedVal = 1;
/// _Q_PENDING_VAL: the pending bit (bit 8).
inline constexpr std::uint32_t kQPendingVal = 1u << 8;
/// _Q_LOCKED_PENDING_MASK: locked and pending bytes.
inline constexpr std::uint32_t kQLockedPendingMask = 0xffff;
/// _Q_TAIL_MASK: the tail (idx and CPU).
inline constexpr std::uint32_t kQTailMask = 0xffff0000u;
/// MAX_NODES: MCS nodes per CPU (task, softirq, hardirq, NMI).
inline constexpr int kQMaxNodes = 4;

/// encode_tail(cpu, idx): the tail code of a CPU's idx-th node.
constexpr std::uint32_t encode_tail(int cpu, int idx) {
  return (static_cast<std::uint32_t>(cpu + 1) << 18) | (static_cast<std::uint32_t>(idx) << 16);
}

/// The per-CPU MCS nodes (DEFINE_PER_CPU_ALIGNED(struct qnode, qnodes[MAX_NODES])).
/// The kernel has one set for all its spinlocks; here each model that takes
/// spinlocks holds one, the same thing while one such model runs on a machine.
class Qnodes {
 public:
  /// struct mcs_spinlock field offsets and size.
  static constexpr Addr kNext = 0, kLocked = 8, kCount = 12, kNodeBytes = 16;
  /// struct qnode with PARAVIRT_SPINLOCKS or CNA: 32 bytes (two lines of four nodes).
  static constexpr Addr kWideNodeBytes = 32;
  /// MAX_NODES nodes of `node_bytes` per CPU of `topo`, homed on that CPU's node.
  Qnodes(fabric::MemoryMap& mem, const topo::Topology& topo, Addr node_bytes = kNodeBytes);
  /// per_cpu_ptr(&qnodes[idx].mcs, cpu).
  Addr node(int cpu, int idx) const {
    return base_.at(static_cast<std::size_t>(cpu)) + static_cast<Addr>(idx) * node_bytes_;
  }
  /// The size of one node (16, or 32 with CNA).
  Addr node_bytes() const { return node_bytes_; }
  /// decode_tail(tail): the node a tail code names.
  Addr decode_tail(std::uint32_t tail) const {
    return node(static_cast<int>(tail >> 18) - 1, static_cast<int>((tail >> 16) & 3));
  }

 private:
  std::vector<Addr> base_;
  Addr node_bytes_;
};

class Cna;

/// A struct qspinlock: its 4-byte word and the per-CPU nodes its waiters queue on.
struct Qspinlock {
  Addr val;              ///< the lock word
  const Qnodes* qnodes;  ///< the machine's qnodes (not owned)
  Cna* cna = nullptr;    ///< the CNA slow path (numa_spinlock=on), or nullptr for the stock one (not owned)
};

/// queued_spin_lock: cmpxchg_acquire 0 -> locked, else queued_spin_lock_slowpath.
Task<void> queued_spin_lock(cpu::Cpu& c, Qspinlock lock);
/// queued_spin_trylock: a read, and if the word is 0 a cmpxchg_acquire 0 -> locked; true when taken.
Task<bool> queued_spin_trylock(cpu::Cpu& c, Qspinlock lock);
/// queued_spin_unlock: smp_store_release of the locked byte.
Task<void> queued_spin_unlock(cpu::Cpu& c, Qspinlock lock);

}  // namespace cohsim::models::kernel
