// N runs of a litmus test on a machine: placement of the threads, fresh
// addresses per run, initial values, start offsets and timing jitter from
// named random streams, and the histogram of final states.
#include "cohsim/litmus/runner.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <memory>

#include "thread_exec.hpp"

namespace cohsim::litmus {

using detail::Layout;
using detail::ThreadExec;

bool satisfies(const Prop& p, const State& state) {
  switch (p.kind) {
    case Prop::Kind::truth: return true;
    case Prop::Kind::falsity: return false;
    case Prop::Kind::atom: {
      const Value& v = state[static_cast<std::size_t>(p.cell)];
      return v.number == p.value.number && v.location == p.value.location;
    }
    case Prop::Kind::negation: return !satisfies(p.operands[0], state);
    case Prop::Kind::conjunction: return satisfies(p.operands[0], state) && satisfies(p.operands[1], state);
    case Prop::Kind::disjunction: return satisfies(p.operands[0], state) || satisfies(p.operands[1], state);
  }
  return false;
}

std::vector<int> thread_placement(const topo::Topology& topology, int threads) {
  const int cores = topology.core_count();
  const int stride = std::max(1, cores / std::max(1, threads));
  std::vector<int> cpus;
  for (int i = 0; i < threads; ++i) {
    const int core = i < cores ? i * stride : i % cores;  // more threads than cores: SMT siblings too
    const int thread = i < cores ? 0 : i / cores;
    for (int c = 0; c < topology.cpu_count(); ++c)
      if (topology.cpu(c).core_global == core && topology.cpu(c).thread == thread) cpus.push_back(c);
  }
  return cpus;
}

namespace {

/// The latency of one load that misses to memory homed at the farthest thread's
/// node, as this platform prices it: the scale of the start offsets and jitter.
sim::Tick miss_latency(scenario::Machine& m, const std::vector<int>& cpus) {
  const int node = m.topology().node_of_cpu(cpus.back());
  const fabric::Addr line = m.memory().alloc(node, fabric::kLineBytes, fabric::kLineBytes, "litmus.calibration");
  sim::Tick done = 0;
  auto probe = [](cpu::Cpu& c, fabric::Addr a, sim::Tick& at) -> sim::Task<void> {
    (void)co_await c.load(a, 8);
    at = c.sim().now();
  };
  const sim::Tick start = m.sim().now();
  m.sim().spawn("litmus miss-latency probe", probe(m.cpu(cpus.front()), line, done));
  m.sim().run();
  return std::max<sim::Tick>(done - start, 1);
}

/// Clears the CPUs' jitter source (a stream local to run_test) when the run ends.
struct JitterGuard {
  scenario::Machine& m;
  const std::vector<int>& cpus;
  ~JitterGuard() {
    for (int c : cpus) m.cpu(c).set_jitter(nullptr, 0);
  }
};

/// One run's initial cache states (stream litmus.cache), brought about
/// before the threads start, as litmus7's -preload does and as real caches
/// start a run: a load that hits binds at once while another misses, a store
/// to a line held writable is written at once. In kWarmEighths of 8 runs the
/// lines are preloaded, in the others every line is cold (only in memory). A
/// warm run either follows the test's diy `Prefetch=` hints (every other one,
/// when it has some: T read into that thread's cache, W held writable by it,
/// F left out of it; the locations no hint names drawn as below) or draws each
/// location's lines: left cold (a quarter), read into the caches of a random
/// subset of the threads (half), or held writable by one random thread (a
/// quarter). Only the fabric's permissions change, never a value.
struct Preload {
  struct Hint {
    int cpu;
    std::size_t location;
    char how;
  };
  std::vector<Hint> hints;
  std::vector<std::pair<int, fabric::Addr>> reads, writes;  ///< (cpu, line)

  static constexpr std::uint64_t kWarmEighths = 6;

