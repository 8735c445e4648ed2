// madvise-dontneed: one thread of a process maps a page and, in a loop,
// madvise(addr, 4096, MADV_DONTNEED) then writes the page again (a page
// fault), while the process's other threads keep its mm live on their CPUs.
// Each madvise ends in flush_tlb_mm_range(mm, addr, addr + 4K, PAGE_SHIFT,
// false) (v5.10 zap_page_range -> tlb_finish_mmu): one IPI and one INVLPG on
// every other CPU of the mm that is not lazy. The others run in user space
// (`others` busy) or sleep with the mm lazily loaded (lazy: skipped).
#include <fmt/format.h>

#include "models/workloads/run_limits.hpp"
#include "models/workloads/tlb_setup.hpp"

namespace cohsim::models {
namespace {

class MadviseDontneed : public scenario::Workload {
 public:
  MadviseDontneed(config::Reader p, Machine& m) : m_(m), setup_(p, m, 2) {
    iterations_ = static_cast<int>(p.integer(
        "iterations", Spec{.doc = "measured madvise + touch iterations", .def = 400, .min = 1, .max = 1e7}));
    warmup_ = static_cast<int>(p.integer(
        "warmup_iterations", Spec{.doc = "iterations before measuring", .def = 20, .min = 0, .max = 1e6}));
    const std::string others = p.choice(
        "others", Spec{.doc = "what the other threads do: busy (run in user space: their CPUs are not lazy, the IPI "
                              "interrupts them) or lazy (blocked: the CPU idles in HLT with the mm lazily loaded, "
                              "tlb_is_not_lazy skips it)",
                       .def = "busy", .choices = {"busy", "lazy"}});
    lazy_ = others == "lazy";
    madvise_path_ = cycles_param(p, m,
        "madvise_path_cycles",
        Spec{.doc = "estimate: madvise(MADV_DONTNEED) outside its modelled accesses and the flush: syscall entry and "
                    "exit, find_vma, zap_page_range's page-table walk, rss counters, freeing the page to the per-CPU "
                    "list, cycles",
             .def = 1200, .min = 100, .max = 20000, .estimate_range = {600, 2400}});
    fault_path_ = cycles_param(p, m,
        "fault_path_cycles",
        Spec{.doc = "estimate: the write fault on the zapped page: exception entry and exit, handle_mm_fault, "
                    "do_anonymous_page, the page allocation from the per-CPU list and clear_page of 4 KiB, cycles",
             .def = 1500, .min = 100, .max = 20000, .estimate_range = {800, 3000}});
  }

  Results run() override {
    ShootdownSetup::Kernel k = setup_.build(m_, lazy_ ? kernel::IdleMode::halt : kernel::IdleMode::busy);
    kernel::TlbShootdown& tlb = *k.tlb;
    const int sender = setup_.cpus.front();
    const int node = m_.topology().node_of_cpu(sender);
    // The page table page and its split PTE lock (struct page of the PT page):
    // allocated by the first fault, on the faulting CPU's node; the data page
    // comes back from the same per-CPU free list each time (one line touched).
    const fabric::Addr pte = m_.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes, "page table (PTE)");
    const fabric::Addr ptl = m_.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes, "PTE page's ptl");
    const fabric::Addr page = m_.memory().alloc(node, 4096, 4096, "the page");
    constexpr fabric::Addr kUserAddr = 0x7f0000000000ull;

    MeasurementWindow window;
    ShootdownMetrics metrics(window, m_, k);
    int ready = 0;
    // The other threads: switch to the mm on their CPU, then run (or sleep lazily).
    for (std::size_t i = 1; i < setup_.cpus.size(); ++i) {
      const int c = setup_.cpus[i];
      m_.sim().spawn(fmt::format("cpu{} thread {}", c, i), [](MadviseDontneed& w, kernel::TlbShootdown& t,
                                                              kernel::SmpCall& smp, int c, int& ready) -> Task<void> {
        co_await t.switch_to_mm(w.m_.cpu(c));
        if (w.lazy_) co_await t.enter_lazy(w.m_.cpu(c));
        ++ready;
        smp.start_idle(c);
      }(*this, tlb, *k.smp, c, ready), true);
    }
    auto thread0 = [&]() -> Task<void> {
      cpu::Cpu& c = m_.cpu(sender);
      co_await tlb.switch_to_mm(c);
      while (ready + 1 < static_cast<int>(setup_.cpus.size())) co_await m_.sim().delay(100 * sim::kNs);
      for (int it = 0; it < warmup_ + iterations_; ++it) {
        if (it == warmup_) window.open(m_.sim().now());
        // madvise: down_read(&mm->mmap_lock) (LOCK XADD); zap_page_range under the PTE lock.
        co_await c.compute(madvise_path_);
        co_await c.rmw(tlb.mmap_lock(), 8, fabric::RmwOp::add, 1, 0, cpu::Order::full);
        co_await c.cmpxchg(ptl, 4, 0, 1);
        co_await c.store(pte, 8, 0);
        co_await c.store(ptl, 4, 0, cpu::Order::release);
        co_await tlb.flush_tlb_mm_range(c, kUserAddr, kUserAddr + 4096, 12, false,
                                        k.stack_csds.front());
        co_await c.rmw(tlb.mmap_lock(), 8, fabric::RmwOp::add, ~0ull, 0, cpu::Order::full);  // up_read
        // The write faults: a new page, its PTE set under the lock, the write.
        co_await c.compute(fault_path_);
        co_await c.cmpxchg(ptl, 4, 0, 1);
        co_await c.store(pte, 8, page | 0x67);
        co_await c.store(ptl, 4, 0, cpu::Order::release);
        co_await c.store(page, 8, static_cast<std::uint64_t>(it));
        m_.sim().note_progress();
      }
      window.close(m_.sim().now());
    };
    m_.sim().spawn(fmt::format("cpu{} madvise thread", sender), thread0());
    m_.sim().run(kWorkloadLimits);

    Results r;
    r.add("ns_per_iteration", sim::to_ns(window.length()) / iterations_);
    metrics.report(r, window, static_cast<double>(window.length()));
    r.add("threads", static_cast<double>(setup_.cpus.size()));
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  Machine& m_;
  ShootdownSetup setup_;
  int iterations_, warmup_;
  bool lazy_;
  Tick madvise_path_, fault_path_;
};

}  // namespace

void register_tlb_madvise(WorkloadTable& t) {
  t.add("madvise-dontneed",
        "x86 TLB shootdown: one thread madvise(MADV_DONTNEED)s and re-touches one page in a loop while the other "
        "threads keep the mm live on their CPUs (flush_tlb_mm_range, smp_call_function_many_cond)",
        [](config::Reader p, Machine& m) { return std::make_unique<MadviseDontneed>(p, m); },
        {{"ns_per_iteration", "ns", true}, {"csd_lines_per_shootdown", "lines", true}});
}

}  // namespace cohsim::models
