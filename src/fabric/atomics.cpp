// Read-modify-write atomics executed away from the core: at the line's home,
// or in the requester die's last-level cache.
#include "fabric_state.hpp"

#include <algorithm>

namespace cohsim::fabric {

using sim::Task;
using namespace detail;

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

AtomicClass atomic_class(RmwOp op, bool posted) {
  if (op == RmwOp::cas) return AtomicClass::cas;
  if (op == RmwOp::swap) return AtomicClass::swp;
  return posted ? AtomicClass::st_op : AtomicClass::ld_op;
}

Task<std::uint64_t> Fabric::atomic_far(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                       std::uint64_t compare, bool posted) {
  switch (p_.atomic_place(op, posted)) {
    case AtomicPlace::near:
      throw sim::SimError("atomic_far called for an atomic this platform executes near");
    case AtomicPlace::llc:
      if (p_.llc_per_die) return atomic_in_llc(cpu, a, size, op, operand, compare);
      return atomic_at_home(cpu, a, size, op, operand, compare);  // a memory-side LLC sits at the home
    case AtomicPlace::home: break;
  }
  return atomic_at_home(cpu, a, size, op, operand, compare);
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
  forget_in_llcs(line);
  std::uint64_t old = get_bytes(h.mem, a, size);
  if (checking_) check_value(a, size, old);  // against the coherence order before this write
  const std::uint64_t mask = size_mask(size);
  const std::uint64_t next = apply_rmw(op, old, operand, compare) & mask;
  put_bytes(h.mem, a, size, next);
  if (checking_) {
    set_golden(h, h.mem, nullptr);  // the home's memory is now the latest value
    if (write_observer_) write_observer_(a, size, next);
  }
  home_release(line);
  co_await sim_.delay(icn_.send(home_ep, cpu, sim_.now()) - sim_.now());
  co_return old;
}

Task<std::uint64_t> Fabric::atomic_in_llc(int cpu, Addr a, int size, RmwOp op, std::uint64_t operand,
                                          std::uint64_t compare) {
  check_access(a, size);
  const Addr line = line_of(a);
  const int agent = llc_agent(agent_die(core_of(cpu)));
  const int l3 = agent_endpoint(agent);
  // Through the core's private levels (its own copy, if any, is the L3's to
  // take), over the die network, then the L3's tag look-up.
  co_await sim_.delay(p_.l2.latency);
  co_await sim_.delay(icn_.send(cpu, l3, sim_.now()) - sim_.now());
  co_await sim_.delay(p_.llc_tag_latency);
  // The L3 takes the line exclusive (every core's copy invalidated, the
  // requester's too); a line snooped away before the atomic ran is taken again.
  while (!holds_writable(agent, line)) co_await obtain(agent, l3, line, /*for_write=*/true);
  CacheLine& cl = held_entry(agent, line);  // (writable: the loop above)
  // The atomic unit: serial (one atomic on the line at a time: data array
  // read, then the ALU) or pipelined (a new atomic every atomic_occupancy,
  // each done after the data read + ALU latency). The value changes now, in
  // this atomic's place in the line's order; a snoop waits until the last
  // started atomic wrote (owner_line_alu_busy), so nobody sees the line
  // between a read and its write.
  const Tick start = std::max(sim_.now(), cl.alu_busy);
  const Tick latency = p_.llc.latency + p_.llc_atomic_latency;
  cl.alu_busy = start + (p_.llc_atomic_pipelined ? p_.llc_atomic_occupancy : latency);
  const Tick done = start + latency;
  cl.alu_done = std::max(cl.alu_done, done);
  ++stats_.llc_atomics;
  LineStats& ls = stats_of(home_line(line), line);
  ++ls.llc_atomics;
  ls.touched.set(static_cast<std::size_t>(core_of(cpu)));
  const std::uint64_t old = get_bytes(cl.data, a, size);
  if (checking_) check_value(a, size, old);
  const std::uint64_t next = apply_rmw(op, old, operand, compare) & size_mask(size);
  if (op != RmwOp::cas || old == (compare & size_mask(size))) {
    change_entry(cl, [&] {
      cl.state = CacheState::M;
      put_bytes(cl.data, a, size, next);
    });
    if (checking_) {
      set_golden(*cl.home, cl.data, &cl);
      check_line(line);
      if (write_observer_) write_observer_(a, size, next);
    }
  }
  co_await sim_.delay(done - sim_.now());
  co_await sim_.delay(icn_.send(l3, cpu, sim_.now()) - sim_.now());
  co_return old;
}

Tick Fabric::owner_line_alu_busy(int agent, Addr line) const {
  const CacheLine* cl = cache(agent).find(line);
  return cl == nullptr ? 0 : cl->alu_done;
}

void Fabric::forget_in_llcs(Addr line) {
  if (p_.llc_per_die)
    for (TagArray& tags : llc_) tags.remove(line);
}

}  // namespace cohsim::fabric
