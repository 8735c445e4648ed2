// The random coherence tester's operations (`cohsim selftest coherence`):
// what each one is, drawn from the CPU's named stream. One function draws
// them for the tester (src/cli/selftest.cpp) and for bench/tester_floor.cpp,
// which runs the same operations on a minimal model: both must draw the
// same numbers in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cohsim/sim/random.hpp"

namespace cohsim::models {

/// The named random streams of the tester: CPU `cpu`'s operations, and the
/// jitter every CPU draws before its loads and stores (one stream for all).
inline sim::RandomStream tester_op_stream(std::uint64_t seed, int cpu) {
  return sim::RandomStream(seed, "selftest.cpu" + std::to_string(cpu));
}
inline sim::RandomStream tester_jitter_stream(std::uint64_t seed) { return sim::RandomStream(seed, "selftest.jitter"); }

/// One tester operation, as drawn.
struct TesterOp {
  enum class Kind { load, store, half_load, increment, barrier };
  Kind kind = Kind::load;
  std::size_t line = 0;  ///< index into the tester's lines (drawn for every kind)
  unsigned word = 0;     ///< the 8-byte word of the line, 0-7 (drawn for every kind)
  /// load (arm): its order, an index into relaxed, relaxed, acquire, acquire_pc.
  unsigned load_order = 0;
  /// load: how many of the CPU's loads may stay in flight after it, 0-3.
  unsigned keep_in_flight = 0;
  /// store, increment (arm): the other order (a release store; a relaxed
  /// increment instead of a fully ordered one).
  bool strong = false;
  /// half_load: which half of the word.
  unsigned half = 0;
  /// barrier (x86): lfence rather than mfence.
  bool lfence = false;
  /// barrier (arm): the domain (ish, sy), the type (all, st, ld), and dsb rather than dmb.
  unsigned domain = 0, type = 0;
  bool dsb = false;
};

/// Draws the next operation from `rng` among `lines` lines, on an arm or an
/// x86 CPU (x86 draws no orders: its operations have one).
inline TesterOp draw_tester_op(sim::RandomStream& rng, std::size_t lines, bool arm) {
  TesterOp op;
  op.line = static_cast<std::size_t>(rng.below(lines));
  op.word = static_cast<unsigned>(rng.below(8));
  switch (rng.below(6)) {
    case 0:
    case 1:
      op.kind = TesterOp::Kind::load;
      if (arm) op.load_order = static_cast<unsigned>(rng.below(4));
      op.keep_in_flight = static_cast<unsigned>(rng.below(4));
      break;
    case 2:
      op.kind = TesterOp::Kind::store;
      op.strong = arm && rng.below(4) == 0;
      break;
    case 3:
      op.kind = TesterOp::Kind::half_load;
      op.half = static_cast<unsigned>(rng.below(2));
      break;
    case 4:
      op.kind = TesterOp::Kind::increment;
      op.strong = arm && rng.below(4) == 0;
      break;
    default:
      op.kind = TesterOp::Kind::barrier;
      if (!arm) {
        op.lfence = rng.below(2) != 0;
      } else {
        op.domain = static_cast<unsigned>(rng.below(2));
        op.type = static_cast<unsigned>(rng.below(3));
        op.dsb = rng.below(4) == 0;
      }
      break;
  }
  return op;
}

}  // namespace cohsim::models
