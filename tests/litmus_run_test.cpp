// Running litmus tests on a simulated machine: the values registers and
// memory end with (moves, arithmetic, atomics, exclusives, pairs, branches,
// writeback), speculation that is rewound, deferred atomics (early reads,
// predicted results, forwarding, all checked when performed), CSEL's
// dependencies (flags and both sources), the condition's quantifiers, the kinds verdicts and
// determinism for a seed.
#include <catch2/catch.hpp>

#include "cohsim/litmus/report.hpp"
#include "cohsim/litmus/runner.hpp"
#include "src/litmus/thread_exec.hpp"
#include "test_support.hpp"

using namespace cohsim;
using namespace cohsim::litmus;

namespace {

/// Runs a test given as text `runs` times on a shipped platform.
TestResult run_text(const std::string& text, std::uint64_t runs = 20, std::uint64_t seed = 1,
                    const std::string& platform = "kunpeng920") {
  Test t = parse_test(text, "inline.litmus");
  REQUIRE(t.unsupported.empty());
  config::Registry registry;
  scenario::Machine m(scenario::load_platform(test::source_path("configs/platforms/" + platform + ".json")), seed, registry);
  return run_test(t, m, runs, seed);
}

/// A single-thread AArch64 test whose final state must be exactly `expected` in every run.
void check_always(const std::string& init, const std::string& code, const std::string& expected) {
  std::string text = "AArch64 T\n{ " + init + " }\n P0 ;\n";
  std::istringstream lines(code);
  for (std::string l; std::getline(lines, l);) text += " " + l + " ;\n";
  text += "forall (" + expected + ")\n";
  TestResult r = run_text(text);
  INFO(text);
  CHECK(r.negative == 0);
  CHECK(r.positive == 20);
}

}  // namespace

TEST_CASE("Registers and memory end with the values the instructions compute", "[litmus]") {
  check_always("0:X1=x; x=5;", "LDR W0,[X1]\nADD W2,W0,#3\nSUB X3,X2,#1\nEOR W4,W2,W0\nORR W5,W0,#2\nAND W6,W0,#4",
               "0:X0=5 /\\ 0:X2=8 /\\ 0:X3=7 /\\ 0:X4=13 /\\ 0:X5=7 /\\ 0:X6=4");
  check_always("0:X1=x; x=5;", "MOV W2,#5\nMOV W3,#9\nCAS W2,W3,[X1]\nMOV W4,#1\nCAS W4,W3,[X1]",
               "0:X2=5 /\\ 0:X4=9 /\\ x=9");  // a CAS that succeeds, one that fails
  check_always("0:X1=x; x=5;", "MOV W2,#2\nSWPAL W2,W3,[X1]\nLDADDA W2,W4,[X1]\nSTADD W2,[X1]\nMOV W6,#6\nLDCLR W6,W7,[X1]",
               "0:X3=5 /\\ 0:X4=2 /\\ 0:X7=6 /\\ x=0");
  check_always("0:X1=x;", "MOV W2,#3\nLDXR W0,[X1]\nSTXR W5,W2,[X1]", "0:X5=0 /\\ x=3");
  check_always("int a[2]={0,0}; 0:X2=a; 0:X0=1; 0:X1=2;", "STILP W0,W1,[X2]\nLDIAPP W3,W4,[X2]",
               "a=1 /\\ a[1]=2 /\\ 0:X3=1 /\\ 0:X4=2");
  check_always("int a[2]={0,0}; 0:X2=a; 0:X0=7;", "STR W0,[X2],#4\nSTR W0,[X2]\nLDR W3,[X2,#-4]!",
               "a=7 /\\ a[1]=7 /\\ 0:X3=7 /\\ 0:X2=a");
  check_always("int a[2]={6,7}; 0:X1=a;", "ADD X1,X1,#4\nMOV W4,#-4\nLDR W3,[X1,W4,SXTW]\nMOV W5,#0\nLDR W6,[X1,W5,UXTW]",
               "0:X3=6 /\\ 0:X6=7");
  check_always("int64_t a[4]={1,2,3,4}; 0:X1=a; 0:X2=2;",
               "LDR X3,[X1,X2,LSL #3]\nLDP X4,X5,[X1]\nADD X6,X1,X2,LSL #3\nLDUR X7,[X6,#8]\nSTP X5,X4,[X6]\nLSL X8,X2,#4",
               "0:X3=3 /\\ 0:X4=1 /\\ 0:X5=2 /\\ 0:X7=4 /\\ a[2]=2 /\\ a[3]=1 /\\ 0:X8=32");
  check_always("0:X1=x; x=4;", "LDR W0,[X1]\nTBNZ W0,#2,set\nMOV W2,#9\nset:\nTBZ W0,#2,end\nADD W3,W3,#1\nend:",
               "0:X2=0 /\\ 0:X3=1");
  check_always("0:X1=x; x=1;", "LDR W0,[X1]\nCMP W0,#1\nCSEL W2,W0,WZR,EQ\nCSEL W3,W0,WZR,NE", "0:X2=1 /\\ 0:X3=0");
  check_always("0:X1=x; x=3;", "LDR W0,[X1]\nSUBS W9,W0,#3\nCSET W2,EQ\nCSET W3,NE\nCSINC W4,W0,W0,NE\nCSNEG W5,W0,W0,NE",
               "0:X9=0 /\\ 0:X2=1 /\\ 0:X3=0 /\\ 0:X4=4 /\\ 0:X5=4294967293");
  check_always("0:X1=x; x=3;", "LDR X0,[X1]\nSUBS X9,X0,#5\nB.GE end\nCSNEG X6,X0,X0,GE\nMOV W7,#1\nend:",
               "0:X9=-2 /\\ 0:X6=-3 /\\ 0:X7=1");
  check_always("0:X1=x;", "MOV W0,#3\nloop:\nSUB W0,W0,#1\nLDR W9,[X1]\nADD W2,W2,#1\nCBNZ W0,loop", "0:X2=3 /\\ 0:X0=0");
  check_always("0:X1=x; x=-1;", "LDR X0,[X1]\nMOV W2,#-1", "x=-1 /\\ 0:X0=-1 /\\ 0:X2=4294967295");
}

