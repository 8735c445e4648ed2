// Cross-CPU function calls as Linux v5.17 does them on arm64 and x86:
//   kernel/smp.c            smp_call_function_single, generic_exec_single,
//                           __smp_call_single_queue, csd_lock_wait, csd_unlock,
//                           __flush_smp_call_function_queue (the IPI handler)
//   lib/llist.c, llist.h    llist_add (llist_add_batch), llist_del_all,
//                           llist_reverse_order
//   arch/arm64/kernel/smp.c smp_cross_call(IPI_CALL_FUNC), do_handle_IPI
//   drivers/irqchip/irq-gic-v3.c  gic_ipi_send_mask (the barrier variant)
//   kernel/sched/core.c     send_call_function_single_ipi, set_nr_if_polling (x86)
//   kernel/sched/idle.c     do_idle, default_idle_call (x86 idle loops)
//   arch/x86/kernel/smp.c   native_send_call_func_single_ipi, sysvec_call_function_single
//   arch/x86/include/asm/mwait.h  mwait_idle_with_hints (intel_idle)
//   kernel/smp.c (v5.10)    smp_call_function_many_cond, on_each_cpu_cond_mask,
//                           smpcfd_prepare_cpu (smp_call_many.cpp)
//   arch/x86/kernel/smp.c   native_send_call_func_ipi (v5.10, the shorthand)
// The interrupt controller is an irq::IpiController: the GICv3 on arm64,
// the local APIC on x86.
// Every shared access goes through the Cpu, so its cost comes from where the
// line lives and who held it last. Values are real: the queue head holds the
// address of the csd, the csd holds flags/func/info.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/irq/gicv3.hpp"
#include "cohsim/irq/ipi_controller.hpp"
#include "cohsim/scenario/machine.hpp"

