#include "cohsim/config/params.hpp"
#include "cohsim/config/inputs_read.hpp"
#include "cohsim/config/sha256.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <limits>
#include <mutex>
#include <regex>
#include <sstream>

namespace cohsim::config {
namespace {

std::string shown(const json& v) {
  // Invalid UTF-8 (from a file or --set) is shown replaced, never thrown on.
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::time: return "a time with a unit (ps, ns, us, ms or s), e.g. \"34ns\"";
    case Kind::frequency: return "a frequency with a unit (Hz, kHz, MHz or GHz), e.g. \"2.6GHz\"";
    case Kind::size: return "a size in B, KiB, MiB or GiB, e.g. \"512KiB\", or a number of bytes";
    case Kind::integer: return "an integer";
    case Kind::number: return "a number";
    case Kind::boolean: return "true or false";
    case Kind::choice: return "one of the listed names";
    case Kind::text: return "a string";
    case Kind::cpu_list: return "a CPU count, a list like \"0,1,24-27\" or an array of CPU numbers";
    case Kind::object: return "an object";
  }
  return "?";
}

/// A bound or value of a numeric kind in its own unit ("10ms", "4GHz", "64KiB").
std::string in_unit(Kind k, double base) {
  switch (k) {
    case Kind::time: return sim::format_time(static_cast<sim::Tick>(base));
    case Kind::frequency:
      return base >= 1e9 ? fmt::format("{:g}GHz", base / 1e9)
             : base >= 1e6 ? fmt::format("{:g}MHz", base / 1e6)
             : base >= 1e3 ? fmt::format("{:g}kHz", base / 1e3)
                           : fmt::format("{:g}Hz", base);
    case Kind::size:
      for (const auto& [unit, bytes] : {std::pair{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}})
        if (base >= bytes) return fmt::format("{:.4g}{}", base / bytes, unit);
      return fmt::format("{:g}B", base);
    default: return fmt::format("{:g}", base);
  }
}

/// A value of a numeric kind in base units (ps, Hz, bytes, plain); nullopt when it is not one.
std::optional<double> base_value(Kind k, const json& j) {
  switch (k) {
    case Kind::time:
      if (j.is_string()) {
        auto t = sim::parse_time(j.get<std::string>());
        return t ? std::optional<double>(static_cast<double>(*t)) : std::nullopt;
      }
      return j.is_number() && j.get<double>() == 0 ? std::optional<double>(0.0) : std::nullopt;
    case Kind::frequency: return j.is_string() ? sim::parse_frequency(j.get<std::string>()) : std::nullopt;
    case Kind::size: {
      auto b = j.is_string() ? sim::parse_size(j.get<std::string>())
                             : j.is_number_unsigned() ? std::optional<std::uint64_t>(j.get<std::uint64_t>()) : std::nullopt;
      return b ? std::optional<double>(static_cast<double>(*b)) : std::nullopt;
    }
    case Kind::integer: return j.is_number_integer() ? std::optional<double>(j.get<double>()) : std::nullopt;
    case Kind::number: return j.is_number() ? std::optional<double>(j.get<double>()) : std::nullopt;
    case Kind::boolean: return j.is_boolean() ? std::optional<double>(j.get<bool>() ? 1.0 : 0.0) : std::nullopt;
    default: return std::nullopt;
  }
}

bool is_numeric_kind(Kind k) {
  return k == Kind::time || k == Kind::frequency || k == Kind::size || k == Kind::integer || k == Kind::number;
}

json schema_type(Kind k, const Spec& s) {
  json t;
  switch (k) {
    case Kind::time:
      t = {{"type", "string"}, {"pattern", "^[0-9.]+(e[0-9+-]+)?\\s*(ps|ns|us|ms|s)$|^0$"}};
      break;
    case Kind::frequency: t = {{"type", "string"}, {"pattern", "^[0-9.]+\\s*(Hz|kHz|MHz|GHz)$"}}; break;
    case Kind::size: t = {{"type", {"string", "integer"}}}; break;
    case Kind::integer: t = {{"type", "integer"}}; break;
    case Kind::number: t = {{"type", "number"}}; break;
    case Kind::boolean: t = {{"type", "boolean"}}; break;
    case Kind::choice: t = {{"type", "string"}, {"enum", s.choices}}; break;
    case Kind::text: t = {{"type", "string"}}; break;
    case Kind::cpu_list: t = {{"type", {"integer", "string", "array"}}}; break;
    case Kind::object: t = {{"type", "object"}}; break;
  }
  if ((k == Kind::integer || k == Kind::number) && s.min) t["minimum"] = *s.min;
  if ((k == Kind::integer || k == Kind::number) && s.max) t["maximum"] = *s.max;
  return t;
}

std::pair<int, int> line_col(const std::string& text, std::size_t byte) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

void deep_merge(json& base, const json& over) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object() &&
        !it.value().contains("value"))
      deep_merge(base[it.key()], it.value());
    else
      base[it.key()] = it.value();
  }
}

}  // namespace

