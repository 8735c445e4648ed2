// The published arm64 IPI benchmark (a kernel module loaded with
// `taskset -c <source> insmod`): for `rounds` rounds, for every target CPU,
// write `data_writes` separate cache-aligned module globals, then
// smp_call_function_single(target, empty_fn, NULL, wait=1). Idle CPUs sit in
// WFI. The GICv3 send path's barrier is the variant (wmb = dsb st, dsb ishst,
// or the too weak dmb ishst and none, whose lost calls the csd lock watchdog
// reports); the csd's place on the stack is a parameter (aligned, or
// straddling two lines as before Linux 4.14 aligned call_single_data_t).
// On x86 the same module runs over the local APIC (platform "apic" section;
// nox2apic selects xAPIC) with the targets idle as `idle` says.
#include <array>
#include <memory>
#include <fmt/format.h>

#include "cohsim/irq/apic.hpp"
#include "cohsim/irq/gicv3.hpp"
#include "models/kernel/smp_call.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"

namespace cohsim::models {
namespace {

/// Calls are reported by target: "self", then the hop class from the source.
constexpr std::size_t kClassSlots = 1 + topo::kHopClasses;

class IpiBench : public scenario::Workload {
 public:
  IpiBench(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    const double nodes = m.topology().node_count();
    source_ = static_cast<int>(p.integer(
        "source_cpu", Spec{.doc = "CPU that runs the module (taskset -c)", .def = 0, .min = 0, .max = n - 1.0}));
    rounds_ = static_cast<int>(p.integer("rounds", Spec{.doc = "measured rounds over all targets", .def = 1000,
                                                        .min = 1, .max = 1e6}));
    warmup_ = static_cast<int>(p.integer(
        "warmup_rounds", Spec{.doc = "rounds before measuring (cold caches)", .def = 1, .min = 0, .max = 1e4}));
    data_writes_ = static_cast<int>(p.integer(
        "data_writes", Spec{.doc = "stores to separate cache-aligned module globals before each call", .def = 7,
                            .min = 0, .max = 64}));
    targets_ = p.cpu_list("targets", Spec{.doc = "target CPUs of each round, in order (default: all)", .def = n}, n);
    data_node_ = static_cast<int>(p.integer(
        "data_node", Spec{.doc = "home node of the module globals (-1: the source CPU's node, where insmod ran)",
                          .def = -1, .min = -1, .max = nodes - 1}));
    stack_node_ = static_cast<int>(p.integer(
        "stack_node", Spec{.doc = "home node of the insmod task's stack, which holds the csd (-1: fork_node, "
                                  "where the task was forked)",
                           .def = -1, .min = -1, .max = nodes - 1}));
    fork_node_ = static_cast<int>(p.integer(
        "fork_node",
        Spec{.doc = "node of the CPU the shell forked the insmod task on: its kernel stack is vmalloc'd there at "
                    "fork, before taskset moves the task to source_cpu (-1: the source CPU's node)",
             .def = -1, .min = -1, .max = nodes - 1}));
    // The GICv3 send path's barrier exists only on arm64: on x86 it is not
    // read, so a value set for it is reported as having no effect here.
    barrier_ = irq::parse_send_barrier("wmb");
    if (m.cpu(0).is_arm() || p.schema_mode())
      barrier_ = irq::parse_send_barrier(p.choice(
          "barrier", Spec{.doc = "arm64: gic_ipi_send_mask barrier: wmb (dsb st, stock v5.17), dsb-ishst (patched), "
                                 "dmb-ishst (too weak: a DMB does not order the ICC_SGI1R_EL1 write) or none",
                          .def = "wmb", .choices = irq::send_barrier_names()}));
    csd_lock_timeout_ = p.time(
        "csd_lock_timeout",
        Spec{.doc = "csd lock watchdog (CONFIG_CSD_LOCK_WAIT_DEBUG): a call whose csd stays locked this long is "
                    "reported as lost and its IPI re-sent; source: v5.17 kernel/smp.c CSD_LOCK_TIMEOUT = 5 s",
             .def = "5s", .min = 1e6, .max = 1e13});
    const std::string csd = p.choice(
        "csd", Spec{.doc = "csd placement: aligned (32 B at a line start) or straddle (at line offset 48: "
                           "next/flags in one line, func/info in the next)",
                    .def = "aligned", .choices = {"aligned", "straddle"}});
    csd_offset_ = csd == "aligned" ? 0 : 48;
    // The estimates' plausible ranges (estimate_range): half to twice the
    // nominal instruction count, as no measurement splits these paths.
    costs_.call_path = cycles_param(p, m,
        "call_path_cycles",
        Spec{.doc = "estimate: kernel instructions of the send path outside its memory accesses and barriers "
                    "(get_cpu, cpumask tests, smp_cross_call, __ipi_send_mask), cycles",
             .def = 60, .min = 20, .max = 200, .estimate_range = {30, 120}});
    costs_.func_call = cycles_param(p, m,
        "func_call_cycles", Spec{.doc = "estimate: indirect call of the empty function and its return, cycles",
                                 .def = 5, .min = 2, .max = 20, .estimate_range = {3, 10}});
    const std::string idle = p.choice(
        "idle", Spec{.doc = "what the target CPUs do: halt (arm64 WFI; x86 HLT with TIF_POLLING_NRFLAG clear), poll "
                            "(x86 intel_idle MWAIT on thread_info flags: no IPI), busy (compute; the IPI interrupts)",
                     .def = "halt", .choices = {"halt", "poll", "busy"}});
    idle_ = idle == "halt" ? kernel::IdleMode::halt : idle == "poll" ? kernel::IdleMode::poll : kernel::IdleMode::busy;
    // The local APIC mode and the x86 idle loop's costs exist only on x86: on
    // arm64 (WFI idle, GICv3) they are not read, so a value set for them is
    // reported as having no effect and reports do not list them.
    nox2apic_ = false;
    if (!m.cpu(0).is_arm() || p.schema_mode()) {
      nox2apic_ = p.boolean("nox2apic", Spec{.doc = "x86: the kernel's nox2apic boot option (local APIC in xAPIC mode)",
                                             .def = false});
      costs_.idle_exit = cycles_param(p, m,
          "idle_exit_cycles",
          Spec{.doc = "estimate: x86 do_idle from the wake-up to the queue flush outside its accesses "
                      "(cpuidle exit, tick_nohz_idle_exit with the tick running), cycles",
               .def = 200, .min = 50, .max = 1000, .estimate_range = {100, 400}});
      costs_.schedule_idle = cycles_param(p, m,
          "schedule_idle_cycles",
          Spec{.doc = "estimate: x86 schedule_idle() picking the idle task again, cycles", .def = 300, .min = 100,
               .max = 2000, .estimate_range = {150, 600}});
    }
    if (p.schema_mode()) return;
    if (m.cpu(0).is_arm()) {
      if (m.gic_params() == nullptr)
        throw config::ConfigError(m.platform().file, "platform.gic",
                                  "missing section: the IPI benchmark needs the platform's GICv3 (\"gic\")");
      if (idle_ == kernel::IdleMode::poll)
        p.fail("idle", "arm64 (v5.17) has no polling idle (no TIF_POLLING_NRFLAG): use halt (WFI) or busy");
    } else {
      if (m.apic_params() == nullptr)
        throw config::ConfigError(m.platform().file, "platform.apic",
                                  "missing section: the x86 IPI benchmark needs the platform's local APIC (\"apic\")");
      if (nox2apic_ && m.cpu_count() > static_cast<int>(irq::kXapicMaxApicId) + 1)
        p.fail("nox2apic", fmt::format("xAPIC addresses at most {} CPUs; this platform has {}",
                                       irq::kXapicMaxApicId + 1, m.cpu_count()));
    }
  }

