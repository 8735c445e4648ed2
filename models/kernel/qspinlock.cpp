// queued_spin_lock and its slow path, Linux v5.9 kernel/locking/qspinlock.c
// (see qspinlock.hpp for the word and node layout).
#include "models/kernel/qspinlock.hpp"

#include "models/kernel/cna.hpp"

#include <fmt/format.h>

namespace cohsim::models::kernel {

using cpu::BarrierType;
using cpu::Domain;
using cpu::Order;
using fabric::RmwOp;

Qnodes::Qnodes(fabric::MemoryMap& mem, const topo::Topology& topo, Addr node_bytes) : node_bytes_(node_bytes) {
  for (int c = 0; c < topo.cpu_count(); ++c)
    base_.push_back(mem.alloc(topo.node_of_cpu(c), kQMaxNodes * node_bytes, 64, fmt::format("qnodes[cpu{}]", c)));
}

namespace {

// Byte offsets of the fields of struct qspinlock (little endian).
constexpr Addr kPendingByte = 1, kTailHalf = 2;
constexpr std::uint32_t kLockedMask = 0xff;     // _Q_LOCKED_MASK: the locked byte
constexpr std::uint32_t kPendingMask = 0xff00;  // _Q_PENDING_MASK: the pending byte

// _Q_PENDING_LOOPS: how often the pending->locked hand-over is re-read.
int pending_loops(const cpu::Cpu& c) { return c.is_arm() ? 1 : 1 << 9; }

// queued_fetch_set_pending_acquire: atomic_fetch_or_acquire of the pending
// bit; x86: LOCK BTS, then the rest of the word read (the old pending bit
// from the BTS, the other bits as they are now).
Task<std::uint32_t> queued_fetch_set_pending_acquire(cpu::Cpu& c, Addr val) {
  if (c.is_arm()) {
    const std::uint64_t old = co_await c.rmw(val, 4, RmwOp::bit_or, kQPendingVal, 0, Order::acquire);
    co_return static_cast<std::uint32_t>(old);
  }
  const auto old = static_cast<std::uint32_t>(co_await c.rmw(val, 4, RmwOp::bit_or, kQPendingVal, 0, Order::full));
  const auto now = static_cast<std::uint32_t>(co_await c.load(val, 4));
  co_return (old & kQPendingVal) | (now & ~kPendingMask);
}

// smp_wmb: dmb ishst on arm64, a compiler barrier on x86.
Task<void> smp_wmb(cpu::Cpu& c) {
  if (c.is_arm()) co_await c.dmb(Domain::ish, BarrierType::st);
}

// The MCS queue: this CPU's next node, the tail published with xchg_tail,
// the wait to become head, then for the lock word, and the hand-off.
Task<void> queue(cpu::Cpu& c, Qspinlock lock) {
  const Qnodes& q = *lock.qnodes;
  const Addr count = q.node(c.id(), 0) + Qnodes::kCount;
  // node = this_cpu_ptr(&qnodes[0].mcs); idx = node->count++;
  const auto idx = static_cast<int>(co_await c.load(count, 4));
  co_await c.store(count, 4, static_cast<std::uint64_t>(idx + 1));
  if (idx >= kQMaxNodes) {
    // More nested contexts than nodes: spin on trylock without a node.
    for (;;) {
      const bool taken = co_await queued_spin_trylock(c, lock);
      if (taken) break;
      co_await c.spin_until(lock.val, 4, [](std::uint64_t v) { return v == 0; }, Order::relaxed,
                            "qspinlock (no MCS node left)");
    }
  } else {
    const std::uint32_t tail = encode_tail(c.id(), idx);
    const Addr node = q.node(c.id(), idx);
    co_await c.store(node + Qnodes::kLocked, 4, 0);
    co_await c.store(node + Qnodes::kNext, 8, 0);
    if (lock.cna) co_await cna_init_node(c, *lock.cna, node);  // pv_init_node
    // The node's line may have been cold: one more trylock before queueing.
    const bool taken = co_await queued_spin_trylock(c, lock);
    if (!taken) {
      co_await smp_wmb(c);  // the node is initialised before it is published
      // xchg_tail: publish this node as the queue's tail (xchg_relaxed of the tail halfword).
      const auto old = static_cast<std::uint32_t>(
                           co_await c.rmw(lock.val + kTailHalf, 2, RmwOp::swap, tail >> 16, 0, Order::relaxed))
                       << 16;
      Addr next = 0;
      if (old & kQTailMask) {
        co_await c.store(q.decode_tail(old) + Qnodes::kNext, 8, node);  // WRITE_ONCE(prev->next, node)
        // arch_mcs_spin_lock_contended: smp_cond_load_acquire(&node->locked, VAL).
        co_await c.spin_until(node + Qnodes::kLocked, 4, [](std::uint64_t v) { return v != 0; }, Order::acquire,
                              "qspinlock: MCS node (waiting to be head)");
        next = co_await c.load(node + Qnodes::kNext, 8);  // READ_ONCE(node->next)
      }
      // Head of the queue. CNA sorts the queue first (pv_wait_head_or_lock).
      if (lock.cna) co_await cna_wait_head_or_lock(c, *lock.cna, lock, node);
      // Wait for the owner and the pending waiter to go
      // (atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK))).
      const auto val = static_cast<std::uint32_t>(co_await c.spin_until(
          lock.val, 4, [](std::uint64_t v) { return (v & kQLockedPendingMask) == 0; }, Order::acquire,
          "qspinlock: head waits for owner and pending"));
      // Alone in the queue: take the lock and clear the tail at once (n,0,0 -> 0,0,1).
      bool alone = false;
      if ((val & kQTailMask) == tail) {
        if (lock.cna) {
          alone = co_await cna_try_clear_tail(c, *lock.cna, lock, val, node);  // try_clear_tail
        } else {
          const auto seen =
              static_cast<std::uint32_t>(co_await c.cmpxchg(lock.val, 4, val, kQLockedVal, Order::relaxed));
          alone = seen == val;
        }
      }
      if (!alone) {
        co_await c.store(lock.val, 1, kQLockedVal, Order::relaxed);  // set_locked
        // Wait for the successor to link itself (smp_cond_load_relaxed(&node->next, VAL)).
        if (next == 0)
          next = co_await c.spin_until(node + Qnodes::kNext, 8, [](std::uint64_t v) { return v != 0; }, Order::relaxed,
                                       "qspinlock: successor link");
        // lock_handoff: stock arch_mcs_spin_unlock_contended, smp_store_release(&next->locked, 1).
        if (lock.cna) co_await cna_lock_handoff(c, *lock.cna, lock, node, next);
        else co_await c.store(next + Qnodes::kLocked, 4, 1, Order::release);
      }
    }
  }
  // release: __this_cpu_dec(qnodes[0].mcs.count).
  const std::uint64_t nested = co_await c.load(count, 4);
  co_await c.store(count, 4, nested - 1);
}

// queued_spin_lock_slowpath(lock, val) without paravirt.
Task<void> queued_spin_lock_slowpath(cpu::Cpu& c, Qspinlock lock, std::uint32_t val) {
  // A pending->locked hand-over in progress (0,1,0 -> 0,0,1): re-read a bounded number of times.
  if (val == kQPendingVal) {
    val = static_cast<std::uint32_t>(co_await c.spin_until(
        lock.val, 4, [cnt = pending_loops(c)](std::uint64_t v) mutable { return v != kQPendingVal || !cnt--; },
        Order::relaxed, "qspinlock: pending hand-over"));
  }
  // Any contention (pending or tail): queue.
  if ((val & ~kLockedMask) == 0) {
    // trylock || pending: 0,0,* -> 0,1,*
    val = co_await queued_fetch_set_pending_acquire(c, lock.val);
    if ((val & ~kLockedMask) == 0) {
      // We are pending: wait for the owner to go (0,1,1 -> 0,1,0), then take
      // the lock and clear pending in one halfword store (clear_pending_set_locked).
      if (val & kLockedMask)
        co_await c.spin_until(lock.val, 4, [](std::uint64_t v) { return (v & kLockedMask) == 0; }, Order::acquire,
                              "qspinlock: pending waits for owner");
      co_await c.store(lock.val, 2, kQLockedVal, Order::relaxed);
      co_return;
    }
    // A concurrent locker: undo the pending bit if we set it (clear_pending), and queue.
    if (!(val & kPendingMask)) co_await c.store(lock.val + kPendingByte, 1, 0, Order::relaxed);
  }
  co_await queue(c, lock);
}

}  // namespace

Task<void> queued_spin_lock(cpu::Cpu& c, Qspinlock lock) {
  const auto val = static_cast<std::uint32_t>(co_await c.cmpxchg(lock.val, 4, 0, kQLockedVal, Order::acquire));
  if (val == 0) co_return;
  co_await queued_spin_lock_slowpath(c, lock, val);
}

Task<bool> queued_spin_trylock(cpu::Cpu& c, Qspinlock lock) {
  const std::uint64_t val = co_await c.load(lock.val, 4);
  if (val != 0) co_return false;
  const std::uint64_t old = co_await c.cmpxchg(lock.val, 4, 0, kQLockedVal, Order::acquire);
  co_return old == 0;
}

Task<void> queued_spin_unlock(cpu::Cpu& c, Qspinlock lock) {
  co_await c.store(lock.val, 1, 0, Order::release);
}

}  // namespace cohsim::models::kernel