namespace cohsim::models::kernel {

using fabric::Addr;
using sim::Task;
using sim::Tick;

/// call_single_data_t (v5.17 include/linux/smp.h, smp_types.h): 32 bytes.
struct CsdLayout {
  static constexpr Addr next = 0;   ///< node.llist.next (8 B)
  static constexpr Addr flags = 8;  ///< node.u_flags (4 B)
  static constexpr Addr func = 16;  ///< func (8 B)
  static constexpr Addr info = 24;  ///< info (8 B)
  static constexpr Addr bytes = 32;
};
/// CSD_FLAG_LOCK and CSD_TYPE_SYNC (v5.17 include/linux/smp_types.h).
inline constexpr std::uint64_t kCsdFlagLock = 0x01, kCsdTypeSync = 0x10;
/// arm64 IPI_CALL_FUNC: SGI 1 (v5.17 arch/arm64/kernel/smp.c enum ipi_msg_type).
inline constexpr int kIpiCallFunc = 1;
/// x86 CALL_FUNCTION_SINGLE_VECTOR (v5.17 arch/x86/include/asm/irq_vectors.h).
inline constexpr int kCallFunctionSingleVector = 0xfb;
/// x86 CALL_FUNCTION_VECTOR (arch/x86/include/asm/irq_vectors.h): smp_call_function_many's IPI.
inline constexpr int kCallFunctionVector = 0xfc;
/// x86 thread_info flags (v5.17 arch/x86/include/asm/thread_info.h).
inline constexpr std::uint64_t kTifNeedResched = 1ull << 3, kTifPollingNrflag = 1ull << 21;

/// The barrier at the head of gic_ipi_send_mask.
using IpiBarrier = irq::GicSendBarrier;

/// v5.17 kernel/smp.c CSD_LOCK_TIMEOUT (CONFIG_CSD_LOCK_WAIT_DEBUG): 5 s.
inline constexpr Tick kCsdLockTimeoutDefault = 5 * sim::kSec;

/// A csd_lock_wait that outlasted the csd lock timeout: csd_lock_wait_toolong's
/// report (v5.17 kernel/smp.c, CONFIG_CSD_LOCK_WAIT_DEBUG).
struct CsdLockTimeout {
  int waiter = 0;   ///< the CPU spinning in csd_lock_wait
  Addr csd = 0;     ///< its csd
  int target = 0;   ///< the CPU whose call_single_queue the csd was added to (csd->node.dst)
  Tick since = 0;   ///< when the wait began
  Tick detected = 0;
  /// "lost IPI: cpu N waited for csd 0x... of cpu M since T ns (reported at T' ns)".
  std::string message() const;
};

/// What an idle target CPU does (x86; arm64 idles in WFI).
enum class IdleMode {
  halt,  ///< default_idle_call: clear TIF_POLLING_NRFLAG, HLT; woken by the IPI (C1 exit)
  poll,  ///< intel_idle: MWAIT on the thread_info flags with TIF_POLLING_NRFLAG set; no IPI
  busy,  ///< not idle: the CPU computes and the IPI interrupts it
};

/// Kernel instruction costs outside the modelled memory accesses and barriers.
struct SmpCallCosts {
  Tick call_path = 0;     ///< smp_call_function_single .. smp_cross_call, preempt and cpumask handling
  Tick func_call = 0;     ///< an indirect call to an empty function and its return
  Tick idle_exit = 0;     ///< x86 poll: do_idle from the MWAIT wake-up to the queue flush, outside its accesses
  Tick schedule_idle = 0; ///< x86 poll: schedule_idle() picking the idle task again
};

/// Where alloc_percpu put each sender's cfd csd area (smpcfd_prepare_cpu:
/// cfd->csd = alloc_percpu(call_single_data_t), run as each CPU is brought
/// up, CPU 0 first). The csd of sender s for target t is in t's percpu unit
/// (t's node) at offset first_offset + s * (32 + gap), rounded up to the
/// csd's alignment: 8 bytes before Linux 4.14 (struct call_single_data),
/// its 32-byte size after (call_single_data_t, commit 966a967116e6).
struct CfdPlacement {
  bool align_to_size = true;  ///< csd_align=size (v4.14+) or none (8-byte aligned)
  Addr first_offset = 0;      ///< offset of CPU 0's csd area in each percpu unit
  Addr gap = 0;               ///< bytes other percpu allocations take between two CPUs' csd areas
  /// The csd's alignment: 32 or 8 bytes.
  Addr alignment() const { return align_to_size ? CsdLayout::bytes : 8; }
  /// Offset in target t's percpu unit of sender s's csd for t.
  Addr offset(int sender) const;
};

/// Where a sender's time goes in smp_call_function_single / _many_cond (sums over all calls,
/// interrupts taken meanwhile left out).
struct CallPhases {
  Tick csd = 0;    ///< csd_lock and the csd's flags/func/info stores (its line or lines)
  Tick queue = 0;  ///< llist_add to the targets' queues
  Tick ipi = 0;    ///< the IPI send path (arch_send_call_function_*ipi*)
  Tick wait = 0;   ///< csd_lock_wait: until the targets ran the function and released the csds
};

/// A CPU's clock less the time it spent in interrupts: phase times of CallPhases exclude the
/// interrupts a sender takes meanwhile (a sender that is also a target runs others' calls there).
inline Tick own_time(cpu::Cpu& c) { return c.sim().now() - c.stats().interrupt_time; }

/// cond_func(cpu, info) of on_each_cpu_cond_mask, run by the sender for each target.
using CallCond = std::function<Task<bool>(cpu::Cpu&, int target)>;

/// llist_add(node, head): load first; store node->next = first; cmpxchg
/// (fully ordered, CASAL with LSE) head->first from first to node; retry on
/// failure. Returns true when the list was empty (v5.17 llist_add_batch).
Task<bool> llist_add(cpu::Cpu& c, Addr node, Addr head);
/// llist_del_all(head): xchg(&head->first, NULL) (SWPAL); returns the old first.
Task<Addr> llist_del_all(cpu::Cpu& c, Addr head);
/// llist_reverse_order(first): for each node load next, store next = the new head.
Task<Addr> llist_reverse_order(cpu::Cpu& c, Addr first);

/// The smp_call_function machinery of one machine: per-CPU call_single_queue
/// heads, the functions callable through a csd, the IPI handler, the send path.
class SmpCall {
 public:
  /// Allocates every CPU's call_single_queue on its own node and line, and
  /// registers the IPI_CALL_FUNC handler with the GIC (arm64).
  SmpCall(scenario::Machine& m, irq::Gicv3& gic, IpiBarrier barrier, SmpCallCosts costs);
  /// The same on any architecture: the call-function vector's handler is
  /// registered with `ipi`; on x86 also every CPU's idle task thread_info and
  /// runqueue line, and idle CPUs behave as `idle` says.
  SmpCall(scenario::Machine& m, irq::IpiController& ipi, SmpCallCosts costs, IdleMode idle = IdleMode::halt);

