// DMA map + unmap benchmark through an SMMUv3 (the published Kunpeng 920
// measurement, Linux v5.9-rc1): one kernel thread per CPU loops
// dma_map_single(page) / dma_unmap_single() with strict invalidation, so
// each unmap issues CMD_TLBI_NH_VA + CMD_SYNC in one
// arm_smmu_cmdq_issue_cmdlist call; the map issues no command.
#include <algorithm>
#include <map>
#include <fmt/format.h>

#include "cohsim/devices/smmu.hpp"
#include "cohsim/sim/log.hpp"
#include "models/kernel/smmu_cmdq.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"
#include "models/workloads/stats.hpp"

namespace cohsim::models {
namespace {

using config::Spec;
using cpu::Order;
using scenario::Machine;
using scenario::Results;

/// Adds the driver counters one call changed (`after` minus `before`) to `sum`.
void add_call(CmdqCpuStats& sum, const CmdqCpuStats& after, const CmdqCpuStats& before) {
  for (std::size_t p = 0; p < sum.phase.size(); ++p) sum.phase[p] += after.phase[p] - before.phase[p];
  sum.calls += after.calls - before.calls;
  sum.claim_attempts += after.claim_attempts - before.claim_attempts;
  sum.claim_successes += after.claim_successes - before.claim_successes;
  sum.owner_batches += after.owner_batches - before.owner_batches;
  sum.sync_spins += after.sync_spins - before.sync_spins;
  sum.sync_wakeups += after.sync_wakeups - before.sync_wakeups;
  sum.udelays += after.udelays - before.udelays;
  sum.queue_full_waits += after.queue_full_waits - before.queue_full_waits;
  sum.slock_taken += after.slock_taken - before.slock_taken;
}

class DmaMapBench : public scenario::Workload {
 public:
  DmaMapBench(config::Reader p, Machine& m) : m_(m) {
    cpus_ = p.cpu_list("cpus", Spec{.doc = "CPUs running a benchmark thread (a count N = CPUs 0..N-1, or a list)",
                                    .def = 2},
                       m.cpu_count());
    variant_name_ = p.choice("variant", Spec{.doc = "command queue space allocation scheme", .def = "cmpxchg",
                                             .choices = {"cmpxchg", "spinlock-fallback", "fetch-add"}});
    publish_barrier_ = parse_publish_barrier(p.choice(
        "publish_barrier", Spec{.doc = "barrier between writing the commands and marking them valid: dma-wmb "
                                       "(dmb oshst, v5.9) or none (the SMMU may read a command before it is visible)",
                                .def = "dma-wmb", .choices = {"dma-wmb", "none"}}));
    const CmdqSpinlockLine slock_line = parse_spinlock_line(p.choice(
        "slock_line", Spec{.doc = "spinlock-fallback: where the spinlock sits: owner-prod (a member appended to "
                                  "struct arm_smmu_cmdq, on the line of owner_prod and lock) or own (a line of its own)",
                           .def = "owner-prod", .choices = {"owner-prod", "own"}}));
    fallback_entry_ = parse_fallback_entry(p.choice(
        "fallback_entry",
        Spec{.doc = "spinlock-fallback: how a claim starts: cmpxchg-first (the measured patch: a CPU arriving while "
                    "another holds the spinlock still tries the cmpxchg at once) or lock-first (a what-if with that "
                    "open problem fixed: a CPU that finds the spinlock held, pending or queued queues on it first) "
                    "or always-lock (an experiment: every claim takes the spinlock first, pricing the lock path)",
             .def = "cmpxchg-first", .choices = {"cmpxchg-first", "lock-first", "always-lock"}}));
    if (variant_name_ != "spinlock-fallback")
      for (const char* k : {"slock_line", "fallback_entry"})
        p.unused(k, fmt::format("read only by the spinlock-fallback variant (this run: {})", variant_name_));
    sync_timeout_ = p.time(
        "cmd_sync_timeout",
        Spec{.doc = "a CMD_SYNC wait gives up after this (\"CMD_SYNC timeout\"); source: v5.9 arm-smmu-v3.h "
                    "ARM_SMMU_POLL_TIMEOUT_US = 1000000 (1 s)",
             .def = "1s", .min = 1e6, .max = 1e13});
    duration_ = p.time("duration", Spec{.doc = "measured simulated time", .def = "5ms", .min = 1e6, .max = 1e12});
    warmup_ = p.time("warmup", Spec{.doc = "simulated time before measuring", .def = "200us", .min = 0, .max = 1e12});
    queue_entries_ = static_cast<int>(p.integer(
        "queue_entries", Spec{.doc = "command queue entries (a power of two, at least BITS_PER_LONG)", .def = 65536, .min = 64, .max = 1 << 19}));
    start_jitter_ = p.time("start_jitter", Spec{.doc = "each thread starts at a uniform random offset below this "
                                                       "(random source dma-map-bench.start)",
                                                .def = "2us", .min = 0, .max = 1e9});
    cpu_work_spread_ = p.number(
        "cpu_work_spread",
        Spec{.doc = "each op's map and unmap CPU work is drawn uniformly from work x [1 - s, 1 + s] (random source "
                    "dma-map-bench.cpu-work; per CPU, independent of the fabric's). Basis: the io-pgtable walk and "
                    "PTE store, the IOVA rcache and the page's struct touched by dma_map/unmap hit L1/L2 or miss "
                    "to the L3 or DRAM (30-120 ns each, a few per op) and a timer tick lands in about 1 op in 500; "
                    "0 = perfectly periodic work",
             .def = 0.0, .min = 0, .max = 0.9});
    if ((queue_entries_ & (queue_entries_ - 1)) != 0) p.fail("queue_entries", "must be a power of two");
    if (p.schema_mode()) return;
    if (m.smmu_params() == nullptr) p.fail("variant", fmt::format("platform {} has no \"smmu\" section", m.name()));
    smmu_params_ = *m.smmu_params();
    if (cpus_.empty()) p.fail("cpus", "needs at least one CPU");
    config::Reader section = m.platform_section("smmu", "SMMUv3: placement, command timing, driver CPU work");
    if (smmu_params_.node >= m.topology().node_count())
      section.fail("node", fmt::format("no such NUMA node (the machine has {})", m.topology().node_count()));
    if (smmu_params_.socket >= m.topology().sockets())
      section.fail("socket", fmt::format("no such socket (the machine has {})", m.topology().sockets()));
    smmu_ = std::make_unique<devices::Smmu>(smmu_params_, m.fabric(), queue_entries_, m.seed());
    cmdq_ = std::make_unique<SmmuCmdq>(parse_cmdq_variant(variant_name_), *smmu_, m.memory(), m.topology(),
                                       slock_line);
    cmdq_->set_publish_barrier(publish_barrier_);
    cmdq_->set_fallback_entry(fallback_entry_);
    cmdq_->set_sync_timeout(sync_timeout_);
    if (cmdq_->max_entries_per_call() < 2)
      p.fail("queue_entries", fmt::format("too small for {}: one call (TLBI + CMD_SYNC) may insert at most {} entries",
                                          variant_name_, cmdq_->max_entries_per_call()));
    // Per-CPU objects on each CPU's node: the IOVA allocator's per-CPU rcache
    // (struct iova_cpu_rcache) and the io-pgtable lines this CPU's IOVAs map.
    for (int c : cpus_) {
      const int node = m.topology().node_of_cpu(c);
      rcache_.push_back(m.memory().alloc(node, 64, 64, fmt::format("iova_cpu_rcache[{}]", c)));
      ptes_.push_back(m.memory().alloc(node, 64, 64, fmt::format("io_pgtable.pte[cpu{}]", c)));
    }
  }

