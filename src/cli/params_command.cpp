// cohsim params: every workload and platform parameter a scenario reads, with
// its value, kind and unit, bounds or estimate range, source and doc.
#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>
#include <map>

#include "cli.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

/// The kind of a declared value, from its schema type ("time", "one of: a, b").
std::string kind_of(const json& t) {
  if (t.contains("enum")) {
    std::string names;
    for (const auto& c : t["enum"]) names += (names.empty() ? "" : ", ") + c.get<std::string>();
    return "one of: " + names;
  }
  const std::string pattern = t.value("pattern", "");
  if (pattern.find("ns|") != std::string::npos) return "time";
  if (pattern.find("Hz") != std::string::npos) return "frequency";
  if (!t.contains("type")) return "value";
  if (t["type"].is_array()) return t["type"].size() == 2 && t["type"][1] == "integer" ? "size" : "CPU list";
  return t["type"].get<std::string>();
}

/// Declarations by dotted path: each leaf's doc, kind and bounds.
void flatten(const json& schema, const std::string& prefix, std::map<std::string, json>& out) {
  if (!schema.contains("properties")) return;
  for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
    const std::string path = prefix + "." + it.key();
    const json& e = it.value();
    if (e.contains("patternProperties")) {  // a section
      flatten(e, path, out);
      continue;
    }
    const json& t = e.contains("anyOf")                                          ? e["anyOf"][0]
                    : e.contains("properties") && e["properties"].contains("value") ? e["properties"]["value"]
                                                                                  : e;
    std::string bounds = t.value("x-bounds", "");
    if (bounds.empty() && (t.contains("minimum") || t.contains("maximum")))
      bounds = fmt::format("{}..{}", t.contains("minimum") ? t["minimum"].dump() : "",
                           t.contains("maximum") ? t["maximum"].dump() : "");
    out[path] = {{"doc", e.value("description", "")}, {"kind", kind_of(t)}, {"bounds", bounds}};
  }
}

