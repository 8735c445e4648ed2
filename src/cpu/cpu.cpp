#include "cohsim/cpu/cpu.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace cohsim::cpu {

using config::Spec;

CpuParams::CpuParams(config::Reader r) {
  arch = r.choice("arch", Spec{.doc = "instruction set: arm64 or x86", .choices = {"arm64", "x86"}});
  clock_hz = r.frequency("clock", Spec{.doc = "core clock", .min = 1e6, .max = 1e10});
  lse = r.boolean("lse_atomics", Spec{.doc = "arm64: ARMv8.1 LSE atomics (else LDXR/STXR loops); x86: ignored",
                                      .def = true});
  store_buffer_entries = static_cast<int>(
      r.integer("store_buffer_entries", Spec{.doc = "stores the buffer holds before the core stalls", .min = 1, .max = 256}));
  store_commit = r.time("store_commit", Spec{.doc = "writing one owned line from the store buffer into L1", .max = 1e6});
  system_ack_interval = r.time(
      "system_ack_interval",
      Spec{.doc = "spacing of full-system write acknowledgements at the core's bus interface (dsb sy/st waits for them)",
           .max = 1e6});
  atomic_latency = r.time("atomic_latency", Spec{.doc = "executing an atomic once its line is held", .max = 1e6});
  if (arch == "arm64" || r.schema_mode()) {
    dsb_cost = r.time("dsb", Spec{.doc = "DSB pipeline drain, beyond waiting for the accesses", .def = "0", .max = 1e6});
    dmb_cost = r.time("dmb", Spec{.doc = "DMB issue cost", .def = "0", .max = 1e6});
    isb_cost = r.time("isb", Spec{.doc = "ISB pipeline refill", .def = "0", .max = 1e6});
    wfe_event_stream = r.time("wfe_event_stream", Spec{.doc = "event stream period waking WFE (0 = off)", .def = "0", .max = 1e9});
  }
  if (arch == "x86" || r.schema_mode()) {
    mfence_cost = r.time("mfence", Spec{.doc = "MFENCE cost beyond draining the store buffer", .def = "0", .max = 1e6});
    lfence_cost = r.time("lfence", Spec{.doc = "LFENCE cost", .def = "0", .max = 1e6});
    sfence_cost = r.time("sfence", Spec{.doc = "SFENCE cost", .def = "0", .max = 1e6});
    tsc_read = r.time("tsc_read", Spec{.doc = "rdtsc and the TSC clocksource's read function (core-local)", .max = 1e6});
  }
  irq_entry = r.time("irq_entry", Spec{.doc = "exception entry to the first handler instruction", .max = 1e7});
  irq_exit = r.time("irq_exit", Spec{.doc = "exception return", .max = 1e7});
  wfi_wake = r.time("wfi_wake", Spec{.doc = "wake-up from WFI/HLT once an interrupt is pending", .max = 1e8});
  if (arch == "arm64" || r.schema_mode())
    outer_shareable_is_full_system = r.boolean(
        "outer_shareable_is_full_system",
        Spec{.doc = "arm64: the outer-shareable domain reaches every observer, so dsb osh* waits for the home's "
                    "acknowledgement like dsb sy (false: osh barriers wait only for inner-shareable completion and "
                    "posted MMIO writes)"});
  smt_compute_share = r.number(
      "smt_compute_share",
      Spec{.doc = "SMT: each thread's share of a solo core's compute rate while its sibling computes too (1 = no "
                  "sharing; 0.5 = no gain from SMT)",
           .def = 1.0, .min = 0.5, .max = 1.0});
}

Cpu::Cpu(int id, const CpuParams& p, fabric::Fabric& fab, sim::Simulator& sim, Core& core)
    : id_(id), p_(p), fab_(fab), sim_(sim), arm_(p.arch == "arm64"), core_(core) {
  sim_.spawn(fmt::format("cpu{} store buffer", id_), drain_loop(), /*daemon=*/true);
  const auto& topo = fab_.interconnect().topology();
  smt_siblings_ = topo.threads_per_core() > 1;
  shares_compute_ = p_.smt_compute_share < 1.0 && smt_siblings_;
  core_.threads.push_back(this);
}

