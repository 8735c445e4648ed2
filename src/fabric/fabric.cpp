#include "cohsim/fabric/fabric.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <fmt/format.h>

namespace cohsim::fabric {

using sim::Task;

std::uint64_t apply_rmw(RmwOp op, std::uint64_t old, std::uint64_t operand, std::uint64_t compare) {
  switch (op) {
    case RmwOp::swap: return operand;
    case RmwOp::add: return old + operand;
    case RmwOp::andnot: return old & ~operand;
    case RmwOp::bit_or: return old | operand;
    case RmwOp::bit_xor: return old ^ operand;
    case RmwOp::cas: return old == compare ? operand : old;
  }
  return old;
}

FabricParams::FabricParams(config::Reader caches, config::Reader coherence, config::Reader memory) {
  using config::Spec;
  auto level = [](config::Reader r, const char* what) {
    Level l;
    l.size = r.size("size", Spec{.doc = "capacity", .min = 64, .max = 1e12});
    l.assoc = static_cast<int>(r.integer("assoc", Spec{.doc = "ways per set", .min = 1, .max = 1024}));
    l.latency = r.time("latency", Spec{.doc = what, .min = 1, .max = 1e6});
    return l;
  };
  l1 = level(caches.section("l1d", "private level-1 data cache, per core"), "load-to-use latency of a hit");
  l2 = level(caches.section("l2", "private level-2 cache per core (the coherence point of the core)"),
             "load-to-use latency of a hit; also the time to detect a private miss");
  llc = level(caches.section("llc", "last-level cache, modelled memory-side at each home node"),
              "latency of an LLC hit at the home, after the directory look-up");
  directory_latency = coherence.time(
      "directory_latency", Spec{.doc = "home directory (snoop filter) look-up per request", .min = 0, .max = 1e6});
  shared_fill_interval = coherence.time(
      "shared_fill_interval",
      Spec{.doc = "a GetS of a line in S holds the home only this long (its look-up slot in the pipeline), so "
                  "reads of a shared line overlap; other requests still wait for every fill in flight",
           .min = 1, .max = 1e6});
  snoop_response = coherence.time(
      "snoop_response", Spec{.doc = "owner's private cache: look-up and data read-out for a forward", .max = 1e6});
  remote_die_snoop = coherence.time(
      "remote_die_snoop",
      Spec{.doc = "extra for a snoop or invalidation into a die other than the home's (its L3 tag pipeline)",
           .def = "0", .max = 1e6});
  arbitration = coherence.choice(
      "arbitration", Spec{.doc = "which request waiting at a busy home goes next",
                          .def = "arrival", .choices = {"arrival", "nearest", "random"}});
  std::string atomics = coherence.choice(
      "atomics", Spec{.doc = "where read-modify-write atomics execute: near (requester takes the line "
                             "exclusive) or far (at the home)",
                      .def = "near", .choices = {"near", "far"}});
  atomics_far = atomics == "far";
  dram_latency = memory.time("dram_latency", Spec{.doc = "DRAM access at the home memory controller", .min = 1, .max = 1e7});
  node_capacity = memory.size("node_capacity", Spec{.doc = "memory per NUMA node", .def = "64GiB", .min = 1 << 20, .max = 1e13});
}

// ---------------------------------------------------------------- state ---
struct Fabric::CacheLine {
  CacheState state = CacheState::I;
  LineData data{};
  sim::Signal mshr;  ///< waiters for the request in flight
  sim::Signal lost;  ///< CPUs spinning on this line
};

struct Fabric::PrivateCache {
  std::unordered_map<Addr, CacheLine> lines;
  TagArray l1, l2;
};

struct Fabric::HomeLine {
  DirState state = DirState::I;
  int owner = -1;
  CoreSet sharers;
  /// Cores with an entry for the line in any state, and that entry (exact; for the checker).
  std::vector<std::pair<int, CacheLine*>> holders;
  void drop_holder(int core) {
    for (auto& e : holders)
      if (e.first == core) {
        e = holders.back();
        holders.pop_back();
        return;
      }
  }
  LineData mem{};
  /// A request holds the home line: it is served one request at a time,
  /// except that a GetS of a line in S (a shared fill: data from the home,
  /// no owner, nobody invalidated) holds it only for its pipeline slot
  /// (`shared_fill_interval`).
  /// Shared fills may then overlap; any other request waits until every fill
  /// in flight has reached its requester, so no invalidation overtakes a fill.
  bool busy = false;
  int shared_fills = 0;
  /// The waiter the arbitration picked while it had to wait for fills: it
  /// goes next whatever arrives meanwhile (no re-pick, no overtaking).
  std::optional<std::uint64_t> picked_seq;
  /// A GetS that finds the line in S needs no exclusive hold.
  bool shared_fill_possible(bool gets) const { return gets && state == DirState::S; }
  struct Waiter {
    sim::Process* p;
    std::uint64_t id;
    Tick arrived;
    std::uint64_t seq;
    Tick distance;
    bool gets;
  };
  std::vector<Waiter> queue;
};

struct Fabric::Txn {
  Fabric* fabric;
  Addr line;
  int core = -1;  ///< requesting core, -1 for a device
  int ep = 0;     ///< requester's endpoint
  DirEvent event = DirEvent::GetS;
  CacheEvent response = CacheEvent::Data;
  LineData data{};
  bool data_valid = false;
  Tick complete_at = 0;
  Tick home_done = 0;  ///< when the home may take the next request (non-core requesters)
  std::uint32_t actions = 0;
  // device write / far atomic
  Addr addr = 0;
  int size = 8;
  RmwOp op = RmwOp::swap;
  std::uint64_t operand = 0, compare = 0, result = 0;
};

namespace {
bool is_transient(CacheState s) { return s >= CacheState::IS_D; }
bool readable(CacheState s) { return s == CacheState::S || s == CacheState::E || s == CacheState::M; }
bool writable(CacheState s) { return s == CacheState::E || s == CacheState::M; }

std::uint64_t get_bytes(const LineData& d, Addr a, int size) {
  std::uint64_t v = 0;
  std::memcpy(&v, d.data() + (a & (kLineBytes - 1)), static_cast<std::size_t>(size));
  return v;
}
void put_bytes(LineData& d, Addr a, int size, std::uint64_t v) {
  std::memcpy(d.data() + (a & (kLineBytes - 1)), &v, static_cast<std::size_t>(size));
}
void check_access(Addr a, int size) {
  if ((size != 1 && size != 2 && size != 4 && size != 8) || (a & static_cast<Addr>(size - 1)) != 0)
    throw sim::SimError(fmt::format("unaligned or bad-sized access: {} bytes at {:#x}", size, a));
}
}  // namespace

Fabric::Fabric(const FabricParams& p, sim::Simulator& sim, Interconnect& icn, MemoryMap& mem, std::uint64_t seed,
               CacheTable* cache_table, DirTable* dir_table)
    : p_(p), sim_(sim), icn_(icn), mem_(mem), topo_(icn.topology()), arbitration_rng_(seed, "arbitration") {
  if (cache_table == nullptr) own_cache_table_ = std::make_unique<CacheTable>(kCacheRows);
  if (dir_table == nullptr) own_dir_table_ = std::make_unique<DirTable>(kDirRows);
  cache_table_ = cache_table ? cache_table : own_cache_table_.get();
  dir_table_ = dir_table ? dir_table : own_dir_table_.get();
  if (topo_.core_count() > kMaxCores)
    throw sim::SimError(fmt::format("{} cores: the fabric supports at most {}", topo_.core_count(), kMaxCores));
  core_cpu_.assign(static_cast<std::size_t>(topo_.core_count()), -1);
  cpus_of_core_.resize(static_cast<std::size_t>(topo_.core_count()));
  core_atomic_busy_.assign(static_cast<std::size_t>(topo_.core_count()), 0);
  for (int c = topo_.cpu_count() - 1; c >= 0; --c) core_cpu_[static_cast<std::size_t>(topo_.cpu(c).core_global)] = c;
  for (int c = 0; c < topo_.cpu_count(); ++c) cpus_of_core_[static_cast<std::size_t>(topo_.cpu(c).core_global)].push_back(c);
  for (int c = 0; c < topo_.core_count(); ++c) {
    auto pc = std::make_unique<PrivateCache>();
    pc->l1 = TagArray(p_.l1.size, p_.l1.assoc);
    pc->l2 = TagArray(p_.l2.size, p_.l2.assoc);
    caches_.push_back(std::move(pc));
  }
  for (int n = 0; n < mem_.nodes(); ++n) llc_.emplace_back(p_.llc.size, p_.llc.assoc);
  monitors_.resize(static_cast<std::size_t>(topo_.cpu_count()));
#ifdef COHSIM_CHECKED
  checking_ = true;
#endif
}

Fabric::~Fabric() = default;

int Fabric::core_of(int cpu) const { return topo_.cpu(cpu).core_global; }

Fabric::HomeLine& Fabric::home_line(Addr line) {
  auto& slot = homes_[line];
  if (!slot) slot = std::make_unique<HomeLine>();
  return *slot;
}

void Fabric::protocol_error(const char* who, int agent, Addr line, std::string_view state,
                            std::string_view event) const {
  throw sim::SimError(fmt::format("protocol error at t={}: {} {} has no transition for state {} on event {} "
                                  "(line {:#x}, {})",
                                  sim::format_time(sim_.now()), who, agent, state, event, line, mem_.describe(line)));
}

// ------------------------------------------------------------- CPU side ---
Task<Tick> Fabric::acquire(int cpu, Addr line, bool for_write) {
  const int core = core_of(cpu);
  for (;;) {
    PrivateCache& c = cache(core);
    auto it = c.lines.find(line);
    CacheState st = it == c.lines.end() ? CacheState::I : it->second.state;
    if (is_transient(st)) {
      co_await it->second.mshr.wait(sim_, "a request in flight for this line", line);
      continue;
    }
    CacheEvent ev = for_write ? CacheEvent::Store : CacheEvent::Load;
    const CacheRow* row = cache_table_->find(st, ev);
    if (row == nullptr) protocol_error("cache of core", core, line, name(st), name(ev));
    cache_table_->count(st, ev);
    if (row->actions & ca_hit) {
      it->second.state = row->next;
      if (checking_) check_line(line);
      ++stats_.hits;
      if (c.l1.touch(line)) co_return p_.l1.latency;
      c.l2.touch(line);
      c.l1.insert(line, [](Addr) { return true; });
      co_return p_.l2.latency;
    }
    DirEvent kind = (row->actions & ca_issue_gets) ? DirEvent::GetS
                    : (row->actions & ca_issue_getm) ? DirEvent::GetM
                                                     : DirEvent::Upgrade;
    auto [slot, inserted] = c.lines.try_emplace(line);
    slot->second.state = row->next;
    if (inserted) home_line(line).holders.emplace_back(core, &slot->second);
    if (kind == DirEvent::Upgrade) ++stats_.upgrades; else ++stats_.misses;
    co_await request(core, cpu, line, kind);
    co_return 0;
  }
}

std::uint64_t Fabric::read(int cpu, Addr a, int size) {
  check_access(a, size);
  const PrivateCache& c = cache(core_of(cpu));
  auto it = c.lines.find(line_of(a));
  if (it == c.lines.end() || !readable(it->second.state))
    throw sim::SimError(fmt::format("read of {:#x} by cpu {} without the line", a, cpu));
  std::uint64_t v = get_bytes(it->second.data, a, size);
  if (checking_) check_value(a, size, v);
  return v;
}

void Fabric::write(int cpu, Addr a, int size, std::uint64_t value) {
  check_access(a, size);
  PrivateCache& c = cache(core_of(cpu));
  auto it = c.lines.find(line_of(a));
  if (it == c.lines.end() || !writable(it->second.state))
    throw sim::SimError(fmt::format("write of {:#x} by cpu {} without ownership", a, cpu));
  it->second.state = CacheState::M;
  put_bytes(it->second.data, a, size, value);
  const int core = core_of(cpu);
  if (cpus_of_core_[static_cast<std::size_t>(core)].size() > 1) {
    // An SMT sibling spinning on this line sees the write in the shared cache.
    it->second.lost.notify_all(sim_);
    for (int sib : cpus_of_core_[static_cast<std::size_t>(core)])
      if (sib != cpu && monitors_[static_cast<std::size_t>(sib)].line == line_of(a))
        monitors_[static_cast<std::size_t>(sib)].valid = false;
  }
  if (checking_) {
    auto [g, inserted] = golden_.try_emplace(line_of(a), home_line(line_of(a)).mem);
    put_bytes(g->second, a, size, value);
    check_line(line_of(a));
    if (write_observer_) write_observer_(a, size, value);
  }
}

bool Fabric::holds(int cpu, Addr line, bool for_write) const {
  const PrivateCache& c = cache(core_of(cpu));
  auto it = c.lines.find(line);
  if (it == c.lines.end()) return false;
  return for_write ? writable(it->second.state) : readable(it->second.state);
}

CacheState Fabric::state_of(int cpu, Addr line) const {
  const PrivateCache& c = cache(core_of(cpu));
  auto it = c.lines.find(line);
  return it == c.lines.end() ? CacheState::I : it->second.state;
}

DirState Fabric::dir_state_of(Addr line) const {
  auto it = homes_.find(line);
  return it == homes_.end() ? DirState::I : it->second->state;
}

void Fabric::clear_monitors(int core, Addr line) {
  for (int cpu : cpus_of_core_[static_cast<std::size_t>(core)])
    if (monitors_[static_cast<std::size_t>(cpu)].line == line) monitors_[static_cast<std::size_t>(cpu)].valid = false;
}

void Fabric::set_monitor(int cpu, Addr line) { monitors_[static_cast<std::size_t>(cpu)] = {line, true}; }

bool Fabric::monitor_valid(int cpu, Addr line) const {
  const Monitor& m = monitors_[static_cast<std::size_t>(cpu)];
  return m.valid && m.line == line;
}

Task<void> Fabric::wait_for_loss(int cpu, Addr line, Tick deadline, std::string_view what) {
  PrivateCache& c = cache(core_of(cpu));
  auto it = c.lines.find(line);
  if (it == c.lines.end() || !readable(it->second.state)) co_return;
  co_await it->second.lost.wait(sim_, what, line, deadline);
}

// ------------------------------------------------------------ requests ---
Task<void> Fabric::home_acquire(HomeLine& h, Addr line, int requester_ep, bool gets) {
  if (!h.busy && h.queue.empty() && (h.shared_fills == 0 || h.shared_fill_possible(gets))) {
    h.busy = true;
    co_return;
  }
  struct Awaiter {
    Fabric* f;
    HomeLine* h;
    Addr line;
    int ep;
    bool gets;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) {
      sim::Process* p = f->sim_.current();
      std::uint64_t id = f->sim_.suspend_current(handle, "its turn at the home directory", line);
      Tick distance = f->icn_.latency(ep, f->icn_.home_endpoint(f->mem_.home_node(line)));
      h->queue.push_back({p, id, f->sim_.now(), f->home_seq_++, distance, gets});
    }
    void await_resume() const noexcept {}
  };
  co_await Awaiter{this, &h, line, requester_ep, gets};
}