TEST_CASE("x86 atomics, plain read-modify-writes and jumps compute their values", "[litmus]") {
  TestResult r = run_text(R"(X86_64 A
{ x=5; y=1; }
 P0                     ;
 movl $7,%ebx           ;
 movl $5,%eax           ;
 lock cmpxchgl %ebx,(x) ;
 jne fail               ;
 movl $2,%ecx           ;
 lock xaddl %ecx,(x)    ;
 xchgl %edx,(y)         ;
 addl $3,(y)            ;
 fail:                  ;
forall (0:rcx=7 /\ x=9 /\ 0:edx=1 /\ y=3)
)", 20, 1, "skylake-sp-2s");
  CHECK(r.negative == 0);
}

TEST_CASE("A mispredicted branch discards the loads issued on its wrong path", "[litmus]") {
  // x is 1, so the branch is taken; runs that predict it not taken first load
  // y into W2 speculatively, and must rewind it. Half the runs mispredict.
  TestResult r = run_text(R"(AArch64 Spec
{ 0:X1=x; 0:X3=y; x=1; y=5; }
 P0             ;
 LDR W0,[X1]    ;
 CBNZ W0,skip   ;
 LDR W2,[X3]    ;
 skip:          ;
forall (0:X2=0 /\ 0:X0=1)
)", 200);
  CHECK(r.negative == 0);
  // A store after an unresolved branch waits for it: never written on a wrong path.
  TestResult store = run_text(R"(AArch64 SpecStore
{ 0:X1=x; 0:X3=y; x=0; }
 P0             ;
 LDR W0,[X1]    ;
 CBZ W0,skip    ;
 MOV W2,#1      ;
 STR W2,[X3]    ;
 skip:          ;
forall (y=0)
)", 200);
  CHECK(store.negative == 0);
}

