// A herd7-format litmus test, parsed: locations with their initial values,
// one program per thread in a small instruction set shared by the AArch64 and
// x86 dialects, and the final condition. Parsing never guesses: a feature or
// instruction outside the supported subset makes the test `unsupported`
// (naming it); malformed text throws ParseError naming file, line and token.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/fabric.hpp"

namespace cohsim::litmus {

/// Malformed input: the message names the file, the line and the offending token.
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& file, int line, const std::string& token, const std::string& expected);
};

/// The instruction set family of a test (its first word).
enum class Arch { aarch64, x86 };
/// The word a test file starts with, as herd writes it ("AArch64", "X86", "X86_64").
std::string_view arch_name(Arch a);

/// A register of the test's thread: AArch64 X0..X30, or x86 rax.. r15 (0..15).
/// kZeroRegister reads as 0 and discards writes (WZR / XZR).
inline constexpr int kZeroRegister = 31;
inline constexpr int kRegisterCount = 32;

/// A shared memory location: one line of its own, or an array in one allocation.
struct Location {
  std::string name;
  int element_size = 8;                 ///< bytes per element (int: 4, int64_t: 8; untyped: 8)
  int elements = 1;                     ///< 1, or the array length
  std::vector<std::int64_t> init;       ///< initial value per element
  std::vector<int> init_pointer;        ///< per element: index of a location whose address it holds, or -1
  int code_thread = -1;                 ///< (Variant=ifetch) an instruction of this thread, at `code_label`
  std::string code_label;               ///< its label; init[0] is then the instruction's encoding
};

/// A value an operand or an initial register holds: a number or a location's address.
struct Value {
  std::int64_t number = 0;
  int location = -1;  ///< when >= 0, the address of this location (plus number as a byte offset)
};

/// Arithmetic and logic of the subset.
enum class AluOp : std::uint8_t { add, sub, eor, and_, orr, lsl, lsr };
/// Branch and select conditions (AArch64 names; x86 jcc map onto them).
enum class Cond : std::uint8_t { al, eq, ne, lt, ge, gt, le, lo, hs, hi, ls, mi, pl };
/// How an index register extends before it is added (AArch64 [Xn,Wm,SXTW]).
enum class Extend : std::uint8_t { none, sxtw, uxtw };

/// A source operand: a register (read at `width` bytes, optionally extended) or an immediate.
struct Operand {
  enum class Kind : std::uint8_t { none, reg, imm } kind = Kind::none;
  int reg = kZeroRegister;
  int width = 8;           ///< 4 for W / e?x registers, 8 for X / r?x
  Extend extend = Extend::none;
  int shift = 0;           ///< left shift after the extension (LSL #n, SXTW #n)
  Value imm;
};

/// A memory address: a base register or a location, plus an immediate or an index register.
struct Address {
  int base_reg = -1;       ///< register holding the address, or -1
  int location = -1;       ///< x86: the symbolic location, or -1
  std::int64_t offset = 0;
  Operand index;           ///< none, or a register (extended as it says)
  /// AArch64 writeback: pre-index [Xn,#imm]! (access at Xn+imm, then Xn = Xn+imm),
  /// post-index [Xn],#imm (access at Xn, then Xn = Xn+imm).
  enum class Writeback : std::uint8_t { none, pre, post } writeback = Writeback::none;
};

/// The operations of the subset, shared by both dialects.
enum class Op : std::uint8_t {
  nop,
  mov,          ///< dst = a
  alu,          ///< dst = a <alu> b (x86 two-operand forms also set the flags to the result)
  cmp,          ///< flags = NZCV of a <flag_op> b (CMP, CMN, TST; CCMP, CCMN when `cond` holds)
  csel,         ///< dst = cond ? a : b (CSINC: b + 1, CSNEG: -b; CSET: 1, 0)
  load,         ///< dst = [addr] (order)
  store,        ///< [addr] = a (order)
  load_pair,    ///< LDP / LDIAPP: dst = [addr], dst2 = [addr + size] (LDIAPP: each like LDAPR, in order)
  store_pair,   ///< STP / STILP: [addr] = a, then [addr + size] = b (STILP: each a release)
  load_excl,    ///< LDXR / LDAXR
  store_excl,   ///< STXR / STLXR: dst = 0 on success, 1 on failure
  rmw,          ///< CAS / SWP / LD<op> / ST<op> / x86 locked ops: dst = old value (unless no result)
  mem_alu,      ///< x86 non-locked ADD / INC to memory: a load, then a store of old <alu> a
  dmb, dsb, isb, mfence, lfence, sfence,
  branch,       ///< if cond(flags) goto target (Cond::al: always)
  cbz, cbnz,    ///< if a ==/!= 0 goto target (TBZ / TBNZ: if (a AND b) ==/!= 0)
};

