#include "cohsim/fabric/interconnect.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace cohsim::fabric {

namespace {
const char* hop_doc(HopClass c) {
  switch (c) {
    case HopClass::smt: return "between hardware threads of one core (shared private caches)";
    case HopClass::cluster: return "within a cluster (cores sharing an L3 tag partition)";
    case HopClass::die: return "across one die's on-chip network (ring or mesh), to or from its home agent";
    case HopClass::cross_die: return "between two dies of one socket";
    case HopClass::socket: return "over a socket-to-socket link (QPI, Hydra)";
    case HopClass::node_controller: return "through a node controller between socket groups";
  }
  return "";
}
}  // namespace

Interconnect::Interconnect(config::Reader r, const topo::Topology& topo, const sim::Simulator& sim)
    : topo_(topo), sim_(sim) {
  using config::Spec;
  ports_.fill(1);
  for (int i = 0; i < topo::kHopClasses; ++i) {
    auto c = static_cast<HopClass>(i);
    const bool exists = topo.hop_class_exists(c);
    // An SMT hop on a machine run with one thread per core is read and has no effect: a platform whose
    // threads_per_core is uncertain (a range reaching 2) keeps its costs for the other end.
    const bool idle_smt = !exists && !r.schema_mode() && c == HopClass::smt && r.has(topo::hop_class_name(c));
    if (!exists && !r.schema_mode() && !idle_smt) {
      if (r.has(topo::hop_class_name(c)))
        r.fail(topo::hop_class_name(c), "this machine has no such hop (check the topology section)");
      continue;
    }
    config::Reader h = r.section(topo::hop_class_name(c), hop_doc(c), /*optional=*/r.schema_mode());
    if (idle_smt) {
      for (const char* k : {"latency", "occupancy"}) {
        h.time(k, Spec{.doc = "as on a machine with SMT", .min = k == std::string_view("latency") ? 1.0 : 0.0, .max = 1e7});
        h.unused(k, "one thread per core here (topology.threads_per_core 1): no SMT hop");
      }
      continue;
    }
    costs_[static_cast<std::size_t>(i)].latency =
        h.time("latency", Spec{.doc = "one-way latency of one message over this hop", .min = 1, .max = 1e7});
    costs_[static_cast<std::size_t>(i)].occupancy = h.time(
        "occupancy", Spec{.doc = "time one message holds a link of this class (a ring or mesh: each segment it "
                                 "crosses); later messages take the next free slot",
                          .max = 1e7});
    if (c == HopClass::die) read_die_network(h);
    if (c == HopClass::socket) read_socket_links(h);
    if (c == HopClass::cross_die || c == HopClass::socket || c == HopClass::node_controller)
      ports_[static_cast<std::size_t>(i)] = static_cast<int>(h.integer(
          "ports", Spec{.doc = "parallel ports of each link of this class, per direction (a message takes whichever "
                               "is free first)",
                        .min = 1, .max = 64}));
  }
  for (int c = 0; c < topo.cpu_count(); ++c) {
    const auto& p = topo.cpu(c);
    endpoints_.push_back({p.socket, p.die_global, p.cluster_global, p.core_global, fmt::format("cpu{}", c)});
  }
  for (int n = 0; n < topo.node_count(); ++n) {
    int die = topo.die_of_node(n);
    endpoints_.push_back({die / topo.dies_per_socket(), die, -1, -1, fmt::format("home{}", n)});
  }
  for (int d = 0; d < topo.die_count(); ++d)
    endpoints_.push_back({d / topo.dies_per_socket(), d, -1, -1, fmt::format("l3.die{}", d)});
  legs_out_.resize(endpoints_.size());
  legs_in_.resize(endpoints_.size());
  die_routes_.resize(static_cast<std::size_t>(topo.die_count()) * static_cast<std::size_t>(topo.die_count()));
  reindex_paths();
}

