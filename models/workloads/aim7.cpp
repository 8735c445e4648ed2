// AIM7 "compute"-like load with the clock reads that make the clocksource
// matter (Linux 4.6-rc1, x86-64, HZ=1000, NO_HZ_IDLE). Every CPU runs jobs
// back to back; a job is user and kernel compute with, spread evenly through
// it, the events that read the clock in the kernel, each from its cause
// (measurements.md section 7: AIM7 times jobs with times(), which reads
// jiffies, so the benchmark itself reads no clocksource):
//   - the local timer tick at HZ on every busy CPU (hrtimer_interrupt reads
//     the clock at entry and before reprogramming; CPU 0 also runs
//     update_wall_time); an idle CPU takes no tick;
//   - the mix's blocking operations (pipes, UDP, disk): the task blocks and
//     the CPU switches to another runnable task of its runqueue (the users
//     are spread over the CPUs); only when none is runnable does it go idle,
//     with the clock read on nohz idle entry and exit (the scheduler itself
//     reads sched_clock, the TSC, whatever the clocksource);
//   - forks (copy_process: start_time = ktime_get_ns(), real_start_time =
//     ktime_get_boot_ns());
//   - timers armed per job (alarm(): hrtimer_start of a relative timer);
//   - system calls that take timestamps (none in the compute mix by the
//     evidence) and vDSO clock_gettime calls, per job (docs/hpet.md).
// jobs_per_min_vs_tsc runs the same machine, seed and job with the tsc
// clocksource in the same invocation.
#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "cohsim/devices/hpet.hpp"
#include "cohsim/devices/uv_rtc.hpp"
#include "cohsim/sim/random.hpp"
#include "models/kernel/tick.hpp"
#include "models/kernel/timekeeping.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/stats.hpp"

namespace cohsim::models {
namespace {

using config::Spec;
using kernel::Clocksource;
using scenario::Machine;
using scenario::Results;
using sim::Task;
using sim::Tick;

/// What a CPU does after a compute slice of a job.
enum class JobEvent { syscall_clock_read, vdso_clock_read, timer_arm, blocking_wait, fork };

struct Aim7Params {
  Clocksource clocksource = Clocksource::tsc;
  Tick compute_per_job = 0;
  int kernel_reads_per_job = 0, vdso_reads_per_job = 0, timers_per_job = 0, blocking_ops_per_job = 0;
  int forks_per_job = 0, fork_clock_reads = 2, users = 1;
  Tick block_wait = 0, context_switch = 0;
  int idle_entry_clock_reads = 0, idle_exit_clock_reads = 0;
  double hz = 1000;
  kernel::TickSkew tick_skew = kernel::TickSkew::random;
  Tick tick_work = 0;
  int tick_clock_reads = 3;
  kernel::WallTimeRead wall_read = kernel::WallTimeRead::before_write_side;
  kernel::TimekeepingCosts costs;
  Tick warmup = 0, duration = 0;
  std::vector<int> cpus;
};

/// What one simulated run of the load gives, all over the measurement window
/// (warm-up excluded), but hpet_max_queue, the most reads at the device at
/// once over the whole run (a maximum has no per-window change).
struct Outcome {
  double jobs_per_min = 0;
  double read_fn_pct = 0, vdso_pct = 0, retry_pct = 0;
  double read_ns_mean = 0, read_ns_p99 = 0, vdso_ns_mean = 0, vdso_ns_p99 = 0;
  double hpet_reads_per_s = 0, hpet_busy_pct = 0, hpet_wait_ns_mean = 0, hpet_max_queue = 0;
  double ktime_per_cpu_s = 0, retries_per_ktime = 0, ticks_per_cpu_s = 0, wall_updates_per_s = 0;
  double idle_periods_per_cpu_s = 0, idle_pct = 0, switches_per_cpu_s = 0;
  double spin_interrupts_per_s = 0;  ///< interrupts taken inside spins (seqcount, hpet_lock, vDSO loop)
  std::vector<double> jobs_per_cpu;
};

// One machine running the load with one clocksource.
class Aim7Run {
 public:
  // `rtc` (the platform's hub RTC) is needed by the uv-rtc clocksource only.
  Aim7Run(Machine& m, const devices::HpetParams& hp, const devices::UvRtcParams* rtc, const Aim7Params& p,
          Clocksource cs)
      : m_(m),
        p_(p),
        hpet_(hp, m.sim(), m.interconnect()),
        rtc_(rtc ? std::make_unique<devices::UvRtc>(*rtc, m.sim(), m.interconnect()) : nullptr),
        tk_(m, hpet_, cs, p.wall_read, p.costs, rtc_.get()),
        tick_(m, p.hz, p.tick_skew, p.cpus, [this](cpu::Cpu& c) { return tick_work(c); }) {
    events_ = job_events(p);
    ops_per_job_ = std::max<int>(1, static_cast<int>(events_.size()));
    progress_.assign(static_cast<std::size_t>(m.cpu_count()), 0);
    idle_periods_.assign(static_cast<std::size_t>(m.cpu_count()), 0);
    idle_time_.assign(static_cast<std::size_t>(m.cpu_count()), 0);
    switches_.assign(static_cast<std::size_t>(m.cpu_count()), 0);
    switch_counter_ = window_.track([this] {
      std::uint64_t n = 0;
      for (auto v : switches_) n += v;
      return n;
    });
    for (int cpu : p.cpus) {
      const auto i = static_cast<std::size_t>(cpu);
      ops_done_.push_back(window_.track([this, i] { return progress_[i]; }));
      ticks_.push_back(window_.track([this, cpu] { return tick_.handled(cpu); }));
      idles_.push_back(window_.track([this, i] { return idle_periods_[i]; }));
      idle_times_.push_back(window_.track([this, i] { return idle_time_[i]; }));
    }
    hpet_reads_ = window_.track([this] { return hpet_.stats().reads; });
    // Service done so far: the reads still queued at the device are booked in `busy` already.
    hpet_busy_ = window_.track([this] {
      return hpet_.stats().busy - hpet_.service_owed(m_.sim().now());
    });
    hpet_queue_wait_ = window_.track([this] { return hpet_.stats().queue_wait; });
    spin_irqs_ = window_.track([this] {
      std::uint64_t n = 0;
      for (int cpu : p_.cpus) n += m_.cpu(cpu).stats().interrupts_in_spins;
      return n;
    });
  }

