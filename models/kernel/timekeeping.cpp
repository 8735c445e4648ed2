#include "models/kernel/timekeeping.hpp"

#include <stdexcept>

namespace cohsim::models::kernel {

using cpu::Order;

namespace {
/// The kernel function a clock read runs in, as a timeline slice name.
const char* clocksource_read_name(Clocksource c) {
  switch (c) {
    case Clocksource::tsc: return "read_tsc";
    case Clocksource::hpet: return "read_hpet";
    case Clocksource::hpet_shared: return "read_hpet (shared)";
    case Clocksource::uv_rtc: return "uv_read_rtc";
  }
  return "?";
}
}  // namespace

Clocksource parse_clocksource(const std::string& name) {
  if (name == "tsc") return Clocksource::tsc;
  if (name == "hpet") return Clocksource::hpet;
  if (name == "hpet-shared") return Clocksource::hpet_shared;
  if (name == "uv-rtc") return Clocksource::uv_rtc;
  throw std::invalid_argument("unknown clocksource '" + name + "' (tsc, hpet, hpet-shared, uv-rtc)");
}

Timekeeping::Timekeeping(scenario::Machine& m, devices::Hpet& hpet, Clocksource cs, WallTimeRead wall_read,
                         const TimekeepingCosts& costs, devices::UvRtc* rtc)
    : hpet_(hpet), rtc_(rtc), cs_(cs), wall_read_(wall_read), costs_(costs) {
  switch (cs) {
    case Clocksource::tsc:
      hz_ = m.cpu_params().clock_hz;
      mask_ = ~0ull;  // CLOCKSOURCE_MASK(64)
      break;
    case Clocksource::hpet:
    case Clocksource::hpet_shared:
      hz_ = hpet.params().counter_hz;
      mask_ = 0xffffffffull;  // CLOCKSOURCE_MASK(32)
      break;
    case Clocksource::uv_rtc:
      if (rtc == nullptr) throw std::invalid_argument("clocksource uv-rtc needs the platform's hub RTC (uv_rtc)");
      hz_ = rtc->params().counter_hz;
      mask_ = (1ull << 56) - 1;  // UVH_RTC_REAL_TIME_CLOCK_MASK: a 56-bit counter
      break;
  }
  auto& mem = m.memory();
  // Static data of the kernel image: node 0 (kernel/time/timekeeping.c, arch/x86/kernel/hpet.c, vvar page).
  tk_core_ = mem.alloc(0, TkCoreLayout::bytes, 64, "tk_core");
  timekeeper_lock_ = mem.alloc(0, 64, 64, "timekeeper_lock");
  hpet_word_ = mem.alloc(0, 64, 64, "hpet (union hpet_lock)");
  gtod_ = mem.alloc(0, GtodLayout::bytes, 64, "vsyscall_gtod_data");
  qnodes_.emplace(mem, m.topology());
  acct_.resize(static_cast<std::size_t>(m.cpu_count()));
}

std::int64_t Timekeeping::cycles_to_ns(std::uint64_t delta) const {
  return static_cast<std::int64_t>(static_cast<long double>(delta) * 1e9L / static_cast<long double>(hz_));
}

// rdtsc (vread_tsc / read_tsc), hpet_readl(HPET_COUNTER) (vread_hpet / read_hpet)
// or uv_read_local_mmr(UVH_RTC | own line) (uv_read_rtc).
Task<std::uint64_t> Timekeeping::read_counter(cpu::Cpu& c) {
  if (cs_ == Clocksource::tsc) {
    co_await c.sim().delay(c.params().tsc_read);  // one instruction: not interruptible
    const auto now = static_cast<unsigned __int128>(c.sim().now());
    co_return static_cast<std::uint64_t>(now * static_cast<unsigned __int128>(hz_) / 1'000'000'000'000ull);
  }
  if (cs_ == Clocksource::uv_rtc) co_return co_await rtc_->read(c.id());
  co_return co_await devices::hpet_read_counter(c, hpet_);
}

// read_hpet with the 2016 patch (Linux 4.7 arch/x86/kernel/hpet.c): one
// 8-byte word {u32 lock (arch_spinlock_t); u32 value} on its own line.
// Interrupts are taken at local_irq_restore and, with the caller's interrupts
// enabled (ktime_get in process context; not from the tick handler), during
// the contended wait.
Task<std::uint64_t> Timekeeping::read_hpet_shared(cpu::Cpu& c) {
  const Qspinlock hpet_lock{hpet_word_, &*qnodes_};
  auto restore_irqs = [&](bool was_enabled) -> Task<void> {
    if (was_enabled) co_await c.local_irq_enable();
  };
  // 1. old.lockval = READ_ONCE(hpet.lockval); if locked: contended.
  const std::uint64_t old = co_await c.load(hpet_word_, 8);
  if ((old & 0xffffffffull) == 0) {
    // 2. local_irq_save; arch_spin_trylock (queued_spin_trylock).
    const bool was_enabled = c.interrupts_enabled();
    c.local_irq_disable();
    const bool taken = co_await queued_spin_trylock(c, hpet_lock);
    if (taken) {
      // 3. new.value = hpet_readl(HPET_COUNTER); WRITE_ONCE(hpet.value); arch_spin_unlock.
      const Tick locked = c.sim().now();
      const std::uint32_t value = co_await devices::hpet_read_counter(c, hpet_);
      co_await c.store(hpet_word_ + 4, 4, value);
      co_await queued_spin_unlock(c, hpet_lock);
      if (recording_) shared_reads_.push_back({c.id(), locked, c.sim().now(), value});
      co_await restore_irqs(was_enabled);
      co_return value;
    }
    co_await restore_irqs(was_enabled);
  }
  // 4. Contended: cpu_relax; reload until the value changed or the lock is free.
  const std::uint64_t seen = co_await c.spin_until(
      hpet_word_, 8,
      [old](std::uint64_t v) { return (v >> 32) != (old >> 32) || (v & 0xffffffffull) == 0; }, Order::relaxed,
      "hpet_lock (read_hpet, contended)");
  co_return seen >> 32;
}

Task<std::uint64_t> Timekeeping::read_clocksource(cpu::Cpu& c) {
  const Tick start = c.sim().now();
  const Tick irq_before = c.stats().interrupt_time;  // interrupts taken inside are not the read's time
  std::uint64_t cycles = cs_ == Clocksource::hpet_shared ? co_await read_hpet_shared(c) : co_await read_counter(c);
  if (auto* tr = c.sim().tracer()) tr->slice(c.id(), clocksource_read_name(cs_), "clock", start, c.sim().now());
  if (in_window(c.sim().now())) {
    const Tick spent = c.sim().now() - start - (c.stats().interrupt_time - irq_before);
    auto& a = acct_[static_cast<std::size_t>(c.id())];
    a.read_fn += spent;
    ++a.read_fn_calls;
    read_latency_.add(spent);
  }
  co_return cycles;
}

// ktime_get (Linux 4.6 kernel/time/timekeeping.c):
//   do { seq = read_seqcount_begin(&tk_core.seq); base = tk->tkr_mono.base;
//        nsecs = timekeeping_get_ns(&tk->tkr_mono); } while (read_seqcount_retry(&tk_core.seq, seq));
Task<std::int64_t> Timekeeping::ktime_get(cpu::Cpu& c) {
  Tick retry_time = 0;  // spinning on an odd sequence, and failed passes outside their clock reads
  std::uint64_t retries = 0;
  const Addr seq_addr = tk_core_ + TkCoreLayout::seq;
  for (;;) {
    // read_seqcount_begin: cpu_relax while the sequence is odd (a writer is active).
    std::uint64_t seq = co_await c.load(seq_addr, 4);
    if (seq & 1) {
      const Tick spin_from = c.sim().now(), irq_before = c.stats().interrupt_time;
      do {  // interrupts enabled in process context: one may be taken while it waits
        co_await c.wait_for_change(seq_addr, "tk_core.seq (writer active)");
        seq = co_await c.load(seq_addr, 4);
      } while (seq & 1);
      retry_time += c.sim().now() - spin_from - (c.stats().interrupt_time - irq_before);
    }
    const Tick pass = c.sim().now();
    const std::uint64_t base = co_await c.load(tk_core_ + TkCoreLayout::base, 8);
    const std::uint64_t cycle_last = co_await c.load(tk_core_ + TkCoreLayout::cycle_last, 8);
    const Tick read_start = c.sim().now();
    const std::uint64_t cycles = co_await read_clocksource(c);
    const Tick read_time = c.sim().now() - read_start;
    // read_seqcount_retry: smp_rmb (a compiler barrier on x86), reload.
    if (co_await c.load(seq_addr, 4) == seq) {
      co_await c.sim().delay(costs_.ktime_get_overhead);
      if (in_window(c.sim().now())) {
        auto& a = acct_[static_cast<std::size_t>(c.id())];
        a.seq_retry += retry_time;
        ++a.ktime_calls;
        a.ktime_retries += retries;
      }
      co_return static_cast<std::int64_t>(base) + cycles_to_ns((cycles - cycle_last) & mask_);
    }
    ++retries;
    retry_time += c.sim().now() - pass - read_time;
  }
}

// update_wall_time (Linux 4.6 kernel/time/timekeeping.c), on the do_timer CPU
// from its tick: raw_spin_lock_irqsave(&timekeeper_lock); read the clock;
// write_seqcount_begin(&tk_core.seq); timekeeping_update (update_vsyscall:
// the vvar page under its own seqcount) and memcpy of the shadow timekeeper
// into tk_core; write_seqcount_end; raw_spin_unlock_irqrestore.
Task<void> Timekeeping::update_wall_time(cpu::Cpu& c) {
  const bool was_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  const Qspinlock timekeeper_lock{timekeeper_lock_, &*qnodes_};
  co_await queued_spin_lock(c, timekeeper_lock);  // raw_spin_lock
  std::uint64_t cycles = 0;
  if (wall_read_ == WallTimeRead::before_write_side) cycles = co_await read_clocksource(c);
  const Addr seq_addr = tk_core_ + TkCoreLayout::seq;
  const std::uint64_t seq = co_await c.load(seq_addr, 4);
  co_await c.store(seq_addr, 4, seq + 1);  // write_seqcount_begin; smp_wmb is a compiler barrier on x86
  if (wall_read_ == WallTimeRead::inside_write_side) cycles = co_await read_clocksource(c);
  const std::uint64_t base = co_await c.load(tk_core_ + TkCoreLayout::base, 8);
  const std::uint64_t cycle_last = co_await c.load(tk_core_ + TkCoreLayout::cycle_last, 8);
  const std::uint64_t new_base = base + static_cast<std::uint64_t>(cycles_to_ns((cycles - cycle_last) & mask_));
  // update_vsyscall: gtod_write_begin, the clock fields, gtod_write_end.
  const std::uint64_t gseq = co_await c.load(gtod_ + GtodLayout::seq, 4);
  co_await c.store(gtod_ + GtodLayout::seq, 4, gseq + 1);
  co_await c.store(gtod_ + GtodLayout::cycle_last, 8, cycles);
  co_await c.store(gtod_ + GtodLayout::base, 8, new_base);
  co_await c.store(gtod_ + GtodLayout::seq, 4, gseq + 2);
  // memcpy(real_tk, tk, sizeof(*tk)): every line of the timekeeper is written.
  co_await c.store(tk_core_ + TkCoreLayout::cycle_last, 8, cycles);
  co_await c.store(tk_core_ + TkCoreLayout::base, 8, new_base);
  for (Addr off = 64; off < TkCoreLayout::bytes; off += 64) co_await c.store(tk_core_ + off, 8, new_base);
  co_await c.store(seq_addr, 4, seq + 2);  // write_seqcount_end
  co_await queued_spin_unlock(c, timekeeper_lock);  // raw_spin_unlock
  if (in_window(c.sim().now())) ++acct_[static_cast<std::size_t>(c.id())].wall_time_updates;
  if (was_enabled) co_await c.local_irq_enable();
}

// __vdso_clock_gettime(CLOCK_MONOTONIC) (Linux 4.6 vclock_gettime.c do_monotonic):
//   do { seq = gtod_read_begin(gtod); ns = gtod->monotonic_time_snsec + vgetsns(&mode) ...
//   } while (unlikely(gtod_read_retry(gtod, seq)));   vgetsns: vread_tsc or vread_hpet.
// A clocksource without a vDSO read mode (uv_rtc: vclock_mode VCLOCK_NONE)
// sends the vDSO to vdso_fallback_gettime, the clock_gettime system call:
// entry and exit, then ktime_get with interrupts on.
Task<std::int64_t> Timekeeping::vdso_clock_gettime(cpu::Cpu& c) {
  const Tick start = c.sim().now();
  const Addr seq_addr = gtod_ + GtodLayout::seq;
  std::int64_t ns = 0;
  Tick in_read_fn = 0;  // the fallback's clocksource read, accounted as read_fn
  if (cs_ == Clocksource::uv_rtc) {
    const Tick read_before = acct_[static_cast<std::size_t>(c.id())].read_fn;
    co_await c.sim().delay(costs_.syscall_overhead);
    ns = co_await ktime_get(c);
    in_read_fn = acct_[static_cast<std::size_t>(c.id())].read_fn - read_before;
  }
  while (cs_ != Clocksource::uv_rtc) {
    const std::uint64_t seq = co_await c.spin_until(
        seq_addr, 4, [](std::uint64_t s) { return (s & 1) == 0; }, Order::relaxed, "vsyscall_gtod_data.seq");
    const std::uint64_t cycle_last = co_await c.load(gtod_ + GtodLayout::cycle_last, 8);
    const std::uint64_t base = co_await c.load(gtod_ + GtodLayout::base, 8);
    const std::uint64_t cycles = co_await read_counter(c);
    if (co_await c.load(seq_addr, 4) == seq) {
      ns = static_cast<std::int64_t>(base) + cycles_to_ns((cycles - cycle_last) & mask_);
      break;
    }
  }
  co_await c.sim().delay(costs_.vdso_overhead);
  if (auto* tr = c.sim().tracer()) tr->slice(c.id(), "vDSO clock_gettime", "clock", start, c.sim().now());
  if (in_window(c.sim().now())) {
    auto& a = acct_[static_cast<std::size_t>(c.id())];
    a.vdso += c.sim().now() - start - in_read_fn;
    ++a.vdso_calls;
    vdso_latency_.add(c.sim().now() - start);
  }
  co_return ns;
}

}  // namespace cohsim::models::kernel
