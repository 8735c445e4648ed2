// One-way IPI latency, send to handler entry, between pairs of CPUs (the
// x86 IPI heat-map measurement): the source CPU takes a timestamp and sends
// one IPI vector through the local APIC driver's send path
// (apic->send_IPI: weak_wrmsr_fence + WRMSR on x2APIC, the ICR poll and two
// MMIO writes on xAPIC); the target's handler notes its entry time (the
// handler's first instruction, after the core's interrupt entry), then
// acknowledges with a store the source waits for. Each source in turn sends
// `ipis_per_pair` IPIs to every other CPU; the first of each pair warms up.
// The measurement window is open from each measured send to its
// acknowledgement, so the APIC counters cover exactly the measured IPIs.
// The harness hands the source role from CPU to CPU outside simulated
// memory (not part of any measurement); with idle=halt the next source is
// woken by an unmeasured IPI.
#include <fmt/format.h>

#include "cohsim/irq/apic.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/stats.hpp"

namespace cohsim::models {
namespace {

/// The measured vector and the unmeasured hand-over one (any free vectors above 32).
constexpr int kTestVector = 0xf2, kKickVector = 0xf3;

class IpiLatency : public scenario::Workload {
 public:
  IpiLatency(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    sources_ = p.cpu_list("sources", Spec{.doc = "CPUs that send, in turn, to every other CPU (default: all)", .def = n}, n);
    ipis_per_pair_ = static_cast<int>(p.integer(
        "ipis_per_pair", Spec{.doc = "IPIs per (source, target) pair; the first warms up", .def = 3, .min = 2, .max = 1000}));
    const std::string idle = p.choice(
        "idle", Spec{.doc = "what the CPUs do while not sending: busy (compute; the IPI interrupts it) or halt (HLT; "
                            "the IPI wakes it, C1 exit)",
                     .def = "busy", .choices = {"busy", "halt"}});
    halt_ = idle == "halt";
    nox2apic_ = p.boolean("nox2apic", Spec{.doc = "the kernel's nox2apic boot option (xAPIC mode)", .def = false});
    if (p.schema_mode()) return;
    if (m.cpu(0).is_arm() || m.apic_params() == nullptr)
      throw config::ConfigError(m.platform().file, "platform.apic",
                                "missing section: the IPI latency benchmark needs an x86 platform with an \"apic\" section");
    if (n < 2) p.fail("sources", "needs at least two CPUs");
    if (nox2apic_ && n > static_cast<int>(irq::kXapicMaxApicId) + 1)
      p.fail("nox2apic", fmt::format("xAPIC addresses at most {} CPUs; this platform has {}", irq::kXapicMaxApicId + 1, n));
  }

