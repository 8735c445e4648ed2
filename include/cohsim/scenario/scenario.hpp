// Scenarios: a platform, a workload with parameters, named variants, and the
// results a run produces. Loading applies the variant and --set overrides and
// validates everything before any simulated time passes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/scenario/machine.hpp"

namespace cohsim::scenario {

/// What a run reports: ordered flat metrics plus structured extras.
struct Results {
  std::vector<std::pair<std::string, double>> metrics;
  config::json extra = config::json::object();  ///< "contention", "phases", "per_cpu", ...
  /// Correctness failures the run detected (a lost IPI, a stale command read),
  /// one line each; when any, the metrics cover only the operations that completed.
  std::vector<std::string> failures;
  /// Adds a metric (names are unique; order is kept for output).
  void add(std::string name, double value) { metrics.emplace_back(std::move(name), value); }
  double get(const std::string& name) const;
  bool has(const std::string& name) const;
};

/// A workload: a kernel algorithm or benchmark run on a machine.
class Workload {
 public:
  virtual ~Workload() = default;
  /// Runs the simulation to the end and returns the metrics.
  virtual Results run() = 0;
};

/// Builds a workload: reads every parameter from `params` (at load) and
/// allocates its objects on `machine`.
using WorkloadFactory = std::function<std::unique_ptr<Workload>(config::Reader params, Machine& machine)>;

/// A metric a workload reports first (reports lead with it and plot it).
struct HeadlineMetric {
  std::string name;     ///< the metric's name in Results
  std::string unit;     ///< "ns", "ops/s", "ms", ...
  bool lower_is_better; ///< true for times, false for rates
};

/// Name -> factory, one-line description and headline metrics, filled by models/registry.cpp.
struct WorkloadInfo {
  std::string description;
  WorkloadFactory make;
  std::vector<HeadlineMetric> headline;  ///< in the order reports show them
};
const std::map<std::string, WorkloadInfo>& workloads();

/// A --set override: "platform.x.y" addresses the platform, anything else the params.
struct Override {
  std::string key;
  std::string value;
};
/// Parses "KEY=VALUE"; throws ConfigError on a malformed one.
Override parse_override(const std::string& text);
/// The --set key of a value's dotted path: a platform path as it is, a workload parameter
/// ("params.K") by its name K.
inline std::string override_key(const std::string& path) {
  return path.rfind("params.", 0) == 0 ? path.substr(7) : path;
}

/// A scenario file with one variant chosen and overrides applied.
struct LoadedScenario {
  std::string file;
  std::string description;
  std::string workload;
  std::string variant;                 ///< "" when the scenario has none
  std::vector<std::string> variants;   ///< in file order
  std::string baseline;                ///< the variant compare reports against
  config::json params;                 ///< after variant and --set
  PlatformDoc platform;
  std::uint64_t seed = 1;
  std::vector<Override> overrides;
  /// Each variant's settings as in the file: params names, or "platform.PATH" for a platform value.
  std::map<std::string, config::json> variant_settings;
  /// The file's "screen": the settings (as --set) of the short runs that compare's default sensitivity screen
  /// runs every input with; empty when the file has none.
  std::vector<Override> screen;
};
/// Loads SCENARIO, selects `variant` ("" = the default) and applies overrides;
/// a non-empty `platform_file` replaces the platform the scenario names.
LoadedScenario load_scenario(const std::string& path, const std::string& variant,
                             const std::vector<Override>& overrides, const std::string& platform_file = "");
/// A variant's setting that a --set key addresses.
struct VariantSetting {
  std::string variant;
  std::string key;     ///< as in the variant (may be a section or a member of the --set key)
  config::json value;  ///< as in the file
};
/// The settings of `s`'s variants that `key` (a --set key: a params name or platform.PATH) addresses.
std::vector<VariantSetting> variants_setting(const LoadedScenario& s, const std::string& key);

/// A scenario ready to run: machine and workload built, all input validated.
class Run {
 public:
  explicit Run(const LoadedScenario& s, std::uint64_t seed);
  ~Run();
  Results execute();
  Machine& machine() { return *machine_; }
  config::Registry& registry() { return registry_; }
  /// The parameters as used (defaults filled in), flat.
  config::json params_used() const;
  /// Values set (scenario file, variant or --set) that no model reads on this
  /// platform: a workload parameter the workload declares but did not read
  /// here (an arm64-only knob on x86), or a platform value a model marked
  /// unused. Path ("params.X", "platform.P") -> why; each is warned at load.
  const std::map<std::string, std::string>& unused_params() const { return unused_params_; }

 private:
  const LoadedScenario& s_;
  config::Registry registry_;
  std::unique_ptr<Machine> machine_;
  std::unique_ptr<Workload> workload_;
  std::map<std::string, std::string> unused_params_;
};

/// The keys of `s.params` that `reg` did not read but the workload declares
/// (its reads in schema mode, where every configuration's keys are declared).
std::vector<std::string> declared_but_unread_params(const LoadedScenario& s, const config::Registry& reg,
                                                    std::uint64_t seed);
/// Where `s` sets `key` (a params name or platform.PATH) beyond its file: "--set", "variant 'V'", or
/// empty (the scenario file, or a default).
std::string set_by(const LoadedScenario& s, const std::string& key);
/// Marks the values of every device section (SMMU, HPET, hub RTC, GIC, APIC) that `m` has and no model of
/// `workload` asked for as having no effect (the SMMU under an IPI benchmark). Call once the workload is built.
void mark_unasked_device_sections(const Machine& m, config::Registry& reg, const std::string& workload);
/// Why a workload parameter of `s` that its workload declares but did not read has no effect on `m`.
std::string unread_param_reason(const LoadedScenario& s, const Machine& m);

/// Appends the per-line contention report (top `n` lines, "contention") and
/// the per-link report (the `n` busiest links, "links": utilisation and
/// queueing over the whole simulated run) to results.
void add_contention_report(Results& r, Machine& m, std::size_t n = 10);

}  // namespace cohsim::scenario
