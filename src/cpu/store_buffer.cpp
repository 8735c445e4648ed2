// The store side of the core: the store buffer and its write ports, ownership
// prefetch, posted MMIO writes, atomics and store-exclusives, and what each
// waits for (cpu.hpp's header comment states the ordering rules).
#include <algorithm>
#include <stdexcept>

#include "cohsim/cpu/cpu.hpp"

namespace cohsim::cpu {

namespace {
/// A posted atomic's result (post_rmw_returning): its value, for whoever awaits it.
void complete(sim::Simulator& sim, LoadFuture::State& s, std::uint64_t v) {
  s.value = v;
  s.done = true;
  s.completed.notify_all(sim);
}
}  // namespace

// --------------------------------------------------------------- stores ---
Task<void> Cpu::store(Addr a, int size, std::uint64_t v, Order o) {
  ++stats_.stores;
  return buffer_store(Pending{.addr = a, .size = size, .value = v, .seq = 0, .after_stores = 0, .after_loads = 0,
                              .loads_before = 0, .result = nullptr},
                      o);
}

Task<void> Cpu::post_rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare, Order o) {
  if (!arm_ || !p_.lse) {
    co_await rmw(a, size, op, operand, compare, o);
    co_return;
  }
  ++stats_.atomics;
  Pending e{.addr = a, .size = size, .value = operand, .seq = 0, .after_stores = 0, .after_loads = 0,
            .loads_before = 0, .atomic = true, .op = op, .compare = compare, .result = nullptr};
  // No acquire semantics without a destination register.
  co_await buffer_store(e, o == Order::full || o == Order::release ? Order::release : Order::relaxed);
}

Task<void> Cpu::post_rmw_returning(LoadFuture& result, Addr a, int size, RmwOp op, std::uint64_t operand,
                                   std::uint64_t compare, Order o) {
  if (!arm_ || !p_.lse) throw std::logic_error("post_rmw_returning: arm64 with LSE atomics only");
  ++stats_.atomics;
  Pending e{.addr = a, .size = size, .value = operand, .seq = 0, .after_stores = 0, .after_loads = 0,
            .loads_before = 0, .atomic = true, .op = op, .compare = compare, .result = nullptr};
  e.result = std::allocate_shared<LoadFuture::State>(sim::detail::PoolAllocator<LoadFuture::State>{});
  result.s_ = e.result;
  result.sim_ = &sim_;
  co_await buffer_store(std::move(e), o == Order::full || o == Order::release ? Order::release : Order::relaxed);
}

Task<void> Cpu::buffer_store(Pending e, Order o) {
  const bool release = o == Order::release || o == Order::full;
  // A full-order store waits for every earlier access before it enters.
  if (o == Order::full) {
    co_await drain_store_buffer();
    if (!loads_bound_through(loads_issued_)) co_await wait_all_loads();
  }
  // A release orders every earlier access, posted MMIO writes included (why
  // arm64 needs no mmiowb: v5.9 arm_smmu_cmdq_issue_cmdlist's owner_prod
  // release must follow its PROD write, or another owner's PROD could pass it).
  const Tick fence = write_device_fence(release);
  if (fence > sim_.now()) co_await wait_device_fence(fence);
  while (static_cast<int>(sb_.size()) >= p_.store_buffer_entries)
    co_await sb_changed_.wait(sim_, "store buffer space", e.addr);
  if (sb_.empty()) sim_.hold_run();  // a run ends only when its stores are written
  e.seq = ++stores_buffered_;
  e.after_stores = store_fence_;
  e.after_loads = std::max(load_fence_, last_acquire_);
  e.loads_before = loads_issued_;
  // x86 (TSO) and release stores: after every earlier store and load.
  if (!arm_ || release) {
    e.after_stores = e.seq - 1;
    e.after_loads = loads_issued_;
  }
  if (release) release_through_ = e.seq;
  sb_.push_back(e);
  changed();
  co_await sim_.delay(p_.cycles(1));
}

