// The two big node-controller platforms (superdome-flex-32s, scale-4096) and
// the hub-local RTC that Linux reads on them instead of the far HPET (uv-rtc):
// counts, hop classes nearest first, reads answered by the CPU's own hub.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cohsim/devices/hpet.hpp"
#include "cohsim/devices/uv_rtc.hpp"
#include "cohsim/scenario/machine.hpp"
#include "cohsim/scenario/scenario.hpp"
#include "cohsim/topo/topology.hpp"
#include "models/kernel/timekeeping.hpp"
#include "test_support.hpp"

using namespace cohsim;
using sim::Task;
using sim::Tick;
using topo::HopClass;

namespace {

std::string platform_path(const std::string& name) {
  return std::string(COHSIM_SOURCE_DIR) + "/configs/platforms/" + name + ".json";
}

/// What a big platform's datasheet (or its hypothesis) says it has.
struct BigShape {
  const char* name;
  int sockets, cores_per_socket, sockets_per_chassis;
};

/// Checks counts and the hop classes of representative CPU pairs, nearest
/// first; with `latencies`, also builds the machine and checks that the
/// unloaded latencies of those pairs grow in the same order.
void check_big_machine(const BigShape& want, bool latencies) {
  INFO("platform " << want.name);
  const scenario::PlatformDoc doc = scenario::load_platform(platform_path(want.name));
  config::Registry reg;
  config::Reader root(&doc.doc, doc.file, "platform", &reg, /*sourced=*/true);
  const topo::Topology t(root.section("topology", "the big machine's shape"));
  const int cores = want.sockets * want.cores_per_socket;
  const int cpus = 2 * cores;
  const int per_socket = want.cores_per_socket;  // first threads of socket s: per_socket * s ...
  CHECK(t.cpu_count() == cpus);
  CHECK(t.core_count() == cores);
  CHECK(t.sockets() == want.sockets);
  CHECK(t.node_count() == want.sockets);
  CHECK(t.threads_per_core() == 2);
  CHECK(t.sockets_per_group() == want.sockets_per_chassis);
  CHECK(t.sockets() % t.sockets_per_group() == 0);
  // Linux numbering, SMT siblings last: CPU n and n + cores share a core.
  CHECK(t.smt_siblings(0) == std::vector<int>{cores});
  CHECK(t.smt_siblings(cpus - 1) == std::vector<int>{cores - 1});
  CHECK(t.cpu(per_socket).socket == 1);
  CHECK(t.cpu(cores + per_socket).socket == 1);
  CHECK(t.node_of_cpu(cores + per_socket) == 1);
  const int other_chassis = per_socket * want.sockets_per_chassis;
  const int last_socket = per_socket * (want.sockets_per_chassis - 1);
  const std::vector<std::pair<int, HopClass>> pairs = {{cores, HopClass::smt},
                                                       {1, HopClass::die},
                                                       {per_socket, HopClass::socket},
                                                       {last_socket, HopClass::socket},
                                                       {other_chassis, HopClass::node_controller},
                                                       {cores - 1, HopClass::node_controller}};
  for (const auto& [b, cls] : pairs) {
    INFO("CPU 0 -> CPU " << b);
    CHECK(t.hop_class(0, b) == cls);
  }
  if (!latencies) return;
  config::Registry machine_reg;
  scenario::Machine m(doc, 1, machine_reg);
  Tick previous = 0;
  for (const auto& [b, cls] : pairs) {
    INFO("CPU 0 -> CPU " << b);
    const Tick latency = m.interconnect().latency(0, b);
    CHECK(latency >= previous);
    previous = latency;
  }
  CHECK(m.interconnect().latency(0, 1) < m.interconnect().latency(0, per_socket));
  CHECK(m.interconnect().latency(0, per_socket) < m.interconnect().latency(0, other_chassis));
  REQUIRE(m.hpet_params() != nullptr);
  CHECK(m.hpet_params()->socket == 0);
}

// One big machine with its hub RTC, read the way uv_read_rtc reads it.
struct RtcBench {
  config::Registry registry;
  scenario::Machine m;
  devices::UvRtc rtc;
  RtcBench()
      : m(scenario::load_platform(platform_path("superdome-flex-32s")), 1, registry),
        rtc(devices::UvRtcParams(m.platform_section("uv_rtc", "hub RTC")), m.sim(), m.interconnect()) {}

