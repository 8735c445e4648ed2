#include "cohsim/sim/simulator.hpp"

#include <algorithm>
#include <bit>
#include <fmt/format.h>

namespace cohsim::sim {

void detail::PromiseBase::on_root_done(Process* p, std::exception_ptr error) noexcept {
  p->sim_->process_done(p, error);
}

Simulator::Simulator() {
  cur_.reserve(1024);
  due_.reserve(1024);
}

Simulator::~Simulator() {
  // Destroy every frame still held: finished processes not yet reaped (they
  // rest at their final suspend point) and those a stopped run left waiting.
  for (auto& p : processes_)
    if (p->root_) p->root_.destroy();
}

Process& Simulator::spawn(std::string name, Task<void> task, bool daemon) {
  auto proc = std::make_unique<Process>();
  Process* p = proc.get();
  p->sim_ = this;
  p->name_ = std::move(name);
  p->daemon_ = daemon;
  auto h = task.release();
  h.promise().root_of = p;
  p->root_ = h;
  processes_.push_back(std::move(proc));
  if (!daemon) {
    ++live_non_daemon_;
    non_daemon_spawned_ = true;
  }
  // Start it at the current time, in scheduling order: its first wait (id 1).
  p->resume_point_ = h;
  p->wait_id_ = 1;
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
  if (!p->daemon_ && --live_non_daemon_ == 0) halt_check_ = true;
  if (error && !first_error_) {
    first_error_ = error;
    stop();
  }
}

[[gnu::always_inline]] inline void Simulator::run_batch(std::size_t limit) {
  // cur_ does not change while its events run (they schedule into due_), so
  // its storage and the index stay in registers; cur_head_ is stored before
  // each event so that events_executed() counts it.
  const Event* events = cur_.begin();
  std::size_t i = cur_head_;
  while (i < limit) {
    const Event& e = events[i];
    cur_head_ = ++i;
    // Process resumptions are nearly all events: call them directly (inlined)
    // rather than through the pointer.
    if (e.fn == &Simulator::resume_event) [[likely]]
      resume(static_cast<Process*>(e.ctx), e.arg);
    else if (e.fn == &Simulator::timeout_event)
      timeout_event(e.ctx, e.arg);
    else
      e.fn(e.ctx, e.arg);
    if (halt_check_) [[unlikely]]
      return;
  }
}

[[gnu::always_inline]] inline std::size_t Simulator::batch_limit(const RunLimits& limits, std::uint64_t tick_start) const {
  std::size_t limit = cur_.size();
  const std::size_t left = limit - cur_head_;
  const std::uint64_t executed = events_executed();
  // The watchdog fails after the event that makes this tick's count exceed
  // the maximum (the count never exceeds it here: that failed already).
  const std::uint64_t to_watchdog = limits.max_events_per_tick - (executed - tick_start);
  if (to_watchdog < left) limit = cur_head_ + static_cast<std::size_t>(to_watchdog) + 1;
  // The progress hook runs after the event whose count is a multiple of 2^k.
  if (progress_hook_) {
    const std::uint64_t to_hook = progress_mask_ + 1 - (executed & progress_mask_);
    if (to_hook < limit - cur_head_) limit = cur_head_ + static_cast<std::size_t>(to_hook);
  }
  return limit;
}

bool Simulator::advance(Tick until, Tick& next) {
  if (occupied_ == 0) return false;
  const int k = std::countr_zero(occupied_);
  detail::PodVec<Event>& bucket = buckets_[k];
  Tick m = bucket[0].at;
  Tick max = m;
  for (const Event& e : bucket) {
    m = std::min(m, e.at);
    max = std::max(max, e.at);
  }
  next = m;
  if (m > until) return false;
  base_ = m;
  occupied_ &= ~(std::uint64_t{1} << k);
  if (m == max) {  // one tick only: the whole bucket is due, in order (due_ is empty)
    due_.swap(bucket);
    return true;
  }
  // Redistribute relative to the new base. Every event of this bucket shares
  // the bits above k with m, so it lands in due_ or in a bucket below k.
  for (const Event& e : bucket) {
    if (e.at == m) {
      due_.push_back(e);
    } else {
      const int j = std::bit_width(e.at ^ m) - 1;
      buckets_[j].push_back(e);
      occupied_ |= std::uint64_t{1} << j;
    }
  }
  bucket.clear();
  return true;
}

void Simulator::reap_done_processes() {
  auto it = std::remove_if(processes_.begin(), processes_.end(), [](const auto& p) {
    if (!p->done_) return false;
    p->root_.destroy();
    return true;
  });
  processes_.erase(it, processes_.end());
  done_count_ = 0;
}

std::string Simulator::describe_processes() const {
  // The model's processes in full, then busy daemons (runnable or in a
  // delay: one may be the livelock); of the daemons waiting for work, as
  // they do by design, only the first few.
  constexpr std::size_t kWaitingDaemonsShown = 8;
  std::string out;
  std::size_t waiting_daemons = 0;
  for (bool daemon : {false, true})
    for (const auto& p : processes_) {
      if (p->done_ || p->daemon_ != daemon) continue;
      const bool idle = p->waiting() && p->waiting_on_ != kDelayWait;
      if (daemon && idle && ++waiting_daemons > kWaitingDaemonsShown) continue;
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
  if (waiting_daemons > kWaitingDaemonsShown)
    out += fmt::format("  ... and {} more daemons waiting for work\n", waiting_daemons - kWaitingDaemonsShown);
  return out;
}

void Simulator::watchdog_fail(const std::string& why) const {
  throw WatchdogError(fmt::format("watchdog: {} at t={}\n{}", why, format_time(now_), describe_processes()));
}

RunEnd Simulator::run(const RunLimits& limits) {
  stop_requested_ = false;
  halt_check_ = true;  // the run may be over before its first event
  std::uint64_t tick_start = events_executed();  // the count when this tick began (or the run)
  last_progress_ = now_;
  RunEnd end = RunEnd::queue_empty;
  for (;;) {
    // Checked before every event: run_batch returns after any event that
    // requested a stop or dropped the live count to zero.
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
    if (cur_head_ < cur_.size()) {
      run_batch(batch_limit(limits, tick_start));
      const std::uint64_t executed = events_executed();
      if ((executed & progress_mask_) == 0 && progress_hook_) [[unlikely]]
        progress_hook_();
      if (executed - tick_start > limits.max_events_per_tick) [[unlikely]]
        watchdog_fail(
            fmt::format("simulated time stopped advancing ({} events without time moving)", executed - tick_start));
    } else if (!due_.empty()) {
      // Everything in cur_ ran: the events scheduled meanwhile come next.
      events_before_cur_ += cur_head_;
      cur_.clear();
      cur_head_ = 0;
      cur_.swap(due_);
      continue;
    } else {
      Tick next = 0;
      if (!advance(limits.until, next)) {
        if (occupied_ == 0) {
          end = RunEnd::queue_empty;
        } else {
          now_ = limits.until;
          end = RunEnd::time_limit;
        }
        break;
      }
      now_ = next;
      tick_start = events_executed();
      if (limits.max_time_without_progress != kNever && now_ - last_progress_ > limits.max_time_without_progress)
        watchdog_fail(fmt::format("no progress for {}", format_time(now_ - last_progress_)));
      if (done_count_ > 64 && done_count_ * 2 > processes_.size()) reap_done_processes();
      continue;
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
