// schema: JSON Schema export from the parameter declarations.
// selftest coherence: the random coherence tester.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>

#include "cli.hpp"
#include "cohsim/sim/random.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

std::vector<std::string> shipped_platforms() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/configs/platforms"))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

void merge_schema(json& into, const json& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (it.key() == "required") {  // required only where every platform declaring it requires it (x86-only keys)
      if (!into.contains("required")) continue;
      json kept = json::array();
      for (const auto& key : into["required"])
        if (std::find(it.value().begin(), it.value().end(), key) != it.value().end()) kept.push_back(key);
      into["required"] = kept;
      continue;
    }
    if (into.contains(it.key()) && into[it.key()].is_object() && it.value().is_object())
      merge_schema(into[it.key()], it.value());
    else if (!into.contains(it.key()))
      into[it.key()] = it.value();
  }
}

}  // namespace

int cmd_schema(const std::vector<std::string>& args) {
  if (args.size() != 1 || (args[0] != "platform" && args[0] != "scenario")) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::cout << "cohsim schema platform|scenario: prints the JSON Schema of platform or scenario files,\n"
                   "exported from the parameter declarations in the code (for editors and CI checks).\n";
      return kOk;
    }
    throw po::error("usage: cohsim schema platform|scenario");
  }
  // Every shipped platform and every workload is loaded with schema recording
  // on; the declarations they make are merged (optional sections included).
  json platform_schema = {{"$schema", "http://json-schema.org/draft-07/schema#"}, {"title", "cohsim platform"},
                          {"type", "object"}, {"properties", json::object()}};
  json workloads_schema = json::object();
  for (const auto& path : shipped_platforms()) {
    json ps = {{"properties", json::object()}};
    config::Registry reg;
    scenario::Machine m(scenario::load_platform(path), 1, reg, &ps);
    for (const auto& [name, info] : scenario::workloads()) {
      json ws = {{"type", "object"}, {"properties", json::object()}};
      config::Reader params(nullptr, "(schema)", "params", &reg, false, &ws);
      try {
        info.make(params, m);
      } catch (const config::ConfigError&) {
        continue;  // this workload needs sections another platform has
      }
      if (!workloads_schema.contains(name)) workloads_schema[name] = ws;
      else merge_schema(workloads_schema[name], ws);
    }
    merge_schema(platform_schema, ps);
  }
  platform_schema["properties"]["include"] = {{"type", "string"}, {"description", "a base platform file, deep-merged under this one"}};
  platform_schema["patternProperties"] = {{"^_", {{"description", "comment"}}}};
  platform_schema["additionalProperties"] = false;  // the loader refuses keys no model reads
  if (args[0] == "platform") {
    std::cout << platform_schema.dump(1) << "\n";
    return kOk;
  }
  json names = json::array();
  json all_of = json::array();
  for (auto it = workloads_schema.begin(); it != workloads_schema.end(); ++it) {
    names.push_back(it.key());
    json params = it.value();
    params["additionalProperties"] = false;
    all_of.push_back({{"if", {{"properties", {{"workload", {{"const", it.key()}}}}}}},
                      {"then", {{"properties", {{"params", params}}}}}});
  }
  json sc = {{"$schema", "http://json-schema.org/draft-07/schema#"},
             {"title", "cohsim scenario"},
             {"type", "object"},
             {"required", {"platform", "workload"}},
             {"additionalProperties", false},
             {"patternProperties", {{"^_", {{"description", "comment"}}}}},
             {"properties",
              {{"description", {{"type", "string"}}},
               {"platform", {{"type", "string"}, {"description", "platform file, relative to this file"}}},
               {"workload", {{"enum", names}}},
               {"params", {{"type", "object"}, {"description", "workload parameters (defaults apply to absent ones)"}}},
               {"variants", {{"type", "object"}, {"additionalProperties", {{"type", "object"}}},
                             {"description", "named parameter overrides"}}},
               {"baseline", {{"type", "string"}, {"description", "the variant others are compared against"}}},
               {"seed", {{"type", "integer"}, {"minimum", 0}}}}},
             {"allOf", all_of}};
  std::cout << sc.dump(1) << "\n";
  return kOk;
}

namespace {

sim::Task<void> tester(cpu::Cpu& c, const std::vector<fabric::Addr>& lines, int ops, std::uint64_t seed,
                       std::uint64_t* increments, fabric::Addr counter) {
  sim::RandomStream rng(seed, fmt::format("selftest.cpu{}", c.id()));
  for (int i = 0; i < ops; ++i) {
    fabric::Addr line = lines[rng.below(lines.size())];
    fabric::Addr word = line + 8 * rng.below(8);
    switch (rng.below(4)) {
      case 0: co_await c.load(word, 8); break;
      case 1: co_await c.store(word, 8, rng.next()); break;
      case 2: co_await c.load(word + 4 * rng.below(2), 4); break;
      default:
        co_await c.rmw(counter, 8, fabric::RmwOp::add, 1);
        ++*increments;
        break;
    }
    c.sim().note_progress();
  }
  co_await c.drain_store_buffer();
}

}  // namespace