  Results run() override {
    const int n = m_.cpu_count();
    std::vector<cpu::Cpu*> cpus;
    for (int c = 0; c < n; ++c) cpus.push_back(&m_.cpu(c));
    irq::Apic apic(*m_.apic_params(), m_.interconnect(), cpus, m_.apic_params()->mode == "x2apic" && !nox2apic_);
    // The module's per-CPU acknowledgement word, on each CPU's node and line.
    for (int c = 0; c < n; ++c)
      acks_.push_back(m_.memory().alloc(m_.topology().node_of_cpu(c), fabric::kLineBytes, fabric::kLineBytes,
                                        fmt::format("ipi_latency.ack[{}]", c)));
    expected_.assign(static_cast<std::size_t>(n), 0);
    entered_.assign(static_cast<std::size_t>(n), 0);
    apic.set_ipi_handler(kTestVector, [this, &apic](cpu::Cpu& c) -> Task<void> {
      const auto me = static_cast<std::size_t>(c.id());
      entered_[me] = apic.handler_entered(c.id());
      co_await c.store(acks_[me], 8, expected_[me], cpu::Order::release);
    });
    apic.set_ipi_handler(kKickVector, [](cpu::Cpu&) -> Task<void> { co_return; });
    const std::size_t delivered = window_.track([&apic] { return apic.stats().delivered; });
    const std::size_t delivery_time = window_.track([&apic] { return apic.stats().delivery_latency; });
    const std::size_t busy_reads = window_.track([&apic] { return apic.stats().busy_reads; });
    turn_ = 0;
    for (int c = 0; c < n; ++c) m_.sim().spawn(fmt::format("cpu{} ipi_latency", c), program(apic, c), true);
    m_.sim().spawn("ipi_latency end", [](IpiLatency& w) -> Task<void> {
      while (w.turn_ < w.sources_.size()) co_await w.all_done_.wait(w.m_.sim(), "every source done");
    }(*this));
    m_.sim().run();

    Results r;
    std::vector<double> all;
    all.insert(all.end(), same_socket_.begin(), same_socket_.end());
    all.insert(all.end(), cross_socket_.begin(), cross_socket_.end());
    r.add("one_way_ipi_ns", median(all));
    r.add("one_way_ipi_ns.p10", percentile(all, 10));
    r.add("one_way_ipi_ns.p90", percentile(all, 90));
    if (!same_socket_.empty()) r.add("one_way_ipi_ns.same_socket", median(same_socket_));
    if (!cross_socket_.empty()) r.add("one_way_ipi_ns.cross_socket", median(cross_socket_));
    r.add("samples", static_cast<double>(all.size()));
    const auto ipis_delivered = static_cast<double>(window_.delta(delivered));
    r.add("ipi_delivery_ns", ipis_delivered > 0 ? sim::to_ns(window_.delta(delivery_time)) / ipis_delivered : 0.0);
    r.add("icr_busy_reads", static_cast<double>(window_.delta(busy_reads)));
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  /// What CPU `me` does: wait for its turn (busy or halted), send, hand over.
  Task<void> program(irq::Apic& apic, int me) {
    cpu::Cpu& c = m_.cpu(me);
    for (;;) {
      while (turn_ < sources_.size() && sources_[turn_] != me) {
        if (halt_) co_await c.wfi();
        else co_await c.compute(sim::kUs);
      }
      if (turn_ >= sources_.size()) co_return;
      co_await send_all(apic, c);
      ++turn_;
      m_.sim().note_progress();
      if (turn_ >= sources_.size()) {
        all_done_.notify_all(m_.sim());
        co_return;
      }
      if (halt_ && sources_[turn_] != me) {
        const std::vector<int> next(1, sources_[turn_]);
        co_await apic.send_ipi(c, next, kKickVector);
      }
    }
  }

  Task<void> send_all(irq::Apic& apic, cpu::Cpu& c) {
    for (int t = 0; t < m_.cpu_count(); ++t) {
      if (t == c.id()) continue;
      const auto ti = static_cast<std::size_t>(t);
      const std::vector<int> target(1, t);
      const bool same = m_.topology().cpu(t).socket == m_.topology().cpu(c.id()).socket;
      for (int k = 0; k < ipis_per_pair_; ++k) {
        const std::uint64_t seq = ++expected_[ti];
        const Tick sent = m_.sim().now();
        if (k > 0) window_.open(sent);
        co_await apic.send_ipi(c, target, kTestVector);
        co_await c.spin_until(acks_[ti], 8, [seq](std::uint64_t v) { return v == seq; }, cpu::Order::acquire,
                              "ipi_latency: the target's acknowledgement");
        if (k > 0) {
          window_.close(m_.sim().now());
          (same ? same_socket_ : cross_socket_).push_back(sim::to_ns(entered_[ti] - sent));
        }
      }
    }
  }

  Machine& m_;
  std::vector<int> sources_;
  int ipis_per_pair_ = 3;
  bool halt_ = false, nox2apic_ = false;
  std::size_t turn_ = 0;
  sim::Signal all_done_;
  MeasurementWindow window_;
  std::vector<fabric::Addr> acks_;
  std::vector<std::uint64_t> expected_;
  std::vector<Tick> entered_;
  std::vector<double> same_socket_, cross_socket_;
};

}  // namespace

void register_ipi_latency(WorkloadTable& t) {
  t.add("ipi-latency", "x86 one-way IPI latency: send to handler entry between CPU pairs, same and cross socket",
        [](config::Reader p, Machine& m) { return std::make_unique<IpiLatency>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"one_way_ipi_ns", "ns", true}});
}

}  // namespace cohsim::models
