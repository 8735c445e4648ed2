// The final section of a litmus test: an optional `locations [...]` list and
// the condition (exists / ~exists / forall over a proposition of register
// and memory values), and its printing in herd's form.
#include <cctype>
#include <fmt/format.h>

#include "parse_internal.hpp"

namespace cohsim::litmus {
namespace detail {

namespace {

struct Token {
  std::string text;
  int line;
};

std::vector<Token> tokenize(std::string_view s, int first_line, const std::string& file) {
  std::vector<Token> out;
  int line = first_line;
  for (std::size_t i = 0; i < s.size();) {
    char ch = s[i];
    if (ch == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '%') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.' || s[j] == '%')) ++j;
      out.push_back({std::string(s.substr(i, j - i)), line});
      i = j;
    } else if (s.substr(i).starts_with("/\\") || s.substr(i).starts_with("\\/") || s.substr(i).starts_with("=>")) {
      out.push_back({std::string(s.substr(i, 2)), line});
      i += 2;
    } else if (std::string_view("~()=:[];-").find(ch) != std::string_view::npos) {
      out.push_back({std::string(1, ch), line});
      ++i;
    } else {
      throw ParseError(file, line, std::string(1, ch), "expected a condition (exists, ~exists, forall, /\\, \\/, ~, =)");
    }
  }
  return out;
}

class ConditionParser {
 public:
  ConditionParser(Test& t, std::vector<Token> tokens, const std::string& file, int last_line)
      : t_(t), tokens_(std::move(tokens)), file_(file), last_line_(last_line) {}

  void parse() {
    if (accept_word("locations")) {
      expect("[");
      while (!accept("]")) {
        if (at_end()) fail("']' closing the locations list");
        cell_reference();
        accept(";");
      }
    }
    if (peek_word("filter") || peek_word("cases")) throw Unsupported{fmt::format("final clause '{}'", peek().text)};
    if (accept_word("exists")) t_.quantifier = Quantifier::exists;
    else if (accept_word("forall")) t_.quantifier = Quantifier::forall;
    else if (accept("~") && accept_word("exists")) t_.quantifier = Quantifier::not_exists;
    else fail("exists, ~exists or forall");
    t_.prop = disjunction();
    accept(";");
    if (!at_end()) fail("the end of the condition");
    static constexpr const char* kWords[] = {"exists", "~exists", "forall"};
    t_.condition = fmt::format("{} ({})", kWords[static_cast<int>(t_.quantifier)], to_string(t_.prop, t_));
  }

  static std::string to_string(const Prop& p, const Test& t) {
    // Parentheses only where precedence needs them (~ binds tighter than /\, /\ than \/).
    auto precedence = [](const Prop& q) {
      return q.kind == Prop::Kind::disjunction ? 1 : q.kind == Prop::Kind::conjunction ? 2 : 3;
    };
    auto operand = [&](const Prop& q, int needed) {
      return precedence(q) >= needed ? to_string(q, t) : "(" + to_string(q, t) + ")";
    };
    switch (p.kind) {
      case Prop::Kind::truth: return "true";
      case Prop::Kind::falsity: return "false";
      case Prop::Kind::atom: {
        const Cell& c = t.cells[static_cast<std::size_t>(p.cell)];
        if (p.value.location >= 0) return fmt::format("{}={}", c.name, t.locations[static_cast<std::size_t>(p.value.location)].name);
        return fmt::format("{}={}", c.name, p.value.number);
      }
      case Prop::Kind::negation: {
        const Prop& q = p.operands[0];
        const bool bare = q.kind == Prop::Kind::truth || q.kind == Prop::Kind::falsity || q.kind == Prop::Kind::negation;
        return bare ? "~" + to_string(q, t) : "~(" + to_string(q, t) + ")";
      }
      case Prop::Kind::conjunction: return operand(p.operands[0], 2) + " /\\ " + operand(p.operands[1], 2);
      case Prop::Kind::disjunction: return operand(p.operands[0], 1) + " \\/ " + operand(p.operands[1], 1);
    }
    return "";
  }

 private:
  bool at_end() const { return pos_ >= tokens_.size(); }
  const Token& peek() const {
    static const Token kEnd{"", 0};
    return at_end() ? kEnd : tokens_[pos_];
  }
  bool peek_word(std::string_view w) const { return !at_end() && upper(tokens_[pos_].text) == upper(w); }
  bool accept(std::string_view s) {
    if (at_end() || tokens_[pos_].text != s) return false;
    ++pos_;
    return true;
  }
  bool accept_word(std::string_view w) {
    if (!peek_word(w)) return false;
    ++pos_;
    return true;
  }
  void expect(std::string_view s) {
    if (!accept(s)) fail(fmt::format("'{}'", s));
  }
  [[noreturn]] void fail(std::string_view expected) const {
    throw ParseError(file_, at_end() ? last_line_ : peek().line, at_end() ? "end of file" : peek().text,
                     "expected " + std::string(expected));
  }