Cpu::Pending* Cpu::find_store(std::uint64_t seq) {
  for (Pending& e : sb_)
    if (e.seq == seq) return &e;
  return nullptr;
}

// may_take and ready_to_write are inline (so declared in cpu.hpp): only this
// file calls them, in the buffer's scans after every change.
inline bool Cpu::may_take(const Pending& e) const {
  // Same-line order (coherence): an older store to the line is written first,
  // and an older load of the line binds first (it must not read this store).
  const Addr line = fabric::line_of(e.addr);
  for (const Pending& older : sb_) {
    if (older.seq >= e.seq) break;
    if (fabric::line_of(older.addr) == line) return false;
  }
  for (const InFlightLoad& l : unbound_) {
    if (l.seq > e.loads_before) break;
    if (l.line == line) return false;
  }
  return true;
}

inline bool Cpu::ready_to_write(const Pending& e) const {
  return !e.writing && stores_written_through(e.after_stores) && loads_bound_through(e.after_loads) && may_take(e);
}

void Cpu::changed() {
  sb_changed_.notify_all(sim_);
  if (sb_.empty()) return;
  if (!idle_ports_.empty())
    for (const Pending& e : sb_)
      if (ready_to_write(e)) {
        port_wake_[static_cast<std::size_t>(idle_ports_.back())].notify_all(sim_);
        idle_ports_.pop_back();
        break;
      }
  if (!idle_prefetchers_.empty() && prefetch_candidate() != nullptr) {
    port_wake_[static_cast<std::size_t>(p_.outstanding_stores + idle_prefetchers_.back())].notify_all(sim_);
    idle_prefetchers_.pop_back();
  }
}

Task<void> Cpu::write_port(int port) {
  // One of `outstanding_stores` ports: takes the oldest store whose ordering
  // allows it, gets its line's ownership and writes it (a posted atomic:
  // performs it). On arm64 stores to different lines are written out of
  // program order when their lines arrive out of order; x86 stores are ready
  // only in program order. An idle port sleeps until changed() hands it a
  // ready store. (The write is done here, not in a coroutine of its own: a
  // frame less per store.)
  for (;;) {
    Pending* e = nullptr;
    for (Pending& cand : sb_)
      if (ready_to_write(cand)) {
        e = &cand;
        break;
      }
    if (e == nullptr) {
      idle_ports_.push_back(port);
      co_await port_wake_[static_cast<std::size_t>(port)].wait(sim_, "stores to write");
      continue;
    }
    e->writing = true;
    const std::uint64_t seq = e->seq;
    const Addr line = fabric::line_of(e->addr);
    changed();  // another ready store goes to another port
    if (jitter_on()) co_await sim_.delay(jitter());
    e = find_store(seq);  // the buffer may change at every wait
    const std::uint64_t mask = fabric::size_mask(e->size);
    if (e->atomic && fab_.params().atomic_place(e->op, /*posted=*/true) != fabric::AtomicPlace::near) {
      const Pending a = *e;
      const std::uint64_t old =
          co_await fab_.atomic_far(id_, a.addr, a.size, a.op, a.value & mask, a.compare & mask, /*posted=*/true);
      co_await sim_.delay(p_.atomic_latency);
      if (a.result) complete(sim_, *a.result, old);
    } else {
      co_await reserve_write_through(line);
      co_await fab_.acquire(id_, line, true);
      e = find_store(seq);
      if (e->atomic) {
        const std::uint64_t old = fab_.read(id_, e->addr, e->size);
        if (e->op != RmwOp::cas || old == (e->compare & mask))
          fab_.write(id_, e->addr, e->size, fabric::apply_rmw(e->op, old, e->value, e->compare) & mask);
        if (e->result) complete(sim_, *e->result, old);
      } else {
        fab_.write(id_, e->addr, e->size, e->value);
      }
      note_write_done(line);
      co_await sim_.delay(e->atomic ? p_.atomic_latency : p_.store_commit);
    }
    std::erase_if(sb_, [seq](const Pending& p) { return p.seq == seq; });
    if (sb_.empty()) sim_.release_run();
    changed();
  }
}

