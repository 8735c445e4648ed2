// One simulated CPU as kernel code sees it: loads, stores through a store
// buffer, the kernel's atomics, barriers by domain, compute time, spinning
// that sleeps until the watched line changes, interrupts and WFI.
//
// Store completion (docs/ipi.md "What a DSB waits for"):
//   written: the store buffer wrote the line in this core's cache with
//     ownership: complete for the inner-shareable domain (dsb ish*, nsh*, and
//     osh* unless `outer_shareable_is_full_system`), and visible to every core.
//   through: arm64 with `system_write_entries` > 0 (Kunpeng 920): each line
//     written enters the core's write-through buffer (that many lines; a
//     store to a line already waiting there merges), which sends it to the
//     L3 of the core's die, `system_write_slots` lines in flight at once, each
//     a round trip to the die's L3 plus `system_write_occupancy` there. A
//     store finding the buffer full waits in the store buffer. dsb sy/st (and
//     osh* where `outer_shareable_is_full_system`) wait until every written
//     line is through: nothing when nothing is outstanding.
// A posted MMIO write (Device-nGnRE, writel_relaxed) leaves the core at once
// and completes when it reaches its device; writes to one device arrive in
// program order; dsb sy/osh and a later MMIO read of that device wait for it.
//
// Ordering: arm64 is weakly ordered as ARMv8 allows, x86 is TSO (docs/memory-model.md).
//   A load binds its value when its line is present (a miss: when the line
//     arrives) or from the newest earlier buffered store to the same bytes;
//     loads issued together (issue_load) overlap, up to `outstanding_loads`.
//   A store waits in the buffer; `outstanding_stores` write ports take the
//     oldest store whose ordering allows it, own its line and write it, so on
//     arm64 stores to different lines become visible out of program order;
//     stores still waiting their turn have ownership requested ahead.
//   Always kept: per-location order (an older load or store to the line goes
//     first: CoRR, CoWW, CoRW, CoWR); program order on x86 for loads and
//     stores, and for every earlier load before a store; dependencies are the
//     caller's (an address or data is known only once its load is awaited).
//   arm64: a store may become visible before an earlier load to another line
//     binds (load buffering); a later load may bind before an earlier one.
//     dmb ish / osh / sy (all): later loads and stores wait for earlier loads
//       to bind and earlier stores to be written (inner-shareable completion:
//       every observer of this model, CPUs and the I/O-coherent devices that
//       snoop the owner's cache through the home, sees a store from then on,
//       so no domain needs the home's acknowledgement for ordering: that is a
//       completion, which only a DSB waits for).
//     dmb *st: later stores and atomics wait for earlier stores.
//     dmb *ld: later loads and stores wait for earlier loads.
//     dmb osh/sy (all or st) also orders earlier posted MMIO writes before
//       later accesses (Device memory is outer shareable, outside ish).
//     stlr (release store): written after every earlier load and store;
//       ldar / ldapr: later loads and stores wait for it to bind; ldar also
//       waits for the newest stlr (RCsc), ldapr does not (RCpc).
//     atomics order like a load and a store together, with their suffix.
//   Every store is other-multi-copy atomic: it reaches every other observer
//   at once (one coherent copy); only its own CPU reads it earlier, forwarded.
//   x86: locked operations and mfence wait for every earlier access; lfence
//   for every earlier load.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/fabric/fabric.hpp"
#include "cohsim/sim/random.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::cpu {

using fabric::Addr;
using fabric::RmwOp;
using sim::Task;
using sim::Tick;

/// Memory ordering of an access, as the kernel names it. acquire is LDAR
/// (RCsc: waits for an earlier STLR), acquire_pc is LDAPR (RCpc: does not).
enum class Order { relaxed, acquire, acquire_pc, release, full };
/// Barrier domain: inner shareable (the CPUs), full system (every observer),
/// outer shareable (the CPUs and the coherent devices: the same as full system
/// unless the platform's `outer_shareable_is_full_system` says otherwise).
enum class Domain { ish, sy, osh, nsh };
/// Which accesses a barrier waits for.
enum class BarrierType { all, st, ld };