  Prop disjunction() {
    Prop left = conjunction();
    while (accept("\\/")) left = binary(Prop::Kind::disjunction, std::move(left), conjunction());
    return left;
  }
  Prop conjunction() {
    Prop left = unary();
    while (accept("/\\")) left = binary(Prop::Kind::conjunction, std::move(left), unary());
    return left;
  }
  static Prop binary(Prop::Kind k, Prop a, Prop b) {
    Prop p;
    p.kind = k;
    p.operands.push_back(std::move(a));
    p.operands.push_back(std::move(b));
    return p;
  }
  Prop unary() {
    if (accept("~") || accept_word("not")) {
      Prop p;
      p.kind = Prop::Kind::negation;
      p.operands.push_back(unary());
      return p;
    }
    if (accept("(")) {
      Prop p = disjunction();
      expect(")");
      return p;
    }
    if (accept_word("true")) return Prop{Prop::Kind::truth, -1, {}, {}};
    if (accept_word("false")) return Prop{Prop::Kind::falsity, -1, {}, {}};
    if (peek_word("fault")) throw Unsupported{"condition 'fault(...)'"};
    Prop p;
    p.kind = Prop::Kind::atom;
    p.cell = cell_reference();
    expect("=");
    p.value = value();
    return p;
  }
  Value value() {
    bool negative = accept("-");
    if (at_end()) fail("a value");
    std::int64_t n = 0;
    if (parse_integer(peek().text, n)) {
      ++pos_;
      return Value{negative ? -n : n, -1};
    }
    if (!negative && is_identifier(peek().text)) return Value{0, location_index(t_, tokens_[pos_++].text)};
    fail("an integer or a location name");
  }
  /// P:REG, [loc], loc or loc[i]: the index of its cell (added on first use).
  int cell_reference() {
    if (at_end()) fail("a register (P:REG) or a location");
    std::int64_t thread = 0;
    if (parse_integer(peek().text, thread)) {
      const Token& at = peek();
      ++pos_;
      expect(":");
      if (thread < 0 || static_cast<std::size_t>(thread) >= t_.threads.size())
        throw ParseError(file_, at.line, at.text, fmt::format("expected a thread of the test (0..{})", t_.threads.size() - 1));
      if (at_end()) fail("a register");
      const Token& reg_token = tokens_[pos_++];
      int width = 8;
      int reg = register_of(t_.arch, reg_token.text, width);
      if (reg < 0 || reg == kZeroRegister)
        throw ParseError(file_, reg_token.line, reg_token.text, fmt::format("expected an {} register", arch_name(t_.arch)));
      std::string name = t_.arch == Arch::aarch64 ? fmt::format("{}:X{}", thread, reg)
                                                  : fmt::format("{}:{}", thread, reg_token.text);
      return cell_for(Cell{name, static_cast<int>(thread), reg, -1, 0});
    }
    bool bracket = accept("[");
    if (at_end() || !is_identifier(peek().text)) fail("a location name");
    std::string name = tokens_[pos_++].text;
    int element = 0;
    if (accept("[")) {
      std::int64_t n = 0;
      if (at_end() || !parse_integer(peek().text, n) || n < 0) fail("an array index");
      ++pos_;
      expect("]");
      element = static_cast<int>(n);
    }
    if (bracket) expect("]");
    int loc = location_index(t_, name);
    if (element >= t_.locations[static_cast<std::size_t>(loc)].elements) fail(fmt::format("an index of {}", name));
    std::string cell_name = element > 0 ? fmt::format("{}[{}]", name, element) : name;
    return cell_for(Cell{cell_name, -1, -1, loc, element});
  }
  int cell_for(const Cell& c) {
    for (std::size_t i = 0; i < t_.cells.size(); ++i) {
      const Cell& o = t_.cells[i];
      if (o.thread == c.thread && o.reg == c.reg && o.location == c.location && o.element == c.element)
        return static_cast<int>(i);
    }
    t_.cells.push_back(c);
    return static_cast<int>(t_.cells.size() - 1);
  }

  Test& t_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  const std::string& file_;
  int last_line_;
};

}  // namespace

void parse_final_section(Test& t, std::string_view text, const std::string& file, int first_line) {
  int last_line = first_line;  // the line of the last non-blank character
  for (std::size_t i = 0, end = trim(text).size() + static_cast<std::size_t>(trim(text).data() - text.data()); i < end; ++i)
    last_line += text[i] == '\n';
  ConditionParser(t, tokenize(text, first_line, file), file, last_line).parse();
}

}  // namespace detail
}  // namespace cohsim::litmus
