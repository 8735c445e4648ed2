// Where the lock benchmarks' threads run: the CPU of each thread, as the
// benchmark or the scheduler puts it there.
//   hwloc_core_order  will-it-scale (main.c): task i is bound to the cpuset
//                     of hwloc CORE object i mod cores, in hwloc logical
//                     order (socket 0's cores first, then socket 1's...);
//                     the cpuset holds the core's hardware threads, so a
//                     task that shares its core with an earlier one (beyond
//                     `cores` tasks) runs on the next thread of that core.
//   spread            unpinned kthreads on an idle machine once the load
//                     balancer has settled (Linux v5.9 kernel/sched/fair.c):
//                     the NUMA level evens out idle CPUs between nodes, so
//                     thread i goes to node i mod nodes; inside a node the
//                     SMT level fills idle cores before a second thread of a
//                     core.
//   packed            where fork balancing leaves them (v5.9
//                     find_idlest_group keeps a new task on the parent's
//                     node while that node has an idle CPU): node 0's cores,
//                     then their second threads, then node 1's...
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cohsim/topo/topology.hpp"

namespace cohsim::models {

/// Every CPU of `topo` in hwloc logical order of cores: each core's threads, thread 0 first.
inline std::vector<std::vector<int>> cores_in_order(const topo::Topology& topo) {
  std::vector<std::vector<int>> cores(static_cast<std::size_t>(topo.core_count()));
  for (int c = 0; c < topo.cpu_count(); ++c) cores[static_cast<std::size_t>(topo.cpu(c).core_global)].push_back(c);
  for (auto& threads : cores)
    std::sort(threads.begin(), threads.end(), [&](int a, int b) { return topo.cpu(a).thread < topo.cpu(b).thread; });
  return cores;  // core_global counts socket by socket, die by die: hwloc's logical order
}

/// will-it-scale's binding of `n` tasks (n at most the CPU count).
inline std::vector<int> hwloc_core_order(const topo::Topology& topo, int n) {
  const auto cores = cores_in_order(topo);
  std::vector<int> cpus;
  for (int i = 0; i < n; ++i) {
    const auto& threads = cores[static_cast<std::size_t>(i) % cores.size()];
    cpus.push_back(threads.at((static_cast<std::size_t>(i) / cores.size()) % threads.size()));
  }
  return cpus;
}

/// The CPUs of node `node`: one thread of each of its cores first, then the next thread of each.
inline std::vector<int> node_slots(const topo::Topology& topo, int node) {
  std::vector<int> slots;
  const auto cores = cores_in_order(topo);
  for (int t = 0; t < topo.threads_per_core(); ++t)
    for (const auto& threads : cores)
      if (topo.node_of_cpu(threads.front()) == node && t < static_cast<int>(threads.size())) slots.push_back(threads[t]);
  return slots;
}

/// The scheduler's placement of `n` unpinned threads: "spread" or "packed" (see above).
inline std::vector<int> scheduler_placement(const topo::Topology& topo, int n, const std::string& how) {
  const int nodes = topo.node_count();
  std::vector<std::vector<int>> slots;
  for (int node = 0; node < nodes; ++node) slots.push_back(node_slots(topo, node));
  std::vector<int> cpus;
  if (how == "packed") {
    for (const auto& s : slots)
      for (int c : s)
        if (static_cast<int>(cpus.size()) < n) cpus.push_back(c);
    return cpus;
  }
  std::vector<std::size_t> used(static_cast<std::size_t>(nodes), 0);
  for (int i = 0; static_cast<int>(cpus.size()) < n; ++i) {
    const auto node = static_cast<std::size_t>(i % nodes);
    if (used[node] < slots[node].size()) cpus.push_back(slots[node][used[node]++]);
  }
  return cpus;
}

}  // namespace cohsim::models