void Fabric::home_release_event(void* ctx, std::uint64_t line) { static_cast<Fabric*>(ctx)->home_release(line); }

void Fabric::shared_fill_done_event(void* ctx, std::uint64_t line) {
  auto* f = static_cast<Fabric*>(ctx);
  HomeLine& h = f->home_line(line);
  --h.shared_fills;
  f->grant_next(h);
}

void Fabric::home_release(Addr line) {
  HomeLine& h = home_line(line);
  h.busy = false;
  grant_next(h);
}

void Fabric::grant_next(HomeLine& h) {
  if (h.busy || h.queue.empty()) return;
  std::size_t pick = 0;
  if (h.picked_seq) {
    while (h.queue[pick].seq != *h.picked_seq) ++pick;  // still queued: only grant_next removes waiters
  } else if (p_.arbitration == "random") {
    pick = static_cast<std::size_t>(arbitration_rng_.below(h.queue.size()));
  } else {
    const bool nearest = p_.arbitration == "nearest";
    for (std::size_t i = 1; i < h.queue.size(); ++i) {
      const auto &a = h.queue[i], &b = h.queue[pick];
      bool better = nearest && a.distance != b.distance ? a.distance < b.distance
                    : a.arrived != b.arrived                                 ? a.arrived < b.arrived
                                                                             : a.seq < b.seq;
      if (better) pick = i;
    }
  }
  HomeLine::Waiter w = h.queue[pick];
  // The picked request waits for the fills in flight unless it is one itself;
  // it stays picked, so nobody overtakes it meanwhile (under every policy, a
  // stream of readers cannot starve a writer).
  if (h.shared_fills > 0 && !h.shared_fill_possible(w.gets)) {
    h.picked_seq = w.seq;
    return;
  }
  h.picked_seq.reset();
  h.queue.erase(h.queue.begin() + static_cast<std::ptrdiff_t>(pick));
  h.busy = true;
  sim_.wake(w.p, w.id);
}

