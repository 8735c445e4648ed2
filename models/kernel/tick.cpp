#include "models/kernel/tick.hpp"

#include <cmath>
#include <stdexcept>

#include "cohsim/sim/random.hpp"

namespace cohsim::models::kernel {

TickSkew parse_tick_skew(const std::string& name) {
  if (name == "random") return TickSkew::random;
  if (name == "spread") return TickSkew::spread;
  if (name == "none") return TickSkew::none;
  if (name == "kernel_skew") return TickSkew::kernel_skew;
  throw std::invalid_argument("unknown tick skew '" + name + "' (random, spread, none, kernel_skew)");
}

Tick LocalTimerTick::kernel_offset(Tick period, int ncpus, int cpu, bool skew_tick) {
  if (!skew_tick) return 0;
  // u64 offset = ktime_to_ns(tick_period) >> 1; do_div(offset, num_possible_cpus()); offset *= smp_processor_id();
  return (period / 2) / static_cast<Tick>(ncpus) * static_cast<Tick>(cpu);
}

LocalTimerTick::LocalTimerTick(scenario::Machine& m, double hz, TickSkew skew, std::vector<int> cpus, Handler work)
    : m_(m), period_(static_cast<Tick>(std::llround(1e12 / hz))), work_(std::move(work)) {
  const auto n = static_cast<std::size_t>(m.cpu_count());
  offsets_.assign(n, 0);
  fired_.assign(n, 0);
  handled_.assign(n, 0);
  idle_.assign(n, false);
  late_.assign(n, 0);
  starts_.resize(n);
  sim::RandomStream rng(m.seed(), "tick.skew");
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    const auto cpu = static_cast<std::size_t>(cpus[i]);
    if (skew == TickSkew::random) offsets_[cpu] = rng.below(period_);
    if (skew == TickSkew::spread) offsets_[cpu] = period_ * i / cpus.size();
    if (skew == TickSkew::kernel_skew) offsets_[cpu] = kernel_offset(period_, m.cpu_count(), cpus[i], true);
    m.cpu(cpus[i]).set_interrupt_handler([this](cpu::Cpu& c) { return on_interrupt(c); });
  }
  cpus_ = std::move(cpus);
}

void LocalTimerTick::start(Tick at) {
  running_ = true;
  for (int cpu : cpus_) m_.sim().schedule(at + offsets_[static_cast<std::size_t>(cpu)], &fire, this, static_cast<std::uint64_t>(cpu));
}

// The tick's grid time: the APIC timer expires then plus the programming
// delay of its last reprogramming, raising the local timer interrupt (not on
// an idle CPU, whose tick is stopped); the grid goes on a period later.
void LocalTimerTick::fire(void* self, std::uint64_t cpu) {
  auto* t = static_cast<LocalTimerTick*>(self);
  if (!t->running_) return;
  if (!t->idle_[cpu]) {
    if (t->late_[cpu] > 0)
      t->m_.sim().schedule(t->m_.sim().now() + t->late_[cpu], &raise, self, cpu);
    else
      raise(self, cpu);
  }
  t->m_.sim().schedule(t->m_.sim().now() + t->period_, &fire, self, cpu);
}

void LocalTimerTick::raise(void* self, std::uint64_t cpu) {
  auto* t = static_cast<LocalTimerTick*>(self);
  if (!t->running_) return;
  ++t->fired_[cpu];
  t->m_.cpu(static_cast<int>(cpu)).raise_interrupt();
}

// smp_apic_timer_interrupt -> local_apic_timer_interrupt -> hrtimer_interrupt.
Task<void> LocalTimerTick::on_interrupt(cpu::Cpu& c) {
  const auto cpu = static_cast<std::size_t>(c.id());
  ++handled_[cpu];
  if (recording_) starts_[cpu].push_back(c.sim().now());
  co_await work_(c);
}

}  // namespace cohsim::models::kernel
