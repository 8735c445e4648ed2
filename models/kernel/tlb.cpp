#include "models/kernel/tlb.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace cohsim::models::kernel {

using cpu::Order;

namespace {
std::size_t mask_words(int n) { return static_cast<std::size_t>((n + 63) / 64); }
}  // namespace

TlbShootdown::TlbShootdown(scenario::Machine& m, SmpCall& smp, TlbCosts costs, int mm_node)
    : m_(m), smp_(smp), costs_(costs) {
  const cpu::CpuParams& p = m.cpu_params();
  if (p.arch != "x86") throw sim::SimError("the TLB shootdown model is x86 (arch/x86/mm/tlb.c)");
  if (!p.has_tlb_costs)
    throw config::ConfigError(m.platform().file, "platform.cpu.invlpg",
                              "missing: the TLB shootdown model needs the core's INVLPG and full-flush costs "
                              "(cpu.invlpg and cpu.tlb_flush_full, {\"value\", \"source\", \"range\"})");
  invlpg_ = p.invlpg;
  full_ = p.tlb_flush_full;
  const int n = m.cpu_count();
  fabric::MemoryMap& mem = m.memory();
  // mm_struct (allocate_mm at fork, on the forking CPU's node): mmap_lock,
  // context.tlb_gen and the mm_cpumask bitmap at its end, on lines of their own.
  mm_ = mem.alloc(mm_node, fabric::kLineBytes, fabric::kLineBytes, "mm_struct");
  mmap_lock_ = mem.alloc(mm_node, fabric::kLineBytes, fabric::kLineBytes, "mm_struct.mmap_lock");
  tlb_gen_ = mem.alloc(mm_node, fabric::kLineBytes, fabric::kLineBytes, "mm_struct.context.tlb_gen");
  const Addr mask_bytes = (mask_words(n) * 8 + fabric::kLineBytes - 1) / fabric::kLineBytes * fabric::kLineBytes;
  mm_cpumask_ = mem.alloc(mm_node, mask_bytes, fabric::kLineBytes, "mm_struct.cpu_bitmap (mm_cpumask)");
  init_mm_ = mem.alloc(0, fabric::kLineBytes, fabric::kLineBytes, "init_mm");
  init_tlb_gen_ = mem.alloc(0, fabric::kLineBytes, fabric::kLineBytes, "init_mm.context.tlb_gen");
  m.fabric().poke(tlb_gen_, 8, 1);  // init_new_context: atomic64_set(&mm->context.tlb_gen, 0); exec's flush made it 1
  for (int c = 0; c < n; ++c) {
    const int node = m.topology().node_of_cpu(c);
    // DEFINE_PER_CPU_SHARED_ALIGNED(struct tlb_state, cpu_tlbstate); v5.10
    // DEFINE_PER_CPU_SHARED_ALIGNED(struct flush_tlb_info, flush_tlb_info).
    ts_.push_back(mem.alloc(node, TlbStateLayout::bytes, fabric::kLineBytes, fmt::format("cpu_tlbstate[{}]", c)));
    fi_.push_back(mem.alloc(node, fabric::kLineBytes, fabric::kLineBytes, fmt::format("flush_tlb_info[{}]", c)));
    m.fabric().poke(ts_.back() + TlbStateLayout::loaded_mm, 8, init_mm_);
  }
  remote_fn_ = smp.register_function(
      [this](cpu::Cpu& c, std::uint64_t info) { return flush_tlb_func_remote(c, info); });
}

std::uint64_t TlbShootdown::mm_tlb_gen() const { return m_.fabric().peek(tlb_gen_, 8); }

TlbBatch TlbShootdown::make_batch(int node, int task) {
  TlbBatch b;
  b.cpumask = m_.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes,
                                fmt::format("task {}: tlb_ubc.arch.cpumask", task));
  return b;
}

Task<std::vector<int>> TlbShootdown::read_mask(cpu::Cpu& c, Addr mask) {
  std::vector<int> cpus;
  const int n = m_.cpu_count();
  for (std::size_t w = 0; w < mask_words(n); ++w) {
    const std::uint64_t bits = co_await c.load(mask + 8 * w, 8);
    for (int b = 0; b < 64; ++b)
      if (bits & (1ull << b)) cpus.push_back(static_cast<int>(w * 64) + b);
  }
  co_return cpus;
}

