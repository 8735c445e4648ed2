#include "cohsim/devices/hpet.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cohsim::devices {

using config::Spec;

HpetParams::HpetParams(config::Reader r) {
  socket = static_cast<int>(r.integer("socket", Spec{.doc = "socket whose chipset (PCH) holds the HPET", .min = 0,
                                                     .max = topo::kMaxSockets - 1}));
  counter_hz = r.frequency("counter_frequency", Spec{.doc = "main counter frequency", .min = 1e5, .max = 1e9});
  chipset_latency = r.time(
      "chipset_latency", Spec{.doc = "one way between the socket's gateway and the HPET block in the chipset (DMI, PCH)",
                              .max = 1e8});
  service_time = r.time("service_time", Spec{.doc = "access latency of a read in the HPET block: from its service start "
                                                    "(the counter latched) to its value leaving the block",
                                             .min = 1, .max = 1e8});
  const bool has_occupancy = r.has("occupancy");
  if (has_occupancy)
    occupancy = r.time("occupancy", Spec{.doc = "the counter's rate, one read per occupancy at most: serial, a read holds "
                                                "the port this long; pipelined, each of the ports this long times "
                                                "outstanding_reads",
                                         .min = 1, .max = 1e8});
  serial = r.choice("read_overlap", Spec{.doc = "serial: one port, reads of the counter serialize at the occupancy; "
                                                "pipelined: outstanding_reads ports at the same rate",
                                         .def = "pipelined", .choices = {"serial", "pipelined"}}) == "serial";
  outstanding_reads = static_cast<int>(r.integer(
      "outstanding_reads", Spec{.doc = "ports when read_overlap is pipelined (reads served at once)", .def = 1, .min = 1, .max = 64}));
  // Files written before occupancy was separate keep their old meaning: each read held its port for its access time.
  if (!has_occupancy) occupancy = std::max<Tick>(1, service_time / ports());
  timers = static_cast<int>(r.integer("timers", Spec{.doc = "comparators of the block (NUM_TIM_CAP + 1)", .min = 3, .max = 32}));
  vendor_id = static_cast<std::uint32_t>(
      r.integer("vendor_id", Spec{.doc = "VENDOR_ID field of the capabilities register", .min = 0, .max = 0xffff}));
  if (r.has("tsc_read"))
    r.fail("tsc_read", "moved to platform.cpu.tsc_read: the TSC read is the core's cost, not the HPET's");
}

Hpet::Hpet(const HpetParams& p, sim::Simulator& sim, fabric::Interconnect& icn, const std::string& name)
    : p_(p), sim_(sim), icn_(icn), name_(name) {
  if (p_.socket >= icn_.topology().sockets())
    throw std::invalid_argument(fmt::format("{}: socket {} does not exist", name_, p_.socket));
  endpoint_ = icn_.add_device(name_, p_.socket);
  slot_free_.assign(static_cast<std::size_t>(std::max(1, p_.ports())), 0);
  // GCAP_ID: REV_ID 1, NUM_TIM_CAP, COUNT_SIZE_CAP (64-bit), LEG_RT_CAP,
  // VENDOR_ID, COUNTER_CLK_PERIOD in femtoseconds.
  const auto period_fs = static_cast<std::uint64_t>(std::llround(1e15 / p_.counter_hz));
  capabilities_ = 0x01 | (static_cast<std::uint64_t>(p_.timers - 1) << 8) | (1ull << 13) | (1ull << 15) |
                  (static_cast<std::uint64_t>(p_.vendor_id) << 16) | (period_fs << 32);
}

Tick Hpet::service_owed(Tick now) const {
  Tick owed = 0;
  for (Tick t : slot_free_) owed += t > now ? t - now : 0;
  return owed;
}

std::uint64_t Hpet::counter_at(Tick t) const {
  if (!(configuration_ & kHpetEnable) || t < counter_epoch_) return counter_base_;
  const double elapsed_s = static_cast<double>(t - counter_epoch_) * 1e-12;
  return counter_base_ + static_cast<std::uint64_t>(elapsed_s * p_.counter_hz);
}

Tick Hpet::time_of_count(std::uint64_t value) const {
  if (value <= counter_base_) return counter_epoch_;
  return counter_epoch_ + static_cast<Tick>(std::ceil(static_cast<double>(value - counter_base_) / p_.counter_hz * 1e12));
}

