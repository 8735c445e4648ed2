// What a litmus thread runs out of program order, and the checks that keep
// it right: deferred operations (loads waiting for their address, atomics
// without acquire: performed in order, the loads that passed them replayed if
// they overlap), the early read and predicted result of a deferred atomic,
// predicted branches (resolved oldest first, rewound when wrong) and the
// plain stores held meanwhile (entering the store buffer once their branches
// resolve and their data is known). thread_exec.cpp issues the instructions.
#include "thread_exec.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <optional>

namespace cohsim::litmus::detail {

const ThreadExec::Deferred* ThreadExec::forwarding_atomic(fabric::Addr addr, int size) const {
  if (deferred_.empty()) return nullptr;
  const Deferred& d = deferred_.back();
  const Instr& in = thread_.code[static_cast<std::size_t>(d.pc)];
  if (in.op != Op::rmw || (in.rmw_op != fabric::RmwOp::cas && in.rmw_op != fabric::RmwOp::swap)) return nullptr;
  if (in.size != size || !known(d.address) || !known(d.a)) return nullptr;
  const fabric::Addr at = d.address.node < 0 ? d.address.k : nodes_[static_cast<std::size_t>(d.address.node)].value;
  return at == addr ? &d : nullptr;
}

void ThreadExec::issue_atomic_read(const Deferred& d) {
  if (d.predicted) return;
  cpu::LoadFuture& early = futures_[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(d.node)].future)];
  if (early.issued() || !ready_now(d.address)) return;
  const Instr& in = thread_.code[static_cast<std::size_t>(d.pc)];
  const fabric::Addr addr = eval(d.address);
  if (!accessible(addr, in.size, in.size)) return;  // reported when it is performed
  early = cpu_.issue_load(addr, in.size, cpu::Order::relaxed);
}

bool ThreadExec::behind_held(std::int32_t node, fabric::Addr addr, int size) const {
  return std::any_of(held_.begin(), held_.end(),
                     [&](const Held& h) { return h.node < node && fabric::overlaps(h.addr, h.size, addr, size); });
}

void ThreadExec::resume_after(const Deferred& d, std::uint64_t result, int width) {
  rewind(d.at, d.pc + 1);
  set(thread_.code[static_cast<std::size_t>(d.pc)].dst, Val{-1, result}, width);
  bypass_.clear();  // the older ones were checked before it was performed, the younger ones are dropped
  late_.clear();
}

