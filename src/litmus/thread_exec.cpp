// Executing one litmus thread on a cpu::Cpu. Memory operations are issued in
// program order (except that on arm64 a load waiting for its address, and
// every result-returning atomic without acquire, is deferred and later plain
// loads go first, replayed if they overlap it; a deferred atomic's read may
// be issued early and a CAS's result predicted, both checked when it is
// performed); the CPU enforces the architecture's ordering. Loads are not
// awaited when issued: a register holds a lazy value over in-flight loads,
// forced only when an address (address dependency), a store's data (data
// dependency), an atomic's operands, a branch condition or the final state
// needs it. An unresolved branch is predicted (stream "litmus.branch") and
// execution goes on, loads included, and (arm64) plain stores are held in the
// runner and forwarded to later loads of their bytes; any other store, an
// exclusive, an atomic, a barrier while stores are held, ISB or the end of the
// thread first resolves every earlier branch (the held stores then enter the
// store buffer), and a wrong prediction rewinds registers and pc and drops
// the loads issued and stores held after it. So control dependencies order
// R->W but not R->R, and ctrl+ISB orders R->R. Instructions other threads may
// write (Variant=ifetch) are fetched from memory before they run.
// speculation.cpp has what runs out of program order and its checks (deferred
// operations, branch resolution, held stores).
#include "thread_exec.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <optional>