/// The "cpu" section of a platform.
struct CpuParams {
  std::string arch;             ///< arm64 | x86
  double clock_hz = 1e9;
  bool lse = true;              ///< arm64: LSE atomics (CAS, SWP, LDADD...) vs LDXR/STXR loops
  int store_buffer_entries = 16;
  int outstanding_loads = 1;    ///< loads in flight at once (miss handling)
  int outstanding_stores = 1;   ///< store ownership requests in flight at once
  Tick store_commit = 0;        ///< writing one owned line from the store buffer into L1
  Tick atomic_latency = 0;      ///< execution of an atomic once the line is held
  Tick dsb_cost = 0, dmb_cost = 0, isb_cost = 0;  ///< arm64 barrier pipeline costs
  Tick mfence_cost = 0, lfence_cost = 0, sfence_cost = 0;  ///< x86 fence pipeline costs
  Tick tsc_read = 0;            ///< x86: rdtsc, the TSC clocksource's read (core-local)
  bool has_tlb_costs = false;   ///< x86: the platform gives invlpg and tlb_flush_full
  Tick invlpg = 0;              ///< x86: INVLPG of one user page (core-local)
  Tick tlb_flush_full = 0;      ///< x86: full flush of the current PCID and the refill that follows (core-local)
  Tick wfe_event_stream = 0;    ///< arm64 event stream period waking WFE (0 = off)
  bool outer_shareable_is_full_system = true;  ///< arm64: osh barriers wait like sy (else like ish, plus MMIO)
  int system_write_entries = 0;   ///< arm64: lines the write-through buffer to the die's L3 holds (0: none)
  int system_write_slots = 1;     ///< arm64: write-throughs in flight at once
  Tick system_write_occupancy = 0;  ///< arm64: one write-through's time at the L3 beyond the round trip
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
  std::uint64_t interrupts_in_spins = 0;  ///< interrupts taken while spinning (WFE / PAUSE loop)
  Tick barrier_stall = 0;
  Tick interrupt_time = 0;  ///< time inside interrupts, entry to exception return
};

class Cpu;

/// A load issued with Cpu::issue_load and not yet awaited: the core keeps it
/// in flight (overlapping other misses) and binds its value when the ordering
/// rules and the line allow; value() waits for that and the access latency.
class LoadFuture {
 public:
  LoadFuture() = default;
  /// True once the value is known (it may be awaited without waiting).
  bool ready() const { return s_ && s_->done; }
  /// True for a future a load was issued into (not a default-constructed one).
  bool issued() const { return s_ != nullptr; }
  struct State {
    bool done = false;
    std::uint64_t value = 0;
    sim::Signal completed;  ///< notified once, when done is set
  };
  /// Awaitable (of an issued future): waits for the load to complete and
  /// returns its value. (An awaiter, not a coroutine: no frame, and the
  /// waiting process resumes where it awaited.)
  auto value() const {
    struct Awaiter {
      State* s;
      sim::Simulator* sim;
      bool await_ready() const noexcept { return s->done; }
      void await_suspend(std::coroutine_handle<> h) const {
        s->completed.wait(*sim, "load in flight").await_suspend(h);
      }
      std::uint64_t await_resume() const noexcept { return s->value; }
    };
    return Awaiter{s_.get(), sim_};
  }
  /// The value of a ready() load.
  std::uint64_t peek() const { return s_->value; }

 private:
  friend class Cpu;
  std::shared_ptr<State> s_;
  sim::Simulator* sim_ = nullptr;
};

/// One physical core: its hardware threads and what they share. Created with
/// the CPUs by whoever builds the machine, and outlives them.
struct Core {
  int computing = 0;          ///< threads of the core inside compute() now
  std::vector<Cpu*> threads;  ///< the core's CPUs, in creation order
};