  Outcome run() {
    const Tick from = p_.warmup, to = p_.warmup + p_.duration;
    window_.schedule(m_.sim(), from, to);
    m_.sim().set_expected_end(to);  // for the progress line's time left
    tk_.set_window(window_);
    sim::RandomStream phase(m_.seed(), "aim7.job_phase");
    const int ncpus = static_cast<int>(p_.cpus.size());
    for (int k = 0; k < ncpus; ++k) {
      const int cpu = p_.cpus[static_cast<std::size_t>(k)];
      const auto first_op = static_cast<int>(phase.below(static_cast<std::uint64_t>(ops_per_job_)));
      // The users spread evenly over the CPUs' runqueues (the scheduler's load balance).
      const int tasks = std::max(1, p_.users / ncpus + (k < p_.users % ncpus ? 1 : 0));
      m_.sim().spawn(fmt::format("cpu{} aim7 jobs", cpu), jobs(cpu, first_op, tasks, to));
    }
    tick_.start(0);
    // The ticks never run out of events: a stuck CPU is caught by the progress watchdog.
    m_.sim().run(sim::RunLimits{.max_time_without_progress = 50 * sim::kMs});
    tick_.stop();
    return outcome();
  }

 private:
  // The job's events in order, each kind spread evenly through the job (the
  // kind furthest behind its even share comes next).
  static std::vector<JobEvent> job_events(const Aim7Params& p) {
    const std::vector<std::pair<JobEvent, int>> kinds = {{JobEvent::blocking_wait, p.blocking_ops_per_job},
                                                         {JobEvent::syscall_clock_read, p.kernel_reads_per_job},
                                                         {JobEvent::vdso_clock_read, p.vdso_reads_per_job},
                                                         {JobEvent::timer_arm, p.timers_per_job},
                                                         {JobEvent::fork, p.forks_per_job}};
    int total = 0;
    for (const auto& k : kinds) total += k.second;
    std::vector<JobEvent> order;
    std::vector<int> placed(kinds.size(), 0);
    for (int slot = 1; slot <= total; ++slot) {
      std::size_t next = 0;
      double most_behind = -1e18;
      for (std::size_t k = 0; k < kinds.size(); ++k) {
        const double behind = static_cast<double>(kinds[k].second) * slot / total - placed[k];
        if (placed[k] < kinds[k].second && behind > most_behind) most_behind = behind, next = k;
      }
      ++placed[next];
      order.push_back(kinds[next].first);
    }
    return order;
  }