void Interconnect::read_socket_links(config::Reader& socket) {
  using config::Spec;
  const std::string links = socket.choice(
      "links", Spec{.doc = "how the sockets of a group (all sockets without node controllers) are joined: every pair "
                           "by a link of its own (all-to-all); a ring in socket order, a message going the shorter "
                           "way (the ascending way on a tie) through the sockets between; a hypercube (a group of 2^k "
                           "sockets, socket s linked to every s xor 2^i); or a twisted hypercube (8 sockets: the "
                           "3-cube with links 2-6 and 3-7 replaced by 2-7 and 3-6, so that every socket is at most "
                           "2 crossings from every other). On a (twisted) hypercube a message takes a shortest "
                           "route, the lowest-numbered next socket on a tie, and crosses each socket it passes "
                           "through on that socket's die network (its route-through from one link's stop to the "
                           "next, one die latency)",
                    .def = "all-to-all", .choices = {"all-to-all", "ring", "hypercube", "twisted-hypercube"}});
  socket_ring_ = links == "ring";
  if (links != "hypercube" && links != "twisted-hypercube") return;
  const int n = topo_.sockets_per_group();
  if (socket.schema_mode()) return;
  if (links == "twisted-hypercube" && n != 8)
    socket.fail("links", fmt::format("a twisted hypercube joins 8 sockets; this group has {} (topology.sockets, "
                                     "sockets_per_group)", n));
  if ((n & (n - 1)) != 0)
    socket.fail("links", fmt::format("a hypercube joins a power of two of sockets; this group has {}", n));
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  auto join = [&](int a, int b) {
    adj[static_cast<std::size_t>(a)].push_back(b);
    adj[static_cast<std::size_t>(b)].push_back(a);
  };
  for (int a = 0; a < n; ++a)
    for (int bit = 1; bit < n; bit <<= 1)
      if (const int b = a ^ bit; a < b && !(links == "twisted-hypercube" && bit == 4 && (a == 2 || a == 3)))
        join(a, b);
  if (links == "twisted-hypercube") {
    join(2, 7);
    join(3, 6);
  }
  for (auto& v : adj) std::sort(v.begin(), v.end());
  // Crossings between every pair (breadth first), then each pair's next socket.
  socket_graph_.size = n;
  socket_graph_.distance.assign(static_cast<std::size_t>(n * n), -1);
  for (int from = 0; from < n; ++from) {
    std::vector<int> queue{from};
    socket_graph_.distance[static_cast<std::size_t>(from * n + from)] = 0;
    for (std::size_t i = 0; i < queue.size(); ++i)
      for (int next : adj[static_cast<std::size_t>(queue[i])])
        if (int& d = socket_graph_.distance[static_cast<std::size_t>(from * n + next)]; d < 0) {
          d = socket_graph_.distance[static_cast<std::size_t>(from * n + queue[i])] + 1;
          queue.push_back(next);
        }
  }
  socket_graph_.next.assign(static_cast<std::size_t>(n * n), -1);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      for (int next : adj[static_cast<std::size_t>(a)])
        if (a != b && socket_graph_.distance[static_cast<std::size_t>(next * n + b)] ==
                          socket_graph_.distance[static_cast<std::size_t>(a * n + b)] - 1) {
          socket_graph_.next[static_cast<std::size_t>(a * n + b)] = next;
          break;
        }
}

int Interconnect::socket_crossings(int a, int b) const {
  if (a == b) return 0;
  const int spg = topo_.sockets_per_group();
  if (a / spg != b / spg) return 2;  // to the node controller and from it
  const int n = spg, la = a % spg, lb = b % spg;
  if (socket_graph_.size > 0) return socket_graph_.distance[static_cast<std::size_t>(la * n + lb)];
  if (!socket_ring_) return 1;
  const int up = (lb - la + n) % n;
  return std::min(up, n - up);
}

void Interconnect::read_die_network(config::Reader& die) {
  using config::Spec;
  const std::string shape =
      die.choice("shape", Spec{.doc = "the die's on-chip network: a bidirectional ring of stops, or a mesh routed X "
                                      "then Y; the home agent, gateway and devices sit at stop 0, a die's cores (or "
                                      "clusters) spread evenly over the stops",
                               .choices = {"ring", "mesh"}});
  die_net_.mesh = shape == "mesh";
  die_net_.stops = static_cast<int>(
      die.integer("stops", Spec{.doc = "stops of one die's ring or mesh (a mesh: columns x rows)", .min = 1, .max = 4096}));
  if (die_net_.mesh || die.schema_mode())
    die_net_.columns = static_cast<int>(die.integer(
        "columns", Spec{.doc = "mesh columns of one die (a mesh only): stop i sits at column i % columns, row i / columns",
                        .min = 1, .max = 64}));
  die_net_.stops = std::max(die_net_.stops, 1);  // schema mode reads zeros
  die_net_.columns = std::max(die_net_.columns, 1);
}

