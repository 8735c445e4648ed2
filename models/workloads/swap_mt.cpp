// swap-mt: vm-scalability's swap-w-seq-mt as far as TLB shootdowns go. N
// threads of one process (usemem) write their share of private anonymous
// memory sequentially, more than RAM holds, so the writers enter direct
// reclaim: every `reclaim_batch` pages a writer reclaims a batch of the
// process's pages (v5.10 mm/vmscan.c shrink_page_list: try_to_unmap clears
// each PTE with deferred flushing, arch_tlbbatch_add_mm; try_to_unmap_flush_dirty
// before the batch's pageout flushes every CPU of mm_cpumask fully through
// arch_tlbbatch_flush -> flush_tlb_others), then writes the pages to swap.
// Shootdowns come from every writer at once, to the same targets.
//
// Not modelled: kswapd (its flushes come from a CPU outside the mm), the LRU
// lock, the swap device's queueing, memory bandwidth shared by the writers
// (the page writes and the swap-out are per-page estimates on each CPU).
#include <fmt/format.h>

#include "cohsim/sim/random.hpp"

#include "models/workloads/run_limits.hpp"
#include "models/workloads/tlb_setup.hpp"

namespace cohsim::models {
namespace {

class SwapMt : public scenario::Workload {
 public:
  SwapMt(config::Reader p, Machine& m) : m_(m), setup_(p, m, m.cpu_count()) {
    batch_ = static_cast<int>(p.integer(
        "reclaim_batch",
        Spec{.doc = "pages a writer reclaims per direct-reclaim pass, with one deferred TLB flush (v5.10 "
                    "SWAP_CLUSTER_MAX = 32: shrink_page_list's batch)",
             .def = 32, .min = 1, .max = 4096}));
    duration_ = p.time("duration", Spec{.doc = "measured simulated time", .def = "2ms", .min = 1e6, .max = 1e13});
    warmup_ = p.time("warmup", Spec{.doc = "simulated time before measuring (at least one reclaim pass per writer)",
                                    .def = "300us", .min = 0, .max = 1e13});
    fault_path_ = cycles_param(p, m,
        "fault_path_cycles",
        Spec{.doc = "estimate: a write fault on a new anonymous page outside its modelled accesses: exception entry "
                    "and exit, handle_mm_fault, do_anonymous_page, the page allocation (from the free lists reclaim "
                    "refills), clear_page, the LRU add, cycles",
             .def = 2000, .min = 100, .max = 50000, .estimate_range = {1000, 4000}});
    write_page_ = cycles_param(p, m,
        "page_write_cycles",
        Spec{.doc = "estimate: usemem's sequential write of one 4 KiB page (64 lines, the page was just cleared so "
                    "they hit in L2), cycles",
             .def = 300, .min = 10, .max = 50000, .estimate_range = {150, 800}});
    unmap_page_ = cycles_param(p, m,
        "unmap_page_cycles",
        Spec{.doc = "estimate: shrink_page_list per anonymous page outside the TLB batch: isolation from the LRU, "
                    "add_to_swap, try_to_unmap's rmap walk and PTE clear, cycles",
             .def = 3000, .min = 100, .max = 100000, .estimate_range = {1500, 6000}});
    swap_out_page_ = cycles_param(p, m,
        "swap_out_page_cycles",
        Spec{.doc = "estimate: pageout -> swap_writepage of one page to a fast swap device (a memory-backed one: a "
                    "4 KiB copy and the bio and completion work on the writer's CPU), cycles",
             .def = 4000, .min = 100, .max = 1000000, .estimate_range = {2000, 10000}});
  }

