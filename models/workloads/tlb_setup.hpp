// What the TLB shootdown workloads (madvise-dontneed, swap-mt) share: their
// threads' CPUs, the csd layout (csd_align and the percpu allocator's
// placement), the IPI send options, the kernel path estimates, and the
// machine they build (local APICs, SmpCall with its cfd areas, TlbShootdown),
// and the mechanism metrics they report per shootdown.
#pragma once

#include <algorithm>
#include <memory>
#include <fmt/format.h>

#include "cohsim/irq/apic.hpp"
#include "models/kernel/smp_call.hpp"
#include "models/kernel/tlb.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"

namespace cohsim::models {

/// The parameters both shootdown workloads read, and what they build from them.
struct ShootdownSetup {
  std::vector<int> cpus;  ///< the process's threads, one per CPU
  kernel::CfdPlacement placement;
  fabric::Addr stack_csd_offset = 0;  ///< line offset of smp_call_function_single's on-stack csd
  bool shorthand = true, nox2apic = false;
  int mm_node = -1;
  kernel::SmpCallCosts smp_costs;
  kernel::TlbCosts tlb_costs;

  ShootdownSetup(config::Reader& p, Machine& m, int default_threads) {
    const int n = m.cpu_count();
    const auto threads = static_cast<int>(p.integer(
        "threads", Spec{.doc = "threads of the process, one per CPU (on CPUs 0..threads-1 unless `cpus` says)",
                        .def = default_threads, .min = 1, .max = static_cast<double>(n)}));
    cpus = p.cpu_list("cpus", Spec{.doc = "CPUs of the threads, the first one first (default: 0..threads-1)",
                                   .def = threads}, n);
    if (!p.schema_mode()) {
      if (p.has("cpus") && p.has("threads") && static_cast<int>(cpus.size()) != threads)
        p.fail("cpus", fmt::format("lists {} CPUs but threads is {}", cpus.size(), threads));
      std::vector<int> sorted = cpus;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        p.fail("cpus", "a CPU is listed twice: one thread per CPU");
    }
    const std::string align = p.choice(
        "csd_align", Spec{.doc = "call_single_data layout: size (call_single_data_t aligned to its 32 bytes, Linux "
                                 "4.14+, commit 966a967116e6) or none (8-byte aligned struct call_single_data, "
                                 "before: a csd straddles two lines where the allocator puts it)",
                          .def = "size", .choices = {"size", "none"}});
    placement.align_to_size = align == "size";
    placement.first_offset = static_cast<fabric::Addr>(p.integer(
        "csd_percpu_offset",
        Spec{.doc = "estimate: offset in each percpu unit of CPU 0's cfd csd area (alloc_percpu at its bring-up, "
                    "after the static percpu data and earlier dynamic allocations), bytes; rounded up to the csd's "
                    "alignment. Only its value modulo 64 matters: 6 of the 8 8-byte-aligned line offsets make every "
                    "second CPU's csd straddle with csd_align=none",
             .def = 8, .min = 0, .max = 4096, .estimate_range = {0, 56}}));
    placement.gap = static_cast<fabric::Addr>(p.integer(
        "csd_percpu_gap",
        Spec{.doc = "estimate: bytes of other percpu allocations between two consecutive CPUs' cfd csd areas (the "
                    "CPU hotplug prepare callbacks that allocate between two smpcfd_prepare_cpu calls); 0: adjacent",
             .def = 0, .min = 0, .max = 4096, .estimate_range = {0, 24}}));
    stack_csd_offset = static_cast<fabric::Addr>(p.integer(
        "stack_csd_offset",
        Spec{.doc = "estimate: line offset of the on-stack csd of smp_call_function_single (one target), bytes; "
                    "the compiler's frame layout decides it; rounded up to the csd's alignment (a multiple of 32 "
                    "with csd_align=size). With csd_align=none it straddles above 32",
             .def = 24, .min = 0, .max = 56, .estimate_range = {0, 56}}));
    shorthand = p.boolean("ipi_shorthand",
                          Spec{.doc = "x86 apic_use_ipi_shorthand (v5.10: on once every present CPU has booted): a "
                                      "call to every other online CPU is one all-but-self ICR write",
                               .def = true});
    nox2apic = p.boolean("nox2apic", Spec{.doc = "x86: the kernel's nox2apic boot option (xAPIC mode)", .def = false});
    mm_node = static_cast<int>(p.integer(
        "mm_node", Spec{.doc = "node of the mm_struct and the threads' stacks (-1: the first thread's CPU's, where the "
                               "process was forked and cloned its threads)",
                        .def = -1, .min = -1, .max = m.topology().node_count() - 1.0}));
    smp_costs.call_path = cycles_param(p, m,
        "call_path_cycles",
        Spec{.doc = "estimate: kernel instructions of the smp_call_function send paths outside their memory accesses "
                    "(preempt, cpumask walks, the calls), cycles",
             .def = 60, .min = 20, .max = 400, .estimate_range = {30, 120}});
    smp_costs.func_call = cycles_param(p, m,
        "func_call_cycles", Spec{.doc = "estimate: the indirect call of the csd's function and its return, cycles",
                                 .def = 5, .min = 2, .max = 40, .estimate_range = {3, 10}});
    tlb_costs.flush_path = cycles_param(p, m,
        "flush_path_cycles",
        Spec{.doc = "estimate: flush_tlb_mm_range / arch_tlbbatch_flush instructions outside their accesses (get_cpu, "
                    "the ceiling test, get_flush_tlb_info, the native_flush_tlb_others call), cycles",
             .def = 80, .min = 20, .max = 1000, .estimate_range = {40, 160}});
    tlb_costs.handler_path = cycles_param(p, m,
        "handler_path_cycles",
        Spec{.doc = "estimate: flush_tlb_func_remote / _common instructions outside their accesses and the flush "
                    "(irq stat, vm event counters, compares), cycles",
             .def = 50, .min = 10, .max = 1000, .estimate_range = {25, 100}});
    if (p.schema_mode()) return;
    if (m.cpu(0).is_arm()) p.fail("threads", "the x86 TLB shootdown model needs an x86 platform (arch/x86/mm/tlb.c)");
    if (m.apic_params() == nullptr)
      throw config::ConfigError(m.platform().file, "platform.apic",
                                "missing section: the TLB shootdown IPIs need the platform's local APIC (\"apic\")");
    if (!m.cpu_params().has_tlb_costs)
      throw config::ConfigError(m.platform().file, "platform.cpu.invlpg",
                                "missing: the TLB shootdown model needs cpu.invlpg and cpu.tlb_flush_full "
                                "({\"value\", \"source\", \"range\"})");
    if (nox2apic && m.cpu_count() > static_cast<int>(irq::kXapicMaxApicId) + 1)
      p.fail("nox2apic", fmt::format("xAPIC addresses at most {} CPUs; this platform has {}",
                                     irq::kXapicMaxApicId + 1, m.cpu_count()));
    if (mm_node < 0) mm_node = m.topology().node_of_cpu(cpus.front());
  }

