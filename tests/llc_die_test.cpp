// A last-level cache per die or socket (caches.llc.placement die) as the
// x86 server platforms ship it: the socket's L3 serves its cores whatever
// the line's home, holds one miss per line (merge_reads), and looks its tags
// up again for a request that waited behind another one.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

namespace {

constexpr auto kSocket = static_cast<std::size_t>(topo::HopClass::socket);

/// Haswell-EX as shipped, with `path` set to `value` when a path is given.
json haswell(const std::string& path = "", const json& value = nullptr) {
  json doc = platform_json_as_shipped("haswell-ex");
  if (!path.empty()) set_value(doc, path, value);
  return doc;
}

/// CPU 0 writes a line homed on node 0; then CPUs 18-21 (socket 1) read it at the same moment: how many of the
/// reads socket 1's L3 served.
std::uint64_t four_readers_on_socket_1(const json& platform) {
  Rig r(platform);
  const fabric::Addr x = r.line(0, "x");
  spawn_at(r.sim, 0, [&]() -> Task<void> {
    co_await r.cpu(0).store(x, 8, 1);
    co_await r.cpu(0).drain_store_buffer();
  });
  for (int cpu = 18; cpu < 22; ++cpu)
    spawn_at(r.sim, sim::kUs, [&r, x, cpu]() -> Task<void> { CHECK(co_await r.cpu(cpu).load(x) == 1); });
  r.run();
  CHECK(r.fab->line_stats().at(x).transfers[kSocket] == 1);  // the first read, from CPU 0
  return r.fab->stats().llc_hits;
}

}  // namespace

TEST_CASE("the x86 platforms keep their L3 per socket, merging reads", "[fabric][llc]") {
  for (const char* name : {"haswell-ex", "ivybridge-ex", "skylake-sp-2s", "skylake-sp-8s", "superdome-flex-32s"}) {
    INFO(name);
    const json doc = platform_json_as_shipped(name);
    CHECK(value_at(doc, "caches.llc.placement")["value"] == "die");
    CHECK(value_at(doc, "caches.llc.merge_reads")["value"] == "yes");
  }
}

TEST_CASE("a socket's reads of a line its L3 is already fetching wait for that fetch and are served by the L3",
          "[fabric][llc]") {
  // Merged, the three later reads wait for the first and take the line from
  // socket 1's L3; apart, they go to the home on socket 0 themselves.
  CHECK(four_readers_on_socket_1(haswell()) == 3);
  CHECK(four_readers_on_socket_1(haswell("caches.llc.merge_reads", "no")) == 0);
}

TEST_CASE("a line homed on another socket moves between two cores of one socket as fast as a local line",
          "[fabric][llc]") {
  // The socket's L3 forwards it (core-valid bits): the home is not asked. A
  // memory-side LLC (placement home) sends every transfer to the home.
  auto one_way = [](const std::string& placement, int line_node) {
    auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-haswell-ex.json"), "",
                                     {{"cpu_a", "18"}, {"cpu_b", "19"}, {"line_node", std::to_string(line_node)},
                                      {"rounds", "100"}, {"warmup", "10"},
                                      {"platform.caches.llc.placement", placement}});
    scenario::Run run(s, 1);
    return run.execute().get("one_way_ns");
  };
  const double local = one_way("die", 1), remote = one_way("die", 0);
  CHECK(remote == Approx(local).epsilon(0.01));
  CHECK(one_way("home", 0) > local + 50);
}