Cpu::Pending* Cpu::prefetch_candidate() {
  int ahead = 0;
  for (Pending& cand : sb_) {
    if (cand.writing || ready_to_write(cand)) continue;
    if (++ahead > p_.outstanding_stores) break;
    if (!cand.prefetched && may_take(cand)) return &cand;
  }
  return nullptr;
}

Task<void> Cpu::ownership_prefetcher(int index) {
  // A store that must wait its turn (an earlier store or load is ordered
  // before it) has its line's ownership requested ahead, as an out-of-order
  // core's store buffer does: the write then usually hits. Only the first
  // `outstanding_stores` waiting stores are prefetched.
  for (;;) {
    Pending* e = prefetch_candidate();
    if (e == nullptr) {
      idle_prefetchers_.push_back(index);
      co_await port_wake_[static_cast<std::size_t>(p_.outstanding_stores + index)].wait(sim_, "stores to prefetch");
      continue;
    }
    e->prefetched = true;
    co_await fab_.acquire(id_, fabric::line_of(e->addr), true);
  }
}

bool Cpu::write_through_full(Addr line) {
  if (!arm_ || p_.system_write_entries == 0) return false;
  const Tick now = sim_.now();
  std::erase_if(write_through_, [now](const WriteThrough& w) { return w.done <= now; });
  for (const WriteThrough& w : write_through_)
    if (w.line == line && w.issue > now) return false;  // merges into the line's waiting write
  return static_cast<int>(write_through_.size()) >= p_.system_write_entries;
}

Task<void> Cpu::reserve_write_through(Addr line) {
  // A full buffer frees its oldest entry when that line reaches the L3.
  while (write_through_full(line)) {
    Tick first = write_through_.front().done;
    for (const WriteThrough& w : write_through_) first = std::min(first, w.done);
    co_await sim_.delay(first - sim_.now());
  }
}

void Cpu::note_write_done(Addr line) {
  // Full-system completion (cpu.hpp): the written line goes through to the L3 of this core's die, in the
  // first free of system_write_slots, a round trip away plus the L3's occupancy. A line whose earlier
  // write-through has not left yet carries this store too. The room was reserved (reserve_write_through).
  if (!arm_ || p_.system_write_entries == 0) return;
  const Tick now = sim_.now();
  for (const WriteThrough& w : write_through_)
    if (w.line == line && w.issue > now) return;
  auto& icn = fab_.interconnect();
  const int l3 = icn.home_endpoint(icn.topology().node_of_cpu(id_));  // the die's L3 / home-agent stop
  const Tick trip = icn.latency(id_, l3) + p_.system_write_occupancy + icn.latency(l3, id_);
  Tick& slot = *std::min_element(write_slot_free_.begin(), write_slot_free_.end());
  const Tick issue = std::max(now, slot);
  slot = issue + trip;
  write_through_.push_back({line, issue, slot});
  last_system_done_ = std::max(last_system_done_, slot);
}

Task<void> Cpu::drain_store_buffer() {
  // (The buffer is usually empty: then no coroutine frame.)
  return sb_.empty() ? Task<void>::done() : wait_stores_written(stores_buffered_);
}

Task<void> Cpu::wait_stores_written(std::uint64_t seq) {
  while (!stores_written_through(seq)) co_await sb_changed_.wait(sim_, "store buffer drain");
}

Task<void> Cpu::wait_device_fence(Tick until) {
  if (until > sim_.now()) co_await sim_.delay(until - sim_.now());
}

