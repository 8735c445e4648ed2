// NZCV as a register: a CMP on a loaded value sets the flags, and a CSEL or
// B.cond that reads them carries the dependency on to a store's data, a
// load's address or a branch before an ISB. The tests in
// tests/data/litmus/flags are each Forbidden; the same shapes with the
// dependency through the flags replaced by a plain MOV (or without the ISB)
// are Allowed, and are witnessed, so the zero counts below are not for lack of
// trying.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cohsim/litmus/runner.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::litmus;

namespace {

// Measured by hand: `cohsim litmus --runs 100000 tests/data/litmus/flags`
// witnesses none of the four forbidden outcomes (about 2 s per test); the
// ctest runs fewer.
constexpr std::uint64_t kRuns = 20000;

std::string flags_test_text(const std::string& name) {
  std::ifstream in(test::source_path("tests/data/litmus/flags/" + name + ".litmus"));
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `text` with every `from` replaced by `to` (the same test without one link).
std::string without(std::string text, const std::string& from, const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// Runs of `text` (on kunpeng920, seed 1) whose final state satisfies its exists clause.
std::uint64_t witnessed(const std::string& text, std::uint64_t runs = kRuns) {
  Test t = parse_test(text, "flags.litmus");
  REQUIRE(t.unsupported.empty());
  config::Registry registry;
  scenario::Machine m(scenario::load_platform(test::source_path("configs/platforms/kunpeng920.json")), 1, registry);
  return run_test(t, m, runs, 1).positive;
}

}  // namespace

TEST_CASE("A store's data through CMP and CSEL depends on the load: LB+data-through-flags never appears", "[litmus]") {
  const std::string text = flags_test_text("LB+data-through-flags");
  CHECK(witnessed(text) == 0);
  CHECK(witnessed(without(text, "CSEL W2,W3,W4,EQ", "MOV W2,W3"), 2000) > 0);
  // SUBS sets the flags as CMP does; CSINC and CSET read them as CSEL does.
  const std::string subs = without(text, "CMP W0,#1", "SUBS W9,W0,#1");
  CHECK(witnessed(without(subs, "CSEL W2,W3,W4,EQ", "CSINC W2,W3,WZR,EQ")) == 0);
  CHECK(witnessed(without(subs, "CSEL W2,W3,W4,EQ", "CSET W2,EQ")) == 0);
}

TEST_CASE("A load's address through CMP and CSEL depends on the earlier load: MP+addr-through-flags never appears",
          "[litmus]") {
  const std::string text = flags_test_text("MP+dmb.st+addr-through-flags");
  CHECK(witnessed(text) == 0);
  CHECK(witnessed(without(text, "CSEL X5,X7,X8,EQ", "MOV X5,X7"), 2000) > 0);
}

TEST_CASE("A branch on a CSEL of the flags, then ISB, orders the later load: MP+ctrlisb-through-flags never appears",
          "[litmus]") {
  const std::string text = flags_test_text("MP+dmb.st+ctrlisb-through-flags");
  CHECK(witnessed(text) == 0);
  CHECK(witnessed(without(text, "CSEL W5,W7,W8,EQ", "MOV W5,W7"), 2000) > 0);
  // Without the ISB a control dependency does not order a later load.
  CHECK(witnessed(without(text, "ISB", "NOP"), 2000) > 0);
  const std::string bcond = flags_test_text("MP+dmb.st+bcond-isb");
  CHECK(witnessed(bcond) == 0);
  CHECK(witnessed(without(bcond, "ISB", "NOP"), 2000) > 0);
}