int cmd_selftest(const std::vector<std::string>& args) {
  std::string what, platform = source_dir() + "/configs/platforms/kunpeng920.json";
  int cpus = 8, ops = 20000, nlines = 8;
  std::uint64_t seed = 1;
  bool quiet = false;
  po::options_description d("cohsim selftest coherence [options]");
  d.add_options()("help,h", "this help")("cpus", po::value(&cpus), "CPUs taking part (spread over the machine)")(
      "ops", po::value(&ops), "operations per CPU")("lines", po::value(&nlines), "shared lines (false sharing: 8 words each)")(
      "seed", po::value(&seed), "seed")("platform", po::value(&platform), "platform file")(
      "quiet,q", po::bool_switch(&quiet), "summary only");
  auto parsed = parse_command_line(
      args, d, what,
      "Random coherence tester: random loads, stores and atomic increments from N CPUs on a few\n"
      "falsely shared lines, with tiny caches to force evictions, under the checker (single writer,\n"
      "every read against the coherence order). Exit 1 on a violation or deadlock.");
  if (!parsed) return kOk;
  if (what != "coherence") throw po::error("usage: cohsim selftest coherence [options]");
  auto doc = scenario::load_platform(platform);
  // Tiny private caches force evictions and their races.
  for (const char* level : {"l1d", "l2"}) {
    if (doc.doc.contains("caches") && doc.doc["caches"].contains(level)) {
      doc.doc["caches"][level]["size"]["value"] = "256B";
      doc.doc["caches"][level]["assoc"]["value"] = 2;
    }
  }
  config::Registry reg;
  scenario::Machine m(doc, seed, reg);
  if (cpus < 1 || cpus > m.cpu_count())
    throw config::ConfigError("--cpus", "", fmt::format("must be 1..{} on {}", m.cpu_count(), m.name()));
  if (ops < 1 || nlines < 1 || nlines > 4096) throw config::ConfigError("--ops/--lines", "", "must be positive (lines at most 4096)");
  m.fabric().set_checking(true);
  std::vector<fabric::Addr> lines;
  const int nodes = m.topology().node_count();
  for (int i = 0; i < nlines; ++i) lines.push_back(m.memory().alloc(i % nodes, 64, 64, fmt::format("selftest.line{}", i)));
  fabric::Addr counter = m.memory().alloc(0, 64, 64, "selftest.counter");
  std::vector<std::uint64_t> incs(static_cast<std::size_t>(cpus), 0);
  const int stride = std::max(1, m.cpu_count() / cpus);
  for (int i = 0; i < cpus; ++i) {
    int c = (i * stride) % m.cpu_count();
    m.sim().spawn(fmt::format("cpu{} tester", c), tester(m.cpu(c), lines, ops, seed, &incs[static_cast<std::size_t>(i)], counter));
  }
  auto t0 = std::chrono::steady_clock::now();
  sim::RunLimits limits;
  limits.max_time_without_progress = sim::kMs;
  int rc = kOk;
  std::string failure;
  try {
    m.sim().run(limits);
  } catch (const std::exception& e) {
    failure = e.what();
    rc = kCheckFailed;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::uint64_t expected = 0;
  for (auto v : incs) expected += v;
  std::uint64_t got = m.fabric().peek(counter, 8);
  if (rc == kOk && got != expected) {
    failure = fmt::format("atomic counter is {}, {} increments were made", got, expected);
    rc = kCheckFailed;
  }
  const auto& st = m.fabric().stats();
  const double total_ops = static_cast<double>(cpus) * ops;
  std::cout << fmt::format("selftest coherence on {}: {} CPUs x {} ops on {} lines, seed {}\n", m.name(), cpus, ops, nlines, seed);
  std::cout << fmt::format("  ops {:.0f}  violations {}  checks {}  transactions {}  evictions {}  invalidations {}\n",
                           total_ops, m.fabric().violations(), st.checks, st.transactions, st.evictions, st.invalidations);
  std::cout << fmt::format("  counter {} (expected {})  host {:.2f} s, {:.3g} ops/s\n", got, expected, wall, total_ops / wall);
  if (rc != kOk) std::cout << "FAILED: " << failure << "\n";
  else if (!quiet) std::cout << "ok\n";
  return rc;
}

}  // namespace cohsim::cli
