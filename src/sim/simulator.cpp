#include "cohsim/sim/simulator.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <fmt/format.h>

namespace cohsim::sim {

void detail::PromiseBase::on_root_done(Process* p, std::exception_ptr error) noexcept {
  p->sim_->process_done(p, error);
}

Simulator::Simulator() = default;

Simulator::~Simulator() {
  // Destroy every frame still held: finished processes not yet reaped (they
  // rest at their final suspend point) and those a stopped run left waiting.
  for (auto& p : processes_)
    if (p->root_) p->root_.destroy();
}

Process& Simulator::spawn(std::string name, Task<void> task, bool daemon) {
  if (!task.handle()) throw SimError(fmt::format("spawn of '{}': the task is done already (it has no coroutine)", name));
  std::unique_ptr<Process> proc;
  if (free_processes_.empty()) {
    proc = std::make_unique<Process>();
  } else {  // a reaped process's object, its wait ids going on from where they were
    proc = std::move(free_processes_.back());
    free_processes_.pop_back();
  }
  Process* p = proc.get();
  p->sim_ = this;
  p->name_ = std::move(name);
  p->daemon_ = daemon;
  p->done_ = false;
  p->timed_out_ = false;
  auto h = task.release();
  h.promise().root_of = p;
  p->root_ = h;
  processes_.push_back(std::move(proc));
  if (!daemon) {
    ++live_non_daemon_;
    non_daemon_spawned_ = true;
  }
  // Start it at the current time, in scheduling order: its first wait (a
  // new odd id: 1 for a new object; a reused one's ids never repeat, so a
  // stale event or signal entry of its earlier life is recognised as stale).
  p->resume_point_ = h;
  p->wait_id_ += 1;
  p->waiting_on_ = "start";
  p->wait_since_ = now_;
  schedule(now_, &Simulator::resume_event, p, p->wait_id_);
  return *p;
}

void Simulator::schedule_in_past(Tick at) const {
  throw SimError(fmt::format("event scheduled in the past: at {} while now is {}", at, now_));
}

void Simulator::arm_timeout(Process* p, Tick deadline, std::uint64_t wait_id) {
  schedule(deadline, &Simulator::timeout_event, p, wait_id);
}

void Simulator::await_outside_process(std::string_view what) const {
  throw SimError(fmt::format("'{}' awaited outside of any process", what));
}

// Only the run loop resumes processes, and never from inside one: current_
// is nullptr before and after.
inline void Simulator::resume(Process* p, std::uint64_t wait_id) {
  if (p->wait_id_ != wait_id) [[unlikely]]
    return;  // stale wake-up (wait_id is always a wait's odd id)
  p->wait_id_ = wait_id + 1;  // even: running
  current_ = p;
  p->resume_point_.resume();
  current_ = nullptr;
}

void Simulator::resume_event(void* ctx, std::uint64_t arg) {
  auto* p = static_cast<Process*>(ctx);
  p->sim_->resume(p, arg);
}

void Simulator::timeout_event(void* ctx, std::uint64_t arg) {
  auto* p = static_cast<Process*>(ctx);
  if (p->wait_id_ != arg) return;
  p->timed_out_ = true;
  resume_event(ctx, arg);
}

void Simulator::process_done(Process* p, std::exception_ptr error) {
  p->done_ = true;
  ++done_count_;
  // Reaped at the next tick, when they are many and most of the list.
  if (done_count_ > 64 && done_count_ * 2 > processes_.size()) reap_due_ = true;
  if (!p->daemon_ && --live_non_daemon_ == 0) halt_check_ = true;
  if (error && !first_error_) {
    first_error_ = error;
    stop();
  }
}

[[gnu::always_inline]] inline void Simulator::run_next_event() {
  // Process resumptions are nearly all events: call them directly (inlined)
  // rather than through the pointer.
  const Event& e = current_tick_.pop_front();
  // The event's slot may be reused once the call runs: read it before.
  const auto fn = e.fn;
  void* const ctx = e.ctx;
  const std::uint64_t arg = e.arg;
  // The next event's process and frame are likely out of the L1 cache (other
  // processes ran since it began to wait): start loading them now, while
  // this event runs.
  if (!current_tick_.empty()) {
    const Event& next = current_tick_.peek_front();
    if (next.fn == &Simulator::resume_event) {
      const auto* q = static_cast<const Process*>(next.ctx);
      __builtin_prefetch(q);
      __builtin_prefetch(q->resume_point_.address());
    }
  }
  if (fn == &Simulator::resume_event) [[likely]]
    resume(static_cast<Process*>(ctx), arg);
  else if (fn == &Simulator::timeout_event)
    timeout_event(ctx, arg);
  else
    fn(ctx, arg);
}

void detail::EventRing::grow(std::uint64_t n) {
  std::uint64_t slots = 2 * (mask_ + 1);
  while (slots < tail_ - head_ + n) slots *= 2;
  std::unique_ptr<Event[]> data(new Event[slots]);
  for (std::uint64_t i = head_; i != tail_; ++i) data[i & (slots - 1)] = data_[i & mask_];
  data_ = std::move(data);
  mask_ = slots - 1;
}

// Inlined into the run loop: it runs once per tick, often for one event.
[[gnu::always_inline]] inline bool detail::FutureEvents::take_earliest(Tick until, EventRing& out) {
  if (occupied_words_ == 0) return false;
  const unsigned i = earliest_slot();
  const unsigned w = i / 64;
  PodVec<Event>& slot = slots_[i];
  // A slot of level 0 holds one tick; one of a higher level may hold several.
  Tick earliest = slot[0].at;
  Tick latest = earliest;
  if (i >= kSlots && slot.size() > 1)
    for (const Event& e : slot) {
      earliest = std::min(earliest, e.at);
      latest = std::max(latest, e.at);
    }
  if (earliest > until) return false;
  base_ = earliest;
  slot_words_[w] &= slot_words_[w] - 1;  // i is its lowest bit
  if (slot_words_[w] == 0) occupied_words_ &= occupied_words_ - 1;
  if (slot.size() == 1) {
    out.push_back(slot[0]);
  } else if (earliest == latest) {
    out.append(slot.begin(), slot.end());
  } else {
    // The others share the slot's bytes from its level up with the new
    // base: each goes to a lower level, in order.
    for (const Event& e : slot) {
      if (e.at == earliest)
        out.push_back(e);
      else
        push(e);
    }
  }
  slot.clear();
  return true;
}

void Simulator::reap_done_processes() {
  // The objects are kept for reuse, not freed: a stale timeout or wake-up
  // event, or a signal's waiter entry, may still point to one (and then
  // finds a wait id that is not current).
  auto it = std::stable_partition(processes_.begin(), processes_.end(), [](const auto& p) { return !p->done_; });
  for (auto done = it; done != processes_.end(); ++done) {
    (*done)->root_.destroy();
    (*done)->root_ = {};
    free_processes_.push_back(std::move(*done));
  }
  processes_.erase(it, processes_.end());
  done_count_ = 0;
  reap_due_ = false;
}

std::string Simulator::describe_processes() const {
  // The model's processes: the first few dozen in full, then only those few
  // that wait on something no more than two others wait on (the odd one
  // out is often the stuck one); the rest are counted by what they wait on,
  // since a 1,792-CPU machine would print a line per CPU. Then busy daemons
  // (runnable or in a delay: one may be the livelock); of the daemons
  // waiting for work, as they do by design, only the first few.
  constexpr std::size_t kModelShown = 24;
  constexpr std::size_t kOddGroup = 3;
  constexpr std::size_t kWaitingDaemonsShown = 8;
  auto what = [](const Process& p) {
    if (!p.waiting()) return std::string("runnable");
    return p.wait_address_ != 0 ? fmt::format("waiting on {} at {:#x}", p.waiting_on_, p.wait_address_)
                                : fmt::format("waiting on {}", p.waiting_on_);
  };
  std::vector<std::string> waits_on(processes_.size());  // what(p) of each live model process
  std::map<std::string, std::size_t> group_size;
  for (std::size_t i = 0; i < processes_.size(); ++i)
    if (!processes_[i]->done_ && !processes_[i]->daemon_) ++group_size[waits_on[i] = what(*processes_[i])];
  std::string out;
  std::size_t model = 0, waiting_daemons = 0;
  std::vector<std::pair<std::string, std::size_t>> model_rest;  // what the unlisted wait on, how many
  for (bool daemon : {false, true}) {
    for (std::size_t i = 0; i < processes_.size(); ++i) {
      const auto& p = processes_[i];
      if (p->done_ || p->daemon_ != daemon) continue;
      const bool idle = p->waiting() && p->waiting_on_ != kDelayWait;
      if (daemon && idle && ++waiting_daemons > kWaitingDaemonsShown) continue;
      if (!daemon && ++model > kModelShown) {
        const std::string& w = waits_on[i];
        if (group_size[w] > kOddGroup) {
          auto it = std::find_if(model_rest.begin(), model_rest.end(), [&](const auto& e) { return e.first == w; });
          if (it == model_rest.end()) model_rest.emplace_back(w, 1);
          else ++it->second;
          continue;
        }
      }
      out += fmt::format("  {}{}: ", p->name_, daemon ? " (daemon)" : "");
      if (p->waiting()) {
        out += fmt::format("waits on {}", p->waiting_on_);
        if (p->wait_address_ != 0) {
          out += fmt::format(" at {:#x}", p->wait_address_);
          if (describe_address_) out += fmt::format(" ({})", describe_address_(p->wait_address_));
        }
        out += fmt::format(" since {} ({} ago)\n", format_time(p->wait_since_), format_time(now_ - p->wait_since_));
      } else {
        out += "runnable\n";
      }
    }
    if (!daemon && !model_rest.empty()) {
      std::size_t hidden = 0;
      std::string parts;
      for (const auto& [w, n] : model_rest) {
        parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, w);
        hidden += n;
      }
      out += fmt::format("  ... and {} more model processes: {}\n", hidden, parts);
    }
  }
  if (waiting_daemons > kWaitingDaemonsShown)
    out += fmt::format("  ... and {} more daemons waiting for work\n", waiting_daemons - kWaitingDaemonsShown);
  return out;
}

