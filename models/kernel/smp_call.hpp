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

 private:
  Task<void> generic_exec_single(cpu::Cpu& c, int target, Addr csd);
  Task<void> csd_lock_wait(cpu::Cpu& c, Addr csd);
  /// The csd lock watchdog of CPU `cpu` (a Simulator event).
  static void watchdog_event(void* ctx, std::uint64_t cpu);
  void watchdog(int cpu);
  Task<void> resend_ipi(cpu::Cpu& c, int target);
  Task<void> call(cpu::Cpu& c, Addr func, std::uint64_t info);
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