ConfigError::ConfigError(const std::string& file, const std::string& path, const std::string& message)
    : std::runtime_error(path.empty() ? fmt::format("{}: {}", file, message)
                                      : fmt::format("{}: {}: {}", file, path, message)),
      file_(file),
      path_(path),
      message_(message) {}

Reader::Reader(const json* object, std::string file, std::string root_path, Registry* registry, bool sourced,
               json* schema)
    : object_(object), file_(std::move(file)), root_path_(std::move(root_path)), registry_(registry),
      sourced_(sourced), schema_(schema) {}

std::string Reader::path_of(std::string_view key) const {
  return root_path_.empty() ? std::string(key) : fmt::format("{}.{}", root_path_, key);
}

bool Reader::has(std::string_view key) const {
  return object_ != nullptr && object_->is_object() && object_->contains(std::string(key));
}

void Reader::fail(std::string_view key, const std::string& rule) const {
  std::string path = path_of(key);
  std::string msg = rule;
  if (has(key)) {
    const json& v = (*object_)[std::string(key)];  // a {value, source} leaf: the value is what was given
    msg = fmt::format("value {}: {}", shown(v.is_object() && v.contains("value") ? v["value"] : v), rule);
  }
  if (registry_->overridden.count(path)) msg += " (value set on the command line)";
  throw ConfigError(file_, path, msg);
}

void Reader::declare(std::string_view key, Kind kind, const Spec& s) {
  if (schema_ == nullptr) return;
  json t = schema_type(kind, s);
  t["description"] = std::string(s.doc);
  if (s.def) t["default"] = *s.def;
  if (!s.estimate_range.empty()) t["x-estimate-range"] = s.estimate_range;  // an annotation validators ignore
  if (s.min || s.max)  // the declared bounds in the kind's unit (cohsim params shows them)
    t["x-bounds"] = fmt::format("{}..{}", s.min ? in_unit(kind, *s.min) : "", s.max ? in_unit(kind, *s.max) : "");
  json& props = (*schema_)["properties"];
  if (is_numeric_kind(kind) || (sourced_ && kind == Kind::boolean)) {
    json wrapped = {{"type", "object"},
                    {"description", std::string(s.doc)},
                    {"required", {"value", "source"}},
                    {"additionalProperties", false},
                    {"properties",
                     {{"value", t},
                      {"source", {{"type", "string"}, {"description", "calibration:, datasheet:, measurement: or estimate: with reasoning"}}},
                      {"range", {{"type", "array"}, {"minItems", 2}, {"maxItems", 2}}}}}};
    // A platform number must carry its source; a platform switch and a
    // workload number may be bare or sourced.
    props[std::string(key)] = sourced_ && kind != Kind::boolean
                                  ? wrapped
                                  : json{{"description", std::string(s.doc)}, {"anyOf", {t, wrapped}}};
  } else if (kind == Kind::choice) {  // a structural choice: bare, or sourced with its alternatives
    json wrapped = {{"type", "object"},
                    {"description", std::string(s.doc)},
                    {"required", {"value", "source"}},
                    {"additionalProperties", false},
                    {"properties",
                     {{"value", t},
                      {"source", {{"type", "string"}, {"description", "datasheet:, measurement: or estimate: with reasoning"}}},
                      {"alternatives", {{"type", "array"}, {"minItems", 1}, {"items", t}}}}}};
    props[std::string(key)] = json{{"description", std::string(s.doc)}, {"anyOf", {t, wrapped}}};
  } else {
    props[std::string(key)] = t;
  }
  if (!s.def) (*schema_)["required"].push_back(std::string(key));
}

