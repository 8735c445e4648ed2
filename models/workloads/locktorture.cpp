// locktorture with torture_type=spin_lock, writers only (Linux v5.9
// kernel/locking/locktorture.c and kernel/torture.c; reference section 9).
// `threads` writer kthreads (nwriters_stress), each in lock_torture_writer:
//   with probability 2^-20 sleep a jiffy;
//   spin_lock(&torture_spinlock);
//   check and set the global bool lock_is_write_held, read the atomic
//   lock_is_read_held (module data), n_lock_acquired++ in the writer's 16-byte
//   slot of a kmalloc'd array (four writers per line);
//   torture_spin_lock_write_delay: with probability 1/(nw*2000*100) mdelay(100)
//   holding the lock, with 1/(nw*2*2) udelay(2), with 1/(nw*20000) a
//   preemption point (nothing else is runnable: it returns at once); three
//   torture_random() steps and their 64-bit remainders otherwise;
//   clear lock_is_write_held; spin_unlock; stutter_wait, torture_must_stop
//   (read-mostly module flags).
// The module's statics and the stats array are on the node of the CPU that
// ran insmod (`insmod_cpu`). The kthreads are not pinned; `placement` says
// where the scheduler has put them (models/workloads/lock_placement.hpp).
// The 100-ms hold happens about once per 200,000 x nw acquisitions, seconds
// apart: far more rarely than a simulated window can show. It is accounted
// exactly instead: every acquisition has that probability of holding the lock
// (and so every other writer) for 100 ms more, added to the window's time in
// `ops_per_us`; `ops_per_us_short_holds` is the simulated rate alone. Both
// are over CNA's preference epochs as lock_epochs.hpp describes.
// Not modelled: the shuffler's affinity changes every 3 jiffies and the
// stutter pauses (they stop and restart the writers every few jiffies; the
// totals of a run of seconds then cover the running part at the rate here).
#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "cohsim/sim/random.hpp"
#include "models/kernel/cna.hpp"
#include "models/registry.hpp"
#include "models/workloads/lock_epochs.hpp"
#include "models/workloads/lock_placement.hpp"
#include "models/workloads/lock_stats.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"

