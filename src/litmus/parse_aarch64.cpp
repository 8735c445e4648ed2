// AArch64 instructions of the litmus subset, as herd7 writes them (upper or
// lower case): loads, stores, acquire/release, exclusives, LSE atomics,
// FEAT_LRCPC3 pairs, barriers, moves, arithmetic, compares and branches.
#include <array>
#include <tuple>
#include <fmt/format.h>

#include "parse_internal.hpp"

namespace cohsim::litmus::detail {

int aarch64_register(std::string_view name, int& width) {
  std::string n = upper(trim(name));
  if (n == "XZR" || n == "WZR") {
    width = n[0] == 'X' ? 8 : 4;
    return kZeroRegister;
  }
  if (n.size() < 2 || (n[0] != 'X' && n[0] != 'W')) return -1;
  std::int64_t r = 0;
  if (!std::isdigit(static_cast<unsigned char>(n[1])) || !parse_integer(n.substr(1), r) || r < 0 || r > 30) return -1;
  width = n[0] == 'X' ? 8 : 4;
  return static_cast<int>(r);
}

namespace {

struct Parser {
  InstrContext& c;
  std::string mnemonic;
  std::vector<std::string> ops;
  std::string_view text;

  [[noreturn]] void unsupported() const {
    throw Unsupported{fmt::format("instruction '{}' (line {})", text, c.line)};
  }
  void count(std::size_t n) const {
    if (ops.size() != n) c.fail(text, fmt::format("{} takes {} operands", mnemonic, n));
  }
  int reg(std::size_t i, int& width) const {
    int r = aarch64_register(ops.at(i), width);
    if (r < 0) c.fail(ops[i], "expected a register (X0..X30, W0..W30, XZR, WZR)");
    return r;
  }
  Operand source(std::string_view s) const {
    Operand o;
    std::string_view t = trim(s);
    int width = 8;
    if (int r = aarch64_register(t, width); r >= 0) {
      o.kind = Operand::Kind::reg;
      o.reg = r;
      o.width = width;
      return o;
    }
    if (!t.empty() && t[0] == '#') t.remove_prefix(1);
    std::int64_t v = 0;
    if (!parse_integer(t, v)) c.fail(s, "expected a register or an immediate (#n)");
    o.kind = Operand::Kind::imm;
    o.imm.number = v;
    return o;
  }
  /// An extension and shift of a register operand: SXTW, UXTW, LSL #n, SXTW #n, UXTW #n.
  void extend(std::string_view s, Operand& o) const {
    std::string e = upper(trim(s));
    std::string kind = e.substr(0, e.find_first_of(" #"));
    if (kind == "SXTW") o.extend = Extend::sxtw;
    else if (kind == "UXTW") o.extend = Extend::uxtw;
    else if (kind != "LSL") c.fail(s, "expected SXTW, UXTW or LSL #n");
    std::string_view amount = trim(std::string_view(e).substr(kind.size()));
    if (amount.empty()) {
      if (kind == "LSL") c.fail(s, "expected LSL #n");
      return;
    }
    std::int64_t n = 0;
    if (amount[0] != '#' || !parse_integer(amount.substr(1), n) || n < 0 || n > 63) c.fail(s, "expected a shift #0..#63");
    o.shift = static_cast<int>(n);
  }
  Address address(std::size_t i) const {
    std::string_view s = trim(ops.at(i));
    const bool pre_index = !s.empty() && s.back() == '!';
    if (pre_index) s = trim(s.substr(0, s.size() - 1));
    if (s.size() < 3 || s.front() != '[' || s.back() != ']') c.fail(s, "expected an address [Xn], [Xn,#imm] or [Xn,Xm{,SXTW|UXTW}]");
    auto parts = split_operands(s.substr(1, s.size() - 2));
    Address a;
    int width = 8;
    a.base_reg = aarch64_register(parts.at(0), width);
    if (a.base_reg < 0 || a.base_reg == kZeroRegister || width != 8) c.fail(parts[0], "expected a base register X0..X30");
    if (parts.size() >= 2) {
      Operand o = source(parts[1]);
      if (o.kind == Operand::Kind::imm) {
        if (parts.size() > 2) c.fail(parts[2], "expected ']' after the immediate offset");
        a.offset = o.imm.number;
      } else {
        a.index = o;
        if (parts.size() == 3) extend(parts[2], a.index);
        else if (parts.size() > 3) c.fail(parts[3], "expected ']'");
        if (o.width == 4 && a.index.extend == Extend::none) c.fail(parts[1], "a W index needs SXTW or UXTW");
      }
    }
    if (pre_index) {
      if (parts.size() != 2 || a.index.kind != Operand::Kind::none) c.fail(ops[i], "expected [Xn,#imm]! for pre-index");
      a.writeback = Address::Writeback::pre;
    }
    if (i + 1 < ops.size()) {  // post-index: [Xn],#imm
      if (i + 2 != ops.size() || parts.size() != 1) c.fail(ops[i + 1], "expected a post-index immediate after [Xn]");
      Operand o = source(ops[i + 1]);
      if (o.kind != Operand::Kind::imm) c.fail(ops[i + 1], "expected #imm");
      a.offset = o.imm.number;
      a.writeback = Address::Writeback::post;
    }
    return a;
  }
  /// The access size: from the register width, or a B/H suffix.
  static int access_size(int width, char suffix) { return suffix == 'B' ? 1 : suffix == 'H' ? 2 : width; }
};

Cond condition_named(std::string_view s) {
  static const std::array<std::pair<std::string_view, Cond>, 14> kConds = {{{"EQ", Cond::eq}, {"NE", Cond::ne},
      {"LT", Cond::lt}, {"GE", Cond::ge}, {"GT", Cond::gt}, {"LE", Cond::le}, {"LO", Cond::lo}, {"CC", Cond::lo},
      {"HS", Cond::hs}, {"CS", Cond::hs}, {"HI", Cond::hi}, {"LS", Cond::ls}, {"MI", Cond::mi}, {"PL", Cond::pl}}};
  for (auto [name, cond] : kConds)
    if (name == s) return cond;
  return Cond::al;
}

/// Splits "CASALB" after `base` into the ordering suffix and a size suffix.
bool ordering_suffix(std::string_view rest, bool allow_acquire, cpu::Order& order, char& size) {
  size = 0;
  if (!rest.empty() && (rest.back() == 'B' || rest.back() == 'H')) {
    size = rest.back();
    rest.remove_suffix(1);
  }
  if (rest.empty()) order = cpu::Order::relaxed;
  else if (rest == "A" && allow_acquire) order = cpu::Order::acquire;
  else if (rest == "L") order = cpu::Order::release;
  else if (rest == "AL" && allow_acquire) order = cpu::Order::full;
  else return false;
  return true;
}

std::pair<cpu::Domain, cpu::BarrierType> barrier_option(std::string_view s, const InstrContext& c) {
  std::string o = upper(trim(s));
  cpu::Domain d = cpu::Domain::sy;
  std::string_view rest = o;
  for (auto [name, dom] : {std::pair{"ISH", cpu::Domain::ish}, {"OSH", cpu::Domain::osh}, {"NSH", cpu::Domain::nsh}})
    if (rest.starts_with(name)) {
      d = dom;
      rest.remove_prefix(3);
    }
  if (rest == "SY" && d == cpu::Domain::sy) return {d, cpu::BarrierType::all};
  if (rest.empty() && d != cpu::Domain::sy) return {d, cpu::BarrierType::all};
  if (rest == "ST") return {d, cpu::BarrierType::st};
  if (rest == "LD") return {d, cpu::BarrierType::ld};
  c.fail(s, "expected a barrier option (SY, ST, LD, ISH, ISHST, ISHLD, OSH*, NSH*)");
}

}  // namespace

Instr parse_aarch64(std::string_view text, InstrContext& c) {
  text = trim(text);
  std::size_t sp = text.find_first_of(" \t");
  Parser p{c, upper(text.substr(0, sp)), sp == std::string_view::npos ? std::vector<std::string>{} : split_operands(text.substr(sp)), text};
  const std::string& m = p.mnemonic;
  if (!is_mnemonic(m)) c.fail(text.substr(0, sp), "expected an instruction mnemonic");
  Instr in;
  int width = 8;
  auto dst = [&](std::size_t i) {
    in.dst = p.reg(i, width);
    in.dst_width = width;
  };
  if (m == "NOP") {
    p.count(0);
    return in;
  }
  // Variant=ifetch: instruction fetches are coherent reads (as on a core with
  // IDC=1 and DIC=1), so cleaning to the point of unification and invalidating
  // the instruction cache change nothing the model can observe: no-ops.
  if ((m == "DC" || m == "IC") && c.test.ifetch && p.ops.size() == 2 &&
      upper(p.ops[0]) == (m == "DC" ? "CVAU" : "IVAU")) {
    p.reg(1, width);
    return in;
  }
  if (m == "ISB") {
    in.op = Op::isb;
    return in;
  }
  if (m == "DMB" || m == "DSB") {
    p.count(1);
    in.op = m == "DMB" ? Op::dmb : Op::dsb;
    std::tie(in.domain, in.barrier) = barrier_option(p.ops[0], c);
    return in;
  }
  if (m == "MOV") {
    p.count(2);
    in.op = Op::mov;
    dst(0);
    in.a = p.source(p.ops[1]);
    return in;
  }
  static const std::array<std::pair<std::string_view, AluOp>, 7> kAlu = {{{"ADD", AluOp::add}, {"SUB", AluOp::sub},
      {"EOR", AluOp::eor}, {"AND", AluOp::and_}, {"ORR", AluOp::orr}, {"LSL", AluOp::lsl}, {"LSR", AluOp::lsr}}};
  for (auto [name, op] : kAlu)
    if (m == name) {
      if (p.ops.size() != 3 && p.ops.size() != 4) p.count(3);
      in.op = Op::alu;
      in.alu = op;
      dst(0);
      in.a = p.source(p.ops[1]);
      in.b = p.source(p.ops[2]);
      if (p.ops.size() == 4) p.extend(p.ops[3], in.b);
      return in;
    }
  // The flags (NZCV) setters: CMP, CMN, TST compare; SUBS, ADDS, ANDS also write Rd;
  // CCMP, CCMN compare when their condition holds, else set the flags to #nzcv.
  static const std::array<std::pair<std::string_view, Instr::FlagOp>, 3> kCompare = {
      {{"CMP", Instr::FlagOp::sub}, {"CMN", Instr::FlagOp::add}, {"TST", Instr::FlagOp::and_}}};
  for (auto [name, op] : kCompare)
    if (m == name) {
      if (p.ops.size() != 2 && p.ops.size() != 3) p.count(2);
      in.op = Op::cmp;
      in.flag_op = op;
      in.a = p.source(p.ops[0]);
      in.b = p.source(p.ops[1]);
      if (p.ops.size() == 3) p.extend(p.ops[2], in.b);
      return in;
    }
  static const std::array<std::tuple<std::string_view, AluOp, Instr::FlagOp>, 3> kSetting = {
      {{"SUBS", AluOp::sub, Instr::FlagOp::sub}, {"ADDS", AluOp::add, Instr::FlagOp::add},
       {"ANDS", AluOp::and_, Instr::FlagOp::and_}}};
  for (auto [name, alu, op] : kSetting)
    if (m == name) {
      if (p.ops.size() != 3 && p.ops.size() != 4) p.count(3);
      in.op = Op::alu;
      in.alu = alu;
      in.sets_flags = true;
      in.flag_op = op;
      dst(0);
      in.a = p.source(p.ops[1]);
      in.b = p.source(p.ops[2]);
      if (p.ops.size() == 4) p.extend(p.ops[3], in.b);
      return in;
    }
  if (m == "CCMP" || m == "CCMN") {
    p.count(4);
    in.op = Op::cmp;
    in.flag_op = m == "CCMP" ? Instr::FlagOp::sub : Instr::FlagOp::add;
    in.conditional = true;
    in.a = p.source(p.ops[0]);
    in.b = p.source(p.ops[1]);
    const Operand flags = p.source(p.ops[2]);
    if (flags.kind != Operand::Kind::imm || flags.imm.location >= 0 || flags.imm.number < 0 || flags.imm.number > 15)
      c.fail(p.ops[2], "expected #nzcv, 0 to 15");
    in.nzcv = static_cast<std::uint8_t>(flags.imm.number);
    in.cond = condition_named(upper(p.ops[3]));
    if (in.cond == Cond::al) c.fail(p.ops[3], "expected a condition (EQ, NE, LT, GE, GT, LE, LO, HS, HI, LS, MI, PL)");
    return in;
  }
  if (m == "CSEL" || m == "CSINC" || m == "CSNEG" || m == "CSET") {
    const bool set = m == "CSET";
    p.count(set ? 2 : 4);
    in.op = Op::csel;
    in.otherwise = m == "CSINC" ? Instr::Otherwise::b_plus_one : m == "CSNEG" ? Instr::Otherwise::minus_b : Instr::Otherwise::b;
    dst(0);
    if (set) {  // CSET Rd, cond: Rd = cond ? 1 : 0
      in.a.kind = in.b.kind = Operand::Kind::imm;
      in.a.imm = Value{1, -1};
      in.b.imm = Value{0, -1};
    } else {
      in.a = p.source(p.ops[1]);
      in.b = p.source(p.ops[2]);
    }
    const std::string& cond = p.ops[set ? 1 : 3];
    in.cond = condition_named(upper(cond));
    if (in.cond == Cond::al) c.fail(cond, "expected a condition (EQ, NE, LT, GE, GT, LE, LO, HS, HI, LS, MI, PL)");
    return in;
  }
  if (m == "B" || m.starts_with("B.")) {
    p.count(1);
    in.op = Op::branch;
    if (m != "B") {
      in.cond = condition_named(m.substr(2));
      if (in.cond == Cond::al) c.fail(m, "expected a condition after B.");
    }
    c.target_label = p.ops[0];
    return in;
  }
  if (m == "CBZ" || m == "CBNZ" || m == "TBZ" || m == "TBNZ") {
    const bool bit = m[0] == 'T';
    p.count(bit ? 3 : 2);
    in.op = m == "CBZ" || m == "TBZ" ? Op::cbz : Op::cbnz;
    in.a = p.source(p.ops[0]);
    if (in.a.kind != Operand::Kind::reg) c.fail(p.ops[0], "expected a register");
    if (bit) {
      in.b = p.source(p.ops[1]);
      if (in.b.kind != Operand::Kind::imm || in.b.imm.number < 0 || in.b.imm.number >= 8 * in.a.width)
        c.fail(p.ops[1], "expected a bit number #n");
      in.b.imm.number = static_cast<std::int64_t>(std::uint64_t{1} << in.b.imm.number);
    }
    c.target_label = p.ops.back();
    return in;
  }
  // Loads and stores: LDR{B,H}, LDAR{B,H}, LDAPR{B,H}, LDXR, LDAXR, STR, STLR, STXR, STLXR.
  struct Access {
    std::string_view name;
    Op op;
    cpu::Order order;
  };
  static const std::array<Access, 13> kAccess = {{{"LDR", Op::load, cpu::Order::relaxed},
      {"LDUR", Op::load, cpu::Order::relaxed}, {"STUR", Op::store, cpu::Order::relaxed},
      {"STLUR", Op::store, cpu::Order::release}, {"LDAPUR", Op::load, cpu::Order::acquire_pc},
      {"LDAR", Op::load, cpu::Order::acquire}, {"LDAPR", Op::load, cpu::Order::acquire_pc},
      {"LDXR", Op::load_excl, cpu::Order::relaxed}, {"LDAXR", Op::load_excl, cpu::Order::acquire},
      {"STR", Op::store, cpu::Order::relaxed}, {"STLR", Op::store, cpu::Order::release},
      {"STXR", Op::store_excl, cpu::Order::relaxed}, {"STLXR", Op::store_excl, cpu::Order::release}}};
  for (const Access& acc : kAccess) {
    std::string_view rest = std::string_view(m);
    if (!rest.starts_with(acc.name)) continue;
    rest.remove_prefix(acc.name.size());
    if (!(rest.empty() || rest == "B" || rest == "H")) continue;
    const char suffix = rest.empty() ? 0 : rest[0];
    in.op = acc.op;
    in.order = acc.order;
    if (acc.op == Op::store_excl) {
      p.count(3);
      dst(0);
      in.dst_width = 4;
      in.a = p.source(p.ops[1]);
      if (in.a.kind != Operand::Kind::reg) c.fail(p.ops[1], "expected a register");
      in.size = Parser::access_size(in.a.width, suffix);
      in.addr = p.address(2);
      return in;
    }
    if (p.ops.size() != 3) p.count(2);
    if (acc.op == Op::store) {
      in.a = p.source(p.ops[0]);
      if (in.a.kind != Operand::Kind::reg) c.fail(p.ops[0], "expected a register");
      in.size = Parser::access_size(in.a.width, suffix);
    } else {
      dst(0);
      in.size = Parser::access_size(width, suffix);
    }
    in.addr = p.address(1);
    return in;
  }
  if (m == "STILP" || m == "LDIAPP" || m == "STP" || m == "LDP") {
    if (p.ops.size() != 4) p.count(3);
    in.op = m == "STILP" || m == "STP" ? Op::store_pair : Op::load_pair;
    in.order = m == "STILP" ? cpu::Order::release : m == "LDIAPP" ? cpu::Order::acquire_pc : cpu::Order::relaxed;
    if (in.op == Op::store_pair) {
      in.a = p.source(p.ops[0]);
      in.b = p.source(p.ops[1]);
      if (in.a.kind != Operand::Kind::reg || in.b.kind != Operand::Kind::reg) c.fail(text, "expected two registers");
      in.size = in.a.width;
    } else {
      dst(0);
      int w2 = 8;
      in.dst2 = p.reg(1, w2);
      in.size = width;
    }
    in.addr = p.address(2);
    return in;
  }
  // LSE atomics: CAS, SWP, LD<op>, ST<op> with ordering and size suffixes.
  struct Atomic {
    std::string_view name;
    fabric::RmwOp op;
    bool store_form;  ///< ST<op>: no result register
  };
  static const std::array<Atomic, 10> kAtomics = {{{"CAS", fabric::RmwOp::cas, false},
      {"SWP", fabric::RmwOp::swap, false}, {"LDADD", fabric::RmwOp::add, false},
      {"LDCLR", fabric::RmwOp::andnot, false}, {"LDSET", fabric::RmwOp::bit_or, false},
      {"LDEOR", fabric::RmwOp::bit_xor, false}, {"STADD", fabric::RmwOp::add, true},
      {"STCLR", fabric::RmwOp::andnot, true}, {"STSET", fabric::RmwOp::bit_or, true},
      {"STEOR", fabric::RmwOp::bit_xor, true}}};
  for (const Atomic& at : kAtomics) {
    if (!std::string_view(m).starts_with(at.name)) continue;
    char suffix = 0;
    if (!ordering_suffix(std::string_view(m).substr(at.name.size()), !at.store_form, in.order, suffix)) continue;
    in.op = Op::rmw;
    in.rmw_op = at.op;
    if (at.store_form) {
      p.count(2);
      in.a = p.source(p.ops[0]);
      in.addr = p.address(1);
    } else {
      p.count(3);
      in.a = p.source(p.ops[at.op == fabric::RmwOp::cas ? 1 : 0]);
      if (at.op == fabric::RmwOp::cas) {
        in.b = p.source(p.ops[0]);
        dst(0);
      } else {
        dst(1);
      }
      in.addr = p.address(2);
    }
    if (in.a.kind != Operand::Kind::reg) c.fail(text, "expected registers");
    in.size = Parser::access_size(in.a.width, suffix);
    return in;
  }
  p.unsupported();
}

}  // namespace cohsim::litmus::detail
