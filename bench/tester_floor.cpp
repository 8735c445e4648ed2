// tester_floor: what a lean implementation of the random coherence tester's
// work (`cohsim selftest coherence`) costs per operation on this host, for
// deciding whether a leaner implementation of the fabric and CPU models could
// reach a speed target (docs/performance.md, "A floor for the random tester").
//
//   tester_floor [--cpus N] [--ops N] [--lines N] [--seed N] [--reps N] [--no-draws]
//
// It runs the tester's operations (each CPU's own: drawn by the tester's own
// function, models/workloads/tester_ops.hpp, from the same named random
// streams; the same 8 falsely shared lines plus the counter; private caches
// of 4 lines, 2-way, as the tester's 256-byte caches; a jitter of 0-300 ns
// before each load and store, as the tester draws) on the leanest model
// written that still moves every coherence message as an event:
//
//   - an event queue of plain structs (a vector kept sorted: it holds a few
//     events per CPU), no coroutines, no processes;
//   - one private cache level; a directory per line (sharer mask, owner)
//     that applies each transaction at the home at once, so there are no
//     transient states and no races to resolve;
//   - a miss is a request event at the home, an event per forward or
//     invalidation at the holder, an event per data reply or acknowledgement
//     at the requester; an eviction is an event at the home; a hit, a
//     barrier and a jitter delay are one event each;
//   - one access at a time per CPU (no store buffer, no loads in flight);
//     an increment fetches the counter's line as a store does (the tester
//     on Kunpeng 920 executes it in the die's L3: a request and a reply too);
//   - the checks at their cheapest: the single-writer rule at every
//     transaction (an owner has no other sharer), each access logged and
//     each CPU's log checked in program order at the end. They are there to
//     be paid for, as the tester pays for its own: this protocol makes them
//     hold by construction, so they are no evidence of its correctness.
//
// What it leaves out (the store buffer and loads in flight, the L2 and the
// die's L3, link timelines and the interconnect's paths, transient states
// and their races, the checker's value checks against every holder, the
// memory model's ordering) is work the real model does on top, so an
// implementation of all of it written as leanly would cost more per
// operation. It is one careful attempt, not a proof: a cleverer one could
// be somewhat faster. Its latencies only shape the interleaving (a Kunpeng
// 920-like spread over 4 nodes); they are not a platform's.
//
// Prints the median over --reps runs of the time per operation (thread CPU
// time), events per operation, the protocol's counts, and (unless
// --no-draws) the time of the random draws alone, timed in runs alternated
// with the floor's. Exit 1 if a check fails (which this protocol rules out
// by construction), 2 on bad arguments.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cohsim/sim/random.hpp"
#include "models/workloads/tester_ops.hpp"
#include "workloads.hpp"

namespace {

using Tick = std::uint64_t;  // picoseconds, as cohsim's
constexpr Tick kNs = 1000;

// A Kunpeng 920-like shape: 96 CPUs in 4 nodes (2 per socket); the tester
// spreads its CPUs with a stride of 96 / N, as `selftest` does.
constexpr int kMachineCpus = 96, kNodes = 4, kCpusPerNode = kMachineCpus / kNodes;
constexpr Tick kHit = 2 * kNs, kBarrier = 10 * kNs, kJitterMax = 300 * kNs;
int cpu_id(int slot, int cpus) { return slot * std::max(1, kMachineCpus / cpus) % kMachineCpus; }
Tick hop(int from_node, int to_node) {
  if (from_node == to_node) return 30 * kNs;
  return from_node / 2 == to_node / 2 ? 60 * kNs : 120 * kNs;
}

enum Kind : std::uint32_t { kStart, kAccess, kDone, kRequest, kForward, kInvalidate, kReply, kEvict };

struct Event {
  Tick at;
  std::uint64_t seq;  // scheduling order: ties run first in, first out
  std::uint32_t target;  // the CPU (slot) the event runs at, or the line for kRequest/kEvict
  Kind kind;
  std::uint32_t from;  // the requesting CPU slot (kRequest, kForward, kInvalidate), the evicting one (kEvict)
  std::uint32_t line;
};
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }
};

