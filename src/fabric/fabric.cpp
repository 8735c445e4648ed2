// The fabric's platform parameters, construction, the CPU side (acquire and
// its hits, read, write, monitors; a miss goes on in home.cpp) and the
// coherence checker.
#include "fabric_state.hpp"

#include <algorithm>

namespace cohsim::fabric {

using sim::Task;
using namespace detail;

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
  config::Reader llc_section = caches.section(
      "llc", "last-level cache: memory-side at each home node, or per die (the die's coherence point)");
  llc = level(llc_section, "latency of an LLC hit: its data array read, after the directory (home) or tag (die) "
                           "look-up");
  llc_per_die = llc_section.choice(
                    "placement",
                    Spec{.doc = "home: memory-side at each home node, caching that node's lines; die: one per die, "
                                "holding lines of any home for its cores, which look it up before the home agent "
                                "(whose directory then tracks dies: a die that holds a line serves its cores)",
                         .def = "home", .choices = {"home", "die"}}) == "die";
  remote_home_via_home =
      llc_section.choice(
          "remote_home_lines",
          Spec{.doc = "per-die LLC: a line homed on another die moves between this die's cores through the die's "
                      "L3 when the die holds it (die), or always through its home agent's directory (home)",
               .def = "die", .choices = {"die", "home"}}) == "home" &&
      llc_per_die;
  llc_merge_reads =
      llc_section.choice(
          "merge_reads",
          Spec{.doc = "per-die LLC: a read the die cannot serve while the die's own read of the line is on its way "
                      "to the home waits for that read, then the die serves it (yes: one miss entry per line in the "
                      "L3), or goes on to the home by itself (no)",
               .def = "no", .choices = {"yes", "no"}}) == "yes" &&
      llc_per_die;
  if (!llc_per_die)
    for (const char* key : {"remote_home_lines", "merge_reads"})
      llc_section.unused(key, "the LLC is memory-side (placement home): no die's L3 serves");
  llc_tag_latency = llc_section.time(
      "tag_latency", Spec{.doc = "per-die LLC: tag look-up deciding hit or miss, paid by every private miss on the "
                                 "way to the home, and again by a request the die serves after another request for "
                                 "the line went first",
                          .def = "0", .max = 1e6});
  llc_atomic_latency = llc_section.time(
      "atomic_latency", Spec{.doc = "one atomic executed in the LLC: from its data-array read to its result (the ALU's "
                                    "latency)",
                             .def = "0", .max = 1e6});
  llc_atomic_pipelined =
      llc_section.choice("atomic_unit",
                         Spec{.doc = "serial: atomics to one line run one at a time, each occupying the unit for the "
                                     "data read + atomic_latency; pipelined: a new atomic on the line may start every "
                                     "atomic_occupancy, its result still after the full latency",
                              .def = "serial", .choices = {"serial", "pipelined"}}) == "pipelined";
  llc_atomic_occupancy = llc_section.time(
      "atomic_occupancy", Spec{.doc = "pipelined atomic unit: issue interval of atomics to one line (read only with "
                                      "atomic_unit pipelined)",
                               .def = "0", .max = 1e6});
  if (!llc_atomic_pipelined) llc_section.unused("atomic_occupancy", "read only with caches.llc.atomic_unit pipelined");
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
  config::Reader at = coherence.section(
      "atomics", "where each class of atomic read-modify-write executes (LL/SC loops always run in the core)",
      /*optional=*/true);
  const std::pair<AtomicClass, const char*> classes[] = {
      {AtomicClass::cas, "cas"}, {AtomicClass::swp, "swp"}, {AtomicClass::ld_op, "ld_op"}, {AtomicClass::st_op, "st_op"}};
  for (auto [cls, key] : classes) {
    const std::string place = at.choice(
        key, Spec{.doc = "near: the core takes the line exclusive and executes in its L1; llc: in the last-level "
                         "cache (the requester die's L3 with a per-die LLC, else the home's); home: at the line's "
                         "home agent",
                  .def = "near", .choices = {"near", "llc", "home"}});
    atomics[static_cast<std::size_t>(cls)] = place == "near" ? AtomicPlace::near
                                             : place == "llc" ? AtomicPlace::llc
                                                              : AtomicPlace::home;
  }
  directory = DirectoryOrganisation(coherence.section(
      "directory", "how the home directory records sharers: exact per core, or per socket or node-controller group "
                   "with the unit's agent fanning invalidations out",
      /*optional=*/true));
  dram_latency = memory.time("dram_latency", Spec{.doc = "DRAM access at the home memory controller", .min = 1, .max = 1e7});
  node_capacity = memory.size("node_capacity", Spec{.doc = "memory per NUMA node", .def = "64GiB", .min = 1 << 20, .max = 1e13});
}