Task<void> TlbShootdown::switch_to_mm(cpu::Cpu& c) {
  // v5.10 switch_mm_irqs_off(prev, next): cpumask_set_cpu(cpu, mm_cpumask(next))
  // (LOCK BTS); this_cpu_write(cpu_tlbstate.loaded_mm, next); is_lazy = false;
  // ctxs[asid].tlb_gen = next's tlb_gen; load_new_mm_cr3 (a full flush).
  const Addr ts = tlb_state(c.id());
  co_await c.rmw(mm_cpumask_ + 8 * static_cast<Addr>(c.id() / 64), 8, fabric::RmwOp::bit_or, 1ull << (c.id() % 64));
  const std::uint64_t gen = co_await c.load(tlb_gen_, 8);
  co_await c.store(ts + TlbStateLayout::loaded_mm, 8, mm_);
  co_await c.store(ts + TlbStateLayout::is_lazy, 1, 0);
  co_await c.store(ts + TlbStateLayout::ctx0_tlb_gen, 8, gen);
  co_await flush(c, true, 0);
}

Task<void> TlbShootdown::enter_lazy(cpu::Cpu& c) {
  // v5.10 enter_lazy_tlb: if (this_cpu_read(cpu_tlbstate.loaded_mm) == &init_mm) return;
  // this_cpu_write(cpu_tlbstate.is_lazy, true);
  co_await c.store(tlb_state(c.id()) + TlbStateLayout::is_lazy, 1, 1);
}

Task<void> TlbShootdown::flush(cpu::Cpu& c, bool full, std::uint64_t pages, bool remote) {
  const Tick t = full ? full_ : invlpg_ * static_cast<Tick>(pages);
  if (full) ++stats_.full_flushes;
  else stats_.invlpgs += pages;
  stats_.flush_time += t;
  if (remote) stats_.remote_flush_time += t;
  co_await c.compute(t);
}

Task<void> TlbShootdown::flush_tlb_mm_range(cpu::Cpu& c, Addr start, Addr end, int stride_shift, bool freed_tables,
                                            Addr stack_csd) {
  // v5.10 arch/x86/mm/tlb.c flush_tlb_mm_range.
  sim::TraceScope trace(c.sim().tracer(), c.id(), "flush_tlb_mm_range", "kernel", c.sim().now());
  co_await c.compute(costs_.flush_path);
  if (end == kTlbFlushAll || ((end - start) >> stride_shift) > kTlbSinglePageFlushCeiling) {
    start = 0;
    end = kTlbFlushAll;
  }
  // inc_mm_tlb_gen: atomic64_inc_return (LOCK XADD, a full barrier that
  // orders the PTE writes before the mm_cpumask read).
  const std::uint64_t new_gen = co_await c.rmw(tlb_gen_, 8, fabric::RmwOp::add, 1, 0, Order::full) + 1;
  // get_flush_tlb_info: this CPU's flush_tlb_info.
  const Addr f = fi_.at(static_cast<std::size_t>(c.id()));
  co_await c.store(f + FlushInfoLayout::mm, 8, mm_);
  co_await c.store(f + FlushInfoLayout::start, 8, start);
  co_await c.store(f + FlushInfoLayout::end, 8, end);
  co_await c.store(f + FlushInfoLayout::new_tlb_gen, 8, new_gen);
  co_await c.store(f + FlushInfoLayout::stride_shift, 4, static_cast<std::uint64_t>(stride_shift));
  co_await c.store(f + FlushInfoLayout::freed_tables, 1, freed_tables ? 1 : 0);
  if (co_await c.load(tlb_state(c.id()) + TlbStateLayout::loaded_mm, 8) == mm_) {
    const bool were_enabled = c.interrupts_enabled();
    c.local_irq_disable();
    co_await flush_tlb_func_common(c, f, true);
    if (were_enabled) co_await c.local_irq_enable();
  }
  // if (cpumask_any_but(mm_cpumask(mm), cpu) < nr_cpu_ids) flush_tlb_others(mm_cpumask(mm), info);
  const std::vector<int> mask = co_await read_mask(c, mm_cpumask_);
  if (mask.size() > (std::find(mask.begin(), mask.end(), c.id()) != mask.end() ? 1u : 0u))
    co_await flush_tlb_others(c, mask, f, stack_csd);
  trace.finish(c.sim().now());
}