/// One instruction, in the form the runner executes.
struct Instr {
  Op op = Op::nop;
  AluOp alu = AluOp::add;
  Cond cond = Cond::al;
  int size = 8;                 ///< access size in bytes (loads, stores, atomics)
  cpu::Order order = cpu::Order::relaxed;
  int dst = kZeroRegister;      ///< register written (kZeroRegister: none)
  int dst2 = kZeroRegister;     ///< load_pair's second register
  int dst_width = 8;            ///< 4: a W / 32-bit write (zero-extends)
  Operand a, b;                 ///< sources (rmw: a = operand, b = compare)
  Address addr;
  fabric::RmwOp rmw_op = fabric::RmwOp::add;
  bool sets_compare_flags = false;  ///< x86 cmpxchg: flags = compare(old, expected)
  bool sets_result_flags = false;   ///< x86 ALU: flags = compare(result, 0)
  bool sets_flags = false;          ///< AArch64 SUBS, ADDS, ANDS: flags = NZCV of a <flag_op> b, as CMP, CMN, TST
  /// cmp and sets_flags: the operation whose NZCV the flags get (CMP/SUBS sub, CMN/ADDS add, TST/ANDS and).
  enum class FlagOp : std::uint8_t { sub, add, and_ } flag_op = FlagOp::sub;
  /// CCMP / CCMN (cmp with `conditional`): when `cond` fails the flags become `nzcv` instead.
  bool conditional = false;
  std::uint8_t nzcv = 0;
  /// csel: what the result is when the condition fails (CSEL b, CSINC b + 1, CSNEG -b).
  enum class Otherwise : std::uint8_t { b, b_plus_one, minus_b } otherwise = Otherwise::b;
  cpu::Domain domain = cpu::Domain::sy;
  cpu::BarrierType barrier = cpu::BarrierType::all;
  int target = -1;              ///< branch target: index into the thread's code
  int line = 0;                 ///< line of the test file
  std::string text;             ///< as written
};

/// One thread's program and initial registers.
struct Thread {
  std::vector<Instr> code;
  /// (Variant=ifetch) per instruction: the location holding it when another
  /// thread may write it (its label is a value of the test), else -1.
  std::vector<int> code_location;
  std::vector<std::pair<int, Value>> init;  ///< register -> initial value
};

/// A condition over the final state.
struct Prop {
  enum class Kind : std::uint8_t { truth, falsity, atom, negation, conjunction, disjunction } kind = Kind::truth;
  int cell = -1;               ///< atom: index into Test::cells
  Value value;                 ///< atom: the value compared with
  std::vector<Prop> operands;  ///< negation: 1; conjunction / disjunction: 2
};

/// A register or a memory element the final state records.
struct Cell {
  std::string name;            ///< as herd prints it: "1:X0", "0:rax", "x", "x[1]"
  int thread = -1;             ///< register cells: the thread; memory cells: -1
  int reg = -1;                ///< register cells
  int location = -1;           ///< memory cells
  int element = 0;             ///< memory cells: the array element
};

/// How the final condition quantifies over runs.
enum class Quantifier { exists, not_exists, forall };

/// One item of diy's `Prefetch=` header line (`1:x=T`): the cache state the
/// cycle's relaxation wants thread `thread` to start with for `location`:
/// 'F' flushed (not cached), 'T' touched (read), 'W' written (held writable).
/// The runner starts some runs so (litmus7's -preload custom).
struct PrefetchHint {
  int thread = 0;
  std::string location;
  char how = 'F';
};

/// A parsed test. `unsupported` is non-empty when the test uses something
/// outside the subset; the rest is then incomplete and must not be run.
struct Test {
  std::string name;
  std::string file;
  Arch arch = Arch::aarch64;
  std::string arch_word;       ///< the first word as written
  std::string unsupported;     ///< e.g. "instruction 'TLBI VAAE1IS,X9' (line 9)"
  bool ifetch = false;         ///< Variant=ifetch: instructions are fetched from memory another thread may write
  std::vector<Location> locations;
  std::vector<PrefetchHint> prefetch;  ///< the `Prefetch=` header line, items that name a thread and F, T or W
  std::vector<Thread> threads;
  std::vector<Cell> cells;     ///< what the final state records: `locations [...]` and the condition's cells, in order of appearance
  Quantifier quantifier = Quantifier::exists;
  Prop prop;
  std::string condition;       ///< the condition, printed as herd does
};

/// (Variant=ifetch) The AArch64 encodings an instruction written to memory may
/// have for the runner to execute it when fetched: NOP and B (imm26 words).
inline constexpr std::uint32_t kNopEncoding = 0xd503201f;
inline constexpr std::uint32_t kBranchEncoding = 0x14000000, kBranchOpcodeMask = 0xfc000000;

/// Parses the text of a test file (`file` names it in errors).
Test parse_test(std::string_view text, const std::string& file);
/// Reads and parses a test file (throws ParseError, also when it cannot be read).
Test read_test(const std::string& path);

}  // namespace cohsim::litmus
