// directory_fanout: what a write to a widely shared line costs under each
// directory organisation (coherence.directory: exact per core, per socket,
// per node-controller group; filtered or broadcast inside a unit).
//
// For each sharer count N, N cores spread evenly over the machine read one
// line homed on node 0, then CPU 0 writes it; the table gives the write's
// latency (until every acknowledgement arrived) and the messages that crossed
// the far links (socket and node-controller classes) during the write.
//
//   ./build/release/bench/directory_fanout configs/platforms/ivybridge-ex.json [N ...]
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/scenario/machine.hpp"

using namespace cohsim;

namespace {

struct Outcome {
  double write_ns = 0;
  std::uint64_t far_messages = 0;
  std::uint64_t invalidations = 0;
  std::uint64_t blind_snoops = 0;
};

std::uint64_t far_messages(const fabric::Interconnect& icn) {
  std::uint64_t n = 0;
  for (const auto& l : icn.links())
    if (l.cls == topo::HopClass::socket || l.cls == topo::HopClass::node_controller) n += l.messages;
  return n;
}

Outcome measure(const std::string& platform, const std::string& presence, const std::string& unit_snoop,
                int sharers) {
  scenario::PlatformDoc doc = scenario::load_platform(platform);
  config::apply_override(doc.doc, doc.file, "coherence.directory.presence", presence, "platform");
  config::apply_override(doc.doc, doc.file, "coherence.directory.unit_snoop", unit_snoop, "platform");
  config::Registry registry;
  scenario::Machine m(doc, 1, registry);
  const auto& topo = m.topology();
  std::vector<int> cpu_of_core(static_cast<std::size_t>(topo.core_count()), -1);
  for (int c = topo.cpu_count() - 1; c >= 0; --c) cpu_of_core[static_cast<std::size_t>(topo.cpu(c).core_global)] = c;
  const fabric::Addr x = m.memory().alloc(0, 64, 64, "shared line");
  std::vector<int> readers;
  for (int i = 0; i < sharers; ++i) {
    const int core = 1 + static_cast<int>(static_cast<long long>(i) * (topo.core_count() - 1) / sharers);
    readers.push_back(cpu_of_core[static_cast<std::size_t>(core)]);
  }
  auto reads = [&]() -> sim::Task<void> {
    for (int c : readers) co_await m.cpu(c).load(x);
  };
  m.sim().spawn("readers", reads());
  m.sim().run();
  Outcome o;
  const auto before = m.fabric().stats();
  const std::uint64_t far_before = far_messages(m.interconnect());
  auto write = [&]() -> sim::Task<void> {
    const sim::Tick t0 = m.sim().now();
    co_await m.cpu(0).store(x, 8, 1);
    co_await m.cpu(0).drain_store_buffer();
    o.write_ns = static_cast<double>(m.sim().now() - t0) / static_cast<double>(sim::kNs);
  };
  m.sim().spawn("writer", write());
  m.sim().run();
  o.far_messages = far_messages(m.interconnect()) - far_before;
  o.invalidations = m.fabric().stats().invalidations - before.invalidations;
  o.blind_snoops = m.fabric().stats().blind_snoops - before.blind_snoops;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::cerr << "usage: directory_fanout PLATFORM.json [SHARERS ...]\n"
                 "  the latency of a write to a line read by SHARERS cores (default 2 8 32 128 and every core),\n"
                 "  under each directory organisation\n";
    return argc < 2 ? 2 : 0;
  }
  try {
    const std::string platform = argv[1];
    scenario::PlatformDoc doc = scenario::load_platform(platform);
    config::Registry registry;
    scenario::Machine probe(doc, 1, registry);
    const int cores = probe.topology().core_count();
    const bool groups = probe.topology().has_node_controllers();
    std::vector<int> counts;
    for (int i = 2; i < argc; ++i) {
      const int n = std::atoi(argv[i]);
      if (n < 2 || n >= cores) {
        std::cerr << fmt::format("directory_fanout: sharers '{}': expected 2..{}\n", argv[i], cores - 1);
        return 2;
      }
      counts.push_back(n);
    }
    if (counts.empty())
      for (int n : {2, 8, 32, 128, cores - 1})
        if (n < cores) counts.push_back(n);
    struct Org {
      const char* presence;
      const char* snoop;
    };
    std::vector<Org> orgs = {{"core", "filtered"}, {"socket", "filtered"}, {"socket", "broadcast"}};
    if (groups) orgs.push_back({"group", "filtered"});
    std::cout << fmt::format("{} ({} cores): a write by CPU 0 to a line homed on node 0 and read by N cores\n",
                             probe.name(), cores);
    std::cout << fmt::format("{:>6}  {:<18} {:>10} {:>13} {:>8} {:>8}\n", "N", "directory", "write ns",
                             "far messages", "invals", "blind");
    for (int n : counts)
      for (const Org& org : orgs) {
        const Outcome o = measure(platform, org.presence, org.snoop, n);
        std::cout << fmt::format("{:>6}  {:<18} {:>10.1f} {:>13} {:>8} {:>8}\n", n,
                                 fmt::format("{}/{}", org.presence, org.snoop), o.write_ns, o.far_messages,
                                 o.invalidations, o.blind_snoops);
      }
  } catch (const std::exception& e) {
    std::cerr << "directory_fanout: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
