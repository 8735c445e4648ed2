// Links between the places of a machine: every message walks a path of hops,
// each of a class (cluster, die, cross_die, socket, node_controller), paying
// the class latency and holding each link it crosses for the class occupancy.
// Links are per direction; a die's ring or mesh is a set of segments between
// stops; a point-to-point link has ports. A message takes the earliest free
// slot of a link at or after its own ready time (LinkTimeline).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/fabric/link_timeline.hpp"
#include "cohsim/sim/simulator.hpp"
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

/// One physical link in one direction (a ring or mesh segment, a die-to-die,
/// socket or node-controller link) or one shared medium (a cluster bus, a core).
/// A message takes whichever of its ports is free first. (The fields every
/// message crossing it touches come first and fill one cache line, the
/// struct aligned to it: on a big machine a path's links are rarely in the
/// host's cache, and each line fewer is a miss fewer per hop.)
struct alignas(64) Link {
  Tick occupancy = 0;  ///< per message: the class occupancy
  std::uint64_t messages = 0;
  Tick busy = 0;                         ///< total occupancy, for utilisation
  LinkTimeline first_port;               ///< port 0
  std::vector<LinkTimeline> more_ports;  ///< ports 1, 2, ... (most links have one port)
  HopClass cls = HopClass::smt;
  std::string name;
  Tick queued = 0;      ///< total time messages waited for this link
  Tick max_queued = 0;  ///< longest single wait
  std::size_t port_count() const { return 1 + more_ports.size(); }
  const LinkTimeline& port(std::size_t i) const { return i == 0 ? first_port : more_ports[i - 1]; }
};
static_assert(3 * sizeof(Tick) + sizeof(LinkTimeline) <= 64, "a link's hot fields fill one cache line");

/// How a die's on-chip network is laid out: a bidirectional ring of `stops`,
/// or a `columns` x `rows` mesh routed X then Y.
struct DieNetwork {
  bool mesh = false;
  int stops = 1;    ///< ring or mesh stops (a mesh: columns * rows)
  int columns = 1;  ///< mesh only
};

/// The interconnect: endpoints, paths and link occupancy.
class Interconnect {
 public:
  /// Reads platform.interconnect (one entry per hop class the machine has);
  /// `sim` tells the current time, before which bookings are forgotten.
  Interconnect(config::Reader r, const topo::Topology& topo, const sim::Simulator& sim);

  /// Endpoint ids: CPUs first (id == cpu number), then homes, then dies' L3s, then devices.
  int cpu_endpoint(int cpu) const { return cpu; }
  int home_endpoint(int node) const { return topo_.cpu_count() + node; }
  /// The L3 of a die (a per-die LLC), at its die network's stop 0 with the home agent.
  int llc_endpoint(int die) const { return topo_.cpu_count() + topo_.node_count() + die; }
  /// Adds a device on `socket`'s gateway die; returns its endpoint id.
  int add_device(const std::string& name, int socket);
  const Endpoint& endpoint(int id) const { return endpoints_.at(static_cast<std::size_t>(id)); }
  std::size_t endpoint_count() const { return endpoints_.size(); }

  /// One stretch of a path: a link (or none, a ring crossing that stays at
  /// one stop) and the latency the message spends after taking it.
  struct Step {
    int link = -1;  ///< link id, -1 when the stretch holds no link
    HopClass cls = HopClass::smt;
    Tick latency = 0;
  };
  struct Path {
    Tick latency = 0;               ///< unloaded, sum of step latencies
    std::vector<Step> steps;        ///< in order
    HopClass widest = HopClass::smt;
    bool valid = false;
  };
  /// The path from endpoint a to b (computed on first use and kept: memory
  /// follows the endpoint pairs that talk, not endpoints squared).
  const Path& path(int a, int b) {
    if (dense_stride_ == 0) return find_or_build_path(a, b);  // a machine too large for the direct index
    const Path*& slot = dense_paths_[static_cast<std::size_t>(a) * dense_stride_ + static_cast<std::size_t>(b)];
    if (slot == nullptr) [[unlikely]]
      slot = &find_or_build_path(a, b);  // (paths_ keeps its elements in place)
    return *slot;
  }
  /// Endpoint pairs whose path has been computed and kept.
  std::size_t paths_kept() const { return paths_.size(); }
  /// Sends one message leaving `a` at time `at` (not before now); returns its
  /// arrival time at `b` (`at` itself when a non-CPU agent sends to itself), after booking on each link on the way the earliest
  /// free slot of the class occupancy at or after the time it gets there.
  Tick send(int a, int b, Tick at);
  /// A message between endpoint `ep` and the node controller of its socket's
  /// group (a UV-class hub, whose registers a CPU reads): across the die
  /// network to the socket's off-chip stop (its gateway die's), then the
  /// socket's own link to the node controller, the one its remote accesses
  /// take (class socket); `to_hub` false: the way back. Books like send();
  /// returns the arrival time.
  Tick send_node_controller(int ep, bool to_hub, Tick at);
  /// Unloaded latency between two endpoints (on a machine too large for the
  /// direct path index, from the pieces send() keeps, keeping no path).
  Tick latency(int a, int b) { return composed(a, b) ? composed_latency(a, b) : path(a, b).latency; }
  const HopCost& cost(HopClass c) const { return costs_[static_cast<std::size_t>(c)]; }
  const std::vector<Link>& links() const { return links_; }
  /// A step's link name, or "<class> ring at one stop" for a step without a link.
  std::string step_name(const Step& s) const;
  /// Ports of a link of class c (1 for rings, meshes, cluster buses and cores).
  int ports(HopClass c) const { return ports_[static_cast<std::size_t>(c)]; }
  /// Layout of every die's on-chip network.
  const DieNetwork& die_network() const { return die_net_; }
  /// Ring or mesh stop of an endpoint on its die.
  int stop_of(const Endpoint& e) const;
  const topo::Topology& topology() const { return topo_; }
  /// Socket-to-socket link crossings between sockets a and b (0 for one
  /// socket; 2 between node-controller groups: to the controller and from it).
  int socket_crossings(int a, int b) const;

