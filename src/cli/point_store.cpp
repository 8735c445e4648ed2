#include "point_store.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "cohsim/config/sha256.hpp"
#include "provenance.hpp"

namespace cohsim::cli {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// A run's file name: the hash of what decides its result (scenario, variant, overrides, seed).
std::string point_id(const std::string& scenario, const std::string& variant,
                     const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed) {
  json key = {{"scenario", scenario}, {"variant", variant}, {"overrides", json::array()},
              {"seed", seed ? json(*seed) : json()}};
  for (const auto& o : overrides) key["overrides"].push_back({o.key, o.value});
  return config::sha256_hex(key.dump()).substr(0, 16);
}

/// The run in `file` when it is complete, this build made it and no file it read has changed since.
std::optional<RunOutput> load_point(const std::string& file, bool& stale) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("metrics") || !doc["metrics"].is_object()) return std::nullopt;
  if (doc.value("build_id", std::string()) != build_info()["build_id"].get<std::string>()) {
    stale = true;
    return std::nullopt;
  }
  // A file the run read (platform, includes, scenario) that changed since makes it stale too.
  const json inputs = doc.value("inputs", json::object());
  for (const auto& [path, digest] : inputs.items()) {
    const auto now = config::file_sha256_hex(path);
    if (!now || !digest.is_string() || *now != digest.get<std::string>()) {
      stale = true;
      return std::nullopt;
    }
  }
  RunOutput out;
  for (const auto& [name, value] : doc["metrics"].items())
    if (value.is_number()) out.results.add(name, value.get<double>());
  for (const auto& f : doc.value("failures", json::array()))
    if (f.is_string()) out.results.failures.push_back(f.get<std::string>());
  out.doc = std::move(doc);
  return out;
}

}  // namespace

PointStore::PointStore(std::string dir, std::string joblist) : dir_(std::move(dir)), joblist_(std::move(joblist)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) throw config::ConfigError("--points", dir_, "cannot make or use the folder: " + ec.message());
}

RunOutput PointStore::run(const std::string& scenario, const std::string& variant,
                          const std::vector<scenario::Override>& overrides, std::optional<std::uint64_t> seed,
                          const RunOutput& placeholder) {
  // The id hashes the scenario's canonical path: the same run from another working directory is the same point.
  std::error_code ec;
  const std::string canonical_scenario = fs::weakly_canonical(scenario, ec).string();
  const std::string file =
      (fs::path(dir_) / (point_id(ec ? scenario : canonical_scenario, variant, overrides, seed) + ".json")).string();
  bool stale = false;
  if (auto found = load_point(file, stale)) {
    ++reused_;
    return *found;
  }
  stale_ += stale ? 1 : 0;
  // A stale result goes: a runner of the job list (sweep.py --joblist) skips a line whose result is there.
  if (stale) fs::remove(file, ec);
  // The run names the scenario by its canonical path, so that the input files it records are absolute and a
  // later collect from another working directory finds them.
  const std::string& run_path = canonical_scenario.empty() ? scenario : canonical_scenario;
  if (emitting()) {
    if (!job_files_.insert(file).second) return placeholder;
    std::string cmd = shell_quoted((fs::canonical("/proc/self/exe")).string()) + " run " + shell_quoted(run_path);
    if (!variant.empty()) cmd += " --variant " + shell_quoted(variant);
    cmd += " --override-variant";
    for (const auto& o : overrides) cmd += " --set " + shell_quoted(o.key + "=" + o.value);
    if (seed) cmd += fmt::format(" --seed {}", *seed);
    cmd += " --json " + shell_quoted(file) + " -q";
    jobs_.push_back("cd " + shell_quoted(fs::current_path().string()) + " && " + cmd);
    return placeholder;
  }
  RunOutput out = run_scenario(run_path, variant, overrides, seed, false);
  add_provenance(out.doc);
  write_file_atomically(file, out.doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  ++ran_;
  return out;
}

void PointStore::write_joblist() const {
  std::string text;
  for (const auto& line : jobs_) text += line + "\n";
  write_file_atomically(joblist_, text);
}

std::string PointStore::joblist_written(const std::string& command) const {
  return fmt::format(
      "{0}: wrote {1} job(s) to {2} ({3} run(s) already in {4}{5}); run them (here: parallel < {2}; on Slurm:\n"
      "{6}/scripts/sweep.py --joblist {2} --backend slurm), then give the same command with --points {4} and\n"
      "without --emit-joblist to collect\n",
      command, jobs(), joblist_, reused_, dir_,
      stale_ > 0 ? fmt::format(", {} stale one(s) removed: made by another build or before an input file changed", stale_)
                 : "",
      source_dir());
}

std::string PointStore::summary(const std::string& command) const {
  return fmt::format("{}: {} run(s) read from {}, {} run here{}\n", command, reused_, dir_, ran_,
                     stale_ > 0 ? fmt::format(" ({} stale: made by another build or before an input file changed)", stale_)
                                : "");
}

}  // namespace cohsim::cli