  // One CPU's runqueue of `tasks` users running jobs: compute slices, each
  // followed by one of the job's events. Every user runs the same job, so the
  // CPU's progress is one stream of slices whichever task runs it; a task that
  // blocks is runnable again block_wait later.
  Task<void> jobs(int cpu, int op, int tasks, Tick end) {
    cpu::Cpu& c = m_.cpu(cpu);
    const Tick slice = p_.compute_per_job / static_cast<Tick>(ops_per_job_);
    auto& progress = progress_[static_cast<std::size_t>(cpu)];
    std::vector<Tick> runnable_at(static_cast<std::size_t>(tasks), 0);
    std::size_t current = 0;
    while (c.sim().now() < end) {
      co_await c.compute(slice);
      if (!events_.empty()) {
        switch (events_[static_cast<std::size_t>(op)]) {
          case JobEvent::syscall_clock_read: co_await tk_.ktime_get(c); break;  // a system call's timestamp
          case JobEvent::vdso_clock_read: co_await tk_.vdso_clock_gettime(c); break;
          case JobEvent::timer_arm:  // hrtimer_start: base->get_time() under the base lock, interrupts off
            c.local_irq_disable();
            co_await tk_.ktime_get(c);
            co_await c.local_irq_enable();
            break;
          case JobEvent::fork:  // copy_process, process context, interrupts on
            for (int r = 0; r < p_.fork_clock_reads; ++r) co_await tk_.ktime_get(c);
            break;
          case JobEvent::blocking_wait: current = co_await block(c, runnable_at, current); break;
        }
      }
      op = (op + 1) % ops_per_job_;
      ++progress;
      c.sim().note_progress();
    }
  }

  // The current task blocks for block_wait: schedule() picks the next
  // runnable task of the runqueue (round robin, as CFS does for equal
  // tasks) and switches to it; with none runnable the CPU goes idle until the
  // first one is runnable again, then switches to it. Returns the task now running.
  Task<std::size_t> block(cpu::Cpu& c, std::vector<Tick>& runnable_at, std::size_t current) {
    const Tick now = c.sim().now();
    runnable_at[current] = now + p_.block_wait;
    std::size_t next = current, first = current;
    bool found = false;
    for (std::size_t k = 1; k <= runnable_at.size() && !found; ++k) {
      const std::size_t j = (current + k) % runnable_at.size();
      if (runnable_at[j] <= now) next = j, found = true;
      if (runnable_at[j] < runnable_at[first]) first = j;
    }
    if (!found) {
      co_await idle(c, runnable_at[first] - now);
      next = first;
    }
    ++switches_[static_cast<std::size_t>(c.id())];
    co_await c.compute(p_.context_switch);
    co_return next;
  }

  // The CPU goes idle until a task is runnable again, `wait` from now (Linux 4.6
  // do_idle with interrupts off): nohz idle entry reads the clock
  // (tick_nohz_idle_enter, the tick's hrtimer reprogrammed, cpuidle's
  // time_start), the tick stops, the CPU halts (its core left to an SMT
  // sibling) for the wait and wakes (wfi_wake), and idle exit reads it
  // again (cpuidle's time_end, tick_nohz_idle_exit, the tick restarted).
  Task<void> idle(cpu::Cpu& c, Tick wait) {
    const auto i = static_cast<std::size_t>(c.id());
    c.local_irq_disable();
    for (int r = 0; r < p_.idle_entry_clock_reads; ++r) co_await tk_.ktime_get(c);
    tick_.set_idle(c.id(), true);
    const Tick halted = c.sim().now();
    co_await c.sim().delay(wait + c.params().wfi_wake);
    tick_.set_idle(c.id(), false);
    ++idle_periods_[i];
    idle_time_[i] += c.sim().now() - halted;
    for (int r = 0; r < p_.idle_exit_clock_reads; ++r) co_await tk_.ktime_get(c);
    co_await c.local_irq_enable();
  }

