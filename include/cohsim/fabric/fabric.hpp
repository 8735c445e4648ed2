// The coherence fabric: private caches per core, a home directory per NUMA
// node with a memory-side last-level cache and DRAM, and the interconnect
// between them. Every shared access a model makes is priced here.
//
// The home is blocking: a line has at most one transaction in flight at its
// home; later requests wait there and the platform's arbitration policy picks
// the next one. A transaction's messages walk the interconnect; effects at
// other caches (invalidation, forward) happen when their message arrives.
// Values are real: caches and memory hold the line's 64 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/fabric/core_set.hpp"
#include "cohsim/fabric/interconnect.hpp"
#include "cohsim/fabric/line_map.hpp"
#include "cohsim/fabric/memory_map.hpp"
#include "cohsim/fabric/protocol.hpp"
#include "cohsim/fabric/tag_array.hpp"
#include "cohsim/sim/random.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::fabric {

using LineData = std::array<std::uint8_t, kLineBytes>;

/// Read-modify-write operations performed atomically on one naturally aligned word.
enum class RmwOp : std::uint8_t { swap, add, andnot, bit_or, bit_xor, cas };
/// Applies op to `old`; returns the new value (for cas: `desired` if old == compare).
std::uint64_t apply_rmw(RmwOp op, std::uint64_t old, std::uint64_t operand, std::uint64_t compare);

/// Where an LSE (or x86 locked) atomic executes: in the requesting core's
/// L1 after taking the line exclusive (near), in the last-level cache (llc:
/// the requester die's L3 when the LLC sits per die, else the home's), or at
/// the line's home agent.
enum class AtomicPlace : std::uint8_t { near, llc, home };
/// Instruction classes that may execute in different places: CAS, SWP,
/// LD<op> (a result returned) and ST<op> (no result, posted like a store).
enum class AtomicClass : std::uint8_t { cas, swp, ld_op, st_op, count };
/// The class of an atomic doing `op`; `posted`: no result register (ST<op>).
AtomicClass atomic_class(RmwOp op, bool posted);

/// How the home directory records who holds a shared line, and so how a
/// write's invalidations fan out (platform "coherence.directory").
struct DirectoryOrganisation {
  /// What one presence bit stands for: a caching agent (exact), a socket, or a
  /// node-controller group of sockets. With a coarse bit the home sends one
  /// invalidation per marked unit to the unit's agent, which fans it out.
  enum class Presence : std::uint8_t { core, socket, group };
  Presence presence = Presence::core;
  /// The unit's agent knows which of its cores hold the line (a socket snoop
  /// filter): it invalidates only those; else it snoops every core of the unit.
  bool unit_filtered = true;
  Tick unit_lookup = 0;  ///< the unit agent's look-up before it fans out
  /// Reads the optional section (absent: exact per-core presence).
  explicit DirectoryOrganisation(config::Reader r);
  DirectoryOrganisation() = default;
};

