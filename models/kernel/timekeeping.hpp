// Clocksources and timekeeping as Linux 4.6 (x86-64) reads the clock:
//   arch/x86/kernel/hpet.c      read_hpet (plain), and read_hpet with the
//                               2016 shared-read patch ("x86/hpet: Reduce HPET
//                               counter read contention", union hpet_lock)
//   arch/x86/kernel/tsc.c       read_tsc (rdtsc)
//   arch/x86/platform/uv/uv_time.c  uv_read_rtc (the hub-local RTC of UV-class
//                               machines; no vDSO read: clock_gettime falls
//                               back to the system call)
//   kernel/time/timekeeping.c   ktime_get (seqcount read side on tk_core.seq),
//                               update_wall_time (timekeeper_lock, write side)
//   arch/x86/entry/vdso/vclock_gettime.c  __vdso_clock_gettime: vread_hpet /
//                               vread_tsc in the vDSO's own seqcount loop on
//                               vsyscall_gtod_data
// Every shared word is a real line homed where the kernel puts it: tk_core,
// timekeeper_lock, the hpet_lock union and the vvar page are static data of
// the kernel image, node 0. Values are real: ktime_get returns nanoseconds
// computed from the counter it read and the timekeeper's cycle_last/base.
// Both locks are the kernel's qspinlock (models/kernel/qspinlock.hpp, v5.9):
// the paths taken here, the fast path and queued_spin_trylock, are the same
// instructions in 4.6 (its slow path's pending step was a cmpxchg loop).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/devices/hpet.hpp"
#include "cohsim/devices/uv_rtc.hpp"
#include "cohsim/sim/histogram.hpp"
#include "cohsim/scenario/machine.hpp"
#include "models/kernel/qspinlock.hpp"
#include "models/workloads/measurement_window.hpp"

namespace cohsim::models::kernel {

using fabric::Addr;
using sim::Task;
using sim::Tick;

/// The clocksource in use (the AIM7 scenario's variants).
enum class Clocksource { tsc, hpet, hpet_shared, uv_rtc };
/// Parses a clocksource name; throws std::invalid_argument.
Clocksource parse_clocksource(const std::string& name);

/// Where update_wall_time reads the clocksource relative to the write side.
enum class WallTimeRead {
  before_write_side,  ///< Linux 4.6 source: read under timekeeper_lock, before write_seqcount_begin
  inside_write_side,  ///< as docs/reference/kernel-algorithms.md section 4 describes it
};

/// Kernel and vDSO instruction costs around the modelled accesses.
struct TimekeepingCosts {
  Tick ktime_get_overhead = 0;  ///< call, cycles-to-ns arithmetic of ktime_get
  Tick vdso_overhead = 0;       ///< __vdso_clock_gettime: call, arithmetic, timespec conversion
  Tick syscall_overhead = 0;    ///< clock_gettime as a system call (a clocksource without a vDSO read): entry and exit
};

/// tk_core (seqcount + struct timekeeper, ____cacheline_aligned): offsets of the fields modelled.
struct TkCoreLayout {
  static constexpr Addr seq = 0;          ///< seqcount_t
  static constexpr Addr cycle_last = 32;  ///< tkr_mono.cycle_last
  static constexpr Addr base = 56;        ///< tkr_mono.base (ns)
  static constexpr Addr bytes = 320;      ///< the timekeeper copied under the write side: 5 lines
};
/// vsyscall_gtod_data on the vvar page.
struct GtodLayout {
  static constexpr Addr seq = 0;
  static constexpr Addr cycle_last = 8;
  static constexpr Addr base = 32;  ///< monotonic time at cycle_last (ns)
  static constexpr Addr bytes = 128;
};

/// Time one CPU spent in each clock path, over the calls that completed inside the measurement window.
struct ClockAccounting {
  Tick read_fn = 0;    ///< inside the kernel clocksource read (read_hpet / read_tsc), as perf attributes it
  Tick vdso = 0;       ///< inside vDSO clock_gettime (its own loop and HPET read included)
  Tick seq_retry = 0;  ///< ktime_get waiting for an even tk_core.seq or redoing a failed pass (reads excluded)
  std::uint64_t read_fn_calls = 0, vdso_calls = 0, ktime_calls = 0, ktime_retries = 0, wall_time_updates = 0;
};

/// One device read by the hpet-shared lock holder (for checking the scheme).
struct SharedRead {
  int cpu;
  Tick locked, unlocked;  ///< lock acquired, lock released
  std::uint32_t value;
};

class Timekeeping {
 public:
  /// Allocates tk_core, timekeeper_lock, the hpet_lock union and the vvar
  /// page on node 0 and initialises the timekeeper at time 0. `rtc` is the
  /// hubs' RTC, needed by (and only by) the uv_rtc clocksource; throws
  /// std::invalid_argument when uv_rtc has none.
  Timekeeping(scenario::Machine& m, devices::Hpet& hpet, Clocksource cs, WallTimeRead wall_read,
              const TimekeepingCosts& costs, devices::UvRtc* rtc = nullptr);