  // hrtimer_interrupt (Linux 4.6 kernel/time/hrtimer.c): the clock is read at
  // entry (hrtimer_update_base -> ktime_get_update_offsets_now); the expired
  // tick_sched_timer (tick-sched.c) reads it again (`now = ktime_get()`), then
  // on the do_timer CPU tick_do_update_jiffies64 -> do_timer ->
  // update_wall_time, then update_process_times and scheduler_tick; and
  // tick_program_event -> clockevents_program_event reads it before
  // reprogramming. With tick_clock_reads n: n - 1 reads first, the last one
  // before reprogramming.
  Task<void> tick_work(cpu::Cpu& c) {
    for (int i = 0; i + 1 < p_.tick_clock_reads; ++i) co_await tk_.ktime_get(c);
    if (c.id() == p_.cpus.front()) co_await tk_.update_wall_time(c);
    co_await c.compute(p_.tick_work);
    std::int64_t now_ns = -1;
    if (p_.tick_clock_reads > 0) now_ns = co_await tk_.ktime_get(c);
    // tick_program_event: the next expiry is programmed as a delta from the value just read.
    if (now_ns >= 0)
      tick_.set_programming_delay(c.id(), std::max<Tick>(0, c.sim().now() - static_cast<Tick>(now_ns) * sim::kNs));
  }

  Outcome outcome() const {
    Outcome o;
    const double seconds = window_.seconds();
    const double cpu_time = static_cast<double>(window_.length()) * static_cast<double>(p_.cpus.size());
    double jobs = 0;
    Tick read_fn = 0, vdso = 0, retry = 0;
    std::uint64_t ktime = 0, retries = 0, ticks = 0, updates = 0, idles = 0, idle_time = 0;
    for (std::size_t k = 0; k < p_.cpus.size(); ++k) {
      const int cpu = p_.cpus[k];
      const double done = static_cast<double>(window_.delta(ops_done_[k])) / ops_per_job_;
      o.jobs_per_cpu.push_back(done);
      jobs += done;
      const auto& a = tk_.accounting(cpu);
      read_fn += a.read_fn;
      vdso += a.vdso;
      retry += a.seq_retry;
      ktime += a.ktime_calls;
      retries += a.ktime_retries;
      updates += a.wall_time_updates;
      ticks += window_.delta(ticks_[k]);
      idles += window_.delta(idles_[k]);
      idle_time += window_.delta(idle_times_[k]);
    }
    o.jobs_per_min = jobs / seconds * 60;
    o.read_fn_pct = 100.0 * static_cast<double>(read_fn) / cpu_time;
    o.vdso_pct = 100.0 * static_cast<double>(vdso) / cpu_time;
    o.retry_pct = 100.0 * static_cast<double>(retry) / cpu_time;
    o.read_ns_mean = tk_.read_latencies().mean_ns();
    o.read_ns_p99 = tk_.read_latencies().percentile_ns(99);
    o.vdso_ns_mean = tk_.vdso_latencies().mean_ns();
    o.vdso_ns_p99 = tk_.vdso_latencies().percentile_ns(99);
    const auto hpet_reads = static_cast<double>(window_.delta(hpet_reads_));
    o.hpet_reads_per_s = hpet_reads / seconds;
    // Of the service capacity: every slot busy is 100 %.
    o.hpet_busy_pct = 100.0 * static_cast<double>(window_.delta(hpet_busy_)) /
                      (static_cast<double>(window_.length()) * hpet_.params().ports());
    o.hpet_wait_ns_mean = hpet_reads > 0 ? sim::to_ns(window_.delta(hpet_queue_wait_)) / hpet_reads : 0;
    o.hpet_max_queue = static_cast<double>(hpet_.stats().max_queue);
    o.ktime_per_cpu_s = static_cast<double>(ktime) / seconds / static_cast<double>(p_.cpus.size());
    o.retries_per_ktime = ktime ? static_cast<double>(retries) / static_cast<double>(ktime) : 0;
    o.ticks_per_cpu_s = static_cast<double>(ticks) / seconds / static_cast<double>(p_.cpus.size());
    o.wall_updates_per_s = static_cast<double>(updates) / seconds;
    o.idle_periods_per_cpu_s = static_cast<double>(idles) / seconds / static_cast<double>(p_.cpus.size());
    o.idle_pct = 100.0 * static_cast<double>(idle_time) / cpu_time;
    o.switches_per_cpu_s = static_cast<double>(window_.delta(switch_counter_)) / seconds / static_cast<double>(p_.cpus.size());
    o.spin_interrupts_per_s = static_cast<double>(window_.delta(spin_irqs_)) / seconds;
    return o;
  }

