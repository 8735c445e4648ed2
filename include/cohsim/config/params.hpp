// Parameters declared once, next to the model that reads them.
//
// A model reads its configuration through a Reader: each call names a key,
// its kind, unit, range, default and description. The same calls, run in
// schema mode, export the JSON Schema users see, so the declarations are
// never written twice. Every key read is recorded; after load, a key nobody
// read is an error. In platform files every number carries its source:
//   "latency": {"value": "34ns", "source": "calibration: kp920.c2c.same-cluster"}
//   "wake":    {"value": "600ns", "source": "estimate: WFI exit ...", "range": ["300ns", "900ns"]}
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cohsim/sim/time.hpp"

namespace cohsim::config {

using nlohmann::json;

/// Bad input: names the file, the JSON path, the value and the rule. Exit 2.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& file, const std::string& path, const std::string& message);
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  /// The message without the file and path.
  const std::string& message() const { return message_; }

 private:
  std::string file_, path_, message_;
};

/// How a value is written in a config file.
enum class Kind { time, frequency, size, integer, number, boolean, choice, text, cpu_list, object };

/// The declaration of one parameter.
struct Spec {
  std::string_view doc;              ///< one-line description
  std::optional<json> def = {};      ///< default in config notation; absent = required
  std::optional<double> min = {};    ///< in base units (ps, Hz, bytes, plain)
  std::optional<double> max = {};
  std::vector<std::string> choices = {};  ///< for Kind::choice
  /// A workload estimate's plausible [low, high] in config notation (its doc
  /// says "estimate: ..."); empty for every other parameter.
  std::vector<json> estimate_range = {};
};

/// Where an uncertain number comes from: a platform number as written in
/// the file, or a workload parameter declared with an estimate_range.
struct Provenance {
  std::string path;    ///< dotted path, e.g. "platform.interconnect.die.latency"
  std::string value;   ///< as written
  std::string source;  ///< "calibration: ...", "datasheet: ...", "estimate: ..."
  bool estimate = false;
  bool workload = false;       ///< a workload parameter ("params.X"), not a platform number
  json range_low, range_high;  ///< for estimates, in config notation
  /// For a structural choice: the other mechanisms that are plausible (sensitivity runs each), as written
  /// under "alternatives"; empty for numbers and for choices without them.
  std::vector<std::string> alternatives;
  bool choice = false;  ///< a mechanism (a choice of names), not a number: only its alternatives are varied
  std::optional<double> min, max;  ///< the declared bounds, in base units (ps, Hz, bytes, plain)
  /// Why the value has no effect in this configuration (a what-if parameter
  /// of a mechanism the platform does not use); empty when it is used.
  /// Sensitivity does not vary such a value; `topo` and `params` say why.
  std::string unused_because;
  /// The calibration rows this value was fitted to: the row ids (names of
  /// the form a.b.c) its "calibration: ..." source names; empty otherwise.
  std::vector<std::string> calibration_rows() const;
};

/// Shared state of one load: what was read, provenance, schema mode.
class Registry {
 public:
  explicit Registry(bool schema_mode = false) : schema_mode_(schema_mode) {}
  bool schema_mode() const { return schema_mode_; }
  void mark_read(const std::string& path) { read_.insert(path); }
  bool was_read(const std::string& path) const { return read_.count(path) != 0; }
  void add_provenance(Provenance p) { provenance_.push_back(std::move(p)); }
  /// Marks the value read at `path` as having no effect here (Provenance::unused_because).
  void mark_unused(const std::string& path, std::string why);
  /// Marks every value read under `prefix` (e.g. "platform.smmu.") that has no reason yet as having no effect.
  void mark_unused_under(const std::string& prefix, const std::string& why);
  /// Every value marked as having no effect, by path, with why: those with a provenance entry (sourced
  /// values) and those without (a workload parameter the file leaves at its default or a --set gives).
  const std::map<std::string, std::string>& unused() const { return unused_; }
  const std::vector<Provenance>& provenance() const { return provenance_; }
  /// Every value read, defaults included, by dotted path.
  std::map<std::string, json> used;
  /// Paths overridden with --set, so errors can say so.
  std::set<std::string> overridden;