  /// Each CPU of `cpus` reads the RTC at `at`; returns how long each read took.
  std::vector<Tick> read_at_once(const std::vector<int>& cpus, Tick at) {
    std::vector<Tick> took(cpus.size(), 0);
    for (std::size_t i = 0; i < cpus.size(); ++i) m.sim().spawn("rtc reader", read_one(cpus[i], at, took[i]));
    m.sim().run();
    return took;
  }
  /// One uv_read_rtc on `cpu` issued at `at`; its duration goes to `took`.
  Task<void> read_one(int cpu, Tick at, Tick& took) {
    co_await m.sim().delay(at - m.sim().now());
    const Tick start = m.sim().now();
    co_await rtc.read(cpu);
    took = m.sim().now() - start;
  }
  /// One HPET counter read on `cpu` now; its duration goes to `took`.
  Task<void> hpet_read_one(devices::Hpet& hpet, int cpu, Tick& took) {
    const Tick start = m.sim().now();
    co_await devices::hpet_read_counter(m.cpu(cpu), hpet);
    took = m.sim().now() - start;
  }
};

}  // namespace

TEST_CASE("the Superdome Flex has 1,792 CPUs: 32 sockets of 28 cores with HT in 8 chassis of 4, hop classes nearest "
          "first",
          "[config][big]") {
  check_big_machine({"superdome-flex-32s", 32, 28, 4}, /*latencies=*/true);
}

TEST_CASE("the 4,096-CPU scaling machine has 64 sockets of 32 cores with HT in 16 chassis of 4, hop classes nearest "
          "first",
          "[config][big]") {
  // The machine itself (its interconnect's path table) takes seconds to build: its shape is checked here, its
  // latencies are the Superdome Flex's classes with the same sources.
  check_big_machine({"scale-4096", 64, 32, 4}, /*latencies=*/false);
}

TEST_CASE("a topology of more than 64 sockets loads (the scaling machine's chassis with 128 sockets of 16 cores) "
          "and one of more than 1,024 dies is refused",
          "[config][big]") {
  scenario::PlatformDoc doc = scenario::load_platform(platform_path("scale-4096"));
  doc.doc["topology"]["sockets"]["value"] = 128;
  doc.doc["topology"]["cores_per_cluster"]["value"] = 16;
  config::Registry reg;
  config::Reader root(&doc.doc, doc.file, "platform", &reg, /*sourced=*/true);
  const topo::Topology t(root.section("topology", "the big machine's shape"));
  CHECK(t.cpu_count() == 4096);
  CHECK(t.sockets() == 128);
  CHECK(t.node_count() == 128);
  CHECK(t.sockets_per_group() == 4);
  CHECK(t.cpu(127 * 16).socket == 127);
  CHECK(t.hop_class(0, 16) == HopClass::socket);              // the next socket of the chassis
  CHECK(t.hop_class(0, 4 * 16) == HopClass::node_controller);  // the next chassis
  CHECK(t.hop_class(0, 127 * 16) == HopClass::node_controller);
  // 2,048 dies of 2 cores: within the CPU guard, but a route per die pair would take 160 MiB.
  doc.doc["topology"]["dies_per_socket"]["value"] = 16;
  doc.doc["topology"]["cores_per_cluster"]["value"] = 2;
  config::Registry reg2;
  config::Reader root2(&doc.doc, doc.file, "platform", &reg2, /*sourced=*/true);
  CHECK_THROWS_WITH(topo::Topology(root2.section("topology", "too many dies")),
                    Catch::Contains("platform.topology.dies_per_socket") && Catch::Contains("2048 dies in all"));
}

