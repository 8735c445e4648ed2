// Registration of workloads: one line per workload in models/registry.cpp.
#pragma once

#include <string>
#include <vector>

#include "cohsim/scenario/scenario.hpp"

namespace cohsim::models {

// The names every workload uses, declared once for all of them.
using config::Spec;
using scenario::Machine;
using scenario::Results;
using sim::Task;
using sim::Tick;

/// A workload parameter counted in core cycles (an integer), as the time it takes at the platform's clock.
inline Tick cycles_param(config::Reader& p, const Machine& m, std::string_view key, const Spec& spec) {
  return m.cpu_params().cycles(static_cast<double>(p.integer(key, spec)));
}

/// Collects workload factories by name.
struct WorkloadTable {
  std::map<std::string, scenario::WorkloadInfo>& table;
  void add(const std::string& name, const std::string& description, scenario::WorkloadFactory f,
           std::vector<scenario::HeadlineMetric> headline) {
    table[name] = scenario::WorkloadInfo{description, std::move(f), std::move(headline)};
  }
};

void register_c2c(WorkloadTable& t);
void register_atomic_counter(WorkloadTable& t);
void register_mem_latency(WorkloadTable& t);
void register_spinlock(WorkloadTable& t);
void register_aim7(WorkloadTable& t);
void register_dma_map_bench(WorkloadTable& t);
void register_ipi_bench(WorkloadTable& t);
void register_ipi_latency(WorkloadTable& t);
void register_locktorture(WorkloadTable& t);
void register_lock2(WorkloadTable& t);
void register_tlb_madvise(WorkloadTable& t);
void register_swap_mt(WorkloadTable& t);

}  // namespace cohsim::models