Cpu::~Cpu() { std::erase(core_.threads, this); }

bool Cpu::system_domain(Domain d) const {
  return d == Domain::sy || (d == Domain::osh && p_.outer_shareable_is_full_system);
}

// ---------------------------------------------------------------- loads ---
Task<std::uint64_t> Cpu::load(Addr a, int size, Order o) {
  ++stats_.loads;
  // A dmb before it: the stores before the dmb. ldar after an stlr still
  // buffered (RCsc): that store and the ones the in-order drain puts first.
  std::uint64_t wait_through = load_fence_through_;
  if (o == Order::acquire && arm_) wait_through = std::max(wait_through, release_through_);
  // (Tested here, not in the callees: a load must not pay a coroutine frame for nothing.)
  if (stores_drained_ < wait_through) co_await drain_through(wait_through);
  if (device_load_fence_ > sim_.now()) co_await wait_device_fence(device_load_fence_);
  for (auto it = sb_.rbegin(); it != sb_.rend(); ++it) {
    if (it->addr == a && it->size == size) {
      ++stats_.forwarded_loads;
      const std::uint64_t v = it->value;  // the drain may pop the entry meanwhile
      co_await sim_.delay(fab_.params().l1.latency);
      co_return v;
    }
    if (it->addr < a + static_cast<Addr>(size) && a < it->addr + static_cast<Addr>(it->size)) {
      co_await drain_store_buffer();  // partial overlap: no forwarding
      break;
    }
  }
  const Addr line = fabric::line_of(a);
  Tick lat = co_await fab_.acquire(id_, line, false);
  std::uint64_t v = fab_.read(id_, a, size);
  last_load_ = {a, size, v};
  co_await sim_.delay(lat);
  co_return v;
}

Task<std::uint64_t> LoadFuture::value() const {
  while (!s_->done) co_await s_->completed.wait(*sim_, "load in flight");
  co_return s_->value;
}

namespace {
Task<void> complete_load(Task<std::uint64_t> load, std::shared_ptr<LoadFuture::State> s, sim::Simulator& sim) {
  s->value = co_await std::move(load);
  s->done = true;
  s->completed.notify_all(sim);
}
}  // namespace

LoadFuture Cpu::issue_load(Addr a, int size, Order o) {
  LoadFuture f;
  f.s_ = std::make_shared<LoadFuture::State>();
  f.sim_ = &sim_;
  sim_.spawn("load", complete_load(load(a, size, o), f.s_, sim_));
  return f;
}

Task<std::uint64_t> Cpu::load_exclusive(Addr a, int size, Order o) {
  std::uint64_t v = co_await load(a, size, o);
  fab_.set_monitor(id_, fabric::line_of(a));
  co_return v;
}

Task<bool> Cpu::store_exclusive(Addr a, int size, std::uint64_t v, Order o) {
  ++stats_.stores;
  co_await drain_store_buffer();
  if (o == Order::release || o == Order::full) {
    const Tick fence = posted_writes_arrived();
    if (fence > sim_.now()) co_await wait_device_fence(fence);
  }
  const Addr line = fabric::line_of(a);
  Tick lat = co_await fab_.acquire(id_, line, true);
  if (!fab_.monitor_valid(id_, line)) {
    ++stats_.llsc_retries;
    co_await sim_.delay(lat);
    co_return false;
  }
  fab_.write(id_, a, size, v);
  note_write_done(line);
  co_await sim_.delay(lat + p_.store_commit);
  co_return true;
}

