#include "cohsim/devices/smmu.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cohsim::devices {

using config::Spec;

SmmuParams::SmmuParams(config::Reader r) {
  socket = static_cast<int>(r.integer("socket", Spec{.doc = "socket whose I/O die holds the SMMU", .def = 0, .min = 0,
                                                     .max = topo::kMaxSockets - 1}));
  node = static_cast<int>(r.integer("node", Spec{.doc = "NUMA node of the SMMU's queues", .def = 0, .min = 0,
                                                 .max = topo::kMaxDies - 1}));  // a node per die at most
  register_access = r.time("register_access", Spec{.doc = "PROD/CONS register access at the device", .max = 1e7});
  command_fetch = r.time("command_fetch", Spec{.doc = "decoding one command once its line arrived", .max = 1e7});
  tlbi_time = r.time("tlbi_time", Spec{.doc = "executing CMD_TLBI_NH_VA", .max = 1e8});
  sync_time = r.time("sync_time", Spec{.doc = "CMD_SYNC: completing earlier invalidations before the MSI write", .max = 1e8});
  service_spread = r.number("service_spread",
                            Spec{.doc = "each TLBI's and CMD_SYNC's time is drawn uniformly from its time x [1 - s, 1 + s] "
                                        "(random source smmu.service); 0: every command takes exactly its time",
                                 .def = 0.0, .min = 0, .max = 0.9});
  msi_acknowledged =
      r.choice("msi_write", Spec{.doc = "posted: the command processor goes on once a CMD_SYNC's MSI write has left; "
                                        "acknowledged: it waits for the write's completion (the home's invalidation of the "
                                        "waiting CPU's copy and the answer back) before the next command",
                                 .def = "posted", .choices = {"posted", "acknowledged"}}) == "acknowledged";
  map_cpu_work = r.time("map_cpu_work", Spec{.doc = "dma_map_single CPU work outside the command queue", .max = 1e8});
  unmap_cpu_work = r.time("unmap_cpu_work", Spec{.doc = "dma_unmap_single CPU work outside the command queue", .max = 1e8});
}

Smmu::Smmu(const SmmuParams& p, fabric::Fabric& fabric, int queue_entries, std::uint64_t seed, const std::string& name)
    : p_(p), fab_(fabric), sim_(fabric.simulator()), name_(name), entries_(queue_entries),
      service_rng_(seed, "smmu.service") {
  if (queue_entries < 4 || (queue_entries & (queue_entries - 1)) != 0)
    throw std::invalid_argument(fmt::format("{}: queue of {} entries is not a power of two >= 4", name, queue_entries));
  shift_ = std::countr_zero(static_cast<unsigned>(queue_entries));
  endpoint_ = fab_.interconnect().add_device(name_, p_.socket);
  queue_base_ = fab_.memory().alloc(p_.node, static_cast<std::uint64_t>(queue_entries) * kCmdBytes, 64,
                                    name_ + ".cmdq.base");
  sim_.spawn(name_ + " command processor", command_processor(), /*daemon=*/true);
}

void Smmu::register_write(SmmuReg r, std::uint32_t value) {
  if (r == SmmuReg::cmdq_prod) {
    ++stats_.prod_writes;
    const std::uint32_t mask = (2u << shift_) - 1;
    // PROD only moves forward, by at most the queue (its wrap bit included):
    // a value behind it is a driver or ordering bug, never real traffic.
    if (((value - prod_) & mask) > static_cast<std::uint32_t>(entries_))
      throw sim::SimError(fmt::format("{}: CMDQ_PROD moved backwards from {:#x} to {:#x}", name_, prod_, value & mask));
    prod_ = value & mask;
    prod_written_.notify_all(sim_);
  } else {
    spdlog::warn("{}: write of {:#x} to read-only CMDQ_CONS ignored", name_, value);
  }
}

std::uint32_t Smmu::register_read(SmmuReg r) {
  if (r == SmmuReg::cmdq_cons) {
    ++stats_.cons_reads;
    return cons_;
  }
  return prod_;
}

// The command processor: consumes entries [CONS, PROD) in order, fetching
// each queue line coherently (4 entries per line) when it first needs it.
Task<void> Smmu::command_processor() {
  const std::uint32_t mask = (1u << shift_) - 1;
  const std::uint32_t wrap_mask = (2u << shift_) - 1;
  Addr cached_line = ~Addr{0};
  std::uint32_t cached_limit = 0;  // entries of the cached line valid when it was read
  fabric::LineData data{};
  for (;;) {
    while (cons_ == prod_) co_await prod_written_.wait(sim_, "CMDQ_PROD write");
    const std::uint32_t index = cons_ & mask;
    const Addr entry = queue_base_ + static_cast<Addr>(index) * kCmdBytes;
    const Addr line = fabric::line_of(entry);
    // Entries below PROD at fetch time are final (the driver published them
    // before writing PROD); a later entry of the same line needs a new fetch.
    if (line != cached_line || cached_limit == 0) {
      ++stats_.line_reads;
      data = co_await fab_.device_read(endpoint_, line);
      cached_line = line;
      const std::uint32_t in_line = static_cast<std::uint32_t>((line + fabric::kLineBytes - entry) / kCmdBytes);
      cached_limit = std::min(in_line, (prod_ - cons_) & wrap_mask);
    }
    std::uint64_t dword0 = 0, dword1 = 0;
    const std::size_t off = static_cast<std::size_t>(entry - line);
    std::memcpy(&dword0, data.data() + off, 8);
    std::memcpy(&dword1, data.data() + off + 8, 8);
    --cached_limit;
    check_expected(index, dword0, dword1);
    co_await execute(dword0, dword1, index);
    cons_ = (cons_ + 1) & wrap_mask;
    sim_.note_progress();
  }
}

