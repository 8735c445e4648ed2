// LDXR/STXR pairs in the litmus runner. A relaxed LDXR followed, with only
// register moves and arithmetic between, by a STXR (or STLXR) to the same
// address is performed as one atomic posted through the store buffer
// (cpu::Cpu::post_rmw_returning): the pair then orders nothing against
// accesses to other locations, as aarch64.cat's rmw relation says (a pair is
// ordered with its own location by coherence and the pair's atomicity, with
// others only by its suffixes, barriers and dependencies). The pair always
// succeeds: a STXR may fail, never must, so its status register is the
// constant 0 and carries no dependency.
#include "thread_exec.hpp"

namespace cohsim::litmus::detail {

int ThreadExec::paired_store(int pc) const {
  const auto& code = thread_.code;
  const Instr& ld = code[static_cast<std::size_t>(pc)];
  if (!cpu_.is_arm() || !cpu_.params().lse || ld.op != Op::load_excl || ld.order != cpu::Order::relaxed ||
      ld.addr.writeback != Address::Writeback::none || ld.addr.index.kind != Operand::Kind::none)
    return -1;
  for (std::size_t i = static_cast<std::size_t>(pc) + 1; i < code.size(); ++i) {
    const Instr& in = code[i];
    if (!thread_.code_location.empty() && thread_.code_location[i] >= 0) return -1;  // may be rewritten
    if (in.op == Op::store_excl) {
      const bool same = in.addr.base_reg == ld.addr.base_reg && in.addr.location == ld.addr.location &&
                        in.addr.offset == ld.addr.offset && in.addr.index.kind == Operand::Kind::none &&
                        in.addr.writeback == Address::Writeback::none && in.size == ld.size;
      return same ? static_cast<int>(i) : -1;
    }
    if (in.op != Op::nop && in.op != Op::mov && in.op != Op::alu) return -1;
    if (ld.addr.base_reg >= 0 && in.dst == ld.addr.base_reg) return -1;
  }
  return -1;
}

void ThreadExec::begin_pair(const Instr& ld, int store_pc) {
  futures_.emplace_back();  // issued when the pair is posted
  nodes_.push_back(Node{Kind::load, 0, static_cast<std::uint8_t>(ld.size), false,
                        static_cast<std::int32_t>(futures_.size() - 1), {}, {}, {}, 0});
  pair_node_ = static_cast<std::int32_t>(nodes_.size() - 1);
  pair_store_pc_ = store_pc;
  set(ld.dst, Val{pair_node_, 0}, ld.dst_width);
}

bool ThreadExec::refers_to(Val v, std::int32_t node) const {
  if (v.node < 0) return false;
  if (v.node == node) return true;
  const Node& n = nodes_[static_cast<std::size_t>(v.node)];
  if (n.known || n.kind == Kind::load) return false;
  return refers_to(n.a, node) || refers_to(n.b, node) || refers_to(n.c, node);
}

bool ThreadExec::is_read_of(Val v, std::int32_t node) const {
  if (v.node == node) return true;
  if (v.node < 0) return false;
  const Node& n = nodes_[static_cast<std::size_t>(v.node)];
  // A W register's copy of a 4-byte read is the read.
  return n.kind == Kind::zero_extend32 && nodes_[static_cast<std::size_t>(node)].width <= 4 && is_read_of(n.a, node);
}

std::optional<std::pair<fabric::RmwOp, std::uint64_t>> ThreadExec::pair_operation(Val data, std::int32_t read) {
  using fabric::RmwOp;
  if (!refers_to(data, read)) return std::nullopt;  // the caller writes the data (a swap)
  if (is_read_of(data, read)) return std::pair{RmwOp::add, std::uint64_t{0}};
  const Node& n = nodes_[static_cast<std::size_t>(data.node)];
  if (n.kind != Kind::alu || !is_read_of(n.a, read) || !known(n.b) || n.width < nodes_[static_cast<std::size_t>(read)].width)
    return std::nullopt;
  const std::uint64_t k = eval(n.b);
  switch (static_cast<AluOp>(n.sub)) {
    case AluOp::add: return std::pair{RmwOp::add, k};
    case AluOp::sub: return std::pair{RmwOp::add, std::uint64_t{0} - k};
    case AluOp::eor: return std::pair{RmwOp::bit_xor, k};
    case AluOp::orr: return std::pair{RmwOp::bit_or, k};
    case AluOp::and_: return std::pair{RmwOp::andnot, ~k};
    default: return std::nullopt;
  }
}

sim::Task<void> ThreadExec::perform_pair(const Instr& st, fabric::Addr addr) {
  const std::int32_t read = pair_node_;
  pair_node_ = -1;
  pair_store_pc_ = -1;
  const Val data = operand(st.a);
  fabric::RmwOp op = fabric::RmwOp::swap;
  std::uint64_t x = 0;
  if (const auto computed = pair_operation(data, read)) {
    op = computed->first;
    x = computed->second;
  } else if (!refers_to(data, read)) {
    x = known(data) ? eval(data) : co_await force(data);  // data dependency: the write waits for it
  } else {
    // Data computed from the read in a way no atomic does: LDXR then STXR, as written.
    const std::uint64_t v = co_await cpu_.load_exclusive(addr, st.size, cpu::Order::relaxed);
    Node& n = nodes_[static_cast<std::size_t>(read)];
    n.value = mask(v, n.width);
    n.known = true;
    const std::uint64_t w = known(data) ? eval(data) : co_await force(data);
    const bool ok = co_await cpu_.store_exclusive(addr, st.size, mask(w, st.size), st.order);
    set(st.dst, Val{-1, ok ? 0u : 1u}, 4);
    co_return;
  }
  cpu::LoadFuture result;
  co_await cpu_.post_rmw_returning(result, addr, st.size, op, mask(x, st.size), 0, st.order);
  futures_[static_cast<std::size_t>(nodes_[static_cast<std::size_t>(read)].future)] = result;
  posted_reads_.push_back(read);
  set(st.dst, Val{-1, 0}, 4);
}

sim::Task<void> ThreadExec::order_posted_reads() {
  // A DMB LD (or a full one, or a DSB) orders the pairs' reads before what
  // follows: they are awaited first (bob: [R]; po; [dmb.ld]; po).
  const std::vector<std::int32_t> reads = std::move(posted_reads_);
  posted_reads_.clear();
  for (std::int32_t r : reads)
    if (static_cast<std::size_t>(r) < nodes_.size()) (void)co_await force(Val{r, 0});
}

}  // namespace cohsim::litmus::detail
