// The periodic local timer tick (Linux 4.6, x86: the local APIC timer
// interrupt at HZ driving hrtimer_interrupt -> tick_sched_timer on every CPU).
// Each CPU's timer raises its interrupt through the CPU's interrupt entry
// (Cpu::raise_interrupt; irq_entry and irq_exit are paid there), and the
// handler installed with Cpu::set_interrupt_handler runs the tick's work.
// A tick that fires while the previous one is still pending merges with it,
// as the APIC's single pending bit does. CPUs start with a per-CPU offset:
// none (Linux's default, skew_tick=0: tick_setup_sched_timer sets every
// CPU's tick to the same jiffy edge, so all ticks are aligned), the kernel's
// skew_tick=1 offset (half a period / num_possible_cpus x the CPU number),
// random (named source "tick.skew") or an even spread over the period.
// An idle CPU takes no tick (NO_HZ_IDLE: tick_nohz_stop_sched_tick); its
// tick restarts on the same period grid when it leaves idle (hrtimer_forward).
// The timer is programmed relative to the clock the handler read
// (clockevents_program_event: delta = expires - ktime_get()), so each tick
// fires after its grid time by the time from that read's latch to the
// programming (set_programming_delay): a slow or shared clock read makes
// the next tick late, by a different amount on each CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/scenario/machine.hpp"

namespace cohsim::models::kernel {

using sim::Task;
using sim::Tick;

/// How tick phases differ between CPUs.
enum class TickSkew { random, spread, none, kernel_skew };
/// Parses "random", "spread", "none", "kernel_skew"; throws std::invalid_argument.
TickSkew parse_tick_skew(const std::string& name);

class LocalTimerTick {
 public:
  /// The tick's work on the interrupted CPU (after irq entry, before irq exit).
  using Handler = std::function<Task<void>(cpu::Cpu&)>;

  /// Installs the interrupt handler on every CPU in `cpus`; ticks start with start().
  LocalTimerTick(scenario::Machine& m, double hz, TickSkew skew, std::vector<int> cpus, Handler work);

  /// Schedules each CPU's first tick at `at` plus its offset.
  void start(Tick at);
  /// No tick fires after this call.
  void stop() { running_ = false; }
  /// Marks `cpu` idle (its tick stopped) or busy again (its tick back on the grid).
  void set_idle(int cpu, bool idle) { idle_.at(static_cast<std::size_t>(cpu)) = idle; }
  /// The next tick of `cpu` fires `late` after its grid time: the time from the latch of the
  /// clock value its expiry was computed from to the programming of the timer.
  void set_programming_delay(int cpu, Tick late) { late_.at(static_cast<std::size_t>(cpu)) = late; }
  Tick period() const { return period_; }
  /// The start offset of `cpu` within one period.
  /// The kernel's tick offset for `cpu` (Linux kernel/time/tick-sched.c, tick_setup_sched_timer):
  /// none with skew_tick=0, (period / 2) / ncpus x cpu with skew_tick=1.
  static Tick kernel_offset(Tick period, int ncpus, int cpu, bool skew_tick);
  Tick offset(int cpu) const { return offsets_.at(static_cast<std::size_t>(cpu)); }
  /// Timer interrupts raised (none while idle) / handlers run on `cpu`.
  std::uint64_t fired(int cpu) const { return fired_.at(static_cast<std::size_t>(cpu)); }
  std::uint64_t handled(int cpu) const { return handled_.at(static_cast<std::size_t>(cpu)); }
  /// When each handler on `cpu` began, if recording.
  void record_handler_starts(bool on) { recording_ = on; }
  const std::vector<Tick>& handler_starts(int cpu) const { return starts_.at(static_cast<std::size_t>(cpu)); }

 private:
  static void fire(void* self, std::uint64_t cpu);
  static void raise(void* self, std::uint64_t cpu);
  Task<void> on_interrupt(cpu::Cpu& c);

  scenario::Machine& m_;
  Tick period_;
  Handler work_;
  bool running_ = false;
  bool recording_ = false;
  std::vector<int> cpus_;
  std::vector<Tick> offsets_;
  std::vector<std::uint64_t> fired_, handled_;
  std::vector<bool> idle_;  ///< per CPU: in nohz idle, its tick stopped
  std::vector<Tick> late_;  ///< per CPU: the programming delay of its next tick
  std::vector<std::vector<Tick>> starts_;
};

}  // namespace cohsim::models::kernel