TEST_CASE("exists and ~exists are witnessed by a run satisfying P, forall by one violating it", "[litmus]") {
  const std::string body = "{ }\n P0 ;\n MOV W0,#1 ;\n";
  CHECK(run_text("AArch64 E\n" + body + "exists 0:X0=1\n").witnessed);
  CHECK_FALSE(run_text("AArch64 E\n" + body + "exists 0:X0=2\n").witnessed);
  CHECK(run_text("AArch64 N\n" + body + "~exists 0:X0=1\n").witnessed);
  CHECK_FALSE(run_text("AArch64 N\n" + body + "~exists (0:X0=2 \\/ false)\n").witnessed);
  CHECK_FALSE(run_text("AArch64 F\n" + body + "forall 0:X0=1\n").witnessed);
  CHECK(run_text("AArch64 F\n" + body + "forall 0:X0=2\n").witnessed);
}

TEST_CASE("Kinds turn a result into ok, UNSOUND or not-seen", "[litmus]") {
  TestResult seen, unseen;
  seen.positive = 3;
  seen.negative = 7;
  seen.witnessed = true;
  unseen.negative = 10;
  CHECK(judge(Kind::forbidden, seen) == Verdict::unsound);
  CHECK(judge(Kind::forbidden, unseen) == Verdict::ok);
  CHECK(judge(Kind::allowed, seen) == Verdict::ok);
  CHECK(judge(Kind::allowed, unseen) == Verdict::not_seen);
  CHECK(judge(Kind::required, seen) == Verdict::unsound);
  TestResult always;
  always.positive = 10;
  CHECK(judge(Kind::required, always) == Verdict::ok);
}

TEST_CASE("A kinds file is read with herd's words, and a bad line names file, line and word", "[litmus]") {
  test::TempDir dir;
  auto kinds = read_kinds(dir.write("kinds.txt", "# comment\nMP Allowed\nSB Forbid \nSmall Required\n\n"));
  CHECK(kinds.at("MP") == Kind::allowed);
  CHECK(kinds.at("SB") == Kind::forbidden);
  CHECK(kinds.at("Small") == Kind::required);
  const std::string bad = dir.write("bad.txt", "MP Allowed\nSB Maybe\n");
  CHECK_THROWS_WITH(read_kinds(bad), bad + ":2: unexpected 'Maybe': expected Allowed, Forbidden or Required (or Allow, Forbid, Require)");
}

TEST_CASE("The same seed gives the same histogram", "[litmus]") {
  const std::string sb = R"(AArch64 SB
{ 0:X1=x; 0:X3=y; 1:X1=y; 1:X3=x; }
 P0          | P1          ;
 MOV W0,#1   | MOV W0,#1   ;
 STR W0,[X1] | STR W0,[X1] ;
 LDR W2,[X3] | LDR W2,[X3] ;
exists (0:X2=0 /\ 1:X2=0)
)";
  TestResult a = run_text(sb, 300, 7), b = run_text(sb, 300, 7);
  REQUIRE(a.outcomes.size() == b.outcomes.size());
  CHECK(a.outcomes.size() >= 2);  // the start offsets do vary the interleaving
  for (std::size_t i = 0; i < a.outcomes.size(); ++i) CHECK(a.outcomes[i].count == b.outcomes[i].count);
  CHECK(a.cpus == std::vector<int>{0, 48});  // spread: the second thread on the other socket
}

TEST_CASE("Threads are spread over physical cores, never on SMT siblings while cores remain", "[litmus]") {
  // ivybridge-ex numbers CPUs smt-last (Linux x86): CPU 240 is CPU 0's sibling.
  config::Registry registry;
  scenario::Machine m(scenario::load_platform(test::source_path("configs/platforms/ivybridge-ex.json")), 1, registry);
  const auto cpus = thread_placement(m.topology(), 2);
  REQUIRE(cpus.size() == 2);
  CHECK(m.topology().cpu(cpus[0]).core_global != m.topology().cpu(cpus[1]).core_global);
  CHECK(m.topology().cpu(cpus[0]).thread == 0);
  CHECK(m.topology().cpu(cpus[1]).thread == 0);
  CHECK(m.topology().cpu(cpus[0]).node != m.topology().cpu(cpus[1]).node);
}

