// The discrete-event core: time, the event queue, processes, waits, the watchdog.
//
// Events run in (time, scheduling order): two events at the same tick run in
// the order they were scheduled, so a run is a pure function of its inputs.
// A process is a top-level coroutine (a CPU program, a device, a daemon).
// Every suspension of a process records what it waits on, so that a run that
// can make no more progress ends with a report naming who waits on what.
#pragma once

#include <algorithm>
#include <bit>
#include <coroutine>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
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
#include "cohsim/sim/trace.hpp"

namespace cohsim::sim {

class Simulator;

namespace detail {

/// A growable array of trivially copyable T for the event loop's hot paths:
/// push_back is a compare and a store, growth is out of line (std::vector
/// inlines its reallocation into every caller, which costs registers there).
template <class T>
class PodVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodVec() = default;
  PodVec(const PodVec& o) { assign(o); }
  PodVec(PodVec&& o) noexcept { swap(o); }
  PodVec& operator=(const PodVec& o) {
    if (this != &o) {
      size_ = 0;
      assign(o);
    }
    return *this;
  }
  PodVec& operator=(PodVec&& o) noexcept {
    PodVec tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~PodVec() { std::free(data_); }

  void push_back(const T& v) {
    if (size_ == cap_) [[unlikely]]
      grow();
    data_[size_++] = v;
  }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  void swap(PodVec& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
  }
  void reserve(std::size_t n) {
    if (n > cap_) reallocate(n);
  }
  /// Keeps the elements for which keep(e) is true, in order.
  template <class F>
  void retain_if(F keep) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < size_; ++i)
      if (keep(data_[i])) data_[out++] = data_[i];
    size_ = out;
  }

