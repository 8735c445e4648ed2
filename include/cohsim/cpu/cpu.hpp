// One simulated CPU as kernel code sees it: loads, stores through a store
// buffer, the kernel's atomics, barriers by domain, compute time, spinning
// that sleeps until the watched line changes, interrupts and WFI.
//
// Store completion has two steps (the barrier hypothesis, kept here only):
//   inner-shareable completion: the store buffer wrote the line in this core's
//     cache with ownership (dsb ish*, dmb, release and locked operations wait for it);
//   full-system completion: the line's home acknowledged the write, a round
//     trip away, and the core's bus interface issues one acknowledgement per
//     `system_ack_interval` (dsb sy/st/osh* wait for it).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "cohsim/config/params.hpp"
#include "cohsim/fabric/fabric.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::cpu {

using fabric::Addr;
using fabric::RmwOp;
using sim::Task;
using sim::Tick;

/// Memory ordering of an access, as the kernel names it.
enum class Order { relaxed, acquire, release, full };
/// Barrier domain: inner shareable (the CPUs), full system (every observer),
/// outer shareable (treated as full system: it includes the SMMU and devices).
enum class Domain { ish, sy, osh, nsh };
/// Which accesses a barrier waits for.
enum class BarrierType { all, st, ld };

/// The "cpu" section of a platform.
struct CpuParams {
  std::string arch;             ///< arm64 | x86
  double clock_hz = 1e9;
  bool lse = true;              ///< arm64: LSE atomics (CAS, SWP, LDADD...) vs LDXR/STXR loops
  int store_buffer_entries = 16;
  Tick store_commit = 0;        ///< writing one owned line from the store buffer into L1
  Tick system_ack_interval = 0; ///< bus-interface spacing of full-system store acknowledgements
  Tick atomic_latency = 0;      ///< execution of an atomic once the line is held
  Tick dsb_cost = 0, dmb_cost = 0, isb_cost = 0;  ///< arm64 barrier pipeline costs
  Tick mfence_cost = 0, lfence_cost = 0, sfence_cost = 0;  ///< x86 fence pipeline costs
  Tick tsc_read = 0;            ///< x86: rdtsc, the TSC clocksource's read (core-local)
  Tick wfe_event_stream = 0;    ///< arm64 event stream period waking WFE (0 = off)
  Tick irq_entry = 0, irq_exit = 0;  ///< exception entry / return
  Tick wfi_wake = 0;            ///< wake-up from WFI / HLT once an interrupt is pending
  double smt_compute_share = 1;  ///< each thread's share of a solo core while its SMT sibling computes too
  explicit CpuParams(config::Reader r);
  CpuParams() = default;
  /// Picoseconds of `cycles` core cycles.
  Tick cycles(double n) const { return static_cast<Tick>(n * 1e12 / clock_hz + 0.5); }
};

/// Counters per CPU.
struct CpuStats {
  std::uint64_t loads = 0, stores = 0, atomics = 0, forwarded_loads = 0;
  std::uint64_t llsc_retries = 0, spin_wakeups = 0, barriers = 0, interrupts = 0;
  Tick barrier_stall = 0;
};

class Cpu {
 public:
  Cpu(int id, const CpuParams& p, fabric::Fabric& fab, sim::Simulator& sim);
  ~Cpu();

  int id() const { return id_; }
  const CpuParams& params() const { return p_; }
  sim::Simulator& sim() { return sim_; }
  fabric::Fabric& fabric() { return fab_; }
  const CpuStats& stats() const { return stats_; }
  bool is_arm() const { return arm_; }

