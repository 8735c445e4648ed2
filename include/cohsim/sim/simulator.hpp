// The discrete-event core: time, the event queue, processes, waits, the watchdog.
//
// Events run in (time, scheduling order): two events at the same tick run in
// the order they were scheduled, so a run is a pure function of its inputs.
// A process is a top-level coroutine (a CPU program, a device, a daemon).
// Every suspension of a process records what it waits on, so that a run that
// can make no more progress ends with a report naming who waits on what.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cohsim/sim/task.hpp"
#include "cohsim/sim/time.hpp"

namespace cohsim::sim {

class Simulator;

/// A failure of the simulation itself (bad model state, a lost wake-up...).
class SimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The watchdog's verdict: the run cannot make progress. what() is the report.
class WatchdogError : public SimError {
 public:
  using SimError::SimError;
};

/// A top-level coroutine and what it is doing now.
class Process {
 public:
  const std::string& name() const { return name_; }
  bool done() const { return done_; }
  bool daemon() const { return daemon_; }
  /// What the process waits on now ("" while runnable), and since when.
  std::string_view waiting_on() const { return waiting_on_; }
  std::uint64_t wait_address() const { return wait_address_; }
  Tick wait_since() const { return wait_since_; }
  /// True when the last wait ended by its timeout rather than a notify.
  bool timed_out() const { return timed_out_; }

 private:
  friend class Simulator;
  friend class Signal;
  friend struct detail::PromiseBase;
  Simulator* sim_ = nullptr;
  std::string name_;
  bool daemon_ = false;
  bool done_ = false;
  bool timed_out_ = false;
  std::coroutine_handle<> root_{};
  std::coroutine_handle<> resume_point_{};
  std::uint64_t wait_id_ = 0;
  bool waiting_ = false;
  std::string_view waiting_on_{};
  std::uint64_t wait_address_ = 0;
  Tick wait_since_ = 0;
};

/// Limits of one run() call.
struct RunLimits {
  Tick until = kNever;  ///< stop when simulated time would pass this
  /// Watchdog: events at one tick before the run is declared livelocked.
  std::uint64_t max_events_per_tick = 50'000'000;
  /// Watchdog: simulated time without note_progress() before giving up
  /// (kNever disables it).
  Tick max_time_without_progress = kNever;
};

/// Why run() returned.
enum class RunEnd { all_done, time_limit, stopped, queue_empty };

/// The event loop. Not thread-safe: one simulation per thread.
class Simulator {
 public:
  Simulator();
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Current simulated time.
  Tick now() const { return now_; }
  /// Number of events executed so far.
  std::uint64_t events_executed() const { return events_executed_; }

  /// Starts `task` as a top-level process at the current time. A daemon does
  /// not keep the run alive and is not reported as stuck when it waits.
  Process& spawn(std::string name, Task<void> task, bool daemon = false);

  /// Calls fn(ctx, arg) at time `at` (>= now).
  void schedule(Tick at, void (*fn)(void*, std::uint64_t), void* ctx, std::uint64_t arg = 0);

  /// Runs until every non-daemon process is done, the limit is reached, or
  /// stop() is called. Rethrows the first exception raised inside a process;
  /// throws WatchdogError when the run is stuck or livelocked.
  RunEnd run(const RunLimits& limits = {});
  /// Makes run() return after the current event.
  void stop() { stop_requested_ = true; }

  /// The process whose coroutine is running now (nullptr inside callbacks).
  Process* current() const { return current_; }
  /// Records that the model made progress (the watchdog's clock restarts).
  void note_progress() { last_progress_ = now_; }

  /// Optional: turns an address into "symbol+offset" for watchdog reports.
  void set_address_describer(std::function<std::string(std::uint64_t)> f) {
    describe_address_ = std::move(f);
  }
  /// One line per live process: name, state, what it waits on, since when.
  std::string describe_processes() const;

  /// Awaitable: suspends the calling process for `d` picoseconds.
  auto delay(Tick d) {
    struct Awaiter {
      Simulator* sim;
      Tick d;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) { sim->suspend_current(h, "delay", 0, sim->now_ + d); }
      void await_resume() const noexcept {}
    };
    return Awaiter{this, d};
  }

  // --- for wait primitives (Signal and model awaitables) -------------------
  /// Suspends the current process at `h`; it resumes by wake() with the
  /// returned id, or at `deadline` (if not kNever) with timed_out() set.
  std::uint64_t suspend_current(std::coroutine_handle<> h, std::string_view what,
                                std::uint64_t address, Tick deadline = kNever);
  /// Resumes process p (at now) if it still waits with this id.
  void wake(Process* p, std::uint64_t wait_id);

 private:
  struct Event {
    Tick at;
    std::uint64_t seq;
    void (*fn)(void*, std::uint64_t);
    void* ctx;
    std::uint64_t arg;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  friend struct detail::PromiseBase;
  static void resume_event(void* ctx, std::uint64_t arg);
  static void timeout_event(void* ctx, std::uint64_t arg);
  void process_done(Process* p, std::exception_ptr error);
  void run_event(const Event& e);
  [[noreturn]] void watchdog_fail(const std::string& why) const;
  void reap_done_processes();

  Tick now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t events_executed_ = 0;
  std::vector<Event> heap_;
  std::vector<Event> fifo_;  // events at `now_`, in scheduling order
  std::size_t fifo_head_ = 0;
  std::vector<std::unique_ptr<Process>> processes_;
  std::size_t live_non_daemon_ = 0;
  bool non_daemon_spawned_ = false;
  std::size_t done_count_ = 0;
  Process* current_ = nullptr;
  bool stop_requested_ = false;
  std::exception_ptr first_error_{};
  Tick last_progress_ = 0;
  std::function<std::string(std::uint64_t)> describe_address_;
};

/// A set of waiting processes, woken together: the building block of
/// event-driven spinning (a CPU waiting for a cache line to change).
class Signal {
 public:
  /// Awaitable: suspends the calling process until notify_all() (or until
  /// `deadline`; check Process::timed_out()).
  auto wait(Simulator& sim, std::string_view what, std::uint64_t address = 0, Tick deadline = kNever) {
    struct Awaiter {
      Signal* sig;
      Simulator* sim;
      std::string_view what;
      std::uint64_t address;
      Tick deadline;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) {
        Process* p = sim->current();
        std::uint64_t id = sim->suspend_current(h, what, address, deadline);
        sig->add(p, id);
      }
      void await_resume() const noexcept {}
    };
    return Awaiter{this, &sim, what, address, deadline};
  }
  /// Wakes every process waiting now (they run at the current time, in the
  /// order they started waiting). Returns how many were woken.
  std::size_t notify_all(Simulator& sim);
  /// Number of registered waiters (stale entries included).
  std::size_t waiter_count() const { return waiters_.size(); }

 private:
  void add(Process* p, std::uint64_t id);
  struct Waiter {
    Process* p;
    std::uint64_t id;
  };
  std::vector<Waiter> waiters_;
};

}  // namespace cohsim::sim
