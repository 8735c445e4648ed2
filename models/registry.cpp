#include "models/registry.hpp"

namespace cohsim::scenario {

const std::map<std::string, WorkloadInfo>& workloads() {
  static const std::map<std::string, WorkloadInfo> table = [] {
    std::map<std::string, WorkloadInfo> t;
    models::WorkloadTable reg{t};
    models::register_c2c(reg);
    models::register_atomic_counter(reg);
    models::register_mem_latency(reg);
    models::register_spinlock(reg);
    models::register_aim7(reg);
    models::register_dma_map_bench(reg);
    models::register_ipi_bench(reg);
    models::register_ipi_latency(reg);
    models::register_locktorture(reg);
    models::register_lock2(reg);
    models::register_tlb_madvise(reg);
    models::register_swap_mt(reg);
    return t;
  }();
  return table;
}

}  // namespace cohsim::scenario