Fabric::Fabric(const FabricParams& p, sim::Simulator& sim, Interconnect& icn, MemoryMap& mem, std::uint64_t seed,
               CacheTable* cache_table, DirTable* dir_table)
    : p_(p), sim_(sim), icn_(icn), mem_(mem), topo_(icn.topology()), arbitration_rng_(seed, "arbitration") {
  if (cache_table == nullptr) own_cache_table_ = std::make_unique<CacheTable>(kCacheRows);
  if (dir_table == nullptr) own_dir_table_ = std::make_unique<DirTable>(kDirRows);
  cache_table_ = cache_table ? cache_table : own_cache_table_.get();
  dir_table_ = dir_table ? dir_table : own_dir_table_.get();
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
  for (int c = 0; c < topo_.core_count(); ++c)
    agent_die_.push_back(icn_.endpoint(core_cpu_[static_cast<std::size_t>(c)]).die_global);
  if (p_.llc_per_die) {
    // One L3 agent per die: it caches lines for atomics executed there; its
    // capacity is the die's LLC tags (llc_), so its private tag arrays stay empty.
    for (int d = 0; d < topo_.die_count(); ++d) {
      auto l3 = std::make_unique<PrivateCache>();
      l3->l1 = l3->l2 = TagArray(kLineBytes, 1);  // unused: the die's tags in llc_ hold its capacity
      caches_.push_back(std::move(l3));
      core_cpu_.push_back(icn_.llc_endpoint(d));
      cpus_of_core_.emplace_back();
      agent_die_.push_back(d);
      llc_.emplace_back(p_.llc.size, p_.llc.assoc);
    }
  } else {
    for (int n = 0; n < mem_.nodes(); ++n) llc_.emplace_back(p_.llc.size, p_.llc.assoc);
  }
  monitors_.resize(static_cast<std::size_t>(topo_.cpu_count()));
#ifdef COHSIM_CHECKED
  checking_ = true;
#endif
}

Fabric::~Fabric() = default;

int Fabric::core_of(int cpu) const { return topo_.cpu(cpu).core_global; }

Fabric::HomeLine& Fabric::new_home_line(Addr line) {
  auto* slot = homes_.try_emplace(line).first;
  *slot = std::make_unique<HomeLine>();
  return **slot;
}

void Fabric::protocol_error(const char* who, int agent, Addr line, std::string_view state,
                            std::string_view event) const {
  throw sim::SimError(fmt::format("protocol error at t={}: {} {} has no transition for state {} on event {} "
                                  "(line {:#x}, {})",
                                  sim::format_time(sim_.now()), who, agent, state, event, line, mem_.describe(line)));
}

// ------------------------------------------------------------- CPU side ---
Fabric::Acquire Fabric::acquire(int cpu, Addr line, bool for_write) {
  return Acquire(*this, core_of(cpu), cpu, line, for_write);
}