namespace {

/// Simulated time one thread of `code` takes on CPU 0 of kunpeng920 with x and y
/// homed on the other socket (fresh lines), registers X0 and X2 named by the condition.
sim::Tick thread_time(const std::string& code, const std::string& init = "0:X1=x; 0:X3=y;") {
  Test t = parse_test("AArch64 T\n{ " + init + " }\n P0 ;\n" + code + "exists (0:X0=0 /\\ 0:X2=0)\n", "t.litmus");
  config::Registry registry;
  scenario::Machine m(scenario::load_platform(test::source_path("configs/platforms/kunpeng920.json")), 1, registry);
  detail::Layout layout;
  for (const auto& l : t.locations) {
    layout.base.push_back(m.memory().alloc(m.topology().node_of_cpu(48), 64, 64, l.name));
    layout.bytes.push_back(8);
  }
  sim::RandomStream branches(1, "test.branch");
  detail::ThreadExec thread(t, 0, m.cpu(0), branches);
  thread.reset(layout);
  m.sim().spawn("P0", thread.run(0));
  m.sim().run();
  return m.sim().now();
}

}  // namespace

TEST_CASE("Independent loads overlap, an address dependency waits for the first load", "[litmus]") {
  const sim::Tick one = thread_time(" LDR W0,[X1] ;\n");
  const sim::Tick independent = thread_time(" LDR W0,[X1] ;\n LDR W2,[X3] ;\n");
  const sim::Tick dependent = thread_time(" LDR W0,[X1] ;\n EOR W4,W0,W0 ;\n LDR W2,[X3,W4,SXTW] ;\n");
  CHECK(independent < one * 3 / 2);
  CHECK(dependent >= one * 19 / 10);
}

TEST_CASE("A load waiting for its address does not hold back a later independent load", "[litmus]") {
  const std::string init = "0:X1=x; 0:X3=y; 0:X5=z; 0:X7=w;";
  const sim::Tick one = thread_time(" LDR W0,[X1] ;\n", init);
  // Two chains of two dependent misses, x -> y and z -> w: the second chain
  // starts while y waits for its address, so the thread takes two misses in a
  // row, not three (in-order issue would start z only once x is back).
  const sim::Tick t = thread_time(
      " LDR W0,[X1] ;\n EOR W4,W0,W0 ;\n LDR W2,[X3,W4,SXTW] ;\n LDR W6,[X5] ;\n EOR W8,W6,W6 ;\n LDR W9,[X7,W8,SXTW] ;\n", init);
  CHECK(t < one * 5 / 2);
  CHECK(t >= one * 19 / 10);
}

TEST_CASE("Behind a predicted branch, a load waiting for its address does not hold back the next chain", "[litmus]") {
  const std::string init = "0:X1=x; 0:X3=y; 0:X5=z; 0:X7=w;";
  const sim::Tick one = thread_time(" LDR W0,[X1] ;\n", init);
  // The branch waits for x (predicted), then two chains x -> y and z -> w:
  // the second starts while y waits for its address (deferred on the
  // predicted path), so two misses in a row, not three.
  const sim::Tick t = thread_time(" LDR W0,[X1] ;\n CBNZ W0,L0 ;\n L0: ;\n EOR W4,W0,W0 ;\n LDR W2,[X3,W4,SXTW] ;\n"
                                  " LDR W6,[X5] ;\n EOR W8,W6,W6 ;\n LDR W9,[X7,W8,SXTW] ;\n",
                                  init);
  CHECK(t < one * 5 / 2);
}

