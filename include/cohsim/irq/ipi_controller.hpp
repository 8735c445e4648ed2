// What kernel code needs from an interrupt controller to send IPIs, whatever
// the architecture: send one vector to a set of CPUs through the irqchip
// driver's send path, and name the handler each vector runs.
//
// Implemented by irq::Gicv3 (arm64: gic_ipi_send_mask, SGIs 0..15) and
// irq::Apic (x86: the local APIC driver's send_IPI, vectors 32..255). Each
// controller also runs its architecture's interrupt entry code around the
// handler, end of interrupt included, because the two do it at different
// points: arm64 (GICv3 EOImode 1) drops the priority before the handler and
// deactivates after it; x86 sysvec handlers write the APIC EOI first.
#pragma once

#include <functional>
#include <vector>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/sim/task.hpp"

namespace cohsim::irq {

/// The kernel function an IPI vector runs on its target, once the controller took it.
using IpiHandler = std::function<sim::Task<void>(cpu::Cpu&)>;

/// An interrupt controller as the kernel's IPI code sees it.
class IpiController {
 public:
  virtual ~IpiController() = default;
  /// The irqchip driver's send path, barriers included: IPI `vector` from
  /// `source` to every CPU in `targets`. Returns when the source CPU may go on.
  virtual sim::Task<void> send_ipi(cpu::Cpu& source, const std::vector<int>& targets, int vector) = 0;
  /// The driver's send to every CPU but `source` (x86: the ICR shorthand);
  /// by default send_ipi to each of them.
  virtual sim::Task<void> send_ipi_allbutself(cpu::Cpu& source, int vector, int cpu_count) {
    std::vector<int> others;
    for (int c = 0; c < cpu_count; ++c)
      if (c != source.id()) others.push_back(c);
    co_await send_ipi(source, others, vector);
  }
  /// The handler of `vector` on every CPU.
  virtual void set_ipi_handler(int vector, IpiHandler handler) = 0;
};

}  // namespace cohsim::irq
