// x86 TLB shootdowns as Linux v5.10 does them (arch/x86/mm/tlb.c,
// arch/x86/include/asm/tlbflush.h, mm/rmap.c):
//   flush_tlb_mm_range       the sender: tlb_gen, the per-CPU flush_tlb_info,
//                            the local flush, flush_tlb_others to mm_cpumask
//   native_flush_tlb_others  on_each_cpu_cond_mask(tlb_is_not_lazy, ...) or,
//                            with freed page tables, smp_call_function_many
//   flush_tlb_func_remote    the target: INVLPG per page up to
//                            tlb_single_page_flush_ceiling (33), else a full flush
//   arch_tlbbatch_add_mm / arch_tlbbatch_flush  reclaim's deferred flush
//   switch_mm_irqs_off / enter_lazy_tlb          mm_cpumask and lazy TLB
// The cross-CPU call is SmpCall::on_each_cpu_cond_mask / smp_call_function_many_cond.
#pragma once

#include <cstdint>
#include <vector>

#include "models/kernel/smp_call.hpp"

namespace cohsim::models::kernel {

/// TLB_FLUSH_ALL (v5.10 arch/x86/include/asm/tlbflush.h).
inline constexpr Addr kTlbFlushAll = ~Addr{0};
/// tlb_single_page_flush_ceiling (v5.10 arch/x86/mm/tlb.c, a read-mostly global).
inline constexpr std::uint64_t kTlbSinglePageFlushCeiling = 33;

/// struct tlb_state (v5.10), 128 B per CPU: the fields the flush reads.
struct TlbStateLayout {
  static constexpr Addr loaded_mm = 0;
  static constexpr Addr loaded_mm_asid = 16;
  static constexpr Addr is_lazy = 20;
  static constexpr Addr ctx0_tlb_gen = 40;  ///< ctxs[0].tlb_gen (ctxs @32: ctx_id, tlb_gen)
  static constexpr Addr bytes = 128;
};
/// struct flush_tlb_info (v5.10), per CPU on its own line.
struct FlushInfoLayout {
  static constexpr Addr mm = 0, start = 8, end = 16, new_tlb_gen = 24, stride_shift = 32, freed_tables = 36;
};

/// The kernel's own instructions around the flush, outside its accesses.
struct TlbCosts {
  Tick flush_path = 0;   ///< flush_tlb_mm_range / arch_tlbbatch_flush: get_cpu, range checks, the calls
  Tick handler_path = 0; ///< flush_tlb_func_remote / _common: stat counters, compares, the return
};

/// Counters of the shootdowns.
struct TlbStats {
  std::uint64_t shootdowns = 0;     ///< flush_tlb_others calls (a remote CPU in the mask)
  std::uint64_t local_flushes = 0;  ///< flush_tlb_func_local calls that flushed
  std::uint64_t remote_handlers = 0;  ///< flush_tlb_func_remote runs on other CPUs
  std::uint64_t remote_flushes = 0;   ///< of those, the ones that flushed (gens differed)
  std::uint64_t invlpgs = 0, full_flushes = 0, lazy_switches = 0;
  Tick flush_time = 0;  ///< INVLPG and full-flush time, all CPUs
  Tick remote_flush_time = 0;  ///< of it, in flush_tlb_func_remote on another CPU than the sender
  Tick handler_time = 0;  ///< time inside flush_tlb_func_remote on remote CPUs
};

/// The per-task deferred flush of reclaim (struct tlbflush_unmap_batch in task_struct).
struct TlbBatch {
  Addr cpumask = 0;  ///< arch.cpumask, words of the mask
  bool flush_required = false;
};

/// One process's mm and the machine's TLB state.
class TlbShootdown {
 public:
  /// The mm_struct on `mm_node` (where the process was forked), every CPU's
  /// cpu_tlbstate and flush_tlb_info on its own node. Needs `smp` prepared
  /// (prepare_cfd) and the platform's cpu.invlpg and cpu.tlb_flush_full.
  TlbShootdown(scenario::Machine& m, SmpCall& smp, TlbCosts costs, int mm_node);

  /// switch_mm_irqs_off(prev, mm) on `c`: LOCK BTS of its bit in mm_cpumask,
  /// loaded_mm = mm, is_lazy = 0, the CR3 write (a full flush).
  Task<void> switch_to_mm(cpu::Cpu& c);
  /// enter_lazy_tlb (v5.10): is_lazy = 1; the mm stays loaded and its bit set.
  Task<void> enter_lazy(cpu::Cpu& c);
  /// flush_tlb_mm_range(mm, start, end, stride_shift, freed_tables) from `c`.
  /// `stack_csd`: the on-stack csd smp_call_function_single uses for one target.
  Task<void> flush_tlb_mm_range(cpu::Cpu& c, Addr start, Addr end, int stride_shift, bool freed_tables,
                                Addr stack_csd);
  /// arch_tlbbatch_add_mm(batch, mm), once per PTE try_to_unmap clears.
  Task<void> arch_tlbbatch_add_mm(cpu::Cpu& c, TlbBatch& batch);
  /// arch_tlbbatch_flush(batch) (try_to_unmap_flush): the full flush, locally and on the batch's CPUs.
  Task<void> arch_tlbbatch_flush(cpu::Cpu& c, TlbBatch& batch, Addr stack_csd);
  /// A TlbBatch in the task_struct of a task forked on `node`.
  TlbBatch make_batch(int node, int task);

  const TlbStats& stats() const { return stats_; }
  /// The mm_struct's address (the value of loaded_mm when it is loaded).
  Addr mm() const { return mm_; }
  /// mm->mmap_lock's count word (the rwsem madvise takes for reading).
  Addr mmap_lock() const { return mmap_lock_; }
  /// The cpu_tlbstate of `cpu`.
  Addr tlb_state(int cpu) const { return ts_.at(static_cast<std::size_t>(cpu)); }
  /// The mm's TLB generation now (for checks).
  std::uint64_t mm_tlb_gen() const;

 private:
  /// flush_tlb_func_common(f, local): on the CPU `c`, with interrupts off.
  Task<void> flush_tlb_func_common(cpu::Cpu& c, Addr f, bool local);
  Task<void> flush_tlb_func_remote(cpu::Cpu& c, std::uint64_t info);
  /// native_flush_tlb_others(cpumask, info).
  Task<void> flush_tlb_others(cpu::Cpu& c, const std::vector<int>& mask, Addr info, Addr stack_csd);
  /// Reads the mask words at `mask` (cpumask_any_but, for_each_cpu).
  Task<std::vector<int>> read_mask(cpu::Cpu& c, Addr mask);
  Task<void> flush(cpu::Cpu& c, bool full, std::uint64_t pages, bool remote = false);

  scenario::Machine& m_;
  SmpCall& smp_;
  TlbCosts costs_;
  Tick invlpg_ = 0, full_ = 0;
  Addr mm_ = 0, init_mm_ = 0, mmap_lock_ = 0;
  Addr tlb_gen_ = 0, mm_cpumask_ = 0, init_tlb_gen_ = 0;
  std::vector<Addr> ts_, fi_;
  Addr remote_fn_ = 0;
  TlbStats stats_;
};

}  // namespace cohsim::models::kernel