  /// Registers a function a csd can name; returns its (fake kernel text) address.
  Addr register_function(std::function<Task<void>(cpu::Cpu&, std::uint64_t info)> fn);
  /// smp_call_function_single(target, func, info, wait) with the csd at `csd`
  /// (on the caller's stack). Returns 0.
  Task<int> smp_call_function_single(cpu::Cpu& c, int target, Addr func, std::uint64_t info, bool wait, Addr csd);
  /// smpcfd_prepare_cpu for every CPU: per-CPU cfd_data (cpumask and
  /// cpumask_ipi on the sender's node) and the csd areas where `placement`
  /// puts them. Needed before smp_call_function_many_cond.
  void prepare_cfd(const CfdPlacement& placement);
  /// The cfd csd of sender `sender` for target `target` (in the target's percpu unit).
  Addr cfd_csd(int sender, int target) const;
  /// v5.10 smp_call_function_many_cond(mask, func, info, wait, cond): the
  /// one-target shortcut (smp_call_function_single with `stack_csd`, the
  /// caller's on-stack csd), else csd_lock, llist_add to each target's queue
  /// for which cond holds, the IPI to the targets whose queue was empty
  /// (arch_send_call_function_ipi_mask), and with `wait` csd_lock_wait on
  /// each csd. Never runs `func` on the sender.
  Task<void> smp_call_function_many_cond(cpu::Cpu& c, const std::vector<int>& mask, Addr func, std::uint64_t info,
                                         bool wait, const CallCond& cond, Addr stack_csd);
  /// v5.10 on_each_cpu_cond_mask: smp_call_function_many_cond, then `func`
  /// on the sender with interrupts off if it is in `mask` and cond holds.
  Task<void> on_each_cpu_cond_mask(cpu::Cpu& c, const std::vector<int>& mask, Addr func, std::uint64_t info,
                                   bool wait, const CallCond& cond, Addr stack_csd);
  /// x86 native_send_call_func_ipi: with the shorthand on (all present CPUs
  /// booted, the v5.10 default) and the mask plus the sender the online
  /// mask, one all-but-self ICR write; else the driver's send_IPI_mask.
  void set_ipi_shorthand(bool on) { shorthand_ = on; }
  /// arm64 smp_cross_call -> gic_ipi_send_mask: barrier, one ICC_SGI1R write per cluster, isb.
  Task<void> gic_ipi_send_mask(cpu::Cpu& c, const std::vector<int>& targets, int intid);
  /// The idle loop of `cpu`, spawned as a daemon: arm64 do_idle -> cpu_do_idle
  /// (wfi); x86 as the IdleMode says.
  void start_idle(int cpu);

  /// x86: the thread_info flags word of `cpu`'s idle task (0 on arm64).
  Addr idle_thread_flags(int cpu) const { return idle_flags_.empty() ? 0 : idle_flags_.at(static_cast<std::size_t>(cpu)); }
  /// x86: calls that found the target polling, so set TIF_NEED_RESCHED instead of an IPI.
  std::uint64_t woken_without_ipi() const { return woken_without_ipi_; }

  /// The call_single_queue head of `cpu`.
  Addr call_single_queue(int cpu) const { return queues_.at(static_cast<std::size_t>(cpu)); }
  /// IPIs sent (one per llist_add that found the queue empty).
  std::uint64_t ipis_sent() const { return ipis_sent_; }
  /// CONFIG_CSD_LOCK_WAIT_DEBUG: a csd_lock_wait still waiting after
  /// `timeout` is reported, and the IPI re-sent from the waiting CPU as
  /// csd_lock_wait_toolong does, every `timeout` while it lasts (0: off, the
  /// default). The watchdog does not change the wait's timing; the SmpCall
  /// must outlive the run.
  void set_csd_lock_timeout(Tick timeout) { csd_lock_timeout_ = timeout; }
  /// The waits that outlasted the timeout, in the order detected (one entry per wait).
  const std::vector<CsdLockTimeout>& csd_lock_timeouts() const { return timeouts_; }
  /// IPIs the watchdog re-sent.
  std::uint64_t ipis_resent() const { return ipis_resent_; }
  /// Calls queued behind earlier entries, so without an IPI.
  std::uint64_t queued_without_ipi() const { return queued_without_ipi_; }
  /// smp_call_function_many_cond calls that queued on two or more targets.
  std::uint64_t many_calls() const { return many_calls_; }
  /// Functions run through a csd: by a target's queue flush, or on the caller.
  std::uint64_t functions_run() const { return functions_run_; }
  /// IPI sends (ICR writes or SGI batches) of smp_call_function_many_cond.
  std::uint64_t many_sends() const { return many_sends_; }
  /// The senders' time by phase, all calls.
  const CallPhases& phases() const { return phases_; }
  /// Every cfd csd line (for line statistics), in no particular order.
  const std::vector<Addr>& cfd_csd_lines() const { return cfd_lines_; }