void Reader::record_workload_estimate(const std::string& path, const json& value, const Spec& s) {
  if (s.estimate_range.empty()) return;
  if (s.estimate_range.size() != 2) throw std::logic_error(path + ": estimate_range must be {low, high}");
  Provenance p;
  p.path = path;
  p.value = value.is_string() ? value.get<std::string>() : shown(value);
  p.source = std::string(s.doc);
  p.estimate = true;
  p.workload = true;
  p.range_low = s.estimate_range[0];
  p.range_high = s.estimate_range[1];
  p.min = s.min;
  p.max = s.max;
  registry_->add_provenance(std::move(p));
}

const json* Reader::value_of(std::string_view key, Kind kind, const Spec& s) {
  declare(key, kind, s);  // recorded whenever a schema is being exported
  if (schema_mode()) return nullptr;
  std::string path = path_of(key);
  if (!has(key)) {
    if (!s.def) fail(key, fmt::format("missing required key ({}: {})", kind_name(kind), s.doc));
    registry_->used[path] = *s.def;
    if (!sourced_) record_workload_estimate(path, *s.def, s);
    return nullptr;
  }
  registry_->mark_read(path);
  const json& v = (*object_)[std::string(key)];
  registry_->used[path] = (v.is_object() && v.contains("value")) ? v["value"] : v;
  // Platform numbers must carry their source; a platform switch (boolean)
  // may, in the same form; so may a workload number (one fitted to a
  // calibration row says so, and validate and sensitivity read it) and a
  // workload mechanism (a structural choice with its alternatives).
  const bool with_source = sourced_ ? is_numeric_kind(kind) || ((kind == Kind::boolean || kind == Kind::choice) && v.is_object())
                                    : (is_numeric_kind(kind) || kind == Kind::choice) && v.is_object();
  if (!sourced_ && !with_source) record_workload_estimate(path, v, s);
  if (with_source) {
    if (!v.is_object() || !v.contains("value"))
      fail(key, fmt::format("a {} number needs its source: write {{\"value\": ..., \"source\": "
                            "\"calibration|datasheet|measurement|estimate: ...\"}}",
                            sourced_ ? "platform" : "sourced"));
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key() != "value" && it.key() != "source" && it.key() != (kind == Kind::choice ? "alternatives" : "range"))
        fail(key, fmt::format("unknown field '{}' (allowed: value, source, {})", it.key(),
                              kind == Kind::choice ? "alternatives" : "range"));
    if (!v.contains("source") || !v["source"].is_string() || v["source"].get<std::string>().empty())
      fail(key, "missing \"source\": say where the number comes from");
    Provenance p;
    p.path = path;
    p.value = v["value"].is_string() ? v["value"].get<std::string>() : shown(v["value"]);
    p.source = v["source"].get<std::string>();
    p.estimate = p.source.rfind("estimate", 0) == 0;
    p.workload = !sourced_;
    p.min = s.min;
    p.max = s.max;
    if (kind == Kind::choice) {
      p.choice = true;
      const json no_alternatives = json::array();
      const json& alts = v.contains("alternatives") ? v["alternatives"] : no_alternatives;
      if (!alts.is_array()) fail(key, "\"alternatives\" must be a list of the other plausible choices");
      for (const auto& a : alts) {  // sensitivity runs the model at each: each must be a valid choice
        if (!a.is_string() || std::find(s.choices.begin(), s.choices.end(), a.get<std::string>()) == s.choices.end())
          fail(key, fmt::format("alternative {} is not one of the choices", a.dump()));
        if (a != v["value"]) p.alternatives.push_back(a.get<std::string>());  // (a --set may choose an alternative)
      }
      if (p.estimate && alts.empty())
        fail(key, "an estimated mechanism needs its plausible \"alternatives\": [\"other\", ...]");
    } else if (v.contains("range")) {
      const json& r = v["range"];
      if (!r.is_array() || r.size() != 2) fail(key, "\"range\" must be [low, high]");
      for (const auto& end : r) {  // sensitivity runs the model at both ends: each must be a valid value
        auto b = base_value(kind, end);
        if (!b) fail(key, fmt::format("range end {}: expected {}", shown(end), kind_name(kind)));
        if ((s.min && *b < *s.min) || (s.max && *b > *s.max))
          fail(key, fmt::format("range end {} is outside the declared bounds ({})", shown(end), s.doc));
      }
      p.range_low = r[0];
      p.range_high = r[1];
    } else if (p.estimate) {
      fail(key, "an estimate needs a plausible \"range\": [low, high]");
    }
    registry_->add_provenance(std::move(p));
    return &v["value"];
  }
  return &v;
}