// --------------------------------------------------------------- stores ---
Task<void> Cpu::store(Addr a, int size, std::uint64_t v, Order o) {
  ++stats_.stores;
  // stlr (and any store after a dmb) needs no wait for the earlier stores:
  // the buffer drains in order, so they are written first. A full-order
  // store waits for them to be written before it enters.
  if (o == Order::full) co_await drain_store_buffer();
  // A release orders every earlier access, posted MMIO writes included (why
  // arm64 needs no mmiowb: v5.9 arm_smmu_cmdq_issue_cmdlist's owner_prod
  // release must follow its PROD write, or another owner's PROD could pass it).
  const Tick fence = o == Order::release || o == Order::full ? std::max(device_store_fence_, posted_writes_arrived())
                                                             : device_store_fence_;
  if (fence > sim_.now()) co_await wait_device_fence(fence);
  while (static_cast<int>(sb_.size()) >= p_.store_buffer_entries)
    co_await sb_popped_.wait(sim_, "store buffer space");
  if (sb_.empty()) sim_.hold_run();  // a run ends only when its stores are written
  sb_.push_back({a, size, v});
  ++stores_buffered_;
  if (o == Order::release || o == Order::full) release_through_ = stores_buffered_;
  sb_pushed_.notify_all(sim_);
  co_await sim_.delay(p_.cycles(1));
}

Task<void> Cpu::drain_loop() {
  for (;;) {
    while (sb_.empty()) co_await sb_pushed_.wait(sim_, "stores to drain");
    Pending e = sb_.front();
    const Addr line = fabric::line_of(e.addr);
    co_await fab_.acquire(id_, line, true);
    fab_.write(id_, e.addr, e.size, e.value);
    note_write_done(line);
    co_await sim_.delay(p_.store_commit);
    sb_.pop_front();
    if (sb_.empty()) sim_.release_run();
    ++stores_drained_;
    sb_popped_.notify_all(sim_);
  }
}

void Cpu::note_write_done(Addr line) {
  // Full-system completion: the home's acknowledgement, a round trip away,
  // issued no closer than system_ack_interval to the previous one.
  auto& icn = fab_.interconnect();
  const int home = icn.home_endpoint(fab_.memory().home_node(line));
  Tick ack = sim_.now() + icn.latency(id_, home) + icn.latency(home, id_);
  Tick issue = std::max(sim_.now(), last_ack_issue_ + p_.system_ack_interval);
  last_ack_issue_ = issue;
  last_system_done_ = std::max(last_system_done_, std::max(ack, issue + p_.system_ack_interval));
}

Task<void> Cpu::drain_store_buffer() { co_await drain_through(stores_buffered_); }

Task<void> Cpu::drain_through(std::uint64_t count) {
  while (stores_drained_ < count) co_await sb_popped_.wait(sim_, "store buffer drain");
}

Task<void> Cpu::wait_device_fence(Tick until) {
  if (until > sim_.now()) co_await sim_.delay(until - sim_.now());
}

Task<void> Cpu::wait_system_completion() {
  co_await drain_store_buffer();
  const Tick done = std::max(last_system_done_, posted_writes_arrived());
  if (done > sim_.now()) co_await sim_.delay(done - sim_.now());
}

Tick Cpu::posted_writes_arrived() const {
  Tick done = 0;
  for (const auto& [device, arrival] : device_writes_) done = std::max(done, arrival);
  return done;
}

Task<void> Cpu::order_device_access(bool write) {
  const std::uint64_t through = write ? atomic_fence_through_ : load_fence_through_;
  if (stores_drained_ < through) co_await drain_through(through);
  const Tick fence = write ? device_store_fence_ : device_load_fence_;
  if (fence > sim_.now()) co_await wait_device_fence(fence);
}

Tick Cpu::post_device_write(int device, Tick arrival) {
  for (auto& [ep, last] : device_writes_)
    if (ep == device) return last = std::max(last, arrival);
  device_writes_.emplace_back(device, arrival);
  return arrival;
}

Tick Cpu::device_writes_arrived(int device) const {
  for (const auto& [ep, last] : device_writes_)
    if (ep == device) return last;
  return 0;
}