Task<void> Cpu::wait_system_completion() {
  co_await drain_store_buffer();
  if (last_system_done_ > sim_.now()) co_await sim_.delay(last_system_done_ - sim_.now());
  const Tick posted = posted_writes_arrived();
  if (posted > sim_.now()) co_await sim_.delay(posted - sim_.now());
}

// ------------------------------------------------------ posted MMIO writes ---
Tick Cpu::posted_writes_arrived() const {
  Tick done = 0;
  for (const auto& [device, arrival] : device_writes_) done = std::max(done, arrival);
  return done;
}

Task<void> Cpu::order_device_access(bool write) {
  const std::uint64_t through = write ? store_fence_ : load_store_fence_;
  if (!stores_written_through(through)) co_await wait_stores_written(through);
  const std::uint64_t loads = std::max(load_fence_, last_acquire_);  // a dmb all/ld or an acquire before it
  if (!loads_bound_through(loads)) co_await wait_loads_bound(loads);
  const Tick fence = write ? device_store_fence_ : device_load_fence_;
  if (fence > sim_.now()) co_await wait_device_fence(fence);
}

Tick Cpu::post_device_write(int device, Tick arrival) {
  for (auto& [ep, last] : device_writes_)
    if (ep == device) return last = std::max(last, arrival);
  device_writes_.emplace_back(device, arrival);
  return arrival;
}

Tick Cpu::device_writes_arrived(int device) const {
  for (const auto& [ep, last] : device_writes_)
    if (ep == device) return last;
  return 0;
}

// ------------------------------------------ atomics and store-exclusives ---
Cpu::DirectWriteAfter Cpu::direct_write_after(bool release) const {
  // As a store entering the buffer now would wait: release and x86, every
  // earlier access; else the dmb fences and an earlier acquire.
  if (release || !arm_) return {stores_buffered_, loads_issued_};
  return {store_fence_, std::max(load_fence_, last_acquire_)};
}

const Cpu::Pending* Cpu::newest_overlap(Addr a, int size) const {
  for (auto it = sb_.rbegin(); it != sb_.rend(); ++it)
    if (fabric::overlaps(it->addr, it->size, a, size)) return &*it;
  return nullptr;
}

Tick Cpu::write_device_fence(bool release) const {
  return release ? std::max(device_store_fence_, posted_writes_arrived()) : device_store_fence_;
}

Task<void> Cpu::order_direct_write(Addr a, int size, bool release) {
  // Nothing to wait for, the usual case: no coroutine frame. (The conditions
  // are wait_direct_write_order's, in its order, as they stand now.)
  const DirectWriteAfter after = direct_write_after(release);
  if (stores_written_through(after.stores) && newest_overlap(a, size) == nullptr &&
      loads_bound_through(after.loads) && !load_blocked(loads_issued_ + 1, fabric::line_of(a), 0) &&
      write_device_fence(release) <= sim_.now())
    return Task<void>::done();
  return wait_direct_write_order(a, size, release);
}

Task<void> Cpu::wait_direct_write_order(Addr a, int size, bool release) {
  // What a store entering the buffer now would wait for, and then the
  // buffered stores to its bytes (no forwarding into a read-modify-write).
  const DirectWriteAfter after = direct_write_after(release);
  if (!stores_written_through(after.stores)) co_await wait_stores_written(after.stores);
  if (const Pending* older = newest_overlap(a, size)) co_await wait_stores_written(older->seq);
  if (!loads_bound_through(after.loads)) co_await wait_loads_bound(after.loads);
  const Addr line = fabric::line_of(a);
  if (load_blocked(loads_issued_ + 1, line, 0)) co_await wait_loads(loads_issued_ + 1, line, 0);
  const Tick fence = write_device_fence(release);
  if (fence > sim_.now()) co_await wait_device_fence(fence);
}