using cohsim::models::TesterOp;

/// Whether the tester draws a jitter before an operation of this kind (a
/// load's in `Cpu::perform_load`, a store's at its write port; an atomic
/// increment and a barrier draw none).
bool jittered(TesterOp::Kind k) { return k != TesterOp::Kind::increment && k != TesterOp::Kind::barrier; }

/// The draws alone, for `cpus` x `ops` operations and their jitters: the
/// random numbers' share of the floor. Returns a sum of what was drawn (so
/// that nothing is optimised away). Not inlined, nor is Floor::run, so that
/// a profile gives each its own cost.
[[gnu::noinline]] std::uint64_t draws_only(int cpus, int ops, int nlines, std::uint64_t seed) {
  std::vector<cohsim::sim::RandomStream> rngs;
  for (int i = 0; i < cpus; ++i) rngs.push_back(cohsim::models::tester_op_stream(seed, cpu_id(i, cpus)));
  cohsim::sim::RandomStream jitter = cohsim::models::tester_jitter_stream(seed);
  std::uint64_t sum = 0;
  for (int k = 0; k < ops; ++k)
    for (auto& rng : rngs) {
      const TesterOp op = cohsim::models::draw_tester_op(rng, static_cast<std::size_t>(nlines), /*arm=*/true);
      sum += op.word;
      if (jittered(op.kind)) sum += jitter.below(kJitterMax);
    }
  return sum;
}

enum State : std::uint8_t { kInvalid, kShared, kExclusive, kModified };

struct Way {
  std::uint32_t line = ~0u;
  State state = kInvalid;
  std::uint64_t used = 0;  // LRU stamp
};

struct Access {
  std::uint32_t word;
  std::uint32_t place;  // the word's write count read or made
  bool write;
};

struct Cpu {
  int id = 0;  // the machine's CPU id
  int node = 0;
  std::array<Way, 4> ways{};  // 2 sets x 2 ways
  int ops_left = 0;
  // The access in progress.
  std::uint32_t line = 0, word = 0;
  bool write = false, log = false;
  int replies_due = 0;
  std::vector<Access> accesses;
  std::uint64_t written = 0;
};

struct Line {
  int home = 0;
  std::uint64_t sharers = 0;  // CPU slots (the floor runs at most 64 CPUs)
  int owner = -1;             // the slot holding it E or M, or -1
};

struct Counts {
  std::uint64_t ops = 0, events = 0, transactions = 0, evictions = 0, invalidations = 0;
};

class Floor {
 public:
  Floor(int cpus, int ops, int nlines, std::uint64_t seed)
      : jitter_(cohsim::models::tester_jitter_stream(seed)), words_written_(static_cast<std::size_t>(nlines + 1) * 8, 0) {
    for (int i = 0; i <= nlines; ++i) lines_.push_back({i < nlines ? i % kNodes : 0, 0, -1});  // the last: the counter
    for (int i = 0; i < cpus; ++i) {
      Cpu c;
      c.id = cpu_id(i, cpus);
      c.node = c.id / kCpusPerNode;
      c.ops_left = ops;
      c.accesses.reserve(static_cast<std::size_t>(ops));
      cpus_.push_back(std::move(c));
      rngs_.push_back(cohsim::models::tester_op_stream(seed, cpus_.back().id));
      schedule(0, static_cast<std::uint32_t>(i), kStart, 0, 0);
    }
  }

  /// Runs to the end; "" or the first violation.
  [[gnu::noinline]] std::string run() {
    while (!queue_.empty()) {
      const Event e = queue_.back();
      queue_.pop_back();
      now_ = e.at;
      ++counts_.events;
      if (!handle(e)) return failure_;
    }
    for (const Cpu& c : cpus_)
      if (!check_per_location(c)) return failure_;
    return "";
  }
  const Counts& counts() const { return counts_; }
  std::uint64_t counter() const { return counter_; }