TEST_CASE("uv-rtc: CPUs on two chassis read their own hubs at once, neither waiting for the other", "[hpet][big]") {
  RtcBench b;
  const int chassis0 = 0, chassis5 = 5 * 4 * 28 + 3;
  const Tick alone0 = b.read_at_once({chassis0}, 0).at(0);
  const Tick alone5 = b.read_at_once({chassis5}, 10 * sim::kUs).at(0);
  CHECK(alone0 >= b.rtc.params().register_read);
  const auto together = b.read_at_once({chassis0, chassis5}, 20 * sim::kUs);
  CHECK(together[0] == alone0);
  CHECK(together[1] == alone5);
  CHECK(b.rtc.stats().max_in_flight == 2);
  CHECK(b.rtc.reads_at_hub_of(chassis0) == 2);
  CHECK(b.rtc.reads_at_hub_of(chassis5) == 2);
  CHECK(b.rtc.reads_at_hub_of(28) == 0);  // socket 1's hub: nobody read it
}

TEST_CASE("uv-rtc: all 56 CPUs of a socket read at once, each in about one read's time, while HPET reads queue",
          "[hpet][big]") {
  RtcBench b;
  std::vector<int> socket3;
  for (int c = 3 * 28; c < 4 * 28; ++c) socket3.push_back(c), socket3.push_back(c + 896);
  const Tick alone = b.read_at_once({socket3.front()}, 0).at(0);
  const auto took = b.read_at_once(socket3, 10 * sim::kUs);
  CHECK(b.rtc.stats().max_in_flight == socket3.size());
  for (Tick t : took) CHECK(t < alone + alone / 2);  // mesh occupancy only: no service slot to wait for

  devices::Hpet hpet(*b.m.hpet_params(), b.m.sim(), b.m.interconnect());
  std::vector<Tick> hpet_took(socket3.size(), 0);
  for (std::size_t i = 0; i < socket3.size(); ++i)
    b.m.sim().spawn("hpet reader", b.hpet_read_one(hpet, socket3[i], hpet_took[i]));
  b.m.sim().run();
  CHECK(*std::max_element(hpet_took.begin(), hpet_took.end()) > 3 * *std::min_element(hpet_took.begin(), hpet_took.end()));
}

TEST_CASE("uv-rtc: a read crosses its socket's own link to its chassis' node controller and back, booked there",
          "[hpet][big]") {
  RtcBench b;
  auto messages = [&](const std::string& name) {
    for (const auto& l : b.m.interconnect().links())
      if (l.name == name) return l.messages;
    return std::uint64_t{0};
  };
  // CPUs of socket 6 (chassis 1, node controller 1): three reads at once.
  const auto took = b.read_at_once({6 * 28, 6 * 28 + 1, 6 * 28 + 2}, 0);
  CHECK(messages("qpi6>nc1") == 3);
  CHECK(messages("nc1>qpi6") == 3);
  CHECK(messages("qpi6>nc0") == 0);
  // Unloaded: the register access, a socket crossing each way and the mesh to the off-chip stop and back.
  auto& icn = b.m.interconnect();
  const Tick upi = icn.latency(0, icn.cpu_endpoint(28)) - icn.latency(0, icn.llc_endpoint(0)) -
                   icn.latency(icn.llc_endpoint(1), icn.cpu_endpoint(28));  // one socket crossing
  const Tick mesh = icn.latency(icn.cpu_endpoint(6 * 28), icn.llc_endpoint(6)) +
                    icn.latency(icn.llc_endpoint(6), icn.cpu_endpoint(6 * 28));
  CHECK(took[0] == b.rtc.params().register_read + 2 * upi + mesh);
}

