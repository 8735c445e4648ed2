// The values a litmus thread computes: sign extension, the ALU operations,
// AArch64's NZCV flags and the conditions on them (the arithmetic of
// thread_exec.cpp's expression nodes).
#include "thread_exec.hpp"

namespace cohsim::litmus::detail {

std::int64_t sign_extend(std::uint64_t v, int width) {
  if (width >= 8) return static_cast<std::int64_t>(v);
  const int shift = 64 - 8 * width;
  return static_cast<std::int64_t>(v << shift) >> shift;
}

bool holds(Cond c, std::uint64_t a, std::uint64_t b, int width) {
  const std::uint64_t ua = mask(a, width), ub = mask(b, width);
  const std::int64_t sa = sign_extend(a, width), sb = sign_extend(b, width);
  switch (c) {
    case Cond::al: return true;
    case Cond::eq: return ua == ub;
    case Cond::ne: return ua != ub;
    case Cond::lt: return sa < sb;
    case Cond::ge: return sa >= sb;
    case Cond::gt: return sa > sb;
    case Cond::le: return sa <= sb;
    case Cond::lo: return ua < ub;
    case Cond::hs: return ua >= ub;
    case Cond::hi: return ua > ub;
    case Cond::ls: return ua <= ub;
    case Cond::mi: return sign_extend(ua - ub, width) < 0;
    case Cond::pl: return sign_extend(ua - ub, width) >= 0;
  }
  return false;
}

/// The NZCV flags (N bit 3, Z 2, C 1, V 0) of `a op b` at `width` bytes, as AArch64 sets them (SUBS, ADDS, ANDS).
std::uint64_t nzcv_of(Instr::FlagOp op, std::uint64_t a, std::uint64_t b, int width) {
  const std::uint64_t ua = mask(a, width), ub = mask(b, width);
  const bool na = sign_extend(ua, width) < 0, nb = sign_extend(ub, width) < 0;
  std::uint64_t r = 0;
  bool c = false, v = false;
  switch (op) {
    case Instr::FlagOp::sub:
      r = mask(ua - ub, width);
      c = ua >= ub;
      v = na != nb && (sign_extend(r, width) < 0) != na;
      break;
    case Instr::FlagOp::add:
      r = mask(ua + ub, width);
      c = r < ua;  // the unsigned sum wrapped
      v = na == nb && (sign_extend(r, width) < 0) != na;
      break;
    case Instr::FlagOp::and_: r = ua & ub; break;
  }
  const bool n = sign_extend(r, width) < 0, z = r == 0;
  return (std::uint64_t{n} << 3) | (std::uint64_t{z} << 2) | (std::uint64_t{c} << 1) | std::uint64_t{v};
}

/// Whether condition `c` holds on flags `f` (nzcv_of's layout).
bool holds_on(Cond c, std::uint64_t f) {
  const bool n = (f >> 3) & 1, z = (f >> 2) & 1, cy = (f >> 1) & 1, v = f & 1;
  switch (c) {
    case Cond::al: return true;
    case Cond::eq: return z;
    case Cond::ne: return !z;
    case Cond::lt: return n != v;
    case Cond::ge: return n == v;
    case Cond::gt: return !z && n == v;
    case Cond::le: return z || n != v;
    case Cond::lo: return !cy;
    case Cond::hs: return cy;
    case Cond::hi: return cy && !z;
    case Cond::ls: return !cy || z;
    case Cond::mi: return n;
    case Cond::pl: return !n;
  }
  return false;
}

std::uint64_t alu(AluOp op, std::uint64_t a, std::uint64_t b) {
  switch (op) {
    case AluOp::add: return a + b;
    case AluOp::sub: return a - b;
    case AluOp::eor: return a ^ b;
    case AluOp::and_: return a & b;
    case AluOp::orr: return a | b;
    case AluOp::lsl: return b >= 64 ? 0 : a << b;
    case AluOp::lsr: return b >= 64 ? 0 : a >> b;
  }
  return 0;
}

}  // namespace cohsim::litmus::detail
