// Task<T>: a lazily started C++20 coroutine that can co_await other tasks.
//
// A kernel function modelled as `Task<int> llist_add(Cpu&, ...)` is awaited
// by its caller with `co_await llist_add(cpu, ...)`; control passes by
// symmetric transfer, so deep call chains cost no stack and no events.
// An exception thrown inside a task propagates to its awaiter; a top-level
// task's exception is kept by the Simulator and rethrown from run().
#pragma once

#include <algorithm>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <optional>
#include <utility>
#include <type_traits>

namespace cohsim::sim {

class Process;

#if defined(__SANITIZE_ADDRESS__)
#define COHSIM_PLAIN_FRAMES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COHSIM_PLAIN_FRAMES 1
#endif
#endif

namespace detail {

/// Coroutine frames come from per-size free lists (64-byte classes up to
/// 4 KiB, per thread): a simulation creates and ends millions of them, and
/// the general allocator was a tenth of the host time. So do other objects
/// made and dropped per access (a cache entry, a load's future: PoolAllocator
/// and class operators new). Sanitizer builds use the plain allocator so that
/// a use after free is still caught.
class FramePool {
 public:
  static void* allocate(std::size_t n) {
#if defined(COHSIM_PLAIN_FRAMES)
    return ::operator new(n);
#else
    const std::size_t c = class_of(n);
    if (c >= kClasses) return ::operator new(n);
    FreeFrame*& head = heads()[c];
    if (head == nullptr) [[unlikely]]
      refill(c);
    FreeFrame* f = head;
    head = f->next;
    return f;
#endif
  }
  static void release(void* p, std::size_t n) noexcept {
#if defined(COHSIM_PLAIN_FRAMES)
    ::operator delete(p);
#else
    const std::size_t c = class_of(n);
    if (c >= kClasses) {
      ::operator delete(p);
      return;
    }
    auto* f = static_cast<FreeFrame*>(p);
    f->next = heads()[c];
    heads()[c] = f;
#endif
  }

 private:
  struct FreeFrame {
    FreeFrame* next;
  };
  static constexpr std::size_t kGrain = 64, kClasses = 64;
  static std::size_t class_of(std::size_t n) { return (n + kGrain - 1) / kGrain - 1; }
  /// Puts new blocks of class c on its list: a slab of about 4 KiB (one
  /// block, for blocks above 2 KiB) on a 64-byte boundary, so that a block
  /// spans no more cache lines than its size needs (the allocator's 16-byte
  /// alignment put most frames across one more line). Slabs are kept for
  /// the thread's life, as freed blocks are.
  [[gnu::noinline]] static void refill(std::size_t c) {
    const std::size_t block = (c + 1) * kGrain, count = std::max<std::size_t>(1, 4096 / block);
    auto* slab = static_cast<char*>(::operator new(block * count, std::align_val_t{kGrain}));
    FreeFrame*& head = heads()[c];
    for (std::size_t i = count; i-- > 0;) {
      auto* f = reinterpret_cast<FreeFrame*>(slab + i * block);
      f->next = head;
      head = f;
    }
  }
  static FreeFrame** heads() {
    thread_local FreeFrame* lists[kClasses] = {};
    return lists;
  }
};

/// An allocator from the frame pool, for std::allocate_shared of objects
/// made per access.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(FramePool::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { FramePool::release(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

/// What every task promise holds: who awaits it, the process it is the root
/// of (if any), and a stored exception.
struct PromiseBase {
  std::coroutine_handle<> continuation{};
  Process* root_of = nullptr;
  std::exception_ptr error{};

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      auto& p = h.promise();
      if (p.continuation) return p.continuation;
      if (p.root_of) on_root_done(p.root_of, p.error);
      return std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  static void* operator new(std::size_t n) { return FramePool::allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { FramePool::release(p, n); }

  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }

  /// Defined in simulator.cpp: records completion of a top-level process.
  static void on_root_done(Process* p, std::exception_ptr error) noexcept;
};

}  // namespace detail

namespace detail {
/// The part of a promise that depends on the result type.
template <class T>
struct ValuePromise : PromiseBase {
  std::optional<T> value;
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() { return std::move(*value); }
};
template <>
struct ValuePromise<void> : PromiseBase {
  void return_void() const noexcept {}
  void take() const noexcept {}
};
}  // namespace detail

/// A coroutine returning T, started when first awaited (or spawned). A
/// Task<void> may also be done() already, without a coroutine: a function
/// whose usual case has nothing to wait for returns that and costs no frame.
template <class T = void>
class [[nodiscard]] Task {
 public:
  struct promise_type : detail::ValuePromise<T> {
    Task get_return_object() {
      return Task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
  };

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  Task(Task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(o.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  /// A Task<void> that is complete: awaiting it goes on at once.
  static Task done()
    requires std::is_void_v<T>
  {
    return Task();
  }

  /// Only a done() task has no coroutine (a moved-from one is not awaited).
  bool await_ready() const noexcept {
    if constexpr (std::is_void_v<T>) return !handle_;
    return false;
  }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    handle_.promise().continuation = awaiter;
    return handle_;
  }
  T await_resume() {
    if constexpr (std::is_void_v<T>)
      if (!handle_) return;
    auto& p = handle_.promise();
    if (p.error) std::rethrow_exception(p.error);
    return p.take();
  }

  std::coroutine_handle<promise_type> handle() const { return handle_; }
  std::coroutine_handle<promise_type> release() { return std::exchange(handle_, {}); }

 private:
  std::coroutine_handle<promise_type> handle_{};
};

}  // namespace cohsim::sim