TEST_CASE("the Superdome Flex's chassis are UPI rings: a socket's neighbours are one crossing away, the opposite "
          "socket two, and other chassis through the node controllers",
          "[config][big]") {
  RtcBench b;
  auto& icn = b.m.interconnect();
  auto names = [&](int from_socket, int to_socket) {
    std::vector<std::string> out;
    for (const auto& step : icn.path(icn.llc_endpoint(from_socket), icn.llc_endpoint(to_socket)).steps)
      if (step.link >= 0) out.push_back(icn.links()[static_cast<std::size_t>(step.link)].name);
    return out;
  };
  using S = std::vector<std::string>;
  CHECK(names(5, 6) == S{"qpi5>6"});
  CHECK(names(7, 4) == S{"qpi7>4"});  // around the ring of chassis 1 (sockets 4-7)
  CHECK(names(5, 7) == S{"qpi5>6", "qpi6>7"});
  CHECK(names(5, 9) == S{"qpi5>nc1", "nc1>2", "nc2>qpi9"});
}

TEST_CASE("uv-rtc: a CPU reads a time that advances with simulated time at the RTC's rate", "[hpet][big]") {
  RtcBench b;
  std::vector<std::uint64_t> values;
  std::vector<Tick> latched_by;
  auto reader = [&]() -> Task<void> {
    for (int i = 0; i < 5; ++i) {
      co_await b.m.sim().delay(3 * sim::kUs);
      values.push_back(co_await b.rtc.read(200));
      latched_by.push_back(b.m.sim().now());
    }
  };
  b.m.sim().spawn("reader", reader());
  b.m.sim().run();
  REQUIRE(values.size() == 5);
  for (std::size_t i = 1; i < values.size(); ++i) {
    CHECK(values[i] > values[i - 1]);
    // Latched at the hub during the read: no later than the read's return.
    CHECK(values[i] <= b.rtc.counter_at(latched_by[i]));
    CHECK(values[i] >= b.rtc.counter_at(latched_by[i] - b.rtc.params().register_read - 100 * sim::kNs));
  }
  // 3 us + one read apart: at 100 MHz a few hundred counts.
  const double hz = b.rtc.params().counter_hz;
  const double per_gap = static_cast<double>(values[4] - values[0]) / 4;
  CHECK(per_gap == Approx(hz * sim::to_ns(latched_by[4] - latched_by[0]) / 4 * 1e-9).epsilon(0.02));
}

TEST_CASE("the uv-rtc clocksource: ktime_get follows simulated time, and clock_gettime falls back to a system call",
          "[hpet][big]") {
  RtcBench b;
  devices::Hpet hpet(*b.m.hpet_params(), b.m.sim(), b.m.interconnect());
  models::kernel::TimekeepingCosts costs{.ktime_get_overhead = 10 * sim::kNs, .vdso_overhead = 20 * sim::kNs,
                                         .syscall_overhead = 100 * sim::kNs};
  models::kernel::Timekeeping tk(b.m, hpet, models::kernel::parse_clocksource("uv-rtc"),
                                 models::kernel::WallTimeRead::before_write_side, costs, &b.rtc);
  std::int64_t first = 0, second = 0;
  Tick vdso_took = 0;
  auto caller = [&]() -> Task<void> {
    co_await b.m.sim().delay(5 * sim::kUs);
    first = co_await tk.ktime_get(b.m.cpu(900));
    co_await b.m.sim().delay(5 * sim::kUs);
    const Tick start = b.m.sim().now();
    second = co_await tk.vdso_clock_gettime(b.m.cpu(900));
    vdso_took = b.m.sim().now() - start;
  };
  b.m.sim().spawn("caller", caller());
  b.m.sim().run();
  CHECK(first == Approx(5000).margin(600));
  CHECK(second - first == Approx(5000 + 100 + sim::to_ns(b.rtc.params().register_read)).margin(300));
  const auto& a = tk.accounting(900);
  CHECK(a.read_fn_calls == 2);  // both went through uv_read_rtc: the vDSO has no read of its own
  CHECK(a.ktime_calls == 2);
  CHECK(a.vdso_calls == 1);
  CHECK(vdso_took >= costs.syscall_overhead + b.rtc.params().register_read);
  CHECK(b.rtc.stats().reads == 2);
  CHECK(hpet.stats().reads == 0);
}