 private:
  void assign(const PodVec& o) {
    reserve(o.size_);
    if (o.size_ != 0) std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(T));
    size_ = o.size_;
  }
  [[gnu::noinline]] void grow() { reallocate(cap_ ? 2 * cap_ : 16); }
  void reallocate(std::size_t n) {
    void* p = std::realloc(data_, n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    cap_ = n;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

/// One scheduled call: fn(ctx, arg) at time `at`.
struct Event {
  Tick at;
  void (*fn)(void*, std::uint64_t);
  void* ctx;
  std::uint64_t arg;
};

/// The events of the current tick, first in first out, in a ring of a power
/// of two slots. Positions count every event ever queued, so the head is the
/// number of events taken (the run loop counts events by it).
class EventRing {
 public:
  EventRing() : data_(new Event[kInitialSlots]), mask_(kInitialSlots - 1) {}
  void push_back(const Event& e) {
    if (tail_ - head_ > mask_) [[unlikely]]
      grow(1);
    data_[tail_++ & mask_] = e;
  }
  /// Appends [first, last) in order.
  void append(const Event* first, const Event* last) {
    const auto n = static_cast<std::uint64_t>(last - first);
    if (tail_ - head_ + n > mask_ + 1) [[unlikely]]
      grow(n);
    Event* const data = data_.get();
    const std::uint64_t mask = mask_;
    std::uint64_t tail = tail_;
    for (; first != last; ++first) data[tail++ & mask] = *first;
    tail_ = tail;
  }
  bool empty() const { return head_ == tail_; }
  /// The first event, left in the ring (not empty).
  const Event& peek_front() const { return data_[head_ & mask_]; }
  /// Takes the first event (its slot may be reused by the next push_back).
  const Event& pop_front() { return data_[head_++ & mask_]; }
  /// Events taken since construction.
  std::uint64_t taken() const { return head_; }

 private:
  static constexpr std::size_t kInitialSlots = 1024;
  /// Makes room for n more events.
  [[gnu::noinline]] void grow(std::uint64_t n);
  std::unique_ptr<Event[]> data_;
  std::uint64_t mask_;
  std::uint64_t head_ = 0;
  std::uint64_t tail_ = 0;
};

/// Events after the current tick: a radix heap with 256-ary digits relative
/// to a base time (the last tick taken; every queued time is after it). An
/// event at t sits in level L = the highest byte in which t differs from the
/// base, slot = byte L of t; an occupancy bit per (level, slot), ordered by
/// level then slot, finds the earliest slot, which holds the earliest tick.
/// Its events share every byte from L up (those of level 0 are one tick).
/// Taking that tick makes it the base: the other events of the slot go to
/// levels below L, and every other slot stays valid (their bytes from their
/// level up are the new base's too). So an event moves at most 8 times, and
/// with delays of 1 ns to 10 us (level 1 or 2 in picoseconds) once or twice.
/// Events of one tick always share a slot, appended in scheduling order and
/// moved in that order: ties need no sequence number.
class FutureEvents {
 public:
  Tick base() const { return base_; }
  bool empty() const { return occupied_words_ == 0; }
  /// The slot of time t (> base()): slots are ordered as the times they
  /// hold (every time of a lower slot is earlier than every time of a
  /// higher one), and each time has one.
  unsigned slot_of(Tick t) const {
    const unsigned level = static_cast<unsigned>(std::bit_width(t ^ base_) - 1) / 8;
    return level * kSlots + static_cast<unsigned>(t >> (8 * level) & (kSlots - 1));
  }
  /// True when every queued time is after every time of slot i (the queue
  /// is empty, or its earliest slot is higher).
  bool all_after_slot(unsigned i) const { return occupied_words_ == 0 || i < earliest_slot(); }
  /// Queues e (e.at > base()).
  [[gnu::always_inline]] void push(const Event& e) { push(slot_of(e.at), e); }
  /// Queues e in slot i = slot_of(e.at).
  [[gnu::always_inline]] void push(unsigned i, const Event& e) {
    slots_[i].push_back(e);
    slot_words_[i / 64] |= std::uint64_t{1} << (i % 64);
    occupied_words_ |= std::uint32_t{1} << (i / 64);
  }
  /// Makes the earliest queued tick the base and appends its events to
  /// `out` in order; false (nothing changes) when the queue is empty or that
  /// tick is past `until`.
  bool take_earliest(Tick until, EventRing& out);

 private:
  static constexpr unsigned kLevels = 8, kSlots = 256;
  /// The lowest occupied (level, slot) index (the queue is not empty).
  unsigned earliest_slot() const {
    const unsigned w = static_cast<unsigned>(std::countr_zero(occupied_words_));
    return w * 64 + static_cast<unsigned>(__builtin_ctzll(slot_words_[w]));  // the word is not 0
  }
  Tick base_ = 0;
  std::uint32_t occupied_words_ = 0;  // bit w set iff slot_words_[w] != 0
  std::uint64_t slot_words_[kLevels * kSlots / 64] = {};  // bit i set iff slots_[i] is not empty
  PodVec<Event> slots_[kLevels * kSlots];
};

}  // namespace detail

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

/// A top-level coroutine and what it is doing now. (Aligned to a cache line:
/// the fields every wait and wake touch, first, share one line.)
class alignas(64) Process {
 public:
  const std::string& name() const { return name_; }
  bool done() const { return done_; }
  bool daemon() const { return daemon_; }
  /// True while the process is suspended in a wait (its wait id is odd).
  bool waiting() const { return (wait_id_ & 1) != 0; }
  /// What the process waits on now ("" while runnable), and since when.
  std::string_view waiting_on() const { return waiting() ? waiting_on_ : std::string_view{}; }
  std::uint64_t wait_address() const { return wait_address_; }
  Tick wait_since() const { return wait_since_; }
  /// True when the last wait ended by its timeout rather than a notify.
  bool timed_out() const { return timed_out_; }
  /// The id of the current wait (for Simulator::wake from outside its signal).
  /// Odd while waiting; every suspension and every resumption increments it,
  /// so an id names one wait and a wake-up for an ended wait is recognised.
  std::uint64_t wait_id() const { return wait_id_; }

 private:
  friend class Simulator;
  friend class Signal;
  friend struct detail::PromiseBase;
  // The fields every wait and wake touch come first (one cache line).
  Simulator* sim_ = nullptr;
  std::coroutine_handle<> resume_point_{};
  std::uint64_t wait_id_ = 0;
  std::string_view waiting_on_{};
  std::uint64_t wait_address_ = 0;
  Tick wait_since_ = 0;
  bool timed_out_ = false;
  bool daemon_ = false;
  bool done_ = false;
  std::coroutine_handle<> root_{};
  std::string name_;
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
  /// Number of events executed so far (the one running now included; a
  /// delay taken inline counts as the event it stands for).
  std::uint64_t events_executed() const { return current_tick_.taken() + delays_inline_; }
  /// Delays that ended without an event (see delay()); counted in events_executed().
  std::uint64_t delays_taken_inline() const { return delays_inline_; }
  /// Whether delay() may end a delay without an event (on by default; off,
  /// every delay is an event: for tests and measurements, results are equal).
  /// Takes effect at the next run().
  void set_inline_delays(bool on) { inline_delays_on_ = on; }
  /// The most delays that end inline, one after another, inside one event
  /// of the loop. Each goes on inside the coroutine that the event resumed:
  /// a process whose every delay ends inline (one thread alone, on a line it
  /// holds) would never return to the loop, and where the compiler does not
  /// make the symmetric transfers between tasks tail calls (sanitizer and
  /// unoptimised builds) each one takes stack. Past the bound the delay is an
  /// event, with the same results (one event per 256 delays at most).
  static constexpr std::uint32_t kMaxInlineChain = 256;

  /// Starts `task` as a top-level process at the current time. A daemon does
  /// not keep the run alive and is not reported as stuck when it waits.
  Process& spawn(std::string name, Task<void> task, bool daemon = false);

  /// Calls fn(ctx, arg) at time `at` (>= now).
  void schedule(Tick at, void (*fn)(void*, std::uint64_t), void* ctx, std::uint64_t arg = 0);

  /// Runs until every non-daemon process is done, the limit is reached, or
  /// stop() is called. Rethrows the first exception raised inside a process;
  /// throws WatchdogError when the run is stuck or livelocked.
  RunEnd run(const RunLimits& limits = {});
  /// Work in flight that a run must finish although no model process waits
  /// for it (stores still in a CPU's store buffer): run() does not end as
  /// all done while a hold is taken. Each hold_run() needs one release_run().
  void hold_run() { ++live_non_daemon_; }
  void release_run() {
    if (--live_non_daemon_ == 0) halt_check_ = true;
  }
  /// Makes run() return after the current event.
  void stop() {
    stop_requested_ = true;
    halt_check_ = true;
  }

  /// The process whose coroutine is running now (nullptr inside callbacks).
  Process* current() const { return current_; }
  /// Records that the model made progress (the watchdog's clock restarts).
  void note_progress() { last_progress_ = now_; }

  /// Calls `hook` every 2^k executed events (for a progress line); k >= 10.
  void set_progress_hook(std::function<void()> hook, int k = 16) {
    progress_hook_ = std::move(hook);
    progress_mask_ = (std::uint64_t{1} << k) - 1;
  }
  /// Workloads that know when they end say so, for "time left" estimates.
  void set_expected_end(Tick t) { expected_end_ = t; }
  Tick expected_end() const { return expected_end_; }

  /// The timeline tracer, or nullptr when tracing is off (the default).
  Tracer* tracer() const { return tracer_; }
  void set_tracer(Tracer* t) { tracer_ = t; }

  /// Optional: turns an address into "symbol+offset" for watchdog reports.
  void set_address_describer(std::function<std::string(std::uint64_t)> f) {
    describe_address_ = std::move(f);
  }
  /// One line per live process: name, state, what it waits on, since when.
  std::string describe_processes() const;

  /// What a process in delay() waits on, as the watchdog's report shows it.
  static constexpr std::string_view kDelayWait = "delay";
  /// Awaitable: suspends the calling process for `d` picoseconds.
  ///
  /// When the delay's end would be the very next event the run executes (no
  /// other event at or before it, and nothing for the run loop to do first),
  /// the process is not suspended: time moves to the end and it goes on, as
  /// if its wake-up event had run (it is counted as one). The order of every
  /// event and every result are those of the suspended path.
  /// (Always inline: its callers are coroutines, whose registers are saved
  /// at every resumption anyway; the call saved and restored six more
  /// registers.)
  [[gnu::always_inline]] auto delay(Tick d) {
    // The wait is recorded and its timeout scheduled here, so that the
    // awaiter the coroutine frame keeps is one pointer (nullptr when the
    // delay was taken inline).
    struct Awaiter {
      Process* p;
      bool await_ready() const noexcept { return p == nullptr; }
      void await_suspend(std::coroutine_handle<> h) const noexcept { enter_wait(p, h); }
      void await_resume() const noexcept {}
    };
    Process* p = record_wait(kDelayWait, 0);
    const Tick at = now_ + d;
    if (at < now_) [[unlikely]]
      schedule_in_past(at);  // wrapped around
    const Event timeout{at, &Simulator::timeout_event, p, p->wait_id_ + 1};
    // It is the next event when the current tick has no other and the
    // future queue none at or before `at`, and the loop has nothing to do
    // before it (may_end_delay_inline). The slot of `at` answers the second
    // test, conservatively (a queued event in the same slot, even a later
    // one, sends the delay the event's way: same results), and is where the
    // event goes otherwise.
    if (at != future_.base()) [[likely]] {  // base <= now_ <= at: later than the queue's base
      const unsigned slot = future_.slot_of(at);
      if (current_tick_.empty() && future_.all_after_slot(slot) && may_end_delay_inline(at)) {
        take_delay_inline(p, at);
        return Awaiter{nullptr};
      }
      future_.push(slot, timeout);
      return Awaiter{p};
    }
    // A zero delay at the queue's base: every queued time is later.
    if (current_tick_.empty() && may_end_delay_inline(at)) {
      take_delay_inline(p, at);
      return Awaiter{nullptr};
    }
    current_tick_.push_back(timeout);
    return Awaiter{p};
  }

  // --- for wait primitives (Signal and model awaitables) -------------------
  /// Suspends the current process at `h`; it resumes by wake() with the
  /// returned id, or at `deadline` (if not kNever) with timed_out() set.
  std::uint64_t suspend_current(std::coroutine_handle<> h, std::string_view what,
                                std::uint64_t address, Tick deadline = kNever);
  /// suspend_current in two halves, for awaitables that keep little state:
  /// record_wait, when the awaitable is made, records what the current
  /// process will wait on and arms the deadline (the wait's id will be
  /// wait_id() + 1); enter_wait, in await_suspend, suspends it at `h` and
  /// returns the id. Nothing may be awaited or scheduled in between.
  Process* record_wait(std::string_view what, std::uint64_t address, Tick deadline = kNever);
  static std::uint64_t enter_wait(Process* p, std::coroutine_handle<> h) {
    p->resume_point_ = h;
    return ++p->wait_id_;
  }
  /// Resumes process p (at now) if it still waits with this id.
  void wake(Process* p, std::uint64_t wait_id);

 private:
  // The event queue. Events run in (time, scheduling order): those at the
  // queue's base tick in current_tick_, in the order they were scheduled,
  // later ones in future_, which hands over one tick at a time when
  // current_tick_ is drained. While events run the base is now_, except
  // after a delay ended inline moved now_ on: the base stays behind until
  // the loop next takes a tick from future_, and events for now_ go to
  // future_ (in order; the loop takes them as the rest of the tick).
  using Event = detail::Event;
  friend struct detail::PromiseBase;
  friend class Signal;
  static void resume_event(void* ctx, std::uint64_t arg);
  /// Resumes p if it still waits with this id (else the wake-up is stale).
  void resume(Process* p, std::uint64_t wait_id);
  static void timeout_event(void* ctx, std::uint64_t arg);
  void process_done(Process* p, std::exception_ptr error);
  /// Schedules p's resumption now for a wait id known to be current.
  /// (While events run, the queue's base is nearly always now_: the wake-up
  /// goes straight to current_tick_.)
  [[gnu::always_inline]] void wake_current_wait(Process* p, std::uint64_t wait_id) {
    if (future_.base() == now_) [[likely]]
      current_tick_.push_back(Event{now_, &Simulator::resume_event, p, wait_id});
    else
      schedule(now_, &Simulator::resume_event, p, wait_id);
  }
  /// Takes the first event of current_tick_ and runs it.
  void run_next_event();
  [[noreturn]] void schedule_in_past(Tick at) const;
  [[gnu::noinline]] void arm_timeout(Process* p, Tick deadline, std::uint64_t wait_id);
  [[noreturn]] void await_outside_process(std::string_view what) const;
  [[noreturn]] void watchdog_fail(const std::string& why) const;
  void reap_done_processes();
  /// With the queues holding no event at or before `at` (delay() tests
  /// them), true when an event at `at` scheduled now would be the next one
  /// run(), as it stands, executes, with no check of its own due before it:
  /// the run may go on (no stop, no end, no reaping due) up to `at`, the
  /// progress watchdog would not fire there, the next event is not one
  /// after which the loop runs its hook or livelock check, inline delays
  /// are on, and the chain since the loop's last event is shorter than
  /// kMaxInlineChain.
  bool may_end_delay_inline(Tick at) const {
    return inline_left_ != 0 && !halt_check_ && !reap_due_ && at < inline_end_ && events_executed() + 1 < check_at_ &&
           at - last_progress_ <= max_time_without_progress_;
  }
  /// The events from the next one on are a new tick's (for the livelock count).
  void start_tick() {
    tick_start_ = events_executed();
    check_at_ = std::min(tick_start_ + per_tick_, hook_at_);
  }
  /// Ends the current process's delay at `at` as its timeout event would:
  /// the wait id moves on by the wait and the resumption, and the event is
  /// counted, as the first of a new tick when time moves. The queue's base
  /// then stays behind now_: events scheduled for `at` go to future_, in
  /// order, and the loop takes them as the rest of that tick.
  void take_delay_inline(Process* p, Tick at) {
    p->wait_id_ += 2;
    p->timed_out_ = true;
    if (at != now_) {
      now_ = at;
      start_tick();
    }
    ++delays_inline_;
    --inline_left_;
  }

  Tick now_ = 0;
  // Events are counted by position in current_tick_ (the run loop does no
  // per-event count).
  detail::EventRing current_tick_;  // events at future_.base() (<= now_)
  detail::FutureEvents future_;     // events after it
  std::uint64_t delays_inline_ = 0;  // delays taken inline (each counts as an event)
  std::uint32_t inline_left_ = 0;    // delays that may still end inline in this event (the loop resets it)
  bool inline_delays_on_ = true;
  // The run loop's limits and event counts, as members so that a delay taken
  // inline keeps them as the loop would (see may_end_delay_inline).
  Tick inline_end_ = 0;  // delays end inline before this time (set by run(); processes run only inside it)
  Tick max_time_without_progress_ = kNever;
  std::uint64_t per_tick_ = 0;    // the livelock limit + 1
  std::uint64_t tick_start_ = 0;  // the count when the current tick began
  std::uint64_t hook_at_ = 0;     // the count after which the progress hook runs
  std::uint64_t check_at_ = 0;    // min(tick_start_ + per_tick_, hook_at_)
  std::vector<std::unique_ptr<Process>> processes_;
  std::vector<std::unique_ptr<Process>> free_processes_;  // reaped, for reuse by spawn
  std::size_t live_non_daemon_ = 0;
  bool non_daemon_spawned_ = false;
  std::size_t done_count_ = 0;
  bool reap_due_ = false;  // done processes to reap at the next tick
  Process* current_ = nullptr;
  bool stop_requested_ = false;
  // Set when stop is requested or the live count drops to zero: the run loop
  // then checks whether to end (one flag instead of two checks per event).
  bool halt_check_ = false;
  std::exception_ptr first_error_{};
  Tick last_progress_ = 0;
  std::function<std::string(std::uint64_t)> describe_address_;
  Tracer* tracer_ = nullptr;
  std::function<void()> progress_hook_;
  std::uint64_t progress_mask_ = 0;
  Tick expected_end_ = kNever;
};

/// A set of waiting processes, woken together: the building block of
/// event-driven spinning (a CPU waiting for a cache line to change).
class Signal {
 public:
  /// Awaitable: suspends the calling process until notify_all() (or until
  /// `deadline`; check Process::timed_out()).
  auto wait(Simulator& sim, std::string_view what, std::uint64_t address = 0, Tick deadline = kNever) {
    // The wait is recorded and the waiter added here, under the id the
    // suspension will give it (see Simulator::record_wait; nothing runs
    // between this call and the suspension of the co_await that makes it),
    // so that the awaiter the coroutine frame keeps is one pointer.
    struct Awaiter {
      Process* p;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) const noexcept { Simulator::enter_wait(p, h); }
      void await_resume() const noexcept {}
    };
    Process* p = sim.record_wait(what, address, deadline);
    add(p, p->wait_id_ + 1);
    return Awaiter{p};
  }
  /// Wakes every process waiting now (they run at the current time, in the
  /// order they started waiting). Returns how many were woken.
  std::size_t notify_all(Simulator& sim);
  /// Number of registered waiters (stale entries included).
  std::size_t waiter_count() const { return (first_.p != nullptr ? 1 : 0) + more_.size(); }

 private:
  void add(Process* p, std::uint64_t id);
  void prune();  // drops stale waiters from more_
  std::size_t notify_more(Simulator& sim);
  struct Waiter {
    Process* p;
    std::uint64_t id;
  };
  // The waiters in wait order: the first inline (most signals have one
  // waiter at a time), the others in more_, which is empty while first_ is.
  Waiter first_{nullptr, 0};
  detail::PodVec<Waiter> more_;
};

