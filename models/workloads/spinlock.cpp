// Spinlock contention: threads on a list of CPUs take one lock around a short
// critical section (a little arithmetic, then one bit flipped at a
// pseudo-random place of a shared 1 MiB array) until a fixed number of
// critical sections is done in total. Three locks (models/kernel/qspinlock.hpp
// and spinlock_kinds.hpp):
//   tas       glibc pthread_spin_lock (nptl/pthread_spin_lock.c, glibc 2.28+):
//             an atomic exchange, then test-and-test-and-set: spin on plain
//             loads until the word is 0, then a CAS. Unlock: store-release 0.
//   ticket    the arm64 ticket lock of Linux 4.x (arch/arm64/include/asm/spinlock.h
//             before 4.19): fetch-add on `next`, spin (WFE) until `owner` equals
//             the ticket; unlock: owner + 1 with release (a halfword).
//   qspinlock Linux qspinlock (kernel/locking/qspinlock.c, v5.9, NR_CPUS < 16K):
//             cmpxchg fast path; a pending bit for the first waiter; an MCS queue
//             of per-CPU nodes for the rest, each spinning on its own node.
//   cna       the same qspinlock with CNA's NUMA-aware slow path (models/kernel/cna.hpp,
//             the series' v11): the head prefers a waiter on its own node.
// The threads start together, or each at a random time below `start_stagger`
// (a FIFO lock keeps the turn order its first round set, so the stagger lets
// the seed choose that order). The lock and the array are a module's globals: on the node of the first CPU
// of the list (the one that loaded the module) unless `home_node` says otherwise.
#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "cohsim/sim/log.hpp"
#include "cohsim/sim/random.hpp"
#include "models/kernel/cna.hpp"
#include "models/kernel/qspinlock.hpp"
#include "models/kernel/spinlock_kinds.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"

namespace cohsim::models {
namespace {

using config::Spec;
using cpu::Cpu;
using fabric::Addr;
using scenario::Machine;
using scenario::Results;
using sim::Task;

class Spinlock : public scenario::Workload {
 public:
  Spinlock(config::Reader p, Machine& m) : m_(m) {
    cpus_ = p.cpu_list("cpus", Spec{.doc = "CPUs of the contending threads", .def = "0,1,24,25"}, m.cpu_count());
    lock_kind_ = p.choice("lock", Spec{.doc = "tas (glibc pthread spinlock), ticket (arm64 ticket lock), qspinlock or "
                                              "cna (qspinlock with the CNA slow path)",
                                       .def = "tas", .choices = {"tas", "ticket", "qspinlock", "cna"}});
    sections_ = p.integer("sections", Spec{.doc = "critical sections in total, over all threads", .def = 4000,
                                           .min = 1, .max = 1e8});
    array_bytes_ = p.size("array", Spec{.doc = "shared array the critical section flips bits in", .def = "1MiB",
                                        .min = 64, .max = 1e10});
    cs_cycles_ = static_cast<double>(p.integer(
        "cs_cycles", Spec{.doc = "arithmetic inside the critical section, in core cycles", .def = 20, .min = 0, .max = 1e7}));
    think_cycles_ = static_cast<double>(p.integer(
        "think_cycles", Spec{.doc = "work between two acquisitions, in core cycles", .def = 50, .min = 0, .max = 1e8}));
    start_stagger_ = p.time("start_stagger", Spec{.doc = "each thread starts at a random time in [0, this): which CPU "
                                                          "reaches the lock first, and so the turn order of a FIFO lock, "
                                                          "then depends on the seed (0: all start together)",
                                                   .def = "0ns", .min = 0, .max = 1e12});
    const int nodes = m.topology().node_count();
    home_node_ = static_cast<int>(p.integer(
        "home_node", Spec{.doc = "node of the lock and the array (-1: the node of the first CPU, which loaded the module)",
                          .def = -1, .min = -1, .max = nodes - 1.0}));
    const kernel::CnaParams cna = kernel::read_cna_params(p, lock_kind_ == "cna");
    if (p.schema_mode()) return;
    if (home_node_ < 0) home_node_ = m.topology().node_of_cpu(cpus_.front());
    lock_ = m.memory().alloc(home_node_, 64, 64, fmt::format("spinlock.{}", lock_kind_));
    array_ = m.memory().alloc(home_node_, array_bytes_, 64, "spinlock.array");
    if (lock_kind_ == "qspinlock") qnodes_.emplace(m.memory(), m.topology());  // per-CPU, on each CPU's node
    if (lock_kind_ == "cna")
      cna_ = std::make_unique<kernel::KernelSpinlocks>(true, cna, m.fabric(), m.memory(), m.topology(), m.seed());
  }