/// The fabric's platform parameters (sections "caches", "coherence", "memory").
struct FabricParams {
  struct Level {
    std::uint64_t size = 0;
    int assoc = 0;
    Tick latency = 0;
  };
  Level l1, l2, llc;
  /// The LLC sits per die (the die's coherence point, holding lines of any
  /// home; the home agent tracks dies) instead of memory-side at each home.
  bool llc_per_die = false;
  /// Per-die LLC: a line homed on another die is served through its home agent only (else the die's L3
  /// forwards it between its cores when the die holds it).
  bool remote_home_via_home = false;
  /// Per-die LLC: a read the die cannot serve while the die's own read of the
  /// line is on its way to the home waits for that read and is then served by
  /// the die (one miss entry per line in the L3), instead of going on itself.
  bool llc_merge_reads = false;
  Tick llc_tag_latency = 0;     ///< per-die LLC: tag look-up that decides hit or miss
  Tick llc_atomic_latency = 0;  ///< one atomic in the LLC: from its data read to its result (the ALU's latency)
  /// The LLC's atomic unit: serial (one atomic per line at a time, each
  /// occupying it for its data read + ALU latency) or pipelined (a new atomic
  /// on the line every llc_atomic_occupancy, several in flight).
  bool llc_atomic_pipelined = false;
  Tick llc_atomic_occupancy = 0;  ///< pipelined: issue interval of atomics to one line
  Tick directory_latency = 0;    ///< home directory (snoop filter) lookup
  Tick shared_fill_interval = 0; ///< time between two GetS of a shared line entering the home
  Tick snoop_response = 0;       ///< owner cache: look-up and data read-out for a forward
  Tick remote_die_snoop = 0;     ///< extra for a snoop into another die (through its L3 tag pipeline)
  Tick dram_latency = 0;         ///< DRAM access at the home memory controller
  std::uint64_t node_capacity = 0;
  std::string arbitration;       ///< arrival | nearest | random
  std::array<AtomicPlace, static_cast<std::size_t>(AtomicClass::count)> atomics{};  ///< per AtomicClass
  DirectoryOrganisation directory;  ///< how sharers are recorded and invalidated
  /// Where an atomic doing `op` executes (`posted`: ST<op>, no result).
  AtomicPlace atomic_place(RmwOp op, bool posted) const {
    return atomics[static_cast<std::size_t>(atomic_class(op, posted))];
  }
  /// Reads the sections; throws ConfigError.
  FabricParams(config::Reader caches, config::Reader coherence, config::Reader memory);
};

/// Per-line contention statistics (a simulated `perf c2c`).
struct LineStats {
  std::array<std::uint64_t, topo::kHopClasses> transfers{};  ///< cache-to-cache, by hop class
  std::uint64_t memory_reads = 0;
  std::uint64_t invalidations = 0;
  std::uint64_t requests = 0;
  std::uint64_t device_accesses = 0;
  std::uint64_t llc_atomics = 0;  ///< atomics executed on it in a die's L3
  Tick wait = 0;  ///< time requests waited at the home for the line
  CoreSet touched;
};

/// Counters of the whole fabric.
struct FabricStats {
  std::uint64_t hits = 0, misses = 0, upgrades = 0, transactions = 0, evictions = 0, writebacks = 0;
  std::uint64_t invalidations = 0, forwards = 0, llc_hits = 0, dram_reads = 0;
  std::uint64_t llc_atomics = 0;  ///< atomics executed in a die's L3
  std::uint64_t unit_invalidations = 0;  ///< coarse directory: invalidations sent to a unit's agent
  std::uint64_t blind_snoops = 0;        ///< coarse, unfiltered: cores snooped that held no copy
  std::uint64_t checks = 0;
};

class Fabric {
 public:
  Fabric(const FabricParams& p, sim::Simulator& sim, Interconnect& icn, MemoryMap& mem, std::uint64_t seed,
         CacheTable* cache_table = nullptr, DirTable* dir_table = nullptr);
  ~Fabric();

  // ---------------------------------------------------------- CPU side ---
  /// Makes `line` present in the cache of `cpu`'s core, writable if asked.
  /// Returns the hit latency still to charge (0 after a miss, whose cost is
  /// already spent). The caller then reads or writes at once, before any
  /// further co_await, so the access is atomic with the permission.
  class Acquire;
  Acquire acquire(int cpu, Addr line, bool for_write);
  /// Reads `size` bytes at `a` from `cpu`'s cache (the line must be held).
  std::uint64_t read(int cpu, Addr a, int size);
  /// Writes `size` bytes at `a` into `cpu`'s cache (the line must be held in M/E).
  void write(int cpu, Addr a, int size, std::uint64_t value);
  /// When the atomic unit of `cpu`'s core is next free (shared by SMT siblings).
  Tick& core_atomic_busy(int cpu) { return core_atomic_busy_[static_cast<std::size_t>(core_of(cpu))]; }
  /// True when `cpu`'s core holds `line` readable (or writable).
  bool holds(int cpu, Addr line, bool for_write) const;
  /// An atomic executed away from the core, where params().atomic_place says
  /// (not near); returns the old value once the result is back at `cpu`.
  sim::Task<std::uint64_t> atomic_far(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                      std::uint64_t compare, bool posted);
  /// A far atomic: performed at the line's home; returns the old value.
  sim::Task<std::uint64_t> atomic_at_home(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                          std::uint64_t compare);
  /// An atomic executed in the L3 of `cpu`'s die (a per-die LLC): the L3
  /// takes the line exclusive from every other holder (the requester's own
  /// core included), then operates on it; returns the old value.
  sim::Task<std::uint64_t> atomic_in_llc(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                         std::uint64_t compare);
  /// Suspends until `cpu`'s copy of `line` is invalidated or evicted (returns
  /// at once if it holds none), or until `deadline`.
  sim::Task<void> wait_for_loss(int cpu, Addr line, Tick deadline, std::string_view what);
  /// Arms `cpu`'s exclusive monitor on `line` (load-exclusive).
  void set_monitor(int cpu, Addr line);
  /// True while the monitor armed on `line` has not been cleared by a loss
  /// of the line (invalidation or eviction) since set_monitor.
  bool monitor_valid(int cpu, Addr line) const;