TEST_CASE("A failed or unordered store-exclusive and held stores out of order give herd's Allowed outcomes", "[litmus]") {
  // HAND2 MP+dmb.sy+addrpx-posxp-var: no LDXR, so the STXR fails, writes
  // nothing and orders nothing; the last load may bind before the first.
  const TestResult stxr = run_text(R"(AArch64 MP+dmb.sy+addrpx-posxp-var
{ 0:X1=x; 0:X3=y; 1:X1=y; 1:X3=x; }
 P0          | P1                ;
 MOV W0,#2   | LDR W0,[X1]       ;
 STR W0,[X1] | EOR W2,W0,W0      ;
 DMB SY      | MOV W5,#1         ;
 MOV W2,#1   | ADD X4,X3,W2,SXTW ;
 STR W2,[X3] | STXR W7,W5,[X4]   ;
             | LDR W8,[X3]       ;
exists (x=2 /\ 1:X0=1 /\ 1:X8=0 /\ 1:X7=1)
)",
                                   2000);
  CHECK(stxr.positive > 0);
  for (const Outcome& o : stxr.outcomes) CHECK(o.state[3].number == 1);  // 1:X7: it never succeeds
  // HAND ATOM06: LDAXR; STLXR; LDR of the other location in both threads,
  // both loads reading 0 (the store-exclusive's success is predicted).
  const TestResult atom = run_text(R"(AArch64 ATOM06
{ ok=1; 0:X0=x; 0:X5=y; 0:X7=ok; 1:X0=y; 1:X5=x; 1:X7=ok; }
 P0               | P1               ;
 MOV W2,#1        | MOV W2,#1        ;
 LDAXR W1,[X0]    | LDAXR W1,[X0]    ;
 STLXR W3,W2,[X0] | STLXR W3,W2,[X0] ;
 CBNZ W3,Fail0    | CBNZ W3,Fail1    ;
 LDR W4,[X5]      | LDR W4,[X5]      ;
 B Exit0          | B Exit1          ;
 Fail0:           | Fail1:           ;
 MOV W6,#0        | MOV W6,#0        ;
 STR W6,[X7]      | STR W6,[X7]      ;
 Exit0:           | Exit1:           ;
exists (ok=1 /\ 0:X1=0 /\ 0:X4=0 /\ 1:X1=0 /\ 1:X4=0)
)",
                                   2000);
  CHECK(atom.positive > 0);
  // HAND2 LB+data+data-rfi-fri-rfi-addr: the store to x (address known
  // through the thread's own stores) enters the store buffer before the
  // store to z, whose data waits for the load of y.
  const TestResult held = run_text(R"(AArch64 LB+data+data-rfi-fri-rfi-addr
{ 0:X1=x; 0:X3=y; 1:X1=y; 1:X3=z; 1:X9=x; }
 P0           | P1                  ;
 LDR W0,[X1]  | LDR W0,[X1]         ;
 EOR W2,W0,W0 | EOR W2,W0,W0        ;
 ADD W2,W2,#1 | ADD W2,W2,#1        ;
 STR W2,[X3]  | STR W2,[X3]         ;
              | LDR W4,[X3]         ;
              | MOV W5,#2           ;
              | STR W5,[X3]         ;
              | LDR W6,[X3]         ;
              | EOR W7,W6,W6        ;
              | MOV W8,#1           ;
              | STR W8,[X9,W7,SXTW] ;
exists (z=2 /\ 0:X0=1 /\ 1:X0=1 /\ 1:X4=1 /\ 1:X6=2)
)",
                                   2000);
  CHECK(held.positive > 0);
}

TEST_CASE("Loads issued out of order around deferred ones never read one location against its coherence order",
          "[litmus]") {
  // P0's two loads of y (the first waits for c, the second for nothing) may
  // bind in either order; a different value means a replay. A third load,
  // waiting for a, keeps both deferred and issued early.
  const TestResult r = run_text(R"(AArch64 CoRR-around-deferred
{ 0:X0=a; 0:X2=c; 0:X6=y; 0:X7=b; 1:X6=y; }
 P0                   | P1          ;
 LDR W1,[X0]          | MOV W9,#1   ;
 LDR W3,[X2]          | STR W9,[X6] ;
 EOR W4,W1,W1         |             ;
 LDR W5,[X7,W4,SXTW]  |             ;
 EOR W8,W3,W3         |             ;
 LDR W10,[X6,W8,SXTW] |             ;
 LDR W11,[X6]         |             ;
exists (0:X10=1 /\ 0:X11=0)
)",
                                2000);
  CHECK(r.positive == 0);
  CHECK(r.negative == 2000);
}