Task<Fabric::HomeLine*> Fabric::reach_home(int ep, Addr line, bool count_wait, bool gets) {
  co_await sim_.delay(icn_.send(ep, home_endpoint_of(line), sim_.now()) - sim_.now());
  HomeLine& h = home_line(line);
  const Tick queued_at = sim_.now();
  co_await home_acquire(h, line, ep, gets);
  if (count_wait) stats_of(line).wait += sim_.now() - queued_at;
  co_return &h;
}

Task<void> Fabric::request(int core, int cpu, Addr line, DirEvent kind) {
  Txn t{.fabric = this, .line = line, .core = core, .ep = cpu, .event = kind};
  ++stats_.transactions;
  co_await sim_.delay(p_.l2.latency);  // the private miss is detected
  const int home_ep = home_endpoint_of(line);
  HomeLine& h = *co_await reach_home(cpu, line, /*count_wait=*/true, kind == DirEvent::GetS);
  if (t.event == DirEvent::Upgrade && !h.sharers.test(static_cast<std::size_t>(core)))
    t.event = DirEvent::GetM;  // invalidated while the upgrade waited
  const bool shared_fill = h.shared_fill_possible(t.event == DirEvent::GetS);
  run_directory(t, h);
  if (shared_fill) {  // the directory is free for the next request after its look-up
    ++h.shared_fills;
    sim_.schedule(sim_.now() + p_.shared_fill_interval, &Fabric::home_release_event, this, line);
  }
  co_await sim_.delay(t.complete_at - sim_.now());
  cache_event(core, line, t.response, &t);
  // Install in the tag arrays; a capacity victim is evicted.
  PrivateCache& c = cache(core);
  auto victim = c.l2.insert(line, [&](Addr v) {
    auto it = c.lines.find(v);
    return v != line && it != c.lines.end() && !is_transient(it->second.state);
  });
  c.l1.insert(line, [](Addr) { return true; });
  if (victim) {
    c.l1.remove(*victim);
    evict(core, *victim);
  }
  Tick unblock = icn_.send(cpu, home_ep, sim_.now());
  sim_.schedule(unblock, shared_fill ? &Fabric::shared_fill_done_event : &Fabric::home_release_event, this, line);
}

