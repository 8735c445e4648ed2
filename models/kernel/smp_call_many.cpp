// smp_call_function_many_cond and on_each_cpu_cond_mask as Linux v5.10
// kernel/smp.c has them, with the per-CPU cfd_data of smpcfd_prepare_cpu,
// and x86 native_send_call_func_ipi (arch/x86/kernel/smp.c, v5.10).
// The csd, csd_lock_wait, llist_add, the IPI handler and the send path are
// the ones of smp_call.cpp.
#include <algorithm>
#include <fmt/format.h>

#include "models/kernel/smp_call.hpp"

namespace cohsim::models::kernel {

namespace {
/// Words of a cpumask for `n` CPUs (unsigned long bitmap).
std::size_t mask_words(int n) { return static_cast<std::size_t>((n + 63) / 64); }
Addr round_up(Addr v, Addr a) { return (v + a - 1) / a * a; }
}  // namespace

Addr CfdPlacement::offset(int sender) const {
  // alloc_percpu(call_single_data_t) for CPU `sender` comes after the areas
  // of the CPUs brought up before it and whatever else was allocated in
  // between; pcpu_alloc rounds the start up to the type's alignment.
  const Addr a = alignment();
  const Addr step = round_up(CsdLayout::bytes + gap, a);
  return round_up(first_offset, a) + static_cast<Addr>(sender) * step;
}

void SmpCall::prepare_cfd(const CfdPlacement& placement) {
  // v5.10 kernel/smp.c smpcfd_prepare_cpu(cpu):
  //   zalloc_cpumask_var_node(&cfd->cpumask, GFP_KERNEL, cpu_to_node(cpu));
  //   zalloc_cpumask_var_node(&cfd->cpumask_ipi, GFP_KERNEL, cpu_to_node(cpu));
  //   cfd->csd = alloc_percpu(call_single_data_t);
  // (CONFIG_CPUMASK_OFFSTACK: the masks are bitmaps on the CPU's node.) The
  // percpu chunk has one unit per CPU, on that CPU's node; cfd->csd of
  // sender s for target t is per_cpu_ptr(cfd->csd, t): in t's unit.
  placement_ = placement;
  const int n = m_.cpu_count();
  const Addr mask_bytes = round_up(mask_words(n) * 8, fabric::kLineBytes);
  cfd_.clear();
  csd_units_.clear();
  cfd_lines_.clear();
  for (int s = 0; s < n; ++s) {
    const int node = m_.topology().node_of_cpu(s);
    cfd_.push_back(Cfd{
        m_.memory().alloc(node, mask_bytes, fabric::kLineBytes, fmt::format("cfd_data[{}].cpumask", s)),
        m_.memory().alloc(node, mask_bytes, fabric::kLineBytes, fmt::format("cfd_data[{}].cpumask_ipi", s))});
  }
  offsets_.clear();
  for (int s = 0; s < n; ++s) offsets_.push_back(placement.offset(s));
  const Addr unit_bytes = round_up(offsets_.back() + CsdLayout::bytes, fabric::kLineBytes);
  for (int t = 0; t < n; ++t) {
    // A percpu unit starts page aligned; only the area's offset in it matters.
    csd_units_.push_back(m_.memory().alloc(m_.topology().node_of_cpu(t), unit_bytes, 4096,
                                           fmt::format("percpu unit {}: cfd csd areas", t)));
    for (Addr a = csd_units_.back(); a < csd_units_.back() + unit_bytes; a += fabric::kLineBytes)
      cfd_lines_.push_back(a);
  }
}

Addr SmpCall::cfd_csd(int sender, int target) const {
  if (csd_units_.empty()) throw sim::SimError("cfd csd: prepare_cfd was not called");
  return csd_units_.at(static_cast<std::size_t>(target)) + offsets_.at(static_cast<std::size_t>(sender));
}

Task<void> SmpCall::csd_lock(cpu::Cpu& c, Addr csd) {
  // v5.10 kernel/smp.c csd_lock: csd_lock_wait(csd); csd->flags |= CSD_FLAG_LOCK;
  // smp_wmb() (x86: a compiler barrier; arm64: dmb ishst).
  co_await csd_lock_wait(c, csd);
  co_await c.store(csd + CsdLayout::flags, 4, kCsdFlagLock);
  if (!x86_) co_await c.dmb(cpu::Domain::ish, cpu::BarrierType::st);
}

Task<void> SmpCall::smp_call_function_many_cond(cpu::Cpu& c, const std::vector<int>& mask, Addr func,
                                                std::uint64_t info, bool wait, const CallCond& cond,
                                                Addr stack_csd) {
  if (cfd_.empty()) throw sim::SimError("smp_call_function_many_cond: prepare_cfd was not called");
  const int self = c.id();
  const int n = m_.cpu_count();
  std::vector<int> others;  // mask & cpu_online_mask minus this CPU, ascending (for_each_cpu)
  for (int t : mask) {
    if (t < 0 || t >= n) throw sim::SimError(fmt::format("smp_call_function_many_cond: no cpu {}", t));
    if (t != self) others.push_back(t);
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  sim::TraceScope trace(c.sim().tracer(), self, "smp_call_function_many_cond", "kernel", c.sim().now());
  // cpumask_first_and / cpumask_next_and: no other CPU, return; one: the fastpath.
  if (others.empty()) co_return;
  if (others.size() == 1) {
    if (!cond || co_await cond(c, others.front()))
      co_await smp_call_function_single(c, others.front(), func, info, wait, stack_csd);
    co_return;
  }
  ++many_calls_;
  co_await c.compute(costs_.call_path);
  const Cfd& cfd = cfd_[static_cast<std::size_t>(self)];
  const std::size_t words = mask_words(n);
  // cpumask_and(cfd->cpumask, mask, cpu_online_mask); __cpumask_clear_cpu(this_cpu, ...);
  // cpumask_weight(cfd->cpumask); cpumask_clear(cfd->cpumask_ipi).
  std::vector<std::uint64_t> bits(words, 0);
  for (int t : others) bits[static_cast<std::size_t>(t / 64)] |= 1ull << (t % 64);
  for (std::size_t w = 0; w < words; ++w) co_await c.store(cfd.cpumask + 8 * w, 8, bits[w]);
  for (std::size_t w = 0; w < words; ++w) co_await c.load(cfd.cpumask + 8 * w, 8);
  for (std::size_t w = 0; w < words; ++w) co_await c.store(cfd.cpumask_ipi + 8 * w, 8, 0);
  std::vector<std::uint64_t> ipi_bits(words, 0);
  std::vector<int> ipi;
  for (int t : others) {
    const Addr csd = cfd_csd(self, t);
    if (cond && !(co_await cond(c, t))) continue;
    const Tick t_csd = own_time(c);
    co_await csd_lock(c, csd);
    if (wait) co_await c.store(csd + CsdLayout::flags, 4, kCsdFlagLock | kCsdTypeSync);
    co_await c.store(csd + CsdLayout::func, 8, func);
    co_await c.store(csd + CsdLayout::info, 8, info);
    auto dst = std::find_if(csd_dst_.begin(), csd_dst_.end(), [csd](const auto& e) { return e.first == csd; });
    if (dst == csd_dst_.end()) csd_dst_.emplace_back(csd, t);
    else dst->second = t;
    const Tick t_queue = own_time(c);
    phases_.csd += t_queue - t_csd;
    const bool first = co_await llist_add(c, csd + CsdLayout::next, call_single_queue(t));
    phases_.queue += own_time(c) - t_queue;
    if (first) {
      // __cpumask_set_cpu(cpu, cfd->cpumask_ipi): a plain read-modify-write.
      const std::size_t w = static_cast<std::size_t>(t / 64);
      ipi_bits[w] |= 1ull << (t % 64);
      co_await c.store(cfd.cpumask_ipi + 8 * w, 8, ipi_bits[w]);
      ipi.push_back(t);
    } else {
      ++queued_without_ipi_;
    }
  }
  const Tick t_ipi = own_time(c);
  co_await send_call_function_ipi_mask(c, ipi);
  const Tick t_wait = own_time(c);
  phases_.ipi += t_wait - t_ipi;
  if (wait)
    for (int t : others) co_await csd_lock_wait(c, cfd_csd(self, t));
  phases_.wait += own_time(c) - t_wait;
  trace.finish(c.sim().now());
}

Task<void> SmpCall::on_each_cpu_cond_mask(cpu::Cpu& c, const std::vector<int>& mask, Addr func, std::uint64_t info,
                                          bool wait, const CallCond& cond, Addr stack_csd) {
  // v5.10 kernel/smp.c: preempt_disable(); smp_call_function_many_cond(...);
  // if (cpumask_test_cpu(cpu, mask) && cond_func(cpu, info)) {
  //   local_irq_save(flags); func(info); local_irq_restore(flags); }
  co_await smp_call_function_many_cond(c, mask, func, info, wait, cond, stack_csd);
  if (std::find(mask.begin(), mask.end(), c.id()) == mask.end()) co_return;
  if (cond && !(co_await cond(c, c.id()))) co_return;
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  co_await call(c, func, info);
  if (were_enabled) co_await c.local_irq_enable();
}

Task<void> SmpCall::send_call_function_ipi_mask(cpu::Cpu& c, const std::vector<int>& mask) {
  // arm64: smp_cross_call(mask, IPI_CALL_FUNC). x86 v5.10 native_send_call_func_ipi:
  //   if (static_branch_likely(&apic_use_ipi_shorthand)) {
  //     if (!cpumask_or_equal(mask, cpumask_of(cpu), cpu_online_mask)) goto sendmask;
  //     ... apic->send_IPI_allbutself(CALL_FUNCTION_VECTOR); return; }
  //   sendmask: apic->send_IPI_mask(mask, CALL_FUNCTION_VECTOR);
  // An empty mask still runs the driver's fence (x2APIC) or barrier (GIC).
  ipis_sent_ += mask.size();
  ++many_sends_;
  const int n = m_.cpu_count();
  if (x86_ && shorthand_ && static_cast<int>(mask.size()) + 1 == n) {
    co_await ipi_.send_ipi_allbutself(c, kCallFunctionVector, n);
    co_return;
  }
  co_await ipi_.send_ipi(c, mask, x86_ ? kCallFunctionVector : kIpiCallFunc);
}

}  // namespace cohsim::models::kernel
