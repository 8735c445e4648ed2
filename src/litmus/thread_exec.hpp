// One litmus thread on one simulated CPU for one run: its registers as lazy
// values over in-flight loads, branch speculation with rewind, deferral of
// accesses waiting for their address, and the issue of memory operations to
// the CPU.
#pragma once

#include <array>
#include <optional>
#include <utility>
#include <cstdint>
#include <vector>

#include "cohsim/litmus/runner.hpp"

namespace cohsim::litmus::detail {

/// `v` cut to its low `width` bytes.
inline std::uint64_t mask(std::uint64_t v, int width) {
  return width >= 8 ? v : v & ((std::uint64_t{1} << (8 * width)) - 1);
}

// values.cpp: the arithmetic of a thread's expression nodes.
/// `v`'s low `width` bytes as a signed number.
std::int64_t sign_extend(std::uint64_t v, int width);
/// Whether `c` holds comparing `a` with `b` at `width` bytes (CBZ, CBNZ, TBZ, TBNZ).
bool holds(Cond c, std::uint64_t a, std::uint64_t b, int width);
/// The NZCV flags (N bit 3, Z 2, C 1, V 0) of `a op b` at `width` bytes, as AArch64 sets them (SUBS, ADDS, ANDS).
std::uint64_t nzcv_of(Instr::FlagOp op, std::uint64_t a, std::uint64_t b, int width);
/// Whether condition `c` holds on flags `f` (nzcv_of's layout).
bool holds_on(Cond c, std::uint64_t f);
/// `a op b` (64 bits).
std::uint64_t alu(AluOp op, std::uint64_t a, std::uint64_t b);

/// How often waiting deferred operations (and held stores) look at their inputs.
inline constexpr sim::Tick kDeferredPoll = 2 * sim::kNs;

/// Where this run's locations live.
struct Layout {
  std::vector<fabric::Addr> base;   ///< per location
  std::vector<std::uint64_t> bytes; ///< per location
  /// The address a Value stands for (a location's address plus offset, or the number).
  std::uint64_t address_of(const Value& v) const {
    return v.location >= 0 ? base[static_cast<std::size_t>(v.location)] + static_cast<std::uint64_t>(v.number)
                           : static_cast<std::uint64_t>(v.number);
  }
  /// A raw value as the final state shows it: inside a location, that location plus offset.
  Value describe(std::uint64_t v) const;
  /// True when [a, a + n) lies inside one location.
  bool contains(fabric::Addr a, std::uint64_t n) const;
};

/// A register value: a constant (node < 0) or a node of the thread's expression graph.
struct Val {
  std::int32_t node = -1;
  std::uint64_t k = 0;
};

class ThreadExec {
 public:
  ThreadExec(const Test& test, int index, cpu::Cpu& cpu, sim::RandomStream& branch_rng);
  /// Prepares a run: initial registers from the test, with this run's addresses.
  void reset(const Layout& layout);
  /// The thread's program: waits `start`, then issues every instruction.
  sim::Task<void> run(sim::Tick start);
  /// Timing noise for the next runs (arm64): each plain store lingers, held
  /// by the runner, for a delay uniform in [0, max) from `rng` before it may
  /// enter the store buffer, while later loads go on (0: off).
  void set_linger(sim::RandomStream* rng, sim::Tick max) {
    linger_rng_ = rng;
    linger_max_ = rng != nullptr ? max : 0;
  }
  /// A register's final value (after run() finished; only registers the test's cells name).
  std::uint64_t final_register(int reg) const { return final_[static_cast<std::size_t>(reg)]; }

 private:
  /// condition: a compare of a and b (CBZ); nzcv: the flags of a <sub> b; flag_test: condition <sub> on flags a.
  enum class Kind : std::uint8_t { load, alu, condition, select, zero_extend32, sign_extend32, nzcv, flag_test };
  struct Node {
    Kind kind = Kind::load;
    std::uint8_t sub = 0;    ///< AluOp or Cond
    std::uint8_t width = 8;  ///< result / comparison width in bytes
    bool known = false;
    std::int32_t future = -1;
    Val a, b, c;
    std::uint64_t value = 0;
  };
  struct Checkpoint {
    int taken_pc, fallthrough_pc;
    Val condition;
    bool predicted_taken;
    std::array<Val, kRegisterCount> regs;
    Val flags;
    std::size_t nodes, futures;
  };

