// will-it-scale lock2_threads (antonblanchard/will-it-scale tests/lock2.c,
// main.c built with -DTHREADS) on Linux v5.10 fs/locks.c and fs/fcntl.c;
// reference section 9. One file in /tmp; each of `threads` tasks opens it
// (its own fd and struct file, one inode) and loops:
//   fcntl(fd, F_SETLKW, write lock of byte 0); fcntl(fd, F_SETLKW, unlock);
//   iterations += 2.
// All tasks share current->files, so they are one lock owner: they never
// conflict or sleep, and serialise on the inode's file_lock_context.flc_lock.
// Each fcntl call, as modelled:
//   the system call's own work outside the locks (`syscall_cycles`: entry and
//   exit, fdget's and fput's atomics on the task's struct file, copying the
//   flock, allocating the request and two spare locks from the slab, the
//   file_rwsem per-CPU read lock, freeing what was not used);
//   posix_lock_inode under spin_lock(&ctx->flc_lock): read flc_posix;
//     lock:   an entry of this owner for byte 0 exists -> read it and merge
//             (nothing written); none -> insert the spare: write it, link it
//             on flc_posix, and locks_insert_global_locks on this CPU's
//             file_lock_list (its spinlock and hlist head);
//     unlock: an entry exists -> delete it: unlink it from flc_posix, and
//             locks_delete_global_locks on the file_lock_list of the CPU that
//             inserted it (its spinlock: maybe remote); none -> nothing;
//     `cs_cycles` of the walk's own work;
//   after flc_lock: the deleted entry freed (to another CPU's slab page: a
//   cmpxchg on that page's freelist word, SLUB's __slab_free);
//   after a lock: fcntl_setlk's close race check, spin_lock(&files->file_lock)
//   (its own line), the fd looked up in the fd table (read-mostly lines: with
//   more than 61 tasks the table outgrows files_struct's fd_array; below,
//   fd 3 would share file_lock's line, not modelled), spin_unlock: a second
//   spinlock all tasks share.
// Objects: the context where the first locker put it (task 0's node), 56 bytes
// from a mergeable slab (`flctx_layout`: flc_posix in flc_lock's line or the
// next); files_struct and the iteration counters (MAP_SHARED, 256 B apart) on
// the parent's node (task 0's); each task's struct file, spare lock and slab
// page on its own node; each CPU's file_lock_list on its node. A file_lock is
// one line here (its list links, owner, type and range; the real one spans
// three or four lines, of which these fields touch two).
// Placement: task i bound to hwloc core i mod cores (lock_placement.hpp).
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
using cpu::Order;
using fabric::Addr;
using fabric::RmwOp;

class Lock2 : public scenario::Workload {
 public:
  Lock2(config::Reader p, Machine& m) : m_(m) {
    const int n = m.cpu_count();
    threads_ = static_cast<int>(p.integer(
        "threads", Spec{.doc = "tasks (will-it-scale -t), at most one per CPU", .def = 4, .min = 1,
                        .max = static_cast<double>(n)}));
    lock_kind_ = p.choice("lock", Spec{.doc = "the kernel's spinlock: qspinlock (stock slow path) or cna (the CNA "
                                              "slow path, numa_spinlock=on)",
                                       .def = "qspinlock", .choices = {"qspinlock", "cna"}});
    flctx_layout_ = p.choice(
        "flctx_layout", Spec{.doc = "the 56-byte file_lock_context's place in its line: same-line (flc_lock and "
                                    "flc_posix in one line: object at line offset 0-24) or split (flc_posix in the "
                                    "next line: offset 32-56)",
                             .def = "same-line", .choices = {"same-line", "split"}});
    syscall_cycles_ = static_cast<double>(p.integer(
        "syscall_cycles",
        Spec{.doc = "estimate: one fcntl(F_SETLKW) call's work outside flc_lock and file_lock besides its modelled "
                    "accesses (entry/exit with page-table isolation, copy of the flock, three slab allocations and "
                    "frees, the file_rwsem read side, security hook), core cycles",
             .def = 1200, .min = 0, .max = 1e7, .estimate_range = {600, 2400}}));
    cs_cycles_ = static_cast<double>(p.integer(
        "cs_cycles", Spec{.doc = "estimate: posix_lock_inode's own work under flc_lock (the list walk, owner and "
                                 "range tests, the merge or the insert/delete bookkeeping), core cycles",
                          .def = 80, .min = 0, .max = 1e6, .estimate_range = {40, 200}}));
    recheck_cycles_ = static_cast<double>(p.integer(
        "recheck_cycles", Spec{.doc = "estimate: fcheck()'s own work under files->file_lock, core cycles", .def = 15,
                               .min = 0, .max = 1e6, .estimate_range = {8, 40}}));
    timing_ = read_lock_run_timing(p);
    const kernel::CnaParams cna = kernel::read_cna_params(p, lock_kind_ == "cna");
    if (p.schema_mode()) return;
    const auto& topo = m.topology();
    cpus_ = hwloc_core_order(topo, threads_);
    const int parent = topo.node_of_cpu(cpus_.front());
    auto& mem = m.memory();
    const Addr ctx = mem.alloc(parent, 128, 64, "file_lock_context");
    flc_lock_ = ctx + (flctx_layout_ == "same-line" ? 0 : 40);
    flc_posix_ = flc_lock_ + 24;
    inode_ = mem.alloc(parent, 64, 64, "inode (i_flctx)");
    files_ = mem.alloc(parent, 64, 64, "files_struct.file_lock");
    fdt_ = mem.alloc(parent, 64, 64, "files_struct.fdt");
    fd_array_ = mem.alloc(parent, (static_cast<std::uint64_t>(threads_) + 3) * 8 / 64 * 64 + 64, 64, "fdtable.fd");
    counters_ = mem.alloc(parent, static_cast<std::uint64_t>(threads_) * 256, 64, "will-it-scale iterations");
    for (int t = 0; t < threads_; ++t) {
      const int node = topo.node_of_cpu(cpus_[static_cast<std::size_t>(t)]);
      file_.push_back(mem.alloc(node, 64, 64, fmt::format("struct file[task{}]", t)));
      spare_.push_back(mem.alloc(node, 64, 64, fmt::format("file_lock[task{}]", t)));
      slab_page_.push_back(mem.alloc(node, 64, 64, fmt::format("filelock_cache page[task{}]", t)));
    }
    for (int c = 0; c < topo.cpu_count(); ++c)
      fll_.push_back(mem.alloc(topo.node_of_cpu(c), 64, 64, fmt::format("file_lock_list[cpu{}]", c)));
    locks_ = std::make_unique<kernel::KernelSpinlocks>(lock_kind_ == "cna", cna, m.fabric(), mem, topo, m.seed());
    flc_stats_ = std::make_unique<LockStats>(topo, cpus_);
  }

