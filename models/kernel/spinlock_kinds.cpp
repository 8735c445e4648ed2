// pthread_spin_lock and the ticket lock (see spinlock_kinds.hpp).
#include "models/kernel/spinlock_kinds.hpp"

namespace cohsim::models::kernel {

using cpu::Order;
using fabric::RmwOp;

Task<void> pthread_spin_lock(cpu::Cpu& c, Addr lock) {
  // atomic_exchange_acquire(lock, 1): the first try.
  std::uint64_t old = co_await c.rmw(lock, 4, RmwOp::swap, 1, 0, Order::acquire);
  while (old != 0) {
    // Relaxed loads until the lock looks free, then a CAS (not an exchange).
    co_await c.spin_until(lock, 4, [](std::uint64_t v) { return v == 0; }, Order::relaxed, "pthread spinlock");
    old = co_await c.cmpxchg(lock, 4, 0, 1, Order::acquire);
  }
}

Task<void> pthread_spin_unlock(cpu::Cpu& c, Addr lock) { co_await c.store(lock, 4, 0, Order::release); }

Task<void> ticket_spin_lock(cpu::Cpu& c, Addr lock) {
  // LDADDA (or an LDAXR/STXR loop) of 1 << 16: take a ticket.
  const std::uint64_t old = co_await c.rmw(lock, 4, RmwOp::add, 1u << 16, 0, Order::acquire);
  const std::uint64_t ticket = old >> 16;
  if ((old & 0xffff) == ticket) co_return;
  co_await c.spin_until(lock, 2, [ticket](std::uint64_t owner) { return owner == ticket; }, Order::acquire,
                        "ticket lock owner");
}

Task<void> ticket_spin_unlock(cpu::Cpu& c, Addr lock) {
  if (c.is_arm() && c.params().lse) {
    co_await c.rmw(lock, 2, RmwOp::add, 1, 0, Order::release);  // STADDLH
    co_return;
  }
  const std::uint64_t owner = co_await c.load(lock, 2);
  co_await c.store(lock, 2, (owner + 1) & 0xffff, Order::release);
}

}  // namespace cohsim::models::kernel