void Fabric::evict(int core, Addr victim) {
  PrivateCache& c = cache(core);
  auto it = c.lines.find(victim);
  CacheState st = it->second.state;
  const CacheRow* row = cache_table_->find(st, CacheEvent::Replacement);
  if (row == nullptr) protocol_error("cache of core", core, victim, name(st), "Replacement");
  cache_table_->count(st, CacheEvent::Replacement);
  ++stats_.evictions;
  if (row->actions & ca_notify) {
    it->second.lost.notify_all(sim_);
    clear_monitors(core, victim);
  }
  if (row->actions & ca_drop) {
    it->second.mshr.notify_all(sim_);
    c.lines.erase(it);
    home_line(victim).drop_holder(core);
  } else {
    it->second.state = row->next;
  }
  // Not a daemon: a run ends only when every write-back has reached its home.
  if (row->actions & ca_send_put) sim_.spawn(fmt::format("writeback core{}", core), put(core, victim));
  if (checking_) check_line(victim);
}

Task<void> Fabric::put(int core, Addr line) {
  const int ep = core_cpu_[static_cast<std::size_t>(core)];
  PrivateCache& c = cache(core);
  Txn t{.fabric = this, .line = line, .core = core, .ep = ep};
  const bool dirty = c.lines.at(line).state == CacheState::MI_A;
  t.data = c.lines.at(line).data;
  t.data_valid = true;
  ++stats_.writebacks;
  HomeLine& h = *co_await reach_home(ep, line, /*count_wait=*/false);
  const bool still_owner = h.state == DirState::EM && h.owner == core;
  t.event = !still_owner ? DirEvent::PutStale : dirty ? DirEvent::PutM : DirEvent::PutE;
  run_directory(t, h);
  sim_.schedule(sim_.now() + p_.directory_latency, &Fabric::home_release_event, this, line);
  co_await sim_.delay(t.complete_at - sim_.now());
}

