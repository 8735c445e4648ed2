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
  outstanding_loads = static_cast<int>(r.integer(
      "outstanding_loads",
      Spec{.doc = "loads in flight at once (L1 miss handling); later loads wait for a slot", .min = 1, .max = 256}));
  outstanding_stores = static_cast<int>(r.integer(
      "outstanding_stores",
      Spec{.doc = "store ownership requests in flight at once (stores to different lines overlap their misses)",
           .min = 1, .max = 256}));
  store_commit = r.time("store_commit", Spec{.doc = "writing one owned line from the store buffer into L1", .max = 1e6});
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
    // The TLB shootdown model's costs; a platform without them cannot run it
    // (the model says so at load), every other model ignores them.
    if (r.has("invlpg") || r.has("tlb_flush_full") || r.schema_mode()) {
      invlpg = r.time("invlpg", Spec{.doc = "x86: INVLPG of one user page (with PTI both PCIDs), core-local",
                                     .max = 1e7});
      tlb_flush_full = r.time(
          "tlb_flush_full",
          Spec{.doc = "x86: a full TLB flush of the current PCID (CR3 reload, non-global entries) and the page walks "
                      "that refill the entries the task uses next, core-local",
               .max = 1e8});
      has_tlb_costs = true;
    }
  }
  irq_entry = r.time("irq_entry", Spec{.doc = "exception entry to the first handler instruction", .max = 1e7});
  irq_exit = r.time("irq_exit", Spec{.doc = "exception return", .max = 1e7});
  wfi_wake = r.time("wfi_wake", Spec{.doc = "wake-up from WFI/HLT once an interrupt is pending", .max = 1e8});
  if (arch == "arm64" || r.schema_mode()) {
    system_write_entries = static_cast<int>(r.integer(
        "system_write_entries",
        Spec{.doc = "arm64: lines the core's write-through buffer to its die's L3 holds; a full-system DSB waits "
                    "until they are through (0: no write-through, full-system completion is inner-shareable completion)",
             .def = nlohmann::json(0), .min = 0, .max = 256}));
    system_write_slots = static_cast<int>(r.integer(
        "system_write_slots",
        Spec{.doc = "arm64: write-throughs to the die's L3 in flight at once (outstanding write transactions)",
             .def = nlohmann::json(1), .min = 1, .max = 256}));
    system_write_occupancy = r.time(
        "system_write_occupancy",
        Spec{.doc = "arm64: one write-through's time at the die's L3 (tag look-up and data write) beyond the round trip",
             .def = "0", .max = 1e6});
    outer_shareable_is_full_system = r.boolean(
        "outer_shareable_is_full_system",
        Spec{.doc = "arm64: the outer-shareable domain reaches every observer, so dsb osh* waits for the home's "
                    "acknowledgement like dsb sy (false: osh barriers wait only for inner-shareable completion and "
                    "posted MMIO writes)"});
  }
  smt_compute_share = r.number(
      "smt_compute_share",
      Spec{.doc = "SMT: each thread's share of a solo core's compute rate while its sibling computes too (1 = no "
                  "sharing; 0.5 = no gain from SMT)",
           .def = 1.0, .min = 0.5, .max = 1.0});
}

