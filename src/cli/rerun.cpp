// cohsim rerun RESULTS.json: runs again what a `run --json` document records
// (scenario, variant, --sets, seed, platform file) and says whether the
// metrics are the same, and which inputs or build differ when they are not.
#include <filesystem>
#include <fmt/format.h>
#include <iostream>

#include "cli.hpp"
#include "cohsim/config/inputs_read.hpp"
#include "provenance.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {
const json& need(const json& doc, const std::string& file, const char* key, bool (json::*is)() const noexcept) {
  if (!doc.contains(key) || !(doc[key].*is)())
    throw config::ConfigError(file, key, "missing or of the wrong type: not a results document of cohsim run --json");
  return doc[key];
}
}  // namespace

int cmd_rerun(const std::vector<std::string>& args) {
  std::string file;
  bool quiet = false;
  po::options_description d("cohsim rerun RESULTS.json [options]");
  d.add_options()("help,h", "this help")("quiet,q", po::bool_switch(&quiet), "print only the differences");
  if (!parse_command_line(args, d, file,
                          "Runs again what a results document of `cohsim run --json` records (scenario, variant,\n"
                          "--sets, seed, platform file) and compares the metrics: exit 0 when every one is the same,\n"
                          "1 when any differs (the inputs whose sha256 changed and the build are named), 2 for a file\n"
                          "that is no such document."))
    return kOk;
  if (file.empty()) throw po::error("missing RESULTS.json (written by cohsim run --json)");
  const json doc = config::load_json_file(file);
  const std::string scenario = need(doc, file, "scenario", &json::is_string).get<std::string>();
  const std::string variant = need(doc, file, "variant", &json::is_string).get<std::string>();
  const std::string platform = need(doc, file, "platform_file", &json::is_string).get<std::string>();
  const std::uint64_t seed = need(doc, file, "seed", &json::is_number_unsigned).get<std::uint64_t>();
  const json& recorded = need(doc, file, "metrics", &json::is_object);
  std::vector<scenario::Override> overrides;
  for (const auto& [k, v] : need(doc, file, "overrides", &json::is_object).items()) {
    if (!v.is_string()) throw config::ConfigError(file, "overrides." + k, "expected the --set value as a string");
    overrides.push_back({k, v.get<std::string>()});
  }
  // The document's paths are as the command gave them: relative ones start in the directory it ran in.
  if (const std::string cwd = doc.value("cwd", std::string()); !cwd.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(cwd, ec)) std::filesystem::current_path(cwd, ec);
    if (ec || !std::filesystem::is_directory(cwd))
      std::cerr << fmt::format("cohsim rerun: the run's directory {} cannot be entered: its relative paths are read "
                               "from here\n", cwd);
  }
  const auto inputs_before = config::inputs_read();  // the results file itself
  RunOutput out = run_scenario(scenario, variant, overrides, seed, false, nullptr, platform);
  std::vector<std::string> differ;
  const json& now = out.doc["metrics"];
  for (const auto& [k, v] : recorded.items())
    if (!now.contains(k)) differ.push_back(fmt::format("  {}: {} recorded, not reported now", k, v.dump()));
    else if (now[k] != v) differ.push_back(fmt::format("  {}: {} recorded, {} now", k, v.dump(), now[k].dump()));
  for (const auto& [k, v] : now.items())
    if (!recorded.contains(k)) differ.push_back(fmt::format("  {}: not recorded, {} now", k, v.dump()));
  if (differ.empty()) {
    if (!quiet) std::cout << fmt::format("reproduced: all {} metrics of {} are the same\n", recorded.size(), file);
    return kOk;
  }
  std::cout << fmt::format("{} of the metrics of {} differ:\n", differ.size(), file);
  for (const auto& line : differ) std::cout << line << "\n";
  std::vector<std::string> why;
  const auto read_now = config::inputs_read();
  const json recorded_inputs = doc.value("inputs", json::object());
  for (const auto& [path, digest] : recorded_inputs.items()) {
    auto it = read_now.find(path);
    if (it == read_now.end()) why.push_back(fmt::format("  input {} was not read this time", path));
    else if (it->second != digest) why.push_back(fmt::format("  input {} changed (sha256 {} recorded, {} now)", path, digest.dump(), it->second));
  }
  for (const auto& [path, digest] : read_now)
    if (!inputs_before.contains(path) && !recorded_inputs.contains(path))
      why.push_back(fmt::format("  input {} was read this time, not recorded", path));
  const json build = build_info();
  if (doc.value("build_id", std::string()) != build["build_id"].get<std::string>())
    why.push_back(fmt::format("  the build: {} recorded, {} now", doc.value("build_id", json("none")).dump(),
                              build["build_id"].get<std::string>()));
  if (why.empty()) why.push_back("  neither the inputs nor the build differ: the run is not deterministic (a bug)");
  std::cout << "what differs:\n";
  for (const auto& line : why) std::cout << line << "\n";
  return kCheckFailed;
}

}  // namespace cohsim::cli
