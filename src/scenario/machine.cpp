#include "cohsim/scenario/machine.hpp"

#include <fmt/format.h>

namespace cohsim::scenario {

using config::Spec;

PlatformDoc load_platform(const std::string& path) { return PlatformDoc{config::load_json_file(path), path}; }

Machine::Machine(const PlatformDoc& platform, std::uint64_t seed, config::Registry& registry, config::json* schema)
    : platform_(platform),
      seed_(seed),
      registry_(registry),
      root_(&platform_.doc, platform_.file, "platform", &registry, /*sourced=*/true, schema) {
  name_ = root_.text("name", Spec{.doc = "short platform name"});
  root_.text("description", Spec{.doc = "what machine this is", .def = ""});
  topo_ = std::make_unique<topo::Topology>(root_.section("topology", "sockets, dies, clusters, cores, threads"));
  icn_ = std::make_unique<fabric::Interconnect>(
      root_.section("interconnect", "hop classes: latency and per-message occupancy"), *topo_, sim_);
  const fabric::FabricParams fp = read_fabric_params(root_);
  mem_ = std::make_unique<fabric::MemoryMap>(topo_->node_count(), fp.node_capacity);
  fabric_ = std::make_unique<fabric::Fabric>(fp, sim_, *icn_, *mem_, seed);
  // The HPET's section (the x86 clocksource hardware), read once at load for
  // every run, before the CPU's: a file with tsc_read still in it learns the new key.
  if (root_.has("hpet") || root_.schema_mode())
    hpet_params_.emplace(root_.section("hpet", "HPET device: the x86 clocksource hardware", /*optional=*/true));
  if (root_.has("uv_rtc") || root_.schema_mode()) {
    // Its reads go to the node controller of the reading CPU's socket group.
    if (!topo_->has_node_controllers() && !root_.schema_mode())
      throw config::ConfigError(platform_.file, "platform.uv_rtc",
                                "a hub RTC needs node controllers (topology.sockets_per_group below the socket "
                                "count): each CPU reads the hub of its socket's group");
    uv_rtc_params_.emplace(root_.section(
        "uv_rtc", "hub-local RTC of UV-class node controllers (the uv-rtc clocksource)", /*optional=*/true));
  }
  cpu_params_ = cpu::CpuParams(root_.section("cpu", "core clock, store buffer, barriers, atomics, interrupts"));
  cores_ = std::vector<cpu::Core>(static_cast<std::size_t>(topo_->core_count()));
  for (int c = 0; c < topo_->cpu_count(); ++c)
    cpus_.push_back(std::make_unique<cpu::Cpu>(c, cpu_params_, *fabric_, sim_,
                                               cores_[static_cast<std::size_t>(topo_->cpu(c).core_global)]));
  // The interrupt controller's section is read here, once, so that every run
  // validates it at load (an unread key stays an error) even when its
  // workload sends no interrupt; models that do build the GIC from it.
  if (root_.has("gic") || root_.schema_mode())
    gic_params_.emplace(root_.section("gic", "GICv3 interrupt controller: SGI routing and CPU-interface costs",
                                      /*optional=*/true),
                        *topo_);
  if (root_.has("apic") || root_.schema_mode())
    apic_params_.emplace(root_.section("apic", "x86 local APIC: mode, IPI send, delivery and EOI costs", /*optional=*/true),
                         *topo_);
  // Likewise the SMMU's section, read once at load for every run.
  if (root_.has("smmu") || root_.schema_mode())
    smmu_params_.emplace(root_.section("smmu", "SMMUv3: placement, command timing, driver CPU work", /*optional=*/true));
  sim_.set_address_describer([this](std::uint64_t a) { return mem_->describe(a); });
}

Machine::~Machine() = default;

namespace {
constexpr std::array<const char*, 5> kDeviceSectionNames = {"smmu", "hpet", "uv_rtc", "gic", "apic"};
}  // namespace

void Machine::unasked_after_seal(DeviceSection d) const {
  throw std::logic_error(fmt::format("a model asked for the platform's {} section after the run's models were "
                                     "built: ask for it in the workload's constructor (its values were marked as "
                                     "having no effect)",
                                     kDeviceSectionNames[static_cast<std::size_t>(d)]));
}

std::vector<std::string> Machine::device_sections_not_asked() const {
  std::vector<std::string> out;
  const std::array<std::pair<bool, const char*>, kDeviceSections> present = {{{smmu_params_.has_value(), kDeviceSectionNames[0]},
                                                                             {hpet_params_.has_value(), kDeviceSectionNames[1]},
                                                                             {uv_rtc_params_.has_value(), kDeviceSectionNames[2]},
                                                                             {gic_params_.has_value(), kDeviceSectionNames[3]},
                                                                             {apic_params_.has_value(), kDeviceSectionNames[4]}}};
  for (int d = 0; d < kDeviceSections; ++d)
    if (present[static_cast<std::size_t>(d)].first && !asked_[static_cast<std::size_t>(d)])
      out.emplace_back(present[static_cast<std::size_t>(d)].second);
  return out;
}

fabric::FabricParams read_fabric_params(config::Reader& root) {
  return fabric::FabricParams(root.section("caches", "cache levels"),
                              root.section("coherence", "directory and snoop costs, arbitration"),
                              root.section("memory", "DRAM and NUMA nodes"));
}

config::Reader Machine::platform_section(std::string_view key, std::string_view doc, bool optional) {
  return root_.section(key, doc, optional);
}

void Machine::check_platform_fully_read() const {
  config::check_all_read(platform_.doc, platform_.file, "platform", registry_);
}

}  // namespace cohsim::scenario
