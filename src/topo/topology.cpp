#include "cohsim/topo/topology.hpp"

#include <fmt/format.h>

namespace cohsim::topo {

const char* hop_class_name(HopClass c) {
  switch (c) {
    case HopClass::smt: return "smt";
    case HopClass::cluster: return "cluster";
    case HopClass::die: return "die";
    case HopClass::cross_die: return "cross_die";
    case HopClass::socket: return "socket";
    case HopClass::node_controller: return "node_controller";
  }
  return "?";
}

Topology::Topology(config::Reader r) {
  using config::Spec;
  auto count = [&](const char* key, const char* doc, double max) {
    return static_cast<int>(r.integer(key, Spec{.doc = doc, .min = 1, .max = max}));
  };
  sockets_ = count("sockets", "sockets in the machine", kMaxSockets);
  dies_per_socket_ = count("dies_per_socket", "dies (SCCLs) per socket", 16);
  clusters_per_die_ = count("clusters_per_die", "clusters (CCLs) per die; 1 when cores share one ring", 64);
  cores_per_cluster_ = count("cores_per_cluster", "cores per cluster", 256);
  threads_per_core_ = count("threads_per_core", "hardware threads per core (SMT)", 8);
  sockets_per_group_ = static_cast<int>(r.integer(
      "sockets_per_group", Spec{.doc = "sockets joined directly; groups meet through node controllers",
                                .def = 0, .min = 0, .max = 64}));
  if (sockets_per_group_ == 0) sockets_per_group_ = sockets_;
  if (sockets_ % sockets_per_group_ != 0)
    r.fail("sockets_per_group", fmt::format("must divide the {} sockets", sockets_));
  std::string numbering = r.choice(
      "numbering", Spec{.doc = "CPU numbering: linear (threads of a core adjacent) or smt-last (Linux x86: "
                               "CPU n and n+cores are siblings)",
                        .def = "linear", .choices = {"linear", "smt-last"}});
  std::string nodes = r.choice("numa_node_per", Spec{.doc = "one NUMA node per die or per socket",
                                                     .def = "die", .choices = {"die", "socket"}});
  node_per_die_ = nodes == "die";
  if (r.schema_mode()) return;
  long long total = static_cast<long long>(core_count()) * threads_per_core_;
  if (total > kMaxCpus) r.fail("sockets", fmt::format("{} CPUs in all: at most {} are supported", total, kMaxCpus));
  // The interconnect keeps a route per die pair (about 40 bytes each): 1,024 dies is 40 MiB of them.
  if (const long long dies = static_cast<long long>(sockets_) * dies_per_socket_; dies > kMaxDies)
    r.fail("dies_per_socket", fmt::format("{} dies in all: at most {} are supported", dies, kMaxDies));

  cpus_.resize(static_cast<std::size_t>(total));
  const int cores = core_count();
  for (int cg = 0; cg < cores; ++cg) {
    for (int t = 0; t < threads_per_core_; ++t) {
      int n = numbering == "linear" ? cg * threads_per_core_ + t : t * cores + cg;
      CpuPlace p;
      p.core_global = cg;
      p.thread = t;
      p.core = cg % cores_per_cluster_;
      p.cluster_global = cg / cores_per_cluster_;
      p.cluster = p.cluster_global % clusters_per_die_;
      p.die_global = p.cluster_global / clusters_per_die_;
      p.die = p.die_global % dies_per_socket_;
      p.socket = p.die_global / dies_per_socket_;
      p.node = node_per_die_ ? p.die_global : p.socket;
      cpus_[static_cast<std::size_t>(n)] = p;
    }
  }
}

std::vector<int> Topology::cpus_of_node(int n) const {
  std::vector<int> out;
  for (int c = 0; c < cpu_count(); ++c)
    if (cpus_[static_cast<std::size_t>(c)].node == n) out.push_back(c);
  return out;
}

std::vector<int> Topology::smt_siblings(int n) const {
  std::vector<int> out;
  for (int c = 0; c < cpu_count(); ++c)
    if (c != n && cpu(c).core_global == cpu(n).core_global) out.push_back(c);
  return out;
}

HopClass Topology::hop_class(int a, int b) const {
  const CpuPlace &x = cpu(a), &y = cpu(b);
  if (x.core_global == y.core_global) return HopClass::smt;
  if (x.cluster_global == y.cluster_global && clusters_per_die_ > 1) return HopClass::cluster;
  if (x.die_global == y.die_global) return HopClass::die;
  if (x.socket == y.socket) return HopClass::cross_die;
  if (x.socket / sockets_per_group_ == y.socket / sockets_per_group_) return HopClass::socket;
  return HopClass::node_controller;
}

bool Topology::hop_class_exists(HopClass c) const {
  switch (c) {
    case HopClass::smt: return threads_per_core_ > 1;
    case HopClass::cluster: return clusters_per_die_ > 1;
    case HopClass::die: return true;
    case HopClass::cross_die: return dies_per_socket_ > 1;
    case HopClass::socket: return sockets_ > 1;
    case HopClass::node_controller: return has_node_controllers();
  }
  return false;
}

}  // namespace cohsim::topo
