// The machine's shape: sockets, dies, clusters, cores, threads, NUMA nodes,
// CPU numbering, and the classes of hop between two places.
#pragma once

#include <string>
#include <vector>

#include "cohsim/config/params.hpp"

namespace cohsim::topo {

/// The kinds of hop a message can take, nearest first.
enum class HopClass { smt, cluster, die, cross_die, socket, node_controller };
inline constexpr int kHopClasses = 6;
/// A guard against a mistyped topology, not a limit of the model: every
/// structure scales with the CPUs present (about 40 KiB of host memory per
/// core before any line is touched; docs/performance.md, "Scale").
inline constexpr long long kMaxCpus = 16384;
/// The most dies a machine may have (sockets x dies per socket).
inline constexpr long long kMaxDies = 1024;
/// The most sockets a machine may have (a device's socket is below it).
inline constexpr int kMaxSockets = 1024;
/// "smt", "cluster", "die", "cross_die", "socket", "node_controller".
const char* hop_class_name(HopClass c);

/// Where one logical CPU sits.
struct CpuPlace {
  int socket = 0, die = 0, cluster = 0, core = 0, thread = 0;  ///< indices within the parent
  int die_global = 0, cluster_global = 0, core_global = 0;     ///< machine-wide indices
  int node = 0;                                                ///< NUMA node of this CPU
};

/// Hierarchy and numbering of one platform (the "topology" section).
class Topology {
 public:
  /// Reads platform.topology; throws ConfigError.
  explicit Topology(config::Reader r);

  int cpu_count() const { return static_cast<int>(cpus_.size()); }
  int sockets() const { return sockets_; }
  int dies_per_socket() const { return dies_per_socket_; }
  int clusters_per_die() const { return clusters_per_die_; }
  int cores_per_cluster() const { return cores_per_cluster_; }
  int threads_per_core() const { return threads_per_core_; }
  int die_count() const { return sockets_ * dies_per_socket_; }
  int cluster_count() const { return die_count() * clusters_per_die_; }
  int core_count() const { return cluster_count() * cores_per_cluster_; }
  int node_count() const { return node_per_die_ ? die_count() : sockets_; }
  /// Sockets per node-controller group (== sockets when there is none).
  int sockets_per_group() const { return sockets_per_group_; }
  bool has_node_controllers() const { return sockets_per_group_ < sockets_; }
  /// Die that holds node n's memory controller and home directory.
  int die_of_node(int node) const { return node_per_die_ ? node : node * dies_per_socket_; }
  /// Sockets' gateway die for links to other sockets (die index within the socket).
  int gateway_die() const { return 0; }
  /// Socket s's gateway die (global die index): where its off-chip links and devices sit.
  int gateway_die_of(int s) const { return s * dies_per_socket_ + gateway_die(); }

  const CpuPlace& cpu(int n) const { return cpus_.at(static_cast<std::size_t>(n)); }
  int node_of_cpu(int n) const { return cpu(n).node; }
  /// CPUs whose node is n, ascending.
  std::vector<int> cpus_of_node(int n) const;
  /// Other hardware threads of the same core.
  std::vector<int> smt_siblings(int n) const;
  /// The nearest level two CPUs share, as a hop class.
  HopClass hop_class(int a, int b) const;
  /// Which hop classes exist on this machine (a 1-die socket has no cross_die).
  bool hop_class_exists(HopClass c) const;

 private:
  int sockets_, dies_per_socket_, clusters_per_die_, cores_per_cluster_, threads_per_core_;
  int sockets_per_group_;
  bool node_per_die_;
  std::vector<CpuPlace> cpus_;
};

}  // namespace cohsim::topo