 private:
  void schedule(Tick at, std::uint32_t target, Kind kind, std::uint32_t from, std::uint32_t line) {
    // A vector sorted latest first: the queue holds a few events per CPU, so
    // a linear insertion from the earliest end beats a heap's sifting.
    const Event e{at, seq_++, target, kind, from, line};
    auto it = queue_.end();
    while (it != queue_.begin() && Later{}(e, *(it - 1))) --it;
    queue_.insert(it, e);
  }

  bool handle(const Event& e) {
    switch (e.kind) {
      case kStart: return next_op(cpus_[e.target]);
      case kAccess: return access(cpus_[e.target]);
      case kDone: return done(cpus_[e.target]);
      case kRequest: return request(e);
      case kForward:
      case kInvalidate:  // the holder answers the requester
        schedule(now_ + hop(cpus_[e.target].node, cpus_[e.from].node), e.from, kReply, e.target, e.line);
        return true;
      case kReply:
        if (--cpus_[e.target].replies_due == 0) return done(cpus_[e.target]);
        return true;
      case kEvict: {
        Line& l = lines_[e.line];
        if (l.owner == static_cast<int>(e.from)) l.owner = -1;
        l.sharers &= ~(std::uint64_t{1} << e.from);
        return true;
      }
    }
    return true;
  }

  bool fail(std::string why) {
    failure_ = std::move(why);
    return false;
  }

  bool next_op(Cpu& c) {
    if (c.ops_left-- == 0) return true;
    ++counts_.ops;
    const auto nlines = static_cast<std::uint32_t>(lines_.size() - 1);
    const TesterOp op = cohsim::models::draw_tester_op(rngs_[slot(c)], nlines, /*arm=*/true);
    const bool increment = op.kind == TesterOp::Kind::increment;
    c.line = increment ? nlines : static_cast<std::uint32_t>(op.line);  // the last line is the counter
    c.word = c.line * 8 + (increment ? 0 : op.word);
    if (op.kind != TesterOp::Kind::barrier) return begin_access(c, op.kind);
    schedule(now_ + kBarrier, slot(c), kStart, 0, 0);
    return true;
  }

  /// Starts an access of kind k after the jitter the tester draws before
  /// it, if any. Its 8-byte loads and stores are logged, as the tester logs
  /// them for its per-location check.
  bool begin_access(Cpu& c, TesterOp::Kind k) {
    c.write = k == TesterOp::Kind::store || k == TesterOp::Kind::increment;
    c.log = k == TesterOp::Kind::load || k == TesterOp::Kind::store;
    if (!jittered(k)) return access(c);
    schedule(now_ + jitter_.below(kJitterMax), slot(c), kAccess, 0, 0);
    return true;
  }

  std::uint32_t slot(const Cpu& c) const { return static_cast<std::uint32_t>(&c - cpus_.data()); }

  Way* find(Cpu& c, std::uint32_t line) {
    for (int w = 0; w < 2; ++w) {
      Way& way = c.ways[(line % 2) * 2 + static_cast<std::uint32_t>(w)];
      if (way.line == line && way.state != kInvalid) return &way;
    }
    return nullptr;
  }

  bool access(Cpu& c) {
    Way* way = find(c, c.line);
    if (way != nullptr && (!c.write || way->state != kShared)) {  // a hit
      way->used = ++stamp_;
      if (c.write) way->state = kModified;
      schedule(now_ + kHit, slot(c), kDone, 0, 0);
      return true;
    }
    schedule(now_ + hop(c.node, lines_[c.line].home), c.line, kRequest, slot(c), c.line);
    return true;
  }