  void draw(sim::RandomStream& rng, const Layout& layout, const std::vector<int>& cpus) {
    reads.clear();
    writes.clear();
    const std::uint64_t mode = rng.below(8);
    if (mode >= kWarmEighths) return;
    const bool hinted = !hints.empty() && mode % 2 == 0;
    for (std::size_t j = 0; j < layout.base.size(); ++j) {
      const bool named = hinted && std::any_of(hints.begin(), hints.end(), [&](const Hint& h) { return h.location == j; });
      for (fabric::Addr line = layout.base[j]; line < layout.base[j] + layout.bytes[j]; line += fabric::kLineBytes) {
        if (named) {
          for (const Hint& h : hints)
            if (h.location == j && h.how != 'F') (h.how == 'T' ? reads : writes).emplace_back(h.cpu, line);
          continue;
        }
        const std::uint64_t how = rng.below(4);
        if (how == 0) continue;
        if (how == 3) {
          writes.emplace_back(cpus[rng.below(cpus.size())], line);
          continue;
        }
        for (int c : cpus)
          if (rng.below(2) == 1) reads.emplace_back(c, line);
      }
    }
  }
  bool empty() const { return reads.empty() && writes.empty(); }
  sim::Task<void> perform(fabric::Fabric& f) {
    for (const auto& [cpu, line] : reads) (void)co_await f.acquire(cpu, line, false);
    for (const auto& [cpu, line] : writes) (void)co_await f.acquire(cpu, line, true);
  }
};

/// Per-thread timing noise (stream litmus.noise): in half the runs each
/// thread's jitter is drawn from 1/4, 1, 3 or 9 miss latencies instead of the
/// usual 3, so that one thread's accesses may linger (a store in its buffer,
/// a load behind a slow miss) while another's are quick, as litmus7's stress
/// threads and real cores' uneven speeds do (the Dat3M LD shapes need a
/// store to wait out two other threads' barriers and loads).
sim::Tick thread_jitter_bound(sim::Tick miss, std::size_t i) {
  static constexpr sim::Tick kQuarters[4] = {1, 4, 12, 36};
  return miss * kQuarters[i] / 4;
}
sim::Tick thread_jitter(sim::RandomStream& noise, bool varied, sim::Tick miss, sim::Tick usual) {
  return varied ? thread_jitter_bound(miss, noise.below(4)) : usual;
}

}  // namespace

TestResult run_test(const Test& test, scenario::Machine& m, std::uint64_t runs, std::uint64_t seed,
                    const std::vector<int>& cpus) {
  const bool arm = m.cpu_params().arch == "arm64";
  if (arm != (test.arch == Arch::aarch64))
    throw RunError(fmt::format("{}: an {} test cannot run on {} (cpu.arch {})", test.file, test.arch_word, m.name(),
                               m.cpu_params().arch));
  const int n = static_cast<int>(test.threads.size());
  if (n > m.cpu_count()) throw RunError(fmt::format("{}: {} threads, {} has {} CPUs", test.file, n, m.name(), m.cpu_count()));
  TestResult result;
  result.platform = m.name();
  if (cpus.empty()) {
    result.cpus = thread_placement(m.topology(), n);
  } else {  // --cpus: the user's placement ("does this barrier suffice across sockets?")
    if (static_cast<int>(cpus.size()) < n)
      throw RunError(fmt::format("{}: {} threads, --cpus names {} CPU{}", test.file, n, cpus.size(),
                                 cpus.size() == 1 ? "" : "s"));
    for (int c : cpus)
      if (c < 0 || c >= m.cpu_count())
        throw RunError(fmt::format("--cpus: CPU {} does not exist on {} (CPUs 0-{})", c, m.name(), m.cpu_count() - 1));
    result.cpus.assign(cpus.begin(), cpus.begin() + n);
    result.placed = true;
  }
  result.runs = runs;
  // Padding, so that no small integer a test uses equals a location's address.
  for (int node = 0; node < m.memory().nodes(); ++node) m.memory().alloc(node, 4096, 64, "litmus.padding");
  const sim::Tick miss = miss_latency(m, result.cpus);
  result.start_spread = 2 * miss;
  result.jitter = 3 * miss;
  result.jitter_low = thread_jitter_bound(miss, 0);
  result.jitter_high = thread_jitter_bound(miss, 3);
  result.warm_runs_in_8 = static_cast<int>(Preload::kWarmEighths);
  sim::RandomStream home_rng(seed, "litmus.home"), start_rng(seed, "litmus.start"), jitter_rng(seed, "litmus.jitter"), branch_rng(seed, "litmus.branch");
  sim::RandomStream cache_rng(seed, "litmus.cache"), noise_rng(seed, "litmus.noise");
  Preload preload;
  for (const PrefetchHint& h : test.prefetch) {
    const auto l = std::find_if(test.locations.begin(), test.locations.end(), [&](const Location& x) { return x.name == h.location; });
    if (l != test.locations.end() && h.thread < n)
      preload.hints.push_back(Preload::Hint{result.cpus[static_cast<std::size_t>(h.thread)],
                                            static_cast<std::size_t>(l - test.locations.begin()), h.how});
  }
  JitterGuard guard{m, result.cpus};
  std::vector<std::unique_ptr<ThreadExec>> threads;
  for (int i = 0; i < n; ++i)
    threads.push_back(std::make_unique<ThreadExec>(test, i, m.cpu(result.cpus[static_cast<std::size_t>(i)]), branch_rng));
  // Each run homes each location at the node of a thread picked at random:
  // which accesses are local and which cross the fabric varies from run to
  // run, and with it which of two accesses is seen first.
  std::vector<int> nodes;
  for (int c : result.cpus) nodes.push_back(m.topology().node_of_cpu(c));
  std::map<std::vector<std::int64_t>, std::uint64_t> histogram;
  Layout layout;
  std::vector<std::int64_t> key(2 * test.cells.size());
  for (std::uint64_t r = 0; r < runs; ++r) {
    layout.base.clear();
    layout.bytes.clear();
    for (std::size_t j = 0; j < test.locations.size(); ++j) {
      const Location& l = test.locations[j];
      const std::uint64_t bytes = static_cast<std::uint64_t>(l.element_size) * static_cast<std::uint64_t>(l.elements);
      const std::uint64_t rounded = (bytes + fabric::kLineBytes - 1) / fabric::kLineBytes * fabric::kLineBytes;
      const int home = nodes[home_rng.below(nodes.size())];
      layout.base.push_back(m.memory().alloc(home, rounded, fabric::kLineBytes, l.name));
      layout.bytes.push_back(bytes);
    }
    for (std::size_t j = 0; j < test.locations.size(); ++j) {
      const Location& l = test.locations[j];
      for (int e = 0; e < l.elements; ++e) {
        const std::size_t ei = static_cast<std::size_t>(e);
        const std::uint64_t v = layout.address_of(Value{l.init[ei], l.init_pointer[ei]});
        m.fabric().poke(layout.base[j] + ei * static_cast<std::uint64_t>(l.element_size), l.element_size, v);
      }
    }
    preload.draw(cache_rng, layout, result.cpus);
    if (!preload.empty()) {
      m.sim().spawn("litmus preload", preload.perform(m.fabric()));
      if (m.sim().run() != sim::RunEnd::all_done) throw RunError(fmt::format("{}: run {}: the preload did not finish", test.file, r));
    }
    const bool varied = noise_rng.below(2) == 1;
    for (int c : result.cpus) m.cpu(c).set_jitter(&jitter_rng, thread_jitter(noise_rng, varied, miss, result.jitter));
    for (auto& t : threads)
      t->set_linger(&noise_rng, varied && noise_rng.below(2) == 1 ? thread_jitter_bound(miss, noise_rng.below(4)) : 0);
    for (int i = 0; i < n; ++i) {
      threads[static_cast<std::size_t>(i)]->reset(layout);
      m.sim().spawn(fmt::format("litmus P{}", i), threads[static_cast<std::size_t>(i)]->run(start_rng.below(result.start_spread)));
    }
    if (m.sim().run() != sim::RunEnd::all_done)
      throw RunError(fmt::format("{}: run {} did not finish\n{}", test.file, r, m.sim().describe_processes()));
    for (std::size_t c = 0; c < test.cells.size(); ++c) {
      const Cell& cell = test.cells[c];
      Value v;
      if (cell.thread >= 0) {
        v = layout.describe(threads[static_cast<std::size_t>(cell.thread)]->final_register(cell.reg));
      } else {
        const Location& l = test.locations[static_cast<std::size_t>(cell.location)];
        const fabric::Addr a = layout.base[static_cast<std::size_t>(cell.location)] +
                               static_cast<fabric::Addr>(cell.element * l.element_size);
        const std::uint64_t raw = m.fabric().peek(a, l.element_size);
        v = layout.describe(raw);
        if (v.location < 0 && l.element_size < 8) {  // a narrow location's value, signed as herd prints it
          const int shift = 64 - 8 * l.element_size;
          v.number = static_cast<std::int64_t>(raw << shift) >> shift;
        }
      }
      key[2 * c] = v.location;
      key[2 * c + 1] = v.number;
    }
    ++histogram[key];
  }
  for (const auto& [k, count] : histogram) {
    Outcome o;
    for (std::size_t c = 0; c < test.cells.size(); ++c) o.state.push_back(Value{k[2 * c + 1], static_cast<int>(k[2 * c])});
    o.count = count;
    o.satisfies = satisfies(test.prop, o.state);
    (o.satisfies ? result.positive : result.negative) += count;
    result.outcomes.push_back(std::move(o));
  }
  result.witnessed = test.quantifier == Quantifier::forall ? result.negative > 0 : result.positive > 0;
  return result;
}

}  // namespace cohsim::litmus
