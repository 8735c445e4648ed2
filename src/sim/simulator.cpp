#include "cohsim/sim/simulator.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace cohsim::sim {

void detail::PromiseBase::on_root_done(Process* p, std::exception_ptr error) noexcept {
  p->sim_->process_done(p, error);
}

Simulator::Simulator() { heap_.reserve(1024); }

Simulator::~Simulator() {
  // Destroy frames of processes that never finished (a stopped run).
  for (auto& p : processes_)
    if (p->root_ && !p->done_) p->root_.destroy();
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

void Simulator::schedule(Tick at, void (*fn)(void*, std::uint64_t), void* ctx, std::uint64_t arg) {
  if (at < now_)
    throw SimError(fmt::format("event scheduled in the past: at {} while now is {}", at, now_));
  Event e{at, seq_++, fn, ctx, arg};
  if (at == now_) {
    fifo_.push_back(e);
  } else {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
}

std::uint64_t Simulator::suspend_current(std::coroutine_handle<> h, std::string_view what,
                                         std::uint64_t address, Tick deadline) {
  Process* p = current_;
  if (p == nullptr) throw SimError(fmt::format("'{}' awaited outside of any process", what));
  p->resume_point_ = h;
  p->waiting_ = true;
  p->timed_out_ = false;
  p->waiting_on_ = what;
  p->wait_address_ = address;
  p->wait_since_ = now_;
  std::uint64_t id = ++p->wait_id_;
  if (deadline != kNever) schedule(deadline, &Simulator::timeout_event, p, id);
  return id;
}

void Simulator::wake(Process* p, std::uint64_t wait_id) {
  if (p->waiting_ && p->wait_id_ == wait_id) schedule(now_, &Simulator::resume_event, p, wait_id);
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

void Simulator::run_event(const Event& e) {
  ++events_executed_;
  e.fn(e.ctx, e.arg);
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
  std::string out;
  for (const auto& p : processes_) {
    if (p->done_) continue;
    out += fmt::format("  {}{}: ", p->name_, p->daemon_ ? " (daemon)" : "");
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
    if (!heap_.empty() && heap_.front().at == now_) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      Event e = heap_.back();
      heap_.pop_back();
      run_event(e);
    } else if (fifo_head_ < fifo_.size()) {
      Event e = fifo_[fifo_head_++];
      if (fifo_head_ == fifo_.size()) {
        fifo_.clear();
        fifo_head_ = 0;
      }
      run_event(e);
    } else if (!heap_.empty()) {
      Tick next = heap_.front().at;
      if (next > limits.until) {
        now_ = limits.until;
        end = RunEnd::time_limit;
        break;
      }
      now_ = next;
      events_this_tick = 0;
      if (limits.max_time_without_progress != kNever && now_ - last_progress_ > limits.max_time_without_progress)
        watchdog_fail(fmt::format("no progress for {}", format_time(now_ - last_progress_)));
      if (done_count_ > 64 && done_count_ * 2 > processes_.size()) reap_done_processes();
      continue;
    } else {
      end = RunEnd::queue_empty;
      break;
    }
    if (++events_this_tick > limits.max_events_per_tick)
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

std::size_t Signal::notify_all(Simulator& sim) {
  std::size_t n = 0;
  for (const Waiter& w : waiters_) {
    if (w.p->waiting_ && w.p->wait_id_ == w.id) {
      sim.wake(w.p, w.id);
      ++n;
    }
  }
  waiters_.clear();
  return n;
}

void Signal::add(Process* p, std::uint64_t id) {
  if (waiters_.size() >= 64) {
    std::erase_if(waiters_, [](const Waiter& w) { return !w.p->waiting_ || w.p->wait_id_ != w.id; });
  }
  waiters_.push_back({p, id});
}

}  // namespace cohsim::sim