Task<void> TlbShootdown::flush_tlb_others(cpu::Cpu& c, const std::vector<int>& mask, Addr info, Addr stack_csd) {
  // v5.10 native_flush_tlb_others:
  //   if (info->freed_tables) smp_call_function_many(cpumask, flush_tlb_func_remote, info, 1);
  //   else on_each_cpu_cond_mask(tlb_is_not_lazy, flush_tlb_func_remote, info, 1, cpumask);
  ++stats_.shootdowns;
  const bool freed = (co_await c.load(info + FlushInfoLayout::freed_tables, 1)) != 0;
  if (freed) {
    co_await smp_.smp_call_function_many_cond(c, mask, remote_fn_, info, true, nullptr, stack_csd);
    co_return;
  }
  // tlb_is_not_lazy(cpu): !per_cpu(cpu_tlbstate.is_lazy, cpu), a load of the
  // target's tlb_state line (which the target writes at every flush).
  const CallCond not_lazy = [this](cpu::Cpu& s, int t) -> Task<bool> {
    co_return (co_await s.load(tlb_state(t) + TlbStateLayout::is_lazy, 1)) == 0;
  };
  co_await smp_.on_each_cpu_cond_mask(c, mask, remote_fn_, info, true, not_lazy, stack_csd);
}

Task<void> TlbShootdown::flush_tlb_func_remote(cpu::Cpu& c, std::uint64_t info) {
  // v5.10: inc_irq_stat(irq_tlb_count); if (f->mm && f->mm != loaded_mm) return;
  // flush_tlb_func_common(f, false, TLB_REMOTE_SHOOTDOWN). On the sender
  // itself (on_each_cpu_cond_mask's local call) it is flush_tlb_func_remote too.
  const Tick t0 = c.sim().now();
  const bool remote = info != fi_.at(static_cast<std::size_t>(c.id()));
  co_await c.compute(costs_.handler_path);
  const Addr f_mm = co_await c.load(info + FlushInfoLayout::mm, 8);
  const Addr loaded = co_await c.load(tlb_state(c.id()) + TlbStateLayout::loaded_mm, 8);
  if (f_mm == 0 || f_mm == loaded) co_await flush_tlb_func_common(c, info, false);
  if (remote) {
    ++stats_.remote_handlers;
    stats_.handler_time += c.sim().now() - t0;
  }
}

Task<void> TlbShootdown::flush_tlb_func_common(cpu::Cpu& c, Addr f, bool local) {
  // v5.10 flush_tlb_func_common.
  const Addr ts = tlb_state(c.id());
  const Addr loaded_mm = co_await c.load(ts + TlbStateLayout::loaded_mm, 8);
  co_await c.load(ts + TlbStateLayout::loaded_mm_asid, 2);
  if (loaded_mm == init_mm_) co_return;
  const std::uint64_t mm_gen = co_await c.load(tlb_gen_, 8);  // atomic64_read(&loaded_mm->context.tlb_gen)
  const std::uint64_t local_gen = co_await c.load(ts + TlbStateLayout::ctx0_tlb_gen, 8);
  if (co_await c.load(ts + TlbStateLayout::is_lazy, 1)) {
    // switch_mm_irqs_off(NULL, &init_mm, NULL): leave the mm (its bit cleared, LOCK BTR), load init_mm's CR3.
    ++stats_.lazy_switches;
    co_await c.rmw(mm_cpumask_ + 8 * static_cast<Addr>(c.id() / 64), 8, fabric::RmwOp::andnot, 1ull << (c.id() % 64));
    co_await c.store(ts + TlbStateLayout::loaded_mm, 8, init_mm_);
    co_await c.store(ts + TlbStateLayout::is_lazy, 1, 0);
    co_await flush(c, true, 0);
    co_return;
  }
  if (local_gen == mm_gen) co_return;  // an earlier flush covered this one
  const Addr start = co_await c.load(f + FlushInfoLayout::start, 8);
  const Addr end = co_await c.load(f + FlushInfoLayout::end, 8);
  const std::uint64_t new_gen = co_await c.load(f + FlushInfoLayout::new_tlb_gen, 8);
  const std::uint64_t stride = co_await c.load(f + FlushInfoLayout::stride_shift, 4);
  if (end != kTlbFlushAll && new_gen == local_gen + 1 && new_gen == mm_gen) {
    co_await flush(c, false, (end - start) >> stride, !local);  // flush_tlb_one_user per page
  } else {
    co_await flush(c, true, 0, !local);  // flush_tlb_local: reload CR3 of the current PCID
  }
  if (local) ++stats_.local_flushes;
  else ++stats_.remote_flushes;
  co_await c.store(ts + TlbStateLayout::ctx0_tlb_gen, 8, mm_gen);
}