std::string shown(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

int cmd_params(const std::vector<std::string>& args) {
  std::string scenario_path, variant, platform_file, json_out;
  std::vector<std::string> sets;
  bool override_variant = false;
  po::options_description d("cohsim params SCENARIO [options]");
  d.add_options()("help,h", "this help")("variant", po::value(&variant), "the variant whose values to show")(
      "override-variant", po::bool_switch(&override_variant), "allow a --set of a key the --variant sets (as for run)")(
      "set", po::value(&sets)->composing(), "KEY=VALUE as for run (repeatable)")(
      "platform", po::value(&platform_file), "a platform file instead of the scenario's")(
      "json", po::value(&json_out), "write the list as JSON to FILE");
  if (!parse_command_line(args, d, scenario_path,
                          "Lists every workload parameter (--set NAME=VALUE) and platform parameter\n"
                          "(--set platform.PATH=VALUE) the scenario reads: value, kind and unit, bounds,\n"
                          "estimate range, source and what it means."))
    return kOk;
  if (scenario_path.empty()) throw po::error("missing SCENARIO (a file under configs/scenarios/)");
  check_output_file("--json", json_out, {scenario_path, platform_file});
  std::vector<scenario::Override> overrides;
  for (const auto& s : sets) overrides.push_back(scenario::parse_override(s));
  const auto s = scenario::load_scenario(scenario_path, variant, overrides, platform_file);
  if (!variant.empty()) check_sets_keep_variants(s, {variant}, overrides, override_variant);
  // A real load with the declarations recorded: every value read, defaults included.
  config::Registry reg;
  json platform_schema = {{"properties", json::object()}}, workload_schema = {{"properties", json::object()}};
  scenario::Machine machine(s.platform, s.seed, reg, &platform_schema);
  config::Reader reader(&s.params, s.file, "params", &reg, false, &workload_schema);
  const auto workload = scenario::workloads().at(s.workload).make(reader, machine);
  machine.check_platform_fully_read();  // a name no model reads fails as in run (with a did-you-mean)
  scenario::mark_unasked_device_sections(machine, reg, s.workload);
  // A parameter the workload declares but did not read here has no effect (run warns); it is listed, marked.
  const auto unread = scenario::declared_but_unread_params(s, reg, s.seed);
  json checked = s.params;
  for (const auto& key : unread) checked.erase(key);
  config::check_all_read(checked, s.file, "params", reg);
  std::map<std::string, json> declared;
  flatten(platform_schema, "platform", declared);
  flatten(workload_schema, "params", declared);
  std::map<std::string, const config::Provenance*> provenance;
  for (const auto& p : reg.provenance()) provenance[p.path] = &p;
  const json variant_settings = s.variant.empty() ? json::object() : s.variant_settings.at(s.variant);

  // Where a value comes from: --set, the variant, the file, or (a workload parameter not in it) the default.
  auto origin = [&](const std::string& key, bool is_param) -> std::string {
    for (const auto& o : overrides)
      if (o.key == key) return "--set";
    if (variant_settings.contains(key)) return "variant " + s.variant;
    return is_param && !s.params.contains(key) ? "default" : "file";
  };
  json rows = json::array();
  for (const auto& [path, value] : reg.used) {
    const json decl = declared.count(path) ? declared.at(path) : json{{"doc", ""}, {"kind", ""}, {"bounds", ""}};
    const std::string key = scenario::override_key(path);
    const bool is_param = key != path;
    json row = {{"name", key}, {"value", value}, {"kind", decl["kind"]}, {"bounds", decl["bounds"]},
                {"doc", decl["doc"]}, {"set_by", origin(key, is_param)}, {"source", ""}, {"range", json::array()}};
    if (const auto it = provenance.find(path); it != provenance.end()) {
      if (!it->second->workload) row["source"] = it->second->source;
      if (!it->second->range_low.is_null()) row["range"] = {it->second->range_low, it->second->range_high};
    }
    if (const auto why = reg.unused().find(path); why != reg.unused().end()) row["unused_because"] = why->second;
    rows.push_back(row);
  }
  for (const auto& key : unread)
    rows.push_back({{"name", key}, {"value", s.params.at(key)}, {"kind", "not read here"}, {"bounds", ""}, {"doc", ""},
                    {"set_by", origin(key, true)}, {"source", ""}, {"range", json::array()}, {"unused", true},
                    {"unused_because", scenario::unread_param_reason(s, machine)}});
  if (!json_out.empty()) {
    write_file_atomically(json_out, json{{"scenario", scenario_path}, {"workload", s.workload},
                                         {"variant", s.variant}, {"platform_file", s.platform.file},
                                         {"parameters", rows}}
                                        .dump(1) + "\n");
    return kOk;
  }
  std::cout << fmt::format("{}: workload {} on {}{}\n", scenario_path, s.workload, machine.name(),
                           s.variant.empty() ? "" : fmt::format(" (values of variant {})", s.variant));
  for (const bool params_part : {true, false}) {
    std::cout << (params_part ? "\nworkload parameters (--set NAME=VALUE)\n"
                              : "\nplatform parameters (--set platform.PATH=VALUE)\n");
    for (const auto& r : rows) {
      if ((r["name"].get<std::string>().rfind("platform.", 0) != 0) != params_part) continue;
      std::string facts = r["kind"].get<std::string>();
      if (!r["bounds"].get<std::string>().empty()) facts += ", bounds " + r["bounds"].get<std::string>();
      if (!r["range"].empty()) facts += fmt::format(", estimate range {}..{}", shown(r["range"][0]), shown(r["range"][1]));
      if (r["set_by"] != "file") facts += ", from " + r["set_by"].get<std::string>();
      std::cout << fmt::format("  {} = {}  ({})\n", r["name"].get<std::string>(), shown(r["value"]), facts);
      if (!r["doc"].get<std::string>().empty()) std::cout << "      " << r["doc"].get<std::string>() << "\n";
      if (!r["source"].get<std::string>().empty()) std::cout << "      source: " << r["source"].get<std::string>() << "\n";
      if (r.contains("unused_because")) std::cout << "      no effect here: " << r["unused_because"].get<std::string>() << "\n";
    }
  }
  return kOk;
}

}  // namespace cohsim::cli