Task<std::uint64_t> Fabric::atomic_at_home(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                           std::uint64_t compare) {
  check_access(a, size);
  const Addr line = line_of(a);
  Txn t{.fabric = this, .line = line, .core = core_of(cpu), .ep = cpu, .event = DirEvent::AtomicFar};
  t.addr = a;
  t.size = size;
  t.op = op;
  t.operand = operand;
  t.compare = compare;
  ++stats_.transactions;
  const int home_ep = home_endpoint_of(line);
  HomeLine& h = *co_await reach_home(cpu, line, /*count_wait=*/true);
  run_directory(t, h);
  co_await sim_.delay(t.home_done - sim_.now());
  // Every cached copy is gone and the owner's data is home: operate on memory.
  std::uint64_t old = get_bytes(h.mem, a, size);
  if (checking_) check_value(a, size, old);  // against the coherence order before this write
  const std::uint64_t mask = size_mask(size);
  const std::uint64_t next = apply_rmw(op, old, operand, compare) & mask;
  put_bytes(h.mem, a, size, next);
  if (checking_) {
    golden_[line] = h.mem;  // the home's memory is now the latest value
    if (write_observer_) write_observer_(a, size, next);
  }
  home_release(line);
  co_await sim_.delay(icn_.send(home_ep, cpu, sim_.now()) - sim_.now());
  co_return old;
}

