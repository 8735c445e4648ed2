// The structure of a herd7 litmus file: title, header lines, the init
// section, the program table and the final condition. Instructions are
// parsed by the dialect parsers (parse_aarch64.cpp, parse_x86.cpp).
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "parse_internal.hpp"

namespace cohsim::litmus {

ParseError::ParseError(const std::string& file, int line, const std::string& token, const std::string& expected)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: unexpected '{}': {}", file, line, token, expected)
                                  : fmt::format("{}: unexpected '{}': {}", file, token, expected)) {}

std::string_view arch_name(Arch a) { return a == Arch::aarch64 ? "AArch64" : "X86"; }

namespace detail {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      out.emplace_back(trim(s.substr(start, i - start)));
      start = i + 1;
    } else if (s[i] == '[' || s[i] == '(' || s[i] == '{') {
      ++depth;
    } else if (s[i] == ']' || s[i] == ')' || s[i] == '}') {
      --depth;
    }
  }
  if (out.size() == 1 && out[0].empty()) out.clear();
  return out;
}

bool parse_integer(std::string_view s, std::int64_t& out) {
  s = trim(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  std::uint64_t v = 0;
  for (char ch : s) {
    int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
            : (base == 16 && std::isxdigit(static_cast<unsigned char>(ch))) ? std::tolower(ch) - 'a' + 10
                                                                              : -1;
    if (d < 0) return false;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  out = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

bool is_mnemonic(std::string_view s) {
  return !s.empty() && std::isalpha(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.'; });
}

int location_index(Test& t, std::string_view name) {
  for (std::size_t i = 0; i < t.locations.size(); ++i)
    if (t.locations[i].name == name) return static_cast<int>(i);
  Location l;
  l.name = std::string(name);
  l.init = {0};
  l.init_pointer = {-1};
  t.locations.push_back(std::move(l));
  return static_cast<int>(t.locations.size() - 1);
}

int register_of(Arch arch, std::string_view name, int& width) {
  return arch == Arch::aarch64 ? aarch64_register(name, width) : x86_register(name, width);
}

}  // namespace detail

namespace {

using namespace detail;

/// The file's text with (* comments *) blanked (newlines kept), and a line index.
class Source {
 public:
  Source(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    int depth = 0;
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (i + 1 < text_.size() && text_[i] == '(' && text_[i + 1] == '*') {
        ++depth;
        text_[i] = text_[i + 1] = ' ';
        ++i;
      } else if (depth > 0 && i + 1 < text_.size() && text_[i] == '*' && text_[i + 1] == ')') {
        --depth;
        text_[i] = text_[i + 1] = ' ';
        ++i;
      } else if (depth > 0 && text_[i] != '\n') {
        text_[i] = ' ';
      }
    }
    for (std::size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') newlines_.push_back(i);
  }
  const std::string& text() const { return text_; }
  const std::string& file() const { return file_; }
  /// 1-based line of offset `pos`.
  int line_of(std::size_t pos) const {
    return static_cast<int>(std::lower_bound(newlines_.begin(), newlines_.end(), pos) - newlines_.begin()) + 1;
  }
  [[noreturn]] void fail(std::size_t pos, std::string_view token, std::string_view expected) const {
    throw ParseError(file_, line_of(pos), std::string(token.empty() ? "end of file" : token), std::string(expected));
  }

 private:
  std::string text_;
  std::string file_;
  std::vector<std::size_t> newlines_;
};

/// The end of the line starting at `pos` (the newline's offset or the text's end).
std::size_t line_end(const std::string& s, std::size_t pos) {
  std::size_t e = s.find('\n', pos);
  return e == std::string::npos ? s.size() : e;
}

int element_size_of_type(std::string_view type) {
  if (type == "int" || type == "int32_t" || type == "uint32_t" || type == "unsigned") return 4;
  if (type == "int64_t" || type == "uint64_t" || type == "long" || type == "intptr_t") return 8;
  if (type == "int16_t" || type == "uint16_t" || type == "short") return 2;
  if (type == "int8_t" || type == "uint8_t" || type == "char") return 1;
  return 0;
}

/// (Variant=ifetch) The location holding thread `thread`'s instruction at `label`.
int code_location_index(Test& t, std::int64_t thread, std::string_view label) {
  const std::string name = fmt::format("{}:{}", thread, label);
  const int index = location_index(t, name);
  Location& l = t.locations[static_cast<std::size_t>(index)];
  l.element_size = 4;
  l.code_thread = static_cast<int>(thread);
  l.code_label = std::string(label);
  return index;
}

/// A value in the init section or a condition: an integer, a location name,
/// or (Variant=ifetch) a code label `P:LABEL`.
Value parse_value(Test& t, std::string_view text, const Source& src, std::size_t pos) {
  text = trim(text);
  std::int64_t n = 0;
  if (parse_integer(text, n)) return Value{n, -1};
  if (is_identifier(text)) return Value{0, location_index(t, text)};
  const auto colon = text.find(':');
  std::int64_t thread = 0;
  const bool label = colon != std::string_view::npos && parse_integer(text.substr(0, colon), thread) &&
                     is_identifier(trim(text.substr(colon + 1)));
  if (label && t.ifetch) {
    if (thread < 0 || thread > 63) src.fail(pos, text, "expected a thread number before ':'");
    return Value{0, code_location_index(t, thread, trim(text.substr(colon + 1)))};
  }
  // Page-table values (PTE(x), (oa:PA(x))), and code labels without Variant=ifetch, are outside the subset.
  if (text.find('(') != std::string_view::npos || label) throw Unsupported{fmt::format("initial value '{}'", text)};
  src.fail(pos, text, "expected an integer or a location name");
}

/// (Variant=ifetch) An `ins_t` value: NOP, B .+N / B .-N, also written instr:"...".
Value parse_instruction_value(std::string_view text) {
  text = trim(text);
  if (text.starts_with("instr:")) text = trim(text.substr(6));
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = trim(text.substr(1, text.size() - 2));
  const std::string word = upper(text);
  if (word == "NOP") return Value{kNopEncoding, -1};
  std::int64_t offset = 0;
  if (word.starts_with("B .") && parse_integer(trim(std::string_view(word).substr(3)), offset) && offset % 4 == 0 &&
      offset / 4 >= -(std::int64_t{1} << 25) && offset / 4 < (std::int64_t{1} << 25))
    return Value{static_cast<std::int64_t>(kBranchEncoding | (static_cast<std::uint32_t>(offset / 4) & ~kBranchOpcodeMask)),
                 -1};
  throw Unsupported{fmt::format("instruction value '{}'", text)};
}

/// diy's `Prefetch=0:x=F,1:y=T` (a hint: items of another form are ignored).
void parse_prefetch(Test& t, std::string_view items) {
  for (const std::string& item : split_operands(items)) {
    const std::string_view it = trim(item);
    const std::size_t colon = it.find(':'), eq = it.rfind('=');
    if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon || eq + 2 != it.size()) continue;
    std::int64_t thread = 0;
    if (!parse_integer(it.substr(0, colon), thread) || thread < 0 || thread > 63) continue;
    const char how = it.back();
    if (how != 'F' && how != 'T' && how != 'W') continue;
    t.prefetch.push_back(
        PrefetchHint{static_cast<int>(thread), std::string(trim(it.substr(colon + 1, eq - colon - 1))), how});
  }
}

/// One statement of the init section.
void parse_init_statement(Test& t, std::string_view stmt, const Source& src, std::size_t pos) {
  stmt = trim(stmt);
  if (stmt.empty()) return;
  std::string_view lhs = stmt, rhs;
  bool has_value = false;
  if (auto eq = stmt.find('='); eq != std::string_view::npos) {
    lhs = trim(stmt.substr(0, eq));
    rhs = trim(stmt.substr(eq + 1));
    has_value = true;
  }
  // A leading type word.
  int element_size = 0;
  bool instruction = false;  // ins_t: values are instructions
  auto value_of = [&](std::string_view text) {
    return instruction ? parse_instruction_value(text) : parse_value(t, text, src, pos);
  };
  if (auto sp = lhs.find_first_of(" \t"); sp != std::string_view::npos && lhs.substr(0, sp).find(':') == std::string_view::npos &&
                                            lhs.front() != '[') {
    std::string_view type = lhs.substr(0, sp);
    element_size = type == "ins_t" && t.ifetch ? 4 : element_size_of_type(type);
    instruction = type == "ins_t";
    if (element_size == 0) {
      if (type == "pteval_t" || type == "ins_t" || type == "pte_t") throw Unsupported{fmt::format("type '{}'", type)};
      src.fail(pos, type, "expected a type (int, int32_t, int64_t, uint64_t...) or a location");
    }
    lhs = trim(lhs.substr(sp));
  }
  if (auto colon = lhs.find(':'); colon != std::string_view::npos) {  // P:REG
    std::int64_t thread = 0;
    if (!parse_integer(lhs.substr(0, colon), thread) || thread < 0 || thread > 63)
      src.fail(pos, lhs, "expected a thread number before ':'");
    std::string_view reg_name = trim(lhs.substr(colon + 1));
    int width = 8;
    int reg = register_of(t.arch, reg_name, width);
    if (reg < 0 || reg == kZeroRegister) src.fail(pos, reg_name, fmt::format("expected an {} register", arch_name(t.arch)));
    if (!has_value) src.fail(pos, stmt, "expected '=' and a value");
    if (t.threads.size() <= static_cast<std::size_t>(thread)) t.threads.resize(static_cast<std::size_t>(thread) + 1);
    t.threads[static_cast<std::size_t>(thread)].init.emplace_back(reg, value_of(rhs));
    return;
  }
  if (lhs.size() > 2 && lhs.front() == '[' && lhs.back() == ']') lhs = trim(lhs.substr(1, lhs.size() - 2));
  if (lhs.find('(') != std::string_view::npos) throw Unsupported{fmt::format("init '{}'", stmt)};
  int elements = 1;
  if (auto br = lhs.find('['); br != std::string_view::npos) {
    std::int64_t n = 0;
    if (lhs.back() != ']' || !parse_integer(lhs.substr(br + 1, lhs.size() - br - 2), n) || n < 1 || n > 64)
      src.fail(pos, lhs, "expected an array size in brackets (1..64)");
    elements = static_cast<int>(n);
    lhs = trim(lhs.substr(0, br));
  }
  if (!is_identifier(lhs)) src.fail(pos, lhs, "expected a location name");
  const auto index = static_cast<std::size_t>(location_index(t, lhs));
  {
    Location& l = t.locations[index];
    if (element_size != 0) l.element_size = element_size;
    l.elements = elements;
    l.init.assign(static_cast<std::size_t>(elements), 0);
    l.init_pointer.assign(static_cast<std::size_t>(elements), -1);
  }
  if (!has_value) return;
  std::vector<std::string> values;
  if (!rhs.empty() && rhs.front() == '{') {
    if (rhs.back() != '}') src.fail(pos, rhs, "expected '}' closing the array's values");
    values = split_operands(rhs.substr(1, rhs.size() - 2));
  } else {
    values = {std::string(rhs)};
  }
  if (static_cast<int>(values.size()) > elements) src.fail(pos, rhs, fmt::format("expected at most {} values", elements));
  for (std::size_t i = 0; i < values.size(); ++i) {
    Value v = value_of(values[i]);  // may declare a location (and move the others)
    Location& loc = t.locations[index];
    loc.init[i] = v.number;
    loc.init_pointer[i] = v.location;
  }
}

/// (Variant=ifetch) The instruction a code location starts with, as a word the
/// runner compares fetched values with: NOP and B as encoded, any other
/// instruction a tag of its own (0xf0000000 + its index: not an encoding the
/// runner executes, so only the instruction written in the test matches it).
std::uint32_t initial_code_word(const Instr& in, int pc) {
  if (in.op == Op::nop) return kNopEncoding;
  if (in.op == Op::branch && in.cond == Cond::al)
    return kBranchEncoding | (static_cast<std::uint32_t>(in.target - pc) & ~kBranchOpcodeMask);
  return 0xf0000000u + static_cast<std::uint32_t>(pc);
}

/// After the program: each code location's instruction, and each thread's map from instruction to location.
void resolve_code_locations(Test& t, const std::vector<std::map<std::string, int>>& labels, const std::string& file) {
  for (Thread& th : t.threads) th.code_location.assign(th.code.size(), -1);
  for (std::size_t i = 0; i < t.locations.size(); ++i) {
    Location& l = t.locations[i];
    if (l.code_thread < 0) continue;
    if (static_cast<std::size_t>(l.code_thread) >= t.threads.size())
      throw ParseError(file, 0, l.name, fmt::format("expected a thread of the test (it has {})", t.threads.size()));
    Thread& th = t.threads[static_cast<std::size_t>(l.code_thread)];
    const auto& thread_labels = labels[static_cast<std::size_t>(l.code_thread)];
    auto it = thread_labels.find(l.code_label);
    if (it == thread_labels.end() || it->second >= static_cast<int>(th.code.size()))
      throw ParseError(file, 0, l.name, fmt::format("expected a label of P{} on an instruction", l.code_thread));
    l.init = {initial_code_word(th.code[static_cast<std::size_t>(it->second)], it->second)};
    th.code_location[static_cast<std::size_t>(it->second)] = static_cast<int>(i);
  }
}

}  // namespace

Test parse_test(std::string_view text, const std::string& file) {
  Source src(text, file);
  const std::string& s = src.text();
  Test t;
  t.file = file;
  // Title.
  std::size_t pos = s.find_first_not_of(" \t\r\n");
  if (pos == std::string::npos) src.fail(s.size(), "", "expected 'ARCH NAME' (an empty file)");
  std::size_t end = line_end(s, pos);
  std::istringstream title(s.substr(pos, end - pos));
  title >> t.arch_word >> t.name;
  if (t.name.empty()) src.fail(pos, t.arch_word, "expected 'ARCH NAME' on the first line");
  if (t.arch_word == "AArch64") t.arch = Arch::aarch64;
  else if (t.arch_word == "X86" || t.arch_word == "X86_64") t.arch = Arch::x86;
  else {
    t.unsupported = fmt::format("architecture '{}'", t.arch_word);
    return t;
  }
  const bool att = t.arch_word == "X86_64";
  try {
    // Header lines up to '{' (or up to the program table, for a test without an init section).
    pos = end;
    std::size_t brace = std::string::npos, table = std::string::npos;
    std::string cache_type;  // CacheType= (IDC, DIC): meaningful with Variant=ifetch only
    while (pos < s.size()) {
      std::size_t b = pos + 1;
      std::size_t e = line_end(s, b);
      std::string_view line = trim(std::string_view(s).substr(b, e - b));
      if (!line.empty() && line.front() == '{') {
        brace = b + static_cast<std::size_t>(line.data() - (s.data() + b));
        break;
      }
      if (line.starts_with("P0") && line.size() > 2 && (line[2] == '|' || line[2] == ';' || std::isspace(static_cast<unsigned char>(line[2])))) {
        table = b;
        break;
      }
      const std::string key = upper(trim(line.substr(0, line.find('='))));
      if (line.find('=') != std::string_view::npos && key == "VARIANT") {
        // Instruction fetch is modelled; virtual memory and the other variants are not.
        if (upper(trim(line.substr(line.find('=') + 1))) != "IFETCH") throw Unsupported{std::string(line)};
        t.ifetch = true;
      }
      if (line.find('=') != std::string_view::npos && key == "CACHETYPE") cache_type = std::string(line);
      if (line.find('=') != std::string_view::npos && key == "PREFETCH") parse_prefetch(t, line.substr(line.find('=') + 1));
      pos = e;
    }
    if (!cache_type.empty() && !t.ifetch) throw Unsupported{cache_type};
    if (brace == std::string::npos && table == std::string::npos)
      src.fail(s.size(), "", "expected '{' opening the init section");
    // Init section: statements separated by ';' up to the matching '}'.
    int depth = 0;
    std::size_t stmt_start = brace + 1, close = table == std::string::npos ? std::string::npos : table - 1;
    for (std::size_t i = brace; table == std::string::npos && i < s.size() && close == std::string::npos; ++i) {
      if (s[i] == '{') ++depth;
      else if (s[i] == '}' && --depth == 0) close = i;
      if (depth == 1 && s[i] == ';') {
        parse_init_statement(t, std::string_view(s).substr(stmt_start, i - stmt_start), src, stmt_start);
        stmt_start = i + 1;
      }
      if (close != std::string::npos) {
        parse_init_statement(t, std::string_view(s).substr(stmt_start, i - stmt_start), src, stmt_start);
      }
    }
    if (close == std::string::npos) src.fail(s.size(), "", "expected '}' closing the init section");
    // Program table: a header "P0 | P1 ... ;" then rows until the condition.
    pos = close + 1;
    std::vector<std::pair<std::size_t, std::string_view>> rows;
    std::size_t final_start = s.size();
    while (pos < s.size()) {
      std::size_t e = line_end(s, pos);
      std::string_view line = trim(std::string_view(s).substr(pos, e - pos));
      if (!line.empty()) {
        std::string w = upper(line.substr(0, std::min<std::size_t>(line.size(), 9)));
        if (line.front() == '~' || w.starts_with("EXISTS") || w.starts_with("FORALL") || w.starts_with("LOCATIONS") ||
            w.starts_with("FILTER") || w.starts_with("CASES")) {
          final_start = pos;
          break;
        }
        rows.emplace_back(pos, line);
      }
      pos = e + 1;
    }
    if (rows.empty()) src.fail(close + 1, "", "expected the program table 'P0 | P1 ... ;'");
    auto cells_of = [&](std::size_t at, std::string_view row) {
      if (row.back() != ';') src.fail(at, row, "expected the row to end with ';'");
      row.remove_suffix(1);
      std::vector<std::string_view> cells;
      std::size_t start = 0;
      for (std::size_t i = 0; i <= row.size(); ++i)
        if (i == row.size() || row[i] == '|') {
          cells.push_back(trim(row.substr(start, i - start)));
          start = i + 1;
        }
      return cells;
    };
    auto header = cells_of(rows[0].first, rows[0].second);
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] != fmt::format("P{}", i)) src.fail(rows[0].first, header[i], fmt::format("expected P{}", i));
    if (t.threads.size() > header.size())
      src.fail(brace, fmt::format("{}:", t.threads.size() - 1), fmt::format("expected a thread of the test (it has {})", header.size()));
    t.threads.resize(header.size());
    std::vector<std::map<std::string, int>> labels(header.size());
    std::vector<std::vector<std::string>> targets(header.size());
    for (std::size_t r = 1; r < rows.size(); ++r) {
      auto cells = cells_of(rows[r].first, rows[r].second);
      const int line = src.line_of(rows[r].first);
      if (cells.size() != header.size())
        src.fail(rows[r].first, rows[r].second, fmt::format("expected {} columns separated by '|'", header.size()));
      for (std::size_t p = 0; p < cells.size(); ++p) {
        std::string_view cell = cells[p];
        Thread& th = t.threads[p];
        if (auto colon = cell.find(':'); colon != std::string_view::npos && is_identifier(trim(cell.substr(0, colon)))) {
          std::string label(trim(cell.substr(0, colon)));
          if (!labels[p].emplace(label, static_cast<int>(th.code.size())).second)
            src.fail(rows[r].first, label, "a label defined twice in one thread (expected one definition)");
          cell = trim(cell.substr(colon + 1));
        }
        if (cell.empty()) continue;
        InstrContext c{file, line, t, {}};
        Instr in = t.arch == Arch::aarch64 ? parse_aarch64(cell, c) : parse_x86(cell, c, att);
        in.line = line;
        in.text = std::string(cell);
        th.code.push_back(std::move(in));
        targets[p].push_back(c.target_label);
      }
    }
    for (std::size_t p = 0; p < t.threads.size(); ++p)
      for (std::size_t i = 0; i < t.threads[p].code.size(); ++i) {
        Instr& in = t.threads[p].code[i];
        if (targets[p][i].empty()) continue;
        auto it = labels[p].find(targets[p][i]);
        if (it == labels[p].end()) throw ParseError(file, in.line, targets[p][i], fmt::format("expected a label of P{}", p));
        in.target = it->second;
      }
    resolve_code_locations(t, labels, file);
    if (final_start == s.size()) src.fail(s.size(), "", "expected the condition (exists, ~exists or forall)");
    detail::parse_final_section(t, std::string_view(s).substr(final_start), file, src.line_of(final_start));
  } catch (const Unsupported& u) {
    t.unsupported = u.what;
  }
  return t;
}

Test read_test(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(path, 0, path, "expected a readable litmus file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_test(ss.str(), path);
}

}  // namespace cohsim::litmus
