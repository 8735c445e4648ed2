// Shared by the litmus parsers: the error helpers, operand splitting and the
// per-dialect instruction parsers the test-structure parser calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cohsim/litmus/test.hpp"

namespace cohsim::litmus::detail {

/// Thrown for a feature outside the subset; parse_test turns it into Test::unsupported.
struct Unsupported {
  std::string what;
};

/// Where an instruction is being parsed, and what it may refer to.
struct InstrContext {
  const std::string& file;
  int line;
  Test& test;
  std::string target_label;  ///< out: the label a branch names
  [[noreturn]] void fail(std::string_view token, std::string_view expected) const {
    throw ParseError(file, line, std::string(token), std::string(expected));
  }
};

/// Text without leading and trailing blanks.
std::string_view trim(std::string_view s);
/// Upper-case copy.
std::string upper(std::string_view s);
/// Splits at commas outside brackets and parentheses; each part trimmed.
std::vector<std::string> split_operands(std::string_view s);
/// Parses a decimal or 0x-hex integer, optionally signed; false if it is not one.
bool parse_integer(std::string_view s, std::int64_t& out);
/// The index of location `name`, declared on first use (a valid identifier is required).
int location_index(Test& t, std::string_view name);
/// True for a C-like identifier.
bool is_identifier(std::string_view s);
/// True for a word that can be a mnemonic (letters and digits, AArch64 "B.EQ" dots):
/// an unknown one is unsupported, anything else a syntax error.
bool is_mnemonic(std::string_view s);

/// An AArch64 register name (X0..X30, W0..W30, XZR, WZR): its index and width, or -1.
int aarch64_register(std::string_view name, int& width);
/// An x86 register name (rax/eax.., r8/r8d..; a leading % allowed): its index and width, or -1.
int x86_register(std::string_view name, int& width);
/// A register of `arch` by name (-1 if none).
int register_of(Arch arch, std::string_view name, int& width);

/// The final section (`locations [...]` and the condition) starting at line `first_line`.
void parse_final_section(Test& t, std::string_view text, const std::string& file, int first_line);

/// One AArch64 instruction (throws ParseError or Unsupported).
Instr parse_aarch64(std::string_view text, InstrContext& c);
/// One x86 instruction, Intel operand order (`X86`) or AT&T (`X86_64`).
Instr parse_x86(std::string_view text, InstrContext& c, bool att);

}  // namespace cohsim::litmus::detail