  Results run() override {
    auto& sim = m_.sim();
    sim::RandomStream start_rng(m_.seed(), "dma-map-bench.start");
    work_rng_.clear();
    for (int c : cpus_) work_rng_.emplace_back(m_.seed(), fmt::format("dma-map-bench.cpu-work.cpu{}", c));
    window_start_ = warmup_ + start_jitter_;
    window_end_ = window_start_ + duration_;
    const auto& smmu = smmu_->stats();
    const std::size_t commands = window_.track([&smmu] { return smmu.commands; });
    const std::size_t errors = window_.track([&smmu] { return smmu.command_errors; });
    const std::size_t busy = window_.track([&smmu] { return smmu.busy; });
    window_.schedule(sim, warmup_ + start_jitter_, window_end_);
    ops_.assign(cpus_.size(), 0);
    cpu_work_.assign(cpus_.size(), {0, 0});
    op_time_.assign(cpus_.size(), 0);
    op_max_.assign(cpus_.size(), 0);
    driver_.assign(cpus_.size(), CmdqCpuStats{});
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      sim.spawn(fmt::format("cpu{} dma-map-bench", cpus_[i]), thread(i, start_rng.below(start_jitter_ + 1)));
    // A CMD_SYNC that never completes (a stale command read) is waited for up
    // to the timeout: that is not a stuck run.
    sim::RunLimits limits = kWorkloadLimits;
    limits.max_time_without_progress = std::max(limits.max_time_without_progress, 2 * sync_timeout_);
    sim.run(limits);
    Results r = report();
    r.add("smmu_commands", static_cast<double>(window_.delta(commands)));
    r.add("smmu_command_errors", static_cast<double>(window_.delta(errors)));
    r.add("stale_commands", static_cast<double>(smmu.stale_commands));
    r.add("cmd_sync_timeouts", static_cast<double>(cmdq_->sync_timeouts().size()));
    for (const auto& stale : smmu_->stale_reads()) r.failures.push_back(stale.message());
    for (const auto& timeout : cmdq_->sync_timeouts()) r.failures.push_back(timeout.message());
    r.add("smmu_busy_fraction", static_cast<double>(window_.delta(busy)) / static_cast<double>(window_.length()));
    r.extra["variant"] = variant_name_;
    scenario::add_contention_report(r, m_);
    return r;
  }

