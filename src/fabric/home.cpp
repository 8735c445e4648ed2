// The home side of the fabric: a cache miss's request on its way to the
// line's home (or its die's L3) and back, queueing and arbitration there,
// the directory's actions, the caches' responses, write-backs and device
// accesses.
#include "fabric_state.hpp"

#include <algorithm>

namespace cohsim::fabric {

using sim::Task;
using namespace detail;

// ------------------------------------------------------------ requests ---
/// Awaitable: the request's turn at a home (or a die's L3): at once when the
/// home is free and no request waits (nor a fill in flight it must wait for),
/// else it queues and grant_next wakes it. With `count_wait` the time it
/// waited goes into the line's contention statistics.
struct Fabric::HomeTurn {
  Fabric* f;
  HomeLine* h;
  Addr line;
  int ep;
  bool gets;
  bool count_wait;
  Tick queued_at;
  bool await_ready() const noexcept {
    if (h->busy || !h->queue.empty() || h->waits_for_fills(gets)) return false;
    h->busy = true;
    return true;
  }
  void await_suspend(std::coroutine_handle<> handle) {
    sim::Process* p = f->sim_.current();
    std::uint64_t id = f->sim_.suspend_current(handle, "its turn at the home directory", line);
    // (only the "nearest" arbitration reads the distance)
    const Tick distance = f->p_.arbitration == "nearest"
                              ? f->icn_.latency(ep, f->icn_.home_endpoint(f->mem_.home_node(line)))
                              : 0;
    h->queue.push_back({p, id, f->sim_.now(), f->home_seq_++, distance, gets});
  }
  void await_resume() const {
    if (count_wait) f->stats_of(*h, line).wait += f->sim_.now() - queued_at;
  }
};

Fabric::HomeTurn Fabric::home_acquire(HomeLine& h, Addr line, int requester_ep, bool gets, bool count_wait) {
  return HomeTurn{this, &h, line, requester_ep, gets, count_wait, sim_.now()};
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
  } else if (p_.arbitration == "nearest") {
    for (std::size_t i = 1; i < h.queue.size(); ++i) {
      const auto &a = h.queue[i], &b = h.queue[pick];
      bool better = a.distance != b.distance ? a.distance < b.distance
                    : a.arrived != b.arrived ? a.arrived < b.arrived
                                             : a.seq < b.seq;
      if (better) pick = i;
    }
  }  // arrival: the first waiter (waiters join the queue at their arrival, in sequence)
  HomeLine::Waiter w = h.queue[pick];
  // The picked request waits for the fills in flight unless it is one itself;
  // it stays picked, so nobody overtakes it meanwhile (under every policy, a
  // stream of readers cannot starve a writer).
  if (h.waits_for_fills(w.gets)) {
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
  co_await home_acquire(h, line, ep, gets, count_wait);
  co_return &h;
}

Task<Tick> Fabric::obtain(int agent, int ep, Addr line, bool for_write) {
  DirEvent kind = DirEvent::GetS;
  for (;;) {  // until the line is held as asked (a hit) or a request is due (a miss)
    PrivateCache& c = cache(agent);
    CacheLine* cl = c.find(line);
    CacheState st = cl == nullptr ? CacheState::I : cl->state;
    if (is_transient(st)) {
      co_await cl->mshr.wait(sim_, "a request in flight for this line", line);
      continue;
    }
    CacheEvent ev = for_write ? CacheEvent::Store : CacheEvent::Load;
    const CacheRow* row = cache_table_->find(st, ev);
    if (row == nullptr) protocol_error("cache of agent", agent, line, name(st), name(ev));
    if (row->actions & ca_hit) co_return take_hit(agent, line, *cl, *row, ev);
    cache_table_->count(st, ev);
    kind = (row->actions & ca_issue_gets) ? DirEvent::GetS
           : (row->actions & ca_issue_getm) ? DirEvent::GetM
                                            : DirEvent::Upgrade;
    const auto made = c.entry(line);  // (not a structured binding: clang 14 cannot capture one in a lambda)
    CacheLine* entry = made.first;
    if (made.second) home_line(line).add_holder(agent, *entry);
    change_entry(*entry, [&] { entry->state = row->next; });
    if (kind == DirEvent::Upgrade) ++stats_.upgrades; else ++stats_.misses;
    break;
  }
  // The request. (Its steps, the die's L3 and the way to the home included,
  // are written here rather than in coroutines of their own: a frame less each.)
  Txn t{.fabric = this, .line = line, .core = agent, .ep = ep, .event = kind};
  ++stats_.transactions;
  if (!is_llc_agent(agent)) co_await sim_.delay(p_.l2.latency);  // the private miss is detected
  HomeLine* served = nullptr;  // the home line once the request holds it
  const int die = agent_die(agent);
  bool merges = false;          // a read that keeps one miss per line with its die (merge_reads)
  bool die_read = false;        // this read is that miss
  if (p_.llc_per_die) {
    // The die's L3 first; it serves the request when the die alone can.
    const int l3 = icn_.llc_endpoint(die);
    if (!is_llc_agent(agent)) {  // (an L3's own request: it looked up its tags when the atomic arrived)
      co_await sim_.delay(icn_.send(ep, l3, sim_.now()) - sim_.now());
      co_await sim_.delay(p_.llc_tag_latency);
    }
    HomeLine& h = home_line(line);
    // A read the die cannot serve while the die's own read of the line is on
    // its way to the home waits for it (the L3 keeps one miss per line) and
    // looks again; a die that never serves the line (homed on another die,
    // remote_home_lines home) keeps no miss for it.
    merges = p_.llc_merge_reads && t.event == DirEvent::GetS && !die_never_serves(line, die);
    bool can_serve = die_can_serve(h, line, die, agent, t.event);
    if (merges)
      while (!can_serve) {
        auto pending = die_reads_.find({die, line});
        if (pending == die_reads_.end()) break;
        co_await pending->second.wait(sim_, "the die's read of this line on its way", line);
        can_serve = die_can_serve(h, line, die, agent, t.event);
      }
    if (can_serve) {
      const std::uint64_t before = stats_of(h, line).requests;
      co_await home_acquire(h, line, l3, t.event == DirEvent::GetS, /*count_wait=*/true);
      if (die_can_serve(h, line, die, agent, t.event)) {
        t.dir_ep = l3;
        t.die_lookup_again = stats_of(h, line).requests != before;  // another request went first
        served = &h;
      } else {
        home_release(line);  // the die lost what it needed while the request waited
      }
    }
  }
  if (served == nullptr) {
    // (A read that lost the line while it waited for its turn goes on by
    // itself when its die's read is already on its way.)
    if (merges) die_read = die_reads_.try_emplace({die, line}).second;
    // On to the home agent (from the die's L3 after its miss, with a per-die LLC).
    t.dir_ep = home_endpoint_of(line);
    const int from = p_.llc_per_die ? icn_.llc_endpoint(die) : ep;
    co_await sim_.delay(icn_.send(from, t.dir_ep, sim_.now()) - sim_.now());
    served = &home_line(line);
    co_await home_acquire(*served, line, from, kind == DirEvent::GetS, /*count_wait=*/true);
  }
  HomeLine& h = *served;
  if (t.event == DirEvent::Upgrade && !h.sharers.test(static_cast<std::size_t>(agent)))
    t.event = DirEvent::GetM;  // invalidated while the upgrade waited
  const bool shared_fill = h.shared_fill_possible(t.event == DirEvent::GetS);
  run_directory(t, h);
  if (shared_fill) {  // the directory is free for the next request after its look-up
    ++h.shared_fills;
    sim_.schedule(sim_.now() + p_.shared_fill_interval, &Fabric::home_release_event, this, line);
  }
  co_await sim_.delay(t.complete_at - sim_.now());
  cache_event(agent, line, t.response, &t);
  // Exclusive (E or M, a GetS answered exclusive too): other dies' copies are gone.
  if (p_.llc_per_die) llc_filled(agent, line, t.response == CacheEvent::DataExcl);
  if (die_read) die_reads_.extract({die, line}).mapped().notify_all(sim_);
  if (!is_llc_agent(agent)) {
    // Install in the tag arrays; a capacity victim is evicted.
    PrivateCache& c = cache(agent);
    auto victim = c.l2.insert(line, [&](Addr v) {
      const CacheLine* cl = c.find(v);
      return v != line && cl != nullptr && !is_transient(cl->state);
    });
    c.l1.insert(line, [](Addr) { return true; });
    if (victim) {
      c.l1.remove(*victim);
      evict(agent, *victim);
    }
  }
  Tick unblock = icn_.send(ep, t.dir_ep, sim_.now());
  sim_.schedule(unblock, shared_fill ? &Fabric::shared_fill_done_event : &Fabric::home_release_event, this, line);
  co_return 0;
}

bool Fabric::die_never_serves(Addr line, int die) const {
  return p_.remote_home_via_home && topo_.die_of_node(mem_.home_node(line)) != die;
}

bool Fabric::die_can_serve(const HomeLine& h, Addr line, int die, int agent, DirEvent event) const {
  if (die_never_serves(line, die)) return false;
  if (h.state == DirState::EM) return h.owner != agent && agent_die(h.owner) == die;  // forwarded in the die
  // No core holds the line: the die's L3 still does when it was filled there
  // and no other die took the line exclusive since (which removed it from
  // every other die's L3: so only one die's L3 can hold a line in state I).
  if (h.state == DirState::I) return llc_[static_cast<std::size_t>(die)].contains(line);
  const bool is_sharer = h.sharers.test(static_cast<std::size_t>(agent));
  if (event != DirEvent::GetS &&
      !h.sharers.all_of([&](std::size_t s) { return agent_die(static_cast<int>(s)) == die; }))
    return false;  // copies in other dies to invalidate
  // An upgrade needs no data; anything else reads the die's L3.
  return (event == DirEvent::Upgrade && is_sharer) || llc_[static_cast<std::size_t>(die)].contains(line);
}

void Fabric::llc_filled(int agent, Addr line, bool exclusive) {
  const int die = agent_die(agent);
  if (exclusive)
    for (int d = 0; d < static_cast<int>(llc_.size()); ++d)
      if (d != die) llc_[static_cast<std::size_t>(d)].remove(line);
  const int l3 = llc_agent(die);
  auto victim = llc_[static_cast<std::size_t>(die)].insert(line, [&](Addr v) {
    const CacheLine* cl = cache(l3).find(v);
    if (cl == nullptr) return v != line;
    // Not the L3's copy of a line in flight or with atomics still on its ALU.
    return v != line && !is_transient(cl->state) && cl->alu_done <= sim_.now();
  });
  // The L3's own copy of a victim goes back to its home; the cores' copies stay.
  if (victim && cache(l3).find(*victim) != nullptr) evict(l3, *victim);
}

topo::HopClass Fabric::hop_class_of(int ep_a, int ep_b) const {
  if (ep_a < topo_.cpu_count() && ep_b < topo_.cpu_count()) return topo_.hop_class(ep_a, ep_b);
  const Endpoint &a = icn_.endpoint(ep_a), &b = icn_.endpoint(ep_b);
  if (a.die_global == b.die_global) return topo::HopClass::die;
  if (a.socket == b.socket) return topo::HopClass::cross_die;
  return topo::HopClass::socket;
}

void Fabric::evict(int core, Addr victim) {
  PrivateCache& c = cache(core);
  CacheLine* cl = c.find(victim);
  CacheState st = cl->state;
  const CacheRow* row = cache_table_->find(st, CacheEvent::Replacement);
  if (row == nullptr) protocol_error("cache of core", core, victim, name(st), "Replacement");
  cache_table_->count(st, CacheEvent::Replacement);
  ++stats_.evictions;
  if (row->actions & ca_notify) {
    cl->lost.notify_all(sim_);
    clear_monitors(core, victim);
  }
  if (row->actions & ca_drop) {
    cl->mshr.notify_all(sim_);
    drop_entry(core, victim, *cl);
  } else {
    change_entry(*cl, [&] { cl->state = row->next; });
  }
  // Not a daemon: a run ends only when every write-back has reached its home.
  if (row->actions & ca_send_put)
    sim_.spawn(is_llc_agent(core) ? fmt::format("writeback l3.die{}", agent_die(core)) : fmt::format("writeback core{}", core),
               put(core, victim));
  if (checking_) check_line(victim);
}

Task<void> Fabric::put(int core, Addr line) {
  const int ep = core_cpu_[static_cast<std::size_t>(core)];
  Txn t{.fabric = this, .line = line, .core = core, .ep = ep};
  // The entry is in MI_A or EI_A until the home answers (read before any
  // co_await: no reference to it is kept across one).
  t.data = held_entry(core, line).data;
  const bool dirty = held_entry(core, line).state == CacheState::MI_A;
  t.data_valid = true;
  ++stats_.writebacks;
  HomeLine& h = *co_await reach_home(ep, line, /*count_wait=*/false);
  const bool still_owner = h.state == DirState::EM && h.owner == core;
  t.event = !still_owner ? DirEvent::PutStale : dirty ? DirEvent::PutM : DirEvent::PutE;
  run_directory(t, h);
  sim_.schedule(sim_.now() + p_.directory_latency, &Fabric::home_release_event, this, line);
  co_await sim_.delay(t.complete_at - sim_.now());
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
  forget_in_llcs(line);
  if (checking_) {
    set_golden(h, h.mem, nullptr);  // the home's memory is now the latest value
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
  // Where the directory step runs: the home agent, or (a per-die LLC that
  // serves its own die) the requester die's L3, which holds what it needs.
  const int dir_ep = t.dir_ep >= 0 ? t.dir_ep : home_ep;
  const bool in_die = dir_ep != home_ep;
  const int dir_die = icn_.endpoint(dir_ep).die_global;
  const DirRow* row = dir_table_->find(h.state, t.event);
  if (row == nullptr) protocol_error("home directory of node", node, line, name(h.state), name(t.event));
  dir_table_->count(h.state, t.event);
  const std::uint32_t a = row->actions;
  t.actions = a;
  LineStats& ls = stats_of(h, line);
  ++ls.requests;
  if (t.core >= 0) ls.touched.set(static_cast<std::size_t>(t.core));
  else ++ls.device_accesses;

  // The L3 looked its tags up on arrival, and again when another request for
  // the line reached the directory while this one waited (a retried request
  // passes the tag pipeline once more).
  const Tick t0 = sim_.now() + (!in_die ? p_.directory_latency : t.die_lookup_again ? p_.llc_tag_latency : 0);
  Tick complete = t0 + 1;
  Tick home_ready = t0;
  Tick data_ready = t0;
  auto snoop_extra = [&](int core) {
    return agent_die(core) != dir_die ? p_.remote_die_snoop : 0;
  };

  if (a & (da_inv_sharers | da_inv_sharers_home)) {
    const bool to_requester = (a & da_inv_sharers) != 0;
    const Tick acked = invalidate_sharers(t, h, dir_ep, t0, to_requester ? t.ep : dir_ep, to_requester);
    if (to_requester) complete = std::max(complete, acked);
    else home_ready = std::max(home_ready, acked);
  }
  if (a & (da_fwd_gets | da_fwd_getm | da_fwd_read_once | da_fwd_inv)) {
    const int owner = h.owner;
    if (owner < 0) protocol_error("home directory of node", node, line, "EM without owner", name(t.event));
    const int oep = core_cpu_[static_cast<std::size_t>(owner)];
    Tick arr = icn_.send(dir_ep, oep, t0) + snoop_extra(owner);
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
    // An L3 owner reads its data array, once its atomics on the line are done.
    Tick resp = is_llc_agent(owner) ? std::max(arr, owner_line_alu_busy(owner, line)) + p_.llc.latency
                                    : arr + p_.snoop_response;
    if (a & da_fwd_inv) {
      home_ready = std::max(home_ready, icn_.send(oep, dir_ep, resp));
    } else {
      const Tick delivered = icn_.send(oep, t.ep, resp);
      complete = std::max(complete, delivered);
      if (t.core >= 0) ++ls.transfers[static_cast<std::size_t>(hop_class_of(oep, t.ep))];
      if (auto* tr = sim_.tracer()) tr->flow(mem_.describe(line), oep, resp, t.ep, delivered);
      if (a & da_fwd_gets) icn_.send(oep, dir_ep, resp);  // the writeback's occupancy
    }
    t.response = (a & da_fwd_gets) ? CacheEvent::Data : CacheEvent::DataExcl;
  }
  if (a & da_read_memory) {
    if (p_.llc_per_die) {
      // The die's L3 when it serves its own die; DRAM at the home otherwise
      // (a die's L3 caches for its own cores, not for the home's requesters).
      if (in_die) {
        llc_[static_cast<std::size_t>(dir_die)].touch(line);
        data_ready = t0 + p_.llc.latency;
        ++stats_.llc_hits;
      } else {
        data_ready = t0 + p_.dram_latency;
        ++stats_.dram_reads;
      }
    } else if (TagArray& llc = llc_[static_cast<std::size_t>(node)]; llc.touch(line)) {
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
    if (!p_.llc_per_die) llc_[static_cast<std::size_t>(node)].insert(line, [](Addr) { return true; });
  }
  if (a & (da_send_data | da_send_data_excl)) {
    t.data = h.mem;
    t.data_valid = true;
    t.response = (a & da_send_data) ? CacheEvent::Data : CacheEvent::DataExcl;
    complete = std::max(complete, icn_.send(dir_ep, t.ep, data_ready));
  }
  if (a & da_send_grant) {
    t.response = CacheEvent::DataExcl;
    complete = std::max(complete, icn_.send(dir_ep, t.ep, t0));
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
  CacheLine* cl = c.find(line);
  CacheState st = cl == nullptr ? CacheState::I : cl->state;
  const CacheRow* row = cache_table_->find(st, ev);
  if (row == nullptr) protocol_error("cache of core", core, line, name(st), name(ev));
  cache_table_->count(st, ev);
  const std::uint32_t a = row->actions;
  if (a & (ca_data_to_requester | ca_data_to_device)) {
    t->data = cl->data;
    t->data_valid = true;
  }
  if (a & ca_data_to_home) home_line(line).mem = cl->data;
  if (cl == nullptr) {
    if (checking_) check_line(line);
    return;  // (I, Inv): a silently dropped sharer acknowledges
  }
  change_entry(*cl, [&] {
    if ((a & ca_fill) && t->data_valid) cl->data = t->data;
    cl->state = row->next;
  });
  if (a & ca_notify) {
    cl->lost.notify_all(sim_);
    clear_monitors(core, line);
  }
  if (a & ca_complete) cl->mshr.notify_all(sim_);
  if (a & ca_drop) {
    cl->lost.notify_all(sim_);
    cl->mshr.notify_all(sim_);
    c.l1.remove(line);
    c.l2.remove(line);
    drop_entry(core, line, *cl);
  }
  if (checking_) check_line(line);
}

}  // namespace cohsim::fabric
