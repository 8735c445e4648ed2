// The periodic local timer tick (Linux 4.6, x86: the local APIC timer
// interrupt at HZ driving hrtimer_interrupt -> tick_sched_timer on every CPU).
// Each CPU's timer raises its interrupt through the CPU's interrupt entry
// (Cpu::raise_interrupt; irq_entry and irq_exit are paid there), and the
// handler installed with Cpu::set_interrupt_handler runs the tick's work.
// A tick that fires while the previous one is still pending merges with it,
// as the APIC's single pending bit does. CPUs start with a per-CPU offset
// (tick skew): random (named source "tick.skew"), an even spread, or none.
// An idle CPU takes no tick (NO_HZ_IDLE: tick_nohz_stop_sched_tick); its
// tick restarts on the same period grid when it leaves idle (hrtimer_forward).
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
enum class TickSkew { random, spread, none };
/// Parses "random", "spread", "none"; throws std::invalid_argument.
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
  Tick period() const { return period_; }
  /// The start offset of `cpu` within one period.
  Tick offset(int cpu) const { return offsets_.at(static_cast<std::size_t>(cpu)); }
  /// Timer interrupts raised (none while idle) / handlers run on `cpu`.
  std::uint64_t fired(int cpu) const { return fired_.at(static_cast<std::size_t>(cpu)); }
  std::uint64_t handled(int cpu) const { return handled_.at(static_cast<std::size_t>(cpu)); }
  /// When each handler on `cpu` began, if recording.
  void record_handler_starts(bool on) { recording_ = on; }
  const std::vector<Tick>& handler_starts(int cpu) const { return starts_.at(static_cast<std::size_t>(cpu)); }

 private:
  static void fire(void* self, std::uint64_t cpu);
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
  std::vector<std::vector<Tick>> starts_;
};

}  // namespace cohsim::models::kernel