 private:
  // One benchmark thread: map, then unmap, until the window closes.
  Task<void> thread(std::size_t i, Tick start_offset) {
    cpu::Cpu& c = m_.cpu(cpus_[i]);
    auto& sim = m_.sim();
    co_await sim.delay(start_offset);
    const Addr rcache = rcache_[i], pte = ptes_[i];
    std::uint64_t iova = 0x1000000ull + 0x1000ull * static_cast<std::uint64_t>(i);
    while (sim.now() < window_end_) {
      Tick t = sim.now();

      // dma_map_single: alloc_iova_fast from the per-CPU rcache, then the
      // io-pgtable walk and PTE store (coherent walk: no command, no sync).
      const std::uint64_t cached = co_await c.load(rcache, 8);
      co_await c.store(rcache, 8, cached + 1);
      co_await c.compute(work(i, smmu_params_.map_cpu_work));
      co_await c.store(pte, 8, iova | 0x3);
      const Tick mapped = sim.now();
      // dma_unmap_single: clear the PTE, iotlb sync (TLBI + CMD_SYNC), free the IOVA.
      co_await c.store(pte, 8, 0);
      co_await c.compute(work(i, smmu_params_.unmap_cpu_work));
      const Tick before_queue = sim.now();
      auto [d0, d1] = devices::cmd_tlbi_nh_va(1, iova);
      const CmdqCommand tlbi{d0, d1};
      const CmdqCpuStats driver_before = cmdq_->stats(c.id());
      co_await cmdq_->issue_cmdlist(c, &tlbi, 1, true);
      const Tick after_queue = sim.now();
      co_await c.store(rcache, 8, cached);
      const Tick done = sim.now();
      // An op, its driver counters and its phase times count when it completes inside the window.
      if (window_.contains(done)) {
        ++ops_[i];
        cpu_work_[i][0] += mapped - t;
        cpu_work_[i][1] += (before_queue - mapped) + (done - after_queue);
        op_time_[i] += done - t;
        add_call(driver_[i], cmdq_->stats(c.id()), driver_before);
      }
      // The longest op overlapping the window, cut at the window's end.
      if (done > window_start_) op_max_[i] = std::max(op_max_[i], std::min(done, window_end_) - t);
      sim.note_progress();
    }
  }

