// The c2c workload's results: the pair it measured, its hop class by name.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::test;

TEST_CASE("c2c names the hop class of its pair in the results, beside the class's index as a metric", "[c2c]") {
  for (const auto& [cpu_b, name, index] : {std::tuple{"1", "cluster", 1.0}, std::tuple{"48", "socket", 4.0}}) {
    INFO("cpu_b " << cpu_b);
    auto s = scenario::load_scenario(source_path("configs/scenarios/c2c-kunpeng920.json"), "",
                                     {{"cpu_b", cpu_b}, {"rounds", "5"}, {"warmup", "0"}});
    scenario::Run run(s, 1);
    const scenario::Results r = run.execute();
    CHECK(r.extra["pair"] == json{{"cpu_a", 0}, {"cpu_b", std::stoi(cpu_b)}, {"hop_class", name}});
    CHECK(r.get("hop_class") == index);
  }
}
