// A machine built from a platform file: simulator, topology, interconnect,
// memory, coherence fabric and CPUs. Models add their own sections
// (interrupt controller, devices) by reading them from `platform()`.
#pragma once

#include <array>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/devices/hpet.hpp"
#include "cohsim/devices/smmu.hpp"
#include "cohsim/devices/uv_rtc.hpp"
#include "cohsim/fabric/fabric.hpp"
#include "cohsim/fabric/interconnect.hpp"
#include "cohsim/fabric/memory_map.hpp"
#include "cohsim/irq/apic.hpp"
#include "cohsim/irq/gicv3.hpp"
#include "cohsim/sim/simulator.hpp"
#include "cohsim/topo/topology.hpp"

namespace cohsim::scenario {

/// A platform document: its JSON (includes resolved, overrides applied) and file name.
struct PlatformDoc {
  config::json doc;
  std::string file;
};
/// Loads a platform file (throws ConfigError).
PlatformDoc load_platform(const std::string& path);
/// The fabric's parameters from a platform's root ("caches", "coherence",
/// "memory"; throws ConfigError): what a Machine reads for its fabric.
fabric::FabricParams read_fabric_params(config::Reader& root);

class Machine {
 public:
  /// Builds everything the platform's core sections describe.
  /// With `schema`, every declaration read is also recorded as JSON Schema.
  Machine(const PlatformDoc& platform, std::uint64_t seed, config::Registry& registry,
          config::json* schema = nullptr);
  ~Machine();

  /// A reader for a platform section that a model owns ("gic", "hpet"...).
  config::Reader platform_section(std::string_view key, std::string_view doc, bool optional = false);
  /// Fails the load if some key of the platform file was never read.
  void check_platform_fully_read() const;

  const std::string& name() const { return name_; }
  std::uint64_t seed() const { return seed_; }
  sim::Simulator& sim() { return sim_; }
  const topo::Topology& topology() const { return *topo_; }
  fabric::Interconnect& interconnect() { return *icn_; }
  fabric::MemoryMap& memory() { return *mem_; }
  fabric::Fabric& fabric() { return *fabric_; }
  cpu::Cpu& cpu(int n) { return *cpus_.at(static_cast<std::size_t>(n)); }
  const cpu::Cpu& cpu(int n) const { return *cpus_.at(static_cast<std::size_t>(n)); }
  int cpu_count() const { return topo_->cpu_count(); }
  const cpu::CpuParams& cpu_params() const { return cpu_params_; }
  const PlatformDoc& platform() const { return platform_; }
  config::Registry& registry() { return registry_; }
  // The device sections, each built into its model only by a workload that
  // uses the device: asking for one records that the run's models read it.
  /// The platform's "smmu" section (SMMUv3), nullptr when it has none.
  const devices::SmmuParams* smmu_params() const { return asked(kSmmu, smmu_params_); }
  /// The platform's "hpet" section (HPET and TSC clocksources), nullptr when it has none.
  const devices::HpetParams* hpet_params() const { return asked(kHpet, hpet_params_); }
  /// The platform's "uv_rtc" section (the node controllers' hub RTC), nullptr when it has none.
  const devices::UvRtcParams* uv_rtc_params() const { return asked(kUvRtc, uv_rtc_params_); }
  /// The platform's "gic" section (arm64 interrupt controller), nullptr when it has none.
  const irq::GicParams* gic_params() const { return asked(kGic, gic_params_); }
  /// The platform's "apic" section (x86 local APIC), nullptr when it has none.
  const irq::ApicParams* apic_params() const { return asked(kApic, apic_params_); }
  /// The device sections the platform has that no model asked for (above) since the machine was built:
  /// no model of the run reads their values ("smmu", "hpet", "uv_rtc", "gic", "apic").
  std::vector<std::string> device_sections_not_asked() const;
  /// After the run's models are built: a section not asked for by then has been marked as having no effect,
  /// so a model that asks for it later (in its run) fails instead of being silently left out of sensitivity.
  void seal_device_sections() const { sealed_ = true; }

 private:
  PlatformDoc platform_;
  std::uint64_t seed_;
  config::Registry& registry_;
  config::Reader root_;
  std::string name_;
  sim::Simulator sim_;
  std::unique_ptr<topo::Topology> topo_;
  std::unique_ptr<fabric::Interconnect> icn_;
  std::unique_ptr<fabric::MemoryMap> mem_;
  std::unique_ptr<fabric::Fabric> fabric_;
  cpu::CpuParams cpu_params_;
  std::vector<cpu::Core> cores_;  ///< one per physical core, sized once (the CPUs point into it)
  std::vector<std::unique_ptr<cpu::Cpu>> cpus_;
  std::optional<devices::SmmuParams> smmu_params_;
  std::optional<devices::HpetParams> hpet_params_;
  std::optional<devices::UvRtcParams> uv_rtc_params_;
  std::optional<irq::GicParams> gic_params_;
  std::optional<irq::ApicParams> apic_params_;
  enum DeviceSection { kSmmu, kHpet, kUvRtc, kGic, kApic, kDeviceSections };
  mutable std::array<bool, kDeviceSections> asked_{};  ///< a model asked for the section
  mutable bool sealed_ = false;  ///< the unasked sections were marked unused: asking for one now is a model bug
  template <class P>
  const P* asked(DeviceSection d, const std::optional<P>& params) const {
    if (sealed_ && !asked_[d] && params) unasked_after_seal(d);
    asked_[d] = true;
    return params ? &*params : nullptr;
  }
  [[noreturn]] void unasked_after_seal(DeviceSection d) const;
};

}  // namespace cohsim::scenario