void Registry::mark_unused(const std::string& path, std::string why) {
  unused_[path] = why;
  for (auto it = provenance_.rbegin(); it != provenance_.rend(); ++it)
    if (it->path == path) {
      it->unused_because = std::move(why);
      return;
    }
}

void Registry::mark_unused_under(const std::string& prefix, const std::string& why) {
  for (auto& p : provenance_)
    if (p.path.rfind(prefix, 0) == 0 && p.unused_because.empty()) {
      p.unused_because = why;
      unused_.emplace(p.path, why);
    }
}

void Reader::unused(std::string_view key, std::string why) {
  if (!schema_mode()) registry_->mark_unused(path_of(key), std::move(why));
}

std::vector<std::string> Provenance::calibration_rows() const {
  static const std::string prefix = "calibration:";
  std::vector<std::string> rows;
  if (source.rfind(prefix, 0) != 0) return rows;
  // A row id: lower-case words joined by at least two dots, the first word
  // starting with a letter (kp920.c2c.same-die; not a number range like 87.85-88.1).
  static const std::regex id(R"(\b[a-z][a-z0-9]*(\.[a-z0-9][a-z0-9-]*){2,})");
  const std::string text = source.substr(prefix.size());
  for (std::sregex_iterator it(text.begin(), text.end(), id), end; it != end; ++it)
    if (std::find(rows.begin(), rows.end(), it->str()) == rows.end()) rows.push_back(it->str());
  return rows;
}

double Reader::check_range(std::string_view key, double v, const Spec& s) const {
  if (s.min && v < *s.min) fail(key, fmt::format("must be at least {} ({})", *s.min, s.doc));
  if (s.max && v > *s.max) fail(key, fmt::format("must be at most {} ({})", *s.max, s.doc));
  return v;
}

namespace {

/// Fails `key` unless `v` (base units) is within the declared bounds, stating them in the kind's unit.
void check_bounds(const Reader& r, std::string_view key, double v, const Spec& s, Kind k) {
  if (s.min && v < *s.min)
    r.fail(key, fmt::format("{} is below the minimum {} ({})", in_unit(k, v), in_unit(k, *s.min), s.doc));
  if (s.max && v > *s.max)
    r.fail(key, fmt::format("{} is above the maximum {} ({})", in_unit(k, v), in_unit(k, *s.max), s.doc));
}

template <class F>
auto convert_or(const json* v, const Spec& s, F convert) {
  return convert(v != nullptr ? *v : (s.def ? *s.def : json()));
}
}  // namespace

sim::Tick Reader::time(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::time, s);
  if (schema_mode()) return 0;
  return convert_or(v, s, [&](const json& j) -> sim::Tick {
    std::optional<sim::Tick> t;
    if (j.is_string()) t = sim::parse_time(j.get<std::string>());
    else if (j.is_number() && j.get<double>() == 0) t = 0;
    if (!t) fail(key, fmt::format("expected {}", kind_name(Kind::time)));
    check_bounds(*this, key, static_cast<double>(*t), s, Kind::time);
    return *t;
  });
}