 private:
  /// What identifies a link without its name: a kind and up to three numbers.
  enum class LinkKind : std::uint8_t { core, cluster, ring_cw, ring_ccw, mesh_e, mesh_w, mesh_s, mesh_n, cross_die,
                                       socket, socket_to_nc, nc, nc_to_socket };
  struct LinkKey {
    LinkKind kind;
    int a = 0, b = 0, c = 0;
  };
  /// The id of the link `key` names (of class `c`), created on first use.
  int link_id(HopClass c, LinkKey key);
  /// The link's name in reports, e.g. "die3.cw5" or "qpi0>nc1".
  static std::string link_name(LinkKey key);
  void add_hop(Path& p, HopClass c, LinkKey key);
  /// Crosses die `die`'s ring or mesh from stop `from` to stop `to`: one
  /// step per segment, sharing the die latency between them.
  void cross_die_network(Path& p, int die, int from, int to);
  void route_dies(Path& p, const Endpoint& a, const Endpoint& b);
  /// Between two sockets of one group: their own link, or around the ring.
  void route_sockets(Path& p, int a, int b);
  void read_die_network(config::Reader& die);
  /// Reads interconnect.socket.links (and builds the socket graph of a hypercube).
  void read_socket_links(config::Reader& socket);
  /// Steps kept once computed (a leg per endpoint, a route per die pair).
  struct KeptSteps {
    bool valid = false;
    Tick latency = 0;  ///< sum of the steps' latencies
    std::vector<Step> steps;
  };
  /// Endpoint `ep`'s way from its stop to its die's stop 0 (`out`), or back (in).
  const KeptSteps& leg(int ep, bool out);
  /// From stop 0 of die `from` to stop 0 of die `to` (different dies).
  const KeptSteps& die_route(int from, int to);
  /// latency() of a pair whose path send() composes.
  Tick composed_latency(int a, int b);
  /// True when send() composes a's path to b from legs and a die route.
  bool composed(int a, int b) const {
    return dense_stride_ == 0 && endpoint(a).die_global != endpoint(b).die_global;
  }
  /// Books the earliest slot on `l` at or after `ready`; returns its start.
  Tick reserve(Link& l, Tick ready) {
    ++l.messages;
    if (l.occupancy == 0) return ready;
    // Most messages find the link's first port free when they reach it.
    if (l.first_port.book_if_free(sim_.now(), ready, l.occupancy)) {
      l.busy += l.occupancy;
      return ready;
    }
    return reserve_contended(l, ready);
  }
  /// reserve() when a booking of the first port ends after `ready` (the
  /// port's ended bookings dropped): the earliest slot of the port free first.
  Tick reserve_contended(Link& l, Tick ready);
  /// Walks `steps` from time t, booking each link; returns the arrival time.
  Tick walk(const std::vector<Step>& steps, Tick t) {
    for (const Step& s : steps) {
      if (s.link >= 0) t = reserve(links_[static_cast<std::size_t>(s.link)], t);
      t += s.latency;
    }
    return t;
  }

  const topo::Topology& topo_;
  const sim::Simulator& sim_;
  std::array<HopCost, topo::kHopClasses> costs_{};
  std::array<int, topo::kHopClasses> ports_{};
  DieNetwork die_net_;
  bool socket_ring_ = false;  ///< a group's sockets joined in a ring (else every pair directly)
  /// A group's sockets joined as a (twisted) hypercube: crossings and the next
  /// socket on the route, per (from, to) within the group; size 0 otherwise.
  struct SocketGraph {
    int size = 0;
    std::vector<int> distance, next;
  } socket_graph_;
  std::vector<Endpoint> endpoints_;
  std::vector<Link> links_;
  std::unordered_map<std::uint64_t, int> link_ids_;  ///< packed LinkKey -> link id
  std::unordered_map<std::uint64_t, Path> paths_;     ///< (a << 32 | b) -> path, for pairs used so far
  /// A small machine's direct index into paths_ (endpoints^2 pointers, up to
  /// kDenseEndpoints endpoints: 2 MiB), sparing the hash look-up per message.
  static constexpr std::size_t kDenseEndpoints = 512;
  std::vector<const Path*> dense_paths_;
  std::size_t dense_stride_ = 0;
  /// Sizes (or drops) the direct index for the current endpoint count.
  void reindex_paths();
  /// path() without the direct index.
  const Path& find_or_build_path(int a, int b);
  std::vector<KeptSteps> legs_out_, legs_in_;  ///< per endpoint: what send() composes a path between dies from
  std::vector<KeptSteps> die_routes_;          ///< per (from die, to die)
};

}  // namespace cohsim::fabric