std::optional<Tick> Fabric::hit(int agent, Addr line, bool for_write) {
  CacheLine* cl = cache(agent).find(line);
  if (cl == nullptr || is_transient(cl->state)) return std::nullopt;
  const CacheEvent ev = for_write ? CacheEvent::Store : CacheEvent::Load;
  const CacheRow* row = cache_table_->find(cl->state, ev);
  if (row == nullptr || !(row->actions & ca_hit)) return std::nullopt;  // (obtain reports a missing row)
  return take_hit(agent, line, *cl, *row, ev);
}

Tick Fabric::take_hit(int agent, Addr line, CacheLine& cl, const CacheRow& row, CacheEvent ev) {
  cache_table_->count(cl.state, ev);
  change_entry(cl, [&] { cl.state = row.next; });
  if (checking_) check_line(line);
  ++stats_.hits;
  if (is_llc_agent(agent)) return 0;  // its look-up was paid on the way in
  PrivateCache& c = cache(agent);
  if (c.l1.touch(line)) return p_.l1.latency;
  c.l2.touch(line);
  c.l1.insert(line, [](Addr) { return true; });
  return p_.l2.latency;
}

std::uint64_t Fabric::read(int cpu, Addr a, int size) {
  check_access(a, size);
  const PrivateCache& c = cache(core_of(cpu));
  const CacheLine* cl = c.find(line_of(a));
  if (cl == nullptr || !readable(cl->state))
    throw sim::SimError(fmt::format("read of {:#x} by cpu {} without the line", a, cpu));
  std::uint64_t v = get_bytes(cl->data, a, size);
  if (checking_) check_value(a, size, v);
  return v;
}

void Fabric::write(int cpu, Addr a, int size, std::uint64_t value) {
  check_access(a, size);
  PrivateCache& c = cache(core_of(cpu));
  CacheLine* cl = c.find(line_of(a));
  if (cl == nullptr || !writable(cl->state))
    throw sim::SimError(fmt::format("write of {:#x} by cpu {} without ownership", a, cpu));
  change_entry(*cl, [&] {
    cl->state = CacheState::M;
    put_bytes(cl->data, a, size, value);
  });
  const int core = core_of(cpu);
  if (cpus_of_core_[static_cast<std::size_t>(core)].size() > 1) {
    // An SMT sibling spinning on this line sees the write in the shared cache.
    cl->lost.notify_all(sim_);
    for (int sib : cpus_of_core_[static_cast<std::size_t>(core)])
      if (sib != cpu && monitors_[static_cast<std::size_t>(sib)].line == line_of(a))
        monitors_[static_cast<std::size_t>(sib)].valid = false;
  }
  if (checking_) {
    put_bytes(golden_of(*cl->home), a, size, value);
    golden_changed(*cl->home, cl);
    check_line(line_of(a));
    if (write_observer_) write_observer_(a, size, value);
  }
}

bool Fabric::holds(int cpu, Addr line, bool for_write) const {
  const PrivateCache& c = cache(core_of(cpu));
  const CacheLine* cl = c.find(line);
  if (cl == nullptr) return false;
  return for_write ? writable(cl->state) : readable(cl->state);
}

CacheState Fabric::state_of(int cpu, Addr line) const {
  const CacheLine* cl = cache(core_of(cpu)).find(line);
  return cl == nullptr ? CacheState::I : cl->state;
}

DirState Fabric::dir_state_of(Addr line) const {
  const auto* h = homes_.find(line);
  return h == nullptr ? DirState::I : (*h)->state;
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
  CacheLine* cl = cache(core_of(cpu)).find(line);
  if (cl == nullptr || !readable(cl->state)) co_return;
  co_await cl->lost.wait(sim_, what, line, deadline);
}

// -------------------------------------------------------------- checks ---
Fabric::CacheLine& Fabric::held_entry(int agent, Addr line) {
  CacheLine* e = cache(agent).find(line);
  if (e == nullptr)
    throw sim::SimError(fmt::format("protocol error at t={}: agent {} has no entry for line {:#x} ({}) where the "
                                    "protocol needs its copy",
                                    sim::format_time(sim_.now()), agent, line, mem_.describe(line)));
  return *e;
}

