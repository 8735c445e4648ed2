// The HPET (IA-PC High Precision Event Timer, Intel PCH) as an MMIO agent on
// socket 0's I/O path: a free-running main counter at 14.31818 MHz, the
// capabilities, configuration and main-counter registers, and a limited
// counter port that reads hold. Latency and occupancy are separate numbers:
// a read travels from the CPU over the interconnect to socket 0's gateway,
// crosses the chipset link (DMI) to the PCH, waits in a FIFO while the port
// is held by earlier reads, latches the counter when its own service starts,
// holds a port, and its value leaves the block `service_time` (the access
// latency) after the start and travels back. `occupancy` is the counter's
// rate, one read per occupancy at most, whatever its form: with
// read_overlap = serial there is one port, held for the occupancy (reads of
// the counter serialize); with pipelined, `outstanding_reads` reads hold a
// port at once, each for outstanding_reads x occupancy (the same rate, in
// bursts). An uncached x86 load stalls the CPU for the whole round trip.
// Register map: IA-PC HPET specification 1.0a, 2.3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/interconnect.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::devices {

using sim::Task;
using sim::Tick;

/// HPET register offsets used by Linux (arch/x86/include/asm/hpet.h).
enum class HpetReg : std::uint32_t { capabilities = 0x0, configuration = 0x10, counter = 0xF0 };
/// ENABLE_CNF, bit 0 of the configuration register: the main counter runs.
inline constexpr std::uint64_t kHpetEnable = 1;

/// The "hpet" section of a platform, plus the TSC, the other clocksource.
struct HpetParams {
  int socket = 0;                  ///< socket whose chipset (PCH) holds the HPET
  double counter_hz = 14318180;    ///< main counter frequency
  Tick chipset_latency = 0;        ///< one way, socket gateway to the HPET block in the PCH (DMI)
  Tick service_time = 0;           ///< access latency: from a read's service start to its value leaving the block
  Tick occupancy = 0;              ///< the counter's rate: one read per occupancy at most (serial: a read holds the port this long)
  bool serial = false;             ///< read_overlap: serial (one port) or pipelined (outstanding_reads ports)
  int outstanding_reads = 1;       ///< ports when pipelined (reads the device serves at once)
  /// Ports reads queue for: 1 when serial.
  int ports() const { return serial ? 1 : outstanding_reads; }
  /// How long one read holds its port: ports x occupancy, so that any form serves one read per occupancy.
  Tick hold() const { return occupancy * ports(); }
  int timers = 8;                  ///< comparators (NUM_TIM_CAP + 1)
  std::uint32_t vendor_id = 0x8086;
  /// Reads platform.hpet; throws ConfigError.
  explicit HpetParams(config::Reader r);
  HpetParams() = default;
};

/// What the device did.
struct HpetStats {
  std::uint64_t reads = 0, writes = 0;
  std::uint64_t rejected_writes = 0;  ///< writes to read-only registers (or the running counter)
  std::uint64_t unknown_accesses = 0; ///< offsets outside the modelled register map
  Tick busy = 0;                      ///< total port occupancy
  Tick queue_wait = 0;                ///< total time reads waited for an earlier read
  std::uint64_t max_queue = 0;        ///< most reads at the device at once (in service + waiting)
};

class Hpet {
 public:
  /// Adds the device to the interconnect on `p.socket` (its endpoint) with the
  /// counter enabled at time 0 (the kernel enables it at boot).
  Hpet(const HpetParams& p, sim::Simulator& sim, fabric::Interconnect& icn, const std::string& name = "hpet");

  const HpetParams& params() const { return p_; }
  const HpetStats& stats() const { return stats_; }
  int endpoint() const { return endpoint_; }
  /// Main counter value at simulated time t (64 bits; stops while disabled).
  std::uint64_t counter_at(Tick t) const;
  /// The simulated time at which the counter reads `value` (for tests and checks).
  Tick time_of_count(std::uint64_t value) const;
  /// Port occupancy still owed, after `now`, to the reads the device holds (summed over its ports).
  Tick service_owed(Tick now) const;

  /// An uncached load of `size` (4 or 8) bytes at `offset` issued by the CPU
  /// (or user code on it) at endpoint `requester`: the caller is stalled until
  /// the value is back. Returns the register value at service time.
  Task<std::uint64_t> read(int requester, std::uint32_t offset, int size = 4);
  /// An uncached store: the CPU waits until the device took it.
  Task<void> write(int requester, std::uint32_t offset, int size, std::uint64_t value);
  /// The value a read of `size` bytes at `offset` returns when served at `at`.
  std::uint64_t register_value(std::uint32_t offset, int size, Tick at);

 private:
  void apply_write(std::uint32_t offset, int size, std::uint64_t value);

  HpetParams p_;
  sim::Simulator& sim_;
  fabric::Interconnect& icn_;
  std::string name_;
  int endpoint_;
  std::uint64_t capabilities_;
  std::uint64_t configuration_ = kHpetEnable;
  std::uint64_t counter_base_ = 0;  ///< counter value at counter_epoch_
  Tick counter_epoch_ = 0;          ///< when the counter was last (re)started or stopped
  std::vector<Tick> slot_free_;     ///< when each port is free of the reads given to it
  std::uint64_t at_device_ = 0;     ///< reads waiting or in service
  HpetStats stats_;
};

/// hpet_readl(HPET_COUNTER) from kernel or vDSO code on `cpu`: the low 32
/// bits of the main counter, the CPU stalled for the round trip.
Task<std::uint32_t> hpet_read_counter(cpu::Cpu& cpu, Hpet& hpet);

}  // namespace cohsim::devices