class Cpu {
 public:
  /// CPU `id`, one hardware thread of `core`.
  Cpu(int id, const CpuParams& p, fabric::Fabric& fab, sim::Simulator& sim, Core& core);
  ~Cpu();

  int id() const { return id_; }
  const CpuParams& params() const { return p_; }
  sim::Simulator& sim() { return sim_; }
  fabric::Fabric& fabric() { return fab_; }
  const CpuStats& stats() const { return stats_; }
  bool is_arm() const { return arm_; }

  // ------------------------------------------------------------ memory ---
  /// Load of 1/2/4/8 bytes; store-to-load forwarding from the store buffer.
  /// The load is issued (takes its place in program order) when this is
  /// called, not when the task is awaited: the task must be awaited.
  Task<std::uint64_t> load(Addr a, int size = 8, Order o = Order::relaxed);
  /// Issues a load now without waiting for it (an out-of-order core keeps
  /// several in flight); the caller awaits its value later. The address must be
  /// known, so address dependencies are the caller's: issue after awaiting.
  LoadFuture issue_load(Addr a, int size = 8, Order o = Order::relaxed);
  /// LDXR / LDAXR (Order::acquire): a load that arms the exclusive monitor.
  Task<std::uint64_t> load_exclusive(Addr a, int size, Order o = Order::relaxed);
  /// STXR / STLXR (Order::release): stores `v` if the monitor armed by this
  /// CPU's last load_exclusive of the line still holds; true on success.
  Task<bool> store_exclusive(Addr a, int size, std::uint64_t v, Order o = Order::relaxed);
  /// Store through the store buffer (Order::release = stlr: drains after the
  /// earlier stores, in order; Order::full also waits for them first).
  Task<void> store(Addr a, int size, std::uint64_t v, Order o = Order::relaxed);
  /// Atomic read-modify-write; returns the old value. On arm64 with LSE one
  /// instruction (CAS/SWP/LDADD/LDCLR/LDSET/LDEOR with the ordering suffix);
  /// without LSE an LDXR/STXR loop that retries when the monitor is lost.
  Task<std::uint64_t> rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare = 0,
                          Order o = Order::full);
  /// An LSE atomic whose result is discarded (STADD/STCLR/..., or CAS/SWP/LD<op>
  /// with WZR/XZR as destination): the Arm ARM gives it no acquire semantics and
  /// DMB LD does not order its read, so it orders as a store: it is posted
  /// through the store buffer in program order and a write port performs it
  /// once the line is owned (at the home with far atomics). Release (and full)
  /// orders it after every earlier access. x86, or arm64 without LSE: rmw().
  Task<void> post_rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare = 0,
                      Order o = Order::relaxed);
  /// An atomic whose result is wanted, posted as post_rmw posts it (arm64
  /// with LSE only): its read and write are performed together when a write
  /// port takes it, so it is ordered as a store, and `result` gets the value
  /// it read then (awaited like a load's). For the litmus runner's
  /// LDXR/STXR pairs (docs/memory-model.md): a relaxed pair orders nothing
  /// against other locations; the caller orders its read before a later
  /// DMB LD by awaiting `result`.
  Task<void> post_rmw_returning(LoadFuture& result, Addr a, int size, RmwOp op, std::uint64_t operand,
                                std::uint64_t compare = 0, Order o = Order::relaxed);
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
  /// Waits until the store buffer is empty (every store written in the cache).
  Task<void> drain_store_buffer();
  /// Waits until every store so far has full-system completion (written, and through to the die's L3), and every
  /// posted MMIO write reached its device.
  Task<void> wait_system_completion();
  /// A posted MMIO write to device endpoint `device` that reaches it at
  /// `arrival`: returns when it arrives, later than every earlier posted write
  /// of this CPU to that device (Device-nGnRE keeps their order); later
  /// barriers and reads wait for it.
  Tick post_device_write(int device, Tick arrival);
  /// When this CPU's posted MMIO writes to `device` have all arrived (a later
  /// read of that device arrives after them).
  Tick device_writes_arrived(int device) const;
  /// When every posted MMIO write of this CPU has arrived (a release waits for it).
  Tick posted_writes_arrived() const;
  /// Before an MMIO access: what a barrier before it orders (a dmb's earlier
  /// stores, for a write after dmb *st or dmb; for a read after a full dmb;
  /// and posted writes an osh/sy dmb ordered) must be done first.
  Task<void> order_device_access(bool write);

  // -------------------------------------------------------- time, spin ---
  /// Non-memory work of `d` on a core of its own; interrupts are taken in the
  /// middle when enabled. While an SMT sibling computes too, this thread gets
  /// `smt_compute_share` of the core (a stalled or spinning sibling leaves it whole).
  Task<void> compute(Tick d);
  Task<void> compute_cycles(double n) { return compute(p_.cycles(n)); }
  /// Sleeps until this CPU's copy of the line at `a` is invalidated or
  /// evicted (WFE / a PAUSE loop's next miss), or the event stream fires.
  /// With interrupts enabled (outside a handler) a pending interrupt wakes it
  /// too and is taken before it returns; with them disabled it waits on.
  Task<void> wait_for_change(Addr a, std::string_view what);
  /// Ends the sleep of wait_for_change (its WFE or PAUSE wait on the line)
  /// if this CPU is in one now, as an event the line cannot signal would (a
  /// deadline); the caller's loop then checks again. Any other wait (a
  /// load's, a barrier's) is not touched; an interrupt handler's own
  /// wait_for_change sleep is one too, and is ended.
  void end_wait_for_change() {
    if (sleeper_.p != nullptr) sim_.wake(sleeper_.p, sleeper_.wait_id);
  }
  /// smp_cond_load_*: loads until pred(value) holds, sleeping in between;
  /// returns the value. Counts each wake-up that found pred false. An
  /// interrupt taken while asleep is followed by a new load and check.
  Task<std::uint64_t> spin_until(Addr a, int size, std::function<bool(std::uint64_t)> pred, Order o,
                                 std::string_view what);

  /// Timing perturbation for litmus runs: before each load binds its value and
  /// each store is written from the buffer, a delay uniform in [0, max) drawn
  /// from `rng` (nullptr or max 0: none, the default).
  void set_jitter(sim::RandomStream* rng, Tick max) {
    jitter_rng_ = rng;
    jitter_max_ = max;
  }

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
  /// A store in the buffer, with what must happen before it may be written.
  struct Pending {
    Addr addr;
    int size;
    std::uint64_t value;
    std::uint64_t seq;           ///< store number, from 1, in program order
    std::uint64_t after_stores;  ///< stores numbered up to this are written first
    std::uint64_t after_loads;   ///< loads numbered up to this have bound their values first
    std::uint64_t loads_before;  ///< loads issued before it (those to its line bind first)
    bool atomic = false;         ///< a posted atomic: `value` is its operand
    RmwOp op = RmwOp::add;       ///< (posted atomic) the operation
    std::uint64_t compare = 0;   ///< (posted atomic) CAS's expected value
    bool writing = false;        ///< a write port took it
    bool prefetched = false;     ///< its line's ownership was requested ahead of its turn
    std::shared_ptr<LoadFuture::State> result;  ///< (posted atomic, post_rmw_returning) gets the value it read
  };
  /// A load issued whose value is not bound yet.
  struct InFlightLoad {
    std::uint64_t seq;
    Addr line;
    bool acquire;
  };
  /// What a load must wait for, fixed when it is issued (program order).
  struct LoadIssue {
    Addr addr;
    int size;
    std::uint64_t seq;
    std::uint64_t stores_before; ///< stores issued before it (the only ones it may be forwarded from)
    std::uint64_t stores_first;  ///< stores numbered up to this are written first (dmb, ldar after stlr)
    std::uint64_t loads_fence;   ///< loads numbered up to this bind first (dmb ld/all)
    Tick device_fence;           ///< posted MMIO writes a dmb osh/sy ordered before it
  };
  LoadIssue note_load_issue(Addr a, int size, Order o);
  Task<std::uint64_t> perform_load(LoadIssue in, bool exclusive);
  /// True when an earlier load still unbound must bind before load `seq` to
  /// `line` may (same line; acquire; before a load fence; x86: any).
  bool load_blocked(std::uint64_t seq, Addr line, std::uint64_t fence) const;
  Task<void> wait_loads(std::uint64_t seq, Addr line, std::uint64_t fence);
  /// Waits until every load numbered up to `seq` has bound its value.
  Task<void> wait_loads_bound(std::uint64_t seq);
  /// Waits until every load issued so far has bound its value.
  Task<void> wait_all_loads() { return wait_loads_bound(loads_issued_); }
  void load_bound(std::uint64_t seq);
  /// True when every store numbered up to `seq` has been written.
  bool stores_written_through(std::uint64_t seq) const { return sb_.empty() || sb_.front().seq > seq; }
  Task<void> wait_stores_written(std::uint64_t seq);
  /// True when every load numbered up to `seq` has bound its value.
  bool loads_bound_through(std::uint64_t seq) const { return unbound_.empty() || unbound_.front().seq > seq; }
  /// Before a write outside the buffer (atomic, store-exclusive) to `a`: what a
  /// buffered store there would wait for, and this CPU's buffered stores to its
  /// bytes. Done at once (no coroutine) when nothing is to wait for.
  Task<void> order_direct_write(Addr a, int size, bool release);
  /// order_direct_write's waits, in order.
  Task<void> wait_direct_write_order(Addr a, int size, bool release);
  /// The stores and loads (numbered up to) a direct write waits for.
  struct DirectWriteAfter {
    std::uint64_t stores, loads;
  };
  DirectWriteAfter direct_write_after(bool release) const;
  /// The newest buffered store overlapping [a, a + size), or nullptr.
  const Pending* newest_overlap(Addr a, int size) const;
  /// Until when posted MMIO writes hold a store or direct write back (those a
  /// dmb osh/sy ordered before it; a release: every one).
  Tick write_device_fence(bool release) const;
  inline bool ready_to_write(const Pending& e) const;
  inline bool may_take(const Pending& e) const;
  Pending* find_store(std::uint64_t seq);
  /// A write port (one of outstanding_stores): writes ready stores from the buffer, one at a time.
  Task<void> write_port(int port);
  /// After any change to the buffer or the loads in flight: wakes the waiters
  /// on sb_changed_, one idle write port if a store is ready to write, and one
  /// idle prefetcher if a waiting store could have its line requested.
  void changed();
  /// The first store a prefetcher may request ownership for, or nullptr.
  Pending* prefetch_candidate();
  /// Puts a store or posted atomic into the buffer with its ordering.
  Task<void> buffer_store(Pending e, Order o);
  Task<void> ownership_prefetcher(int index);
  /// Whether a jitter delay is drawn (set_jitter), and the next one.
  bool jitter_on() const { return jitter_rng_ != nullptr && jitter_max_ > 0; }
  Tick jitter() { return static_cast<Tick>(jitter_rng_->below(jitter_max_)); }
  /// Waits until `until`, when the posted MMIO writes a dmb osh/sy ordered
  /// before the next access have reached their devices.
  Task<void> wait_device_fence(Tick until);
  Task<void> take_interrupt();
  void note_write_done(Addr line);
  /// True when a full-system barrier is meant: sy, or osh where the platform
  /// says the outer-shareable domain is the full system.
  bool system_domain(Domain d) const;
  /// Waits until the write-through buffer has room for `line` (or `line` can merge into it).
  Task<void> reserve_write_through(Addr line);
  /// Whether `line` must wait for room in the write-through buffer (its lines still on their way at `now`).
  bool write_through_full(Addr line);
  double compute_share() const;
  void set_computing(bool on);

  int id_;
  CpuParams p_;
  fabric::Fabric& fab_;
  sim::Simulator& sim_;
  bool arm_;
  /// Unwritten stores, oldest first. Room for store_buffer_entries is
  /// reserved at construction and the buffer never holds more, so an entry
  /// stays put until an older one leaves (a pointer to it is valid until the
  /// next wait, as the code that keeps one assumes).
  std::vector<Pending> sb_;
  sim::Signal sb_changed_;  ///< a store entered or left the buffer, or a load bound
  std::vector<sim::Signal> port_wake_;      ///< per write port, then per prefetcher: its wake-up
  std::vector<int> idle_ports_, idle_prefetchers_;  ///< those asleep, waiting for work
  std::uint64_t stores_buffered_ = 0;  ///< stores ever put in the buffer (the newest store's number)
  std::uint64_t release_through_ = 0;  ///< the newest release store's number
  std::uint64_t store_fence_ = 0;      ///< a dmb (all or st): later stores and atomics wait for stores to here
  std::uint64_t load_store_fence_ = 0; ///< a dmb (all): later loads wait for stores to here
  std::vector<InFlightLoad> unbound_;  ///< issued loads not bound yet, oldest first
  std::uint64_t loads_issued_ = 0;     ///< loads ever issued (the newest load's number)
  std::uint64_t load_fence_ = 0;       ///< a dmb (all or ld): later loads and stores wait for loads to here
  std::uint64_t last_acquire_ = 0;     ///< the newest acquire load's number (later accesses wait for it)
  Tick device_load_fence_ = 0;   ///< a dmb osh/sy: later loads wait for posted MMIO writes till then
  Tick device_store_fence_ = 0;  ///< a dmb osh/sy (all or st): later stores and atomics likewise
  std::vector<std::pair<int, Tick>> device_writes_;  ///< per device endpoint: last posted write's arrival
  /// The write-through buffer: each line's issue to the L3 and its arrival there (arm64, system_write_entries).
  struct WriteThrough {
    Addr line;
    Tick issue, done;
  };
  std::vector<WriteThrough> write_through_;
  std::vector<Tick> write_slot_free_;  ///< per in-flight slot: when it is free
  Tick last_system_done_ = 0;          ///< when the newest write-through reaches the L3
  CpuStats stats_;
  std::function<Task<void>(Cpu&)> irq_handler_;
  bool irq_pending_ = false;
  bool irqs_enabled_ = true;
  bool in_interrupt_ = false;
  sim::Signal irq_signal_;
  /// This CPU's process while in wait_for_change's sleep, and the id of
  /// that wait (an interrupt wakes it when `interruptible`).
  struct Sleeper {
    sim::Process* p = nullptr;
    std::uint64_t wait_id = 0;
    bool interruptible = false;
  } sleeper_;
  sim::Signal compute_signal_;           ///< wakes compute(): an interrupt or a sibling's change
  Core& core_;                           ///< the physical core this thread runs on
  bool shares_compute_ = false;          ///< SMT siblings share compute (smt_compute_share < 1)
  bool computing_ = false;
  struct LastLoad {
    Addr addr;
    int size;
    std::uint64_t value;
  };
  LastLoad last_load_{~Addr{0}, 8, 0};  ///< the last load served by the cache (address, size, value)
  bool smt_siblings_ = false;          ///< this core has other hardware threads
  sim::RandomStream* jitter_rng_ = nullptr;
  Tick jitter_max_ = 0;
};

}  // namespace cohsim::cpu