// --------------------------------------------------------- device side ---
Task<LineData> Fabric::device_read(int endpoint, Addr line) {
  Txn t{.fabric = this, .line = line, .core = -1, .ep = endpoint, .event = DirEvent::DevRead};
  HomeLine& h = *co_await reach_home(endpoint, line, /*count_wait=*/false);
  run_directory(t, h);
  sim_.schedule(t.home_done, &Fabric::home_release_event, this, line);
  co_await sim_.delay(t.complete_at - sim_.now());
  co_return t.data;
}

Task<void> Fabric::device_write(int endpoint, Addr a, int size, std::uint64_t value) {
  check_access(a, size);
  const Addr line = line_of(a);
  Txn t{.fabric = this, .line = line, .core = -1, .ep = endpoint, .event = DirEvent::DevWrite};
  const int home_ep = home_endpoint_of(line);
  HomeLine& h = *co_await reach_home(endpoint, line, /*count_wait=*/false);
  run_directory(t, h);
  co_await sim_.delay(t.home_done - sim_.now());
  put_bytes(h.mem, a, size, value);
  if (checking_) {
    golden_[line] = h.mem;  // the home's memory is now the latest value
    if (write_observer_) write_observer_(a, size, value);
  }
  home_release(line);
  co_await sim_.delay(icn_.send(home_ep, endpoint, sim_.now()) - sim_.now());
}