double Reader::frequency(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::frequency, s);
  if (schema_mode()) return 1;
  return convert_or(v, s, [&](const json& j) {
    std::optional<double> f;
    if (j.is_string()) f = sim::parse_frequency(j.get<std::string>());
    if (!f || *f <= 0) fail(key, fmt::format("expected {}", kind_name(Kind::frequency)));
    check_bounds(*this, key, *f, s, Kind::frequency);
    return *f;
  });
}

std::uint64_t Reader::size(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::size, s);
  if (schema_mode()) return 0;
  return convert_or(v, s, [&](const json& j) -> std::uint64_t {
    std::optional<std::uint64_t> b;
    if (j.is_string()) b = sim::parse_size(j.get<std::string>());
    else if (j.is_number_unsigned()) b = j.get<std::uint64_t>();
    if (!b) fail(key, fmt::format("expected {}", kind_name(Kind::size)));
    check_bounds(*this, key, static_cast<double>(*b), s, Kind::size);
    return *b;
  });
}

std::int64_t Reader::integer(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::integer, s);
  if (schema_mode()) return 0;
  return convert_or(v, s, [&](const json& j) -> std::int64_t {
    if (!j.is_number_integer()) fail(key, fmt::format("expected {}", kind_name(Kind::integer)));
    auto i = j.get<std::int64_t>();
    check_range(key, static_cast<double>(i), s);
    return i;
  });
}

double Reader::number(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::number, s);
  if (schema_mode()) return 0;
  return convert_or(v, s, [&](const json& j) {
    if (!j.is_number()) fail(key, fmt::format("expected {}", kind_name(Kind::number)));
    return check_range(key, j.get<double>(), s);
  });
}

bool Reader::boolean(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::boolean, s);
  if (schema_mode()) return false;
  return convert_or(v, s, [&](const json& j) {
    if (!j.is_boolean()) fail(key, fmt::format("expected {}", kind_name(Kind::boolean)));
    return j.get<bool>();
  });
}

std::string Reader::choice(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::choice, s);
  if (schema_mode()) return s.choices.empty() ? std::string() : s.choices.front();
  return convert_or(v, s, [&](const json& j) {
    std::string list;
    for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
    if (!j.is_string()) fail(key, fmt::format("expected one of: {}", list));
    std::string got = j.get<std::string>();
    if (std::find(s.choices.begin(), s.choices.end(), got) == s.choices.end())
      fail(key, fmt::format("expected one of: {}", list));
    return got;
  });
}

std::string Reader::text(std::string_view key, const Spec& s) {
  const json* v = value_of(key, Kind::text, s);
  if (schema_mode()) return {};
  return convert_or(v, s, [&](const json& j) {
    if (!j.is_string()) fail(key, fmt::format("expected {}", kind_name(Kind::text)));
    return j.get<std::string>();
  });
}

