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

Interconnect::Interconnect(config::Reader r, const topo::Topology& topo) : topo_(topo) {
  using config::Spec;
  for (int i = 0; i < topo::kHopClasses; ++i) {
    auto c = static_cast<HopClass>(i);
    const bool exists = topo.hop_class_exists(c);
    if (!exists && !r.schema_mode()) {
      if (r.has(topo::hop_class_name(c)))
        r.fail(topo::hop_class_name(c), "this machine has no such hop (check the topology section)");
      continue;
    }
    config::Reader h = r.section(topo::hop_class_name(c), hop_doc(c), /*optional=*/r.schema_mode());
    costs_[static_cast<std::size_t>(i)].latency =
        h.time("latency", Spec{.doc = "one-way latency of one message over this hop", .min = 1, .max = 1e7});
    costs_[static_cast<std::size_t>(i)].occupancy = h.time(
        "occupancy", Spec{.doc = "time one message holds the link (later messages queue behind it)", .max = 1e7});
  }
  for (int c = 0; c < topo.cpu_count(); ++c) {
    const auto& p = topo.cpu(c);
    endpoints_.push_back({p.socket, p.die_global, p.cluster_global, p.core_global, fmt::format("cpu{}", c)});
  }
  for (int n = 0; n < topo.node_count(); ++n) {
    int die = topo.die_of_node(n);
    endpoints_.push_back({die / topo.dies_per_socket(), die, -1, -1, fmt::format("home{}", n)});
  }
  path_stride_ = endpoints_.size();
  paths_.assign(path_stride_ * path_stride_, Path{});
}

int Interconnect::add_device(const std::string& name, int socket) {
  endpoints_.push_back({socket, socket * topo_.dies_per_socket() + topo_.gateway_die(), -1, -1, name});
  path_stride_ = endpoints_.size();
  paths_.assign(path_stride_ * path_stride_, Path{});
  return static_cast<int>(endpoints_.size()) - 1;
}

int Interconnect::link_id(HopClass c, const std::string& name) {
  auto [it, inserted] = link_ids_.try_emplace(name, static_cast<int>(links_.size()));
  if (inserted) links_.push_back(Link{c, name});
  return it->second;
}

void Interconnect::add_hop(Path& p, HopClass c, const std::string& name) {
  p.links.push_back(link_id(c, name));
  p.latency += cost(c).latency;
  p.widest = std::max(p.widest, c);
}

void Interconnect::route_dies(Path& p, const Endpoint& a, const Endpoint& b) {
  const int dps = topo_.dies_per_socket();
  const int gw = topo_.gateway_die();
  auto cross = [&](int socket, int d1, int d2) {
    if (d1 == d2) return;
    add_hop(p, HopClass::cross_die, fmt::format("xdie{}.{}-{}", socket, std::min(d1, d2), std::max(d1, d2)));
  };
  const int da = a.die_global % dps, db = b.die_global % dps;
  if (a.socket == b.socket) {
    cross(a.socket, da, db);
    return;
  }
  cross(a.socket, da, gw);
  const int spg = topo_.sockets_per_group();
  const int ga = a.socket / spg, gb = b.socket / spg;
  if (ga == gb) {
    add_hop(p, HopClass::socket,
            fmt::format("qpi{}-{}", std::min(a.socket, b.socket), std::max(a.socket, b.socket)));
  } else {
    add_hop(p, HopClass::socket, fmt::format("qpi{}-nc{}", a.socket, ga));
    add_hop(p, HopClass::node_controller, fmt::format("nc{}-{}", std::min(ga, gb), std::max(ga, gb)));
    add_hop(p, HopClass::socket, fmt::format("qpi{}-nc{}", b.socket, gb));
  }
  cross(b.socket, gw, db);
}

const Interconnect::Path& Interconnect::path(int a, int b) {
  Path& p = paths_[static_cast<std::size_t>(a) * path_stride_ + static_cast<std::size_t>(b)];
  if (p.valid) return p;
  const Endpoint &x = endpoint(a), &y = endpoint(b);
  if (x.core_global >= 0 && x.core_global == y.core_global) {
    add_hop(p, HopClass::smt, fmt::format("core{}", x.core_global));
  } else if (x.cluster_global >= 0 && x.cluster_global == y.cluster_global && topo_.clusters_per_die() > 1) {
    add_hop(p, HopClass::cluster, fmt::format("cluster{}", x.cluster_global));
  } else {
    add_hop(p, HopClass::die, fmt::format("die{}", x.die_global));
    if (x.die_global != y.die_global) route_dies(p, x, y);
  }
  p.valid = true;
  return p;
}

Tick Interconnect::send(int a, int b, Tick at) {
  const Path& p = path(a, b);
  Tick t = at;
  for (int id : p.links) {
    Link& l = links_[static_cast<std::size_t>(id)];
    const HopCost& c = cost(l.cls);
    Tick start = std::max(t, l.free_at);
    l.queued += start - t;
    l.free_at = start + c.occupancy;
    l.busy += c.occupancy;
    ++l.messages;
    t = start + c.latency;
  }
  return t;
}

}  // namespace cohsim::fabric
