#include "models/kernel/smp_call.hpp"

#include <algorithm>
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
    : SmpCall(m, static_cast<irq::IpiController&>(gic), costs) {
  gic.set_send_barrier(barrier);
}

SmpCall::SmpCall(scenario::Machine& m, irq::IpiController& ipi, SmpCallCosts costs, IdleMode idle)
    : m_(m), ipi_(ipi), costs_(costs), x86_(!m.cpu(0).is_arm()), idle_(idle),
      call_vector_(x86_ ? kCallFunctionSingleVector : kIpiCallFunc) {
  // DEFINE_PER_CPU_SHARED_ALIGNED(struct llist_head, call_single_queue):
  // per-CPU data on the CPU's node, on its own line.
  for (int c = 0; c < m.cpu_count(); ++c)
    queues_.push_back(m.memory().alloc(m.topology().node_of_cpu(c), fabric::kLineBytes, fabric::kLineBytes,
                                       fmt::format("call_single_queue[{}]", c)));
  if (x86_) {
    // fork_idle(cpu) at boot: the idle task_struct (thread_info at its start,
    // THREAD_INFO_IN_TASK) on cpu_to_node(cpu); the runqueue is per-CPU data
    // on the CPU's node, its `idle` pointer read-mostly.
    for (int c = 0; c < m.cpu_count(); ++c) {
      const int node = m.topology().node_of_cpu(c);
      idle_flags_.push_back(m.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes,
                                             fmt::format("idle task[{}].thread_info.flags", c)));
      rq_idle_.push_back(m.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes,
                                          fmt::format("runqueues[{}].idle", c)));
      m.fabric().poke(rq_idle_.back(), 8, idle_flags_.back());
    }
  }
  ipi_.set_ipi_handler(call_vector_, [this](cpu::Cpu& c) { return flush_smp_call_function_queue(c); });
  // x86 sysvec_call_function -> generic_smp_call_function_interrupt: the same queue.
  if (x86_) ipi_.set_ipi_handler(kCallFunctionVector, [this](cpu::Cpu& c) { return flush_smp_call_function_queue(c); });
}

Addr SmpCall::register_function(std::function<Task<void>(cpu::Cpu&, std::uint64_t)> fn) {
  functions_.push_back(std::move(fn));
  return kTextBase + kTextStride * (functions_.size() - 1);
}

Task<void> SmpCall::call(cpu::Cpu& c, Addr func, std::uint64_t info) {
  const Addr index = (func - kTextBase) / kTextStride;
  if (func < kTextBase || (func - kTextBase) % kTextStride != 0 || index >= functions_.size())
    throw sim::SimError(fmt::format("cpu{} called {:#x} from a csd: no such function", c.id(), func));
  ++functions_run_;
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
  sim::TraceScope trace(c.sim().tracer(), c.id(), "smp_call_function_single", "kernel", c.sim().now());
  co_await c.compute(costs_.call_path);
  const Tick t_csd = own_time(c);
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
  phases_.csd += own_time(c) - t_csd;
  co_await generic_exec_single(c, target, csd);
  const Tick t_wait = own_time(c);
  if (wait) co_await csd_lock_wait(c, csd);
  phases_.wait += own_time(c) - t_wait;
  trace.finish(c.sim().now());
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
  // csd->node.dst (CONFIG_CSD_LOCK_WAIT_DEBUG): whom the watchdog names.
  auto dst = std::find_if(csd_dst_.begin(), csd_dst_.end(), [csd](const auto& e) { return e.first == csd; });
  if (dst == csd_dst_.end()) csd_dst_.emplace_back(csd, target);
  else dst->second = target;
  // __smp_call_single_queue: the IPI only when the queue was empty.
  const Tick t_queue = own_time(c);
  const bool first = co_await llist_add(c, csd + CsdLayout::next, call_single_queue(target));
  const Tick t_ipi = own_time(c);
  phases_.queue += t_ipi - t_queue;
  if (first) {
    co_await send_call_function_single_ipi(c, target);
    phases_.ipi += own_time(c) - t_ipi;
  } else {
    ++queued_without_ipi_;
  }
}

Task<void> SmpCall::send_call_function_single_ipi(cpu::Cpu& c, int target) {
  // v5.17 kernel/sched/core.c: if (!set_nr_if_polling(rq->idle))
  // arch_send_call_function_single_ipi(cpu). arm64 has no
  // TIF_POLLING_NRFLAG (set_nr_if_polling is "return false"):
  // smp_cross_call(IPI_CALL_FUNC) -> gic_ipi_send_mask. x86:
  // native_send_call_func_single_ipi -> apic->send_IPI(cpu, CALL_FUNCTION_SINGLE_VECTOR).
  if (x86_ && co_await set_nr_if_polling(c, target)) {
    ++woken_without_ipi_;
    co_return;
  }
  ++ipis_sent_;
  const std::vector<int> mask(1, target);  // cpumask_of(cpu)
  co_await ipi_.send_ipi(c, mask, call_vector_);
}