 private:
  Task<void> generic_exec_single(cpu::Cpu& c, int target, Addr csd);
  Task<void> csd_lock_wait(cpu::Cpu& c, Addr csd);
  /// The csd lock watchdog of CPU `cpu` (a Simulator event).
  static void watchdog_event(void* ctx, std::uint64_t cpu);
  void watchdog(int cpu);
  Task<void> resend_ipi(cpu::Cpu& c, int target);
  Task<void> call(cpu::Cpu& c, Addr func, std::uint64_t info);
  /// csd_lock(csd): csd_lock_wait, flags |= LOCK, smp_wmb.
  Task<void> csd_lock(cpu::Cpu& c, Addr csd);
  /// arch_send_call_function_ipi_mask(mask) from `c`.
  Task<void> send_call_function_ipi_mask(cpu::Cpu& c, const std::vector<int>& mask);
  /// __flush_smp_call_function_queue(true): the IPI_CALL_FUNC handler.
  Task<void> flush_smp_call_function_queue(cpu::Cpu& c);
  Task<void> idle_loop(cpu::Cpu& c);
  /// send_call_function_single_ipi: set_nr_if_polling on x86, else the IPI.
  Task<void> send_call_function_single_ipi(cpu::Cpu& c, int target);
  Task<bool> set_nr_if_polling(cpu::Cpu& c, int target);
  Task<void> x86_halt_idle(cpu::Cpu& c);
  Task<void> x86_poll_idle(cpu::Cpu& c);
  Task<void> busy_loop(cpu::Cpu& c);
  /// flush_smp_call_function_from_idle (v5.17): the queue, run from do_idle.
  Task<void> flush_from_idle(cpu::Cpu& c);

  scenario::Machine& m_;
  irq::IpiController& ipi_;
  SmpCallCosts costs_;
  bool x86_;
  IdleMode idle_;
  int call_vector_;
  std::vector<Addr> queues_;
  std::vector<Addr> idle_flags_;  ///< x86: per CPU, the idle task's thread_info.flags
  std::vector<Addr> rq_idle_;     ///< x86: per CPU, cpu_rq(cpu)->idle
  std::vector<std::function<Task<void>(cpu::Cpu&, std::uint64_t)>> functions_;
  std::uint64_t ipis_sent_ = 0, queued_without_ipi_ = 0, woken_without_ipi_ = 0;
  std::uint64_t many_calls_ = 0, functions_run_ = 0, many_sends_ = 0;
  bool shorthand_ = true;
  CallPhases phases_;
  /// smpcfd_prepare_cpu: per sender its cfd_data (cpumask, cpumask_ipi words); per target its csd unit.
  struct Cfd {
    Addr cpumask = 0, cpumask_ipi = 0;
  };
  std::vector<Cfd> cfd_;
  std::vector<Addr> csd_units_;  ///< per target CPU: the start of its percpu unit's csd areas
  CfdPlacement placement_;
  std::vector<Addr> offsets_;  ///< per sender: its csd's offset in every unit
  std::vector<Addr> cfd_lines_;
  /// The csd lock watchdog's view of one CPU's csd_lock_wait.
  struct CsdWait {
    bool waiting = false;
    bool reported = false;         ///< this wait is in timeouts_ already
    bool check_scheduled = false;  ///< a watchdog event for this CPU is in the queue
    Addr csd = 0;
    Tick since = 0, deadline = 0;
  };
  Tick csd_lock_timeout_ = 0;
  std::vector<CsdWait> waits_;                 ///< per CPU
  std::vector<std::pair<Addr, int>> csd_dst_;  ///< csd -> the CPU it was last queued to
  std::vector<CsdLockTimeout> timeouts_;
  std::uint64_t ipis_resent_ = 0;
};

}  // namespace cohsim::models::kernel