  // ------------------------------------------------------------ memory ---
  /// Load of 1/2/4/8 bytes; store-to-load forwarding from the store buffer.
  Task<std::uint64_t> load(Addr a, int size = 8, Order o = Order::relaxed);
  /// Store through the store buffer (Order::release = stlr: waits for earlier stores).
  Task<void> store(Addr a, int size, std::uint64_t v, Order o = Order::relaxed);
  /// Atomic read-modify-write; returns the old value. On arm64 with LSE one
  /// instruction (CAS/SWP/LDADD/LDCLR/LDSET/LDEOR with the ordering suffix);
  /// without LSE an LDXR/STXR loop that retries when the monitor is lost.
  Task<std::uint64_t> rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare = 0,
                          Order o = Order::full);
  /// cmpxchg: returns the old value (success when it equals `expected`).
  Task<std::uint64_t> cmpxchg(Addr a, int size, std::uint64_t expected, std::uint64_t desired, Order o = Order::full) {
    return rmw(a, size, RmwOp::cas, desired, expected, o);
  }

  // ---------------------------------------------------------- barriers ---
  /// arm64 DSB: stalls until the named accesses completed for the domain.
  Task<void> dsb(Domain d, BarrierType t = BarrierType::all);
  /// arm64 DMB: later memory accesses wait for earlier ones; no stall now.
  Task<void> dmb(Domain d, BarrierType t = BarrierType::all);
  Task<void> isb();
  /// x86 fences.
  Task<void> mfence();
  Task<void> lfence();
  Task<void> sfence();
  /// Waits until the store buffer is empty (inner-shareable completion).
  Task<void> drain_store_buffer();
  /// Waits until every store so far has full-system completion.
  Task<void> wait_system_completion();

  // -------------------------------------------------------- time, spin ---
  /// Non-memory work of `d` on a core of its own; interrupts are taken in the
  /// middle when enabled. While an SMT sibling computes too, this thread gets
  /// `smt_compute_share` of the core (a stalled or spinning sibling leaves it whole).
  Task<void> compute(Tick d);
  Task<void> compute_cycles(double n) { return compute(p_.cycles(n)); }
  /// Sleeps until this CPU's copy of the line at `a` is invalidated or
  /// evicted (WFE / a PAUSE loop's next miss), or the event stream fires.
  Task<void> wait_for_change(Addr a, std::string_view what);
  /// smp_cond_load_*: loads until pred(value) holds, sleeping in between;
  /// returns the value. Counts each wake-up that found pred false.
  Task<std::uint64_t> spin_until(Addr a, int size, std::function<bool(std::uint64_t)> pred, Order o,
                                 std::string_view what);

  // -------------------------------------------------------- interrupts ---
  /// The handler run when an interrupt is taken (set by the interrupt controller).
  void set_interrupt_handler(std::function<Task<void>(Cpu&)> h) { irq_handler_ = std::move(h); }
  /// Marks an interrupt pending and wakes the CPU if it waits.
  void raise_interrupt();
  bool interrupt_pending() const { return irq_pending_; }
  bool interrupts_enabled() const { return irqs_enabled_; }
  void local_irq_disable() { irqs_enabled_ = false; }
  /// Enables interrupts and takes a pending one at once.
  Task<void> local_irq_enable();
  /// WFI: sleeps until an interrupt is pending, pays the wake-up, takes it.
  Task<void> wfi();
  /// Takes a pending interrupt now if interrupts are enabled.
  Task<void> poll_interrupts();

 private:
  struct Pending {
    Addr addr;
    int size;
    std::uint64_t value;
  };
  Task<void> drain_loop();
  Task<void> take_interrupt();
  void note_write_done(Addr line);
  struct SmtCore;
  double compute_share() const;
  void set_computing(bool on);

  int id_;
  CpuParams p_;
  fabric::Fabric& fab_;
  sim::Simulator& sim_;
  bool arm_;
  std::deque<Pending> sb_;
  sim::Signal sb_pushed_, sb_popped_;
  bool fence_pending_ = false;  ///< a dmb asks later accesses to wait for earlier stores
  Tick last_system_done_ = 0;
  Tick last_ack_issue_ = 0;
  CpuStats stats_;
  std::function<Task<void>(Cpu&)> irq_handler_;
  bool irq_pending_ = false;
  bool irqs_enabled_ = true;
  bool in_interrupt_ = false;
  sim::Signal irq_signal_;
  sim::Signal compute_signal_;           ///< wakes compute(): an interrupt or a sibling's change
  std::shared_ptr<SmtCore> smt_core_;    ///< threads of this core (only when SMT shares compute)
  bool computing_ = false;
  Pending last_load_{~Addr{0}, 8, 0};  ///< the last load served by the cache (address, size, value)
  bool smt_siblings_ = false;          ///< this core has other hardware threads
};

}  // namespace cohsim::cpu
