// schema: JSON Schema export from the parameter declarations.
// selftest coherence: the random coherence tester.
#include <algorithm>
#include <array>
#include <deque>
#include <unordered_map>
#include <boost/program_options.hpp>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <vector>

#include "cli.hpp"
#include "cohsim/sim/random.hpp"
#include "models/workloads/tester_ops.hpp"

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

namespace {
/// `schema` with no section or key required: a file that includes a base holds only what it changes. A
/// number it does write still needs its value and source.
json without_required(json schema) {
  if (!schema.is_object()) return schema;
  if (auto r = schema.find("required"); r != schema.end() && r->is_array()) {
    json kept = json::array();
    for (const auto& key : *r)
      if (key == "value" || key == "source") kept.push_back(key);
    if (kept.empty()) schema.erase("required");
    else *r = kept;
  }
  for (auto& [key, value] : schema.items())
    if (value.is_object()) value = without_required(value);
  return schema;
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
    // A file with an include is checked as it stands: every key it has must be a platform key of the
    // right kind, none is required (the base has them; cohsim checks the merged file when it loads it).
    json whole = platform_schema;
    whole.erase("$schema");
    whole.erase("title");
    json partial = without_required(whole);
    const json doc = {{"$schema", platform_schema["$schema"]},
                      {"title", platform_schema["title"]},
                      {"if", {{"required", {"include"}}}},
                      {"then", partial},
                      {"else", whole}};
    std::cout << doc.dump(1) << "\n";
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
               {"seed", {{"type", "integer"}, {"minimum", 0}}},
               {"screen", {{"type", "object"}, {"minProperties", 1},
                           {"description", "the settings (as --set) of the short runs compare's quick ranges screen "
                                           "every input with"}}}}},
             {"allOf", all_of}};
  std::cout << sc.dump(1) << "\n";
  return kOk;
}

namespace {

/// One access of a tester program, for the per-location coherence check.
struct Access {
  fabric::Addr word;
  std::uint64_t value;  ///< written, or read (filled in when the load completes)
  bool write;
};

/// Random loads (several in flight), stores of unique values, atomic
/// increments and the ordering operations of the CPU's architecture (dmb,
/// dsb, ldar, ldapr, stlr; mfence, lfence), so every reordering path runs
/// under the fabric's checker; `log` gets this CPU's accesses in program order.
sim::Task<void> tester(cpu::Cpu& c, const std::vector<fabric::Addr>& lines, int ops, std::uint64_t seed,
                       std::uint64_t* increments, fabric::Addr counter, std::vector<Access>* log) {
  using cpu::Order;
  sim::RandomStream rng = models::tester_op_stream(seed, c.id());
  struct InFlight {
    cpu::LoadFuture value;
    std::size_t entry;
  };
  std::deque<InFlight> loads;
  auto settle = [&](std::size_t keep) -> sim::Task<void> {
    while (loads.size() > keep) {
      (*log)[loads.front().entry].value = co_await loads.front().value.value();
      loads.pop_front();
    }
  };
  std::uint64_t written = 0;
  for (int i = 0; i < ops; ++i) {
    const models::TesterOp op = models::draw_tester_op(rng, lines.size(), c.is_arm());
    const fabric::Addr word = lines[op.line] + 8 * op.word;
    switch (op.kind) {
      case models::TesterOp::Kind::load: {
        const Order o = c.is_arm() ? std::array{Order::relaxed, Order::relaxed, Order::acquire,
                                                Order::acquire_pc}[op.load_order]
                                   : Order::relaxed;
        log->push_back({word, 0, false});
        loads.push_back({c.issue_load(word, 8, o), log->size() - 1});
        co_await settle(op.keep_in_flight);  // up to three loads stay in flight
        break;
      }
      case models::TesterOp::Kind::store: {
        const std::uint64_t v = (static_cast<std::uint64_t>(c.id()) + 1) << 32 | ++written;  // unique (CoherenceOrder reads it)
        log->push_back({word, v, true});
        co_await c.store(word, 8, v, op.strong ? Order::release : Order::relaxed);
        break;
      }
      case models::TesterOp::Kind::half_load: co_await c.load(word + 4 * op.half, 4); break;  // a half word: forwarding refused
      case models::TesterOp::Kind::increment:
        co_await c.rmw(counter, 8, fabric::RmwOp::add, 1, 0, op.strong ? Order::relaxed : Order::full);
        ++*increments;
        break;
      case models::TesterOp::Kind::barrier:
        if (!c.is_arm()) {
          if (op.lfence) co_await c.lfence();
          else co_await c.mfence();
        } else {
          const auto domain = std::array{cpu::Domain::ish, cpu::Domain::sy}[op.domain];
          const auto type = std::array{cpu::BarrierType::all, cpu::BarrierType::st, cpu::BarrierType::ld}[op.type];
          if (op.dsb) co_await c.dsb(domain, type);
          else co_await c.dmb(domain, type);
        }
        break;
    }
    c.sim().note_progress();
  }
  co_await settle(0);
  co_await c.drain_store_buffer();
}

/// Where each value the tester stored sits in its word's coherence order. A
/// store writes a unique value, (CPU id + 1) << 32 | n with n counting from
/// 1, so the value names its write: per CPU, indexed by n - 1, the word and
/// the place there (1 for the word's first write). The counter's increments
/// are not given to it: no logged access is of the counter.
class CoherenceOrder {
 public:
  explicit CoherenceOrder(int cpus) : stores_(static_cast<std::size_t>(cpus)) {}