namespace cohsim::litmus::detail {

namespace {

constexpr int kMaxSteps = 10000;          ///< instructions one thread may execute in one run
constexpr std::size_t kMaxSpeculation = 8;  ///< predicted branches in flight before resolving
constexpr std::size_t kMaxDeferred = 4;     ///< operations waiting for their address or operands while later loads go

bool serializing(Op op) {
  return op == Op::store || op == Op::store_pair || op == Op::store_excl || op == Op::load_excl || op == Op::rmw ||
         op == Op::mem_alu || op == Op::isb;
}
bool accesses_memory(Op op) {
  return op == Op::load || op == Op::store || op == Op::load_pair || op == Op::store_pair || op == Op::load_excl ||
         op == Op::store_excl || op == Op::rmw || op == Op::mem_alu;
}

}  // namespace

Value Layout::describe(std::uint64_t v) const {
  for (std::size_t i = 0; i < base.size(); ++i)
    if (v >= base[i] && v < base[i] + bytes[i]) return Value{static_cast<std::int64_t>(v - base[i]), static_cast<int>(i)};
  return Value{static_cast<std::int64_t>(v), -1};
}

bool Layout::contains(fabric::Addr a, std::uint64_t n) const {
  for (std::size_t i = 0; i < base.size(); ++i)
    if (a >= base[i] && a + n <= base[i] + bytes[i]) return true;
  return false;
}

ThreadExec::ThreadExec(const Test& test, int index, cpu::Cpu& cpu, sim::RandomStream& branch_rng)
    : test_(test), index_(index), thread_(test.threads[static_cast<std::size_t>(index)]), cpu_(cpu), branch_rng_(branch_rng) {
  for (const Cell& c : test.cells)
    if (c.thread == index) final_registers_.push_back(c.reg);
  exclusive_loads_ = std::any_of(thread_.code.begin(), thread_.code.end(),
                                 [](const Instr& in) { return in.op == Op::load_excl; });
}

void ThreadExec::reset(const Layout& layout) {
  layout_ = &layout;
  regs_.fill(Val{});
  for (const auto& [reg, value] : thread_.init) regs_[static_cast<std::size_t>(reg)] = Val{-1, layout.address_of(value)};
  flags_ = Val{-1, nzcv_of(Instr::FlagOp::sub, 0, 0, 8)};
  nodes_.clear();
  futures_.clear();
  speculation_.clear();
  deferred_.clear();
  bypass_.clear();
  late_.clear();
  forwarded_.clear();
  held_.clear();
  released_ = false;
  pair_node_ = -1;
  pair_store_pc_ = -1;
  posted_reads_.clear();
  poisoned_.clear();
  pc_ = 0;
}

void ThreadExec::fail(const Instr& in, const std::string& what) const {
  throw RunError(fmt::format("{}: P{} line {} '{}': {}", test_.file, index_, in.line, in.text, what));
}

bool ThreadExec::accessible(fabric::Addr addr, int bytes, int align) const {
  return layout_->contains(addr, static_cast<std::uint64_t>(bytes)) && addr % static_cast<std::uint64_t>(align) == 0;
}

void ThreadExec::fail_address(const Instr& in, fabric::Addr addr, int bytes) const {
  fail(in, fmt::format("address {:#x} is not an aligned {}-byte access inside a location of the test", addr, bytes));
}

std::uint64_t ThreadExec::eval(Val v) {
  if (v.node < 0) return v.k;
  Node& n = nodes_[static_cast<std::size_t>(v.node)];
  if (n.known) return n.value;
  const Node copy = n;  // the children are evaluated through nodes_ too
  std::uint64_t r = 0;
  switch (copy.kind) {
    case Kind::load: throw RunError("internal: a load's value used before it was awaited");
    case Kind::alu: r = mask(alu(static_cast<AluOp>(copy.sub), eval(copy.a), eval(copy.b)), copy.width); break;
    case Kind::condition: r = holds(static_cast<Cond>(copy.sub), eval(copy.a), eval(copy.b), copy.width); break;
    case Kind::nzcv: r = nzcv_of(static_cast<Instr::FlagOp>(copy.sub), eval(copy.a), eval(copy.b), copy.width); break;
    case Kind::flag_test: r = holds_on(static_cast<Cond>(copy.sub), eval(copy.a)); break;
    case Kind::select: r = mask(eval(copy.a) != 0 ? eval(copy.b) : eval(copy.c), copy.width); break;
    case Kind::zero_extend32: r = mask(eval(copy.a), 4); break;
    case Kind::sign_extend32: r = static_cast<std::uint64_t>(sign_extend(eval(copy.a), 4)); break;
  }
  Node& m = nodes_[static_cast<std::size_t>(v.node)];
  m.known = true;
  m.value = r;
  return r;
}

int ThreadExec::first_pending_load(Val v) const {
  if (v.node < 0) return -1;
  const Node& n = nodes_[static_cast<std::size_t>(v.node)];
  if (n.known) return -1;
  if (n.kind == Kind::load) return v.node;
  for (Val child : {n.a, n.b, n.c})
    if (int p = first_pending_load(child); p >= 0) return p;
  return -1;
}

bool ThreadExec::waits_on_deferred(Val v) const {
  if (v.node < 0) return false;
  const Node& n = nodes_[static_cast<std::size_t>(v.node)];
  if (n.known) return false;
  if (n.kind == Kind::load) return !futures_[static_cast<std::size_t>(n.future)].issued();
  return waits_on_deferred(n.a) || waits_on_deferred(n.b) || waits_on_deferred(n.c);
}

bool ThreadExec::passes_deferred(const Instr& in, Val address) const {
  return ((in.op == Op::load && deferrable(in)) || holdable(in)) && !waits_on_deferred(address);
}

sim::Task<std::uint64_t> ThreadExec::force(Val v) {
  for (int p = first_pending_load(v); p >= 0; p = first_pending_load(v)) {
    auto& n = nodes_[static_cast<std::size_t>(p)];
    if (!futures_[static_cast<std::size_t>(n.future)].issued())
      throw RunError("internal: a deferred operation's value used before it was performed");
    const std::uint64_t x = co_await futures_[static_cast<std::size_t>(n.future)].value();
    Node& done = nodes_[static_cast<std::size_t>(p)];
    done.value = mask(x, done.width);
    done.known = true;
  }
  co_return eval(v);
}

Val ThreadExec::make(Kind k, std::uint8_t sub, int width, Val a, Val b, Val c) {
  Node n{k, sub, static_cast<std::uint8_t>(width), false, -1, a, b, c, 0};
  nodes_.push_back(n);
  Val v{static_cast<std::int32_t>(nodes_.size() - 1), 0};
  if (known(a) && known(b) && known(c)) {  // constant folding keeps the graph small
    const std::uint64_t r = eval(v);
    nodes_.pop_back();
    return Val{-1, r};
  }
  return v;
}

Val ThreadExec::operand(const Operand& o) {
  if (o.kind == Operand::Kind::none) return Val{};
  if (o.kind == Operand::Kind::imm) return Val{-1, layout_->address_of(o.imm)};
  Val v = o.reg == kZeroRegister ? Val{} : regs_[static_cast<std::size_t>(o.reg)];
  if (o.extend == Extend::sxtw) v = make(Kind::sign_extend32, 0, 8, v);
  else if (o.width == 4 || o.extend == Extend::uxtw) v = make(Kind::zero_extend32, 0, 4, v);
  if (o.shift > 0) v = make(Kind::alu, static_cast<std::uint8_t>(AluOp::lsl), 8, v, Val{-1, static_cast<std::uint64_t>(o.shift)});
  return v;
}

Val ThreadExec::address(const Address& a) {
  Val base = a.base_reg >= 0 ? regs_[static_cast<std::size_t>(a.base_reg)]
                             : Val{-1, layout_->base[static_cast<std::size_t>(a.location)]};
  const std::int64_t offset = a.writeback == Address::Writeback::post ? 0 : a.offset;
  Val v = make(Kind::alu, static_cast<std::uint8_t>(AluOp::add), 8, base, Val{-1, static_cast<std::uint64_t>(offset)});
  if (a.index.kind != Operand::Kind::none) v = make(Kind::alu, static_cast<std::uint8_t>(AluOp::add), 8, v, operand(a.index));
  return v;
}

Val ThreadExec::flags_condition(Cond c) {
  return make(Kind::flag_test, static_cast<std::uint8_t>(c), 8, flags_);
}

void ThreadExec::set(int reg, Val v, int width) {
  if (reg == kZeroRegister) return;
  regs_[static_cast<std::size_t>(reg)] = width == 4 ? make(Kind::zero_extend32, 0, 4, v) : v;
}

ThreadExec::Checkpoint ThreadExec::checkpoint(int pc) const {
  return Checkpoint{pc, pc, Val{}, false, regs_, flags_, nodes_.size(), futures_.size()};
}

void ThreadExec::rewind(const Checkpoint& cp, int pc) {
  regs_ = cp.regs;
  flags_ = cp.flags;
  pc_ = pc;
  nodes_.resize(cp.nodes);
  futures_.resize(cp.futures);  // the loads issued after it are dropped
  const auto later = static_cast<std::int32_t>(cp.nodes);
  std::erase_if(speculation_, [&](const Checkpoint& c) { return c.nodes > cp.nodes; });
  std::erase_if(deferred_, [&](const Deferred& d) { return d.node >= later; });
  std::erase_if(bypass_, [&](const Bypass& b) { return b.node >= later; });
  std::erase_if(late_, [&](const Late& l) { return l.node >= later; });
  std::erase_if(forwarded_, [&](const Forwarded& f) { return f.node >= later; });
  std::erase_if(held_, [&](const Held& h) { return h.node >= later; });
  std::erase_if(posted_reads_, [&](std::int32_t r) { return r >= later; });
  std::erase_if(poisoned_, [&](const Poisoned& p) { return p.node >= later; });
  pair_node_ = -1;
  pair_store_pc_ = -1;
}

bool ThreadExec::holdable(const Instr& in) const {
  return cpu_.is_arm() && in.op == Op::store && in.order == cpu::Order::relaxed &&
         in.addr.writeback == Address::Writeback::none;
}

namespace {
/// Registers and branches only: no access to memory.
bool touches_no_memory(const Instr& in) {
  switch (in.op) {
    case Op::nop:
    case Op::mov:
    case Op::alu:
    case Op::cmp:
    case Op::csel:
    case Op::branch:
    case Op::cbz:
    case Op::cbnz: return true;
    default: return false;
  }
}
}  // namespace

bool ThreadExec::may_pass_held(const Instr& in) const {
  // ISB orders later loads after the branches and addresses before it
  // ((ctrl | addr; po); [ISB]; po; [R]), not stores: the held stores stay
  // held (MP+dmb.sy+data-rfi-fri-rfi-ctrlisb), its branches resolve first.
  // DMB LD orders earlier loads before later accesses, not earlier stores
  // ([R]; po; [dmb.ld]; po; [R | W]): held stores stay held past it too.
  return touches_no_memory(in) || in.op == Op::load || in.op == Op::load_pair || in.op == Op::isb || holdable(in) ||
         (in.op == Op::dmb && in.barrier == cpu::BarrierType::ld);
}

bool ThreadExec::deferrable(const Instr& in) const {
  if (!cpu_.is_arm() || in.addr.writeback != Address::Writeback::none) return false;
  if (in.op == Op::load) return in.order == cpu::Order::relaxed;
  // An atomic with a result and no acquire: later loads are not ordered after it.
  return in.op == Op::rmw && in.dst != kZeroRegister && !in.sets_compare_flags &&
         (in.order == cpu::Order::relaxed || in.order == cpu::Order::release);
}

bool ThreadExec::may_pass_deferred(const Instr& in) const {
  if (touches_no_memory(in) || deferrable(in)) return true;
  // A plain store whose address and data wait for no deferred operation is
  // held (not put in the CPU's store buffer) until they are performed: only
  // a load of its bytes sees it meanwhile, forwarded (W->R to the thread's
  // own store, rfi, is not in aarch64.cat's ob unless (addr|data) precedes it).
  const auto waits = [&](int reg) {
    return reg >= 0 && reg != kZeroRegister && waits_on_deferred(regs_[static_cast<std::size_t>(reg)]);
  };
  return holdable(in) && !waits(in.addr.base_reg) &&
         !(in.addr.index.kind == Operand::Kind::reg && waits(in.addr.index.reg)) &&
         !(in.a.kind == Operand::Kind::reg && waits(in.a.reg));
}

bool ThreadExec::ready_now(Val v) {
  if (known(v)) return true;
  Node& n = nodes_[static_cast<std::size_t>(v.node)];
  if (n.kind == Kind::load) {
    const cpu::LoadFuture& f = futures_[static_cast<std::size_t>(n.future)];
    if (!f.issued()) {  // a deferred atomic's result is needed: its read goes now, if it is the oldest
      if (!deferred_.empty() && deferred_.front().node == v.node) issue_atomic_read(deferred_.front());
      return false;
    }
    if (!f.ready()) return false;
    n.value = mask(f.peek(), n.width);
    n.known = true;
    return true;
  }
  const Node copy = n;
  return ready_now(copy.a) && ready_now(copy.b) && ready_now(copy.c);
}

sim::Task<void> ThreadExec::run(sim::Tick start) {
  if (start > 0) co_await cpu_.sim().delay(start);
  int steps = 0;
  const auto& code = thread_.code;
  while (true) {
    if (pc_ >= static_cast<int>(code.size())) {
      if (!deferred_.empty() && co_await flush_deferred()) continue;
      if ((!speculation_.empty() || !held_.empty()) && co_await resolve_branches()) continue;
      break;
    }
    const Instr& in = code[static_cast<std::size_t>(pc_)];
    if (++steps > kMaxSteps) fail(in, fmt::format("the thread ran {} instructions without ending", kMaxSteps));
    if (const int loc = thread_.code_location.empty() ? -1 : thread_.code_location[static_cast<std::size_t>(pc_)];
        loc >= 0) {
      // Variant=ifetch: an instruction another thread may write is fetched
      // from memory first, a coherent read in program order; what it holds
      // then is executed (the test's instruction, NOP, or B).
      const std::uint64_t word = co_await cpu_.load(layout_->base[static_cast<std::size_t>(loc)], 4);
      if (word != static_cast<std::uint64_t>(test_.locations[static_cast<std::size_t>(loc)].init[0])) {
        if (word == kNopEncoding) {
          ++pc_;
          continue;
        }
        if ((word & kBranchOpcodeMask) != kBranchEncoding)
          fail(in, fmt::format("fetched {:#x}: an instruction the runner does not execute", word));
        const std::int64_t target = pc_ + sign_extend(word << 6, 4) / 64;  // imm26, in instructions
        if (target < 0 || target > static_cast<std::int64_t>(code.size()))
          fail(in, fmt::format("fetched {:#x}: a branch outside the thread's code", word));
        pc_ = static_cast<int>(target);
        continue;
      }
    }
    if (in.op == Op::store_excl && !exclusive_loads_) {
      // No LDXR in the thread: its local monitor stays open, so the STXR
      // fails, writes nothing and only sets its status register to 1 (the
      // Arm ARM; herd gives a failed store-exclusive no write event, so
      // nothing orders the accesses after it: MP+dmb.sy+addrpx-posxp-var).
      set(in.dst, Val{-1, 1}, 4);
      ++pc_;
      continue;
    }
    if (in.op == Op::load_excl) {
      if (const int store = paired_store(pc_); store >= 0) {  // performed with its STXR
        begin_pair(in, store);
        ++pc_;
        continue;
      }
    }
    if (!deferred_.empty() && !may_pass_deferred(in) && co_await flush_deferred()) continue;
    if (!held_.empty() && !may_pass_held(in) && co_await resolve_branches()) continue;
    if (serializing(in.op) && !speculation_.empty() && !holdable(in) && co_await resolve_branches(in.op != Op::isb))
      continue;
    fabric::Addr addr = 0;
    if (accesses_memory(in.op)) {
      const Val av = address(in.addr);
      if (deferrable(in)) {
        const bool atomic = in.op == Op::rmw;
        const Val a = operand(in.a), b = atomic ? operand(in.b) : Val{};
        // An atomic is always deferred: its read is issued early (once its
        // address is known and older deferred accesses are done), its write is
        // performed when a later access needs it (flush_deferred).
        // A plain load whose address is known is deferred too in half the
        // cases (stream litmus.branch), as an out-of-order core may bind it
        // after later loads: nothing but addr, ctrl+ISB, barriers, acquires
        // and the location orders a later load after it (aarch64.cat dob, bob;
        // CoRR by the replay of a later load of its bytes that read otherwise).
        const bool late = !atomic && known(av) && known(a) && known(b) && speculation_.empty() && held_.empty() &&
                          deferred_.size() < kMaxDeferred && branch_rng_.below(2) == 1;
        if (atomic || !known(av) || !known(a) || !known(b) || late) {
          // (An atomic not on a predicted path: its write cannot be undone. A
          // load on one, yes: dropped with the path if it was wrong, its
          // address checked only once the path is known to be right.)
          // (A load after held stores, yes: one that turns out to read one is
          // executed again once its address is known, and forwarded.)
          if (deferred_.size() < kMaxDeferred && (speculation_.empty() || !atomic) && (held_.empty() || !atomic)) {  // later independent loads go first
            const Checkpoint at = checkpoint(pc_);
            futures_.emplace_back();  // issued by flush_deferred (an atomic: by issue_atomic_read)
            nodes_.push_back(Node{Kind::load, 0, static_cast<std::uint8_t>(in.size), false,
                                  static_cast<std::int32_t>(futures_.size() - 1), {}, {}, {}, 0});
            const auto node = static_cast<std::int32_t>(nodes_.size() - 1);
            Deferred d{pc_, av, a, b, node, at};
            Val result{node, 0};
            // A successful CAS returns Rs, which herd's model gives no
            // dependency on the atomic's read: predicted (stream litmus.branch)
            // when Rs is known, checked when the CAS is performed.
            if (atomic && in.rmw_op == fabric::RmwOp::cas && known(b) && branch_rng_.below(2) == 1) {
              d.predicted = true;
              d.prediction = mask(eval(b), in.size);
              result = Val{-1, d.prediction};
            }
            deferred_.push_back(d);
            set(in.dst, result, in.dst_width);
            ++pc_;
            continue;
          }
          // A plain load whose address waits only for loads already issued
          // goes past the deferred ones once its address is known (on a
          // predicted path too): only addr orders it (aarch64.cat dob).
          if (!passes_deferred(in, av) && co_await flush_deferred()) continue;
        }
      }
      if (!known(av) && !deferred_.empty() && !passes_deferred(in, av) && co_await flush_deferred()) continue;
      addr = known(av) ? eval(av) : co_await force(av);
      const int bytes = (in.op == Op::load_pair || in.op == Op::store_pair) ? 2 * in.size : in.size;
      if (!accessible(addr, bytes, in.size)) {
        if (!speculation_.empty()) {  // likely a wrong path: resolve, then retry or rewind
          co_await resolve_branches();
          continue;
        }
        fail_address(in, addr, bytes);
      }
    }
    if (in.addr.writeback != Address::Writeback::none) {  // the base register is known: it was just awaited
      const Val base = regs_[static_cast<std::size_t>(in.addr.base_reg)];
      regs_[static_cast<std::size_t>(in.addr.base_reg)] =
          Val{-1, eval(base) + static_cast<std::uint64_t>(in.addr.offset)};
    }
    const int next = pc_ + 1;
    if (in.order == cpu::Order::release || in.order == cpu::Order::full) released_ = true;
    switch (in.op) {
      case Op::nop: break;
      case Op::mov: set(in.dst, operand(in.a), in.dst_width); break;
      case Op::alu: {
        Val r = make(Kind::alu, static_cast<std::uint8_t>(in.alu), in.dst_width, operand(in.a), operand(in.b));
        set(in.dst, r, in.dst_width);
        if (in.sets_result_flags)  // x86: as a compare of the result with 0
          flags_ = make(Kind::nzcv, static_cast<std::uint8_t>(Instr::FlagOp::sub), in.dst_width, r, Val{});
        if (in.sets_flags)
          flags_ = make(Kind::nzcv, static_cast<std::uint8_t>(in.flag_op), in.a.width, operand(in.a), operand(in.b));
        break;
      }
      case Op::cmp: {
        // NZCV is a register: the new flags depend on the operands and (CCMP,
        // CCMN) on the old flags, whichever the condition picks.
        const Val compared =
            make(Kind::nzcv, static_cast<std::uint8_t>(in.flag_op), in.a.width, operand(in.a), operand(in.b));
        flags_ = in.conditional ? make(Kind::select, 0, 8, flags_condition(in.cond), compared, Val{-1, in.nzcv})
                                : compared;
        break;
      }
      case Op::csel: {
        // NZCV is a register: the result depends on the flags (so on the
        // registers that set them) and on both sources, whichever is chosen
        // (herd's aarch64.cat with NotWeakPredicated; never weaker than the
        // architecture). make() folds it only when all three are known.
        const Val condition = flags_condition(in.cond), chosen = operand(in.a);
        Val other = operand(in.b);
        if (in.otherwise == Instr::Otherwise::b_plus_one)
          other = make(Kind::alu, static_cast<std::uint8_t>(AluOp::add), in.dst_width, other, Val{-1, 1});
        else if (in.otherwise == Instr::Otherwise::minus_b)
          other = make(Kind::alu, static_cast<std::uint8_t>(AluOp::sub), in.dst_width, Val{}, other);
        set(in.dst, make(Kind::select, 0, in.dst_width, condition, chosen, other), in.dst_width);
        break;
      }
      case Op::load:
      case Op::load_pair: {
        const int bytes = in.op == Op::load_pair ? 2 * in.size : in.size;
        if (const auto held = std::find_if(held_.rbegin(), held_.rend(),
                                           [&](const Held& h) { return fabric::overlaps(h.addr, h.size, addr, bytes); });
            held != held_.rend()) {
          // Forwarded a held store's value when it covers exactly these bytes
          // (an LDAR only if no release ran before it: RCsc); else the branches
          // resolve first and the load runs again.
          const bool exact = in.op == Op::load && held->addr == addr && held->size == in.size;
          if (!exact || (in.order == cpu::Order::acquire && released_)) {
            co_await resolve_branches();
            continue;
          }
          // An acquire (LDAR, LDAPR) orders the later accesses after its read,
          // which here is the held store's data: awaited first
          // ((addr|data);rfi;[A];po, MP+rel+data-lrs-acq).
          if (in.order != cpu::Order::relaxed && !known(held->value)) {
            const Val data = held->value;
            (void)co_await force(data);
          }
          const Val v = in.size >= 8 ? held->value
                                     : make(Kind::alu, static_cast<std::uint8_t>(AluOp::and_), 8, held->value,
                                            Val{-1, mask(~std::uint64_t{0}, in.size)});
          set(in.dst, v, in.dst_width);
          break;
        }
        // Forwarded from the newest deferred atomic's write, or (stream
        // litmus.branch: whether the atomic will write is not known yet) not.
        if (const Deferred* from = in.op == Op::load ? forwarding_atomic(addr, in.size) : nullptr;
            from != nullptr && branch_rng_.below(2) == 1) {
          const std::uint64_t v = mask(eval(from->a), in.size);
          const Checkpoint at = checkpoint(pc_);
          nodes_.push_back(Node{Kind::load, 0, static_cast<std::uint8_t>(in.size), true, -1, {}, {}, {}, v});
          const auto node = static_cast<std::int32_t>(nodes_.size() - 1);
          forwarded_.push_back(Forwarded{from->node, node, v, at});
          set(in.dst, Val{node, 0}, in.dst_width);
          break;
        }
        if (!deferred_.empty())  // a plain load passing deferred ones: replayed if they turn out to overlap
          bypass_.push_back(Bypass{addr, in.size, static_cast<std::int32_t>(nodes_.size()), checkpoint(pc_)});
        for (int part = 0; part < (in.op == Op::load_pair ? 2 : 1); ++part) {
          futures_.push_back(cpu_.issue_load(addr + static_cast<fabric::Addr>(part * in.size), in.size, in.order));
          Node n{Kind::load, 0, static_cast<std::uint8_t>(in.size), false, static_cast<std::int32_t>(futures_.size() - 1), {}, {}, {}, 0};
          nodes_.push_back(n);
          set(part == 0 ? in.dst : in.dst2, Val{static_cast<std::int32_t>(nodes_.size() - 1), 0}, in.dst_width);
        }
        break;
      }
      case Op::store:
      case Op::store_pair: {
        const Val first = operand(in.a);
        const bool lingers = holdable(in) && linger_max_ > 0;
        if (holdable(in) && (!speculation_.empty() || !deferred_.empty() || !held_.empty() || !known(first) || lingers)) {
          // Held: its branches resolve, the deferred operations are performed
          // and its data is awaited before it enters the store buffer (see
          // release_held). Its data stays lazy meanwhile: a later load of its
          // bytes is forwarded that value, so it depends on what the data
          // depends on ((addr|data);rfi is in dob) and on nothing else. A
          // lingering store (set_linger) enters no earlier than a random delay
          // from now, while later loads go on.
          nodes_.push_back(Node{Kind::load, 0, 8, true, -1, {}, {}, {}, 0});
          const sim::Tick not_before = lingers ? cpu_.sim().now() + linger_rng_->below(linger_max_) : 0;
          held_.push_back(Held{addr, in.size, first, static_cast<std::int32_t>(nodes_.size() - 1), not_before});
          break;
        }
        const std::uint64_t v = known(first) ? eval(first) : co_await force(first);
        co_await cpu_.store(addr, in.size, mask(v, in.size), in.order);
        if (in.op == Op::store_pair) {
          const Val second = operand(in.b);
          const std::uint64_t w = known(second) ? eval(second) : co_await force(second);
          co_await cpu_.store(addr + static_cast<fabric::Addr>(in.size), in.size, mask(w, in.size), in.order);
        }
        break;
      }
      case Op::load_excl: {
        const std::uint64_t v = co_await cpu_.load_exclusive(addr, in.size, in.order);
        set(in.dst, Val{-1, v}, in.dst_width);
        break;
      }
      case Op::store_excl: {
        if (pair_store_pc_ == pc_) {
          co_await perform_pair(in, addr);
          break;
        }
        const Val data = operand(in.a);
        if (cpu_.is_arm() && in.addr.writeback == Address::Writeback::none && deferred_.empty() &&
            speculation_.empty() && held_.empty() && exclusive_loads_) {
          // Its success (status 0) is predicted and it is deferred, performed
          // when something later needs it (flush_deferred): later plain loads
          // go first, as neither a store-exclusive nor STLXR's release orders
          // a later load (aarch64.cat; HAND's ATOM06: LDAXR; STLXR; LDR).
          const Checkpoint at = checkpoint(pc_);
          nodes_.push_back(Node{Kind::load, 0, 4, true, -1, {}, {}, {}, 0});
          deferred_.push_back(Deferred{pc_, Val{-1, addr}, data, Val{}, static_cast<std::int32_t>(nodes_.size() - 1), at});
          set(in.dst, Val{-1, 0}, 4);
          break;
        }
        const std::uint64_t v = known(data) ? eval(data) : co_await force(data);
        const bool ok = co_await cpu_.store_exclusive(addr, in.size, mask(v, in.size), in.order);
        set(in.dst, Val{-1, ok ? 0u : 1u}, 4);
        break;
      }
      case Op::rmw: {
        const Val operand_val = operand(in.a);
        const std::uint64_t x = known(operand_val) ? eval(operand_val) : co_await force(operand_val);
        std::uint64_t compare = 0;
        if (in.rmw_op == fabric::RmwOp::cas) {
          const Val cv = operand(in.b);
          compare = known(cv) ? eval(cv) : co_await force(cv);
        }
        if (in.dst == kZeroRegister && !in.sets_compare_flags) {  // no result: ordered as a store
          co_await cpu_.post_rmw(addr, in.size, in.rmw_op, mask(x, in.size), mask(compare, in.size), in.order);
          break;
        }
        const std::uint64_t old =
            co_await cpu_.rmw(addr, in.size, in.rmw_op, mask(x, in.size), mask(compare, in.size), in.order);
        set(in.dst, Val{-1, old}, in.dst_width);
        if (in.sets_compare_flags) {
          flags_ = Val{-1, nzcv_of(Instr::FlagOp::sub, old, compare, in.size)};
        }
        break;
      }
      case Op::mem_alu: {  // x86 ADD/INC to memory without LOCK: a load, then a store
        const std::uint64_t old = co_await cpu_.load(addr, in.size);
        const Val a = operand(in.a);
        const std::uint64_t x = known(a) ? eval(a) : co_await force(a);
        const std::uint64_t r = mask(alu(in.alu, old, x), in.size);
        co_await cpu_.store(addr, in.size, r);
        flags_ = Val{-1, nzcv_of(Instr::FlagOp::sub, r, 0, in.size)};
        break;
      }
      case Op::dmb:
      case Op::dsb:
        if (in.barrier != cpu::BarrierType::st && !posted_reads_.empty()) co_await order_posted_reads();
        if (in.op == Op::dmb) co_await cpu_.dmb(in.domain, in.barrier);
        else co_await cpu_.dsb(in.domain, in.barrier);
        break;
      case Op::isb: co_await cpu_.isb(); break;
      case Op::mfence: co_await cpu_.mfence(); break;
      case Op::lfence: co_await cpu_.lfence(); break;
      case Op::sfence: co_await cpu_.sfence(); break;
      case Op::branch:
      case Op::cbz:
      case Op::cbnz: {
        Val condition = in.op == Op::branch ? flags_condition(in.cond)
                        : make(Kind::condition, static_cast<std::uint8_t>(in.op == Op::cbz ? Cond::eq : Cond::ne),
                               in.a.width, in.b.kind == Operand::Kind::imm  // TBZ / TBNZ test one bit
                                               ? make(Kind::alu, static_cast<std::uint8_t>(AluOp::and_), 8, operand(in.a), operand(in.b))
                                               : operand(in.a),
                               Val{});
        if (in.op == Op::branch && in.cond == Cond::al) {
          pc_ = in.target;
          continue;
        }
        if (known(condition)) {
          pc_ = eval(condition) != 0 ? in.target : next;
          continue;
        }
        if (speculation_.size() >= kMaxSpeculation) {
          if (!deferred_.empty() && co_await flush_deferred()) continue;
          if (co_await resolve_branches()) continue;
        }
        predict(in, condition);
        continue;
      }
    }
    pc_ = next;
  }
  for (int reg : final_registers_) {
    const Val v = regs_[static_cast<std::size_t>(reg)];
    // (Awaited into a local first: GCC 12 loses `this` when a co_await sits in
    // an assignment to a member's element; UBSan caught it.)
    const std::uint64_t value = known(v) ? eval(v) : co_await force(v);
    final_[static_cast<std::size_t>(reg)] = value;
  }
}

}  // namespace cohsim::litmus::detail