void Simulator::watchdog_fail(const std::string& why) const {
  throw WatchdogError(fmt::format("watchdog: {} at t={}\n{}", why, format_time(now_), describe_processes()));
}

RunEnd Simulator::run(const RunLimits& run_limits) {
  // A copy the loop can keep in registers (events may write through any reference).
  const RunLimits limits = run_limits;
  stop_requested_ = false;
  halt_check_ = true;  // the run may be over before its first event
  last_progress_ = now_;
  // The livelock watchdog fails after the event that makes a tick's count
  // exceed the maximum, at count tick_start_ + per_tick_ (no count reaches
  // 2^62: a larger maximum is no limit). The progress hook runs after every
  // event whose count is a multiple of 2^k, at hook_at_. The loop compares
  // the count with the nearer of the two, check_at_. (Members: a delay taken
  // inline starts a tick too, and is never the event at check_at_.)
  per_tick_ = std::min(limits.max_events_per_tick, std::uint64_t{1} << 62) + 1;
  hook_at_ = progress_hook_ ? (events_executed() | progress_mask_) + 1 : ~std::uint64_t{0};
  start_tick();  // (or the run)
  inline_end_ = !inline_delays_on_ ? 0 : limits.until == kNever ? kNever : limits.until + 1;
  max_time_without_progress_ = limits.max_time_without_progress;
  RunEnd end = RunEnd::queue_empty;
  for (;;) {
    // Checked before every event: an event that requests a stop or drops
    // the live count to zero sets the flag.
    if (halt_check_) [[unlikely]] {
      halt_check_ = false;
      if (stop_requested_) {
        end = RunEnd::stopped;
        break;
      }
      if (live_non_daemon_ == 0 && non_daemon_spawned_) {
        end = RunEnd::all_done;
        break;
      }
    }
    if (current_tick_.empty()) {
      if (!future_.take_earliest(limits.until, current_tick_)) {
        if (future_.empty()) {
          end = RunEnd::queue_empty;
        } else {
          now_ = limits.until;
          end = RunEnd::time_limit;
        }
        break;
      }
      // A new tick, unless a delay ended inline made the taken tick now_
      // already: its events are the rest of the current tick, which the
      // suspended path would have run from current_tick_ (no reap, no check).
      if (future_.base() != now_) {
        now_ = future_.base();
        start_tick();
        if (limits.max_time_without_progress != kNever && now_ - last_progress_ > limits.max_time_without_progress)
          watchdog_fail(fmt::format("no progress for {}", format_time(now_ - last_progress_)));
        if (reap_due_) [[unlikely]]
          reap_done_processes();
      }
    }
    inline_left_ = kMaxInlineChain;
    run_next_event();
    const std::uint64_t executed = events_executed();
    if (executed == check_at_) [[unlikely]] {
      if (executed == hook_at_) {
        progress_hook_();
        hook_at_ += progress_mask_ + 1;
      }
      if (executed - tick_start_ > limits.max_events_per_tick)
        watchdog_fail(
            fmt::format("simulated time stopped advancing ({} events without time moving)", executed - tick_start_));
      check_at_ = std::min(tick_start_ + per_tick_, hook_at_);
    }
  }
  if (first_error_) {
    auto e = first_error_;
    first_error_ = nullptr;
    std::rethrow_exception(e);
  }
  if (end == RunEnd::queue_empty && live_non_daemon_ > 0)
    watchdog_fail("deadlock: nothing left to wake the waiting processes");
  return end;
}

void Signal::prune() {
  more_.retain_if([](const Waiter& w) { return w.p->wait_id_ == w.id; });
}

std::size_t Signal::notify_more(Simulator& sim) {
  std::size_t n = 0;
  for (const Waiter& w : more_) {
    if (w.p->wait_id_ == w.id) {
      sim.wake_current_wait(w.p, w.id);
      ++n;
    }
  }
  more_.clear();
  return n;
}

}  // namespace cohsim::sim
