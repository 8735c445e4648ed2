// Core-to-core latency: two CPUs ping-pong one line with compare-and-swap, as
// the core-to-core-latency tool (nviennot) does: CPU a swaps PING->PONG, CPU b
// PONG->PING, each retrying until it succeeds. One way = half a round trip.
// op=blind-cas (the default, the tool's CAS benchmark): the expected value is
// known, so each turn is one access, the CAS that takes the line exclusive.
// op=cas (a cmpxchg loop as kernel code writes it, `old = READ_ONCE(*p)` then
// `cmpxchg(p, old, new)`): each turn loads the line (a shared read of the
// other CPU's modified copy) until it holds the expected value, then the CAS
// upgrades it to exclusive (invalidating that copy): two transactions.
#include <algorithm>
#include <fmt/format.h>

#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"

namespace cohsim::models {
namespace {

constexpr std::uint64_t kPing = 1, kPong = 2;

class C2c : public scenario::Workload {
 public:
  C2c(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    cpu_a_ = static_cast<int>(p.integer("cpu_a", Spec{.doc = "first CPU of the pair", .def = 0, .min = 0, .max = n - 1.0}));
    cpu_b_ = static_cast<int>(p.integer("cpu_b", Spec{.doc = "second CPU of the pair", .def = 1, .min = 0, .max = n - 1.0}));
    rounds_ = static_cast<int>(p.integer("rounds", Spec{.doc = "measured round trips", .def = 1000, .min = 1, .max = 1e7}));
    warmup_ = static_cast<int>(p.integer("warmup", Spec{.doc = "round trips before measuring", .def = 100, .min = 0, .max = 1e6}));
    cas_load_first_ = p.choice("op", Spec{.doc = "blind-cas: each turn is one CAS with the expected value known; cas: "
                                                 "a load until the line holds the expected value, then the CAS",
                                          .def = "blind-cas", .choices = {"blind-cas", "cas"}}) == "cas";
    matrix_ = p.boolean("matrix", Spec{.doc = "also measure one pair of every hop class", .def = false});
    line_node_ = static_cast<int>(p.integer(
        "line_node", Spec{.doc = "home node of the shared line (-1: the node of cpu_a, where the tool's main thread "
                                 "first touches it)",
                          .def = -1, .min = -1, .max = m.topology().node_count() - 1.0}));
    if (cpu_a_ == cpu_b_ && !p.schema_mode()) p.fail("cpu_b", "must differ from cpu_a");
  }

  Results run() override {
    Results r;
    r.add("one_way_ns", measure(cpu_a_, cpu_b_));
    const topo::HopClass pair_class = m_.topology().hop_class(cpu_a_, cpu_b_);
    // The metric is the class's index (nearest first) for sweeps and compares;
    // the results' "pair" names it.
    r.add("hop_class", static_cast<double>(pair_class));
    r.extra["pair"] = {{"cpu_a", cpu_a_}, {"cpu_b", cpu_b_}, {"hop_class", topo::hop_class_name(pair_class)}};
    if (matrix_) {
      for (int c = 0; c < topo::kHopClasses; ++c) {
        auto cls = static_cast<topo::HopClass>(c);
        for (int b = 1; b < m_.cpu_count(); ++b)
          if (m_.topology().hop_class(0, b) == cls) {
            r.add(fmt::format("one_way_ns.{}", topo::hop_class_name(cls)), measure(0, b));
            break;
          }
      }
    }
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Task<void> player(int cpu, fabric::Addr flag, std::uint64_t from, std::uint64_t to, int n, std::vector<Tick>* stamps) {
    cpu::Cpu& c = m_.cpu(cpu);
    for (int i = 0; i < n; ++i) {
      for (;;) {
        if (cas_load_first_)
          co_await c.spin_until(flag, 8, [from](std::uint64_t v) { return v == from; }, cpu::Order::relaxed,
                                "c2c: the other CPU's swap (load before the CAS)");
        std::uint64_t old = co_await c.cmpxchg(flag, 8, from, to, cpu::Order::full);
        if (old == from) break;
        co_await c.wait_for_change(flag, "c2c: the other CPU's swap");
      }
      if (stamps) stamps->push_back(m_.sim().now());
      m_.sim().note_progress();
    }
  }

  double measure(int a, int b) {
    int node = line_node_ >= 0 ? line_node_ : m_.topology().node_of_cpu(a);
    fabric::Addr flag = m_.memory().alloc(node, 64, 64, fmt::format("c2c.flag[{}-{}]", a, b));
    m_.fabric().poke(flag, 8, kPing);
    std::vector<Tick> stamps;
    const int n = warmup_ + rounds_ + 1;
    m_.sim().spawn(fmt::format("cpu{} ping", a), player(a, flag, kPing, kPong, n, &stamps));
    m_.sim().spawn(fmt::format("cpu{} pong", b), player(b, flag, kPong, kPing, n, nullptr));
    m_.sim().run(kWorkloadLimits);
    // The window: from the end of the warm-up round trips to the last one's
    // end. As the tool does, the time of all its round trips over twice their
    // number: the mean, not the median. The two differ when turns alternate
    // between two lengths (which side wins a race at the L3's atomic unit,
    // docs/model.md "Core-to-core latency"): the median then picks one of them.
    MeasurementWindow window;
    window.open(stamps.at(static_cast<std::size_t>(warmup_)));
    window.close(stamps.back());
    const auto trips = static_cast<double>(stamps.size() - 1 - static_cast<std::size_t>(warmup_));
    return sim::to_ns(window.length()) / (2 * trips);
  }

  Machine& m_;
  int cpu_a_, cpu_b_, rounds_, warmup_, line_node_;
  bool matrix_;
  bool cas_load_first_;  ///< op=cas: load until the expected value shows, then the CAS
};

}  // namespace

void register_c2c(WorkloadTable& t) {
  t.add("c2c", "core-to-core latency: CAS ping-pong of one line between cpu_a and cpu_b (op: blind-cas or cas)",
        [](config::Reader p, Machine& m) { return std::make_unique<C2c>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"one_way_ns", "ns", true}});
}

}  // namespace cohsim::models
