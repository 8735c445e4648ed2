// The herdtools7 catalogues shipped in tests/data/litmus (AArch64 on
// kunpeng920, x86-64 on skylake-sp-2s) at a modest number of runs: no
// forbidden outcome is ever witnessed, the share of supported tests holds its
// floor, and so does the share of allowed outcomes witnessed: every x86-TSO
// one (at 10,000 runs: two three-thread tests show theirs about once in
// 1,200 runs), and for AArch64 what the weak core reaches today
// (docs/memory-model.md lists the rest and why; the issue asks for 80 %).
#include <catch2/catch.hpp>

#include <iostream>
#include <string_view>

#include "cohsim/litmus/suite.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::litmus;

namespace {

// The sanitizer build runs x86 at 1000 runs to stay within CI's time; its
// floor is then what 1000 runs show (13 of 15).
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

struct Catalogue {
  std::string dir;
  double supported_floor;
  double witnessed_floor;  ///< share of the Allowed tests run whose outcome is witnessed
  std::uint64_t runs = 1000;
};

/// Runs every test of the catalogue folder `dir` (relative to the source tree) with its kinds.txt; no test may
/// be an error or witness a forbidden outcome.
std::vector<Entry> run_folder(const std::string& dir, std::uint64_t runs) {
  std::vector<std::string> kinds_files;
  const auto files = expand_paths({test::source_path(dir)}, kinds_files);
  REQUIRE(kinds_files.size() == 1);
  SuiteOptions options;
  options.aarch64_platform = test::source_path("configs/platforms/kunpeng920.json");
  options.x86_platform = test::source_path("configs/platforms/skylake-sp-2s.json");
  options.runs = runs;
  options.kinds = read_kinds(kinds_files[0]);
  std::map<std::string, scenario::PlatformDoc> platforms;
  std::vector<Entry> entries;
  for (const auto& f : files) {
    entries.push_back(run_file(f, options, platforms));
    const Entry& e = entries.back();
    INFO(e.file << ": " << e.reason);
    CHECK(e.status != Entry::Status::error);
    CHECK(e.verdict != Verdict::unsound);
  }
  return entries;
}

void run_catalogue(const Catalogue& c) {
  const std::vector<Entry> entries = run_folder("tests/data/litmus/herdtools7/" + c.dir, c.runs);
  std::cout << c.dir << ": " << format_summary(entries);
  const Summary s = summarize(entries);
  CHECK(s.supported() >= c.supported_floor * s.tests);
  CHECK(s.allowed_seen >= c.witnessed_floor * s.allowed_run);
}

}  // namespace

// CSEL depends on the flags and on both sources (never weaker than the
// architecture), stronger than herd's default, which lets LB+rel+CSEL,
// MP+rel+CSEL and MP+rel+CSEL-addr through: those three are not seen (31 of 38).
TEST_CASE("The AArch64 catalogue witnesses no forbidden outcome and holds its share of allowed ones", "[litmus][suite]") { run_catalogue({"aarch64", 0.9, 0.81}); }
// Its MP+rel+CAS-*-addr outcomes appear once or a few times in 1000 runs (a chain of two dependent loads must bind
// before one independent load), so it runs 4000 a test: 11 of 16 (the five LB shapes need a store to pass an
// atomic not performed yet); the sanitizer build runs 1000 (8 of 16).
TEST_CASE("The AArch64 CAS catalogue witnesses no forbidden outcome and holds its share of allowed ones", "[litmus][suite]") {
  run_catalogue({"aarch64-cas", 0.9, kSanitized ? 0.45 : 0.6, kSanitized ? 1000u : 4000u});
}
// 4 of its 50 tests need virtual memory (Variant=vmsa: PTE, TLBI): 46 of 50
// are in the subset (the two instruction-fetch ones included).
TEST_CASE("The AArch64 reader's guide catalogue witnesses no forbidden outcome and holds its share of allowed ones", "[litmus][suite]") {
  run_catalogue({"aarch64-readers-guide", 0.9, 1.0});
}
TEST_CASE("The x86-64 catalogue witnesses no forbidden outcome and every allowed one", "[litmus][suite]") {
  run_catalogue({"x86_64", 0.9, kSanitized ? 0.85 : 1.0, kSanitized ? 1000u : 10000u});
}