  // ------------------------------------------------------- device side ---
  /// Coherent non-allocating read of one line by a device (ReadOnce).
  sim::Task<LineData> device_read(int endpoint, Addr line);
  /// Coherent write of `size` bytes by a device (invalidates cached copies).
  sim::Task<void> device_write(int endpoint, Addr a, int size, std::uint64_t value);

  // ------------------------------------------------------ inspection -----
  /// Debug aid: reads the current coherent value (owner's copy, else memory), no timing.
  std::uint64_t peek(Addr a, int size) const;
  /// Writes initial memory contents before the run (no timing, no caches).
  void poke(Addr a, int size, std::uint64_t value);
  CacheState state_of(int cpu, Addr line) const;
  DirState dir_state_of(Addr line) const;
  const FabricStats& stats() const { return stats_; }
  const std::unordered_map<Addr, LineStats>& line_stats() const { return line_stats_; }
  const CacheTable& cache_table() const { return *cache_table_; }
  const DirTable& dir_table() const { return *dir_table_; }
  Interconnect& interconnect() { return icn_; }
  MemoryMap& memory() { return mem_; }
  const FabricParams& params() const { return p_; }
  sim::Simulator& simulator() { return sim_; }
  /// Turns on the checker: single writer / many readers after every
  /// transition, and every read against the line's coherence order.
  void set_checking(bool on) { checking_ = on; }
  bool checking() const { return checking_; }
  /// With checking on: called with every write as it enters the coherence
  /// order of its bytes (address, size, value): a tester's record of that order.
  void set_write_observer(std::function<void(Addr, int, std::uint64_t)> f) { write_observer_ = std::move(f); }
  /// Violations found by the checker (it also throws on the first one).
  std::uint64_t violations() const { return violations_; }

 private:
  struct CacheLine;
  struct PrivateCache;
  struct HomeLine;
  struct Txn;
  struct RemoteMsg;
  friend struct RemoteMsg;

  int core_of(int cpu) const;
  /// Caching agents: the cores, then (with a per-die LLC) one L3 per die.
  int agent_count() const { return static_cast<int>(caches_.size()); }
  bool is_llc_agent(int agent) const { return agent >= topo_.core_count(); }
  int llc_agent(int die) const { return topo_.core_count() + die; }
  int agent_die(int agent) const { return agent_die_[static_cast<std::size_t>(agent)]; }
  /// The agent's endpoint: a core's first CPU, or the L3's stop.
  int agent_endpoint(int agent) const { return core_cpu_[static_cast<std::size_t>(agent)]; }
  PrivateCache& cache(int core) { return *caches_[static_cast<std::size_t>(core)]; }
  const PrivateCache& cache(int core) const { return *caches_[static_cast<std::size_t>(core)]; }
  // (The members declared inline are defined in src/fabric/fabric_state.hpp.)
  inline HomeLine& home_line(Addr line);
  HomeLine& new_home_line(Addr line);
  /// The line's contention statistics (kept in line_stats_, found once per home line).
  inline LineStats& stats_of(HomeLine& h, Addr line);
  /// With checking on: the line's latest value, made from the home's memory when there was no write yet.
  inline LineData& golden_of(HomeLine& h);

