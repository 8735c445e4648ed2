// The CNA hooks of the qspinlock slow path, as the series' v10/v11
// kernel/locking/qspinlock_cna.h has them (see cna.hpp for the node layout).
#include "models/kernel/cna.hpp"

#include <fmt/format.h>

namespace cohsim::models::kernel {

using cpu::Order;

CnaParams read_cna_params(config::Reader& p, bool used) {
  using config::Spec;
  CnaParams c;
  const std::string threshold = p.choice(
      "cna_threshold", Spec{.doc = "CNA: what ends the preference for the lock holder's node: count (v10-v13, the "
                                   "modelled v11: cna_handoffs intra-node hand-offs) or time (v15: the secondary "
                                   "queue older than cna_threshold_time)",
                            .def = "count", .choices = {"count", "time"}});
  c.threshold = threshold == "count" ? CnaParams::Threshold::count : CnaParams::Threshold::time;
  c.handoff_threshold = static_cast<std::uint32_t>(p.integer(
      "cna_handoffs", Spec{.doc = "CNA count threshold: intra-node hand-offs before the secondary queue is flushed "
                                  "(v11 boot option numa_spinlock_threshold=16, 2^16)",
                           .def = 65536, .min = 1, .max = 2147483648.0}));
  c.time_threshold = p.time("cna_threshold_time",
                            Spec{.doc = "CNA time threshold (v15 qspinlock.numa_spinlock_threshold_ns, default 1 ms)",
                                 .def = "1ms", .min = 1e3, .max = 1e13});
  c.shuffle_reduction = p.choice("cna_shuffle_reduction",
                                 Spec{.doc = "CNA: with an empty secondary queue the head skips the scan with "
                                             "probability 127/128 (on: the series' shuffle reduction) or always scans (off)",
                                      .def = "on", .choices = {"on", "off"}}) == "on";
  const std::string why = "the stock qspinlock has no CNA slow path";
  if (!used)
    for (const char* k : {"cna_threshold", "cna_handoffs", "cna_threshold_time", "cna_shuffle_reduction"}) p.unused(k, why);
  else if (c.threshold == CnaParams::Threshold::count) p.unused("cna_threshold_time", "cna_threshold is count");
  else p.unused("cna_handoffs", "cna_threshold is time");
  return c;
}

KernelSpinlocks::KernelSpinlocks(bool cna, const CnaParams& p, fabric::Fabric& fab, fabric::MemoryMap& mem,
                                 const topo::Topology& topo, std::uint64_t seed)
    : qnodes_(mem, topo, Qnodes::kWideNodeBytes) {
  if (cna && topo.node_count() > 1) cna_.emplace(p, fab, mem, qnodes_, topo, seed);
}

Cna::Cna(CnaParams p, fabric::Fabric& fab, fabric::MemoryMap& mem, const Qnodes& qnodes, const topo::Topology& topo,
         std::uint64_t seed)
    : p_(p),
      qnodes_(qnodes),
      partial_order_(static_cast<std::size_t>(topo.cpu_count()), 0),
      skipped_(static_cast<std::size_t>(topo.cpu_count()), 0) {
  if (qnodes.node_bytes() < Qnodes::kWideNodeBytes)
    throw std::logic_error("CNA needs the 32-byte qnodes (Qnodes::kWideNodeBytes)");
  for (int c = 0; c < topo.cpu_count(); ++c) {
    for (int idx = 0; idx < kQMaxNodes; ++idx) {  // cna_init_nodes_per_cpu
      const Addr n = qnodes.node(c, idx);
      fab.poke(n + kRealNumaNode, 2, static_cast<std::uint64_t>(topo.node_of_cpu(c)));
      fab.poke(n + kNumaNode, 2, static_cast<std::uint64_t>(topo.node_of_cpu(c)));
      fab.poke(n + kEncodedTail, 4, encode_tail(c, idx));
    }
    // DEFINE_PER_CPU(u32, seed): its value at the start is not known; a named stream draws it.
    seed_.push_back(mem.alloc(topo.node_of_cpu(c), 64, 64, fmt::format("cna seed[cpu{}]", c)));
    sim::RandomStream s(seed, fmt::format("cna.seed.cpu{}", c));
    fab.poke(seed_.back(), 4, s.next() & 0xffffffffu);
  }
}

// The list surgery of the scan and the hand-off, on the waiters' nodes.
struct CnaSteps {
  // probably(): next_pseudo_random32 on the per-CPU seed; true with probability 127/128.
  static Task<bool> probably(cpu::Cpu& c, Cna& cna) {
    const Addr seed = cna.seed_.at(static_cast<std::size_t>(c.id()));
    const auto s = static_cast<std::uint32_t>(co_await c.load(seed, 4) * 1664525u + 1013904223u);
    co_await c.store(seed, 4, s);
    co_return (s & ((1u << 7) - 1)) != 0;
  }