  Results run() override {
    // The window: no warm-up; from the start to the end of the last critical section.
    window_.open(m_.sim().now());
    for (int c : cpus_) m_.sim().spawn(fmt::format("cpu{} spinlock thread", c), thread(c));
    m_.sim().run(kWorkloadLimits);
    Results r;
    r.add("total_ms", sim::to_ns(window_.length()) / 1e6);
    r.add("ns_per_section", sim::to_ns(window_.length()) / static_cast<double>(sections_));
    for (int c = 0; c < topo::kHopClasses; ++c) {
      auto cls = static_cast<topo::HopClass>(c);
      if (m_.topology().hop_class_exists(cls))
        r.add(fmt::format("handoffs.{}", topo::hop_class_name(cls)), static_cast<double>(handoffs_[c]));
    }
    r.add("reacquired", static_cast<double>(reacquired_));
    std::uint64_t lo = ~0ull, hi = 0;
    for (int c : cpus_) {
      lo = std::min(lo, done_by_[c]);
      hi = std::max(hi, done_by_[c]);
    }
    const double share_max = static_cast<double>(hi) / static_cast<double>(sections_);
    r.add("share_min", static_cast<double>(lo) / static_cast<double>(sections_));
    r.add("share_max", share_max);
    r.add("max_streak", static_cast<double>(max_streak_));
    // An unfair lock (tas lets the releaser retake it): ns_per_section is then the lock's throughput with
    // few threads really contending, not what a thread waits; comparing it with a fair lock's says so.
    // Unfair: one CPU took more than twice an even share (with 2 CPUs, more than 3/4), counted over at
    // least two sections per CPU. The warning goes to the log and into the results (reports list it).
    const auto n = static_cast<double>(cpus_.size());
    const double even = 1.0 / n;
    if (cpus_.size() > 1 && static_cast<double>(sections_) >= 2 * n && share_max > std::min(2 * even, (1 + even) / 2)) {
      const std::string warning = fmt::format(
          "lock {} is unfair here: one CPU took {:.1f} % of the sections (an even share is {:.1f} %), {} in a row "
          "at the most; ns_per_section is its throughput, not a thread's wait",
          lock_kind_, 100 * share_max, 100 * even, max_streak_);
      cohsim::log("spinlock")->warn("{}", warning);
      r.extra["warnings"].push_back(warning);
    }
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Task<void> thread(int cpu) {
    Cpu& c = m_.cpu(cpu);
    sim::RandomStream rng(m_.seed(), fmt::format("spinlock.flip.cpu{}", cpu));
    if (start_stagger_ > 0) {
      sim::RandomStream start(m_.seed(), fmt::format("spinlock.start.cpu{}", cpu));
      co_await m_.sim().delay(static_cast<sim::Tick>(start.below(static_cast<std::uint64_t>(start_stagger_))));
    }
    for (;;) {
      co_await lock(c);
      if (taken_ >= sections_) {
        co_await unlock(c);
        break;
      }
      ++taken_;
      ++done_by_[cpu];
      if (holder_ == cpu) ++reacquired_;
      else if (holder_ >= 0) ++handoffs_[static_cast<int>(m_.topology().hop_class(holder_, cpu))];
      streak_ = holder_ == cpu ? streak_ + 1 : 1;
      max_streak_ = std::max(max_streak_, streak_);
      holder_ = cpu;
      // The critical section: some arithmetic, then one bit flipped somewhere in the array.
      co_await c.compute_cycles(cs_cycles_);
      const std::uint64_t bit = rng.below(array_bytes_ * 8);
      const Addr word = array_ + (bit / 64) * 8;
      std::uint64_t v = co_await c.load(word, 8);
      co_await c.store(word, 8, v ^ (1ull << (bit % 64)));
      if (taken_ == sections_) window_.close(m_.sim().now());
      co_await unlock(c);
      m_.sim().note_progress();
      co_await c.compute_cycles(think_cycles_);
    }
  }

  Task<void> lock(Cpu& c) {
    if (lock_kind_ == "tas") return kernel::pthread_spin_lock(c, lock_);
    if (lock_kind_ == "ticket") return kernel::ticket_spin_lock(c, lock_);
    if (cna_) return kernel::queued_spin_lock(c, cna_->lock(lock_));
    return kernel::queued_spin_lock(c, kernel::Qspinlock{lock_, &*qnodes_});
  }

  Task<void> unlock(Cpu& c) {
    if (lock_kind_ == "tas") return kernel::pthread_spin_unlock(c, lock_);
    if (lock_kind_ == "ticket") return kernel::ticket_spin_unlock(c, lock_);
    if (cna_) return kernel::queued_spin_unlock(c, cna_->lock(lock_));
    return kernel::queued_spin_unlock(c, kernel::Qspinlock{lock_, &*qnodes_});
  }

  Machine& m_;
  std::vector<int> cpus_;
  std::string lock_kind_;
  std::int64_t sections_ = 0;
  std::uint64_t array_bytes_ = 0;
  double cs_cycles_ = 0, think_cycles_ = 0;
  sim::Tick start_stagger_ = 0;
  int home_node_ = -1;
  Addr lock_ = 0, array_ = 0;
  std::optional<kernel::Qnodes> qnodes_;
  std::unique_ptr<kernel::KernelSpinlocks> cna_;  ///< lock=cna: 32-byte qnodes and the CNA state
  std::int64_t taken_ = 0;
  int holder_ = -1;
  std::map<int, std::uint64_t> done_by_;
  std::array<std::uint64_t, topo::kHopClasses> handoffs_{};
  std::uint64_t reacquired_ = 0;
  std::uint64_t streak_ = 0, max_streak_ = 0;  ///< sections in a row by one CPU: now, and the longest
  MeasurementWindow window_;  ///< every section counted is inside it
};

}  // namespace

void register_spinlock(WorkloadTable& t) {
  t.add("spinlock", "threads on `cpus` contend for one lock (tas | ticket | qspinlock | cna) around a short critical section",
        [](config::Reader p, Machine& m) { return std::make_unique<Spinlock>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"ns_per_section", "ns", true}, {"total_ms", "ms", true}});
}

}  // namespace cohsim::models
