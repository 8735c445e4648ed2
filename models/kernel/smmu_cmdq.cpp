// arm_smmu_cmdq_issue_cmdlist and its helpers, Linux v5.9
// drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c. The space-allocation step of
// each variant is in smmu_cmdq_claim.cpp; this file holds what they share:
// writing entries, the valid bitmap, the owner's hand-off to the SMMU, the
// shared/exclusive cmdq lock and the CMD_SYNC wait with queue_poll.
#include "models/kernel/smmu_cmdq.hpp"

#include <climits>
#include <fmt/format.h>
#include <stdexcept>

namespace cohsim::models {

using cpu::BarrierType;
using cpu::Domain;
using cpu::Order;
using fabric::RmwOp;

namespace {
constexpr std::uint64_t kWord = 64;             // BITS_PER_LONG
constexpr int kPollSpinCount = 10;              // ARM_SMMU_POLL_SPIN_COUNT
constexpr Tick kUdelayUnit = 1'000'000;         // udelay(1): 1 us
std::int32_t as_int(std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }
}  // namespace

CmdqPublishBarrier parse_publish_barrier(const std::string& name) {
  if (name == "dma-wmb") return CmdqPublishBarrier::dma_wmb;
  if (name == "none") return CmdqPublishBarrier::none;
  throw std::invalid_argument("unknown command publication barrier " + name);
}

CmdqVariant parse_cmdq_variant(const std::string& name) {
  if (name == "cmpxchg") return CmdqVariant::cmpxchg;
  if (name == "spinlock-fallback") return CmdqVariant::spinlock_fallback;
  if (name == "fetch-add") return CmdqVariant::fetch_add;
  throw std::invalid_argument("unknown command queue variant " + name);
}

CmdqSpinlockLine parse_spinlock_line(const std::string& name) {
  if (name == "owner-prod") return CmdqSpinlockLine::with_owner_prod;
  if (name == "own") return CmdqSpinlockLine::own_line;
  throw std::invalid_argument("unknown spinlock placement " + name);
}

CmdqFallbackEntry parse_fallback_entry(const std::string& name) {
  if (name == "cmpxchg-first") return CmdqFallbackEntry::cmpxchg_first;
  if (name == "lock-first") return CmdqFallbackEntry::lock_first;
  if (name == "always-lock") return CmdqFallbackEntry::always_lock;
  throw std::invalid_argument("unknown fallback entry " + name);
}

SmmuCmdq::SmmuCmdq(CmdqVariant v, devices::Smmu& smmu, fabric::MemoryMap& mem, const topo::Topology& topo,
                   CmdqSpinlockLine slock_line)
    : variant_(v), smmu_(smmu), shift_(smmu.max_n_shift()), cpu_count_(topo.cpu_count()),
      stats_(static_cast<std::size_t>(topo.cpu_count())) {
  // struct arm_smmu_device (and the cmdq in it) is devm_kzalloc'ed on the
  // SMMU's node; the valid map likewise (devm_kcalloc in arm_smmu_cmdq_init).
  if (smmu.queue_entries() < 64)
    throw std::invalid_argument("arm_smmu_cmdq: the valid map needs a queue of at least 64 entries (BITS_PER_LONG)");
  const int node = smmu.params().node;
  // struct arm_smmu_cmdq { q; valid_map; owner_prod; lock; slock; }: the
  // valid_map pointer, owner_prod and lock follow q on one line (q ends
  // with the read-only prod_reg/cons_reg pointers, which the model does not
  // load: their line is never written, so it stays shared in every cache);
  // the spinlock after the 4-byte lock, or on a line of its own.
  const bool slock_with_owner_prod =
      v == CmdqVariant::spinlock_fallback && slock_line == CmdqSpinlockLine::with_owner_prod;
  llq_ = mem.alloc(node, 64, 64, "arm_smmu_cmdq.q.llq");
  valid_map_ptr_ = mem.alloc(node, 64, 64,
                             slock_with_owner_prod ? "arm_smmu_cmdq.valid_map_ptr+owner_prod+lock+slock"
                                                   : "arm_smmu_cmdq.valid_map_ptr+owner_prod+lock");
  owner_prod_ = valid_map_ptr_ + 8;
  lock_ = owner_prod_ + 4;
  const std::uint64_t map_bytes = std::max<std::uint64_t>(64, static_cast<std::uint64_t>(smmu.queue_entries()) / 8);
  valid_map_ = mem.alloc(node, map_bytes, 64, "arm_smmu_cmdq.valid_map");
  if (v == CmdqVariant::fetch_add) cons_ = mem.alloc(node, 64, 64, "arm_smmu_cmdq.cons");
  if (v == CmdqVariant::spinlock_fallback) {
    slock_ = slock_with_owner_prod ? lock_ + 4 : mem.alloc(node, 64, 64, "arm_smmu_cmdq.slock");
    qnodes_.emplace(mem, topo);
  }
}

int SmmuCmdq::max_entries_per_call() const {
  const int entries = smmu_.queue_entries();
  // fetch-add: a CPU claims before it checks space, so every CPU's largest
  // call must fit at once: min(entries / CPUs - 1, 64). Otherwise a call
  // only has to fit the queue (the kernel batches at most CMDQ_BATCH_ENTRIES).
  if (variant_ == CmdqVariant::fetch_add) return std::min(entries / cpu_count_ - 1, 64);
  return std::min(entries, 64);
}

std::uint32_t SmmuCmdq::inc_prod_n(std::uint32_t prod, std::uint32_t n) const {
  // queue_inc_prod_n: the overflow (OWNED) bit is kept, index and wrap advance.
  const std::uint32_t ovf = prod & 0x80000000u;
  const std::uint32_t p = (q_wrp(prod) | q_idx(prod)) + n;
  return ovf | q_wrp(p) | q_idx(p);
}

bool SmmuCmdq::has_space(std::uint64_t llq, std::uint32_t n) const {
  const auto prod = static_cast<std::uint32_t>(llq), cons = static_cast<std::uint32_t>(llq >> 32);
  const std::uint32_t space = q_wrp(prod) == q_wrp(cons) ? (1u << shift_) - (q_idx(prod) - q_idx(cons))
                                                         : q_idx(cons) - q_idx(prod);
  return space >= n;
}

bool SmmuCmdq::full(std::uint64_t llq) const {
  const auto prod = static_cast<std::uint32_t>(llq), cons = static_cast<std::uint32_t>(llq >> 32);
  return q_idx(prod) == q_idx(cons) && q_wrp(prod) != q_wrp(cons);
}

// ------------------------------------------------------------ the call ---
Task<void> SmmuCmdq::issue_cmdlist(cpu::Cpu& c, const CmdqCommand* cmds, int n, bool sync) {
  CmdqCpuStats& s = stats_.at(static_cast<std::size_t>(c.id()));
  auto& sim = c.sim();
  if (n + (sync ? 1 : 0) > max_entries_per_call())
    throw sim::SimError(fmt::format("arm_smmu_cmdq_issue_cmdlist: {} entries exceed the per-call limit {}",
                                    n + (sync ? 1 : 0), max_entries_per_call()));
  ++s.calls;
  Tick t = sim.now();
  // 1. Allocate some space in the queue (interrupts off: local_irq_save).
  // v5.9 restores them only after step 5, so the owner's waits and the
  // CMD_SYNC poll spin with interrupts disabled: no interrupt is taken there.
  const bool were_enabled = c.interrupts_enabled();
  c.local_irq_disable();
  Claim claim = variant_ == CmdqVariant::fetch_add ? co_await claim_fetch_add(c, n, sync)
                                                   : co_await claim_cmpxchg(c, n, sync, variant_ == CmdqVariant::spinlock_fallback);
  account(c, s, CmdqPhase::claim, t, sim.now());
  t = sim.now();
  const std::uint32_t prod = claim.prod;
  const std::uint32_t head = prod + static_cast<std::uint32_t>(n + (sync ? 1 : 0));  // unwrapped; wrapped below

  // 2. Write our commands into the queue (queue_write: one store per dword).
  auto pos = [&](int i) { return variant_ == CmdqVariant::fetch_add ? wrapped(prod + static_cast<std::uint32_t>(i))
                                                                     : inc_prod_n(prod, static_cast<std::uint32_t>(i)); };
  for (int i = 0; i < n; ++i) {
    const Addr e = entry_addr(pos(i));
    smmu_.expect_command(q_idx(pos(i)), cmds[i][0], cmds[i][1]);
    co_await c.store(e, 8, cmds[i][0]);
    co_await c.store(e + 8, 8, cmds[i][1]);
  }
  const std::uint32_t sync_prod = pos(n);
  if (sync) {
    // arm_smmu_cmdq_build_sync_cmd: the MSI address is the CMD_SYNC entry itself.
    const Addr e = entry_addr(sync_prod);
    auto [d0, d1] = devices::cmd_sync_msi(e);
    smmu_.expect_command(q_idx(sync_prod), d0, d1);
    co_await c.store(e, 8, d0);
    co_await c.store(e + 8, 8, d1);
    // Hold the lock shared so the queue cannot wrap twice unnoticed
    // (fetch-add: the owner takes it once for every gathered CMD_SYNC).
    if (variant_ != CmdqVariant::fetch_add) co_await shared_lock(c, 1);
  }
  // 3. Mark our slots as valid, ensuring commands are visible first.
  if (publish_barrier_ == CmdqPublishBarrier::dma_wmb) co_await c.dmb(Domain::osh, BarrierType::st);  // dma_wmb
  const std::uint32_t end = variant_ == CmdqVariant::fetch_add ? wrapped(head) : inc_prod_n(prod, static_cast<std::uint32_t>(n + (sync ? 1 : 0)));
  co_await poll_set_valid_map(c, variant_ == CmdqVariant::fetch_add ? wrapped(prod) : prod, end, true);
  account(c, s, CmdqPhase::write, t, sim.now());
  t = sim.now();

  // 4. If we are the owner, take control of the SMMU hardware.
  if (claim.owner) {
    ++s.owner_batches;
    co_await owner_publish(c, prod, s);
    account(c, s, CmdqPhase::owner, t, sim.now());
    t = sim.now();
  }

  // 5. If we are inserting a CMD_SYNC, wait for it to complete.
  if (sync) {
    co_await wait_for_sync(c, sync_prod, s);
    const std::uint32_t cons_after =
        variant_ == CmdqVariant::fetch_add ? prod + static_cast<std::uint32_t>(n) + 1 : inc_prod_n(sync_prod, 1);
    co_await shared_unlock_after_sync(c, cons_after);
    account(c, s, CmdqPhase::sync, t, sim.now());
  }
  if (were_enabled) co_await c.local_irq_enable();  // local_irq_restore(flags)
}

// Step 4: a. wait for the previous owner; b. stop gathering; c. wait for the
// gathered entries to be valid; d. advance the SMMU's PROD; e. hand over.
Task<void> SmmuCmdq::owner_publish(cpu::Cpu& c, std::uint32_t start, CmdqCpuStats& s) {
  const std::uint32_t op_value = variant_ == CmdqVariant::fetch_add ? start : (start & ~0x80000000u);
  co_await c.spin_until(owner_prod_, 4, [op_value](std::uint64_t v) { return static_cast<std::uint32_t>(v) == op_value; },
                        Order::relaxed, "arm_smmu_cmdq: previous owner (owner_prod)");
  std::uint32_t end = 0;
  if (variant_ == CmdqVariant::fetch_add) {
    // One fetch_andnot clears count and sync_count; the old word tells the batch.
    const std::uint64_t old = co_await c.rmw(llq_, 8, RmwOp::andnot, 0xffffffff00000000ull, 0, Order::relaxed);
    end = static_cast<std::uint32_t>(old);
    const auto syncs = static_cast<std::int32_t>(old >> 48);
    co_await poll_set_valid_map(c, wrapped(start), wrapped(end), false);
    if (syncs > 0) co_await shared_lock(c, syncs);
    co_await devices::mmio_write(c, smmu_, devices::SmmuReg::cmdq_prod, wrapped(end));
  } else {
    // atomic_fetch_andnot_relaxed(OWNED, &llq.atomic.prod): LDCLR on the prod half.
    end = static_cast<std::uint32_t>(co_await c.rmw(llq_, 4, RmwOp::andnot, 0x80000000u, 0, Order::relaxed));
    end &= ~0x80000000u;
    co_await poll_set_valid_map(c, start, end, false);
    co_await devices::mmio_write(c, smmu_, devices::SmmuReg::cmdq_prod, end);  // writel_relaxed
  }
  if (recording_) batches_.push_back({c.id(), op_value, end});
  co_await c.store(owner_prod_, 4, end, Order::release);  // atomic_set_release
}

// __arm_smmu_cmdq_poll_set_valid_map: per 64-bit word of the range, either
// flip our bits (atomic_long_xor) or wait until they show the valid
// polarity of this lap of the queue (atomic_long_cond_read_relaxed).
Task<void> SmmuCmdq::poll_set_valid_map(cpu::Cpu& c, std::uint32_t sprod, std::uint32_t eprod, bool set) {
  sprod &= ~0x80000000u;
  eprod &= ~0x80000000u;
  const std::uint32_t ewidx = q_idx(eprod) / kWord, ebidx = q_idx(eprod) % kWord;
  struct Span {
    Addr word;
    std::uint64_t mask, valid;
    cpu::LoadFuture first;  ///< the wait's first read, issued with the others'
  };
  std::vector<Span> spans;
  // cmdq->valid_map: the array's address is a field of struct arm_smmu_cmdq,
  // loaded (at least once per call; the compiler may hoist it out of the
  // loop) before the first word can be addressed. It shares its line with
  // owner_prod and lock, which the owners and CMD_SYNC callers write.
  if (sprod != eprod) (void)co_await c.load(valid_map_ptr_, 8);
  for (std::uint32_t p = sprod; p != eprod;) {
    const std::uint32_t swidx = q_idx(p) / kWord, sbidx = q_idx(p) % kWord;
    std::uint32_t limit = kWord;
    if (swidx == ewidx && sbidx < ebidx) limit = ebidx;
    const std::uint64_t mask = (limit == 64 ? ~0ull : ((1ull << limit) - 1)) & ~((1ull << sbidx) - 1);
    spans.push_back({valid_map_ + 8ull * swidx, mask, (q_wrp(p) ? 0ull : ~0ull) & mask, {}});
    p = inc_prod_n(p, limit - sbidx);
  }
  for (Span& w : spans) {
    if (set) co_await c.rmw(w.word, 8, RmwOp::bit_xor, w.mask, 0, Order::relaxed);
    else w.first = c.issue_load(w.word, 8);  // independent loads: in flight together
  }
  if (set) co_return;
  for (Span& w : spans) {
    if (((co_await w.first.value()) & w.mask) == w.valid) continue;
    co_await c.spin_until(w.word, 8, [mask = w.mask, valid = w.valid](std::uint64_t v) { return (v & mask) == valid; },
                          Order::relaxed, "arm_smmu_cmdq: gathered entries valid (valid_map)");
  }
}

// queue_poll: cpu_relax for the first spins, then udelay(1), 2, 4... with
// the spin count reset. (qp.wfe is false: no SEV here, and the MSI wait
// clears it anyway.)
Task<void> SmmuCmdq::queue_poll(cpu::Cpu& c, Poll& qp, CmdqCpuStats& s) {
  if (++qp.spin_cnt < kPollSpinCount) {
    co_await c.compute_cycles(1);  // cpu_relax: yield
    co_return;
  }
  const Tick t = c.sim().now();
  ++s.udelays;
  co_await c.compute(static_cast<Tick>(qp.delay) * kUdelayUnit);
  qp.delay *= 2;
  qp.spin_cnt = 0;
  account(c, s, CmdqPhase::backoff, t, c.sim().now());
}

// __arm_smmu_cmdq_poll_until_msi: smp_cond_load_relaxed(cmd, !VAL ||
// queue_poll(&qp)) with qp.wfe = false. On arm64 each round is a load, the
// condition (which calls queue_poll when false), then __cmpwait_relaxed:
// LDXR, and WFE unless the value already changed.
// queue_poll also gives up after ARM_SMMU_POLL_TIMEOUT_US (-ETIMEDOUT; the
// caller logs "CMD_SYNC timeout"): the deadline is checked each round, and an
// event at the deadline ends a WFE as the kernel's event stream would.
Task<void> SmmuCmdq::wait_for_sync(cpu::Cpu& c, std::uint32_t sync_prod, CmdqCpuStats& s) {
  const Addr e = entry_addr(sync_prod);
  Poll qp;
  Tick backoff_before = s.phase[static_cast<std::size_t>(CmdqPhase::backoff)];
  const Tick start = c.sim().now();
  if (sync_waits_.empty()) sync_waits_.resize(static_cast<std::size_t>(cpu_count_));
  SyncWait& w = sync_waits_.at(static_cast<std::size_t>(c.id()));
  w.waiting = true;
  w.deadline = start + sync_timeout_;
  if (!w.check_scheduled) {
    w.check_scheduled = true;
    c.sim().schedule(w.deadline, &SmmuCmdq::sync_deadline_event, this, static_cast<std::uint64_t>(c.id()));
  }
  for (;;) {
    const std::uint64_t v = co_await c.load(e, 4, Order::relaxed);
    if (v == 0) break;
    if (c.sim().now() >= w.deadline) {
      sync_timeouts_.push_back(CmdSyncTimeout{c.id(), sync_prod, start, c.sim().now()});
      break;
    }
    ++s.sync_spins;
    co_await queue_poll(c, qp, s);
    const std::uint64_t again = co_await c.load(e, 4, Order::relaxed);  // LDXR
    if (again != v || c.sim().now() >= w.deadline) continue;
    w.asleep = &c;
    co_await c.wait_for_change(e, "arm_smmu_cmdq: CMD_SYNC MSI (WFE)");
    w.asleep = nullptr;
    ++s.sync_wakeups;
  }
  w.waiting = false;
  // The backoff inside this wait is reported as backoff, not as sync.
  const Tick backoff = s.phase[static_cast<std::size_t>(CmdqPhase::backoff)] - backoff_before;
  s.phase[static_cast<std::size_t>(CmdqPhase::sync)] -= std::min(backoff, c.sim().now() - start);
}

void SmmuCmdq::sync_deadline_event(void* ctx, std::uint64_t cpu) {
  auto* q = static_cast<SmmuCmdq*>(ctx);
  SyncWait& w = q->sync_waits_[static_cast<std::size_t>(cpu)];
  w.check_scheduled = false;
  if (!w.waiting) return;
  sim::Simulator& sim = q->smmu_.simulator();
  if (sim.now() < w.deadline) {  // a later wait of this CPU: its own deadline
    w.check_scheduled = true;
    sim.schedule(w.deadline, &SmmuCmdq::sync_deadline_event, ctx, cpu);
    return;
  }
  if (w.asleep != nullptr) w.asleep->end_wait_for_change();
}

std::string CmdSyncTimeout::message() const {
  return fmt::format("CMD_SYNC timeout at {:#010x} on cpu {} (waiting since {:.1f} ns, given up at {:.1f} ns)", prod,
                     cpu, sim::to_ns(since), sim::to_ns(at));
}

// ------------------------------------------------------ the cmdq lock ---
// arm_smmu_cmdq_shared_lock (fetch-add: `count` holders at once).
Task<void> SmmuCmdq::shared_lock(cpu::Cpu& c, std::int32_t count) {
  const std::uint64_t old =
      co_await c.rmw(lock_, 4, RmwOp::add, static_cast<std::uint32_t>(count), 0, Order::relaxed);
  if (as_int(old) >= 0) co_return;
  for (;;) {
    const std::uint64_t val = co_await c.spin_until(lock_, 4, [](std::uint64_t v) { return as_int(v) >= 0; },
                                                    Order::relaxed, "arm_smmu_cmdq: exclusive lock holder");
    const std::uint64_t seen = co_await c.cmpxchg(lock_, 4, val, static_cast<std::uint32_t>(as_int(val) + count),
                                                  Order::relaxed);
    if (seen == val) co_return;
  }
}

// arm_smmu_cmdq_shared_tryunlock, else (last holder) update the driver's
// cons copy first and then arm_smmu_cmdq_shared_unlock.
Task<void> SmmuCmdq::shared_unlock_after_sync(cpu::Cpu& c, std::uint32_t cons_after) {
  const std::uint64_t holders = co_await c.load(lock_, 4, Order::relaxed);
  if (as_int(holders) == 1) {
    if (variant_ == CmdqVariant::fetch_add) co_await c.store(cons_, 4, cons_after);
    else co_await c.store(llq_ + 4, 4, cons_after);  // WRITE_ONCE(cmdq->q.llq.cons, llq.cons)
  }
  co_await c.rmw(lock_, 4, RmwOp::add, 0xffffffffu, 0, Order::release);  // atomic_dec_return_release
}

Task<bool> SmmuCmdq::exclusive_trylock(cpu::Cpu& c) {
  const std::uint64_t old = co_await c.cmpxchg(lock_, 4, 0, 0x80000000u, Order::relaxed);  // INT_MIN
  co_return old == 0;
}

Task<void> SmmuCmdq::exclusive_unlock(cpu::Cpu& c) { co_await c.store(lock_, 4, 0, Order::release); }

// arm_smmu_cmdq_poll_until_not_full: the exclusive lock holder refreshes
// cons from the SMMU's CONS register; the others spin on the llq word.
Task<void> SmmuCmdq::poll_until_not_full(cpu::Cpu& c, std::uint64_t& llq, CmdqCpuStats& s) {
  ++s.queue_full_waits;
  c.local_irq_disable();  // arm_smmu_cmdq_exclusive_trylock_irqsave
  const bool exclusive = co_await exclusive_trylock(c);
  if (exclusive) {
    const std::uint32_t cons = co_await devices::mmio_read(c, smmu_, devices::SmmuReg::cmdq_cons);
    co_await c.store(llq_ + 4, 4, cons);
    co_await exclusive_unlock(c);
    co_await c.local_irq_enable();
    llq = co_await c.load(llq_, 8, Order::relaxed);
    co_return;
  }
  co_await c.local_irq_enable();
  // queue_poll_init: qp.wfe = ARM_SMMU_FEAT_SEV, which this SMMU lacks
  // (modelled without SEV): a busy poll of the llq word.
  Poll qp;
  for (;;) {
    llq = co_await c.load(llq_, 8, Order::relaxed);
    if (!full(llq)) break;
    co_await queue_poll(c, qp, s);
  }
}

}  // namespace cohsim::models