  /// A load, or an atomic without acquire, whose address or operands wait for
  /// earlier loads: later plain loads whose addresses are known are issued
  /// before it (arm64), as an out-of-order core does; it is performed, in
  /// program order, when something later needs it (flush_deferred).
  struct Deferred {
    int pc;
    Val address, a, b;  ///< its address and operands as they were at its turn
    std::int32_t node;  ///< its result (an atomic: the value its read returned early, once issued)
    Checkpoint at;      ///< the state at its turn (a load issued early is replayed from here)
    bool predicted = false;       ///< a CAS whose result was predicted to be Rs (success)
    std::uint64_t prediction = 0; ///< that predicted result
  };
  /// A plain load issued while older ones were deferred: replayed (execution
  /// rewound to it) if an older one turns out to access its bytes and the
  /// values could disagree.
  struct Bypass {
    fabric::Addr addr;
    int size;
    std::int32_t node;
    Checkpoint at;
  };
  /// A deferred access once performed: the older side of the overlap check
  /// against every younger load issued before it (an atomic that wrote: any
  /// overlap replays the younger load; a load or a failed CAS: only a
  /// different value).
  struct Late {
    fabric::Addr addr;
    int size;
    std::int32_t node;
    bool wrote;
  };
  /// A load satisfied from the write of the newest deferred atomic (a CAS or
  /// SWP whose address and data are known) before it is performed, as a store
  /// buffer forwards: replayed if the atomic turns out not to write that value.
  struct Forwarded {
    std::int32_t atomic;  ///< the atomic's node
    std::int32_t node;    ///< the load's node (its value)
    std::uint64_t value;
    Checkpoint at;
  };
  /// A plain store on a predicted path: held here (not yet in the CPU's store
  /// buffer) until its branches resolve, and forwarded to later loads of its
  /// bytes meanwhile; dropped with the path if it was wrong.
  struct Held {
    fabric::Addr addr;
    int size;
    Val value;          ///< its data, lazy (awaited when it enters the store buffer)
    std::int32_t node;  ///< a node marking its place in program order (for rewinds)
    sim::Tick not_before = 0;  ///< a lingering store enters the store buffer no earlier
  };
  /// A load deferred on a predicted path whose address turned out outside the
  /// test's locations before its branches resolved: not performed, its node a
  /// placeholder; an error if the path turns out right.
  struct Poisoned {
    std::int32_t node;
    int pc;
    fabric::Addr addr;
  };
  /// Fails on the oldest surviving Poisoned load (every branch resolved: its path was right).
  void check_poisoned() const;
  bool known(Val v) const { return v.node < 0 || nodes_[static_cast<std::size_t>(v.node)].known; }
  /// True when `v` can be evaluated without waiting (the loads it needs have completed).
  bool ready_now(Val v);
  /// True when `in` may be executed while older operations are deferred.
  bool may_pass_deferred(const Instr& in) const;
  /// True when `in` is a store that may be held on a predicted path (arm64, plain, no writeback).
  bool holdable(const Instr& in) const;
  /// True when `in` may execute while stores are held (it neither orders them nor writes).
  bool may_pass_held(const Instr& in) const;
  /// True when `in` may itself be deferred.
  bool deferrable(const Instr& in) const;
  /// True when a load at node `node` of [addr, addr + size) overlaps an older held store.
  bool behind_held(std::int32_t node, fabric::Addr addr, int size) const;
  /// Performs every deferred operation, oldest first; true when a bypassing
  /// load had to be replayed (pc_ rewound).
  sim::Task<bool> flush_deferred();
  /// A performed deferred operation `d` returned another `result` than the
  /// one later instructions used: execution resumes after it with `result`
  /// in its destination (`width` bytes); what used the other value is dropped.
  void resume_after(const Deferred& d, std::uint64_t result, int width);
  /// The oldest load issued past an older deferred access (and older than
  /// node `before`) that overlaps it and may disagree with it (see Late), or nullptr.
  sim::Task<const Bypass*> first_replay(std::int32_t before);
  /// Issues the read of the oldest deferred atomic early, as a plain load,
  /// once its address is known (unless its result was predicted).
  void issue_atomic_read(const Deferred& d);
  /// The newest deferred operation, if it is a CAS or SWP whose address is
  /// exactly [addr, addr + size) and whose data is known; else nullptr.
  const Deferred* forwarding_atomic(fabric::Addr addr, int size) const;
  /// The value of a performed load or atomic's node.
  sim::Task<std::uint64_t> value_of(std::int32_t node);
  Checkpoint checkpoint(int pc) const;
  void rewind(const Checkpoint& cp, int pc);
  std::uint64_t eval(Val v);
  int first_pending_load(Val v) const;
  /// True when `v` needs the value of a deferred operation not issued yet.
  bool waits_on_deferred(Val v) const;
  /// True when the plain load `in`, whose address is `address`, may be issued
  /// past the deferred operations once its address is known (replayed if one
  /// turns out to overlap it), instead of performing them first.
  bool passes_deferred(const Instr& in, Val address) const;
  sim::Task<std::uint64_t> force(Val v);
  /// Puts the held stores (those of the path that resolved right) into the CPU's store buffer.
  sim::Task<void> release_held();
  /// Resolves every predicted branch, oldest first; true when one was wrong (pc_ rewound).
  /// Then (`release`) the held stores of the right path enter the store buffer.
  sim::Task<bool> resolve_branches(bool release = true);
  Val make(Kind k, std::uint8_t sub, int width, Val a, Val b = {}, Val c = {});
  Val operand(const Operand& o);
  Val address(const Address& a);
  Val flags_condition(Cond c);
  void set(int reg, Val v, int width);
  void predict(const Instr& in, Val condition);
  [[noreturn]] void fail(const Instr& in, const std::string& what) const;
  /// True when [addr, addr + bytes) lies inside one of the test's locations and addr is `align`-aligned.
  bool accessible(fabric::Addr addr, int bytes, int align) const;
  /// Fails `in`: its `bytes`-byte access at `addr` is not accessible.
  [[noreturn]] void fail_address(const Instr& in, fabric::Addr addr, int bytes) const;

