// x86 instructions of the litmus subset in herd's two dialects: `X86`
// (Intel operand order, `MOV [x],$1`, `MOV EAX,[y]`) and `X86_64` (AT&T,
// `movl $1,(x)`, `movl (y),%eax`). Mnemonics in either case; immediates with
// or without `$`. Locked operations are full barriers (Order::full).
#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "parse_internal.hpp"

namespace cohsim::litmus::detail {

int x86_register(std::string_view name, int& width) {
  std::string n = upper(trim(name));
  if (!n.empty() && n[0] == '%') n.erase(0, 1);
  static const std::array<std::string_view, 8> kLegacy = {"AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP"};
  for (std::size_t i = 0; i < kLegacy.size(); ++i) {
    if (n.size() == 3 && n.substr(1) == kLegacy[i] && (n[0] == 'R' || n[0] == 'E')) {
      width = n[0] == 'R' ? 8 : 4;
      return static_cast<int>(i);
    }
  }
  if (n.size() >= 2 && n[0] == 'R' && std::isdigit(static_cast<unsigned char>(n[1]))) {
    bool dword = n.back() == 'D';
    std::int64_t r = 0;
    if (!parse_integer(std::string_view(n).substr(1, n.size() - 1 - (dword ? 1 : 0)), r) || r < 8 || r > 15) return -1;
    width = dword ? 4 : 8;
    return static_cast<int>(r);
  }
  return -1;
}

namespace {

/// An x86 operand: a register, an immediate or a memory reference.
struct X86Operand {
  enum class Kind { reg, imm, mem } kind = Kind::imm;
  Operand value;  ///< reg or imm
  Address addr;   ///< mem
};

struct X86Parser {
  InstrContext& c;
  std::string_view text;
  bool att;

