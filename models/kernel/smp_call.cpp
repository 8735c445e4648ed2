#include "models/kernel/smp_call.hpp"

#include <fmt/format.h>

namespace cohsim::models::kernel {

using cpu::Order;

namespace {
/// Fake kernel text addresses of the functions a csd can name.
constexpr Addr kTextBase = 0xffff800010100000ull;
constexpr Addr kTextStride = 0x40;
/// CSD_TYPE_MASK (v5.17 include/linux/smp_types.h); CSD_TYPE_ASYNC is 0.
constexpr std::uint64_t kCsdTypeMask = 0x30;
}  // namespace

// ------------------------------------------------------------- llist ---
Task<bool> llist_add(cpu::Cpu& c, Addr node, Addr head) {
  // v5.17 lib/llist.c llist_add_batch(new, new, head):
  //   do { new_last->next = first = READ_ONCE(head->first); }
  //   while (cmpxchg(&head->first, first, new_first) != first);
  for (;;) {
    const Addr first = co_await c.load(head, 8);
    co_await c.store(node, 8, first);
    const Addr old = co_await c.cmpxchg(head, 8, first, node, Order::full);
    if (old == first) co_return first == 0;
  }
}

Task<Addr> llist_del_all(cpu::Cpu& c, Addr head) {
  // v5.17 include/linux/llist.h: return xchg(&head->first, NULL);
  co_return co_await c.rmw(head, 8, fabric::RmwOp::swap, 0, 0, Order::full);
}

Task<Addr> llist_reverse_order(cpu::Cpu& c, Addr head) {
  // v5.17 lib/llist.c
  Addr new_head = 0;
  while (head != 0) {
    const Addr tmp = head;
    head = co_await c.load(head, 8);
    co_await c.store(tmp, 8, new_head);
    new_head = tmp;
  }
  co_return new_head;
}

// ----------------------------------------------------------- SmpCall ---
SmpCall::SmpCall(scenario::Machine& m, irq::Gicv3& gic, IpiBarrier barrier, SmpCallCosts costs)
    : m_(m), gic_(gic), barrier_(barrier), costs_(costs) {
  // DEFINE_PER_CPU_SHARED_ALIGNED(struct llist_head, call_single_queue):
  // per-CPU data on the CPU's node, on its own line.
  for (int c = 0; c < m.cpu_count(); ++c)
    queues_.push_back(m.memory().alloc(m.topology().node_of_cpu(c), fabric::kLineBytes, fabric::kLineBytes,
                                       fmt::format("call_single_queue[{}]", c)));
  gic_.set_sgi_handler(kIpiCallFunc, [this](cpu::Cpu& c) { return flush_smp_call_function_queue(c); });
}

Addr SmpCall::register_function(std::function<Task<void>(cpu::Cpu&, std::uint64_t)> fn) {
  functions_.push_back(std::move(fn));
  return kTextBase + kTextStride * (functions_.size() - 1);
}

Task<void> SmpCall::call(cpu::Cpu& c, Addr func, std::uint64_t info) {
  const Addr index = (func - kTextBase) / kTextStride;
  if (func < kTextBase || (func - kTextBase) % kTextStride != 0 || index >= functions_.size())
    throw sim::SimError(fmt::format("cpu{} called {:#x} from a csd: no such function", c.id(), func));
  co_await c.compute(costs_.func_call);
  co_await functions_[static_cast<std::size_t>(index)](c, info);
}

Task<int> SmpCall::smp_call_function_single(cpu::Cpu& c, int target, Addr func, std::uint64_t info, bool wait,
                                            Addr csd) {
  // v5.17 kernel/smp.c: get_cpu(); call_single_data_t csd_stack = { .node =
  // { .u_flags = CSD_FLAG_LOCK | CSD_TYPE_SYNC } }; (for !wait the caller's
  // csd is the per-CPU csd_data, taken with csd_lock); csd->func = func;
  // csd->info = info; generic_exec_single(); if (wait) csd_lock_wait(csd).
  if (target < 0 || target >= m_.cpu_count())
    throw sim::SimError(fmt::format("smp_call_function_single to cpu {}: no such CPU", target));
  co_await c.compute(costs_.call_path);
  if (wait) {
    co_await c.store(csd + CsdLayout::flags, 4, kCsdFlagLock | kCsdTypeSync);
  } else {
    // csd_lock: csd_lock_wait(csd); csd->flags |= CSD_FLAG_LOCK; smp_wmb().
    co_await csd_lock_wait(c, csd);
    co_await c.store(csd + CsdLayout::flags, 4, kCsdFlagLock);
    co_await c.dmb(cpu::Domain::ish, cpu::BarrierType::st);
  }
  co_await c.store(csd + CsdLayout::func, 8, func);
  co_await c.store(csd + CsdLayout::info, 8, info);
  co_await generic_exec_single(c, target, csd);
  if (wait) co_await csd_lock_wait(c, csd);
  co_return 0;
}

Task<void> SmpCall::generic_exec_single(cpu::Cpu& c, int target, Addr csd) {
  if (target == c.id()) {
    // The local call: csd_unlock early, then func(info) with interrupts off.
    const Addr func = co_await c.load(csd + CsdLayout::func, 8);
    const std::uint64_t info = co_await c.load(csd + CsdLayout::info, 8);
    co_await c.store(csd + CsdLayout::flags, 4, 0, Order::release);
    const bool were_enabled = c.interrupts_enabled();
    c.local_irq_disable();
    co_await call(c, func, info);
    if (were_enabled) co_await c.local_irq_enable();
    co_return;
  }
  // __smp_call_single_queue: the IPI only when the queue was empty;
  // send_call_function_single_ipi -> (no polling idle on arm64)
  // arch_send_call_function_single_ipi -> smp_cross_call(IPI_CALL_FUNC).
  if (co_await llist_add(c, csd + CsdLayout::next, call_single_queue(target))) {
    ++ipis_sent_;
    const std::vector<int> mask(1, target);  // cpumask_of(cpu)
    co_await gic_ipi_send_mask(c, mask, kIpiCallFunc);
  } else {
    ++queued_without_ipi_;
  }
}

Task<void> SmpCall::csd_lock_wait(cpu::Cpu& c, Addr csd) {
  // smp_cond_load_acquire(&csd->node.u_flags, !(VAL & CSD_FLAG_LOCK)):
  // LDAR, then LDXR + WFE until the line is written.
  co_await c.spin_until(csd + CsdLayout::flags, 4, [](std::uint64_t v) { return (v & kCsdFlagLock) == 0; },
                        Order::acquire, "csd_lock_wait: the target's csd_unlock");
}

Task<void> SmpCall::gic_ipi_send_mask(cpu::Cpu& c, const std::vector<int>& targets, int intid) {
  // v5.17 drivers/irqchip/irq-gic-v3.c: "Ensure that stores to Normal memory
  // are visible to the other CPUs before issuing the IPI": wmb() (= dsb(st))
  // in the stock kernel, dsb(ishst) in the patched one. Then one
  // ICC_SGI1R_EL1 write per cluster (gic_compute_target_list), and isb().
  if (barrier_ == IpiBarrier::wmb) co_await c.dsb(cpu::Domain::sy, cpu::BarrierType::st);
  else co_await c.dsb(cpu::Domain::ish, cpu::BarrierType::st);
  for (const irq::Sgi1rWrite& w : gic_.target_lists(targets, intid)) co_await gic_.write_sgi1r(c, w);
  co_await c.isb();
}

Task<void> SmpCall::flush_smp_call_function_queue(cpu::Cpu& c) {
  // v5.17 kernel/smp.c __flush_smp_call_function_queue(true), reached from
  // do_handle_IPI(IPI_CALL_FUNC) -> generic_smp_call_function_interrupt.
  const Addr head = call_single_queue(c.id());
  Addr entry = co_await llist_del_all(c, head);
  entry = co_await llist_reverse_order(c, entry);
  // First, the SYNC callbacks (their senders wait): func(info), then csd_unlock.
  Addr prev = 0;
  for (Addr csd = entry; csd != 0;) {
    const Addr csd_next = co_await c.load(csd + CsdLayout::next, 8);  // llist_for_each_entry_safe
    const std::uint64_t flags = co_await c.load(csd + CsdLayout::flags, 4);
    if ((flags & kCsdTypeMask) == kCsdTypeSync) {
      const Addr func = co_await c.load(csd + CsdLayout::func, 8);
      const std::uint64_t info = co_await c.load(csd + CsdLayout::info, 8);
      if (prev != 0) co_await c.store(prev + CsdLayout::next, 8, csd_next);
      else entry = csd_next;
      co_await call(c, func, info);
      co_await c.store(csd + CsdLayout::flags, 4, 0, Order::release);  // csd_unlock: smp_store_release
      ++entries_run_;
    } else {
      prev = csd;
    }
    csd = csd_next;
  }
  // Second, the ASYNC ones: csd_unlock first, then func(info).
  for (Addr csd = entry; csd != 0;) {
    const Addr csd_next = co_await c.load(csd + CsdLayout::next, 8);
    const Addr func = co_await c.load(csd + CsdLayout::func, 8);
    const std::uint64_t info = co_await c.load(csd + CsdLayout::info, 8);
    co_await c.store(csd + CsdLayout::flags, 4, 0, Order::release);
    co_await call(c, func, info);
    ++entries_run_;
    csd = csd_next;
  }
}

Task<void> SmpCall::idle_loop(cpu::Cpu& c) {
  // v5.17 kernel/sched/idle.c do_idle -> arch_cpu_idle -> cpu_do_idle: wfi.
  for (;;) co_await c.wfi();
}

void SmpCall::start_idle(int cpu) {
  m_.sim().spawn(fmt::format("cpu{} idle (wfi)", cpu), idle_loop(m_.cpu(cpu)), /*daemon=*/true);
}

}  // namespace cohsim::models::kernel