  /// Makes `line` present at `agent` (writable if asked); returns the hit
  /// latency still to charge (0 after a miss). A miss is a request: it
  /// reaches the die's L3 (a per-die LLC), which serves it when the die alone
  /// can, else the line's home; the directory acts, the response arrives and
  /// fills the cache, and the home is told (its next request may go).
  sim::Task<Tick> obtain(int agent, int ep, Addr line, bool for_write);
  /// obtain's hit: when `agent` holds `line` as asked (no request in flight),
  /// the access is counted and its latency returned; nothing otherwise.
  std::optional<Tick> hit(int agent, Addr line, bool for_write);
  /// A hit on `cl` by `row` (event `ev`): counted, the entry's state moved on; returns its latency.
  Tick take_hit(int agent, Addr line, CacheLine& cl, const CacheRow& row, CacheEvent ev);
  /// True when `die` alone can serve `event` by `agent` (no copy it needs
  /// outside the die, and the die has the data).
  bool die_can_serve(const HomeLine& h, Addr line, int die, int agent, DirEvent event) const;
  /// True when `die` never serves `line` itself (remote_home_lines home: a line homed on another die).
  bool die_never_serves(Addr line, int die) const;
  /// The die of `agent` got `line` (`exclusive`: other dies' copies are gone).
  void llc_filled(int agent, Addr line, bool exclusive);
  inline bool holds_writable(int agent, Addr line) const;
  /// When an L3 agent's atomics on `line` are done (it answers snoops then).
  Tick owner_line_alu_busy(int agent, Addr line) const;
  /// A write at the home (device, far atomic): no die's L3 holds the line any more.
  void forget_in_llcs(Addr line);
  /// Hop class between two endpoints (CPUs, homes, L3s), for statistics.
  topo::HopClass hop_class_of(int ep_a, int ep_b) const;
  sim::Task<void> put(int core, Addr line);
  struct HomeTurn;
  /// The request's turn at `line`'s home (see HomeTurn); `count_wait`: its
  /// wait goes into the line's contention statistics.
  HomeTurn home_acquire(HomeLine& h, Addr line, int requester_ep, bool gets, bool count_wait);
  /// Carries a request from endpoint `ep` to `line`'s home and waits for its
  /// turn there; the home line is then busy for the caller. With `count_wait`
  /// the queueing time goes into the line's contention statistics. `gets`: a
  /// GetS, which may overlap other GetS of a shared line (see shared_fill).
  sim::Task<HomeLine*> reach_home(int ep, Addr line, bool count_wait, bool gets = false);
  int home_endpoint_of(Addr line) const { return icn_.home_endpoint(mem_.home_node(line)); }
  /// The holder of the home line is done: the next waiter may go.
  void home_release(Addr line);
  static void home_release_event(void* ctx, std::uint64_t line);
  /// A shared fill reached its requester (its unblock arrived at the home).
  static void shared_fill_done_event(void* ctx, std::uint64_t line);
  /// Lets the waiter the arbitration picks go, if the home line is free for it.
  void grant_next(HomeLine& h);
  void run_directory(Txn& t, HomeLine& h);
  /// Invalidates every sharer but the requester, as the directory
  /// organisation routes it, from `dir_ep` at `t0`; each ack goes to
  /// `ack_to`. Returns when the last ack arrived.
  Tick invalidate_sharers(Txn& t, HomeLine& h, int dir_ep, Tick t0, int ack_to, bool skip_requester);
  /// A coarse directory's unit (socket or group) of a caching agent.
  int presence_unit(int agent) const;
  /// A coarse directory's unit of a socket.
  int unit_of_socket(int socket) const;
  /// The endpoint of a unit's agent (its first socket's home agent; the home itself for its own unit).
  int unit_endpoint(int unit) const;
  void schedule_remote(Txn& t, int core, CacheEvent ev, Tick at);
  static void remote_event(void* ctx, std::uint64_t arg);
  void cache_event(int core, Addr line, CacheEvent ev, Txn* t);
  [[noreturn]] void protocol_error(const char* who, int agent, Addr line, std::string_view state,
                                   std::string_view event) const;
  void fill(int core, Addr line, const LineData& data);
  void evict(int core, Addr victim);
  void clear_monitors(int core, Addr line);
  /// Adds (`sign` 1) or removes (-1) `entry`'s part of its home line's checker tallies.
  inline void tally(const CacheLine& entry, int sign);
  /// Changes a cache entry's state or data through `change`, keeping the tallies.
  template <class F>
  void change_entry(CacheLine& entry, F&& change);
  /// `agent`'s entry for `line`, which the protocol says it has (else a SimError).
  CacheLine& held_entry(int agent, Addr line);
  /// Removes `core`'s entry for `line` (it leaves the holders and the tallies).
  void drop_entry(int core, Addr line, CacheLine& entry);
  /// A write made `h.golden` the line's latest value; `writer`: the copy that
  /// made it (nullptr: the home's memory). The stale tally follows.
  void golden_changed(HomeLine& h, const CacheLine* writer);
  /// A write of the whole line made `value` its latest (golden_changed follows).
  void set_golden(HomeLine& h, const LineData& value, const CacheLine* writer);
  /// The checker: single writer or many readers, and no stale readable copy
  /// (O(1): reads the home line's tallies).
  void check_line(Addr line);
  void check_value(Addr a, int size, std::uint64_t got);