  Results run() override {
    ShootdownSetup::Kernel k = setup_.build(m_, kernel::IdleMode::busy);
    kernel::TlbShootdown& tlb = *k.tlb;
    const std::size_t nthreads = setup_.cpus.size();
    MeasurementWindow window;
    ShootdownMetrics metrics(window, m_, k);
    const Tick end = warmup_ + duration_;
    window.schedule(m_.sim(), warmup_, end);
    std::uint64_t pages = 0;
    std::vector<std::vector<Tick>> pass_ends(nthreads);  // per writer: reclaim passes ended in the window
    Tick busy = 0;  // writer time inside the window, summed
    // The CPUs outside the process run something else (their own mm).
    for (int c = 0; c < m_.cpu_count(); ++c)
      if (std::find(setup_.cpus.begin(), setup_.cpus.end(), c) == setup_.cpus.end()) k.smp->start_idle(c);
    int ready = 0;
    sim::RandomStream rng(m_.seed(), "swap-mt.start_page");
    std::vector<std::uint64_t> start_pages;
    for (std::size_t i = 0; i < nthreads; ++i) start_pages.push_back(rng.below(static_cast<std::uint64_t>(batch_)));
    auto writer = [&](std::size_t i) -> Task<void> {
      cpu::Cpu& c = m_.cpu(setup_.cpus[i]);
      // Each PTE page (one per 2 MiB of the writer's share), on the writer's node; one line per page is touched.
      const int node = m_.topology().node_of_cpu(c.id());
      const fabric::Addr pte = m_.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes,
                                                 fmt::format("writer {} page table", i));
      kernel::TlbBatch batch = tlb.make_batch(setup_.mm_node, static_cast<int>(i));
      co_await tlb.switch_to_mm(c);
      ++ready;
      while (ready < static_cast<int>(nthreads)) co_await m_.sim().delay(100 * sim::kNs);
      // The writers are out of step, as threads that started and faulted at
      // different times are: each begins at a random page of its batch.
      int since_reclaim = static_cast<int>(start_pages[i]);
      while (m_.sim().now() < end) {
        // The write fault and the page's write.
        co_await c.compute(fault_path_);
        co_await c.store(pte, 8, 0x67);
        co_await c.compute(write_page_);
        if (window.contains(m_.sim().now())) ++pages;
        if (++since_reclaim < batch_) continue;
        since_reclaim = 0;
        // Direct reclaim of one batch: unmap each page (deferred flush), flush, write out.
        for (int b = 0; b < batch_; ++b) {
          co_await c.compute(unmap_page_);
          co_await c.store(pte, 8, 0);
          co_await tlb.arch_tlbbatch_add_mm(c, batch);
        }
        co_await tlb.arch_tlbbatch_flush(c, batch, k.stack_csds[i]);
        co_await c.compute(swap_out_page_ * batch_);
        if (window.contains(m_.sim().now())) pass_ends[i].push_back(m_.sim().now());
        m_.sim().note_progress();
      }
      // Past the window the thread's CPU goes on taking the others' IPIs.
      k.smp->start_idle(c.id());
    };
    // The time writers spend: the window's length on each writer.
    for (std::size_t i = 0; i < nthreads; ++i)
      m_.sim().spawn(fmt::format("cpu{} usemem writer {}", setup_.cpus[i], i), writer(i));
    m_.sim().run(kWorkloadLimits);
    busy = window.length() * static_cast<Tick>(nthreads);

    // The rate of each writer over its whole write + reclaim cycles in the
    // window (from its first pass end to its last), so that a cycle cut by
    // the window's edges does not count: pages_per_s is their sum.
    double rate = 0;
    std::size_t short_writers = 0;
    for (const auto& ends : pass_ends) {
      if (ends.size() < 2) {
        ++short_writers;
        continue;
      }
      rate += static_cast<double>(batch_) * static_cast<double>(ends.size() - 1) /
              (static_cast<double>(ends.back() - ends.front()) * 1e-12);
    }
    Results r;
    r.add("pages_per_s", rate);
    r.add("pages_per_s_per_thread", rate / static_cast<double>(nthreads));
    if (short_writers > 0)
      r.failures.push_back(fmt::format("swap-mt: {} writer(s) ended fewer than two reclaim passes in the window, "
                                       "left out of pages_per_s: lengthen duration",
                                       short_writers));
    r.add("pages_written", static_cast<double>(pages));
    metrics.report(r, window, static_cast<double>(busy));
    r.add("threads", static_cast<double>(nthreads));
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Machine& m_;
  ShootdownSetup setup_;
  int batch_;
  Tick duration_, warmup_, fault_path_, write_page_, unmap_page_, swap_out_page_;
};

}  // namespace

void register_swap_mt(WorkloadTable& t) {
  t.add("swap-mt",
        "x86 TLB shootdowns from many senders: N writer threads of one process in direct reclaim, each batch of "
        "unmapped pages flushed on every CPU of the mm (vm-scalability swap-w-seq-mt)",
        [](config::Reader p, Machine& m) { return std::make_unique<SwapMt>(p, m); },
        {{"pages_per_s", "pages/s", false}, {"csd_lines_per_shootdown", "lines", true}});
}

}  // namespace cohsim::models