Task<bool> SmpCall::set_nr_if_polling(cpu::Cpu& c, int target) {
  // v5.17 kernel/sched/core.c set_nr_if_polling(rq->idle):
  //   val = READ_ONCE(ti->flags);
  //   for (;;) { if (!(val & _TIF_POLLING_NRFLAG)) return false;
  //              if (val & _TIF_NEED_RESCHED) return true;
  //              old = cmpxchg(&ti->flags, val, val | _TIF_NEED_RESCHED);
  //              if (old == val) break; val = old; }
  //   return true;
  const Addr flags = co_await c.load(rq_idle_.at(static_cast<std::size_t>(target)), 8);
  std::uint64_t val = co_await c.load(flags, 8);
  for (;;) {
    if (!(val & kTifPollingNrflag)) co_return false;
    if (val & kTifNeedResched) co_return true;
    const std::uint64_t old = co_await c.cmpxchg(flags, 8, val, val | kTifNeedResched, Order::full);
    if (old == val) co_return true;
    val = old;
  }
}

Task<void> SmpCall::csd_lock_wait(cpu::Cpu& c, Addr csd) {
  // smp_cond_load_acquire(&csd->node.u_flags, !(VAL & CSD_FLAG_LOCK)):
  // LDAR, then LDXR + WFE until the line is written. From
  // smp_call_function_single (v5.17: get_cpu() disables preemption only) it
  // spins with interrupts enabled, so an interrupt is taken while it waits.
  if (csd_lock_timeout_ > 0) {
    // The watchdog of CONFIG_CSD_LOCK_WAIT_DEBUG, kept off the wait's own
    // timing: an event at the deadline checks whether this wait still lasts.
    if (waits_.empty()) waits_.resize(static_cast<std::size_t>(m_.cpu_count()));
    CsdWait& w = waits_[static_cast<std::size_t>(c.id())];
    w = CsdWait{.waiting = true, .reported = false, .check_scheduled = w.check_scheduled, .csd = csd,
                .since = c.sim().now(), .deadline = c.sim().now() + csd_lock_timeout_};
    if (!w.check_scheduled) {
      w.check_scheduled = true;
      c.sim().schedule(w.deadline, &SmpCall::watchdog_event, this, static_cast<std::uint64_t>(c.id()));
    }
  }
  co_await c.spin_until(csd + CsdLayout::flags, 4, [](std::uint64_t v) { return (v & kCsdFlagLock) == 0; },
                        Order::acquire, "csd_lock_wait: the target's csd_unlock");
  if (csd_lock_timeout_ > 0) waits_[static_cast<std::size_t>(c.id())].waiting = false;
}

void SmpCall::watchdog_event(void* ctx, std::uint64_t cpu) { static_cast<SmpCall*>(ctx)->watchdog(static_cast<int>(cpu)); }

void SmpCall::watchdog(int cpu) {
  // v5.17 kernel/smp.c csd_lock_wait_toolong: after CSD_LOCK_TIMEOUT with
  // the csd still locked, report the waiting CPU, the csd and its
  // destination, and re-send the IPI (arch_send_call_function_single_ipi)
  // when the destination is not handling a csd; again every timeout.
  CsdWait& w = waits_[static_cast<std::size_t>(cpu)];
  w.check_scheduled = false;
  if (!w.waiting) return;
  sim::Simulator& sim = m_.sim();
  if (sim.now() >= w.deadline && (m_.fabric().peek(w.csd + CsdLayout::flags, 4) & kCsdFlagLock) != 0) {
    const auto dst = std::find_if(csd_dst_.begin(), csd_dst_.end(), [&w](const auto& e) { return e.first == w.csd; });
    const int target = dst == csd_dst_.end() ? -1 : dst->second;
    if (!w.reported) {
      w.reported = true;
      timeouts_.push_back(CsdLockTimeout{cpu, w.csd, target, w.since, sim.now()});
    }
    if (target >= 0 && target != cpu)
      sim.spawn(fmt::format("cpu{} csd watchdog: re-send IPI", cpu), resend_ipi(m_.cpu(cpu), target), true);
    w.deadline = sim.now() + csd_lock_timeout_;
  }
  if (sim.now() >= w.deadline) return;  // unlocked: the waiter is about to see it
  w.check_scheduled = true;
  sim.schedule(w.deadline, &SmpCall::watchdog_event, this, static_cast<std::uint64_t>(cpu));
}

Task<void> SmpCall::resend_ipi(cpu::Cpu& c, int target) {
  ++ipis_resent_;
  const std::vector<int> mask(1, target);
  co_await ipi_.send_ipi(c, mask, call_vector_);
}

