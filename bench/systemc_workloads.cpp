// The engine benchmark workloads written the way SystemC users write them:
// SC_MODULEs with SC_THREADs, wait(sc_time), delta notifications, wait(event).
//
// Compiled as C++17 in its own object library: Debian's libsystemc is built
// for C++17 and the headers pin the API version to the language level.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "workloads.hpp"

namespace cohsim_bench {
namespace {

using sc_core::sc_event;
using sc_core::sc_module_name;
using sc_core::sc_time;

/// State shared by every thread of the bench.
struct Shared {
  std::uint64_t resumptions = 0;  // the event counter (see workloads.hpp)
  int delay_iterations = 0;
  int pingpong_rounds = 0;
  sc_event go_delay{"go_delay"};
  sc_event go_pingpong{"go_pingpong"};
  sc_time ns[8];  // ns[d] = d nanoseconds, built once
};

Shared* g_shared = nullptr;
int (*g_body)(int, char**) = nullptr;

// (a) One independent task looping over timed waits.
SC_MODULE(DelayTask) {
  SC_HAS_PROCESS(DelayTask);
  DelayTask(sc_module_name name, int index, Shared& shared) : sc_module(name), index_(index), sh_(shared) {
    SC_THREAD(run);
  }
  void run() {
    for (;;) {
      wait(sh_.go_delay);
      ++sh_.resumptions;
      const int iterations = sh_.delay_iterations;
      for (int k = 0; k < iterations; ++k) {
        wait(sh_.ns[delay_ns(index_, k)]);
        ++sh_.resumptions;
      }
    }
  }
  int index_;
  Shared& sh_;
};

// (b) A pair of threads: A notifies B's event and waits on its own; B answers.
SC_MODULE(PingPongPair) {
  SC_HAS_PROCESS(PingPongPair);
  PingPongPair(sc_module_name name, Shared& shared) : sc_module(name), sh_(shared) {
    SC_THREAD(ping);
    SC_THREAD(pong);
  }
  void ping() {
    for (;;) {
      wait(sh_.go_pingpong);
      ++sh_.resumptions;
      const int rounds = sh_.pingpong_rounds;
      for (int r = 0; r < rounds; ++r) {
        to_pong_.notify(sc_core::SC_ZERO_TIME);
        wait(to_ping_);
        ++sh_.resumptions;
      }
    }
  }
  void pong() {
    for (;;) {
      wait(sh_.go_pingpong);
      ++sh_.resumptions;
      const int rounds = sh_.pingpong_rounds;
      for (int r = 0; r < rounds; ++r) {
        wait(to_pong_);
        ++sh_.resumptions;
        to_ping_.notify(sc_core::SC_ZERO_TIME);
      }
    }
  }
  sc_event to_ping_{"to_ping"};
  sc_event to_pong_{"to_pong"};
  Shared& sh_;
};

struct Top {
  std::vector<std::unique_ptr<DelayTask>> delay;
  std::vector<std::unique_ptr<PingPongPair>> pairs;
};
Top* g_top = nullptr;

Measurement run_phase(sc_event& go) {
  const std::uint64_t count0 = g_shared->resumptions;
  const sc_time t0 = sc_core::sc_time_stamp();
  Measurement m;
  const Stopwatch watch;
  go.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();  // until starvation: every thread waits on its "go" again
  watch.stop(m);
  m.events = g_shared->resumptions - count0;
  m.sim_span_ps = (sc_core::sc_time_stamp() - t0).value();  // resolution is 1 ps
  return m;
}

}  // namespace

void systemc_setup(const DelayParams& delay, const PingPongParams& pingpong) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  g_shared = new Shared;  // lives until exit, like the modules
  g_shared->delay_iterations = delay.iterations;
  g_shared->pingpong_rounds = pingpong.rounds;
  for (int d = 0; d < 8; ++d) g_shared->ns[d] = sc_time(d, sc_core::SC_NS);
  g_top = new Top;
  for (int i = 0; i < delay.tasks; ++i)
    g_top->delay.push_back(std::make_unique<DelayTask>(("delay" + std::to_string(i)).c_str(), i, *g_shared));
  for (int i = 0; i < pingpong.pairs; ++i)
    g_top->pairs.push_back(std::make_unique<PingPongPair>(("pair" + std::to_string(i)).c_str(), *g_shared));
  // Elaboration and initialisation: every thread runs up to its first wait.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

Measurement systemc_run_delay() { return run_phase(g_shared->go_delay); }
Measurement systemc_run_pingpong() { return run_phase(g_shared->go_pingpong); }
const char* systemc_version() { return sc_core::sc_release(); }

int systemc_main(int argc, char** argv, int (*body)(int, char**)) {
  // Keep stdout clean for --json (the banner is printed by sc_elab_and_sim).
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  g_body = body;
  return sc_core::sc_elab_and_sim(argc, argv);
}

}  // namespace cohsim_bench

// The SystemC entry point, reached through sc_elab_and_sim() above: the whole
// bench (both engines) runs inside it, as in any SystemC program.
int sc_main(int argc, char** argv) { return cohsim_bench::g_body(argc, argv); }
