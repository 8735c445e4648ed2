// engine_queue_check: a randomised check of the event queue's ordering, kept
// next to the benchmark that motivated the queue's design (see
// docs/performance.md). Events must run in (time, scheduling order), also
// across run(until) stops and events scheduled between runs, and
// events_executed() must count each of them once. Exit 0 when every trial
// matches a stable sort of the schedule.
#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "cohsim/sim/simulator.hpp"

using namespace cohsim::sim;

namespace {

using Entry = std::pair<Tick, std::uint64_t>;  // (time, scheduling order)

struct Trial {
  Simulator sim;
  std::mt19937_64 rng;
  Tick spread;
  int budget = 20000;  // events still allowed to be scheduled
  std::uint64_t seq = 0;
  std::vector<Entry> scheduled, ran;

  Trial(std::uint64_t seed, Tick spread_) : rng(seed), spread(spread_) {}

  void add(Tick at) {
    scheduled.push_back({at, seq});
    sim.schedule(at, &Trial::fire, this, seq++);
  }
  static void fire(void* ctx, std::uint64_t id) {
    auto* t = static_cast<Trial*>(ctx);
    t->ran.push_back({t->sim.now(), id});
    const int n = static_cast<int>(t->rng() % 3);
    for (int i = 0; i < n && t->budget > 0; ++i, --t->budget) {
      Tick d = t->rng() % 4 == 0 ? 0 : t->rng() % t->spread;  // many same-tick events
      if (t->rng() % 50 == 0) d = t->rng() % (Tick{1} << 40);  // a few far ones
      t->add(t->sim.now() + d);
    }
  }
};

}  // namespace

int main() {
  const Tick spreads[] = {1, 7, 1000, Tick{1} << 20};
  for (int trial = 0; trial < 400; ++trial) {
    Trial t(static_cast<std::uint64_t>(trial), spreads[trial % 4]);
    for (int i = 0; i < 50; ++i) t.add(t.rng() % t.spread);
    RunLimits limits;
    limits.max_events_per_tick = ~std::uint64_t{0};
    for (;;) {
      limits.until = t.rng() % 4 == 0 ? kNever : t.sim.now() + t.rng() % (3 * t.spread + 1);
      if (t.sim.run(limits) == RunEnd::queue_empty) break;
      if (t.rng() % 3 == 0 && t.budget > 0) {  // schedule between runs, possibly at now
        --t.budget;
        t.add(t.sim.now() + (t.rng() % 2 ? 0 : t.rng() % t.spread));
      }
    }
    std::vector<Entry> expected = t.scheduled;
    std::stable_sort(expected.begin(), expected.end());
    if (expected != t.ran || t.sim.events_executed() != t.ran.size()) {
      std::printf("engine_queue_check: trial %d: events ran out of (time, scheduling) order\n", trial);
      return 1;
    }
  }
  std::printf("engine_queue_check: 400 trials ok\n");
  return 0;
}