std::string CsdLockTimeout::message() const {
  return fmt::format("lost IPI: cpu {} waited for csd {:#x} of cpu {} since {:.1f} ns (csd lock watchdog at {:.1f} ns)",
                     waiter, csd, target, sim::to_ns(since), sim::to_ns(detected));
}

Task<void> SmpCall::gic_ipi_send_mask(cpu::Cpu& c, const std::vector<int>& targets, int intid) {
  // arm64 smp_cross_call -> __ipi_send_mask -> the GICv3 driver's
  // gic_ipi_send_mask (irq::Gicv3::send_ipi: barrier, SGI1R writes, isb).
  if (x86_) throw sim::SimError("gic_ipi_send_mask on x86");
  co_await ipi_.send_ipi(c, targets, intid);
}

Task<void> SmpCall::flush_smp_call_function_queue(cpu::Cpu& c) {
  // v5.17 kernel/smp.c __flush_smp_call_function_queue(true), reached from
  // do_handle_IPI(IPI_CALL_FUNC) -> generic_smp_call_function_interrupt.
  sim::TraceScope trace(c.sim().tracer(), c.id(), "__flush_smp_call_function_queue", "kernel", c.sim().now());
  const Addr head = call_single_queue(c.id());
  Addr entry = co_await llist_del_all(c, head);
  entry = co_await llist_reverse_order(c, entry);
  // First, the SYNC callbacks (their senders wait): func(info), then csd_unlock.
  Addr prev = 0;
  for (Addr csd = entry; csd != 0;) {
    // The four field loads are independent (the branch on the type is
    // predicted): an out-of-order core has them in flight together, which
    // matters when a csd straddles two lines.
    cpu::LoadFuture next_f = c.issue_load(csd + CsdLayout::next, 8);  // llist_for_each_entry_safe
    cpu::LoadFuture flags_f = c.issue_load(csd + CsdLayout::flags, 4);
    cpu::LoadFuture func_f = c.issue_load(csd + CsdLayout::func, 8);
    cpu::LoadFuture info_f = c.issue_load(csd + CsdLayout::info, 8);
    const Addr csd_next = co_await next_f.value();
    const std::uint64_t flags = co_await flags_f.value();
    const Addr func = co_await func_f.value();
    const std::uint64_t info = co_await info_f.value();
    if ((flags & kCsdTypeMask) == kCsdTypeSync) {
      if (prev != 0) co_await c.store(prev + CsdLayout::next, 8, csd_next);
      else entry = csd_next;
      co_await call(c, func, info);
      co_await c.store(csd + CsdLayout::flags, 4, 0, Order::release);  // csd_unlock: smp_store_release
    } else {
      prev = csd;
    }
    csd = csd_next;
  }
  // Second, the ASYNC ones: csd_unlock first, then func(info).
  for (Addr csd = entry; csd != 0;) {
    cpu::LoadFuture next_f = c.issue_load(csd + CsdLayout::next, 8);
    cpu::LoadFuture func_f = c.issue_load(csd + CsdLayout::func, 8);
    cpu::LoadFuture info_f = c.issue_load(csd + CsdLayout::info, 8);
    const Addr csd_next = co_await next_f.value();
    const Addr func = co_await func_f.value();
    const std::uint64_t info = co_await info_f.value();
    co_await c.store(csd + CsdLayout::flags, 4, 0, Order::release);
    co_await call(c, func, info);
    csd = csd_next;
  }
  trace.finish(c.sim().now());
}

Task<void> SmpCall::idle_loop(cpu::Cpu& c) {
  // v5.17 kernel/sched/idle.c do_idle -> arch_cpu_idle -> cpu_do_idle: wfi.
  for (;;) co_await c.wfi();
}

Task<void> SmpCall::x86_halt_idle(cpu::Cpu& c) {
  // v5.17 do_idle with no cpuidle driver (or idle=halt): __current_set_polling();
  // while (!need_resched()) { local_irq_disable(); default_idle_call():
  //   if (current_clr_polling_and_test()) local_irq_enable();
  //   else arch_cpu_idle() = sti; hlt (the IPI wakes it, C1 exit, handler);
  //   exit_idle: __current_set_polling(); }
  // set_bit/clear_bit are LOCK OR/AND on the flags line.
  const Addr flags = idle_thread_flags(c.id());
  for (;;) {
    co_await c.rmw(flags, 8, fabric::RmwOp::bit_or, kTifPollingNrflag);
    while (!(co_await c.load(flags, 8) & kTifNeedResched)) {
      c.local_irq_disable();
      const std::uint64_t before = co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifPollingNrflag);
      // safe_halt = sti; hlt: an interrupt already pending is taken at the
      // sti and the hlt does not stop the core; otherwise HLT until one comes.
      const bool pending = c.interrupt_pending();
      co_await c.local_irq_enable();
      if (!(before & kTifNeedResched) && !pending) co_await c.wfi();
      co_await c.rmw(flags, 8, fabric::RmwOp::bit_or, kTifPollingNrflag);
    }
    // A sender saw TIF_POLLING_NRFLAG in the window around the HLT and set
    // TIF_NEED_RESCHED instead of an IPI: the do_idle exit path runs the queue.
    co_await c.compute(costs_.idle_exit);
    co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifPollingNrflag);
    co_await flush_from_idle(c);
    co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifNeedResched);
    co_await c.compute(costs_.schedule_idle);
  }
}