// -------------------------------------------------------------- atomics ---
Task<std::uint64_t> Cpu::rmw(Addr a, int size, RmwOp op, std::uint64_t operand, std::uint64_t compare, Order o) {
  ++stats_.atomics;
  // Release semantics (and every x86 locked operation) order earlier stores
  // first; otherwise a dmb before it orders the stores before the dmb, and an
  // acquire after a buffered stlr waits for that store (RCsc).
  if (!arm_ || o == Order::release || o == Order::full) {
    co_await drain_store_buffer();
  } else {
    std::uint64_t wait_through = atomic_fence_through_;
    if (o == Order::acquire) wait_through = std::max(wait_through, release_through_);
    if (stores_drained_ < wait_through) co_await drain_through(wait_through);
  }
  Tick fence = std::max(device_load_fence_, device_store_fence_);
  if (o == Order::release || o == Order::full) fence = std::max(fence, posted_writes_arrived());  // as a release store
  if (fence > sim_.now()) co_await wait_device_fence(fence);
  // Same-address order: the atomic must act on this CPU's own buffered stores
  // to its bytes (there is no forwarding into a read-modify-write).
  for (const Pending& e : sb_)
    if (e.addr < a + static_cast<Addr>(size) && a < e.addr + static_cast<Addr>(e.size)) {
      co_await drain_store_buffer();
      break;
    }
  const Addr line = fabric::line_of(a);
  const std::uint64_t mask = size == 8 ? ~0ull : ((1ull << (8 * size)) - 1);
  if (fab_.params().atomics_far && (!arm_ || p_.lse)) {
    std::uint64_t old = co_await fab_.atomic_at_home(id_, a, size, op, operand & mask, compare & mask);
    co_await sim_.delay(p_.atomic_latency);
    co_return old;
  }
  if (!arm_ || p_.lse) {
    // The line is fetched exclusive, the atomic executes for atomic_latency,
    // and its write becomes visible at the end. A line snooped away during
    // execution is fetched again (the hardware would hold the snoop instead);
    // the read-modify-write itself happens in one instant, so it is atomic.
    Tick lat = co_await fab_.acquire(id_, line, true);
    // Locked operations of SMT siblings share the core: they run one at a time.
    Tick& core_busy = fab_.core_atomic_busy(id_);
    Tick start = std::max(sim_.now(), core_busy);
    core_busy = start + lat + p_.atomic_latency;
    co_await sim_.delay(core_busy - sim_.now());
    co_await fab_.acquire(id_, line, true);
    std::uint64_t old = fab_.read(id_, a, size);
    std::uint64_t next = fabric::apply_rmw(op, old, operand, compare) & mask;
    last_load_ = {a, size, old};
    if (op != RmwOp::cas || old == (compare & mask)) {
      fab_.write(id_, a, size, next);
      note_write_done(line);
      last_load_.value = next;
    }
    co_return old;
  }
  // LDXR / STXR loop.
  for (;;) {
    Tick lat = co_await fab_.acquire(id_, line, false);
    std::uint64_t old = fab_.read(id_, a, size);
    fab_.set_monitor(id_, line);
    co_await sim_.delay(lat);
    if (op == RmwOp::cas && old != (compare & mask)) co_return old;  // failed compare: clrex
    std::uint64_t next = fabric::apply_rmw(op, old, operand, compare) & mask;
    lat = co_await fab_.acquire(id_, line, true);
    if (!fab_.monitor_valid(id_, line)) {  // someone wrote the line since the LDXR
      ++stats_.llsc_retries;
      co_await sim_.delay(lat);
      continue;
    }
    fab_.write(id_, a, size, next);
    note_write_done(line);
    co_await sim_.delay(lat + p_.atomic_latency);
    co_return old;
  }
}

