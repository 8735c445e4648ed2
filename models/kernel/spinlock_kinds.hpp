// Spinlocks other than the kernel's qspinlock, each a word at an address its
// owner placed, written as their sources read:
//   pthread_spin_lock  glibc nptl/pthread_spin_lock.c (2.28+, a 4-byte word):
//                      an exchange first, then relaxed loads until the word
//                      is 0 and a weak CAS 0 -> 1; unlock: store-release 0.
//   ticket_spin_lock   the arm64 ticket lock of Linux 4.x (arch/arm64/include/
//                      asm/spinlock.h before 4.19; x86's before 4.2 has the
//                      same shape): owner is the low halfword, next the high
//                      one; fetch-add on next, spin (WFE / PAUSE) with acquire
//                      loads until owner equals the ticket; unlock: owner + 1
//                      with release (STADDLH with LSE, else LDRH; STLRH).
#pragma once

#include "cohsim/cpu/cpu.hpp"

namespace cohsim::models::kernel {

using fabric::Addr;
using sim::Task;

/// pthread_spin_lock on the 4-byte word at `lock`.
Task<void> pthread_spin_lock(cpu::Cpu& c, Addr lock);
/// pthread_spin_unlock: atomic_store_release(lock, 0).
Task<void> pthread_spin_unlock(cpu::Cpu& c, Addr lock);
/// arch_spin_lock of the ticket lock at `lock` (a 4-byte {u16 owner, u16 next}).
Task<void> ticket_spin_lock(cpu::Cpu& c, Addr lock);
/// arch_spin_unlock of the ticket lock: the owner halfword advanced with release.
Task<void> ticket_spin_unlock(cpu::Cpu& c, Addr lock);

}  // namespace cohsim::models::kernel
