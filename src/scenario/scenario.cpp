#include "cohsim/scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

#include "cohsim/cpu/cpu.hpp"
#include "cohsim/sim/log.hpp"

namespace cohsim::scenario {

using config::ConfigError;
using config::json;
using config::Spec;

double Results::get(const std::string& name) const {
  for (const auto& [k, v] : metrics)
    if (k == name) return v;
  throw std::out_of_range("no metric " + name);
}

bool Results::has(const std::string& name) const {
  return std::any_of(metrics.begin(), metrics.end(), [&](const auto& m) { return m.first == name; });
}

Override parse_override(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set", text, "expected KEY=VALUE (e.g. cpus=16 or platform.interconnect.socket.latency=120ns)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

/// Whether a --set key and a variant's key address the same value (one may be
/// a section of the other: platform.gic and platform.gic.sgi_latency).
bool same_or_nested(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  return longer.compare(0, shorter.size(), shorter) == 0 &&
         (longer.size() == shorter.size() || longer[shorter.size()] == '.');
}

/// Applies a variant's platform.PATH value to the platform document; a
/// {value, source} leaf's source then names the variant (a what-if).
void apply_variant_platform_value(PlatformDoc& platform, const std::string& scenario_file,
                                  const std::string& variant, const std::string& key, const json& value) {
  const std::string path = key.substr(std::string("platform.").size());
  if (value.is_object() || value.is_array())
    throw ConfigError(scenario_file, "variants." + variant + "." + key,
                      "expected a plain value such as \"150ns\" (its source becomes this variant)");
  config::apply_override(platform.doc, scenario_file, path, value.dump(), "variants." + variant + ".platform");
  json* node = &platform.doc;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    node = &(*node)[path.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (node->is_object() && node->contains("source")) {
    (*node)["source"] = fmt::format("what-if: variant '{}' of {}", variant, scenario_file);
    node->erase("range");  // the platform's range was for its own value
  }
}

}  // namespace

std::vector<VariantSetting> variants_setting(const LoadedScenario& s, const std::string& key) {
  std::vector<VariantSetting> out;
  for (const auto& v : s.variants) {
    const json& settings = s.variant_settings.at(v);
    for (auto it = settings.begin(); it != settings.end(); ++it)
      if (same_or_nested(it.key(), key)) out.push_back({v, it.key(), it.value()});
  }
  return out;
}

LoadedScenario load_scenario(const std::string& path, const std::string& variant,
                             const std::vector<Override>& overrides, const std::string& platform_file) {
  LoadedScenario s;
  s.file = path;
  json doc = config::load_json_file(path);
  static const std::vector<std::string> allowed = {"description", "platform", "workload", "params", "variants",
                                                   "baseline", "seed", "screen"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it.key()[0] != '_' && std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      throw ConfigError(path, it.key(),
                        "unknown key (a scenario has: description, platform, workload, params, variants, baseline, "
                        "seed, screen)");
  if (doc.contains("screen")) {
    // The short runs compare's default ranges screen with: params names (or platform.PATH) -> value, as --set.
    if (!doc["screen"].is_object() || doc["screen"].empty())
      throw ConfigError(path, "screen", "expected an object of the settings of a short run, e.g. {\"rounds\": 10}");
    for (auto it = doc["screen"].begin(); it != doc["screen"].end(); ++it)
      s.screen.push_back({it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
  }
  auto need_string = [&](const char* key) {
    if (!doc.contains(key) || !doc[key].is_string())
      throw ConfigError(path, key, "missing or not a string");
    return doc[key].get<std::string>();
  };
  auto optional_string = [&](const char* key, std::string fallback) {
    return doc.contains(key) ? need_string(key) : fallback;
  };
  s.description = optional_string("description", "");
  s.workload = need_string("workload");
  if (!workloads().count(s.workload)) {
    std::string known;
    for (const auto& [k, v] : workloads()) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError(path, "workload", fmt::format("unknown workload '{}' (known: {})", s.workload, known));
  }
  std::filesystem::path platform_path = platform_file.empty()
                                           ? std::filesystem::path(path).parent_path() / need_string("platform")
                                           : std::filesystem::path(platform_file);
  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_unsigned()) throw ConfigError(path, "seed", "expected a non-negative integer");
    s.seed = doc["seed"].get<std::uint64_t>();
  }
  s.params = doc.value("params", json::object());
  if (!s.params.is_object()) throw ConfigError(path, "params", "expected an object");
  if (doc.contains("variants")) {
    const json& vs = doc["variants"];
    if (!vs.is_object() || vs.empty()) throw ConfigError(path, "variants", "expected an object of named parameter sets");
    for (auto it = vs.begin(); it != vs.end(); ++it) {
      if (!it.value().is_object()) throw ConfigError(path, "variants." + it.key(), "expected an object of parameters");
      s.variants.push_back(it.key());
      s.variant_settings[it.key()] = it.value();
    }
    // nlohmann orders keys alphabetically; keep the file's intent via "baseline".
    s.baseline = optional_string("baseline", s.variants.front());
    if (std::find(s.variants.begin(), s.variants.end(), s.baseline) == s.variants.end())
      throw ConfigError(path, "baseline", fmt::format("'{}' is not one of the variants", s.baseline));
    s.variant = variant.empty() ? s.baseline : variant;
    if (std::find(s.variants.begin(), s.variants.end(), s.variant) == s.variants.end()) {
      std::string known;
      for (const auto& v : s.variants) known += (known.empty() ? "" : ", ") + v;
      throw ConfigError(path, "variants", fmt::format("unknown variant '{}' (known: {})", s.variant, known));
    }
    // Baseline first in compare order.
    std::stable_partition(s.variants.begin(), s.variants.end(), [&](const auto& v) { return v == s.baseline; });
    for (auto it = vs[s.variant].begin(); it != vs[s.variant].end(); ++it)
      if (it.key().rfind("platform.", 0) != 0) s.params[it.key()] = it.value();
  } else if (!variant.empty()) {
    throw ConfigError(path, "variants", fmt::format("this scenario has no variants (asked for '{}')", variant));
  }
  if (!std::filesystem::exists(platform_path))
    throw ConfigError(platform_file.empty() ? path : "--platform", "platform",
                      fmt::format("the platform file {} does not exist", platform_path.string()));
  s.platform = load_platform(platform_path.string());
  if (!s.variant.empty())
    for (auto it = doc["variants"][s.variant].begin(); it != doc["variants"][s.variant].end(); ++it)
      if (it.key().rfind("platform.", 0) == 0)
        apply_variant_platform_value(s.platform, path, s.variant, it.key(), it.value());
  for (const auto& o : overrides) {
    if (o.key.rfind("platform.", 0) == 0) {
      config::apply_override(s.platform.doc, s.platform.file, o.key.substr(9), o.value, "platform");
    } else if (o.key.find('.') == std::string::npos && !s.params.contains(o.key)) {
      s.params[o.key] = config::parse_set_value(o.value);  // a parameter left at its default; unknown names fail at load
    } else {
      config::apply_override(s.params, path, o.key, o.value, "params");
    }
  }
  s.overrides = overrides;
  return s;
}

void mark_unasked_device_sections(const Machine& m, config::Registry& reg, const std::string& workload) {
  for (const auto& section : m.device_sections_not_asked())
    reg.mark_unused_under("platform." + section + ".",
                          fmt::format("no model of the {} workload uses the platform's {} section", workload, section));
  m.seal_device_sections();
}

Run::Run(const LoadedScenario& s, std::uint64_t seed) : s_(s) {
  for (const auto& o : s.overrides)
    registry_.overridden.insert(o.key.rfind("platform.", 0) == 0 ? o.key : "params." + o.key);
  machine_ = std::make_unique<Machine>(s.platform, seed, registry_);
  config::Reader params(&s.params, s.file, "params", &registry_, /*sourced=*/false);
  workload_ = workloads().at(s.workload).make(params, *machine_);
  machine_->check_platform_fully_read();
  mark_unasked_device_sections(*machine_, registry_, s.workload);
  // A parameter the workload declares but did not read on this platform has
  // no effect: a warning, not the error an unknown key is.
  json checked = s.params;
  for (const auto& key : declared_but_unread_params(s, registry_, seed)) {
    checked.erase(key);
    unused_params_["params." + key] = unread_param_reason(s, *machine_);
  }
  config::check_all_read(checked, s.file, "params", registry_);
  // A value set here (variant or --set) that its model marked unused: a platform path as it is,
  // a workload parameter by its name (params.K is set as K).
  for (const auto& [path, why] : registry_.unused())
    if (!set_by(s, override_key(path)).empty()) unused_params_[path] = why;
  for (const auto& [path, why] : unused_params_) {
    const std::string key = override_key(path);
    const bool is_param = key != path;
    json value = is_param ? s.params.at(key) : registry_.used.count(path) ? registry_.used.at(path) : json();
    if (value.is_object() && value.contains("value")) value = json(value["value"]);  // {value, source}: the value
    const std::string by = set_by(s, key);
    cohsim::log("scenario")->warn("{} = {} (set by {}) has no effect in this run: {}", key, value.dump(),
                                  by.empty() ? "the scenario file" : by, why);
  }
  cohsim::log("scenario")->debug("{}: workload {} variant '{}' on {} ({} CPUs), seed {}", s.file, s.workload,
                                 s.variant, machine_->name(), machine_->cpu_count(), seed);
}

Run::~Run() = default;

std::vector<std::string> declared_but_unread_params(const LoadedScenario& s, const config::Registry& reg,
                                                    std::uint64_t seed) {
  std::vector<std::string> unread;
  for (auto it = s.params.begin(); it != s.params.end(); ++it)
    if (!it.key().empty() && it.key()[0] != '_' && !reg.was_read("params." + it.key())) unread.push_back(it.key());
  if (unread.empty()) return unread;
  json schema = {{"properties", json::object()}};
  try {
    config::Registry machine_reg;
    Machine probe(s.platform, seed, machine_reg);
    config::Registry schema_reg(/*schema_mode=*/true);
    config::Reader r(nullptr, "(schema)", "params", &schema_reg, /*sourced=*/false, &schema);
    workloads().at(s.workload).make(r, probe);
  } catch (const std::exception&) {
    return {};  // no declarations: the keys stay unknown (an error)
  }
  std::erase_if(unread, [&](const std::string& k) { return !schema["properties"].contains(k); });
  return unread;
}

std::string set_by(const LoadedScenario& s, const std::string& key) {
  for (const auto& o : s.overrides)
    if (o.key == key) return "--set";
  if (!s.variant.empty() && s.variant_settings.at(s.variant).contains(key))
    return fmt::format("variant '{}'", s.variant);
  return {};
}

std::string unread_param_reason(const LoadedScenario& s, const Machine& m) {
  return fmt::format("the {} workload does not read it on {} ({})", s.workload, m.name(),
                     m.cpu(0).is_arm() ? "arm64" : "x86");
}

Results Run::execute() { return workload_->run(); }

json Run::params_used() const {
  json out = json::object();
  for (const auto& [path, v] : registry_.used)
    if (const std::string key = override_key(path); key != path) out[key] = v;
  return out;
}

namespace {

/// The `n` busiest links (by occupied time): utilisation of their ports over
/// the simulated run and the queueing of the messages that crossed them.
json link_report(Machine& m, std::size_t n) {
  const auto& links = m.interconnect().links();
  std::vector<const fabric::Link*> busiest;
  for (const auto& l : links)
    if (l.messages > 0) busiest.push_back(&l);
  std::sort(busiest.begin(), busiest.end(), [](const auto* a, const auto* b) {
    return a->busy != b->busy ? a->busy > b->busy : a->name < b->name;
  });
  const double window_ns = sim::to_ns(m.sim().now());
  json out = json::array();
  for (std::size_t i = 0; i < busiest.size() && i < n; ++i) {
    const auto& l = *busiest[i];
    const double capacity_ns = window_ns * static_cast<double>(l.port_count());
    out.push_back({{"link", l.name},
                   {"class", topo::hop_class_name(l.cls)},
                   {"ports", l.port_count()},
                   {"messages", l.messages},
                   {"busy_ns", sim::to_ns(l.busy)},
                   {"utilisation", capacity_ns > 0 ? sim::to_ns(l.busy) / capacity_ns : 0.0},
                   {"queue_mean_ns", sim::to_ns(l.queued) / static_cast<double>(l.messages)},
                   {"queue_max_ns", sim::to_ns(l.max_queued)}});
  }
  return out;
}

}  // namespace

void add_contention_report(Results& r, Machine& m, std::size_t n) {
  const auto& stats = m.fabric().line_stats();
  std::vector<std::pair<fabric::Addr, const fabric::LineStats*>> lines;
  for (const auto& [line, ls] : stats) lines.emplace_back(line, &ls);
  auto weight = [](const fabric::LineStats& s) {
    std::uint64_t t = s.invalidations + s.device_accesses + s.llc_atomics;
    for (auto x : s.transfers) t += x;
    return t;
  };
  std::sort(lines.begin(), lines.end(), [&](const auto& a, const auto& b) {
    auto wa = weight(*a.second), wb = weight(*b.second);
    return wa != wb ? wa > wb : a.first < b.first;
  });
  json out = json::array();
  for (std::size_t i = 0; i < lines.size() && i < n; ++i) {
    const auto& [line, s] = lines[i];
    if (weight(*s) == 0) break;
    json transfers = json::object();
    for (int c = 0; c < topo::kHopClasses; ++c)
      if (s->transfers[static_cast<std::size_t>(c)] > 0)
        transfers[topo::hop_class_name(static_cast<topo::HopClass>(c))] = s->transfers[static_cast<std::size_t>(c)];
    std::vector<int> cpus;
    for (int core = 0; core < m.topology().core_count(); ++core)  // (the dies' L3s are not cores)
      if (s->touched.test(static_cast<std::size_t>(core))) cpus.push_back(core);
    out.push_back({{"line", fmt::format("{:#x}", line)},
                   {"symbol", m.memory().describe(line)},
                   {"home_node", m.memory().home_node(line)},
                   {"transfers", transfers},
                   {"invalidations", s->invalidations},
                   {"memory_reads", s->memory_reads},
                   {"device_accesses", s->device_accesses},
                   {"llc_atomics", s->llc_atomics},
                   {"requests", s->requests},
                   {"wait_ns", sim::to_ns(s->wait)},
                   {"cores", cpus}});
  }
  r.extra["contention"] = out;
  r.extra["links"] = link_report(m, n);
}

}  // namespace cohsim::scenario