sim::Task<bool> ThreadExec::flush_deferred() {
  while (!deferred_.empty()) {
    // A deferred load whose address has become known goes now, before older
    // ones still waiting (replayed if one of them turns out to overlap it).
    for (std::size_t i = 1; i < deferred_.size(); ++i) {
      const Deferred& d = deferred_[i];
      const Instr& in = thread_.code[static_cast<std::size_t>(d.pc)];
      if (in.op != Op::load || !ready_now(d.address)) continue;
      const fabric::Addr addr = eval(d.address);
      if (!accessible(addr, in.size, in.size) || behind_held(d.node, addr, in.size))
        continue;  // reported (replayed) when its turn comes
      bypass_.push_back(Bypass{addr, in.size, d.node, d.at});
      late_.push_back(Late{addr, in.size, d.node, false});
      futures_[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(d.node)].future)] =
          cpu_.issue_load(addr, in.size, in.order);
      deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
    }
    const Deferred d = deferred_.front();
    if (!ready_now(d.address) || !ready_now(d.a) || !ready_now(d.b)) {
      co_await cpu_.sim().delay(kDeferredPoll);  // an out-of-order core issues each as soon as it can
      continue;
    }
    deferred_.erase(deferred_.begin());
    const Instr& in = thread_.code[static_cast<std::size_t>(d.pc)];
    const fabric::Addr addr = co_await force(d.address);
    if (!accessible(addr, in.size, in.size)) {
      if (!speculation_.empty() && d.at.nodes >= speculation_.front().nodes) {
        // A load deferred on a predicted path, likely the wrong one: no
        // access, a placeholder value; an error only if the path turns out
        // right (resolve_branches).
        Node& placeholder = nodes_[static_cast<std::size_t>(d.node)];
        placeholder.known = true;
        placeholder.value = 0;
        poisoned_.push_back(Poisoned{d.node, d.pc, addr});
        continue;
      }
      fail_address(in, addr, in.size);
    }
    if (behind_held(d.node, addr, in.size)) {
      // It reads an older store still held here: executed again from it (its
      // address is known now), so that it is forwarded the store's data.
      rewind(d.at, d.pc);
      co_return true;
    }
    if (in.op == Op::load) {
      futures_[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(d.node)].future)] =
          cpu_.issue_load(addr, in.size, in.order);
      late_.push_back(Late{addr, in.size, d.node, false});
      continue;
    }
    // An atomic's write cannot be undone: a load that passed an older
    // deferred access and must be replayed is replayed before it is performed.
    if (const Bypass* victim = co_await first_replay(d.node); victim != nullptr) {
      const Checkpoint at = victim->at;
      rewind(at, at.taken_pc);
      co_return true;
    }
    if (in.op == Op::store_excl) {
      // A store-exclusive whose success was predicted: performed now; if it
      // fails, execution resumes after it with status 1 (what used 0 is
      // dropped), else the loads of its bytes that passed it are replayed.
      const std::uint64_t data = co_await force(d.a);
      const bool ok = co_await cpu_.store_exclusive(addr, in.size, mask(data, in.size), in.order);
      if (!ok) {
        resume_after(d, 1, 4);
        co_return true;
      }
      late_.push_back(Late{addr, in.size, d.node, true});
      continue;
    }
    const std::uint64_t x = co_await force(d.a);
    const std::uint64_t compare = in.rmw_op == fabric::RmwOp::cas ? co_await force(d.b) : 0;
    const std::uint64_t old =
        co_await cpu_.rmw(addr, in.size, in.rmw_op, mask(x, in.size), mask(compare, in.size), in.order);
    const bool wrote = in.rmw_op != fabric::RmwOp::cas || old == mask(compare, in.size);
    // The result later instructions used: the prediction, or the read issued
    // early. If the atomic read another value, execution resumes after it
    // with the value it read (what used the other value is dropped).
    const cpu::LoadFuture early = futures_[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(d.node)].future)];
    std::uint64_t used = old;
    if (d.predicted) used = d.prediction;
    else if (early.issued()) used = mask(co_await early.value(), in.size);
    if (used != old) {
      resume_after(d, old, in.dst_width);
      co_return true;
    }
    Node& done = nodes_[static_cast<std::size_t>(d.node)];
    done.value = mask(old, done.width);
    done.known = true;
    late_.push_back(Late{addr, in.size, d.node, wrote});
    // The loads it forwarded to must have had its write (CAS and SWP write Rt).
    std::optional<Checkpoint> refetch;
    for (const Forwarded& f : forwarded_)
      if (f.atomic == d.node && (!wrote || f.value != mask(x, in.size)) && (!refetch || f.at.nodes < refetch->nodes))
        refetch = f.at;
    std::erase_if(forwarded_, [&](const Forwarded& f) { return f.atomic == d.node; });
    if (refetch) {
      rewind(*refetch, refetch->taken_pc);
      co_return true;
    }
  }
  const Bypass* victim = co_await first_replay(std::numeric_limits<std::int32_t>::max());
  std::optional<Bypass> replay;
  if (victim != nullptr) replay = *victim;
  bypass_.clear();
  late_.clear();
  if (!replay) co_return false;
  rewind(replay->at, replay->at.taken_pc);
  co_return true;
}

sim::Task<std::uint64_t> ThreadExec::value_of(std::int32_t node) {
  const Node& n = nodes_[static_cast<std::size_t>(node)];
  if (n.known) co_return n.value;
  const cpu::LoadFuture f = futures_[static_cast<std::size_t>(n.future)];
  co_return co_await f.value();
}

sim::Task<const ThreadExec::Bypass*> ThreadExec::first_replay(std::int32_t before) {
  const Bypass* victim = nullptr;
  for (const Bypass& b : bypass_) {
    if (b.node >= before) continue;
    if (victim != nullptr && victim->node < b.node) continue;  // an older one replays it anyway
    for (const Late& l : late_) {
      if (l.node >= b.node || !fabric::overlaps(b.addr, b.size, l.addr, l.size)) continue;
      bool replay = l.wrote || b.addr != l.addr || b.size != l.size;
      if (!replay) {  // two reads of the same bytes: fine if they read the same value (RSW)
        const std::uint64_t older = mask(co_await value_of(l.node), l.size);
        const std::uint64_t younger = mask(co_await value_of(b.node), b.size);
        replay = older != younger;
      }
      if (replay) {
        victim = &b;
        break;
      }
    }
  }
  co_return victim;
}

