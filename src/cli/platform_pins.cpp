#include "platform_pins.hpp"

#include "cohsim/config/params.hpp"

namespace cohsim::cli {

using nlohmann::json;

namespace {

std::string as_written(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void collect(const json& node, const std::string& path, std::vector<PlatformParameter>& out) {
  if (node.is_object() && node.contains("value") && node.contains("source") && node["source"].is_string()) {
    config::Provenance provenance;  // the one parser of "calibration: <row ids>"
    provenance.source = node["source"].get<std::string>();
    PlatformParameter p;
    p.path = path;
    p.value = as_written(node["value"]);
    p.source = provenance.source;
    p.rows = provenance.calibration_rows();
    const json* range =
        node.contains("range") && node["range"].is_array() && node["range"].size() == 2 ? &node["range"] : nullptr;
    if (range != nullptr) p.range = as_written((*range)[0]) + " .. " + as_written((*range)[1]);
    p.estimate = range != nullptr || p.source.rfind("estimate", 0) == 0;
    out.push_back(std::move(p));
    return;
  }
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) collect(it.value(), path + "." + it.key(), out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) collect(node[i], path + "." + std::to_string(i), out);
  }
}

}  // namespace

std::vector<PlatformParameter> platform_parameters(const std::string& platform_file) {
  std::vector<PlatformParameter> out;
  collect(config::load_json_file(platform_file), "platform", out);
  return out;
}

}  // namespace cohsim::cli