  FabricParams p_;
  sim::Simulator& sim_;
  Interconnect& icn_;
  MemoryMap& mem_;
  const topo::Topology& topo_;
  sim::RandomStream arbitration_rng_;
  std::unique_ptr<CacheTable> own_cache_table_;
  std::unique_ptr<DirTable> own_dir_table_;
  CacheTable* cache_table_;
  DirTable* dir_table_;
  std::vector<std::unique_ptr<PrivateCache>> caches_;
  std::vector<int> core_cpu_;  ///< a CPU endpoint per core (its first thread)
  std::vector<std::vector<int>> cpus_of_core_;
  std::vector<Tick> core_atomic_busy_;
  std::vector<int> agent_die_;  ///< per agent
  struct Monitor {
    Addr line = ~Addr{0};
    bool valid = false;
  };
  std::vector<Monitor> monitors_;  ///< per CPU
  LineMap<std::unique_ptr<HomeLine>> homes_;
  std::vector<TagArray> llc_;  ///< LLC tags: per home node (memory-side) or per die
  /// Per-die LLC with llc_merge_reads: the reads each die has on their way to
  /// a home, by (die, line); later reads of the die wait for the signal.
  std::map<std::pair<int, Addr>, sim::Signal> die_reads_;
  std::unordered_map<Addr, LineStats> line_stats_;
  FabricStats stats_;
  bool checking_ = false;
  std::function<void(Addr, int, std::uint64_t)> write_observer_;
  std::uint64_t violations_ = 0;
  std::uint64_t home_seq_ = 0;
};

/// What Fabric::acquire returns, awaited at once by the caller: a hit
/// completes in await_ready, without a coroutine frame (nothing is awaited on
/// that path, so nothing else can run in between); anything else runs
/// obtain(), which waits for a request in flight or makes its own.
class [[nodiscard]] Fabric::Acquire {
 public:
  Acquire(Fabric& f, int agent, int ep, Addr line, bool for_write)
      : f_(f), agent_(agent), ep_(ep), line_(line), for_write_(for_write) {}
  bool await_ready() {
    hit_ = f_.hit(agent_, line_, for_write_);
    return hit_.has_value();
  }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) {
    miss_ = f_.obtain(agent_, ep_, line_, for_write_);
    return miss_.await_suspend(caller);
  }
  Tick await_resume() { return hit_ ? *hit_ : miss_.await_resume(); }

 private:
  Fabric& f_;
  int agent_, ep_;
  Addr line_;
  bool for_write_;
  std::optional<Tick> hit_;
  sim::Task<Tick> miss_;
};

}  // namespace cohsim::fabric