  Machine& m_;
  const Aim7Params& p_;
  devices::Hpet hpet_;
  std::unique_ptr<devices::UvRtc> rtc_;
  kernel::Timekeeping tk_;
  kernel::LocalTimerTick tick_;
  std::vector<JobEvent> events_;  ///< one job's events, in order
  int ops_per_job_ = 1;
  std::vector<std::uint64_t> progress_;  ///< operations done, per CPU
  std::vector<std::uint64_t> idle_periods_, idle_time_;  ///< per CPU: idle periods ended, time halted in them
  std::vector<std::uint64_t> switches_;  ///< per CPU: context switches after a blocking operation
  MeasurementWindow window_;
  std::vector<std::size_t> ops_done_, ticks_, idles_, idle_times_;  ///< window counters, per CPU of p_.cpus
  std::size_t hpet_reads_ = 0, hpet_busy_ = 0, hpet_queue_wait_ = 0, spin_irqs_ = 0, switch_counter_ = 0;
};

class Aim7Compute : public scenario::Workload {
 public:
  Aim7Compute(config::Reader p, Machine& m) : m_(m) {
    p_.clocksource = kernel::parse_clocksource(p.choice(
        "clocksource", Spec{.doc = "the kernel's clocksource", .def = "tsc", .choices = {"tsc", "hpet", "hpet-shared", "uv-rtc"}}));
    p_.compute_per_job = p.time("compute_per_job", Spec{.doc = "user and kernel work of one job besides clock reads, "
                                                               "on a core of its own",
                                                        .def = "6.5ms", .min = 1e3, .max = 1e13});
    p_.kernel_reads_per_job = static_cast<int>(p.integer(
        "kernel_reads_per_job", Spec{.doc = "ktime_get calls from system calls per job", .def = 0, .min = 0, .max = 1e6}));
    p_.vdso_reads_per_job = static_cast<int>(p.integer(
        "vdso_reads_per_job", Spec{.doc = "vDSO clock_gettime calls per job", .def = 0, .min = 0, .max = 1e6}));
    p_.timers_per_job = static_cast<int>(p.integer(
        "timers_per_job", Spec{.doc = "relative hrtimers armed per job (alarm()), each reading the clock once",
                               .def = 0, .min = 0, .max = 1e6}));
    p_.blocking_ops_per_job = static_cast<int>(p.integer(
        "blocking_ops_per_job", Spec{.doc = "waits per job in the mix's pipe, UDP and disk operations, each an idle "
                                            "period of its CPU",
                                     .def = 0, .min = 0, .max = 1e6}));
    p_.block_wait = p.time("block_wait", Spec{.doc = "time a task stays blocked per blocking operation (its CPU runs "
                                                     "another runnable task meanwhile, or idles)",
                                              .def = "0", .max = 1e10});
    p_.context_switch = p.time("context_switch", Spec{.doc = "schedule() from a blocking task to the next one "
                                                             "(no clocksource read: the scheduler uses sched_clock)",
                                                      .def = "0", .max = 1e9});
    p_.users = static_cast<int>(p.integer("users", Spec{.doc = "AIM7 users (tasks), spread evenly over the CPUs' runqueues",
                                                        .def = 1, .min = 1, .max = 1e7}));
    p_.forks_per_job = static_cast<int>(p.integer(
        "forks_per_job", Spec{.doc = "fork()s per job, each copy_process reading the clock fork_clock_reads times",
                              .def = 0, .min = 0, .max = 1e6}));
    p_.fork_clock_reads = static_cast<int>(p.integer(
        "fork_clock_reads", Spec{.doc = "clock reads in copy_process (start_time, real_start_time)", .def = 2, .min = 0, .max = 10}));
    p_.idle_entry_clock_reads = static_cast<int>(p.integer(
        "idle_entry_clock_reads", Spec{.doc = "ktime_get calls on nohz idle entry (tick_nohz_idle_enter, the tick "
                                              "timer's reprogramming, cpuidle time_start)",
                                       .def = 3, .min = 0, .max = 100}));
    p_.idle_exit_clock_reads = static_cast<int>(p.integer(
        "idle_exit_clock_reads", Spec{.doc = "ktime_get calls on nohz idle exit (cpuidle time_end, "
                                             "tick_nohz_idle_exit, the tick's restart)",
                                      .def = 3, .min = 0, .max = 100}));
    p_.hz = static_cast<double>(p.integer("hz", Spec{.doc = "CONFIG_HZ: local timer ticks per second", .def = 1000, .min = 1, .max = 10000}));
    const bool skew_tick = p.integer("skew_tick", Spec{.doc = "the kernel's skew_tick boot parameter: 0 (default) "
                                                              "aligns every CPU's tick, 1 offsets them over half a period",
                                                       .def = 0, .min = 0, .max = 1}) != 0;
    const std::string skew = p.choice(
        "tick_skew", Spec{.doc = "per-CPU tick phase: as the kernel sets it from skew_tick, or a what-if (random, "
                                 "source tick.skew; spread evenly; none)",
                          .def = "kernel", .choices = {"kernel", "random", "spread", "none"}});
    p_.tick_skew = skew == "kernel" ? (skew_tick ? kernel::TickSkew::kernel_skew : kernel::TickSkew::none)
                                    : kernel::parse_tick_skew(skew);
    p_.tick_work = p.time("tick_work", Spec{.doc = "tick handler work besides its clock reads (scheduler_tick, "
                                                   "run_local_timers, accounting)",
                                            .def = "1us", .max = 1e9});
    p_.tick_clock_reads = static_cast<int>(p.integer(
        "tick_clock_reads", Spec{.doc = "ktime_get calls per tick (Linux 4.6: hrtimer_interrupt at entry, tick_sched_timer, "
                                         "clockevents_program_event before reprogramming; the last is the reprogramming one)",
                                 .def = 3, .min = 0, .max = 100}));
    const std::string wall = p.choice(
        "wall_time_read", Spec{.doc = "update_wall_time reads the clock before the tk_core.seq write side (Linux 4.6) "
                                      "or inside it (as the reference describes)",
                               .def = "before_write_side", .choices = {"before_write_side", "inside_write_side"}});
    p_.wall_read = wall == "inside_write_side" ? kernel::WallTimeRead::inside_write_side
                                               : kernel::WallTimeRead::before_write_side;
    p_.costs.ktime_get_overhead = p.time("ktime_get_overhead", Spec{.doc = "ktime_get besides its loads and the read",
                                                                    .def = "15ns", .max = 1e7});
    p_.costs.vdso_overhead = p.time("vdso_overhead", Spec{.doc = "vDSO clock_gettime besides its loads and the read",
                                                          .def = "40ns", .max = 1e7});
    p_.costs.syscall_overhead = p.time(
        "syscall_overhead", Spec{.doc = "entry and exit of the clock_gettime system call that the vDSO falls back to "
                                        "when the clocksource has no vDSO read (uv-rtc)",
                                 .def = "100ns", .max = 1e7});
    p_.warmup = p.time("warmup", Spec{.doc = "simulated time before measuring", .def = "10ms", .max = 1e13});
    p_.duration = p.time("duration", Spec{.doc = "measured simulated time", .def = "50ms", .min = 1e6, .max = 1e14});
    p_.cpus = p.cpu_list("cpus", Spec{.doc = "CPUs running jobs (the first one is the do_timer CPU)",
                                      .def = m.cpu_count()},
                         m.cpu_count());
    if (m.uv_rtc_params() != nullptr) rtc_ = *m.uv_rtc_params();
    if (p.schema_mode()) return;
    if (p_.cpus.empty()) p.fail("cpus", "needs at least one CPU");
    if (p_.clocksource == Clocksource::uv_rtc && !rtc_)
      throw config::ConfigError(m.platform().file, "platform.uv_rtc",
                                "clocksource uv-rtc needs the platform's \"uv_rtc\" section (a hub-local RTC)");
    if (m.hpet_params() == nullptr)
      throw config::ConfigError(m.platform().file, "platform.hpet", "aim7-compute needs the platform's \"hpet\" section");
    hpet_ = *m.hpet_params();
  }