  Clocksource clocksource() const { return cs_; }
  /// The clocksource's read function (read_hpet, shared or not, read_tsc or uv_read_rtc): counter cycles.
  Task<std::uint64_t> read_clocksource(cpu::Cpu& c);
  /// ktime_get(): monotonic ns inside a tk_core.seq read section.
  Task<std::int64_t> ktime_get(cpu::Cpu& c);
  /// update_wall_time(): timekeeper_lock, the tk_core.seq write side, update_vsyscall.
  Task<void> update_wall_time(cpu::Cpu& c);
  /// __vdso_clock_gettime(CLOCK_MONOTONIC) from user space: monotonic ns (with uv_rtc, the
  /// system-call fallback: entry, ktime_get, exit; its clocksource read is accounted in read_fn, not vdso).
  Task<std::int64_t> vdso_clock_gettime(cpu::Cpu& c);

  /// Only calls completing inside `w` are accounted and sampled (`w` outlives this object).
  void set_window(const MeasurementWindow& w) { window_ = &w; }
  const ClockAccounting& accounting(int cpu) const { return acct_.at(static_cast<std::size_t>(cpu)); }
  /// Durations of clocksource reads that completed in the window (irq time excluded).
  const sim::LatencyHistogram& read_latencies() const { return read_latency_; }
  /// Durations of vDSO clock_gettime calls that completed in the window.
  const sim::LatencyHistogram& vdso_latencies() const { return vdso_latency_; }
  /// hpet-shared: every device read made under the lock, when recording.
  void record_shared_reads(bool on) { recording_ = on; }
  const std::vector<SharedRead>& shared_reads() const { return shared_reads_; }
  /// Cycles to nanoseconds of the clocksource in use.
  std::int64_t cycles_to_ns(std::uint64_t delta) const;
  std::uint64_t mask() const { return mask_; }
  Addr tk_core() const { return tk_core_; }
  Addr hpet_word() const { return hpet_word_; }
  Addr gtod() const { return gtod_; }

 private:
  Task<std::uint64_t> read_hpet_shared(cpu::Cpu& c);
  Task<std::uint64_t> read_counter(cpu::Cpu& c);  // rdtsc, an HPET or hub RTC MMIO read, no accounting
  bool in_window(Tick completed) const { return window_ == nullptr || window_->contains(completed); }

  devices::Hpet& hpet_;
  devices::UvRtc* rtc_;
  Clocksource cs_;
  WallTimeRead wall_read_;
  TimekeepingCosts costs_;
  double hz_;
  std::uint64_t mask_;
  Addr tk_core_, timekeeper_lock_, hpet_word_, gtod_;
  std::optional<Qnodes> qnodes_;  // the per-CPU qspinlock nodes of timekeeper_lock and hpet_lock
  const MeasurementWindow* window_ = nullptr;  // none: every call counts
  std::vector<ClockAccounting> acct_;
  sim::LatencyHistogram read_latency_, vdso_latency_;  // fixed size: a read is sampled, not kept
  bool recording_ = false;
  std::vector<SharedRead> shared_reads_;
};

}  // namespace cohsim::models::kernel