Task<void> TlbShootdown::arch_tlbbatch_add_mm(cpu::Cpu& c, TlbBatch& batch) {
  // v5.10 arch_tlbbatch_add_mm: inc_mm_tlb_gen(mm);
  // cpumask_or(&batch->cpumask, &batch->cpumask, mm_cpumask(mm)).
  co_await c.rmw(tlb_gen_, 8, fabric::RmwOp::add, 1, 0, Order::full);
  const int n = m_.cpu_count();
  for (std::size_t w = 0; w < mask_words(n); ++w) {
    const std::uint64_t mm_bits = co_await c.load(mm_cpumask_ + 8 * w, 8);
    const std::uint64_t bits = co_await c.load(batch.cpumask + 8 * w, 8);
    co_await c.store(batch.cpumask + 8 * w, 8, bits | mm_bits);
  }
  batch.flush_required = true;
}

Task<void> TlbShootdown::arch_tlbbatch_flush(cpu::Cpu& c, TlbBatch& batch, Addr stack_csd) {
  // v5.10 mm/rmap.c try_to_unmap_flush -> arch_tlbbatch_flush:
  //   info = get_flush_tlb_info(NULL, 0, TLB_FLUSH_ALL, 0, false, 0);
  //   if (cpumask_test_cpu(cpu, &batch->cpumask)) { irqs off; flush_tlb_func_local(info); }
  //   if (cpumask_any_but(&batch->cpumask, cpu) < nr_cpu_ids) flush_tlb_others(&batch->cpumask, info);
  //   cpumask_clear(&batch->cpumask);
  if (!batch.flush_required) co_return;
  sim::TraceScope trace(c.sim().tracer(), c.id(), "arch_tlbbatch_flush", "kernel", c.sim().now());
  co_await c.compute(costs_.flush_path);
  const Addr f = fi_.at(static_cast<std::size_t>(c.id()));
  co_await c.store(f + FlushInfoLayout::mm, 8, 0);
  co_await c.store(f + FlushInfoLayout::start, 8, 0);
  co_await c.store(f + FlushInfoLayout::end, 8, kTlbFlushAll);
  co_await c.store(f + FlushInfoLayout::new_tlb_gen, 8, 0);
  co_await c.store(f + FlushInfoLayout::stride_shift, 4, 0);
  co_await c.store(f + FlushInfoLayout::freed_tables, 1, 0);
  const std::vector<int> mask = co_await read_mask(c, batch.cpumask);
  const bool self = std::find(mask.begin(), mask.end(), c.id()) != mask.end();
  if (self) {
    const bool were_enabled = c.interrupts_enabled();
    c.local_irq_disable();
    co_await flush_tlb_func_common(c, f, true);
    if (were_enabled) co_await c.local_irq_enable();
  }
  if (mask.size() > (self ? 1u : 0u)) co_await flush_tlb_others(c, mask, f, stack_csd);
  for (std::size_t w = 0; w < mask_words(m_.cpu_count()); ++w) co_await c.store(batch.cpumask + 8 * w, 8, 0);
  batch.flush_required = false;
  trace.finish(c.sim().now());
}

}  // namespace cohsim::models::kernel