std::uint64_t Hpet::register_value(std::uint32_t offset, int size, Tick at) {
  std::uint64_t full = 0;
  std::uint32_t base = offset & ~7u;
  switch (static_cast<HpetReg>(base)) {
    case HpetReg::capabilities: full = capabilities_; break;
    case HpetReg::configuration: full = configuration_; break;
    case HpetReg::counter: full = counter_at(at); break;
    default:
      ++stats_.unknown_accesses;
      spdlog::warn("{}: read of unmodelled register {:#x} returns 0", name_, offset);
      return 0;
  }
  if (size == 8) return full;
  return (offset & 4) ? full >> 32 : full & 0xffffffffull;
}

void Hpet::apply_write(std::uint32_t offset, int size, std::uint64_t value) {
  ++stats_.writes;
  const std::uint32_t base = offset & ~7u;
  const Tick now = sim_.now();
  if (static_cast<HpetReg>(base) == HpetReg::configuration && (offset & 4) == 0) {
    const bool was_on = configuration_ & kHpetEnable;
    counter_base_ = counter_at(now);
    counter_epoch_ = now;
    configuration_ = value & 0x3;  // ENABLE_CNF, LEG_RT_CNF
    if (was_on != bool(configuration_ & kHpetEnable))
      spdlog::debug("{}: counter {} at {}", name_, was_on ? "halted" : "started", sim::format_time(now));
    return;
  }
  if (static_cast<HpetReg>(base) == HpetReg::counter && !(configuration_ & kHpetEnable)) {
    const std::uint64_t mask = size == 8 ? ~0ull : 0xffffffffull;
    const int shift = (offset & 4) ? 32 : 0;
    counter_base_ = (counter_base_ & ~(mask << shift)) | ((value & mask) << shift);
    counter_epoch_ = now;
    return;
  }
  ++stats_.rejected_writes;
  if (static_cast<HpetReg>(base) == HpetReg::counter)
    spdlog::warn("{}: write of {:#x} to the main counter while it runs ignored (halt it first)", name_, value);
  else if (static_cast<HpetReg>(base) == HpetReg::capabilities)
    spdlog::warn("{}: write of {:#x} to the read-only capabilities register ignored", name_, value);
  else
    spdlog::warn("{}: write of {:#x} to unmodelled register {:#x} ignored", name_, value, offset);
}

Task<std::uint64_t> Hpet::read(int requester, std::uint32_t offset, int size) {
  // CPU -> socket gateway (interconnect) -> chipset link -> device FIFO.
  const Tick at_gateway = icn_.send(requester, endpoint_, sim_.now());
  co_await sim_.delay(at_gateway + p_.chipset_latency - sim_.now());
  ++stats_.reads;
  stats_.max_queue = std::max(stats_.max_queue, ++at_device_);
  // FIFO: the read takes the port that frees first (reads arrive in time order)
  // and holds it (ports x occupancy); its value leaves after the access latency.
  auto slot = std::min_element(slot_free_.begin(), slot_free_.end());
  const Tick start = std::max(sim_.now(), *slot);
  stats_.queue_wait += start - sim_.now();
  const Tick hold = p_.hold();
  *slot = start + hold;
  stats_.busy += hold;
  const std::uint64_t value = register_value(offset, size, start);
  co_await sim_.delay(start + std::min(hold, p_.service_time) - sim_.now());
  --at_device_;  // the port is free (or the value left first)
  if (p_.service_time > hold) co_await sim_.delay(p_.service_time - hold);
  // The completion crosses the chipset link, then the interconnect back.
  co_await sim_.delay(p_.chipset_latency);
  const Tick back = icn_.send(endpoint_, requester, sim_.now());
  co_await sim_.delay(back - sim_.now());
  co_return value;
}

Task<void> Hpet::write(int requester, std::uint32_t offset, int size, std::uint64_t value) {
  const Tick at_gateway = icn_.send(requester, endpoint_, sim_.now());
  co_await sim_.delay(at_gateway + p_.chipset_latency - sim_.now());
  apply_write(offset, size, value);
}

Task<std::uint32_t> hpet_read_counter(cpu::Cpu& cpu, Hpet& hpet) {
  co_return static_cast<std::uint32_t>(
      co_await hpet.read(cpu.fabric().interconnect().cpu_endpoint(cpu.id()), static_cast<std::uint32_t>(HpetReg::counter), 4));
}

}  // namespace cohsim::devices