  // One op's CPU work: the platform's mean, spread by cpu_work_spread.
  Tick work(std::size_t i, Tick mean_work) {
    if (cpu_work_spread_ <= 0) return mean_work;
    const double f = 1.0 + cpu_work_spread_ * (2.0 * work_rng_[i].unit() - 1.0);
    return static_cast<Tick>(static_cast<double>(mean_work) * f);
  }

  Results report() {
    Results r;
    const double seconds = window_.seconds();
    std::vector<double> per_cpu;
    std::uint64_t total_ops = 0;
    for (std::size_t i = 0; i < cpus_.size(); ++i) {
      per_cpu.push_back(static_cast<double>(ops_[i]) / seconds);
      total_ops += ops_[i];
    }
    r.add("ops_per_cpu_per_s", mean(per_cpu));
    r.add("total_ops_per_s", static_cast<double>(total_ops) / seconds);
    r.add("ops_per_cpu_min", *std::min_element(per_cpu.begin(), per_cpu.end()));
    r.add("ops_per_cpu_median", median(per_cpu));
    r.add("ops_per_cpu_max", *std::max_element(per_cpu.begin(), per_cpu.end()));
    // A per-CPU rate is a count over the window: with few operations each, one more or less is a step of
    // 1 / window (200 ops/s in 5 ms), too coarse for per-CPU or per-die shares.
    constexpr double kFewOpsPerCpu = 100;
    std::vector<double> working;  // ops of the CPUs that completed any
    for (std::uint64_t n : ops_)
      if (n > 0) working.push_back(static_cast<double>(n));
    const auto idle = cpus_.size() - working.size();
    const double working_median = working.empty() ? 0.0 : median(working);
    if (idle > 0 && working_median >= kFewOpsPerCpu) {
      // Not a coarse count: some CPUs complete nothing while the others complete many (who wins the claim).
      cohsim::log("dma-map-bench")
          ->warn("{} of {} CPUs completed no operation in the {} window while the others completed {} each "
                 "(median): they starved for the whole window (ops_per_cpu_per_s.dieN shows which dies)",
                 idle, cpus_.size(), sim::format_time(window_.length()), working_median);
    } else if (const double counted = static_cast<double>(total_ops) / static_cast<double>(cpus_.size());
               counted < kFewOpsPerCpu) {
      cohsim::log("dma-map-bench")
          ->warn("each CPU completed about {:.1f} operations in the {} window (mean): per-CPU and per-die rates "
                 "move in steps of {:.0f} ops/s; a longer --set duration=... makes them finer",
                 counted, sim::format_time(window_.length()), 1.0 / seconds);
    }
    r.add("cpus", static_cast<double>(cpus_.size()));
    // Mean ops per CPU per second of each die's benchmark CPUs (who wins the contended lines).
    std::map<int, std::pair<double, int>> per_die;
    for (std::size_t i = 0; i < cpus_.size(); ++i) {
      auto& [sum, n] = per_die[m_.topology().cpu(cpus_[i]).die_global];
      sum += per_cpu[i];
      ++n;
    }
    for (const auto& [die, sum_n] : per_die)
      r.add(fmt::format("ops_per_cpu_per_s.die{}", die), sum_n.first / sum_n.second);
    Tick op_time = 0;
    for (Tick t : op_time_) op_time += t;
    r.add("op_ns_mean", total_ops ? sim::to_ns(op_time) / static_cast<double>(total_ops) : 0.0);
    // The longest op (map + unmap) of any CPU: the longest completed in the
    // window, or one started before the window's end and still running (for
    // the time from its start to the window's end): how long a CPU starves.
    const Tick longest = *std::max_element(op_max_.begin(), op_max_.end());
    r.add("op_ns_max", sim::to_ns(longest));
    // Driver counters of the calls in the ops counted.
    CmdqCpuStats d;
    for (const CmdqCpuStats& s : driver_) add_call(d, s, CmdqCpuStats{});
    auto per_call = [&](double x) { return d.calls ? x / static_cast<double>(d.calls) : 0.0; };
    r.add("cmpxchg_attempts_per_success",
          d.claim_successes ? static_cast<double>(d.claim_attempts) / static_cast<double>(d.claim_successes) : 0.0);
    // A failed CAS of the claim word per call (fetch-add never fails); and the
    // claim atomics per call issued from each die's CPUs, which with
    // coherence.atomics cas/ld_op "llc" execute in that die's L3.
    r.add("claim_failures_per_call", per_call(static_cast<double>(d.claim_attempts - d.claim_successes)));
    std::map<int, std::uint64_t> claim_atomics_by_die;
    for (std::size_t i = 0; i < cpus_.size(); ++i)
      claim_atomics_by_die[m_.topology().cpu(cpus_[i]).die_global] += driver_[i].claim_attempts;
    for (const auto& [die, atomics] : claim_atomics_by_die)
      r.add(fmt::format("claim_atomics_per_call.die{}", die), per_call(static_cast<double>(atomics)));
    r.add("commands_per_batch", d.owner_batches ? 2.0 * static_cast<double>(d.calls) / static_cast<double>(d.owner_batches) : 0.0);
    r.add("sync_spins_per_call", per_call(static_cast<double>(d.sync_spins)));
    r.add("sync_wakeups_per_call", per_call(static_cast<double>(d.sync_wakeups)));
    r.add("udelays_per_call", per_call(static_cast<double>(d.udelays)));
    r.add("queue_full_waits", static_cast<double>(d.queue_full_waits));
    if (cmdq_->variant() == CmdqVariant::spinlock_fallback)
      r.add("spinlock_taken_per_call", per_call(static_cast<double>(d.slock_taken)));
    // Time by phase, ns per op (map + unmap), the queue phases from the driver.
    config::json phases = config::json::object();
    auto phase = [&](const std::string& name, double ns_total) {
      const double v = total_ops ? ns_total / static_cast<double>(total_ops) : 0.0;
      r.add("phase_ns." + name, v);
      phases[name] = v;
    };
    Tick map_work = 0, unmap_work = 0;
    for (const auto& w : cpu_work_) {
      map_work += w[0];
      unmap_work += w[1];
    }
    phase("map", sim::to_ns(map_work));
    phase("unmap_cpu", sim::to_ns(unmap_work));
    for (int p = 0; p < kCmdqPhases; ++p) phase(kCmdqPhaseNames[static_cast<std::size_t>(p)], sim::to_ns(d.phase[p]));
    r.extra["phases"] = phases;
    return r;
  }