// The Dat3M AArch64 suite (1,062 tests in 14 folders, tests/data/litmus/dat3m-aarch64), sampled at 300 runs a test
// to stay well under a minute: never a forbidden outcome, every test in the subset. The witnessed shares are floors
// of what the runner reaches today (docs/memory-model.md), less a margin, so that a lost relaxation fails: 228 of
// 312 at 300 runs (about 81 % at 2000); ATOM (exclusive pairs to different locations, ordered by nothing) every
// one of its 23; HAND2 6 of 6; LD (three threads, DMB LD) 33 of 47; PPO (dependency chains with a link that does
// not order) 61 of 127.
TEST_CASE("The Dat3M AArch64 suite witnesses no forbidden outcome", "[litmus][suite][dat3m]") {
  const std::uint64_t runs = kSanitized ? 50 : 300;
  std::vector<Entry> all;
  for (const auto& family : {"ATOM", "CO", "EXTRA", "Fence2", "FenceLA", "HAND", "HAND2", "LD", "POPL16", "PPO",
                             "RPLUS", "RelAcq", "TUTO", "dart"}) {
    const auto entries = run_folder(std::string("tests/data/litmus/dat3m-aarch64/") + family, runs);
    const Summary f = summarize(entries);
    INFO(family << ": " << f.allowed_seen << " of " << f.allowed_run);
    if (std::string_view(family) == "ATOM") CHECK(f.allowed_seen == f.allowed_run);
    if (std::string_view(family) == "PPO") CHECK(f.allowed_seen >= (kSanitized ? 0.1 : 0.4) * f.allowed_run);
    if (std::string_view(family) == "LD") CHECK(f.allowed_seen >= (kSanitized ? 0.3 : 0.6) * f.allowed_run);
    if (std::string_view(family) == "HAND2") CHECK(f.allowed_seen >= (kSanitized ? 0.3 : 0.8) * f.allowed_run);
    all.insert(all.end(), entries.begin(), entries.end());
  }
  std::cout << "dat3m-aarch64: " << format_summary(all);
  const Summary s = summarize(all);
  CHECK(s.tests == 1062);
  CHECK(s.supported() == s.tests);
  CHECK(s.allowed_seen >= (kSanitized ? 0.4 : 0.68) * s.allowed_run);
}

TEST_CASE("a single test file gets the verdicts of its folder's kinds.txt", "[litmus][suite]") {
  std::vector<std::string> kinds_files;
  const auto files = expand_paths({test::source_path("tests/data/litmus/herdtools7/aarch64/SB.litmus")}, kinds_files);
  REQUIRE(files.size() == 1);
  REQUIRE(kinds_files.size() == 1);
  CHECK(read_kinds(kinds_files[0]).count("SB") == 1);
}

TEST_CASE("tests of two folders run together are each judged by their own folder's kinds", "[litmus][suite]") {
  std::vector<std::string> kinds_files, file_kinds;
  const auto files = expand_paths({test::source_path("tests/data/litmus/herdtools7/x86_64/MP.litmus"),
                                   test::source_path("tests/data/litmus/herdtools7/aarch64/MP.litmus")},
                                  kinds_files, &file_kinds);
  REQUIRE(files.size() == 2);
  REQUIRE(file_kinds.size() == 2);
  CHECK(file_kinds[0] == test::source_path("tests/data/litmus/herdtools7/x86_64/kinds.txt"));
  CHECK(file_kinds[1] == test::source_path("tests/data/litmus/herdtools7/aarch64/kinds.txt"));
  // the CLI: the AArch64 MP (Allowed there) is not judged by x86's Forbidden
  const auto r = test::run_cli(fmt::format("litmus --runs 200 {} {}", test::quoted(files[0]), test::quoted(files[1])));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, !Catch::Contains("UNSOUND (kinds"));
}