// ------------------------------------------------------------- barriers ---
namespace {
/// The barrier as the kernel's disassembly names it ("dsb ishst", "dsb oshld", "dsb sy").
std::string barrier_name(std::string_view insn, Domain d, BarrierType t) {
  const char* domain = d == Domain::ish ? "ish" : d == Domain::osh ? "osh" : d == Domain::nsh ? "nsh" : "";
  const char* type = t == BarrierType::st ? "st" : t == BarrierType::ld ? "ld" : "";
  if (d == Domain::sy && t == BarrierType::all) return fmt::format("{} sy", insn);
  return fmt::format("{} {}{}", insn, domain, type);
}
}  // namespace

Task<void> Cpu::dsb(Domain d, BarrierType t) {
  ++stats_.barriers;
  Tick start = sim_.now();
  if (t != BarrierType::ld) {
    if (system_domain(d)) {
      co_await wait_system_completion();
    } else {
      co_await drain_store_buffer();
      if (d == Domain::osh)  // Device memory is outer shareable: its posted writes
        co_await wait_device_fence(posted_writes_arrived());
    }
  }
  co_await sim_.delay(p_.dsb_cost);
  stats_.barrier_stall += sim_.now() - start;
  if (auto* tr = sim_.tracer()) tr->slice(id_, barrier_name("dsb", d, t), "barrier", start, sim_.now());
}

Task<void> Cpu::dmb(Domain d, BarrierType t) {
  ++stats_.barriers;
  // Loads are in order and the store buffer drains in order, so a dmb only
  // has to make later loads (dmb all) and atomics (dmb all or st) wait for
  // the stores before it (header comment: inner-shareable completion in
  // every domain). An osh/sy dmb also orders earlier posted MMIO writes.
  if (t != BarrierType::ld) {
    atomic_fence_through_ = stores_buffered_;
    if (t == BarrierType::all) load_fence_through_ = stores_buffered_;
    if (d == Domain::sy || d == Domain::osh) {
      const Tick posted = posted_writes_arrived();
      device_store_fence_ = std::max(device_store_fence_, posted);
      if (t == BarrierType::all) device_load_fence_ = std::max(device_load_fence_, posted);
    }
  }
  co_await sim_.delay(p_.dmb_cost);
}

Task<void> Cpu::isb() { co_await sim_.delay(p_.isb_cost); }

Task<void> Cpu::mfence() {
  ++stats_.barriers;
  Tick start = sim_.now();
  co_await drain_store_buffer();
  co_await sim_.delay(p_.mfence_cost);
  stats_.barrier_stall += sim_.now() - start;
  if (auto* tr = sim_.tracer()) tr->slice(id_, "mfence", "barrier", start, sim_.now());
}

Task<void> Cpu::lfence() { co_await sim_.delay(p_.lfence_cost); }
Task<void> Cpu::sfence() { co_await sim_.delay(p_.sfence_cost); }

// --------------------------------------------------------- time, spinning ---
Task<void> Cpu::compute(Tick d) {
  Tick work = d;  // still to do, in time on a core of its own
  if (work > 0) set_computing(true);
  while (work > 0) {
    const bool interruptible = irqs_enabled_ && !in_interrupt_;
    if (interruptible && irq_pending_) {
      set_computing(false);
      co_await take_interrupt();
      set_computing(true);
      continue;
    }
    const double share = compute_share();
    const Tick start = sim_.now();
    const Tick wall = share >= 1.0 ? work : static_cast<Tick>(std::ceil(static_cast<double>(work) / share));
    if (!interruptible && !shares_compute_) {
      co_await sim_.delay(wall);
      break;
    }
    // Woken early by an interrupt or by a sibling starting or ending its compute.
    co_await compute_signal_.wait(sim_, "compute", 0, start + wall);
    const Tick elapsed = sim_.now() - start;
    if (elapsed >= wall) break;
    const auto done = share >= 1.0 ? elapsed : static_cast<Tick>(std::llround(static_cast<double>(elapsed) * share));
    work -= std::min(work, done);
  }
  set_computing(false);
}

double Cpu::compute_share() const {
  return shares_compute_ && core_.computing > (computing_ ? 1 : 0) ? p_.smt_compute_share : 1.0;
}