// ----------------------------------------------------------- directory ---
void Fabric::run_directory(Txn& t, HomeLine& h) {
  const Addr line = t.line;
  const int node = mem_.home_node(line);
  const int home_ep = icn_.home_endpoint(node);
  const int home_die = icn_.endpoint(home_ep).die_global;
  const DirRow* row = dir_table_->find(h.state, t.event);
  if (row == nullptr) protocol_error("home directory of node", node, line, name(h.state), name(t.event));
  dir_table_->count(h.state, t.event);
  const std::uint32_t a = row->actions;
  t.actions = a;
  LineStats& ls = stats_of(line);
  ++ls.requests;
  if (t.core >= 0) ls.touched.set(static_cast<std::size_t>(t.core));
  else ++ls.device_accesses;

  const Tick t0 = sim_.now() + p_.directory_latency;
  Tick complete = t0 + 1;
  Tick home_ready = t0;
  Tick data_ready = t0;
  auto snoop_extra = [&](int core) {
    return icn_.endpoint(core_cpu_[static_cast<std::size_t>(core)]).die_global != home_die ? p_.remote_die_snoop : 0;
  };

  if (a & (da_inv_sharers | da_inv_sharers_home)) {
    const int ack_to = (a & da_inv_sharers) ? t.ep : home_ep;
    for (std::size_t s = h.sharers._Find_first(); s < h.sharers.size(); s = h.sharers._Find_next(s)) {
      const int core = static_cast<int>(s);
      if ((a & da_inv_sharers) && core == t.core) continue;
      const int ep = core_cpu_[s];
      Tick arr = icn_.send(home_ep, ep, t0) + snoop_extra(core);
      schedule_remote(t, core, CacheEvent::Inv, arr);
      Tick ack = icn_.send(ep, ack_to, arr);
      if (a & da_inv_sharers) complete = std::max(complete, ack);
      else home_ready = std::max(home_ready, ack);
      ++ls.invalidations;
      ++stats_.invalidations;
    }
  }
  if (a & (da_fwd_gets | da_fwd_getm | da_fwd_read_once | da_fwd_inv)) {
    const int owner = h.owner;
    if (owner < 0) protocol_error("home directory of node", node, line, "EM without owner", name(t.event));
    const int oep = core_cpu_[static_cast<std::size_t>(owner)];
    Tick arr = icn_.send(home_ep, oep, t0) + snoop_extra(owner);
    CacheEvent ev = (a & da_fwd_gets)    ? CacheEvent::FwdGetS
                    : (a & da_fwd_getm)  ? CacheEvent::FwdGetM
                    : (a & da_fwd_inv)   ? CacheEvent::FwdInv
                                         : CacheEvent::FwdReadOnce;
    schedule_remote(t, owner, ev, arr);
    ++stats_.forwards;
    // The home stays busy at least until the forward reached the owner, so a
    // later request's forward cannot overtake it (a device's ReadOnce releases
    // the home without waiting for the data).
    home_ready = std::max(home_ready, arr);
    Tick resp = arr + p_.snoop_response;
    if (a & da_fwd_inv) {
      home_ready = std::max(home_ready, icn_.send(oep, home_ep, resp));
    } else {
      const Tick delivered = icn_.send(oep, t.ep, resp);
      complete = std::max(complete, delivered);
      if (t.core >= 0) ++ls.transfers[static_cast<std::size_t>(topo_.hop_class(oep, t.ep))];
      if (auto* tr = sim_.tracer()) tr->flow(mem_.describe(line), oep, resp, t.ep, delivered);
      if (a & da_fwd_gets) icn_.send(oep, home_ep, resp);  // the writeback's occupancy
    }
    t.response = (a & da_fwd_gets) ? CacheEvent::Data : CacheEvent::DataExcl;
  }
  if (a & da_read_memory) {
    TagArray& llc = llc_[static_cast<std::size_t>(node)];
    if (llc.touch(line)) {
      data_ready = t0 + p_.llc.latency;
      ++stats_.llc_hits;
    } else {
      data_ready = t0 + p_.dram_latency;
      llc.insert(line, [](Addr) { return true; });
      ++stats_.dram_reads;
    }
    ++ls.memory_reads;
    home_ready = std::max(home_ready, data_ready);
  }
  if (a & da_write_back) {
    h.mem = t.data;
    llc_[static_cast<std::size_t>(node)].insert(line, [](Addr) { return true; });
  }
  if (a & (da_send_data | da_send_data_excl)) {
    t.data = h.mem;
    t.data_valid = true;
    t.response = (a & da_send_data) ? CacheEvent::Data : CacheEvent::DataExcl;
    complete = std::max(complete, icn_.send(home_ep, t.ep, data_ready));
  }
  if (a & da_send_grant) {
    t.response = CacheEvent::DataExcl;
    complete = std::max(complete, icn_.send(home_ep, t.ep, t0));
  }
  if ((a & da_send_data_device) && !(a & da_fwd_read_once)) {
    t.data = h.mem;
    t.data_valid = true;
    complete = std::max(complete, icn_.send(home_ep, t.ep, data_ready));
  }
  if (a & da_send_put_ack) {
    Tick arr = icn_.send(home_ep, t.ep, t0);
    schedule_remote(t, t.core, CacheEvent::PutAck, arr);
    complete = std::max(complete, arr);
  }
  if (a & (da_write_memory | da_atomic_at_home)) complete = std::max(complete, home_ready);
  // Directory state.
  if (a & da_owner_to_sharer) h.sharers.set(static_cast<std::size_t>(h.owner));
  if (a & da_clear_sharers) h.sharers.reset();
  if (a & da_add_sharer) h.sharers.set(static_cast<std::size_t>(t.core));
  if (a & da_clear_owner) h.owner = -1;
  if (a & da_set_owner) h.owner = t.core;
  h.state = row->next;
  t.complete_at = std::max(complete, sim_.now() + 1);
  t.home_done = std::max(std::max(home_ready, data_ready), sim_.now() + 1);
}

void Fabric::schedule_remote(Txn& t, int core, CacheEvent ev, Tick at) {
  sim_.schedule(at, &Fabric::remote_event, &t,
                static_cast<std::uint64_t>(core) | (static_cast<std::uint64_t>(ev) << 32));
}

