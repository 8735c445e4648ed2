// Memory load latency: a dependent random pointer chase over a buffer (lmbench
// lat_mem_rd -t; larger than the last-level cache for DRAM), from CPU `cpu`
// with the buffer on node `node`. The chain is a random cyclic permutation of the
// buffer's lines; each load's address depends on the previous load.
#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "cohsim/sim/random.hpp"
#include "models/registry.hpp"
#include "models/workloads/measurement_window.hpp"
#include "models/workloads/run_limits.hpp"

namespace cohsim::models {
namespace {

class MemLatency : public scenario::Workload {
 public:
  MemLatency(config::Reader p, Machine& m) : m_(m) {
    cpu_ = static_cast<int>(p.integer("cpu", Spec{.doc = "CPU that chases", .def = 0, .min = 0, .max = m.cpu_count() - 1.0}));
    node_ = static_cast<int>(p.integer("node", Spec{.doc = "node holding the buffer", .def = 0, .min = 0,
                                                    .max = m.topology().node_count() - 1.0}));
    bytes_ = p.size("buffer", Spec{.doc = "buffer size", .def = "64MiB", .min = 4096, .max = 1e10});
    loads_ = static_cast<int>(p.integer("loads", Spec{.doc = "measured loads", .def = 20000, .min = 1, .max = 1e8}));
    // lat_mem_rd chases its list again and again, so the value it reports is
    // the warm one: one pass fills the caches. The chase is a cycle through
    // the contiguous buffer, whose lines spread evenly over the LLC's sets: a
    // set that gets more lines than its ways misses on every pass (LRU), one
    // that gets no more keeps them. From (ways + 1) lines per set on, every set
    // misses every pass, so a buffer that large needs no warm-up.
    const std::uint64_t lines = bytes_ / fabric::kLineBytes;
    const auto& llc = m.fabric().params().llc;
    const int ways = std::max(llc.assoc, 1);
    const bool some_hit = static_cast<double>(bytes_) < static_cast<double>(llc.size) * (ways + 1.0) / ways;
    warmup_ = static_cast<int>(p.integer(
        "warmup", Spec{.doc = "loads before measuring (default: one pass over a buffer some of whose lines stay in "
                              "the LLC, else 2000)",
                       .def = some_hit ? static_cast<std::int64_t>(lines) : std::int64_t{2000}, .min = 0, .max = 1e8}));
  }

  Results run() override {
    const std::uint64_t lines = bytes_ / fabric::kLineBytes;
    fabric::Addr base = m_.memory().alloc(node_, bytes_, 4096, "lat_mem_rd.buffer");
    // A random walk over distinct lines: a multiplicative permutation of the
    // line indices (an odd multiplier modulo a power of two visits them all).
    std::uint64_t span = 1;
    while (span < lines) span <<= 1;
    sim::RandomStream rng(m_.seed(), "pointer_chase_layout");
    const std::uint64_t mult = ((rng.next() << 2) | 1) & (span - 1), add = (rng.next() | 1) & (span - 1);
    // The window: the measured loads, after the warm-up ones.
    MeasurementWindow window;
    const auto& fabric = m_.fabric().stats();
    const std::size_t llc_hits = window.track([&fabric] { return fabric.llc_hits; });
    const std::size_t dram_reads = window.track([&fabric] { return fabric.dram_reads; });
    auto chase = [&]() -> Task<void> {
      cpu::Cpu& c = m_.cpu(cpu_);
      std::uint64_t idx = 0;
      for (int i = 0; i < warmup_ + loads_; ++i) {
        if (i == warmup_) window.open(m_.sim().now());
        do idx = (idx * mult + add) % span; while (idx >= lines);
        co_await c.load(base + idx * fabric::kLineBytes, 8);
        m_.sim().note_progress();
      }
      window.close(m_.sim().now());
    };
    m_.sim().spawn(fmt::format("cpu{} chase", cpu_), chase());
    m_.sim().run(kWorkloadLimits);
    Results r;
    r.add("load_ns", sim::to_ns(window.length()) / loads_);
    r.add("llc_hits", static_cast<double>(window.delta(llc_hits)));
    r.add("dram_reads", static_cast<double>(window.delta(dram_reads)));
    return r;
  }

 private:
  Machine& m_;
  int cpu_, node_, loads_, warmup_;
  std::uint64_t bytes_;
};

}  // namespace

void register_mem_latency(WorkloadTable& t) {
  t.add("mem-latency", "dependent random pointer chase (lmbench lat_mem_rd -t) from `cpu` over a buffer on `node`",
        [](config::Reader p, Machine& m) { return std::make_unique<MemLatency>(p, m); },
        // Headline metrics (name, unit, lower is better), reported and plotted first.
        {{"load_ns", "ns", true}});
}

}  // namespace cohsim::models