void Fabric::drop_entry(int core, Addr line, CacheLine& entry) {
  tally(entry, -1);
  entry.home->drop_holder(entry);
  cache(core).erase(line);
}

void Fabric::golden_changed(HomeLine& h, const CacheLine* writer) {
  const bool writer_readable = writer != nullptr && readable(writer->state);
  if (h.tally.readable() == (writer_readable ? 1 : 0)) {  // the writer's copy is the only one (the rule holds)
    h.tally.stale = writer_readable && writer->data != *h.golden ? 1 : 0;
    return;
  }
  h.tally = h.counted();  // other readable copies (a violation the next check reports): recount them all
}

void Fabric::set_golden(HomeLine& h, const LineData& value, const CacheLine* writer) {
  golden_of(h) = value;
  golden_changed(h, writer);
}

void Fabric::check_line(Addr line) {
  ++stats_.checks;
  const auto* home = homes_.find(line);
  if (home == nullptr) return;  // never requested: no cache holds it
  const HomeLine& h = **home;
#ifdef COHSIM_CHECKED
  // The checked builds (debug, sanitizers) check the tallies themselves.
  if (!(h.counted() == h.tally))
    throw sim::SimError(fmt::format("checker tallies of line {:#x} ({}) are out of step with its holders", line,
                                    mem_.describe(line)));
#endif
  if (h.tally.stale > 0) {  // name the first stale copy in the holders' order
    for (const auto& [core, entry] : h.holders)
      if (readable(entry->state) && entry->data != *h.golden) {
        ++violations_;
        throw sim::SimError(fmt::format("coherence violation at t={}: core {} holds a stale copy of line {:#x} ({}) in {}",
                                        sim::format_time(sim_.now()), core, line, mem_.describe(line), name(entry->state)));
      }
    // None found: a release build's guard (the checked builds compare every tally above).
    throw sim::SimError(fmt::format("checker tallies of line {:#x} ({}) count a stale copy that no holder has", line,
                                    mem_.describe(line)));
  }
  if (h.tally.writable > 1 || (h.tally.writable == 1 && h.tally.shared > 0)) {
    ++violations_;
    throw sim::SimError(fmt::format("coherence violation at t={}: line {:#x} ({}) has {} writers and {} readers",
                                    sim::format_time(sim_.now()), line, mem_.describe(line), h.tally.writable,
                                    h.tally.shared));
  }
}

void Fabric::check_value(Addr a, int size, std::uint64_t got) {
  ++stats_.checks;
  const HomeLine& h = home_line(line_of(a));
  std::uint64_t want = get_bytes(h.golden ? *h.golden : h.mem, a, size);
  if (got != want) {
    ++violations_;
    throw sim::SimError(fmt::format("coherence violation at t={}: read of {:#x} ({}) returned {:#x}, the latest write was {:#x}",
                                    sim::format_time(sim_.now()), a, mem_.describe(a), got, want));
  }
}

std::uint64_t Fabric::peek(Addr a, int size) const {
  const Addr line = line_of(a);
  for (const auto& c : caches_) {
    const CacheLine* cl = c->find(line);
    if (cl != nullptr && (writable(cl->state) || cl->state == CacheState::MI_A)) return get_bytes(cl->data, a, size);
  }
  const auto* h = homes_.find(line);
  return h == nullptr ? 0 : get_bytes((*h)->mem, a, size);
}

void Fabric::poke(Addr a, int size, std::uint64_t value) {
  check_access(a, size);
  HomeLine& h = home_line(line_of(a));
  put_bytes(h.mem, a, size, value);
  if (checking_) {
    set_golden(h, h.mem, nullptr);
  }
}

}  // namespace cohsim::fabric