 private:
  bool schema_mode_;
  std::set<std::string> read_;
  std::map<std::string, std::string> unused_;
  std::vector<Provenance> provenance_;
};

/// Reads one JSON object of a config file, key by key.
class Reader {
 public:
  /// `root_path` prefixes every path ("platform", "params"); `sourced`
  /// demands {value, source} objects for numbers (platform files).
  Reader(const json* object, std::string file, std::string root_path, Registry* registry, bool sourced,
         json* schema = nullptr);

  sim::Tick time(std::string_view key, const Spec& s);
  double frequency(std::string_view key, const Spec& s);
  std::uint64_t size(std::string_view key, const Spec& s);
  std::int64_t integer(std::string_view key, const Spec& s);
  double number(std::string_view key, const Spec& s);
  bool boolean(std::string_view key, const Spec& s);
  std::string choice(std::string_view key, const Spec& s);
  std::string text(std::string_view key, const Spec& s);
  /// A CPU list: a count N (CPUs 0..N-1), "0,1,24-27", or [0, 1, 24].
  /// Every CPU must be below `cpu_count`.
  std::vector<int> cpu_list(std::string_view key, const Spec& s, int cpu_count);
  /// A nested object; `optional` sections may be absent (then reads give defaults).
  Reader section(std::string_view key, std::string_view doc, bool optional = false);
  /// Keys of a nested object whose keys are names (e.g. variants); marks it read.
  std::vector<std::string> keys_of(std::string_view key) const;
  bool has(std::string_view key) const;
  /// After reading `key`: its value has no effect in this configuration, for
  /// the reason `why` (e.g. a coarse directory's look-up time under an exact
  /// directory). It must still be valid; sensitivity skips it.
  void unused(std::string_view key, std::string why);

  /// Throws ConfigError for `key` with the value found there and `rule`.
  [[noreturn]] void fail(std::string_view key, const std::string& rule) const;
  std::string path_of(std::string_view key) const;
  const std::string& file() const { return file_; }
  Registry& registry() const { return *registry_; }
  bool schema_mode() const { return registry_->schema_mode(); }

 private:
  /// The raw value for key (unwrapping {value, source}); nullptr if absent.
  const json* value_of(std::string_view key, Kind kind, const Spec& s);
  void declare(std::string_view key, Kind kind, const Spec& s);
  /// Records a workload parameter declared with an estimate_range, for sensitivity.
  void record_workload_estimate(const std::string& path, const json& value, const Spec& s);
  double check_range(std::string_view key, double v, const Spec& s) const;

  const json* object_;
  std::string file_;
  std::string root_path_;
  Registry* registry_;
  bool sourced_;
  json* schema_;  // in schema mode: the "properties" object being filled
};

/// Loads a JSON file, resolving "include" (a base file, deep-merged under
/// this one) with cycle detection. Throws ConfigError.
json load_json_file(const std::string& path, std::vector<std::string>* include_chain = nullptr);

/// The VALUE of a --set KEY=VALUE: JSON when it is valid JSON (a number JSON
/// cannot hold, such as 1e999, is not), else the text as a string.
json parse_set_value(const std::string& text);

/// Applies KEY=VALUE to `doc` at dotted `path` (relative to doc). The key
/// must exist; a {value, source} leaf keeps its form. VALUE is parsed as JSON
/// when it is valid JSON, else taken as a string.
void apply_override(json& doc, const std::string& file, const std::string& path, const std::string& value,
                    const std::string& shown_prefix);

/// After load: throws ConfigError for the first key that nobody read.
void check_all_read(const json& doc, const std::string& file, const std::string& root_path,
                    const Registry& registry);

/// The CPUs of a list like "0,1,24-27", in the order written (a number
/// twice stays twice: callers check duplicates and bounds). A part that is
/// not a number or a range lo-hi with lo <= hi: nullopt, with that part in `bad`.
std::optional<std::vector<long long>> parse_cpu_ranges(const std::string& text, std::string& bad);

/// Why CPU `c` cannot join the list `cpus`: listed already, or not a CPU of a
/// machine of `cpu_count` CPUs (cpu_count < 0: no machine yet, any CPU number
/// an int holds). Nothing when it can.
std::optional<std::string> cpu_list_refusal(const std::vector<int>& cpus, long long c, int cpu_count);

}  // namespace cohsim::config
