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
  // CMN, TST, ADDS, ANDS and CCMP set the flags from their operands too (CCMP
  // also from the old flags, whichever its condition picks).
  for (const char* setter : {"CMN W0,#1", "TST W0,#1", "ADDS W9,W0,#1", "ANDS W9,W0,#1", "CCMP W0,#1,#0,EQ",
                             "CCMP W0,#1,#4,NE"}) {
    INFO(setter);
    CHECK(witnessed(without(text, "CMP W0,#1", setter)) == 0);
  }
}

TEST_CASE("CMN, TST, ADDS, ANDS, CCMP and CCMN set NZCV as AArch64 does", "[litmus]") {
  // One thread, every condition checked on known values: 1 + -1 = 0 carries
  // (Z, C); 1 & 2 = 0 (Z); 1 + 1 = 2 (not Z); CCMP compares when its condition
  // holds, else sets #nzcv; CMN of the largest positive int overflows (V).
  const std::string text = R"(AArch64 NZCV
{ }
 P0                ;
 MOV W0,#1         ;
 MOV W9,#2147483647 ;
 CMN W0,#-1        ;
 CSET W1,EQ        ;
 CSET W2,HS        ;
 TST W0,#2         ;
 CSET W3,EQ        ;
 ADDS W4,W0,#1     ;
 CSET W5,NE        ;
 CCMP W0,#1,#0,NE  ;
 CSET W6,EQ        ;
 CCMP W0,#2,#4,LO  ;
 CSET W7,EQ        ;
 CCMN W9,#1,#0,EQ  ;
 CSET W8,VS_IS_LT  ;
forall (0:X1=1 /\ 0:X2=1 /\ 0:X3=1 /\ 0:X4=2 /\ 0:X5=1 /\ 0:X6=1 /\ 0:X7=1 /\ 0:X8=1)
)";
  // After 0x7fffffff + 1, N and V are both set: GE holds, LT does not.
  CHECK(witnessed(without(text, "VS_IS_LT", "GE"), 1) == 1);  // (runs satisfying the proposition)
  CHECK(witnessed(without(text, "VS_IS_LT", "LT"), 1) == 0);
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
