// Small harness helpers for the core tests: platforms from JSON with a few
// keys changed, a machine (optionally with custom protocol tables), programs
// spawned on CPUs, and the CLI binary run on temporary files.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "cohsim/config/params.hpp"
#include "cohsim/cpu/cpu.hpp"
#include "cohsim/fabric/fabric.hpp"
#include "cohsim/scenario/machine.hpp"
#include "cohsim/scenario/scenario.hpp"

namespace cohsim::test {

using config::json;
using sim::Task;
using sim::Tick;

/// A file of the source tree (configs/..., data/...).
inline std::string source_path(const std::string& rel) { return std::string(COHSIM_SOURCE_DIR) + "/" + rel; }

/// A shipped platform's JSON (includes resolved).
inline json platform_json_as_shipped(const std::string& name = "kunpeng920") {
  return config::load_json_file(source_path("configs/platforms/" + name + ".json"));
}

/// The shipped kp920.c2c.same-cluster calibration row, shortened (50 rounds),
/// under another id and measurement (for validate's tests).
inline json c2c_row(const std::string& id, double measured) {
  const json cal = config::load_json_file(source_path("data/calibration.json"));
  for (json row : cal["rows"])
    if (row["id"] == "kp920.c2c.same-cluster") {
      row["id"] = id;
      row["measured"] = measured;
      row["set"]["rounds"] = 50;
      return row;
    }
  throw std::runtime_error("data/calibration.json has no row kp920.c2c.same-cluster");
}

/// The platform with the flat fabric: a memory-side LLC at each home and
/// atomics executed in the core. The unit tests of the core and the protocol
/// run on it (Kunpeng's topology and timing); the per-die L3 and L3-executed
/// atomics have their own tests (llc_atomics_test.cpp).
inline json platform_json(const std::string& name = "kunpeng920") {
  json doc = platform_json_as_shipped(name);
  doc["caches"]["llc"].erase("placement");
  doc["coherence"]["atomics"] = {{"cas", "near"}, {"swp", "near"}, {"ld_op", "near"}, {"st_op", "near"}};
  return doc;
}

/// Dotted `path` ("caches.llc.latency") as a JSON pointer ("/caches/llc/latency").
inline json::json_pointer dotted_pointer(const std::string& path) {
  std::string pointer = "/";
  for (const char ch : path) {
    if (ch == '.') pointer += '/';
    else if (ch == '~') pointer += "~0";
    else if (ch == '/') pointer += "~1";
    else pointer += ch;
  }
  return json::json_pointer(pointer);
}

/// Sets the value at dotted `path`, keeping a {value, source} leaf's form.
inline void set_value(json& doc, const std::string& path, const json& v) {
  json& node = doc[dotted_pointer(path)];
  if (node.is_object() && node.contains("value")) node["value"] = v;
  else node = v;
}

/// The value at dotted `path` (a {value, source} leaf whole); throws if absent.
inline const json& value_at(const json& doc, const std::string& path) { return doc.at(dotted_pointer(path)); }

/// A coherence.atomics section placing every class of atomic at `place` (near, llc, home).
inline json all_atomics(const std::string& place) {
  return {{"cas", place}, {"swp", place}, {"ld_op", place}, {"st_op", place}};
}

/// Tiny private caches (two lines, one set) so that a third line evicts.
inline json with_tiny_caches(json doc) {
  for (const char* level : {"l1d", "l2"}) {
    set_value(doc, std::string("caches.") + level + ".size", "128B");
    set_value(doc, std::string("caches.") + level + ".assoc", 2);
  }
  return doc;
}

/// The same platform as an x86 machine (arm64-only keys removed).
inline json as_x86(json doc) {
  doc["cpu"]["arch"] = "x86";
  for (const char* k : {"dsb", "dmb", "isb", "wfe_event_stream", "lse_atomics", "outer_shareable_is_full_system"}) doc["cpu"].erase(k);
  doc["cpu"]["tsc_read"] = {{"value", "10ns"}, {"source", "measurement: Agner Fog's instruction tables, RDTSC about 24 cycles on Haswell"}};
  return doc;
}

/// A machine built piece by piece, so protocol tables can be swapped in.
struct Rig {
  config::Registry registry;
  json doc;
  std::unique_ptr<topo::Topology> topo;
  std::unique_ptr<fabric::Interconnect> icn;
  std::unique_ptr<fabric::MemoryMap> mem;
  sim::Simulator sim;
  std::unique_ptr<fabric::Fabric> fab;
  std::vector<cpu::Core> cores;  ///< one per physical core, sized once (the CPUs point into it)
  std::vector<std::unique_ptr<cpu::Cpu>> cpus;

  explicit Rig(json platform, fabric::CacheTable* cache_table = nullptr, fabric::DirTable* dir_table = nullptr,
               std::uint64_t seed = 1)
      : doc(std::move(platform)) {
    config::Reader root(&doc, "test-platform.json", "platform", &registry, /*sourced=*/true);
    topo = std::make_unique<topo::Topology>(root.section("topology", ""));
    icn = std::make_unique<fabric::Interconnect>(root.section("interconnect", ""), *topo, sim);
    fabric::FabricParams fp(root.section("caches", ""), root.section("coherence", ""), root.section("memory", ""));
    mem = std::make_unique<fabric::MemoryMap>(topo->node_count(), fp.node_capacity);
    fab = std::make_unique<fabric::Fabric>(fp, sim, *icn, *mem, seed, cache_table, dir_table);
    fab->set_checking(true);
    cpu::CpuParams cp(root.section("cpu", ""));
    cores = std::vector<cpu::Core>(static_cast<std::size_t>(topo->core_count()));
    for (int c = 0; c < topo->cpu_count(); ++c)
      cpus.push_back(std::make_unique<cpu::Cpu>(c, cp, *fab, sim, cores[static_cast<std::size_t>(topo->cpu(c).core_global)]));
  }
  cpu::Cpu& cpu(int n) { return *cpus.at(static_cast<std::size_t>(n)); }
  /// One line (64 bytes) on `node`.
  fabric::Addr line(int node, const std::string& name) { return mem->alloc(node, 64, 64, name); }
  /// Runs to the end; rethrows errors raised inside programs.
  void run() { sim.run(); }
};

namespace detail {
inline Task<void> delayed(sim::Simulator& sim, Tick start, std::function<Task<void>()> body) {
  if (start > 0) co_await sim.delay(start);
  co_await body();
}
}  // namespace detail

/// Spawns `body` (a coroutine lambda; its captures must outlive the run) at `start`.
inline void spawn_at(sim::Simulator& sim, Tick start, std::function<Task<void>()> body,
                     const std::string& name = "test program") {
  sim.spawn(name, detail::delayed(sim, start, std::move(body)));
}

/// A temporary directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cohsim-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  /// Writes `text` to `name` inside the directory; returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// What the CLI binary did: its exit code and everything it printed.
struct CliResult {
  int exit_code = -1;
  std::string output;
};

/// Runs the cohsim binary with `args` (shell words), stdout and stderr together; in `cwd` when given.
inline CliResult run_cli(const std::string& args, const std::string& cwd = "") {
  std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + std::string(COHSIM_BINARY) + " " + args + " 2>&1";
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.output += buf.data();
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// The whole content of the file at `path` (empty when it cannot be read).
inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Quotes a path for the shell.
inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace cohsim::test
