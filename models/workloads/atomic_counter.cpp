// A shared atomic counter: `threads` threads, thread i pinned to CPU i (the
// CPU numbering is the platform's, as Linux numbers it: on an x86 server the
// first threads of every core, socket by socket, then their SMT siblings),
// each incrementing one shared 64-bit counter with `lock xadd` (LDADDAL on an
// arm64 platform with LSE, executed where coherence.atomics.ld_op says) in a tight
// loop (__atomic_fetch_add / atomic_inc_return on x86), for a fixed simulated
// time after a warm-up. The counter is a global of the program: homed on
// `counter_node` (-1: CPU 0's node, where the main thread first touches it).
// ns_per_increment is the system-wide time between two increments: the
// window's length over the increments completed inside it. A hand-off is an
// increment by another CPU than the one before it (handoffs.<hop class>); one
// to another core moves the line (an SMT sibling shares it), and
// increments_per_transfer shows how many increments a core makes while it
// holds the line, until the next requester's forward reaches it. Every increment
// returns the value before it; two that return the same value would be a lost
// update, and stop the run.
#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <stdexcept>

#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"
#include "models/workloads/stats.hpp"

namespace cohsim::models {
namespace {

class AtomicCounter : public scenario::Workload {
 public:
  AtomicCounter(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    // The declared bound is any platform's (the exported schema covers them all); this platform's CPUs are checked below.
    threads_ = static_cast<int>(p.integer(
        "threads", Spec{.doc = "incrementing threads; thread i runs on CPU i (at most the platform's CPUs)", .def = 2,
                        .min = 1, .max = static_cast<double>(topo::kMaxCpus)}));
    if (threads_ > n && !p.schema_mode())
      p.fail("threads", fmt::format("{} threads, one per CPU: this platform has {} CPUs (0-{})", threads_, n, n - 1));
    warmup_ = p.time("warmup", Spec{.doc = "simulated time before measuring", .def = "20us", .min = 0, .max = 1e12});
    duration_ = p.time("duration", Spec{.doc = "measured simulated time", .def = "200us", .min = 1e5, .max = 1e12});
    counter_node_ = static_cast<int>(p.integer(
        "counter_node", Spec{.doc = "home node of the counter (-1: the node of CPU 0, whose main thread first "
                                    "touches it)",
                             .def = -1, .min = -1, .max = m.topology().node_count() - 1.0}));
    if (p.schema_mode()) return;
    if (counter_node_ < 0) counter_node_ = m.topology().node_of_cpu(0);
    counter_ = m.memory().alloc(counter_node_, 64, 64, "atomic_counter.value");
  }

  Results run() override {
    auto& sim = m_.sim();
    window_end_ = warmup_ + duration_;
    window_.schedule(sim, warmup_, window_end_);
    in_window_.assign(static_cast<std::size_t>(threads_), 0);
    for (int i = 0; i < threads_; ++i) sim.spawn(fmt::format("cpu{} atomic-counter", i), thread(i));
    sim.run(kWorkloadLimits);

    Results r;
    std::uint64_t counted = 0;
    std::vector<double> per_thread;
    for (std::uint64_t k : in_window_) {
      counted += k;
      per_thread.push_back(static_cast<double>(k));
    }
    r.add("ns_per_increment", counted ? sim::to_ns(window_.length()) / static_cast<double>(counted) : 0.0);
    r.add("increments_per_us", static_cast<double>(counted) / (sim::to_ns(window_.length()) / 1e3));
    r.add("increments", static_cast<double>(counted));
    r.add("increments_total", static_cast<double>(total_));
    r.add("counter_value", static_cast<double>(m_.fabric().peek(counter_, 8)));
    std::uint64_t handoffs = 0;
    for (int c = 0; c < topo::kHopClasses; ++c) {
      const auto cls = static_cast<topo::HopClass>(c);
      if (cls != topo::HopClass::smt) handoffs += handoffs_[static_cast<std::size_t>(c)];  // a sibling shares the line
      if (m_.topology().hop_class_exists(cls))
        r.add(fmt::format("handoffs.{}", topo::hop_class_name(cls)), static_cast<double>(handoffs_[static_cast<std::size_t>(c)]));
    }
    r.add("increments_per_transfer", handoffs ? static_cast<double>(counted) / static_cast<double>(handoffs) : 0.0);
    r.add("per_thread_min", *std::min_element(per_thread.begin(), per_thread.end()));
    r.add("per_thread_median", median(per_thread));
    r.add("per_thread_max", *std::max_element(per_thread.begin(), per_thread.end()));
    r.extra["per_thread"] = in_window_;
    r.extra["placement"] = {{"threads", threads_}, {"cpus", fmt::format("0-{}", threads_ - 1)},
                            {"counter_node", counter_node_}};
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  // One thread: `lock xadd` on the counter until the window has closed.
  Task<void> thread(int i) {
    cpu::Cpu& c = m_.cpu(i);
    auto& sim = m_.sim();
    while (sim.now() < window_end_) {
      const std::uint64_t before = co_await c.rmw(counter_, 8, fabric::RmwOp::add, 1);
      if (before >= seen_.size()) seen_.resize(std::max<std::size_t>(2 * seen_.size(), before + 1), false);
      if (seen_[before])
        throw std::logic_error(fmt::format("atomic-counter: CPU {}'s increment read {}, as an earlier one did: an "
                                           "update was lost", i, before));
      seen_[before] = true;
      ++total_;
      if (window_.contains(sim.now())) {
        ++in_window_[static_cast<std::size_t>(i)];
        // A hand-off: the line moved to this CPU since the last increment.
        if (last_ >= 0 && last_ != i) ++handoffs_[static_cast<std::size_t>(m_.topology().hop_class(last_, i))];
      }
      last_ = i;
      sim.note_progress();
    }
  }

  Machine& m_;
  int threads_ = 1, counter_node_ = -1;
  Tick warmup_ = 0, duration_ = 0, window_end_ = 0;
  fabric::Addr counter_ = 0;
  std::uint64_t total_ = 0;                ///< increments completed, warm-up included
  std::vector<bool> seen_;                 ///< the values increments returned (each once)
  int last_ = -1;                          ///< the CPU of the latest increment
  std::array<std::uint64_t, topo::kHopClasses> handoffs_{};  ///< in the window, by the hop between the two CPUs
  std::vector<std::uint64_t> in_window_;  ///< per thread, inside the window
  MeasurementWindow window_;
};

}  // namespace

void register_atomic_counter(WorkloadTable& t) {
  t.add("atomic-counter",
        "threads 0..N-1 (thread i on CPU i) increment one shared counter with lock xadd; the time between increments",
        [](config::Reader p, Machine& m) { return std::make_unique<AtomicCounter>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"ns_per_increment", "ns", true}});
}

}  // namespace cohsim::models