  Results run() override {
    auto& sim = m_.sim();
    epochs_.emplace(timing_);
    epochs_->schedule(window_, sim);
    end_ = epochs_->end();
    sim.spawn("lock epochs", epochs_->expire_at_each_part(sim, locks_->cna(), flc_lock_));
    sim::RandomStream start(m_.seed(), "lock2.start");
    loops_.assign(static_cast<std::size_t>(threads_), 0);
    for (int t = 0; t < threads_; ++t)
      sim.spawn(fmt::format("cpu{} lock2 task", cpus_[static_cast<std::size_t>(t)]),
                task(t, static_cast<sim::Tick>(start.below(static_cast<std::uint64_t>(timing_.start_stagger) + 1))));
    sim.run(kWorkloadLimits);
    Results r;
    std::uint64_t loops = 0;
    for (auto l : loops_) loops += l;
    r.add("ops_per_us", 2.0 * epochs_->rate_per_us());  // will-it-scale counts two per loop (lock_epochs.hpp)
    const auto rates = epochs_->rates();
    r.extra["epoch_ops_per_us"] = rates;
    r.add("epoch_ops_per_us_min", 2.0 * *std::min_element(rates.begin(), rates.end()));
    r.add("epoch_ops_per_us_max", 2.0 * *std::max_element(rates.begin(), rates.end()));
    r.add("loops", static_cast<double>(loops));
    const auto [lo, hi] = std::minmax_element(loops_.begin(), loops_.end());
    r.add("fairness", *hi == 0 ? 0.0 : static_cast<double>(*lo) / static_cast<double>(*hi));
    flc_stats_->add_metrics(r, "flc_lock.");
    r.add("entries_inserted", static_cast<double>(inserted_));
    r.add("entries_merged", static_cast<double>(merged_));
    r.add("remote_deletes", static_cast<double>(remote_deletes_));
    add_cna_metrics(r, locks_->cna());
    if (const std::string empty = epochs_->empty_part(); !empty.empty()) r.failures.push_back(empty);
    if (flc_stats_->violations() > 0)
      r.failures.push_back(fmt::format("mutual exclusion broken: {} overlapping flc_lock holders", flc_stats_->violations()));
    config::json place = config::json::array();
    for (int c : cpus_) place.push_back(c);
    r.extra["cpus"] = place;
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  // One fcntl(F_SETLKW) call: the write lock of byte 0 (lock) or its unlock.
  Task<void> fcntl_setlk(Cpu& c, int t, bool lock) {
    const auto ti = static_cast<std::size_t>(t);
    co_await c.compute_cycles(syscall_cycles_);
    co_await c.rmw(file_[ti], 8, RmwOp::add, 1, 0, Order::full);  // fdget: get_file_rcu on f_count
    co_await c.load(inode_, 8, Order::acquire);                    // locks_get_lock_context: i_flctx
    flc_stats_->waiting(t);
    co_await kernel::queued_spin_lock(c, locks_->lock(flc_lock_));
    flc_stats_->acquired(t, window_.contains(m_.sim().now()));
    const Addr entry = co_await c.load(flc_posix_, 8);  // list_for_each_entry(fl, &ctx->flc_posix, ...)
    co_await c.compute_cycles(cs_cycles_);
    Addr freed = 0;
    int freed_by = -1;
    if (lock) {
      if (entry != 0) {
        co_await c.load(entry, 8);  // posix_same_owner, fl_type, range: merged into it
        ++merged_;
      } else {  // locks_insert_lock_ctx(request = the spare)
        const Addr mine = spare_[ti];
        co_await c.store(mine, 8, flc_posix_);                                    // fl_list
        co_await c.store(mine + 8, 8, static_cast<std::uint64_t>(t));             // fl_link_cpu (the task here)
        co_await c.store(flc_posix_, 8, mine);
        const Addr fll = fll_[static_cast<std::size_t>(c.id())];                  // this_cpu_ptr(&file_lock_list)
        co_await kernel::queued_spin_lock(c, locks_->lock(fll));
        co_await c.store(fll + 8, 8, mine);                                       // hlist_add_head
        co_await kernel::queued_spin_unlock(c, locks_->lock(fll));
        ++inserted_;
      }
    } else if (entry != 0) {  // locks_delete_lock_ctx
      const auto owner_task = static_cast<int>(co_await c.load(entry + 8, 8));
      co_await c.store(flc_posix_, 8, 0);  // list_del: flc_posix empty again
      co_await c.store(entry, 8, 0);
      const Addr fll = fll_[static_cast<std::size_t>(cpus_[static_cast<std::size_t>(owner_task)])];
      co_await kernel::queued_spin_lock(c, locks_->lock(fll));  // locks_delete_global_locks
      co_await c.store(fll + 8, 8, 0);                          // hlist_del_init
      co_await kernel::queued_spin_unlock(c, locks_->lock(fll));
      freed = entry;
      freed_by = owner_task;
    }
    flc_stats_->released();
    co_await kernel::queued_spin_unlock(c, locks_->lock(flc_lock_));
    if (freed != 0 && freed_by != t) {  // locks_dispose_list -> kmem_cache_free of another CPU's object
      const Addr page = slab_page_[static_cast<std::size_t>(freed_by)];
      co_await c.rmw(page, 8, RmwOp::add, 1, 0, Order::full);  // __slab_free: cmpxchg_double on the page freelist
      if (window_.contains(m_.sim().now())) ++remote_deletes_;
    }
    if (lock) {  // fcntl_setlk: recheck the fd under files->file_lock
      co_await kernel::queued_spin_lock(c, locks_->lock(files_));
      co_await c.load(fdt_, 8);                                        // files_fdtable(files)
      co_await c.load(fd_array_ + 8 * static_cast<Addr>(3 + t), 8);  // fdt->fd[fd]
      co_await c.compute_cycles(recheck_cycles_);
      co_await kernel::queued_spin_unlock(c, locks_->lock(files_));
    }
    co_await c.rmw(file_[ti], 8, RmwOp::add, static_cast<std::uint64_t>(-1), 0, Order::full);  // fput
  }

  Task<void> task(int t, sim::Tick start) {
    Cpu& c = m_.cpu(cpus_[static_cast<std::size_t>(t)]);
    auto& sim = m_.sim();
    const Addr counter = counters_ + static_cast<Addr>(t) * 256;
    co_await sim.delay(start);
    while (sim.now() < end_) {
      co_await fcntl_setlk(c, t, true);
      co_await fcntl_setlk(c, t, false);
      co_await c.store(counter, 8, co_await c.load(counter, 8) + 2);  // (*iterations) += 2
      if (window_.contains(sim.now())) {
        ++loops_[static_cast<std::size_t>(t)];
        epochs_->count(sim.now());
      }
      sim.note_progress();
    }
  }

  Machine& m_;
  int threads_ = 0;
  std::string lock_kind_, flctx_layout_;
  double syscall_cycles_ = 0, cs_cycles_ = 0, recheck_cycles_ = 0;
  LockRunTiming timing_;
  sim::Tick end_ = 0;
  std::vector<int> cpus_;
  Addr flc_lock_ = 0, flc_posix_ = 0, inode_ = 0, files_ = 0, fdt_ = 0, fd_array_ = 0, counters_ = 0;
  std::vector<Addr> file_, spare_, slab_page_, fll_;
  std::unique_ptr<kernel::KernelSpinlocks> locks_;
  std::unique_ptr<LockStats> flc_stats_;
  std::vector<std::uint64_t> loops_;
  std::uint64_t inserted_ = 0, merged_ = 0, remote_deletes_ = 0;
  MeasurementWindow window_;
  std::optional<LockEpochs> epochs_;
};

}  // namespace

void register_lock2(WorkloadTable& t) {
  t.add("lock2",
        "will-it-scale lock2_threads: `threads` tasks pinned in hwloc core order take and drop a POSIX write lock "
        "of one shared file, serialising on its flc_lock spinlock (qspinlock | cna)",
        [](config::Reader p, Machine& m) { return std::make_unique<Lock2>(p, m); },
        {{"ops_per_us", "ops/us", false}, {"fairness", "min/max", false}});
}

}  // namespace cohsim::models