namespace cohsim::models {
namespace {

using cpu::Cpu;
using fabric::Addr;

constexpr sim::Tick kLongDelay = 100 * sim::kMs;  // longdelay_ms
constexpr sim::Tick kShortDelay = 2 * sim::kUs;   // shortdelay_us
constexpr sim::Tick kJiffy = sim::kMs;            // HZ=1000 (the 2^-20 sleep only)

class Locktorture : public scenario::Workload {
 public:
  Locktorture(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    threads_ = static_cast<int>(p.integer(
        "threads", Spec{.doc = "writer kthreads (locktorture nwriters_stress), at most one per CPU", .def = 4, .min = 1,
                        .max = static_cast<double>(n)}));
    lock_kind_ = p.choice("lock", Spec{.doc = "the kernel's spinlock: qspinlock (stock slow path) or cna (the CNA "
                                              "slow path, numa_spinlock=on)",
                                       .def = "qspinlock", .choices = {"qspinlock", "cna"}});
    placement_ = p.choice(
        "placement", Spec{.doc = "where the scheduler runs the unpinned writers: spread (the load balancer's steady "
                                 "state: node by node in turn, idle cores before second threads) or packed (fork "
                                 "placement: the parent's node full first)",
                          .def = "spread", .choices = {"spread", "packed"}});
    write_held_line_ = p.choice(
        "write_held_line", Spec{.doc = "where lock_is_write_held and lock_is_read_held sit: own (a line of their "
                                       "own, .bss apart from the lock) or lock (the lock's line)",
                                .def = "own", .choices = {"own", "lock"}});
    insmod_cpu_ = static_cast<int>(p.integer(
        "insmod_cpu", Spec{.doc = "CPU that loaded the module: its node holds the lock, the flags and the stats array",
                           .def = 0, .min = 0, .max = n - 1.0}));
    hold_cycles_ = static_cast<double>(p.integer(
        "hold_cycles", Spec{.doc = "estimate: torture_spin_lock_write_delay's own work while holding the lock (three "
                                   "torture_random() steps and three 64-bit remainders), core cycles",
                            .def = 140, .min = 0, .max = 1e6, .estimate_range = {40, 320}}));
    outside_cycles_ = static_cast<double>(p.integer(
        "outside_cycles", Spec{.doc = "estimate: the writer loop's work outside the lock besides its modelled "
                                      "accesses (the 2^-20 draw, the calls, preempt count), core cycles",
                               .def = 50, .min = 0, .max = 1e6, .estimate_range = {20, 120}}));
    timing_ = read_lock_run_timing(p);
    const kernel::CnaParams cna = kernel::read_cna_params(p, lock_kind_ == "cna");
    if (p.schema_mode()) return;
    cpus_ = scheduler_placement(m.topology(), threads_, placement_);
    const int home = m.topology().node_of_cpu(insmod_cpu_);
    lock_word_ = m.memory().alloc(home, 64, 64, "torture_spinlock");
    flags_ = write_held_line_ == "lock" ? lock_word_ + 8 : m.memory().alloc(home, 64, 64, "lock_is_write_held");
    globals_ = m.memory().alloc(home, 64, 64, "stutter_pause_test/fullstop");
    const auto stats_bytes = static_cast<std::uint64_t>(threads_) * 16;
    stats_ = m.memory().alloc(home, (stats_bytes + 63) / 64 * 64, 64, "lwsa (lock_stress_stats)");
    locks_ = std::make_unique<kernel::KernelSpinlocks>(lock_kind_ == "cna", cna, m.fabric(), m.memory(), m.topology(),
                                                       m.seed());
    stats_view_ = std::make_unique<LockStats>(m.topology(), cpus_);
  }