  X86Operand operand(std::string_view s) const {
    s = trim(s);
    X86Operand o;
    int width = 8;
    if (int r = x86_register(s, width); r >= 0) {
      o.kind = X86Operand::Kind::reg;
      o.value.kind = Operand::Kind::reg;
      o.value.reg = r;
      o.value.width = width;
      return o;
    }
    std::string_view imm = s;
    if (!imm.empty() && imm[0] == '$') imm.remove_prefix(1);
    std::int64_t v = 0;
    if (parse_integer(imm, v)) {
      o.value.kind = Operand::Kind::imm;
      o.value.imm.number = v;
      return o;
    }
    // Memory: Intel [x], [x+4], [rax]; AT&T (x), 4(x), (%rax).
    std::string_view inner, displacement;
    if (s.size() >= 3 && s.front() == '[' && s.back() == ']') {
      inner = trim(s.substr(1, s.size() - 2));
      if (auto plus = inner.find('+'); plus != std::string_view::npos) {
        displacement = trim(inner.substr(plus + 1));
        inner = trim(inner.substr(0, plus));
      }
    } else if (auto open = s.find('('); open != std::string_view::npos && s.back() == ')') {
      displacement = trim(s.substr(0, open));
      inner = trim(s.substr(open + 1, s.size() - open - 2));
    } else {
      c.fail(s, att ? "expected %reg, $imm or (x)" : "expected a register, $imm or [x]");
    }
    o.kind = X86Operand::Kind::mem;
    if (int r = x86_register(inner, width); r >= 0) {
      if (width != 8) c.fail(inner, "expected a 64-bit base register");
      o.addr.base_reg = r;
    } else if (is_identifier(inner)) {
      o.addr.location = location_index(c.test, inner);
    } else {
      c.fail(inner, "expected a location name or a base register");
    }
    if (!displacement.empty() && !parse_integer(displacement, o.addr.offset)) c.fail(displacement, "expected a byte offset");
    return o;
  }
};

Cond jump_condition(std::string_view m) {
  static const std::array<std::pair<std::string_view, Cond>, 17> kJumps = {{{"JMP", Cond::al}, {"JE", Cond::eq},
      {"JZ", Cond::eq}, {"JNE", Cond::ne}, {"JNZ", Cond::ne}, {"JL", Cond::lt}, {"JGE", Cond::ge}, {"JG", Cond::gt},
      {"JLE", Cond::le}, {"JB", Cond::lo}, {"JAE", Cond::hs}, {"JA", Cond::hi}, {"JBE", Cond::ls}, {"JS", Cond::mi},
      {"JNS", Cond::pl}, {"JC", Cond::lo}, {"JNC", Cond::hs}}};
  for (auto [name, cond] : kJumps)
    if (name == m) return cond;
  return static_cast<Cond>(255);
}

}  // namespace

Instr parse_x86(std::string_view text, InstrContext& c, bool att) {
  text = trim(text);
  X86Parser p{c, text, att};
  std::string_view rest = text;
  auto next_word = [&] {
    rest = trim(rest);
    std::size_t sp = rest.find_first_of(" \t");
    std::string w = upper(rest.substr(0, sp));
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp);
    return w;
  };
  std::string m = next_word();
  if (!is_mnemonic(m) || m.find('.') != std::string::npos)
    c.fail(text.substr(0, text.find_first_of(" \t")), "expected an instruction mnemonic");
  bool locked = false;
  if (m == "LOCK") {
    locked = true;
    m = next_word();
  }
  auto unsupported = [&]() -> Instr { throw Unsupported{fmt::format("instruction '{}' (line {})", text, c.line)}; };
  Instr in;
  if (jump_condition(m) != static_cast<Cond>(255)) {
    in.op = Op::branch;
    in.cond = jump_condition(m);
    c.target_label = std::string(trim(rest));
    if (c.target_label.empty()) c.fail(text, "expected a label");
    return in;
  }
  // The operation, without an AT&T size suffix (b, w, l, q) when it has one.
  static const std::array<std::string_view, 14> kOps = {"MOV", "XCHG", "ADD", "SUB", "XADD", "CMPXCHG", "INC", "CMP",
                                                         "XOR", "OR", "AND", "MFENCE", "LFENCE", "SFENCE"};
  int suffix_size = 0;
  auto known = [&](std::string_view w) { return std::find(kOps.begin(), kOps.end(), w) != kOps.end(); };
  if (!known(m) && m.size() > 1 && std::string_view("BWLQ").find(m.back()) != std::string_view::npos &&
      known(std::string_view(m).substr(0, m.size() - 1))) {
    suffix_size = m.back() == 'B' ? 1 : m.back() == 'W' ? 2 : m.back() == 'L' ? 4 : 8;
    m.pop_back();
  }
  if (m == "NOP") return in;
  if (!known(m)) return unsupported();
  if (m == "MFENCE" || m == "LFENCE" || m == "SFENCE") {
    in.op = m == "MFENCE" ? Op::mfence : m == "LFENCE" ? Op::lfence : Op::sfence;
    return in;
  }
  auto words = split_operands(rest);
  std::vector<X86Operand> ops;
  for (const auto& w : words) ops.push_back(p.operand(w));
  if (att) std::reverse(ops.begin(), ops.end());  // destination first, as Intel writes it
  const std::size_t want = m == "INC" ? 1 : 2;
  if (ops.size() != want) c.fail(text, fmt::format("{} takes {} operands", m, want));
  // The access size: a register operand's width, else the suffix, else 4 (herd's X86 is 32-bit).
  int size = suffix_size != 0 ? suffix_size : 4;
  for (const auto& o : ops)
    if (o.kind == X86Operand::Kind::reg && suffix_size == 0) size = o.value.width;
  in.size = size;
  const X86Operand& d = ops[0];
  const X86Operand* s = ops.size() > 1 ? &ops[1] : nullptr;
  auto write_reg = [&](const X86Operand& o) {
    in.dst = o.value.reg;
    in.dst_width = size;
  };
  auto one = [] {
    Operand o;
    o.kind = Operand::Kind::imm;
    o.imm.number = 1;
    return o;
  };
  if (d.kind == X86Operand::Kind::imm) c.fail(words.empty() ? text : std::string_view(words[att ? words.size() - 1 : 0]), "expected a destination register or memory");
  const bool to_memory = d.kind == X86Operand::Kind::mem;
  if (s && s->kind == X86Operand::Kind::mem && to_memory) c.fail(text, "expected at most one memory operand");
  if (m == "MOV") {
    if (locked) return unsupported();
    if (to_memory) {
      in.op = Op::store;
      in.addr = d.addr;
      in.a = s->value;
    } else if (s->kind == X86Operand::Kind::mem) {
      in.op = Op::load;
      in.addr = s->addr;
      write_reg(d);
    } else {
      in.op = Op::mov;
      write_reg(d);
      in.a = s->value;
    }
    return in;
  }
  if (m == "XCHG") {  // implicitly locked
    const X86Operand* mem = to_memory ? &d : s;
    const X86Operand* reg = to_memory ? s : &d;
    if (mem->kind != X86Operand::Kind::mem || reg->kind != X86Operand::Kind::reg) return unsupported();
    in.op = Op::rmw;
    in.rmw_op = fabric::RmwOp::swap;
    in.order = cpu::Order::full;
    in.addr = mem->addr;
    in.a = reg->value;
    write_reg(*reg);
    return in;
  }
  if (m == "CMP") {
    if (to_memory || s->kind == X86Operand::Kind::mem) return unsupported();
    in.op = Op::cmp;
    in.a = d.value;
    in.b = s->value;
    return in;
  }
  static const std::array<std::pair<std::string_view, AluOp>, 6> kAlu = {{{"ADD", AluOp::add}, {"INC", AluOp::add},
      {"SUB", AluOp::sub}, {"XOR", AluOp::eor}, {"OR", AluOp::orr}, {"AND", AluOp::and_}}};
  if (locked) {
    if (!to_memory) c.fail(text, "a LOCK prefix needs a memory destination");
    in.op = Op::rmw;
    in.order = cpu::Order::full;
    in.addr = d.addr;
    in.a = s ? s->value : one();
    if (m == "XADD" || m == "CMPXCHG") {
      if (s->kind != X86Operand::Kind::reg) c.fail(text, "expected a register source");
      if (m == "XADD") {
        in.rmw_op = fabric::RmwOp::add;
        write_reg(*s);
      } else {
        in.rmw_op = fabric::RmwOp::cas;
        in.b.kind = Operand::Kind::reg;  // compares with rax / eax
        in.b.reg = 0;
        in.b.width = size;
        in.dst = 0;
        in.dst_width = size;
        in.sets_compare_flags = true;
      }
      return in;
    }
    if (m == "ADD" || m == "INC") in.rmw_op = fabric::RmwOp::add;
    else if (m == "OR") in.rmw_op = fabric::RmwOp::bit_or;
    else if (m == "XOR") in.rmw_op = fabric::RmwOp::bit_xor;
    else if (m == "SUB" && in.a.kind == Operand::Kind::imm) {
      in.rmw_op = fabric::RmwOp::add;
      in.a.imm.number = -in.a.imm.number;
    } else {
      return unsupported();
    }
    return in;
  }
  if (m == "XADD" || m == "CMPXCHG") return unsupported();  // not atomic without LOCK: outside the subset
  for (auto [name, op] : kAlu) {
    if (m != name) continue;
    in.alu = op;
    if (to_memory) {
      if (op != AluOp::add) return unsupported();
      in.op = Op::mem_alu;
      in.addr = d.addr;
      in.a = s ? s->value : one();
      return in;
    }
    if (s && s->kind == X86Operand::Kind::mem) return unsupported();
    in.op = Op::alu;
    write_reg(d);
    in.a = d.value;
    in.b = s ? s->value : one();
    in.sets_result_flags = true;
    return in;
  }
  return unsupported();
}

}  // namespace cohsim::litmus::detail