int Interconnect::add_device(const std::string& name, int socket) {
  endpoints_.push_back({socket, topo_.gateway_die_of(socket), -1, -1, name});
  legs_out_.resize(endpoints_.size());
  legs_in_.resize(endpoints_.size());
  reindex_paths();
  return static_cast<int>(endpoints_.size()) - 1;
}

int Interconnect::stop_of(const Endpoint& e) const {
  if (e.core_global < 0) return 0;
  // Clusters of a die attach at one stop each; a die without clusters attaches its cores.
  const bool by_cluster = topo_.clusters_per_die() > 1;
  const int units = by_cluster ? topo_.clusters_per_die() : topo_.cores_per_cluster();
  const int unit = by_cluster ? e.cluster_global % units : e.core_global % units;
  return unit * die_net_.stops / units;
}

std::string Interconnect::step_name(const Step& s) const {
  if (s.link >= 0) return links_[static_cast<std::size_t>(s.link)].name;
  return fmt::format("{} network at one stop", topo::hop_class_name(s.cls));
}

std::string Interconnect::link_name(LinkKey k) {
  switch (k.kind) {
    case LinkKind::core: return fmt::format("core{}", k.a);
    case LinkKind::cluster: return fmt::format("cluster{}", k.a);
    case LinkKind::ring_cw: return fmt::format("die{}.cw{}", k.a, k.b);
    case LinkKind::ring_ccw: return fmt::format("die{}.ccw{}", k.a, k.b);
    case LinkKind::mesh_e: return fmt::format("die{}.e{},{}", k.a, k.b, k.c);
    case LinkKind::mesh_w: return fmt::format("die{}.w{},{}", k.a, k.b, k.c);
    case LinkKind::mesh_s: return fmt::format("die{}.s{},{}", k.a, k.b, k.c);
    case LinkKind::mesh_n: return fmt::format("die{}.n{},{}", k.a, k.b, k.c);
    case LinkKind::cross_die: return fmt::format("xdie{}.{}>{}", k.a, k.b, k.c);
    case LinkKind::socket: return fmt::format("qpi{}>{}", k.a, k.b);
    case LinkKind::socket_to_nc: return fmt::format("qpi{}>nc{}", k.a, k.b);
    case LinkKind::nc: return fmt::format("nc{}>{}", k.a, k.b);
    case LinkKind::nc_to_socket: return fmt::format("nc{}>qpi{}", k.a, k.b);
  }
  return "";
}

int Interconnect::link_id(HopClass c, LinkKey k) {
  // Each number is below 2^20 (the topology guard keeps CPUs, dies and sockets far below it).
  const std::uint64_t packed = static_cast<std::uint64_t>(k.kind) << 60 | static_cast<std::uint64_t>(k.a) << 40 |
                               static_cast<std::uint64_t>(k.b) << 20 | static_cast<std::uint64_t>(k.c);
  auto [it, inserted] = link_ids_.try_emplace(packed, static_cast<int>(links_.size()));
  if (inserted) {
    links_.push_back(Link{.occupancy = cost(c).occupancy,
                          .first_port = {},
                          .more_ports = std::vector<LinkTimeline>(static_cast<std::size_t>(ports(c) - 1)),
                          .cls = c,
                          .name = link_name(k)});
  }
  return it->second;
}

void Interconnect::add_hop(Path& p, HopClass c, LinkKey key) {
  p.steps.push_back({link_id(c, key), c, cost(c).latency});
  p.latency += cost(c).latency;
  p.widest = std::max(p.widest, c);
}