TEST_CASE("An atomic without acquire does not hold back a later independent load", "[litmus]") {
  const sim::Tick one = thread_time(" LDR W0,[X1] ;\n");
  // The CAS's operands are known; its read and write go once something later
  // needs them (here the end of the thread), so the miss on y overlaps it.
  const sim::Tick t = thread_time(" MOV W4,#0 ;\n MOV W5,#1 ;\n CAS W4,W5,[X1] ;\n LDR W2,[X3] ;\n");
  CHECK(t < one * 3 / 2);
  // An acquire orders the later load after it: two misses in a row.
  CHECK(thread_time(" MOV W4,#0 ;\n MOV W5,#1 ;\n CASA W4,W5,[X1] ;\n LDR W2,[X3] ;\n") >= one * 19 / 10);
}

TEST_CASE("A deferred atomic's result, predicted or read early, and the loads it forwards to are checked when it is "
          "performed",
          "[litmus]") {
  // Rs = 1 predicted as the result of a CAS that fails (x = 5): the load
  // whose address used it is replayed with the value the CAS read.
  check_always("0:X1=x; 0:X3=y; x=5; y=7;",
               "MOV W2,#1\nMOV W6,#9\nCAS W2,W6,[X1]\nEOR W4,W2,W2\nLDR W5,[X3,W4,SXTW]\nMOV W7,#5\nCAS W7,W6,[X1]",
               "0:X2=5 /\\ 0:X5=7 /\\ 0:X7=5 /\\ x=9");
  // A load of the CAS's bytes forwarded its Rt: kept when it wrote, replayed when it failed.
  check_always("0:X1=x; x=5;", "MOV W2,#5\nMOV W6,#9\nCAS W2,W6,[X1]\nLDR W8,[X1]\nMOV W3,#1\nCAS W3,W2,[X1]\nLDR W9,[X1]",
               "0:X2=5 /\\ 0:X8=9 /\\ 0:X3=9 /\\ 0:X9=9 /\\ x=9");
  check_always("0:X1=x; x=5;", "MOV W2,#2\nSWP W2,W3,[X1]\nLDR W4,[X1]\nLDADD W2,W5,[X1]\nLDR W6,[X1]",
               "0:X3=5 /\\ 0:X4=2 /\\ 0:X5=2 /\\ 0:X6=4 /\\ x=4");
}

TEST_CASE("A load that passes a failed CAS of its location never reads an older write than the CAS read", "[litmus]") {
  // The CAS waits for its Rs (a miss on a), never succeeds (y is 0 or 1,
  // Rs is 7), and the later load of y goes first, or is forwarded Rt: it must
  // be replayed when the CAS read P1's write and it did not (CoRR).
  const TestResult r = run_text(R"(AArch64 CoRR-failed-CAS
{ 0:X0=a; 0:X2=y; 1:X2=y; }
 P0             | P1          ;
 LDR W1,[X0]    | MOV W9,#1   ;
 EOR W4,W1,W1   | STR W9,[X2] ;
 ADD W4,W4,#7   |             ;
 CAS W4,W5,[X2] |             ;
 LDR W6,[X2]    |             ;
exists (0:X4=1 /\ 0:X6=0)
)",
                                2000);
  CHECK(r.positive == 0);
  CHECK(r.negative == 2000);
}

TEST_CASE("CSEL depends on the flags and on both sources, whichever it selects", "[litmus]") {
  const sim::Tick one = thread_time(" LDR W0,[X1] ;\n");
  // Flags, sources and all known: no wait for the load.
  CHECK(thread_time(" LDR W0,[X1] ;\n MOV W4,#0 ;\n CMP W4,#0 ;\n CSEL W5,W4,WZR,EQ ;\n LDR W2,[X3,W5,SXTW] ;\n") <
        one * 3 / 2);
  // The source not selected is the load: the address waits for it.
  CHECK(thread_time(" LDR W0,[X1] ;\n MOV W4,#0 ;\n CMP W4,#0 ;\n CSEL W5,W4,W0,EQ ;\n LDR W2,[X3,W5,SXTW] ;\n") >=
        one * 19 / 10);
  // Two identical sources, flags from the load: the address waits for the flags.
  CHECK(thread_time(" LDR W0,[X1] ;\n CMP W0,#0 ;\n CSEL W5,WZR,WZR,EQ ;\n LDR W2,[X3,W5,SXTW] ;\n") >= one * 19 / 10);
  CHECK(thread_time(" LDR W0,[X1] ;\n MOV W4,#4 ;\n CMP W0,#0 ;\n CSEL W5,WZR,W4,EQ ;\n LDR W2,[X3,W5,SXTW] ;\n") >=
        one * 19 / 10);
}

