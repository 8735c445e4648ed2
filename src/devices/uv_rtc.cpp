#include "cohsim/devices/uv_rtc.hpp"

#include <algorithm>

namespace cohsim::devices {

using config::Spec;

UvRtcParams::UvRtcParams(config::Reader r) {
  register_read = r.time("register_read", Spec{.doc = "the hub's RTC register access: from the read's arrival at "
                                                      "the hub to its answer leaving (the UPI legs are the "
                                                      "interconnect's)",
                                               .min = 1, .max = 1e8});
  counter_hz = r.frequency("counter_frequency", Spec{.doc = "hub RTC counting rate", .min = 1e5, .max = 1e10});
}

UvRtc::UvRtc(const UvRtcParams& p, sim::Simulator& sim, fabric::Interconnect& icn)
    : p_(p), sim_(sim), icn_(icn), reads_per_hub_(static_cast<std::size_t>(icn.topology().sockets()), 0) {}

std::uint64_t UvRtc::counter_at(Tick t) const {
  const auto ps = static_cast<unsigned __int128>(t);
  return static_cast<std::uint64_t>(ps * static_cast<unsigned __int128>(p_.counter_hz) / 1'000'000'000'000ull);
}

std::uint64_t UvRtc::reads_at_hub_of(int cpu) const {
  return reads_per_hub_.at(static_cast<std::size_t>(icn_.endpoint(icn_.cpu_endpoint(cpu)).socket));
}

Task<std::uint64_t> UvRtc::read(int cpu) {
  const int from = icn_.cpu_endpoint(cpu);
  stats_.max_in_flight = std::max(stats_.max_in_flight, ++in_flight_);
  const Tick at_hub = icn_.send_node_controller(from, /*to_hub=*/true, sim_.now());
  co_await sim_.delay(at_hub + p_.register_read / 2 - sim_.now());
  ++stats_.reads;
  ++reads_per_hub_[static_cast<std::size_t>(icn_.endpoint(from).socket)];
  const std::uint64_t value = counter_at(sim_.now());
  co_await sim_.delay(p_.register_read - p_.register_read / 2);
  const Tick back = icn_.send_node_controller(from, /*to_hub=*/false, sim_.now());
  co_await sim_.delay(back - sim_.now());
  --in_flight_;
  co_return value;
}

}  // namespace cohsim::devices