  Machine& m_;
  std::vector<int> cpus_;
  std::string variant_name_;
  CmdqPublishBarrier publish_barrier_ = CmdqPublishBarrier::dma_wmb;
  Tick sync_timeout_ = kCmdSyncTimeoutDefault;
  Tick duration_ = 0, warmup_ = 0, start_jitter_ = 0;
  int queue_entries_ = 0;
  double cpu_work_spread_ = 0;
  CmdqFallbackEntry fallback_entry_ = CmdqFallbackEntry::cmpxchg_first;
  std::vector<sim::RandomStream> work_rng_;    ///< per thread: its CPU work's spread
  devices::SmmuParams smmu_params_;
  std::unique_ptr<devices::Smmu> smmu_;
  std::unique_ptr<SmmuCmdq> cmdq_;
  std::vector<Addr> rcache_, ptes_;
  MeasurementWindow window_;
  Tick window_end_ = 0;                        ///< threads stop starting ops here
  std::vector<std::uint64_t> ops_;             ///< ops completed in the window, per thread
  std::vector<std::array<Tick, 2>> cpu_work_;  ///< map and unmap CPU work of those ops
  std::vector<Tick> op_time_;                  ///< their durations, map to unmap's end
  std::vector<Tick> op_max_;                   ///< the longest of them, per thread
  Tick window_start_ = 0;
  std::vector<CmdqCpuStats> driver_;           ///< their driver counters
};

}  // namespace

void register_dma_map_bench(WorkloadTable& t) {
  t.add("dma-map-bench",
        "SMMUv3 DMA map+unmap per CPU: arm_smmu_cmdq_issue_cmdlist (TLBI + CMD_SYNC) in the cmpxchg, "
        "spinlock-fallback or fetch-add variant",
        [](config::Reader p, Machine& m) { return std::make_unique<DmaMapBench>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"ops_per_cpu_per_s", "ops/s per CPU", false}, {"total_ops_per_s", "ops/s", false}});
}

}  // namespace cohsim::models