// --- hot paths, inline ------------------------------------------------------

inline void Simulator::schedule(Tick at, void (*fn)(void*, std::uint64_t), void* ctx, std::uint64_t arg) {
  if (at < now_) [[unlikely]]
    schedule_in_past(at);
  if (at == future_.base())  // base <= now_ <= at: the current tick
    current_tick_.push_back(Event{at, fn, ctx, arg});
  else
    future_.push(Event{at, fn, ctx, arg});
}

inline Process* Simulator::record_wait(std::string_view what, std::uint64_t address, Tick deadline) {
  Process* p = current_;
  if (p == nullptr) [[unlikely]]
    await_outside_process(what);
  p->timed_out_ = false;
  p->waiting_on_ = what;
  p->wait_address_ = address;
  p->wait_since_ = now_;
  if (deadline != kNever) [[unlikely]]
    arm_timeout(p, deadline, p->wait_id_ + 1);
  return p;
}

inline std::uint64_t Simulator::suspend_current(std::coroutine_handle<> h, std::string_view what,
                                                std::uint64_t address, Tick deadline) {
  return enter_wait(record_wait(what, address, deadline), h);
}

inline void Simulator::wake(Process* p, std::uint64_t wait_id) {
  if (p->wait_id_ == wait_id && (wait_id & 1) != 0) wake_current_wait(p, wait_id);
}

// Always inline: a few compares where the signal has one waiter or none
// (the compiler's own choice varies with the size of its callers).
[[gnu::always_inline]] inline std::size_t Signal::notify_all(Simulator& sim) {
  if (first_.p == nullptr) return 0;
  std::size_t n = 0;
  if (first_.p->wait_id_ == first_.id) {  // first_.id is a wait's (odd) id: still waiting
    sim.wake_current_wait(first_.p, first_.id);
    n = 1;
  }
  first_.p = nullptr;
  if (!more_.empty()) [[unlikely]]
    n += notify_more(sim);
  return n;
}

inline void Signal::add(Process* p, std::uint64_t id) {
  if (first_.p == nullptr) [[likely]] {
    first_ = {p, id};
    return;
  }
  if (more_.size() >= 64) [[unlikely]]
    prune();
  more_.push_back({p, id});
}

}  // namespace cohsim::sim