Task<void> SmpCall::x86_poll_idle(cpu::Cpu& c) {
  // v5.17 do_idle with intel_idle: __current_set_polling();
  // while (!need_resched()) { local_irq_disable(); cpuidle_idle_call ->
  //   intel_idle -> mwait_idle_with_hints: if (!current_set_polling_and_test())
  //   { __monitor(&flags); if (!need_resched()) __mwait(); } current_clr_polling();
  //   exit_idle: __current_set_polling(); local_irq_enable(); }
  // __current_clr_polling(); smp_mb__after_atomic();
  // flush_smp_call_function_from_idle(); schedule_idle().
  // MWAIT is a wait for this CPU's copy of the flags line to be invalidated
  // (the sender's cmpxchg), then the C1 exit (cpu.wfi_wake, the same C-state
  // exit as HLT). An interrupt pending before MWAIT makes it return at once;
  // one raised during MWAIT is taken after the monitored write wakes it (the
  // kernel sends none to a polling CPU).
  const Addr flags = idle_thread_flags(c.id());
  for (;;) {
    co_await c.rmw(flags, 8, fabric::RmwOp::bit_or, kTifPollingNrflag);
    while (!(co_await c.load(flags, 8) & kTifNeedResched)) {
      c.local_irq_disable();
      const std::uint64_t before = co_await c.rmw(flags, 8, fabric::RmwOp::bit_or, kTifPollingNrflag);
      if (!(before & kTifNeedResched)) {
        if (!(co_await c.load(flags, 8) & kTifNeedResched) && !c.interrupt_pending()) {
          co_await c.wait_for_change(flags, "mwait: thread_info flags (TIF_POLLING_NRFLAG)");
          co_await m_.sim().delay(c.params().wfi_wake);
        }
      }
      co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifPollingNrflag);
      co_await c.rmw(flags, 8, fabric::RmwOp::bit_or, kTifPollingNrflag);
      co_await c.local_irq_enable();
    }
    co_await c.compute(costs_.idle_exit);
    co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifPollingNrflag);
    co_await flush_from_idle(c);
    // schedule_idle -> __schedule: clear_tsk_need_resched, pick the idle task again.
    co_await c.rmw(flags, 8, fabric::RmwOp::andnot, kTifNeedResched);
    co_await c.compute(costs_.schedule_idle);
  }
}

Task<void> SmpCall::flush_from_idle(cpu::Cpu& c) {
  // v5.17 kernel/smp.c flush_smp_call_function_from_idle: if
  // (llist_empty(this_cpu_ptr(&call_single_queue))) return;
  // local_irq_save(); flush_smp_call_function_queue(true); local_irq_restore().
  if (co_await c.load(call_single_queue(c.id()), 8) == 0) co_return;
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  co_await flush_smp_call_function_queue(c);
  if (were_enabled) co_await c.local_irq_enable();
}

Task<void> SmpCall::busy_loop(cpu::Cpu& c) {
  // A CPU running a task: it computes, and interrupts are taken in the middle.
  for (;;) co_await c.compute(100 * sim::kUs);
}

void SmpCall::start_idle(int cpu) {
  if (!x86_ && idle_ == IdleMode::halt) {
    m_.sim().spawn(fmt::format("cpu{} idle (wfi)", cpu), idle_loop(m_.cpu(cpu)), /*daemon=*/true);
    return;
  }
  switch (idle_) {
    case IdleMode::busy:
      m_.sim().spawn(fmt::format("cpu{} busy", cpu), busy_loop(m_.cpu(cpu)), true);
      break;
    case IdleMode::halt:
      m_.sim().spawn(fmt::format("cpu{} idle (hlt)", cpu), x86_halt_idle(m_.cpu(cpu)), true);
      break;
    case IdleMode::poll:
      if (!x86_) throw sim::SimError("polling idle (TIF_POLLING_NRFLAG) is x86 only; arm64 idles in WFI");
      m_.sim().spawn(fmt::format("cpu{} idle (mwait)", cpu), x86_poll_idle(m_.cpu(cpu)), true);
      break;
  }
}

}  // namespace cohsim::models::kernel