  /// The home applies the transaction at once and sends the messages it needs.
  bool request(const Event& e) {
    Line& l = lines_[e.line];
    Cpu& req = cpus_[e.from];
    const std::uint64_t me = std::uint64_t{1} << e.from;
    ++counts_.transactions;
    int replies = 1;  // the data or the grant
    if (req.write) {
      for (std::uint32_t s = 0; s < cpus_.size(); ++s) {
        if (s == e.from || !(l.sharers >> s & 1)) continue;
        drop(cpus_[s], e.line);
        ++counts_.invalidations;
        ++replies;
        schedule(now_ + hop(l.home, cpus_[s].node), s, kInvalidate, e.from, e.line);
      }
      l.sharers = me;
      l.owner = static_cast<int>(e.from);
    } else if (l.owner >= 0 && l.owner != static_cast<int>(e.from)) {
      Way* w = find(cpus_[static_cast<std::size_t>(l.owner)], e.line);
      if (w != nullptr) w->state = kShared;
      ++replies;
      schedule(now_ + hop(l.home, cpus_[static_cast<std::size_t>(l.owner)].node), static_cast<std::uint32_t>(l.owner),
               kForward, e.from, e.line);
      l.owner = -1;
      l.sharers |= me;
    } else {
      const bool alone = (l.sharers & ~me) == 0;
      l.sharers |= me;
      l.owner = alone ? static_cast<int>(e.from) : -1;
    }
    // The single-writer rule (checked once per transaction).
    if (l.owner >= 0 && l.sharers != (std::uint64_t{1} << l.owner))
      return fail(fmt::format("line {}: owner {} with other sharers {:#x}", e.line, l.owner, l.sharers));
    install(req, e.line, req.write ? kModified : (l.owner >= 0 ? kExclusive : kShared));
    req.replies_due = replies;
    schedule(now_ + hop(l.home, req.node), e.from, kReply, 0, e.line);
    return true;
  }

  void drop(Cpu& c, std::uint32_t line) {
    if (Way* w = find(c, line)) w->state = kInvalid;
  }

  void install(Cpu& c, std::uint32_t line, State s) {
    Way* way = find(c, line);
    if (way == nullptr) {
      Way* a = &c.ways[(line % 2) * 2];
      Way* b = a + 1;
      way = a->state == kInvalid ? a : b->state == kInvalid ? b : a->used <= b->used ? a : b;
      if (way->state != kInvalid) {  // the victim goes home
        ++counts_.evictions;
        schedule(now_ + hop(c.node, lines_[way->line].home), way->line, kEvict, slot(c), way->line);
      }
      way->line = line;
    }
    way->state = s;
    way->used = ++stamp_;
  }

  /// The access completes: the value is read or written, the access logged.
  bool done(Cpu& c) {
    std::uint32_t& writes = words_written_[c.word];
    if (c.write) {
      ++writes;
      if (c.line == lines_.size() - 1) ++counter_;
    }
    if (c.log) c.accesses.push_back({c.word, writes, c.write});
    return next_op(c);
  }

  /// Per-location coherence in program order: reads never go back, writes move on.
  bool check_per_location(const Cpu& c) {
    std::vector<std::uint32_t> floor(words_written_.size(), 0);
    for (std::size_t i = 0; i < c.accesses.size(); ++i) {
      const Access& a = c.accesses[i];
      std::uint32_t& f = floor[a.word];
      if (a.write ? a.place <= f : a.place < f)
        return fail(fmt::format("cpu {} access {}: word {} at place {} after place {}", c.id, i, a.word, a.place, f));
      f = a.place;
    }
    return true;
  }

  std::vector<Cpu> cpus_;
  std::vector<cohsim::sim::RandomStream> rngs_;
  cohsim::sim::RandomStream jitter_;
  std::vector<Line> lines_;
  std::vector<std::uint32_t> words_written_;
  std::vector<Event> queue_;  // sorted by (time, seq), the earliest last
  Tick now_ = 0;
  std::uint64_t seq_ = 0, stamp_ = 0, counter_ = 0;
  Counts counts_;
  std::string failure_;  // the first violation
};

/// Bad input: one line on stderr, exit 2.
[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "tester_floor: %s\n", why.c_str());
  std::exit(2);
}

/// At most this many operations in all: each CPU's log holds 12 bytes per operation.
constexpr unsigned long long kMaxTotalOps = 200'000'000;

}  // namespace