std::optional<std::vector<long long>> parse_cpu_ranges(const std::string& text, std::string& bad) {
  std::vector<long long> cpus;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    long long a = 0, b = 0;
    const auto dash = part.find('-');
    const std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    const auto r1 = std::from_chars(lo.data(), lo.data() + lo.size(), a);
    const auto r2 = std::from_chars(hi.data(), hi.data() + hi.size(), b);
    if (lo.empty() || r1.ec != std::errc() || r1.ptr != lo.data() + lo.size() || r2.ec != std::errc() ||
        r2.ptr != hi.data() + hi.size() || b < a) {
      bad = part;
      return std::nullopt;
    }
    for (long long c = a; c <= b; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::optional<std::string> cpu_list_refusal(const std::vector<int>& cpus, long long c, int cpu_count) {
  if (cpu_count >= 0 && (c < 0 || c >= cpu_count))
    return fmt::format("CPU {} does not exist (the platform has CPUs 0-{})", c, cpu_count - 1);
  if (c < 0 || c > std::numeric_limits<int>::max()) return fmt::format("CPU {} does not exist", c);
  if (std::find(cpus.begin(), cpus.end(), static_cast<int>(c)) != cpus.end())
    return fmt::format("CPU {} is listed twice", c);
  return std::nullopt;
}

std::vector<int> Reader::cpu_list(std::string_view key, const Spec& s, int cpu_count) {
  const json* v = value_of(key, Kind::cpu_list, s);
  if (schema_mode()) return {0};
  return convert_or(v, s, [&](const json& j) {
    std::vector<int> cpus;
    auto add = [&](long long c) {
      if (const auto why = cpu_list_refusal(cpus, c, cpu_count)) fail(key, *why);
      cpus.push_back(static_cast<int>(c));
    };
    if (j.is_number_integer()) {
      long long n = j.get<long long>();
      if (n < 1 || n > cpu_count)
        fail(key, fmt::format("a CPU count must be 1..{} (the platform's CPUs)", cpu_count));
      for (long long c = 0; c < n; ++c) add(c);
    } else if (j.is_array()) {
      for (const auto& e : j) {
        if (!e.is_number_integer()) fail(key, "CPU numbers must be integers");
        add(e.get<long long>());
      }
    } else if (j.is_string()) {
      std::string bad;
      const auto listed = parse_cpu_ranges(j.get<std::string>(), bad);
      if (!listed) fail(key, fmt::format("cannot read '{}' as a CPU or range (e.g. \"0,1,24-27\")", bad));
      for (long long c : *listed) add(c);
    } else {
      fail(key, fmt::format("expected {}", kind_name(Kind::cpu_list)));
    }
    if (cpus.empty()) fail(key, "the CPU list is empty");
    return cpus;
  });
}

Reader Reader::section(std::string_view key, std::string_view doc, bool optional) {
  json* sub_schema = nullptr;
  if (schema_ != nullptr) {
    json& props = (*schema_)["properties"];
    json& entry = props[std::string(key)];
    if (!entry.is_object() || !entry.contains("properties")) {  // a section read twice keeps its declarations
      entry = {{"type", "object"}, {"description", std::string(doc)}, {"additionalProperties", false},
               {"patternProperties", {{"^_", {{"description", "comment"}}}}},  // skipped by the loader
               {"properties", json::object()}};
      if (!optional) (*schema_)["required"].push_back(std::string(key));
    }
    sub_schema = &entry;
  }
  const json* sub = nullptr;
  if (!schema_mode()) {
    if (has(key)) {
      sub = &(*object_)[std::string(key)];
      if (!sub->is_object()) fail(key, fmt::format("expected an object ({})", doc));
    } else if (!optional) {
      fail(key, fmt::format("missing required section ({})", doc));
    }
  }
  return Reader(sub, file_, path_of(key), registry_, sourced_, sub_schema);
}

std::vector<std::string> Reader::keys_of(std::string_view key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const json& v = (*object_)[std::string(key)];
  if (!v.is_object()) fail(key, "expected an object of named entries");
  registry_->mark_read(path_of(key));
  for (auto it = v.begin(); it != v.end(); ++it) out.push_back(it.key());
  return out;
}

namespace {
std::mutex inputs_mutex;
std::map<std::string, std::string>& inputs_map() {
  static std::map<std::string, std::string> m;
  return m;
}
}  // namespace

std::map<std::string, std::string> inputs_read() {
  std::lock_guard lock(inputs_mutex);
  return inputs_map();
}

json load_json_file(const std::string& path, std::vector<std::string>* include_chain) {
  std::vector<std::string> local_chain;
  if (include_chain == nullptr) include_chain = &local_chain;
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  if (std::find(include_chain->begin(), include_chain->end(), canonical) != include_chain->end()) {
    std::string chain;
    for (const auto& f : *include_chain) chain += f + " -> ";
    throw ConfigError(path, "include", "include cycle: " + chain + canonical);
  }
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path, "", "is a directory, expected a JSON file");
  // A device or FIFO ("/dev/zero", "/dev/stdin") would be read forever.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw ConfigError(path, "", "is not a regular file, expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file (missing or unreadable)");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  {
    std::lock_guard lock(inputs_mutex);
    inputs_map()[std::filesystem::path(path).lexically_normal().string()] = sha256_hex(text);
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    auto pos = what.find("error: ");
    throw ConfigError(path, "", fmt::format("malformed JSON at line {}, column {}: {}", line, col,
                                            pos == std::string::npos ? what : what.substr(pos + 7)));
  } catch (const json::exception& e) {  // out_of_range: a number no double holds (found by fuzz_platform)
    std::string what = e.what();
    auto pos = what.find("] ");
    throw ConfigError(path, "", "a JSON value out of range: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  if (!doc.is_object()) throw ConfigError(path, "", "the top level must be a JSON object");
  if (doc.contains("include")) {
    if (!doc["include"].is_string()) throw ConfigError(path, "include", "expected the path of a base file");
    std::filesystem::path base = std::filesystem::path(path).parent_path() / doc["include"].get<std::string>();
    if (!std::filesystem::exists(base, ec))
      throw ConfigError(path, "include",
                        fmt::format("the base file {} does not exist (an include is resolved relative to the file "
                                    "that includes it)",
                                    base.string()));
    include_chain->push_back(canonical);
    json merged = load_json_file(base.string(), include_chain);
    include_chain->pop_back();
    doc.erase("include");
    deep_merge(merged, doc);
    return merged;
  }
  return doc;
}

json parse_set_value(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {  // parse_error, or out_of_range for a number overflow
    return text;
  }
}

void apply_override(json& doc, const std::string& file, const std::string& path, const std::string& value,
                    const std::string& shown_prefix) {
  json parsed = parse_set_value(value);
  std::string full = shown_prefix.empty() ? path : shown_prefix + "." + path;
  json* node = &doc;
  std::stringstream ss(path);
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  if (parts.empty() || path.empty()) throw ConfigError(file, full, "--set needs KEY=VALUE with a non-empty key");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (!node->is_object()) throw ConfigError(file, full, fmt::format("--set: '{}' is not an object", parts[i - 1]));
    if (!node->contains(parts[i])) {
      std::string known;
      for (auto it = node->begin(); it != node->end(); ++it)
        if (it.key().rfind('_', 0) != 0)  // "_placement", "_numbering": comments, not values to set
          known += (known.empty() ? "" : ", ") + it.key();
      throw ConfigError(file, full, fmt::format("--set: no key '{}' here (known keys: {})", parts[i], known));
    }
    node = &(*node)[parts[i]];
    if (last) {
      if (node->is_object() && node->contains("value")) {
        (*node)["value"] = parsed;
      } else if (node->is_object()) {
        throw ConfigError(file, full, "--set: this is a section, not a value");
      } else {
        *node = parsed;
      }
    }
  }
}

namespace {

/// Edits (insert, delete, replace) turning `a` into `b`.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// " (did you mean 'x'?) Valid keys here: ..." for an unread `path`: the
/// names the models declared beside it (read or left at their default).
std::string known_keys_hint(const std::string& path, const Registry& registry) {
  const auto dot = path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot + 1);
  const std::string name = path.substr(parent.size());
  std::vector<std::string> siblings;
  for (const auto& [used, value] : registry.used) {
    if (used.compare(0, parent.size(), parent) != 0) continue;
    const std::string rest = used.substr(parent.size());
    const std::string first = rest.substr(0, rest.find('.'));
    if (!first.empty() && std::find(siblings.begin(), siblings.end(), first) == siblings.end())
      siblings.push_back(first);
  }
  if (siblings.empty()) return "";
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& k : siblings)
    if (const auto d = edit_distance(name, k); d < best_distance) {
      best = k;
      best_distance = d;
    }
  std::string out = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
  return out + fmt::format(". Valid keys here: {}", fmt::join(siblings, ", "));
}

void check_read_rec(const json& node, const std::string& file, const std::string& path, const Registry& registry) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& key = it.key();
    if (!key.empty() && key[0] == '_') continue;  // comments
    std::string p = path.empty() ? key : path + "." + key;
    if (registry.was_read(p)) continue;
    if (it.value().is_object() && !it.value().contains("value") && !it.value().empty()) {
      check_read_rec(it.value(), file, p, registry);
    } else {
      throw ConfigError(file, p, fmt::format("unknown key: no model reads it (value {}){}", shown(it.value()),
                                             known_keys_hint(p, registry)));
    }
  }
}
}  // namespace

void check_all_read(const json& doc, const std::string& file, const std::string& root_path, const Registry& registry) {
  check_read_rec(doc, file, root_path, registry);
}

}  // namespace cohsim::config