  Results run() override {
    Results r;
    Outcome o = Aim7Run(m_, hpet_, rtc_ ? &*rtc_ : nullptr, p_, p_.clocksource).run();
    double tsc_jobs = o.jobs_per_min;
    if (p_.clocksource != Clocksource::tsc) {
      // The same machine, seed and job with the tsc clocksource.
      config::Registry registry;
      Machine tsc_machine(m_.platform(), m_.seed(), registry);
      tsc_jobs = Aim7Run(tsc_machine, *tsc_machine.hpet_params(), nullptr, p_, Clocksource::tsc).run().jobs_per_min;
    }
    r.add("jobs_per_min", o.jobs_per_min);
    r.add("jobs_per_min_vs_tsc", tsc_jobs > 0 ? o.jobs_per_min / tsc_jobs : 0);
    r.add("jobs_per_min_tsc", tsc_jobs);
    r.add("clock_read_cpu_pct", o.read_fn_pct);
    r.add("vdso_read_cpu_pct", o.vdso_pct);
    r.add("seqcount_retry_cpu_pct", o.retry_pct);
    r.add("clock_read_ns_mean", o.read_ns_mean);
    r.add("clock_read_ns_p99", o.read_ns_p99);
    r.add("vdso_read_ns_mean", o.vdso_ns_mean);
    r.add("vdso_read_ns_p99", o.vdso_ns_p99);
    r.add("hpet_reads_per_s", o.hpet_reads_per_s);
    r.add("hpet_busy_pct", o.hpet_busy_pct);
    r.add("hpet_queue_wait_ns_mean", o.hpet_wait_ns_mean);
    r.add("hpet_max_queue", o.hpet_max_queue);
    r.add("ktime_get_per_cpu_per_s", o.ktime_per_cpu_s);
    r.add("ktime_get_retries_per_call", o.retries_per_ktime);
    r.add("ticks_per_cpu_per_s", o.ticks_per_cpu_s);
    r.add("wall_time_updates_per_s", o.wall_updates_per_s);
    r.add("idle_periods_per_cpu_per_s", o.idle_periods_per_cpu_s);
    r.add("idle_cpu_pct", o.idle_pct);
    r.add("context_switches_per_cpu_per_s", o.switches_per_cpu_s);
    r.add("interrupts_in_spins_per_s", o.spin_interrupts_per_s);
    r.add("jobs_per_cpu_min", o.jobs_per_cpu.empty() ? 0 : *std::min_element(o.jobs_per_cpu.begin(), o.jobs_per_cpu.end()));
    r.add("jobs_per_cpu_median", median(o.jobs_per_cpu));
    r.add("jobs_per_cpu_max", o.jobs_per_cpu.empty() ? 0 : *std::max_element(o.jobs_per_cpu.begin(), o.jobs_per_cpu.end()));
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Machine& m_;
  Aim7Params p_;
  devices::HpetParams hpet_;
  std::optional<devices::UvRtcParams> rtc_;
};

}  // namespace

void register_aim7(WorkloadTable& t) {
  t.add("aim7-compute",
        "AIM7 compute-like jobs with the clock reads of the HZ tick, nohz idle around blocking waits, timers, "
        "system calls and the vDSO, per clocksource",
        [](config::Reader p, Machine& m) { return std::make_unique<Aim7Compute>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"jobs_per_min", "jobs/min", false}, {"clock_read_ns_mean", "ns", true}});
}

}  // namespace cohsim::models