void Fabric::remote_event(void* ctx, std::uint64_t arg) {
  auto* t = static_cast<Txn*>(ctx);
  t->fabric->cache_event(static_cast<int>(arg & 0xffffffffu), t->line, static_cast<CacheEvent>(arg >> 32), t);
}

void Fabric::cache_event(int core, Addr line, CacheEvent ev, Txn* t) {
  PrivateCache& c = cache(core);
  auto it = c.lines.find(line);
  CacheState st = it == c.lines.end() ? CacheState::I : it->second.state;
  const CacheRow* row = cache_table_->find(st, ev);
  if (row == nullptr) protocol_error("cache of core", core, line, name(st), name(ev));
  cache_table_->count(st, ev);
  const std::uint32_t a = row->actions;
  if (a & (ca_data_to_requester | ca_data_to_device)) {
    t->data = it->second.data;
    t->data_valid = true;
  }
  if (a & ca_data_to_home) home_line(line).mem = it->second.data;
  if (it == c.lines.end()) {
    if (checking_) check_line(line);
    return;  // (I, Inv): a silently dropped sharer acknowledges
  }
  CacheLine& cl = it->second;
  if ((a & ca_fill) && t->data_valid) cl.data = t->data;
  cl.state = row->next;
  if (a & ca_notify) {
    cl.lost.notify_all(sim_);
    clear_monitors(core, line);
  }
  if (a & ca_complete) cl.mshr.notify_all(sim_);
  if (a & ca_drop) {
    cl.lost.notify_all(sim_);
    cl.mshr.notify_all(sim_);
    c.l1.remove(line);
    c.l2.remove(line);
    c.lines.erase(it);
    home_line(line).drop_holder(core);
  }
  if (checking_) check_line(line);
}

// -------------------------------------------------------------- checks ---
void Fabric::check_line(Addr line) {
  ++stats_.checks;
  int writers = 0, readers = 0;
  const LineData* golden = nullptr;
  if (auto g = golden_.find(line); g != golden_.end()) golden = &g->second;
  auto home = homes_.find(line);
  if (home == homes_.end()) return;  // never requested: no cache holds it
  for (const auto& [core, entry] : home->second->holders) {
    CacheState s = entry->state;
    if (writable(s)) ++writers;
    if (s == CacheState::S) ++readers;
    if (golden != nullptr && readable(s) && entry->data != *golden) {
      ++violations_;
      throw sim::SimError(fmt::format("coherence violation at t={}: core {} holds a stale copy of line {:#x} ({}) in {}",
                                      sim::format_time(sim_.now()), core, line, mem_.describe(line), name(s)));
    }
  }
  if (writers > 1 || (writers == 1 && readers > 0)) {
    ++violations_;
    throw sim::SimError(fmt::format("coherence violation at t={}: line {:#x} ({}) has {} writers and {} readers",
                                    sim::format_time(sim_.now()), line, mem_.describe(line), writers, readers));
  }
}

void Fabric::check_value(Addr a, int size, std::uint64_t got) {
  ++stats_.checks;
  auto g = golden_.find(line_of(a));
  std::uint64_t want = g == golden_.end() ? get_bytes(home_line(line_of(a)).mem, a, size) : get_bytes(g->second, a, size);
  if (got != want) {
    ++violations_;
    throw sim::SimError(fmt::format("coherence violation at t={}: read of {:#x} ({}) returned {:#x}, the latest write was {:#x}",
                                    sim::format_time(sim_.now()), a, mem_.describe(a), got, want));
  }
}

std::uint64_t Fabric::peek(Addr a, int size) const {
  const Addr line = line_of(a);
  for (const auto& c : caches_) {
    auto it = c->lines.find(line);
    if (it != c->lines.end() && (writable(it->second.state) || it->second.state == CacheState::MI_A))
      return get_bytes(it->second.data, a, size);
  }
  auto h = homes_.find(line);
  return h == homes_.end() ? 0 : get_bytes(h->second->mem, a, size);
}

void Fabric::poke(Addr a, int size, std::uint64_t value) {
  check_access(a, size);
  HomeLine& h = home_line(line_of(a));
  put_bytes(h.mem, a, size, value);
  if (checking_) golden_[line_of(a)] = h.mem;
}

}  // namespace cohsim::fabric