  // LDXR/STXR pairs performed as one posted atomic (exclusive_pair.cpp).
  /// The pc of the STXR the LDXR at `pc` pairs with (same address, only
  /// register moves and arithmetic between; relaxed LDXR, arm64 with LSE), or -1.
  int paired_store(int pc) const;
  /// At the LDXR: its result is a load node issued when the pair is posted.
  void begin_pair(const Instr& ld, int store_pc);
  /// True when `v` uses node `node`.
  bool refers_to(Val v, std::int32_t node) const;
  /// True when `v` is node `node`'s value itself.
  bool is_read_of(Val v, std::int32_t node) const;
  /// The atomic that writes `data` computed from the pair's read `read`
  /// (identity: add 0; read + k, - k, ^ k, | k, & k), or nullopt when `data`
  /// does not use the read (a swap of `data`) or uses it otherwise.
  std::optional<std::pair<fabric::RmwOp, std::uint64_t>> pair_operation(Val data, std::int32_t read);
  /// At the STXR: posts the pair (or, data no atomic computes, LDXR then STXR).
  sim::Task<void> perform_pair(const Instr& st, fabric::Addr addr);
  /// Before a barrier ordering reads: awaits the posted pairs' reads.
  sim::Task<void> order_posted_reads();

  const Test& test_;
  int index_;
  const Thread& thread_;
  cpu::Cpu& cpu_;
  sim::RandomStream& branch_rng_;
  const Layout* layout_ = nullptr;
  std::array<Val, kRegisterCount> regs_{};
  Val flags_;  ///< NZCV (nzcv_of's bits), a register like the others
  std::vector<Node> nodes_;
  std::vector<cpu::LoadFuture> futures_;
  std::vector<Checkpoint> speculation_;
  std::vector<Deferred> deferred_;
  std::vector<Bypass> bypass_;
  std::vector<Late> late_;
  std::vector<Forwarded> forwarded_;
  std::vector<Held> held_;
  std::vector<Poisoned> poisoned_;
  std::int32_t pair_node_ = -1;  ///< the read of the LDXR whose STXR comes at pair_store_pc_
  int pair_store_pc_ = -1;
  std::vector<std::int32_t> posted_reads_;  ///< reads of posted pairs not awaited yet
  sim::RandomStream* linger_rng_ = nullptr;
  sim::Tick linger_max_ = 0;
  bool exclusive_loads_ = false;  ///< the thread has an LDXR or LDAXR (else its STXRs fail: no monitor is ever set)
  bool released_ = false;  ///< a release store or atomic ran (an LDAR then is not forwarded a held store: RCsc)
  int pc_ = 0;
  std::array<std::uint64_t, kRegisterCount> final_{};
  std::vector<int> final_registers_;  ///< the registers the test's cells name for this thread
};

}  // namespace cohsim::litmus::detail
