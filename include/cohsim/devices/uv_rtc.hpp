// The hub-local real-time clock of SGI UV / HPE Superdome Flex class node
// controllers, the clock Linux reads there instead of the far HPET
// (arch/x86/platform/uv/uv_time.c, uv_read_rtc): every hub (node-controller
// ASIC) holds a copy of the RTC, replicated across all cachelines of its
// register page, and each CPU reads the line of its own index in its own
// socket's hub. A read is an uncached load that crosses the CPU's die network
// to its socket's off-chip stop (the gateway die's stop 0), goes over the
// socket's UPI link to its hub (booked there like a remote access's message),
// is answered after the hub's register access (`register_read`, which
// latches the counter midway) and comes back the same way. Nothing
// serializes reads: no hub-wide or machine-wide service slot (the replicated
// lines exist so that a socket's CPUs read at once), and the hubs' copies
// count in step. A platform with a hub RTC has node controllers.
#pragma once

#include <cstdint>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/fabric/interconnect.hpp"
#include "cohsim/sim/simulator.hpp"

namespace cohsim::devices {

using sim::Task;
using sim::Tick;

/// The platform's "uv_rtc" section.
struct UvRtcParams {
  Tick register_read = 0;     ///< the hub's RTC register access, between the UPI legs
  double counter_hz = 1e8;    ///< RTC counting rate
  /// Reads platform.uv_rtc; throws ConfigError.
  explicit UvRtcParams(config::Reader r);
  UvRtcParams() = default;
};

/// What the hubs' clocks served.
struct UvRtcStats {
  std::uint64_t reads = 0;
  std::uint64_t max_in_flight = 0;  ///< most reads outstanding at once, machine-wide
};

class UvRtc {
 public:
  /// The hubs of every socket of the interconnect's topology, counting from 0 at time 0.
  UvRtc(const UvRtcParams& p, sim::Simulator& sim, fabric::Interconnect& icn);

  const UvRtcParams& params() const { return p_; }
  const UvRtcStats& stats() const { return stats_; }
  /// The RTC value at simulated time t (every hub's copy reads the same).
  std::uint64_t counter_at(Tick t) const;
  /// Reads that reached CPU `cpu`'s hub so far.
  std::uint64_t reads_at_hub_of(int cpu) const;
  /// uv_read_rtc() on `cpu`: an uncached load of its own hub's RTC line; the
  /// CPU is stalled for the round trip. Returns the value latched at the hub.
  Task<std::uint64_t> read(int cpu);

 private:
  UvRtcParams p_;
  sim::Simulator& sim_;
  fabric::Interconnect& icn_;
  std::vector<std::uint64_t> reads_per_hub_;  ///< per socket (its hub)
  std::uint64_t in_flight_ = 0;
  UvRtcStats stats_;
};

}  // namespace cohsim::devices