void ThreadExec::predict(const Instr& in, Val condition) {
  const bool taken = branch_rng_.below(2) == 1;
  speculation_.push_back(Checkpoint{in.target, pc_ + 1, condition, taken, regs_, flags_,
                                    nodes_.size(), futures_.size()});
  pc_ = taken ? in.target : pc_ + 1;
}

void ThreadExec::check_poisoned() const {
  if (poisoned_.empty()) return;
  const Poisoned& p = poisoned_.front();
  const Instr& in = thread_.code[static_cast<std::size_t>(p.pc)];
  fail_address(in, p.addr, in.size);
}

sim::Task<bool> ThreadExec::resolve_branches(bool release) {
  if (!deferred_.empty() && co_await flush_deferred()) co_return true;  // conditions may need their values
  while (!speculation_.empty()) {
    const Val condition = speculation_.front().condition;
    const bool taken = (co_await force(condition)) != 0;
    const Checkpoint& cp = speculation_.front();
    // A branch to the next instruction (CBNZ W2,L; L:) has one path: the
    // prediction is right either way, nothing is rewound (its condition was
    // awaited: the stores after it are ordered, as ctrl; [W] says).
    if (taken == cp.predicted_taken || cp.taken_pc == cp.fallthrough_pc) {
      speculation_.erase(speculation_.begin());
      continue;
    }
    const Checkpoint wrong = cp;
    rewind(wrong, taken ? wrong.taken_pc : wrong.fallthrough_pc);  // the wrong path's loads and held stores are dropped
    speculation_.clear();
    check_poisoned();
    if (release) co_await release_held();
    co_return true;
  }
  check_poisoned();
  if (release) co_await release_held();
  co_return false;
}

sim::Task<void> ThreadExec::release_held() {
  // The stores of the path that turned out right enter the store buffer, each
  // once its data is known: the oldest whose data is known and that overlaps
  // no older one still waiting goes first. Two plain stores to different
  // locations are not ordered (no [W]; po; [W] in aarch64.cat's ob without a
  // barrier, a release or addr; po), to one location they stay in program
  // order (CoWW): LB+data+data-rfi-fri-rfi-addr.
  // A lingering store (set_linger) goes no earlier than its time.
  std::vector<Held> held = std::move(held_);
  held_.clear();
  while (!held.empty()) {
    const sim::Tick now = cpu_.sim().now();
    std::size_t pick = held.size();
    sim::Tick next = std::numeric_limits<sim::Tick>::max();  // the earliest time a store whose data is known may go
    bool waiting = false;  // some store waits for its data
    for (std::size_t i = 0; i < held.size() && pick == held.size(); ++i) {
      if (!ready_now(held[i].value)) {
        waiting = true;
        continue;
      }
      bool blocked = false;
      for (std::size_t j = 0; j < i && !blocked; ++j)
        blocked = fabric::overlaps(held[j].addr, held[j].size, held[i].addr, held[i].size);
      if (blocked) continue;
      if (held[i].not_before <= now) pick = i;
      else next = std::min(next, held[i].not_before);
    }
    if (pick == held.size()) {  // none may go yet: the only one is awaited, several are polled
      if (next != std::numeric_limits<sim::Tick>::max()) {
        co_await cpu_.sim().delay(waiting ? std::min(next - now, kDeferredPoll) : next - now);
        continue;
      }
      if (held.size() > 1) {
        co_await cpu_.sim().delay(kDeferredPoll);
        continue;
      }
      pick = 0;
    }
    const Held h = held[pick];
    held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick));
    const std::uint64_t v = known(h.value) ? eval(h.value) : co_await force(h.value);
    if (h.not_before > cpu_.sim().now()) co_await cpu_.sim().delay(h.not_before - cpu_.sim().now());
    co_await cpu_.store(h.addr, h.size, mask(v, h.size), cpu::Order::relaxed);
  }
}

}  // namespace cohsim::litmus::detail