  // cna_splice_tail: move the waiters [first, last] from behind `node` to the tail of the secondary queue.
  static Task<void> splice_tail(cpu::Cpu& c, Cna& cna, Addr node, Addr first, Addr last, std::uint64_t count) {
    const Qnodes& q = cna.qnodes_;
    co_await c.store(node + Qnodes::kNext, 8, co_await c.load(last + Qnodes::kNext, 8));  // remove [first, last]
    const auto locked = static_cast<std::uint32_t>(co_await c.load(node + Qnodes::kLocked, 4));
    if (locked <= 1) {  // no secondary queue yet: [first, last] becomes the ring
      co_await c.store(last + Qnodes::kNext, 8, first);
      if (cna.p_.threshold == CnaParams::Threshold::time)  // v15: the secondary queue's birth time
        co_await c.store(node + Cna::kStartTime, 8, static_cast<std::uint64_t>(c.sim().now()) | 1);
    } else {  // append: old tail -> first, last -> head
      const Addr tail_2nd = q.decode_tail(locked);
      const std::uint64_t head_2nd = co_await c.load(tail_2nd + Qnodes::kNext, 8);
      co_await c.store(tail_2nd + Qnodes::kNext, 8, first);
      co_await c.store(last + Qnodes::kNext, 8, head_2nd);
    }
    co_await c.store(node + Qnodes::kLocked, 4, co_await c.load(last + Cna::kEncodedTail, 4));
    cna.stats_.moved += count;
  }

