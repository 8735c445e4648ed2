// Step 1 of arm_smmu_cmdq_issue_cmdlist, "allocate some space in the
// queue", in the three variants (see smmu_cmdq.hpp). The spinlock-fallback
// variant takes the kernel's qspinlock (models/kernel/qspinlock.hpp).
#include "models/kernel/qspinlock.hpp"
#include "models/kernel/smmu_cmdq.hpp"

namespace cohsim::models {

using cpu::Order;
using fabric::RmwOp;

namespace {
constexpr std::uint32_t kOwned = 0x80000000u;  // CMDQ_PROD_OWNED_FLAG
constexpr std::uint64_t kCountOne = 1ull << 32;
constexpr std::uint64_t kSyncOne = 1ull << 48;
}  // namespace

// v5.9: llq.val = READ_ONCE(cmdq->q.llq.val), then cmpxchg_relaxed until it
// succeeds, waiting for space when there is none; a failed cmpxchg returns
// the current value, which becomes the next expectation (no re-read).
// spinlock-fallback: re-read each round; after the first failure take the
// spinlock and keep it until success or until waiting for space. With
// lock_first a CPU that finds the spinlock word non-zero queues on it before
// it reads the claim word; with always_lock every claim takes it first.
Task<SmmuCmdq::Claim> SmmuCmdq::claim_cmpxchg(cpu::Cpu& c, int n, bool sync, bool fallback) {
  CmdqCpuStats& s = stats_.at(static_cast<std::size_t>(c.id()));
  const auto need = static_cast<std::uint32_t>(n + (sync ? 1 : 0));
  bool locked = false;
  const kernel::Qspinlock slock{slock_, fallback ? &*qnodes_ : nullptr};
  if (fallback && fallback_entry_ != CmdqFallbackEntry::cmpxchg_first &&
      (fallback_entry_ == CmdqFallbackEntry::always_lock ||
       co_await c.load(slock_, 4, Order::relaxed) != 0)) {  // spin_is_locked(&cmdq->slock)
    co_await kernel::queued_spin_lock(c, slock);
    locked = true;
    ++s.slock_taken;
  }
  std::uint64_t llq = co_await c.load(llq_, 8, Order::relaxed);
  for (;;) {
    while (!has_space(llq, need)) {
      if (locked) {
        co_await kernel::queued_spin_unlock(c, slock);
        locked = false;
      }
      co_await c.local_irq_enable();
      co_await poll_until_not_full(c, llq, s);
      c.local_irq_disable();
    }
    const auto prod = static_cast<std::uint32_t>(llq);
    const std::uint64_t head = (llq & 0xffffffff00000000ull) | (inc_prod_n(prod, need) | kOwned);
    ++s.claim_attempts;
    const std::uint64_t old = co_await c.cmpxchg(llq_, 8, llq, head, Order::relaxed);
    if (old == llq) break;
    if (!fallback) {
      llq = old;
      continue;
    }
    if (!locked) {
      co_await kernel::queued_spin_lock(c, slock);
      locked = true;
      ++s.slock_taken;
    }
    llq = co_await c.load(llq_, 8, Order::relaxed);
  }
  if (locked) co_await kernel::queued_spin_unlock(c, slock);
  ++s.claim_successes;
  const auto prod = static_cast<std::uint32_t>(llq);
  co_return Claim{prod & ~kOwned, (prod & kOwned) == 0};
}

// fetch-add: one atomic fetch_add of {count 1, sync, n + sync} claims the
// space; the first claimer of a batch (old count 0) is its owner. Space is
// checked after the claim, against the cons copy on its own line.
Task<SmmuCmdq::Claim> SmmuCmdq::claim_fetch_add(cpu::Cpu& c, int n, bool sync) {
  CmdqCpuStats& s = stats_.at(static_cast<std::size_t>(c.id()));
  const auto need = static_cast<std::uint32_t>(n + (sync ? 1 : 0));
  ++s.claim_attempts;
  const std::uint64_t old =
      co_await c.rmw(llq_, 8, RmwOp::add, kCountOne | (sync ? kSyncOne : 0) | need, 0, Order::relaxed);
  ++s.claim_successes;
  const auto prod = static_cast<std::uint32_t>(old);
  const bool owner = ((old >> 32) & 0xffff) == 0;
  co_await fetch_add_wait_for_space(c, prod + need, s);
  co_return Claim{prod, owner};
}

// The claim may overrun cons only while the driver's copy is stale: refresh
// it from CONS under the exclusive lock, or wait for whoever does.
Task<void> SmmuCmdq::fetch_add_wait_for_space(cpu::Cpu& c, std::uint32_t end, CmdqCpuStats& s) {
  const auto entries = static_cast<std::uint32_t>(smmu_.queue_entries());
  auto cons = static_cast<std::uint32_t>(co_await c.load(cons_, 4, Order::relaxed));
  if (end - cons <= entries) co_return;
  ++s.queue_full_waits;
  co_await c.local_irq_enable();
  Poll qp;
  for (;;) {
    c.local_irq_disable();
    const bool exclusive = co_await exclusive_trylock(c);
    if (exclusive) {
      const std::uint32_t reg = co_await devices::mmio_read(c, smmu_, devices::SmmuReg::cmdq_cons);
      // CONS holds index | wrap; it trails our claim by less than two laps.
      cons = end - ((wrapped(end) - reg) & ((2u << shift_) - 1));
      co_await c.store(cons_, 4, cons);
      co_await exclusive_unlock(c);
    }
    co_await c.local_irq_enable();
    cons = static_cast<std::uint32_t>(co_await c.load(cons_, 4, Order::relaxed));
    if (end - cons <= entries) break;
    co_await queue_poll(c, qp, s);
  }
  c.local_irq_disable();
}

}  // namespace cohsim::models
