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

}  // namespace cohsim::fabric