Cpu::Cpu(int id, const CpuParams& p, fabric::Fabric& fab, sim::Simulator& sim, Core& core)
    : id_(id), p_(p), fab_(fab), sim_(sim), arm_(p.arch == "arm64"), core_(core) {
  port_wake_ = std::vector<sim::Signal>(static_cast<std::size_t>(2 * p_.outstanding_stores));
  sb_.reserve(static_cast<std::size_t>(p_.store_buffer_entries));
  if (arm_) write_slot_free_.assign(static_cast<std::size_t>(p_.system_write_slots), 0);
  for (int i = 0; i < p_.outstanding_stores; ++i) {
    sim_.spawn(fmt::format("cpu{} store write port {}", id_, i), write_port(i), /*daemon=*/true);
    sim_.spawn(fmt::format("cpu{} store ownership prefetch {}", id_, i), ownership_prefetcher(i), /*daemon=*/true);
  }
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
Cpu::LoadIssue Cpu::note_load_issue(Addr a, int size, Order o) {
  ++stats_.loads;
  LoadIssue in{a, size, ++loads_issued_, stores_buffered_, load_store_fence_, load_fence_, device_load_fence_};
  // ldar after an stlr still buffered (RCsc): that store and the ones before it.
  if (o == Order::acquire && arm_) in.stores_first = std::max(in.stores_first, release_through_);
  const bool acquire = o == Order::acquire || o == Order::acquire_pc || o == Order::full;
  unbound_.push_back({in.seq, fabric::line_of(a), acquire});
  if (acquire) last_acquire_ = in.seq;
  return in;
}

Task<std::uint64_t> Cpu::load(Addr a, int size, Order o) { return perform_load(note_load_issue(a, size, o), false); }

Task<std::uint64_t> Cpu::load_exclusive(Addr a, int size, Order o) {
  return perform_load(note_load_issue(a, size, o), true);
}

bool Cpu::load_blocked(std::uint64_t seq, Addr line, std::uint64_t fence) const {
  for (const InFlightLoad& l : unbound_) {
    if (l.seq >= seq) break;
    if (!arm_ || l.acquire || l.seq <= fence || l.line == line) return true;
  }
  return false;
}

Task<void> Cpu::wait_loads(std::uint64_t seq, Addr line, std::uint64_t fence) {
  while (load_blocked(seq, line, fence)) co_await sb_changed_.wait(sim_, "earlier loads", line);
}

void Cpu::load_bound(std::uint64_t seq) {
  std::erase_if(unbound_, [seq](const InFlightLoad& l) { return l.seq == seq; });
  changed();
}

Task<std::uint64_t> Cpu::perform_load(LoadIssue in, bool exclusive) {
  const Addr line = fabric::line_of(in.addr);
  // A slot among the loads in flight: the oldest outstanding_loads go first.
  auto older_in_flight = [&] {
    return std::count_if(unbound_.begin(), unbound_.end(), [&](const InFlightLoad& l) { return l.seq < in.seq; });
  };
  while (older_in_flight() >= p_.outstanding_loads) co_await sb_changed_.wait(sim_, "a load slot", line);
  // (Each test is made here, not in the callees: a load must not pay a coroutine frame for nothing.)
  if (!stores_written_through(in.stores_first)) co_await wait_stores_written(in.stores_first);
  if (in.device_fence > sim_.now()) co_await wait_device_fence(in.device_fence);
  if (load_blocked(in.seq, line, in.loads_fence)) {
    // Ordered after earlier loads still in flight: the line is fetched now
    // (an out-of-order core does not wait to start the miss), the value is
    // bound once they have bound, from the line as it is then.
    co_await fab_.acquire(id_, line, false);
    co_await wait_loads(in.seq, line, in.loads_fence);
  }
  if (jitter_on()) co_await sim_.delay(jitter());
  for (auto it = sb_.rbegin(); it != sb_.rend(); ++it) {
    if (it->seq > in.stores_before) continue;  // a later store in program order
    if (it->addr == in.addr && it->size == in.size && !exclusive && !it->atomic) {
      ++stats_.forwarded_loads;
      const std::uint64_t v = it->value;  // the write may take the entry meanwhile
      load_bound(in.seq);
      co_await sim_.delay(fab_.params().l1.latency);
      co_return v;
    }
    if (fabric::overlaps(it->addr, it->size, in.addr, in.size)) {
      co_await wait_stores_written(it->seq);  // partial overlap, an exclusive or an atomic: no forwarding
      break;
    }
  }
  Tick lat = co_await fab_.acquire(id_, line, false);
  std::uint64_t v = fab_.read(id_, in.addr, in.size);
  if (exclusive) fab_.set_monitor(id_, line);
  last_load_ = {in.addr, in.size, v};
  load_bound(in.seq);
  co_await sim_.delay(lat);
  co_return v;
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
  f.s_ = std::allocate_shared<LoadFuture::State>(sim::detail::PoolAllocator<LoadFuture::State>{});
  f.sim_ = &sim_;
  sim_.spawn("load", complete_load(load(a, size, o), f.s_, sim_));
  return f;
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
  if (t != BarrierType::st && !unbound_.empty()) co_await wait_all_loads();
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
  // No stall: later accesses carry the fence (header comment). Earlier
  // stores are ordered by inner-shareable completion in every domain; an
  // osh/sy dmb also orders earlier posted MMIO writes.
  if (t != BarrierType::st) load_fence_ = loads_issued_;
  if (t != BarrierType::ld) {
    store_fence_ = stores_buffered_;
    if (t == BarrierType::all) load_store_fence_ = stores_buffered_;
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
  if (!unbound_.empty()) co_await wait_all_loads();
  co_await drain_store_buffer();
  co_await sim_.delay(p_.mfence_cost);
  stats_.barrier_stall += sim_.now() - start;
  if (auto* tr = sim_.tracer()) tr->slice(id_, "mfence", "barrier", start, sim_.now());
}

Task<void> Cpu::lfence() {
  if (!unbound_.empty()) co_await wait_all_loads();
  co_await sim_.delay(p_.lfence_cost);
}

Task<void> Cpu::wait_loads_bound(std::uint64_t seq) {
  while (!loads_bound_through(seq)) co_await sb_changed_.wait(sim_, "earlier loads");
}
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
  // The wait below is the process's next (wait_for_loss suspends nowhere
  // else; outside a process its wait fails with the simulator's error).
  sim::Process* self = sim_.current();
  sleeper_ = {self, self != nullptr ? self->wait_id() + 1 : 0, interruptible};
  co_await fab_.wait_for_loss(id_, line, deadline, what);
  sleeper_ = {};
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
  if (sleeper_.interruptible) end_wait_for_change();
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