void Cpu::set_computing(bool on) {
  if (!shares_compute_ || computing_ == on) return;
  computing_ = on;
  core_.computing += on ? 1 : -1;
  for (Cpu* sibling : core_.threads)  // their rate changes now
    if (sibling != this && sibling->computing_) sibling->compute_signal_.notify_all(sim_);
}

Task<void> Cpu::wait_for_change(Addr a, std::string_view what) {
  // WFE (and a PAUSE loop) wakes for an unmasked interrupt, which is taken
  // on waking; the caller's loop then loads and checks again.
  const bool interruptible = irqs_enabled_ && !in_interrupt_;
  if (interruptible && irq_pending_) {
    ++stats_.interrupts_in_spins;
    co_await poll_interrupts();
    co_return;
  }
  Tick start = sim_.now();
  Tick deadline = arm_ && p_.wfe_event_stream > 0 ? sim_.now() + p_.wfe_event_stream : sim::kNever;
  // An SMT sibling's write lands in the shared cache without a loss: if it
  // came after this CPU's last load of the line (during that load's hit
  // latency), the line has already changed and there is nothing to wait for.
  const Addr line = fabric::line_of(a);
  if (smt_siblings_ && fabric::line_of(last_load_.addr) == line && fab_.holds(id_, line, false) &&
      fab_.read(id_, last_load_.addr, last_load_.size) != last_load_.value)
    co_return;
  if (interruptible) spin_sleeper_ = sim_.current();
  co_await fab_.wait_for_loss(id_, line, deadline, what);
  spin_sleeper_ = nullptr;
  if (auto* tr = sim_.tracer()) tr->slice(id_, what, arm_ ? "wfe" : "pause", start, sim_.now());
  if (interruptible && irq_pending_) {
    ++stats_.interrupts_in_spins;
    co_await poll_interrupts();
  }
}

Task<std::uint64_t> Cpu::spin_until(Addr a, int size, std::function<bool(std::uint64_t)> pred, Order o,
                                    std::string_view what) {
  bool woken = false;
  for (;;) {
    std::uint64_t v = co_await load(a, size, o);
    if (pred(v)) co_return v;
    if (woken) ++stats_.spin_wakeups;  // woken, but the condition still does not hold
    co_await wait_for_change(a, what);
    woken = true;
  }
}

// ----------------------------------------------------------- interrupts ---
void Cpu::raise_interrupt() {
  irq_pending_ = true;
  irq_signal_.notify_all(sim_);
  compute_signal_.notify_all(sim_);
  if (spin_sleeper_ != nullptr) sim_.wake(spin_sleeper_, spin_sleeper_->wait_id());
}

Task<void> Cpu::take_interrupt() {
  irq_pending_ = false;
  ++stats_.interrupts;
  const bool was_enabled = irqs_enabled_;
  irqs_enabled_ = false;
  in_interrupt_ = true;
  Tick start = sim_.now();
  co_await sim_.delay(p_.irq_entry);
  if (irq_handler_) co_await irq_handler_(*this);
  co_await sim_.delay(p_.irq_exit);
  stats_.interrupt_time += sim_.now() - start;
  if (auto* tr = sim_.tracer()) tr->slice(id_, "interrupt", "irq", start, sim_.now());
  in_interrupt_ = false;
  irqs_enabled_ = was_enabled;
}

Task<void> Cpu::poll_interrupts() {
  while (irqs_enabled_ && irq_pending_ && !in_interrupt_) co_await take_interrupt();
}

Task<void> Cpu::local_irq_enable() {
  irqs_enabled_ = true;
  co_await poll_interrupts();
}

Task<void> Cpu::wfi() {
  if (!irq_pending_) {
    co_await irq_signal_.wait(sim_, "WFI (idle)");
    Tick woke = sim_.now();
    co_await sim_.delay(p_.wfi_wake);
    if (auto* tr = sim_.tracer()) tr->slice(id_, "WFI wake-up", "idle", woke, sim_.now());
  }
  co_await poll_interrupts();
}

}  // namespace cohsim::cpu