TEST_CASE("the uv-rtc clocksource on a platform without a hub RTC is a configuration error", "[hpet][big][config]") {
  auto s = scenario::load_scenario(std::string(COHSIM_SOURCE_DIR) + "/configs/scenarios/hpet-ivybridge-ex.json", "tsc",
                                   {{"clocksource", "uv-rtc"}});
  CHECK_THROWS_AS(scenario::Run(s, 1), config::ConfigError);
  CHECK_THROWS_AS(models::kernel::parse_clocksource("uv_rtc"), std::invalid_argument);
}

TEST_CASE("a hub RTC on a platform without node controllers is a configuration error naming the section",
          "[hpet][big][config]") {
  config::json doc = cohsim::test::platform_json("haswell-ex");  // 4 sockets joined directly
  doc["uv_rtc"] = config::load_json_file(platform_path("superdome-flex-32s"))["uv_rtc"];
  config::Registry registry;
  CHECK_THROWS_WITH(scenario::Machine(scenario::PlatformDoc{doc, "haswell-ex-rtc.json"}, 1, registry),
                    Catch::Contains("platform.uv_rtc") && Catch::Contains("needs node controllers"));
}

TEST_CASE("cohsim topo shows the 1,792-CPU machine one line per chassis, and every socket only when asked", "[cli][big]") {
  const auto summary = cohsim::test::run_cli(cohsim::test::quoted(platform_path("superdome-flex-32s")).insert(0, "topo "));
  REQUIRE(summary.exit_code == 0);
  const auto lines = std::count(summary.output.begin(), summary.output.end(), '\n');
  CHECK(lines < 150);
  CHECK_THAT(summary.output, Catch::Contains("8 node-controller groups of 4 sockets") &&
                                 Catch::Contains("group  7: sockets 28-31, nodes 28-31, CPUs 784-895") &&
                                 Catch::Contains("node_controller") && !Catch::Contains("socket 31\n"));
  // CPU 0's chassis in full: a ring, so its opposite socket is two crossings away; one node per other chassis
  CHECK_THAT(summary.output, Catch::Contains("home on die 1, CPU 0 -> home 43.0 ns") &&
                                 Catch::Contains("home on die 2, CPU 0 -> home 70.0 ns") &&
                                 Catch::Contains("home on die 4, CPU 0 -> home 220.0 ns") &&
                                 !Catch::Contains("home on die 5,"));
  const auto every = cohsim::test::run_cli("topo --every-socket " + cohsim::test::quoted(platform_path("superdome-flex-32s")));
  REQUIRE(every.exit_code == 0);
  CHECK_THAT(every.output, Catch::Contains("socket 31 (node-controller group 7)\n") && Catch::Contains("node 31: CPUs"));
}

TEST_CASE("on a machine too large for the direct path index, latency() between dies is its path's and keeps no path",
          "[interconnect]") {
  config::Registry registry;
  scenario::Machine m(scenario::load_platform(platform_path("superdome-flex-32s")), 1, registry);
  auto& icn = m.interconnect();
  const int home = icn.home_endpoint(5);
  const std::vector<std::pair<int, int>> pairs = {{0, 28}, {0, 1000}, {1000, home}, {home, 3}};
  const std::size_t kept = icn.paths_kept();
  std::vector<Tick> latencies;
  for (const auto& [a, b] : pairs) latencies.push_back(icn.latency(a, b));
  CHECK(icn.paths_kept() == kept);  // summed from the legs and die routes send() keeps
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    INFO("endpoint " << pairs[i].first << " -> " << pairs[i].second);
    CHECK(latencies[i] == icn.path(pairs[i].first, pairs[i].second).latency);
  }
}