TEST_CASE("A load replayed past a deferred atomic is replayed before the atomic is performed, never after", "[litmus]") {
  // The second load of y passes the first (waiting for a) and is replayed
  // when P1's write makes them differ; the LDADD after it is performed once.
  const TestResult r = run_text(R"(AArch64 replay-before-atomic
{ 0:X0=a; 0:X2=y; 0:X3=x; 1:X2=y; }
 P0                  | P1          ;
 LDR W1,[X0]         | MOV W9,#1   ;
 EOR W4,W1,W1        | STR W9,[X2] ;
 LDR W5,[X2,W4,SXTW] |             ;
 LDR W6,[X2]         |             ;
 MOV W8,#1           |             ;
 LDADD W8,W7,[X3]    |             ;
exists (x=2)
)",
                                1000);
  CHECK(r.positive == 0);
  CHECK(r.negative == 1000);
}

TEST_CASE("An instruction another thread writes is fetched from coherent memory, in program order", "[litmus]") {
  // herd's DIC1.MP.FF+dmb.st+po: P0 turns both branches into NOPs, the one at
  // Lself00 first. P1 runs the new instructions it fetches, but never the
  // second one new after the first one old (Forbidden).
  const TestResult r = run_text(R"(AArch64 DIC1.MP.FF+dmb.st+po
Variant=ifetch
CacheType=DIC
{ ins_t 0:X0=NOP; 0:X1=1:Lself00; 0:X2=1:Lself01; }
 P0          | P1         ;
 STR W0,[X1] | Lself01:   ;
 DMB ST      | B Lself00  ;
 STR W0,[X2] | MOV W10,#1 ;
             | Lself00:   ;
             | B L01      ;
             | MOV W11,#1 ;
             | L01:       ;
exists (1:X10=1 /\ 1:X11=0)
)",
                                1000);
  CHECK(r.positive == 0);
  std::uint64_t both_new = 0, first_new = 0;
  for (const Outcome& o : r.outcomes) {
    if (o.state[0].number == 1 && o.state[1].number == 1) both_new += o.count;
    if (o.state[0].number == 0 && o.state[1].number == 1) first_new += o.count;
  }
  CHECK(both_new > 0);
  CHECK(first_new > 0);
}

TEST_CASE("A store on a predicted path is forwarded to later loads and written only if its branch resolves its way",
          "[litmus]") {
  // x = 1: the store runs (held while CBZ is predicted, forwarded to the load);
  // x = 0: it is skipped, and a prediction that ran it drops it and the value forwarded.
  const std::string code = "LDR W0,[X1]\nCBZ W0,skip\nMOV W2,#5\nSTR W2,[X3]\nskip:\nLDR W4,[X3]";
  check_always("0:X1=x; 0:X3=y; x=1; y=7;", code, "0:X4=5 /\\ y=5");
  check_always("0:X1=x; 0:X3=y; x=0; y=7;", code, "0:X4=7 /\\ y=7");
}

TEST_CASE("A held store becomes visible only after the load its branch depends on (LB+ctrls is forbidden)",
          "[litmus]") {
  const TestResult r = run_text(R"(AArch64 LB+ctrls
{ 0:X1=x; 0:X3=y; 1:X1=x; 1:X3=y; }
 P0           | P1           ;
 LDR W0,[X1]  | LDR W0,[X3]  ;
 CBNZ W0,L0   | CBNZ W0,L1   ;
 L0:          | L1:          ;
 MOV W2,#1    | MOV W2,#1    ;
 STR W2,[X3]  | STR W2,[X1]  ;
exists (0:X0=1 /\ 1:X0=1)
)",
                                2000);
  CHECK(r.positive == 0);
  CHECK(r.negative == 2000);
}