void Smmu::expect_command(std::uint32_t index, std::uint64_t dword0, std::uint64_t dword1) {
  if (expected_.empty()) expected_.resize(static_cast<std::size_t>(entries_));
  expected_.at(index) = Expected{true, dword0, dword1};
}

void Smmu::check_expected(std::uint32_t index, std::uint64_t dword0, std::uint64_t dword1) {
  // The queue is normal cacheable memory the SMMU reads I/O-coherently: it
  // sees what the driver's stores made visible, not what is still in a
  // CPU's store buffer. A difference is a publication-order bug.
  if (expected_.empty()) return;
  Expected& e = expected_[index];
  if (!e.pending) return;
  e.pending = false;
  if (e.dword0 == dword0 && e.dword1 == dword1) return;
  ++stats_.stale_commands;
  stale_reads_.push_back({index, sim_.now(), dword0, dword1, e.dword0, e.dword1});
}

std::string Smmu::StaleRead::message() const {
  return fmt::format("stale command read by the SMMU at slot {} at {:.1f} ns: read {:#018x} {:#018x}, the driver "
                     "wrote {:#018x} {:#018x}",
                     index, sim::to_ns(at), read0, read1, written0, written1);
}

Tick Smmu::service(Tick t) {
  if (p_.service_spread == 0) return t;
  const double f = 1.0 + p_.service_spread * (2.0 * service_rng_.unit() - 1.0);
  return static_cast<Tick>(static_cast<double>(t) * f + 0.5);
}

Task<void> Smmu::execute(std::uint64_t dword0, std::uint64_t dword1, std::uint32_t index) {
  const Tick start = sim_.now();
  co_await sim_.delay(p_.command_fetch);
  ++stats_.commands;
  if (recording_) executed_.push_back({dword0, dword1, index, start});
  const std::uint64_t opcode = dword0 & 0xff;
  if (opcode == kCmdTlbiNhVa) {
    ++stats_.tlbi;
    co_await sim_.delay(service(p_.tlbi_time));
  } else if (opcode == kCmdSync && (dword0 & kSyncCsIrq) != 0 && dword1 != 0) {
    // Earlier commands are complete (in-order execution); drain, then the
    // MSI: MSIData (0) written to MSIAddr, which the driver points at this
    // very entry. Posted, the SMMU goes on with the next command at once;
    // acknowledged, once the coherent write has completed: the home has
    // invalidated the waiting CPU's copy, wherever it is, and answered.
    ++stats_.syncs;
    co_await sim_.delay(service(p_.sync_time));
    ++stats_.msi_writes;
    const Addr msi = dword1;
    if (p_.msi_acknowledged) {
      co_await fab_.device_write(endpoint_, msi, 4, 0);
    } else {
      fabric::Fabric* fab = &fab_;
      const int ep = endpoint_;
      auto write = [](fabric::Fabric* f, int e, Addr a) -> Task<void> { co_await f->device_write(e, a, 4, 0); };
      sim_.spawn(name_ + " MSI write", write(fab, ep, msi), /*daemon=*/true);
    }
  } else {
    // CERROR_ILL: the SMMU stops and raises GERROR.CMDQ_ERR; the driver's
    // handler (arm_smmu_cmdq_skip_err) replaces the command and restarts.
    // Modelled as: logged, counted, skipped.
    ++stats_.command_errors;
    spdlog::error("{}: CMDQ_ERR CERROR_ILL at entry {}: dword0 {:#018x} dword1 {:#018x}", name_, index, dword0,
                  dword1);
  }
  stats_.busy += sim_.now() - start;
}

Task<void> mmio_write(cpu::Cpu& cpu, Smmu& smmu, SmmuReg r, std::uint32_t value) {
  auto& sim = cpu.sim();
  auto& icn = cpu.fabric().interconnect();
  co_await cpu.order_device_access(/*write=*/true);  // e.g. dma_wmb before writel_relaxed
  // Posted: the CPU goes on once the store has issued; the write reaches the
  // device after every earlier write of this CPU to it, and the device takes
  // it a register access later.
  const Tick arrive =
      cpu.post_device_write(smmu.endpoint(), icn.send(icn.cpu_endpoint(cpu.id()), smmu.endpoint(), sim.now()));
  auto deliver = [](sim::Simulator* s, Smmu* dev, Tick at, SmmuReg reg, std::uint32_t v) -> Task<void> {
    co_await s->delay(at - s->now());
    dev->register_write(reg, v);
  };
  sim.spawn(smmu.name() + " register write", deliver(&sim, &smmu, arrive + smmu.params().register_access, r, value));
  co_await sim.delay(cpu.params().cycles(1));
}

Task<std::uint32_t> mmio_read(cpu::Cpu& cpu, Smmu& smmu, SmmuReg r) {
  auto& sim = cpu.sim();
  auto& icn = cpu.fabric().interconnect();
  co_await cpu.order_device_access(/*write=*/false);
  // Device-nGnRE: the read arrives after this CPU's earlier writes to the device.
  const Tick arrive = std::max(icn.send(icn.cpu_endpoint(cpu.id()), smmu.endpoint(), sim.now()),
                               cpu.device_writes_arrived(smmu.endpoint()));
  co_await sim.delay(arrive - sim.now() + smmu.params().register_access);
  const std::uint32_t v = smmu.register_read(r);
  const Tick back = icn.send(smmu.endpoint(), icn.cpu_endpoint(cpu.id()), sim.now());
  co_await sim.delay(back - sim.now());
  co_return v;
}

}  // namespace cohsim::devices