Task<bool> Cpu::store_exclusive(Addr a, int size, std::uint64_t v, Order o) {
  ++stats_.stores;
  co_await order_direct_write(a, size, o == Order::release || o == Order::full);
  const Addr line = fabric::line_of(a);
  co_await reserve_write_through(line);
  Tick lat = co_await fab_.acquire(id_, line, true);
  if (!fab_.monitor_valid(id_, line)) {
    ++stats_.llsc_retries;
    co_await sim_.delay(lat);
    co_return false;
  }
  fab_.write(id_, a, size, v);
  note_write_done(line);
  co_await sim_.delay(lat + p_.store_commit);
  co_return true;
}

Task<std::uint64_t> Cpu::rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare, Order o) {
  ++stats_.atomics;
  // The read half orders like a load (a dmb before it, an acquire after a
  // buffered stlr: RCsc); the write half like a store (order_direct_write).
  // Every x86 locked operation is a full barrier.
  const bool release = o == Order::release || o == Order::full;
  std::uint64_t stores_first = load_store_fence_;
  if (o == Order::acquire && arm_) stores_first = std::max(stores_first, release_through_);
  if (!stores_written_through(stores_first)) co_await wait_stores_written(stores_first);
  co_await order_direct_write(a, size, release);
  if (!arm_ && !sb_.empty()) co_await drain_store_buffer();
  Tick fence = device_load_fence_;
  if (fence > sim_.now()) co_await wait_device_fence(fence);
  const Addr line = fabric::line_of(a);
  const std::uint64_t mask = fabric::size_mask(size);
  if (fab_.params().atomic_place(op, /*posted=*/false) != fabric::AtomicPlace::near && (!arm_ || p_.lse)) {
    std::uint64_t old = co_await fab_.atomic_far(id_, a, size, op, operand & mask, compare & mask, /*posted=*/false);
    co_await sim_.delay(p_.atomic_latency);
    co_return old;
  }
  if (!arm_ || p_.lse) {
    // The line is fetched exclusive, the atomic executes for atomic_latency,
    // and its write becomes visible at the end. A line snooped away during
    // execution is fetched again (the hardware would hold the snoop instead);
    // the read-modify-write itself happens in one instant, so it is atomic.
    co_await reserve_write_through(line);
    Tick lat = co_await fab_.acquire(id_, line, true);
    // Locked operations of SMT siblings share the core: they run one at a time.
    Tick& core_busy = fab_.core_atomic_busy(id_);
    Tick start = std::max(sim_.now(), core_busy);
    core_busy = start + lat + p_.atomic_latency;
    co_await sim_.delay(core_busy - sim_.now());
    co_await fab_.acquire(id_, line, true);
    std::uint64_t old = fab_.read(id_, a, size);
    std::uint64_t next = fabric::apply_rmw(op, old, operand, compare) & mask;
    last_load_ = {a, size, old};
    if (op != RmwOp::cas || old == (compare & mask)) {
      fab_.write(id_, a, size, next);
      note_write_done(line);
      last_load_.value = next;
    }
    co_return old;
  }
  // LDXR / STXR loop.
  for (;;) {
    Tick lat = co_await fab_.acquire(id_, line, false);
    std::uint64_t old = fab_.read(id_, a, size);
    fab_.set_monitor(id_, line);
    co_await sim_.delay(lat);
    if (op == RmwOp::cas && old != (compare & mask)) co_return old;  // failed compare: clrex
    std::uint64_t next = fabric::apply_rmw(op, old, operand, compare) & mask;
    co_await reserve_write_through(line);
    lat = co_await fab_.acquire(id_, line, true);
    if (!fab_.monitor_valid(id_, line)) {  // someone wrote the line since the LDXR
      ++stats_.llsc_retries;
      co_await sim_.delay(lat);
      continue;
    }
    fab_.write(id_, a, size, next);
    note_write_done(line);
    co_await sim_.delay(lat + p_.atomic_latency);
    co_return old;
  }
}

}  // namespace cohsim::cpu
