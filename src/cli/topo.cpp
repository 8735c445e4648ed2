#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "cli.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

int cmd_topo(const std::vector<std::string>& args) {
  std::string platform_path;
  int from = -1, to = -1;
  bool as_json = false, every_socket = false;
  po::options_description d("cohsim topo PLATFORM [options]");
  d.add_options()("help,h", "this help")("json", po::bool_switch(&as_json), "print JSON")(
      "every-socket", po::bool_switch(&every_socket),
      "list every socket and NUMA node (machines of more than 8 sockets in node-controller groups are summarised per "
      "group otherwise)")(
      "from", whole(&from), "CPU A: show the path to --to")("to", whole(&to), "CPU B");
  auto parsed = parse_command_line(args, d, platform_path,
                                   "Shows a platform: the tree, hop paths and unloaded latencies, NUMA nodes and every "
                                   "parameter with its source.");
  if (!parsed) return kOk;
  if (platform_path.empty()) throw po::error("missing PLATFORM (a file under configs/platforms/)");
  config::Registry reg;
  scenario::Machine m(scenario::load_platform(platform_path), 1, reg);
  m.check_platform_fully_read();  // a mistyped key would show a machine the file does not describe
  // Model sections (gic, apic, hpet, smmu...) are shown as parameters but not built here.
  const auto& t = m.topology();
  auto& icn = m.interconnect();
  const bool path_asked = parsed->count("from") != 0;
  if (path_asked != (parsed->count("to") != 0)) throw po::error("--from and --to go together");
  for (int c : {from, to})
    if (path_asked && (c < 0 || c >= t.cpu_count())) throw config::ConfigError(platform_path, "--from/--to", fmt::format("CPU {} does not exist (0-{})", c, t.cpu_count() - 1));

  // Representative unloaded latency per class, from CPU 0.
  json classes = json::object();
  for (int b = 1; b < t.cpu_count(); ++b) {
    auto cls = topo::hop_class_name(t.hop_class(0, b));
    if (!classes.contains(cls))
      classes[cls] = {{"example", fmt::format("0-{}", b)}, {"one_way_ns", sim::to_ns(icn.latency(0, b))}};
  }
  // Within CPU 0's group, the sockets by link crossings from CPU 0's socket
  // (a ring or a hypercube puts some sockets farther than others).
  json socket_distances = json::array();
  {
    const int s0 = t.cpu(0).socket, spg = t.sockets_per_group();
    std::map<int, std::vector<int>> by_crossings;
    for (int s = s0 - s0 % spg; s < s0 - s0 % spg + spg; ++s)
      if (s != s0) by_crossings[icn.socket_crossings(s0, s)].push_back(s);
    for (const auto& [crossings, sockets] : by_crossings) {
      int cpu = -1;
      for (int c = 0; c < t.cpu_count() && cpu < 0; ++c)
        if (t.cpu(c).socket == sockets.front()) cpu = c;
      socket_distances.push_back({{"crossings", crossings}, {"sockets", sockets},
                                  {"example", fmt::format("0-{}", cpu)}, {"one_way_ns", sim::to_ns(icn.latency(0, cpu))}});
    }
  }
  // A CPU list as Linux prints it (cpulist format): ascending runs, "0-27,896-923".
  auto cpulist = [](const std::vector<int>& cpus) {
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
      std::size_t j = i;
      while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
      out += fmt::format("{}{}", out.empty() ? "" : ",", i == j ? fmt::format("{}", cpus[i])
                                                                : fmt::format("{}-{}", cpus[i], cpus[j]));
      i = j + 1;
    }
    return out;
  };
  json nodes = json::array();
  for (int n = 0; n < t.node_count(); ++n) {
    auto cpus = t.cpus_of_node(n);
    json lat = json::array();
    for (int c : {0}) lat.push_back(sim::to_ns(icn.latency(c, icn.home_endpoint(n))));
    nodes.push_back({{"node", n}, {"cpus", fmt::format("{} ({} CPUs)", cpulist(cpus), cpus.size())},
                     {"home_die", t.die_of_node(n)}, {"cpu0_to_home_ns", lat[0]}});
  }
  json params = json::array();
  for (const auto& p : reg.provenance()) {
    params.push_back({{"path", p.path}, {"value", p.value}, {"source", p.source}, {"estimate", p.estimate}});
    if (!p.unused_because.empty()) params.back()["unused_because"] = p.unused_because;
  }
  if (as_json) {
    json out = {{"platform", m.name()}, {"cpus", t.cpu_count()}, {"sockets", t.sockets()}, {"dies", t.die_count()},
                {"clusters", t.cluster_count()}, {"cores", t.core_count()}, {"threads_per_core", t.threads_per_core()},
                {"nodes", t.node_count()}, {"node_table", nodes}, {"hop_classes", classes},
                {"socket_distances", socket_distances}, {"parameters", params}};
    if (path_asked) {
      const auto& p = icn.path(from, to);
      json hops = json::array();
      for (const auto& step : p.steps) hops.push_back(icn.step_name(step));
      out["path"] = {{"from", from}, {"to", to}, {"class", topo::hop_class_name(t.hop_class(from, to))},
                     {"links", hops}, {"one_way_ns", sim::to_ns(p.latency)}};
    }
    std::cout << out.dump(1) << "\n";
    return kOk;
  }
  std::cout << fmt::format("{}: {} CPUs = {} sockets x {} dies x {} clusters x {} cores x {} threads; {} NUMA nodes\n",
                           m.name(), t.cpu_count(), t.sockets(), t.dies_per_socket(), t.clusters_per_die(),
                           t.cores_per_cluster(), t.threads_per_core(), t.node_count());
  // A big machine (node-controller groups, more than 8 sockets) is shown one line per group unless asked.
  const bool per_group = !every_socket && t.has_node_controllers() && t.sockets() > 8;
  if (per_group) {
    const int spg = t.sockets_per_group();
    const int cores_per_socket = t.dies_per_socket() * t.clusters_per_die() * t.cores_per_cluster();
    std::cout << fmt::format("{} node-controller groups of {} sockets ({} cores each){}; --every-socket lists them all\n",
                             t.sockets() / spg, spg, cores_per_socket,
                             t.threads_per_core() > 1
                                 ? fmt::format(", SMT siblings of CPU 0: {}", fmt::join(t.smt_siblings(0), ","))
                                 : std::string());
    for (int g = 0; g < t.sockets() / spg; ++g) {
      int lo = -1, hi = -1;
      for (int c = 0; c < t.cpu_count(); ++c)
        if (t.cpu(c).socket / spg == g && t.cpu(c).thread == 0) {
          if (lo < 0) lo = c;
          hi = c;
        }
      std::cout << fmt::format("  group {:>2}: sockets {}-{}, nodes {}-{}, CPUs {}-{} (first threads)\n", g, g * spg,
                               g * spg + spg - 1, t.cpu(lo).node, t.cpu(hi).node, lo, hi);
    }
  } else {
    for (int s = 0; s < t.sockets(); ++s) {
      std::cout << fmt::format("socket {}{}\n", s,
                               t.has_node_controllers()
                                   ? fmt::format(" (node-controller group {})", s / t.sockets_per_group())
                                   : std::string());
      for (int dd = 0; dd < t.dies_per_socket(); ++dd) {
        int die = s * t.dies_per_socket() + dd;
        std::set<int> cl;
        int lo = -1, hi = -1;
        for (int c = 0; c < t.cpu_count(); ++c)
          if (t.cpu(c).die_global == die && t.cpu(c).thread == 0) {
            cl.insert(t.cpu(c).cluster_global);
            if (lo < 0 || c < lo) lo = c;
            hi = std::max(hi, c);
          }
        std::cout << fmt::format("  die {} (node {}): {} cluster{}, CPUs {}-{}{}\n", die, t.cpu(lo).node, cl.size(),
                                 cl.size() == 1 ? "" : "s", lo, hi,
                                 t.threads_per_core() > 1 ? fmt::format(" (first threads; siblings: {})", fmt::join(t.smt_siblings(lo), ",")) : "");
      }
    }
  }
  std::cout << "\nunloaded one-way message latency from CPU 0, by hop class (nearest first)\n";
  for (int c = 0; c < topo::kHopClasses; ++c) {
    const std::string cls = topo::hop_class_name(static_cast<topo::HopClass>(c));
    if (!classes.contains(cls)) continue;
    std::cout << fmt::format("  {:<16} e.g. CPUs {:<8} {:>7.1f} ns\n", cls, classes[cls]["example"].get<std::string>(),
                             classes[cls]["one_way_ns"].get<double>());
  }
  if (socket_distances.size() > 1) {
    std::cout << "\nother sockets of CPU 0's group, by socket-link crossings from its socket\n";
    for (const auto& d : socket_distances) {
      const int n = d["crossings"].get<int>();
      std::cout << fmt::format("  socket, {} crossing{:<2} sockets {:<12} e.g. CPUs {:<8} {:>7.1f} ns\n", n,
                               n == 1 ? "" : "s", fmt::format("{}", fmt::join(d["sockets"].get<std::vector<int>>(), ",")),
                               d["example"].get<std::string>(), d["one_way_ns"].get<double>());
    }
  }
  std::cout << "\nNUMA nodes\n";
  for (const auto& n : nodes) {
    const int node = n["node"].get<int>();
    // Per group: its first node (CPU 0's own group: every node, whose distances differ in a ring).
    const int socket = t.cpu(t.cpus_of_node(node).front()).socket;
    if (per_group && socket % t.sockets_per_group() != 0 && socket / t.sockets_per_group() != t.cpu(0).socket / t.sockets_per_group())
      continue;
    std::cout << fmt::format("  node {}: CPUs {}, home on die {}, CPU 0 -> home {:.1f} ns\n", node,
                             n["cpus"].get<std::string>(), n["home_die"].get<int>(), n["cpu0_to_home_ns"].get<double>());
  }
  if (per_group)
    std::cout << fmt::format("  (CPU 0's group in full, one node per other group: the others of a group are as far "
                             "from CPU 0; --every-socket lists {} nodes)\n",
                             t.node_count());
  if (path_asked) {
    const auto& p = icn.path(from, to);
    std::cout << fmt::format("\npath CPU {} -> CPU {} ({}): ", from, to, topo::hop_class_name(t.hop_class(from, to)));
    for (std::size_t i = 0; i < p.steps.size(); ++i) std::cout << (i ? " -> " : "") << icn.step_name(p.steps[i]);
    std::cout << fmt::format("  = {:.1f} ns unloaded\n", sim::to_ns(p.latency));
  }
  std::cout << "\nparameters (value, source)\n";
  for (const auto& p : reg.provenance()) {
    std::cout << fmt::format("  {:<52} {:>10}  {}\n", p.path, p.value, p.source);
    if (!p.unused_because.empty()) std::cout << fmt::format("  {:<52} {:>10}  no effect here: {}\n", "", "", p.unused_because);
  }
  return kOk;
}

}  // namespace cohsim::cli