  // cna_scan_main_queue: from pred_start on, the first waiter on the holder's
  // node (or a priority waiter). Found: the waiters skipped since node go to
  // the secondary queue, kLocalWaiterFound. Else the encoded tail of the last
  // waiter looked at (where a later scan resumes).
  static Task<std::uint32_t> scan(cpu::Cpu& c, Cna& cna, Addr node, Addr pred_start) {
    ++cna.stats_.scans;
    const std::uint64_t mine = co_await c.load(node + Cna::kNumaNode, 2);
    Addr last = pred_start;
    Addr cni = co_await c.load(pred_start + Qnodes::kNext, 8);
    // Waiters passed over since node (a resumed scan continues the earlier one's count).
    std::uint64_t& skipped = cna.skipped_.at(static_cast<std::size_t>(c.id()));
    if (pred_start == node) skipped = 0;
    while (cni != 0) {
      const std::uint64_t nn = co_await c.load(cni + Cna::kNumaNode, 2);
      if (nn == kCnaPriorityNode || nn == mine) break;
      last = cni;
      ++skipped;
      cni = co_await c.load(cni + Qnodes::kNext, 8);
    }
    if (cni != 0) {
      if (last != node) {
        const Addr first = co_await c.load(node + Qnodes::kNext, 8);
        co_await splice_tail(c, cna, node, first, last, skipped);
      }
      co_return Cna::kLocalWaiterFound;
    }
    co_return static_cast<std::uint32_t>(co_await c.load(last + Cna::kEncodedTail, 4));
  }
};

Task<void> cna_init_node(cpu::Cpu& c, Cna& cna, Addr node) {
  // v10 5/5: waiters with interrupts off (spin_lock_irq*, interrupt context) are not moved.
  const bool priority = !c.interrupts_enabled();
  const std::uint64_t real = co_await c.load(node + Cna::kRealNumaNode, 2);
  co_await c.store(node + Cna::kNumaNode, 2, priority ? kCnaPriorityNode : real);
  if (cna.p_.threshold == CnaParams::Threshold::count) co_await c.store(node + Cna::kIntraCount, 4, 0);
  else co_await c.store(node + Cna::kStartTime, 8, 0);
}

Task<void> cna_wait_head_or_lock(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node) {
  std::uint32_t& order = cna.partial_order_.at(static_cast<std::size_t>(c.id()));
  bool reached = false;
  if (cna.p_.threshold == CnaParams::Threshold::count) {
    reached = co_await c.load(node + Cna::kIntraCount, 4) >= cna.p_.handoff_threshold;
  } else {
    const std::uint64_t start = co_await c.load(node + Cna::kStartTime, 8);
    reached = start != 0 && c.sim().now() > static_cast<sim::Tick>(start) + cna.p_.time_threshold;
  }
  if (cna.expire_lock_ != 0 && cna.expire_lock_ == lock.val) {
    cna.expire_lock_ = 0;
    reached = true;
  }
  if (reached) {
    order = Cna::kFlush;  // counted in threshold_flushes where a secondary queue is flushed
    co_return;
  }
  // At the head the priority mark has done its work: the node prefers its own node again.
  const std::uint64_t nn = co_await c.load(node + Cna::kNumaNode, 2);
  if (nn == kCnaPriorityNode) co_await c.store(node + Cna::kNumaNode, 2, co_await c.load(node + Cna::kRealNumaNode, 2));
  if (cna.p_.shuffle_reduction && co_await c.load(node + Qnodes::kLocked, 4) <= 1 && co_await CnaSteps::probably(c, cna)) {
    order = Cna::kNoScan;
    ++cna.stats_.skipped_scans;
    co_return;
  }
  order = co_await CnaSteps::scan(c, cna, node, node);
}

Task<bool> cna_try_clear_tail(cpu::Cpu& c, Cna& cna, Qspinlock lock, std::uint32_t val, Addr node) {
  const auto locked = static_cast<std::uint32_t>(co_await c.load(node + Qnodes::kLocked, 4));
  if (locked <= 1) {  // both queues empty: what MCS does
    const auto seen = static_cast<std::uint32_t>(co_await c.cmpxchg(lock.val, 4, val, kQLockedVal, Order::relaxed));
    co_return seen == val;
  }
  // cna_splice_head with an empty main queue: the secondary tail becomes the lock's tail.
  const Addr tail_2nd = cna.qnodes_.decode_tail(locked);
  const std::uint64_t head_2nd = co_await c.load(tail_2nd + Qnodes::kNext, 8);
  co_await c.store(tail_2nd + Qnodes::kNext, 8, 0);  // break the ring before the tail is published
  const std::uint64_t tail_code = co_await c.load(tail_2nd + Cna::kEncodedTail, 4);
  const auto want = static_cast<std::uint32_t>(tail_code) | kQLockedVal;
  const auto seen = static_cast<std::uint32_t>(co_await c.cmpxchg(lock.val, 4, val, want, Order::release));
  if (seen != val) {  // a new waiter came: restore the ring, hand off as usual
    co_await c.store(tail_2nd + Qnodes::kNext, 8, head_2nd);
    co_return false;
  }
  ++cna.stats_.flushes;
  if (cna.partial_order_.at(static_cast<std::size_t>(c.id())) == Cna::kFlush) ++cna.stats_.threshold_flushes;
  co_await c.store(head_2nd + Qnodes::kLocked, 4, 1, Order::release);  // arch_mcs_lock_handoff
  co_return true;
}

Task<void> cna_lock_handoff(cpu::Cpu& c, Cna& cna, Qspinlock lock, Addr node, Addr next) {
  (void)lock;
  std::uint32_t order = cna.partial_order_.at(static_cast<std::size_t>(c.id()));
  // No local waiter at the first scan: look again at those that came since (from where it stopped).
  if (order >= encode_tail(0, 0)) order = co_await CnaSteps::scan(c, cna, node, cna.qnodes_.decode_tail(order));
  std::uint64_t val = 1;
  if (order == Cna::kLocalWaiterFound) {
    next = co_await c.load(node + Qnodes::kNext, 8);  // the scan may have moved waiters
    const std::uint64_t locked = co_await c.load(node + Qnodes::kLocked, 4);
    val = locked != 0 ? locked : 1;  // the secondary queue's tail travels with the lock
    // A secondary queue travels on: the preference with it (kernel-algorithms.md section 8, step 5: a
    // priority waiter that gets the lock keeps the holder's node preferred).
    if (locked > 1) co_await c.store(next + Cna::kNumaNode, 2, co_await c.load(node + Cna::kNumaNode, 2));
    if (cna.p_.threshold == CnaParams::Threshold::count) {
      co_await c.store(next + Cna::kIntraCount, 4, co_await c.load(node + Cna::kIntraCount, 4) + 1);
    } else if (locked > 1) {
      co_await c.store(next + Cna::kStartTime, 8, co_await c.load(node + Cna::kStartTime, 8));
    }
    ++cna.stats_.local_handoffs;
  } else if (const auto locked = static_cast<std::uint32_t>(co_await c.load(node + Qnodes::kLocked, 4)); locked > 1) {
    // No local waiter, or the threshold: the secondary queue goes in front of next; its head gets the lock.
    const Addr tail_2nd = cna.qnodes_.decode_tail(locked);
    const Addr head_2nd = co_await c.load(tail_2nd + Qnodes::kNext, 8);
    co_await c.store(tail_2nd + Qnodes::kNext, 8, next);
    next = head_2nd;
    ++cna.stats_.flushes;
    if (order == Cna::kFlush) ++cna.stats_.threshold_flushes;
  }
  co_await c.store(next + Qnodes::kLocked, 4, val, Order::release);  // arch_mcs_lock_handoff
}

}  // namespace cohsim::models::kernel