void Interconnect::cross_die_network(Path& p, int die, int from, int to) {
  std::vector<LinkKey> segments;
  if (die_net_.mesh) {
    const int cols = die_net_.columns;
    int x = from % cols, y = from / cols;
    const int tx = to % cols, ty = to / cols;
    for (; x != tx; x += x < tx ? 1 : -1) segments.push_back({x < tx ? LinkKind::mesh_e : LinkKind::mesh_w, die, x, y});
    for (; y != ty; y += y < ty ? 1 : -1) segments.push_back({y < ty ? LinkKind::mesh_s : LinkKind::mesh_n, die, x, y});
  } else {
    const int n = die_net_.stops;
    const int clockwise = (to - from + n) % n;
    const bool cw = clockwise <= n - clockwise;
    const int count = cw ? clockwise : n - clockwise;
    for (int i = 0, s = from; i < count; ++i, s = (s + (cw ? 1 : n - 1)) % n)
      segments.push_back({cw ? LinkKind::ring_cw : LinkKind::ring_ccw, die, s});
  }
  const Tick total = cost(HopClass::die).latency;
  p.latency += total;
  p.widest = std::max(p.widest, HopClass::die);
  if (segments.empty()) {
    p.steps.push_back({-1, HopClass::die, total});
    return;
  }
  // The unloaded crossing costs the die latency whatever its length; each
  // segment holds the message for an equal share of it.
  const Tick share = total / static_cast<Tick>(segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i)
    p.steps.push_back({link_id(HopClass::die, segments[i]), HopClass::die,
                       i + 1 < segments.size() ? share : total - share * static_cast<Tick>(segments.size() - 1)});
}

void Interconnect::route_dies(Path& p, const Endpoint& a, const Endpoint& b) {
  const int dps = topo_.dies_per_socket();
  const int gw = topo_.gateway_die();
  // Between two dies of one socket; passing through the gateway die crosses its network.
  auto cross = [&](int socket, int d1, int d2) {
    if (d1 == d2) return;
    add_hop(p, HopClass::cross_die, {LinkKind::cross_die, socket, d1, d2});
  };
  const int da = a.die_global % dps, db = b.die_global % dps;
  if (a.socket == b.socket) {
    cross(a.socket, da, db);
    return;
  }
  cross(a.socket, da, gw);
  if (da != gw) cross_die_network(p, topo_.gateway_die_of(a.socket), 0, 0);
  const int spg = topo_.sockets_per_group();
  const int ga = a.socket / spg, gb = b.socket / spg;
  if (ga == gb) {
    route_sockets(p, a.socket, b.socket);
  } else {
    add_hop(p, HopClass::socket, {LinkKind::socket_to_nc, a.socket, ga});
    add_hop(p, HopClass::node_controller, {LinkKind::nc, ga, gb});
    add_hop(p, HopClass::socket, {LinkKind::nc_to_socket, gb, b.socket});
  }
  if (db != gw) cross_die_network(p, topo_.gateway_die_of(b.socket), 0, 0);
  cross(b.socket, gw, db);
}

void Interconnect::route_sockets(Path& p, int a, int b) {
  if (socket_graph_.size > 0) {
    const int n = socket_graph_.size;
    const int base = a - a % n;
    for (int s = a; s != b;) {
      const int next = base + socket_graph_.next[static_cast<std::size_t>((s - base) * n + (b - base))];
      if (s != a) cross_die_network(p, topo_.gateway_die_of(s), 0, 0);  // route-through: link stop to link stop
      add_hop(p, HopClass::socket, {LinkKind::socket, s, next});
      s = next;
    }
    return;
  }
  if (!socket_ring_) {
    add_hop(p, HopClass::socket, {LinkKind::socket, a, b});
    return;
  }
  const int n = topo_.sockets_per_group();
  const int base = a - a % n;
  const int up = (b - a + n) % n;  // hops the ascending way
  const bool ascending = up <= n - up;
  for (int s = a; s != b;) {
    const int next = base + (s - base + (ascending ? 1 : n - 1)) % n;
    add_hop(p, HopClass::socket, {LinkKind::socket, s, next});
    s = next;
  }
}

void Interconnect::reindex_paths() {
  dense_paths_.clear();
  dense_stride_ = endpoints_.size() <= kDenseEndpoints ? endpoints_.size() : 0;
  dense_paths_.assign(dense_stride_ * dense_stride_, nullptr);  // refilled from paths_ as pairs are used
}

const Interconnect::Path& Interconnect::find_or_build_path(int a, int b) {
  Path& p = paths_[static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b)];
  if (p.valid) return p;
  const Endpoint &x = endpoint(a), &y = endpoint(b);
  if (x.core_global >= 0 && x.core_global == y.core_global) {
    add_hop(p, HopClass::smt, {LinkKind::core, x.core_global});
  } else if (x.cluster_global >= 0 && x.cluster_global == y.cluster_global && topo_.clusters_per_die() > 1) {
    add_hop(p, HopClass::cluster, {LinkKind::cluster, x.cluster_global});
  } else if (x.die_global == y.die_global) {
    cross_die_network(p, x.die_global, stop_of(x), stop_of(y));
  } else {
    // Out of the source die at its gateway stop, into the destination die at its own.
    cross_die_network(p, x.die_global, stop_of(x), 0);
    route_dies(p, x, y);
    cross_die_network(p, y.die_global, 0, stop_of(y));
  }
  p.valid = true;
  return p;
}