  Results run() override {
    std::vector<cpu::Cpu*> cpus;
    for (int c = 0; c < m_.cpu_count(); ++c) cpus.push_back(&m_.cpu(c));
    std::unique_ptr<irq::Gicv3> gic;
    std::unique_ptr<irq::Apic> apic;
    std::unique_ptr<kernel::SmpCall> smp_owner;
    if (m_.cpu(0).is_arm()) {
      gic = std::make_unique<irq::Gicv3>(*m_.gic_params(), m_.interconnect(), cpus);
      gic->set_send_barrier(barrier_);
      smp_owner = std::make_unique<kernel::SmpCall>(m_, *gic, costs_, idle_);
    } else {
      const bool x2apic = m_.apic_params()->mode == "x2apic" && !nox2apic_;
      apic = std::make_unique<irq::Apic>(*m_.apic_params(), m_.interconnect(), cpus, x2apic);
      smp_owner = std::make_unique<kernel::SmpCall>(m_, *apic, costs_, idle_);
    }
    kernel::SmpCall& smp = *smp_owner;
    smp.set_csd_lock_timeout(csd_lock_timeout_);
    const int self_node = m_.topology().node_of_cpu(source_);
    // Module globals: each on its own line (____cacheline_aligned) in module
    // memory, which load_module vmalloc'd on the node of the CPU running
    // insmod (source_cpu: taskset had moved the task before the exec).
    std::vector<fabric::Addr> globals;
    for (int i = 0; i < data_writes_; ++i)
      globals.push_back(m_.memory().alloc(data_node_ >= 0 ? data_node_ : self_node, fabric::kLineBytes,
                                          fabric::kLineBytes, fmt::format("ipi_benchmark.global{}", i)));
    // The insmod task's kernel stack (16 KiB, VMAP_STACK): allocated when the
    // shell forked the task, on that CPU's node; taskset then moved the task
    // to source_cpu. The csd sits in its frame.
    const int fork_node = fork_node_ >= 0 ? fork_node_ : self_node;
    const fabric::Addr stack = m_.memory().alloc(stack_node_ >= 0 ? stack_node_ : fork_node, 16384, 16384,
                                                 fmt::format("insmod stack (cpu{})", source_));
    const fabric::Addr csd = stack + 16384 - 4 * fabric::kLineBytes + csd_offset_;
    const fabric::Addr empty_fn = smp.register_function([](cpu::Cpu&, std::uint64_t) -> Task<void> { co_return; });
    for (int c = 0; c < m_.cpu_count(); ++c)
      if (c != source_) smp.start_idle(c);

    // The window: from the end of the warm-up rounds to the end of the last round.
    MeasurementWindow window;
    const cpu::CpuStats& source_stats = m_.cpu(source_).stats();
    const std::size_t barrier_stall = window.track([&] { return source_stats.barrier_stall; });
    const std::size_t spin_wakeups = window.track([&] { return source_stats.spin_wakeups; });
    const std::size_t ipis_sent = window.track([&] { return smp.ipis_sent(); });
    const std::size_t woken_without_ipi = window.track([&] { return smp.woken_without_ipi(); });
    const std::size_t delivered = window.track([&] { return gic ? gic->stats().delivered : apic->stats().delivered; });
    const std::size_t delivery_time = window.track([&] {
      return gic ? gic->stats().delivery_latency : apic->stats().delivery_latency;
    });
    const std::size_t icr_busy_reads = window.track([&] { return apic ? apic->stats().busy_reads : 0; });
    std::array<Tick, kClassSlots> class_time{};
    std::array<std::uint64_t, kClassSlots> class_calls{};
    // Calls the csd lock watchdog caught: counted, their time left out of the latencies.
    std::uint64_t lost_calls = 0;
    Tick lost_time = 0;
    auto bench = [&]() -> Task<void> {
      cpu::Cpu& c = m_.cpu(source_);
      for (int r = 0; r < warmup_ + rounds_; ++r) {
        if (r == warmup_) window.open(m_.sim().now());
        // For the progress line: the end, extrapolated from the rounds done.
        if (r > 0)
          m_.sim().set_expected_end(m_.sim().now() / static_cast<Tick>(r) * static_cast<Tick>(warmup_ + rounds_));
        for (int target : targets_) {
          const Tick t0 = m_.sim().now();
          for (fabric::Addr g : globals) co_await c.store(g, 8, static_cast<std::uint64_t>(r));
          const std::size_t timeouts_before = smp.csd_lock_timeouts().size();
          co_await smp.smp_call_function_single(c, target, empty_fn, 0, true, csd);
          if (window.is_open() && smp.csd_lock_timeouts().size() > timeouts_before) {
            ++lost_calls;
            lost_time += m_.sim().now() - t0;
          } else if (window.is_open()) {
            const std::size_t k = class_index(target);
            class_time[k] += m_.sim().now() - t0;
            ++class_calls[k];
          }
          m_.sim().note_progress();
        }
      }
      window.close(m_.sim().now());
    };
    m_.sim().spawn(fmt::format("cpu{} ipi_benchmark", source_), bench());
    m_.sim().run();

    const double calls = static_cast<double>(rounds_) * static_cast<double>(targets_.size());
    const double completed = calls - static_cast<double>(lost_calls);
    Results r;
    // With lost calls, the mean is over the completed calls only (the run is
    // reported as failed); when none completed there is no latency at all.
    if (completed > 0) r.add("ns_per_call", sim::to_ns(window.length() - lost_time) / completed);
    r.add("total_ms", sim::to_ns(window.length()) / 1e6);
    for (std::size_t k = 0; k < kClassSlots; ++k)
      if (class_calls[k] > 0)
        r.add(fmt::format("ns_per_call.{}", k == 0 ? "self" : topo::hop_class_name(static_cast<topo::HopClass>(k - 1))),
              sim::to_ns(class_time[k]) / static_cast<double>(class_calls[k]));
    r.add("source_barrier_stall_ns_per_call", sim::to_ns(window.delta(barrier_stall)) / calls);
    r.add("ipis_sent", static_cast<double>(window.delta(ipis_sent)));
    const auto ipis_delivered = static_cast<double>(window.delta(delivered));
    const double delivery_ns = ipis_delivered > 0 ? sim::to_ns(window.delta(delivery_time)) / ipis_delivered : 0.0;
    if (gic) r.add("sgi_delivery_ns", delivery_ns);
    if (apic) {
      r.add("woken_without_ipi", static_cast<double>(window.delta(woken_without_ipi)));
      r.add("ipi_delivery_ns", delivery_ns);
      r.add("icr_busy_reads", static_cast<double>(window.delta(icr_busy_reads)));
    }
    r.add("csd_wait_spurious_wakeups_per_call", static_cast<double>(window.delta(spin_wakeups)) / calls);
    r.add("lost_calls", static_cast<double>(lost_calls));
    for (const kernel::CsdLockTimeout& t : smp.csd_lock_timeouts()) r.failures.push_back(t.message());
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  std::size_t class_index(int target) const {
    if (target == source_) return 0;
    return 1 + static_cast<std::size_t>(m_.topology().hop_class(source_, target));
  }

  Machine& m_;
  int source_, rounds_, warmup_, data_writes_, data_node_, stack_node_, fork_node_;
  std::vector<int> targets_;
  kernel::IpiBarrier barrier_;
  Tick csd_lock_timeout_;
  kernel::IdleMode idle_;
  bool nox2apic_;
  fabric::Addr csd_offset_;
  kernel::SmpCallCosts costs_;
};

}  // namespace

void register_ipi_bench(WorkloadTable& t) {
  t.add("ipi-bench",
        "IPI benchmark (arm64 GICv3 or x86 local APIC): data stores, then smp_call_function_single(target, "
        "empty, NULL, 1) to every CPU",
        [](config::Reader p, Machine& m) { return std::make_unique<IpiBench>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"ns_per_call", "ns", true}, {"total_ms", "ms", true}});
}

}  // namespace cohsim::models
