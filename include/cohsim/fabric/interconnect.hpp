// Links between the places of a machine: every message walks a path of hops,
// each of a class (cluster, die, cross_die, socket, node_controller), paying
// the class latency and queueing behind earlier messages on the same link.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/sim/time.hpp"
#include "cohsim/topo/topology.hpp"

namespace cohsim::fabric {

using sim::Tick;
using topo::HopClass;

/// Where a message starts or ends: a CPU, a node's home agent, or a device.
struct Endpoint {
  int socket = 0;
  int die_global = 0;
  int cluster_global = -1;  ///< -1 for agents that sit on the die's fabric
  int core_global = -1;     ///< -1 for non-CPU agents
  std::string name;
};

/// Latency and per-message occupancy of one hop class.
struct HopCost {
  Tick latency = 0;
  Tick occupancy = 0;
};

/// One physical link (a cluster bus, a die ring, a die-to-die or socket link).
struct Link {
  HopClass cls;
  std::string name;
  Tick free_at = 0;        ///< when the link can take its next message
  std::uint64_t messages = 0;
  Tick busy = 0;           ///< total occupancy, for utilisation
  Tick queued = 0;         ///< total time messages waited for this link
};

/// The interconnect: endpoints, paths and link occupancy.
class Interconnect {
 public:
  /// Reads platform.interconnect (one entry per hop class the machine has).
  Interconnect(config::Reader r, const topo::Topology& topo);

  /// Endpoint ids: CPUs first (id == cpu number), then homes, then devices.
  int cpu_endpoint(int cpu) const { return cpu; }
  int home_endpoint(int node) const { return topo_.cpu_count() + node; }
  /// Adds a device on `socket`'s gateway die; returns its endpoint id.
  int add_device(const std::string& name, int socket);
  const Endpoint& endpoint(int id) const { return endpoints_.at(static_cast<std::size_t>(id)); }
  std::size_t endpoint_count() const { return endpoints_.size(); }

  struct Path {
    Tick latency = 0;               ///< unloaded, sum of hop latencies
    std::vector<int> links;         ///< link ids in order
    HopClass widest = HopClass::smt;
    bool valid = false;
  };
  /// The path from endpoint a to b (cached).
  const Path& path(int a, int b);
  /// Sends one message leaving `a` at time `at`; returns its arrival time at
  /// `b`, after reserving each link on the way (later messages queue).
  Tick send(int a, int b, Tick at);
  /// Unloaded latency between two endpoints.
  Tick latency(int a, int b) { return path(a, b).latency; }
  const HopCost& cost(HopClass c) const { return costs_[static_cast<std::size_t>(c)]; }
  const std::vector<Link>& links() const { return links_; }
  const topo::Topology& topology() const { return topo_; }

 private:
  int link_id(HopClass c, const std::string& name);
  void add_hop(Path& p, HopClass c, const std::string& name);
  void route_dies(Path& p, const Endpoint& a, const Endpoint& b);

  const topo::Topology& topo_;
  std::array<HopCost, topo::kHopClasses> costs_{};
  std::vector<Endpoint> endpoints_;
  std::vector<Link> links_;
  std::map<std::string, int> link_ids_;
  std::vector<Path> paths_;  // endpoints^2, filled lazily
  std::size_t path_stride_ = 0;
};

}  // namespace cohsim::fabric