  /// The machine's kernel side, built at run().
  struct Kernel {
    std::unique_ptr<irq::Apic> apic;
    std::unique_ptr<kernel::SmpCall> smp;
    std::unique_ptr<kernel::TlbShootdown> tlb;
    std::vector<fabric::Addr> stack_csds;  ///< per thread: the on-stack csd
  };
  Kernel build(Machine& m, kernel::IdleMode idle) const {
    Kernel k;
    std::vector<cpu::Cpu*> all;
    for (int c = 0; c < m.cpu_count(); ++c) all.push_back(&m.cpu(c));
    k.apic = std::make_unique<irq::Apic>(*m.apic_params(), m.interconnect(), all,
                                         m.apic_params()->mode == "x2apic" && !nox2apic);
    k.smp = std::make_unique<kernel::SmpCall>(m, *k.apic, smp_costs, idle);
    k.smp->set_ipi_shorthand(shorthand);
    k.smp->prepare_cfd(placement);
    k.tlb = std::make_unique<kernel::TlbShootdown>(m, *k.smp, tlb_costs, mm_node);
    // Each thread's kernel stack: vmalloc'd at clone on the cloning CPU's node
    // (the first thread's); the csd sits in a frame near its top.
    const fabric::Addr align = placement.alignment();
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      const fabric::Addr stack = m.memory().alloc(mm_node, 16384, 16384, fmt::format("thread {} kernel stack", i));
      k.stack_csds.push_back(stack + 16384 - 4 * fabric::kLineBytes + (stack_csd_offset + align - 1) / align * align);
    }
    return k;
  }
};