const Interconnect::KeptSteps& Interconnect::leg(int ep, bool out) {
  KeptSteps& kept = (out ? legs_out_ : legs_in_)[static_cast<std::size_t>(ep)];
  if (!kept.valid) {
    const Endpoint& e = endpoint(ep);
    Path p;
    if (out) cross_die_network(p, e.die_global, stop_of(e), 0);
    else cross_die_network(p, e.die_global, 0, stop_of(e));
    kept = {true, p.latency, std::move(p.steps)};
  }
  return kept;
}

const Interconnect::KeptSteps& Interconnect::die_route(int from, int to) {
  KeptSteps& kept = die_routes_[static_cast<std::size_t>(from) * static_cast<std::size_t>(topo_.die_count()) +
                                static_cast<std::size_t>(to)];
  if (!kept.valid) {
    // A die's endpoints all route alike between dies: its first L3 stands for them.
    Path p;
    route_dies(p, endpoint(llc_endpoint(from)), endpoint(llc_endpoint(to)));
    kept = {true, p.latency, std::move(p.steps)};
  }
  return kept;
}

Tick Interconnect::reserve_contended(Link& l, Tick ready) {
  const Tick occupancy = l.occupancy;
  const Tick now = sim_.now();
  // The first of the ports free earliest (most links have one; the first
  // dropped its ended bookings in reserve()).
  LinkTimeline* port = &l.first_port;
  Tick start = port->earliest(ready, occupancy);
  // No port starts before `ready`: when one is free then, it is the first of
  // those free earliest (the others drop their ended bookings when a message
  // next looks at them).
  for (auto other = l.more_ports.begin(); start != ready && other != l.more_ports.end(); ++other) {
    other->forget_before(now);
    if (const Tick s = other->earliest(ready, occupancy); s < start) {
      port = &*other;
      start = s;
    }
  }
  port->book(start, occupancy);
  l.busy += occupancy;
  l.queued += start - ready;
  l.max_queued = std::max(l.max_queued, start - ready);
  return start;
}

Tick Interconnect::composed_latency(int a, int b) {
  return leg(a, true).latency + die_route(endpoint(a).die_global, endpoint(b).die_global).latency +
         leg(b, false).latency;
}

Tick Interconnect::send(int a, int b, Tick at) {
  // An agent's message to itself (a die's L3 answering its own directory
  // step) costs nothing; a CPU's to itself crosses its core.
  if (a == b && endpoint(a).core_global < 0) return at;
  if (!composed(a, b))
    return walk(path(a, b).steps, at);  // pairs within one die, or any pair of a small machine: kept per pair
  // The same steps as path(a, b), from pieces kept per endpoint and per die
  // pair, so memory grows with endpoints and dies^2, not endpoints^2.
  Tick t = walk(leg(a, true).steps, at);
  t = walk(die_route(endpoint(a).die_global, endpoint(b).die_global).steps, t);
  return walk(leg(b, false).steps, t);
}

Tick Interconnect::send_node_controller(int ep, bool to_hub, Tick at) {
  const Endpoint& e = endpoint(ep);
  const int offchip = llc_endpoint(topo_.gateway_die_of(e.socket));
  const int group = e.socket / topo_.sockets_per_group();
  const int link = link_id(HopClass::socket, to_hub ? LinkKey{LinkKind::socket_to_nc, e.socket, group}
                                                    : LinkKey{LinkKind::nc_to_socket, group, e.socket});
  const Tick crossing = cost(HopClass::socket).latency;
  // (links_ is indexed after send(): a path built there may add links)
  if (to_hub) {
    const Tick at_offchip = send(ep, offchip, at);
    return reserve(links_[static_cast<std::size_t>(link)], at_offchip) + crossing;
  }
  return send(offchip, ep, reserve(links_[static_cast<std::size_t>(link)], at) + crossing);
}

}  // namespace cohsim::fabric