  /// The fabric's write observer: an 8-byte write of v to word a.
  void wrote(fabric::Addr a, std::uint64_t v) {
    const std::size_t place = ++writes_[a];
    const auto store = store_of(v);
    if (!store) return;
    auto& places = stores_[store->cpu];
    if (places.size() <= store->index) places.resize(store->index + 1);
    Place& p = places[store->index];
    if (p.place == 0) p = {a, place};  // a value written again keeps its first place
  }

  /// The place of value v in word a's order (0: the initial value), or
  /// nothing if no store wrote v there.
  std::optional<std::size_t> place(fabric::Addr a, std::uint64_t v) const {
    if (v == 0) return 0;
    const auto store = store_of(v);
    if (!store || store->index >= stores_[store->cpu].size()) return std::nullopt;
    const Place& p = stores_[store->cpu][store->index];
    if (p.place == 0 || p.word != a) return std::nullopt;
    return p.place;
  }

 private:
  struct Store {
    std::size_t cpu, index;  // index: n - 1
  };
  /// The CPU slot and index of a tester store's value, or nothing for any other value.
  std::optional<Store> store_of(std::uint64_t v) const {
    const std::uint64_t cpu = v >> 32, n = v & 0xffffffffu;
    if (cpu == 0 || cpu > stores_.size() || n == 0) return std::nullopt;
    return Store{static_cast<std::size_t>(cpu - 1), static_cast<std::size_t>(n - 1)};
  }
  struct Place {
    fabric::Addr word = 0;
    std::size_t place = 0;  // 0: not written
  };
  std::unordered_map<fabric::Addr, std::size_t> writes_;  // per word: its writes so far
  std::vector<std::vector<Place>> stores_;                 // per CPU id
};

/// Per-location coherence of one CPU's accesses, in program order, against
/// the order its words' writes entered (`order`): reads never go back (CoRR),
/// a read after the CPU's own write sees it or a later one (CoWR), and a write
/// comes after everything the CPU read or wrote there before (CoRW, CoWW).
/// Returns the first violation, or "".
std::string check_per_location(int cpu, const std::vector<Access>& log, const CoherenceOrder& order) {
  std::unordered_map<fabric::Addr, std::size_t> floor;  // per word: the latest position this CPU has seen or made
  for (std::size_t i = 0; i < log.size(); ++i) {
    const Access& e = log[i];
    const std::optional<std::size_t> place = order.place(e.word, e.value);
    if (!place) return fmt::format("cpu {} access {} of {:#x}: value {:#x} was never written", cpu, i, e.word, e.value);
    const std::size_t pos = *place;
    std::size_t& f = floor[e.word];
    if (e.write ? pos <= f : pos < f)
      return fmt::format("cpu {} access {} ({} of {:#x}, value {:#x}) is at position {} of the word's coherence order, "
                         "before position {} that an earlier access of this CPU saw or made",
                         cpu, i, e.write ? "write" : "read", e.word, e.value, pos, f);
    f = pos;
  }
  return "";
}

}  // namespace