/// The mechanism per shootdown, measured over a window: tracks the counters.
struct ShootdownMetrics {
  std::size_t shootdowns, ipis, sends, csd_requests, csd_ns, queue_ns, ipi_ns, wait_ns, flush_ns, handler_ns,
      remote_flushes;

  ShootdownMetrics(MeasurementWindow& w, Machine& m, const ShootdownSetup::Kernel& k) {
    const kernel::SmpCall* smp = k.smp.get();
    const kernel::TlbShootdown* tlb = k.tlb.get();
    // The csd lines: every cfd csd area and every on-stack csd's line(s).
    std::vector<fabric::Addr> lines = smp->cfd_csd_lines();
    for (fabric::Addr a : k.stack_csds) {
      lines.push_back(a / fabric::kLineBytes * fabric::kLineBytes);
      lines.push_back((a + kernel::CsdLayout::bytes - 1) / fabric::kLineBytes * fabric::kLineBytes);
    }
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    fabric::Fabric* fab = &m.fabric();
    shootdowns = w.track([tlb] { return tlb->stats().shootdowns; });
    ipis = w.track([smp] { return smp->ipis_sent(); });
    sends = w.track([&k] { return k.apic->stats().icr_writes; });
    csd_requests = w.track([fab, lines] {
      std::uint64_t sum = 0;
      const auto& ls = fab->line_stats();
      for (fabric::Addr l : lines)
        if (auto it = ls.find(l); it != ls.end()) sum += it->second.requests;
      return sum;
    });
    csd_ns = w.track([smp] { return smp->phases().csd; });
    queue_ns = w.track([smp] { return smp->phases().queue; });
    ipi_ns = w.track([smp] { return smp->phases().ipi; });
    wait_ns = w.track([smp] { return smp->phases().wait; });
    flush_ns = w.track([tlb] { return tlb->stats().remote_flush_time; });
    handler_ns = w.track([tlb] { return tlb->stats().handler_time; });
    remote_flushes = w.track([tlb] { return tlb->stats().remote_flushes; });
  }

  /// Adds the per-shootdown figures and the shares of `busy` (the senders' time in the window, summed).
  void report(Results& r, const MeasurementWindow& w, double busy_ps) const {
    const double sd = static_cast<double>(w.delta(shootdowns));
    auto per = [sd](double v) { return sd > 0 ? v / sd : 0.0; };
    auto share = [busy_ps](double v) { return busy_ps > 0 ? v / busy_ps : 0.0; };
    r.add("shootdowns", sd);
    r.add("csd_lines_per_shootdown", per(static_cast<double>(w.delta(csd_requests))));
    r.add("ipis_per_shootdown", per(static_cast<double>(w.delta(ipis))));
    r.add("icr_writes_per_shootdown", per(static_cast<double>(w.delta(sends))));
    r.add("remote_flushes_per_shootdown", per(static_cast<double>(w.delta(remote_flushes))));
    r.add("sender_csd_ns_per_shootdown", per(sim::to_ns(w.delta(csd_ns))));
    r.add("sender_ipi_ns_per_shootdown", per(sim::to_ns(w.delta(ipi_ns))));
    r.add("sender_wait_ns_per_shootdown", per(sim::to_ns(w.delta(wait_ns))));
    r.add("target_handler_ns_per_shootdown", per(sim::to_ns(w.delta(handler_ns))));
    const double flushes = static_cast<double>(w.delta(remote_flushes));
    const double flush_each = flushes > 0 ? static_cast<double>(w.delta(flush_ns)) / flushes : 0.0;
    r.add("target_flush_ns_per_remote_flush", sim::to_ns(static_cast<Tick>(flush_each)));
    // The csd stores are buffered: their misses are paid at llist_add's locked cmpxchg, so the two go together.
    r.add("share_csd_queue", share(static_cast<double>(w.delta(csd_ns) + w.delta(queue_ns))));
    r.add("share_ipi_send", share(static_cast<double>(w.delta(ipi_ns))));
    r.add("share_wait", share(static_cast<double>(w.delta(wait_ns))));
    // One target's flush per shootdown lies inside the sender's wait.
    r.add("share_flush", share(flush_each * sd));
  }
};

}  // namespace cohsim::models