  Results run() override {
    auto& sim = m_.sim();
    epochs_.emplace(timing_);
    epochs_->schedule(window_, sim);
    end_ = epochs_->end();
    sim.spawn("lock epochs", epochs_->expire_at_each_part(sim, locks_->cna(), lock_word_));
    sim::RandomStream start(m_.seed(), "locktorture.start");
    for (int t = 0; t < threads_; ++t)
      sim.spawn(fmt::format("cpu{} lock_torture_writer", cpus_[static_cast<std::size_t>(t)]),
                writer(t, static_cast<sim::Tick>(start.below(static_cast<std::uint64_t>(timing_.start_stagger) + 1))));
    sim.run(kWorkloadLimits);
    Results r;
    const double n = static_cast<double>(stats_view_->total());
    const double rate = epochs_->rate_per_us();
    // Each acquisition holds the lock 100 ms more with probability 1/(nw*2000*100).
    const double p_long = 1.0 / (static_cast<double>(threads_) * 2000.0 * 100.0);
    r.add("ops_per_us", rate == 0 ? 0.0 : 1.0 / (1.0 / rate + p_long * sim::to_ns(kLongDelay) / 1e3));
    r.add("ops_per_us_short_holds", rate);
    const auto rates = epochs_->rates();
    r.extra["epoch_ops_per_us"] = rates;
    r.add("epoch_ops_per_us_min", *std::min_element(rates.begin(), rates.end()));
    r.add("epoch_ops_per_us_max", *std::max_element(rates.begin(), rates.end()));
    r.add("ops", n);
    stats_view_->add_metrics(r, "");
    r.add("lock_fail", static_cast<double>(lock_fail_));
    r.add("short_delays", static_cast<double>(short_delays_));
    add_cna_metrics(r, locks_->cna());
    if (const std::string empty = epochs_->empty_part(); !empty.empty()) r.failures.push_back(empty);
    if (stats_view_->violations() > 0 || lock_fail_ > 0)
      r.failures.push_back(fmt::format("mutual exclusion broken: {} overlapping holders, n_lock_fail {}",
                                       stats_view_->violations(), lock_fail_));
    config::json place = config::json::array();
    for (int c : cpus_) place.push_back(c);
    r.extra["cpus"] = place;
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Task<void> writer(int t, sim::Tick start) {
    Cpu& c = m_.cpu(cpus_[static_cast<std::size_t>(t)]);
    auto& sim = m_.sim();
    sim::RandomStream rand(m_.seed(), fmt::format("locktorture.torture_random.writer{}", t));  // DEFINE_TORTURE_RANDOM
    const kernel::Qspinlock lock = locks_->lock(lock_word_);
    const Addr slot = stats_ + static_cast<Addr>(t) * 16 + 8;  // lwsp->n_lock_acquired
    const auto nw = static_cast<std::uint64_t>(threads_);
    co_await sim.delay(start);
    for (;;) {
      if ((rand.next() & 0xfffff) == 0) co_await sim.delay(kJiffy);  // schedule_timeout_uninterruptible(1)
      stats_view_->waiting(t);
      co_await kernel::queued_spin_lock(c, lock);
      if (sim.now() >= end_) {  // torture_must_stop: the window is over
        co_await kernel::queued_spin_unlock(c, lock);
        break;
      }
      stats_view_->acquired(t, window_.contains(sim.now()));
      if (window_.contains(sim.now())) epochs_->count(sim.now());
      if (co_await c.load(flags_, 1) != 0) ++lock_fail_;  // WARN_ON_ONCE(lock_is_write_held)
      co_await c.store(flags_, 1, 1);
      if (co_await c.load(flags_ + 4, 4) != 0) ++lock_fail_;  // lock_is_read_held
      co_await c.store(slot, 8, co_await c.load(slot, 8) + 1);
      // torture_spin_lock_write_delay
      if (rand.next() % (nw * 2000 * 100) == 0) ++long_delays_;  // mdelay(100): accounted in ops_per_us
      if (rand.next() % (nw * 2 * 2) == 0) {
        co_await c.compute(kShortDelay);  // udelay(2): a busy wait holding the lock
        if (window_.contains(sim.now())) ++short_delays_;
      }
      (void)(rand.next() % (nw * 20000));  // torture_preempt_schedule: nothing else to run
      co_await c.compute_cycles(hold_cycles_);
      co_await c.store(flags_, 1, 0);
      stats_view_->released();
      co_await kernel::queued_spin_unlock(c, lock);
      m_.sim().note_progress();
      co_await c.load(globals_, 4);      // stutter_wait: stutter_pause_test
      co_await c.load(globals_ + 4, 4);  // torture_must_stop: fullstop
      co_await c.compute_cycles(outside_cycles_);
    }
  }

  Machine& m_;
  int threads_ = 0, insmod_cpu_ = 0;
  std::string lock_kind_, placement_, write_held_line_;
  double hold_cycles_ = 0, outside_cycles_ = 0;
  LockRunTiming timing_;
  sim::Tick end_ = 0;
  std::vector<int> cpus_;
  Addr lock_word_ = 0, flags_ = 0, globals_ = 0, stats_ = 0;
  std::unique_ptr<kernel::KernelSpinlocks> locks_;
  std::unique_ptr<LockStats> stats_view_;
  std::uint64_t lock_fail_ = 0, long_delays_ = 0, short_delays_ = 0;
  MeasurementWindow window_;
  std::optional<LockEpochs> epochs_;
};

}  // namespace

void register_locktorture(WorkloadTable& t) {
  t.add("locktorture",
        "locktorture spin_lock writers (Linux v5.9): `threads` unpinned kthreads take one spinlock (qspinlock | cna) "
        "with the torture hold times",
        [](config::Reader p, Machine& m) { return std::make_unique<Locktorture>(p, m); },
        {{"ops_per_us", "ops/us", false}, {"fairness", "min/max", false}});
}

}  // namespace cohsim::models