int cmd_selftest(const std::vector<std::string>& args) {
  std::string what, platform = source_dir() + "/configs/platforms/kunpeng920.json";
  int cpus = 8, ops = 0, nlines = 8;
  Unsigned64 seed_option{1};
  bool quiet = false;
  po::options_description d("cohsim selftest coherence [options]");
  d.add_options()("help,h", "this help")("cpus", whole(&cpus), "CPUs taking part (spread over the machine)")(
      "ops", whole(&ops), "operations per CPU (default: 160,000 in all, at least 100 per CPU)")("lines", whole(&nlines), "shared lines, 1..4096 (false sharing: 8 words each)")(
      "seed", po::value(&seed_option), "seed (default 1)")("platform", po::value(&platform), "platform file")(
      "quiet,q", po::bool_switch(&quiet), "summary only");
  auto parsed = parse_command_line(
      args, d, what,
      "Random coherence tester: random loads (several in flight), stores, atomic increments and\n"
      "barriers/acquires/releases from N CPUs on a few falsely shared lines, with tiny caches to force\n"
      "evictions and timing jitter (named source selftest.jitter), under the checker (single writer,\n"
      "every read against the coherence order) and a per-location coherence check of each CPU's\n"
      "accesses in program order (CoRR, CoWR, CoRW, CoWW). Exit 1 on a violation or deadlock.");
  if (!parsed) return kOk;
  if (what != "coherence") throw po::error("usage: cohsim selftest coherence [options]");
  const std::uint64_t seed = seed_option.value;
  auto doc = scenario::load_platform(platform);
  {  // The cache levels as the file has them, checked as a run reads them, before they are replaced.
    config::Registry as_written;
    config::Reader root(&doc.doc, doc.file, "platform", &as_written, /*sourced=*/true);
    scenario::read_fabric_params(root);
  }
  // Tiny private caches force evictions and their races.
  for (const char* level : {"l1d", "l2"}) {
    if (doc.doc.contains("caches") && doc.doc["caches"].contains(level)) {
      doc.doc["caches"][level]["size"]["value"] = "256B";
      doc.doc["caches"][level]["assoc"]["value"] = 2;
    }
  }
  config::Registry reg;
  scenario::Machine m(doc, seed, reg);
  m.check_platform_fully_read();  // a mistyped key would test a machine the file does not describe
  if (cpus < 1 || cpus > m.cpu_count())
    throw config::ConfigError("--cpus", "", fmt::format("must be 1..{} on {}", m.cpu_count(), m.name()));
  if (!parsed->count("ops")) ops = std::max(100, 160000 / cpus);  // a big machine's run stays short
  if (ops < 1) throw config::ConfigError("--ops", "", fmt::format("{}: must be at least 1", ops));
  if (nlines < 1 || nlines > 4096) throw config::ConfigError("--lines", "", fmt::format("{}: must be 1..4096", nlines));
  m.fabric().set_checking(true);
  std::vector<fabric::Addr> lines;
  const int nodes = m.topology().node_count();
  for (int i = 0; i < nlines; ++i) lines.push_back(m.memory().alloc(i % nodes, 64, 64, fmt::format("selftest.line{}", i)));
  fabric::Addr counter = m.memory().alloc(0, 64, 64, "selftest.counter");
  std::vector<std::uint64_t> incs(static_cast<std::size_t>(cpus), 0);
  std::vector<std::vector<Access>> logs(static_cast<std::size_t>(cpus));
  CoherenceOrder order(m.cpu_count());
  m.fabric().set_write_observer([&](fabric::Addr a, int size, std::uint64_t v) {
    if (size == 8 && a != counter) order.wrote(a, v);
  });
  sim::RandomStream jitter = models::tester_jitter_stream(seed);
  const int stride = std::max(1, m.cpu_count() / cpus);
  std::vector<int> ids;
  for (int i = 0; i < cpus; ++i) {
    int c = (i * stride) % m.cpu_count();
    ids.push_back(c);
    m.cpu(c).set_jitter(&jitter, 300 * sim::kNs);  // more interleavings of the same program
    logs[static_cast<std::size_t>(i)].reserve(static_cast<std::size_t>(ops));  // at most an access per op
    m.sim().spawn(fmt::format("cpu{} tester", c), tester(m.cpu(c), lines, ops, seed, &incs[static_cast<std::size_t>(i)],
                                                        counter, &logs[static_cast<std::size_t>(i)]));
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
  for (std::size_t i = 0; rc == kOk && i < logs.size(); ++i) {
    failure = check_per_location(ids[i], logs[i], order);
    if (!failure.empty()) rc = kCheckFailed;
  }
  const auto& st = m.fabric().stats();
  const double total_ops = static_cast<double>(cpus) * ops;
  std::cout << fmt::format("selftest coherence on {}: {} CPUs x {} ops on {} lines, seed {}\n", m.name(), cpus, ops, nlines, seed);
  std::cout << fmt::format("  ops {:.0f}  violations {}  checks {}  transactions {}  evictions {}  invalidations {}\n",
                           total_ops, m.fabric().violations(), st.checks, st.transactions, st.evictions, st.invalidations);
  std::cout << fmt::format("  counter {} (expected {})  events {}  host {:.2f} s, {:.3g} ops/s\n", got, expected,
                           m.sim().events_executed(), wall, total_ops / wall);
  if (rc != kOk) std::cout << "FAILED: " << failure << "\n";
  else if (!quiet) std::cout << "ok\n";
  return rc;
}

}  // namespace cohsim::cli