int main(int argc, char** argv) {
  int cpus = 4, ops = 100000, nlines = 8, reps = 5;
  std::uint64_t seed = 1;
  bool draws_alone = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: tester_floor [--cpus N] [--ops N] [--lines N] [--seed N] [--reps N] [--no-draws]\n"
          "The random coherence tester's operations (those of `cohsim selftest coherence`, same seed) on\n"
          "the leanest model that moves every message as an event, timed on this host: what a leaner\n"
          "implementation could give (docs/performance.md, \"A floor for the random tester\").\n"
          "Defaults: --cpus 4 (1-64) --ops 100000 per CPU --lines 8 (1-4096) --seed 1 --reps 5 (1-1000);\n"
          "--no-draws: the floor only, without timing the random draws alone (for a profile of it).\n");
      return 0;
    }
    if (a == "--no-draws") {
      draws_alone = false;
      continue;
    }
    if (a != "--cpus" && a != "--ops" && a != "--lines" && a != "--seed" && a != "--reps")
      refuse(fmt::format("unknown option '{}' (--help lists them)", a));
    if (i + 1 >= argc) refuse(fmt::format("{}: a value is expected after it", a));
    const std::string v = argv[++i];
    auto number = [&](unsigned long long lo, unsigned long long hi) {
      errno = 0;
      const unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || errno != 0 || x < lo || x > hi)
        refuse(fmt::format("{} {}: expected a whole number from {} to {}", a, v, lo, hi));
      return x;
    };
    if (a == "--cpus") cpus = static_cast<int>(number(1, 64));
    else if (a == "--ops") ops = static_cast<int>(number(1, kMaxTotalOps));
    else if (a == "--lines") nlines = static_cast<int>(number(1, 4096));
    else if (a == "--seed") seed = number(0, ~0ull);
    else reps = static_cast<int>(number(1, 1000));
  }
  if (static_cast<unsigned long long>(cpus) * static_cast<unsigned long long>(ops) > kMaxTotalOps)
    refuse(fmt::format("--cpus {} x --ops {}: at most {} operations in all", cpus, ops, kMaxTotalOps));
  std::vector<double> floor_ns, draws_ns;  // per op
  Counts counts;
  std::uint64_t counter = 0, checksum = 0;  // checksum: of one run's draws (the same in every run)
  const double total_ops = static_cast<double>(cpus) * ops;
  for (int r = 0; r < reps; ++r) {  // the floor and the draws alone, alternated
    Floor f(cpus, ops, nlines, seed);
    cohsim_bench::Measurement m;
    const cohsim_bench::Stopwatch sw;
    const std::string why = f.run();
    sw.stop(m);
    if (!why.empty()) {
      std::fprintf(stderr, "tester_floor: check failed: %s\n", why.c_str());
      return 1;
    }
    counts = f.counts();
    counter = f.counter();
    floor_ns.push_back(1e9 * m.cpu_seconds / total_ops);
    if (!draws_alone) continue;
    const cohsim_bench::Stopwatch sw2;
    checksum = draws_only(cpus, ops, nlines, seed);
    sw2.stop(m);
    draws_ns.push_back(1e9 * m.cpu_seconds / total_ops);
  }
  const double ns = cohsim_bench::median(floor_ns);
  const double events_per_op = static_cast<double>(counts.events) / total_ops;
  fmt::print("tester floor: {} CPUs x {} ops on {} lines, seed {} (medians of {} runs, thread CPU time)\n", cpus, ops,
             nlines, seed, reps);
  fmt::print("  ops {}  events {} ({:.2f} per op)  transactions {} (each checked)  evictions {}  invalidations {}  counter {}\n",
             counts.ops, counts.events, events_per_op, counts.transactions, counts.evictions, counts.invalidations,
             counter);
  fmt::print("  {:.3g} ops per CPU second: {:.0f} ns per op (runs {:.0f}-{:.0f}), {:.1f} ns per event\n", 1e9 / ns, ns,
             *std::min_element(floor_ns.begin(), floor_ns.end()), *std::max_element(floor_ns.begin(), floor_ns.end()),
             ns / events_per_op);
  if (!draws_alone) return 0;
  const double draws = cohsim_bench::median(draws_ns);
  fmt::print("  of which the random draws alone: {:.0f} ns per op (runs {:.0f}-{:.0f}; checksum {})\n", draws,
             *std::min_element(draws_ns.begin(), draws_ns.end()), *std::max_element(draws_ns.begin(), draws_ns.end()),
             checksum % 1000);
  return 0;
}
