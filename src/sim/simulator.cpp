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
  // Start it at the current time, in scheduling order.
  p->resume_point_ = h;
  p->waiting_ = true;
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

void Simulator::resume_event(void* ctx, std::uint64_t arg) {
  auto* p = static_cast<Process*>(ctx);
  if (!p->waiting_ || p->wait_id_ != arg) return;  // stale wake-up
  p->waiting_ = false;
  p->waiting_on_ = {};
  ++p->wait_id_;
  Simulator* sim = p->sim_;
  Process* outer = sim->current_;
  sim->current_ = p;
  p->resume_point_.resume();
  sim->current_ = outer;
}

void Simulator::timeout_event(void* ctx, std::uint64_t arg) {
  auto* p = static_cast<Process*>(ctx);
  if (!p->waiting_ || p->wait_id_ != arg) return;
  p->timed_out_ = true;
  resume_event(ctx, arg);
}

void Simulator::process_done(Process* p, std::exception_ptr error) {
  p->done_ = true;
  p->waiting_ = false;
  ++done_count_;
  if (!p->daemon_) --live_non_daemon_;
  if (error && !first_error_) {
    first_error_ = error;
    stop_requested_ = true;
  }
}

inline void Simulator::run_event(void (*fn)(void*, std::uint64_t), void* ctx, std::uint64_t arg) {
  ++events_executed_;
  // Process resumptions are nearly all events: call them directly (inlined)
  // rather than through the pointer.
  if (fn == &Simulator::resume_event)
    resume_event(ctx, arg);
  else if (fn == &Simulator::timeout_event)
    timeout_event(ctx, arg);
  else
    fn(ctx, arg);
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
      const bool idle = p->waiting_ && p->waiting_on_ != kDelayWait;
      if (daemon && idle && ++waiting_daemons > kWaitingDaemonsShown) continue;
      out += fmt::format("  {}{}: ", p->name_, daemon ? " (daemon)" : "");
      if (p->waiting_) {
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
  std::uint64_t events_this_tick = 0;
  last_progress_ = now_;
  RunEnd end = RunEnd::queue_empty;
  for (;;) {
    if (stop_requested_) {
      end = RunEnd::stopped;
      break;
    }
    if (live_non_daemon_ == 0 && non_daemon_spawned_) {
      end = RunEnd::all_done;
      break;
    }
    if (cur_head_ < cur_.size()) {
      const Event& next = cur_[cur_head_++];
      run_event(next.fn, next.ctx, next.arg);
      if ((events_executed_ & progress_mask_) == 0 && progress_hook_) [[unlikely]]
        progress_hook_();
    } else if (!due_.empty()) {
      // Everything in cur_ ran: the events scheduled meanwhile come next.
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
      events_this_tick = 0;
      if (limits.max_time_without_progress != kNever && now_ - last_progress_ > limits.max_time_without_progress)
        watchdog_fail(fmt::format("no progress for {}", format_time(now_ - last_progress_)));
      if (done_count_ > 64 && done_count_ * 2 > processes_.size()) reap_done_processes();
      continue;
    }
    if (++events_this_tick > limits.max_events_per_tick) [[unlikely]]
      watchdog_fail(fmt::format("simulated time stopped advancing ({} events without time moving)", events_this_tick));
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
  waiters_.retain_if([](const Waiter& w) { return w.p->waiting_ && w.p->wait_id_ == w.id; });
}

}  // namespace cohsim::sim
