// Parsing herd7 litmus files: both AArch64 and both x86 dialects, the init
// forms, header lines and comments, conditions, features outside the subset
// (unsupported, named) and malformed input (file, line and token).
#include <catch2/catch.hpp>

#include "cohsim/litmus/test.hpp"

using namespace cohsim;
using namespace cohsim::litmus;

namespace {

const char* kMessagePassing = R"(AArch64 MP
"PodWW Rfe PodRR Fre"
Cycle=Rfe PodRR Fre PodWW
(* a comment (* nested *) *)
{
0:X1=x; 0:X3=y;
1:X1=y; 1:X3=x;
}
 P0          | P1          ;
 MOV W0,#1   | LDR W0,[X1] ;
 STR W0,[X3] | LDR W2,[X3] ;
 MOV W2,#1   |             ;
 STR W2,[X1] |             ;
exists (1:X0=1 /\ 1:X2=0)
)";

std::string parse_error(const std::string& text) {
  try {
    parse_test(text, "t.litmus");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("diy's Prefetch= header line is kept as hints, items of another form ignored", "[litmus]") {
  std::string text = kMessagePassing;
  text.insert(text.find("Cycle="), "Prefetch=0:x=F,0:y=W,1:y=F,1:x=T,junk,2:z=Q\n");
  const Test t = parse_test(text, "mp.litmus");
  REQUIRE(t.prefetch.size() == 4);
  CHECK(t.prefetch[1].thread == 0);
  CHECK(t.prefetch[1].location == "y");
  CHECK(t.prefetch[1].how == 'W');
  CHECK(t.prefetch[3].thread == 1);
  CHECK(t.prefetch[3].how == 'T');
  CHECK(parse_test(kMessagePassing, "mp.litmus").prefetch.empty());
}

TEST_CASE("An AArch64 test parses into locations, programs and a condition over named cells", "[litmus]") {
  Test t = parse_test(kMessagePassing, "mp.litmus");
  CHECK(t.name == "MP");
  CHECK(t.arch == Arch::aarch64);
  CHECK(t.unsupported.empty());
  REQUIRE(t.threads.size() == 2);
  CHECK(t.threads[0].code.size() == 4);
  CHECK(t.threads[1].code[1].op == Op::load);
  CHECK(t.threads[1].code[1].size == 4);
  CHECK(t.threads[0].code[1].op == Op::store);
  REQUIRE(t.locations.size() == 2);
  CHECK(t.locations[0].name == "x");
  REQUIRE(t.cells.size() == 2);
  CHECK(t.cells[0].name == "1:X0");
  CHECK(t.condition == "exists (1:X0=1 /\\ 1:X2=0)");
}

TEST_CASE("AArch64 addressing modes and instruction forms map onto the subset", "[litmus]") {
  Test t = parse_test(R"(AArch64 A
{ 0:X1=x; }
 P0                  ;
 LDR X0,[X1,#8]      ;
 LDR W2,[X1,X3]      ;
 LDR W4,[X1,W5,SXTW] ;
 STR W4,[X1,W5,UXTW] ;
 casal w2, w3, [x1]  ;
 STADDL W2,[X1]      ;
 LDAPR W6,[X1]       ;
 DMB ISHLD           ;
 B.NE l0             ;
 l0:                 ;
 ADD X20,X2,W4,SXTW  ;
 LDR X0,[X1,X2,LSL #3] ;
 STLUR W0,[X1,#4]    ;
 LDP W0,W2,[X1]      ;
exists 0:X0=0
)", "a.litmus");
  const auto& c = t.threads[0].code;
  REQUIRE(c.size() == 13);
  CHECK(c[10].addr.index.shift == 3);
  CHECK((c[11].op == Op::store && c[11].order == cpu::Order::release && c[11].addr.offset == 4));
  CHECK((c[12].op == Op::load_pair && c[12].order == cpu::Order::relaxed && c[12].dst2 == 2));
  CHECK(c[0].addr.offset == 8);
  CHECK(c[0].size == 8);
  CHECK(c[1].addr.index.reg == 3);
  CHECK(c[2].addr.index.extend == Extend::sxtw);
  CHECK(c[3].addr.index.extend == Extend::uxtw);
  CHECK((c[4].op == Op::rmw && c[4].rmw_op == fabric::RmwOp::cas && c[4].order == cpu::Order::full));
  CHECK((c[5].op == Op::rmw && c[5].dst == kZeroRegister && c[5].order == cpu::Order::release));
  CHECK(c[6].order == cpu::Order::acquire_pc);
  CHECK((c[7].domain == cpu::Domain::ish && c[7].barrier == cpu::BarrierType::ld));
  CHECK(c[8].target == 9);
  CHECK(c[9].b.extend == Extend::sxtw);
}

TEST_CASE("The X86 (Intel) and X86_64 (AT&T) dialects give the same program", "[litmus]") {
  Test intel = parse_test(R"(X86 SB
{ x=0; y=0; }
 P0          | P1          ;
 MOV [x],$1  | mov [y],1   ;
 MFENCE      | LOCK XADD [x],EBX ;
 MOV EAX,[y] | MOV EAX,[x] ;
exists (0:EAX=0 /\ 1:EAX=0)
)", "i.litmus");
  Test att = parse_test(R"(X86_64 SB
{ }
 P0            | P1            ;
 movl $1,(x)   | movl 1,(y)    ;
 mfence        | lock xaddl %ebx,(x) ;
 movl (y),%eax | movl (x),%eax ;
exists (0:rax=0 /\ 1:eax=0)
)", "a.litmus");
  for (std::size_t p = 0; p < 2; ++p)
    for (std::size_t i = 0; i < 3; ++i) {
      const Instr& a = intel.threads[p].code[i];
      const Instr& b = att.threads[p].code[i];
      CHECK(a.op == b.op);
      CHECK(a.size == b.size);
      CHECK(a.dst == b.dst);
      CHECK(intel.locations[static_cast<std::size_t>(std::max(0, a.addr.location))].name ==
            att.locations[static_cast<std::size_t>(std::max(0, b.addr.location))].name);
    }
  CHECK(att.threads[1].code[1].order == cpu::Order::full);
  CHECK(att.cells.size() == 2);  // rax and eax name one register
  CHECK(att.cells[0].reg == att.cells[1].reg);
}

TEST_CASE("Every init form sets locations and registers", "[litmus]") {
  Test t = parse_test(R"(AArch64 I
{
 0:X0=x; int y=1; z=2; [w]=3; int a[2]={4,5}; uint64_t b; 0:X1=7; int64_t 0: X2 = 0;
}
 P0 ;
 NOP ;
forall (0:X1=7 /\ y=1 /\ [w]=3 /\ a[1]=5 \/ ~(z=2) /\ not true)
)", "i.litmus");
  auto loc = [&](const std::string& n) {
    for (const auto& l : t.locations)
      if (l.name == n) return l;
    FAIL("no location " << n);
    return Location{};
  };
  CHECK(loc("y").init[0] == 1);
  CHECK(loc("y").element_size == 4);
  CHECK(loc("z").init[0] == 2);
  CHECK(loc("w").init[0] == 3);
  CHECK(loc("a").elements == 2);
  CHECK(loc("a").init[1] == 5);
  CHECK(loc("b").element_size == 8);
  REQUIRE(t.threads[0].init.size() == 3);
  CHECK(t.threads[0].init[0].second.location >= 0);
  CHECK(t.threads[0].init[1].second.number == 7);
  CHECK(t.quantifier == Quantifier::forall);
  CHECK(t.condition == "forall (0:X1=7 /\\ y=1 /\\ w=3 /\\ a[1]=5 \\/ ~(z=2) /\\ ~true)");
}

TEST_CASE("A feature outside the subset makes the test unsupported, naming it", "[litmus]") {
  Test tlbi = parse_test("AArch64 T\n{ 0:X1=x; }\n P0 ;\n TLBI VAAE1IS,X1 ;\nexists 0:X0=0\n", "t.litmus");
  CHECK(tlbi.unsupported == "instruction 'TLBI VAAE1IS,X1' (line 4)");
  Test vmsa = parse_test("AArch64 V\nVariant=vmsa\n{ }\n P0 ;\n NOP ;\nexists 0:X0=0\n", "v.litmus");
  CHECK(vmsa.unsupported == "Variant=vmsa");
  Test pte = parse_test("AArch64 P\n{ pteval_t 0:X1=(valid:0); }\n P0 ;\n NOP ;\nexists 0:X0=0\n", "p.litmus");
  CHECK(pte.unsupported == "type 'pteval_t'");
  Test label = parse_test("AArch64 L\n{ 0:X1=1:L0; }\n P0 | P1 ;\n NOP | L0: ;\nexists 0:X0=0\n", "l.litmus");
  CHECK(label.unsupported == "initial value '1:L0'");
  Test ppc = parse_test("PPC MP\n{ }\n P0 ;\n sync ;\nexists 0:r1=0\n", "ppc.litmus");
  CHECK(ppc.unsupported == "architecture 'PPC'");
}

TEST_CASE("Malformed input names the file, the line and the token", "[litmus]") {
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n LDR W0,[Q1] ;\nexists 0:X0=0\n") ==
        "t.litmus:4: unexpected 'Q1': expected a base register X0..X30");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x 0:X2=y; }\n P0 ;\n NOP ;\nexists 0:X0=0\n") ==
        "t.litmus:2: unexpected 'x 0:X2=y': expected an integer or a location name");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n MOV W0,#1 ;\nexists 3:X0=0\n") ==
        "t.litmus:5: unexpected '3': expected a thread of the test (0..0)");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n MOV W0,#1 ;\nexists 0:Y0=0\n") ==
        "t.litmus:5: unexpected 'Y0': expected an AArch64 register");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n MOV W0,#1\nexists 0:X0=0\n") ==
        "t.litmus:4: unexpected 'MOV W0,#1': expected the row to end with ';'");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n B nowhere ;\nexists 0:X0=0\n") ==
        "t.litmus:4: unexpected 'nowhere': expected a label of P0");
  CHECK(parse_error("AArch64 E\n{ 0:X1=x; }\n P0 ;\n NOP ;\nexists (0:X0=0\n") ==
        "t.litmus:5: unexpected 'end of file': expected ')'");
  CHECK(parse_error("AArch64 E\n{ }\n P0 ;\n MO/\\V W0,#1 ;\nexists 0:X0=0\n") ==
        "t.litmus:4: unexpected 'MO/\\V': expected an instruction mnemonic");
  CHECK(parse_error("X86_64 E\n{ }\n P0 ;\n movl%ebx ;\nexists 0:rax=0\n") ==
        "t.litmus:4: unexpected 'movl%ebx': expected an instruction mnemonic");
  CHECK(parse_error("X86_64 E\n{ }\n P0 ;\n movl $1,%zz ;\nexists 0:rax=0\n") ==
        "t.litmus:4: unexpected '%zz': expected %reg, $imm or (x)");
}

TEST_CASE("A test without an init section, or with an empty one, parses", "[litmus]") {
  for (const char* init : {"", "{}\n", "{\n}\n"}) {
    Test t = parse_test(std::string("AArch64 NoInit\nStable=X2\n") + init + " P0 ;\n MOV W0,#1 ;\nforall 0:X0=1\n", "n.litmus");
    CHECK(t.unsupported.empty());
    REQUIRE(t.threads.size() == 1);
    CHECK(t.threads[0].code.size() == 1);
    CHECK(t.locations.empty());
  }
}

TEST_CASE("An instruction-fetch test reads instruction values, code labels as addresses and cache maintenance",
          "[litmus]") {
  Test t = parse_test(R"(AArch64 F
Variant=ifetch
CacheType=DIC
{ ins_t 0:X0=NOP; ins_t 0:X2=instr:"B .+8"; 0:X1=1:L0; 0:X3=1:L1; }
 P0          | P1         ;
 STR W0,[X1] | L1:        ;
 DC CVAU,X1  | NOP        ;
 IC IVAU,X1  | L0:        ;
             | B L2       ;
             | MOV W9,#1  ;
             | L2:        ;
exists (1:X9=1)
)",
                      "f.litmus");
  REQUIRE(t.unsupported.empty());
  CHECK(t.ifetch);
  CHECK(t.threads[0].init[0].second.number == kNopEncoding);
  CHECK(t.threads[0].init[1].second.number == (kBranchEncoding | 2));
  // Each label named as a value is a 4-byte location holding its instruction.
  const Location& l0 = t.locations[static_cast<std::size_t>(t.threads[0].init[2].second.location)];
  const Location& l1 = t.locations[static_cast<std::size_t>(t.threads[0].init[3].second.location)];
  CHECK(l0.code_thread == 1);
  CHECK(l0.element_size == 4);
  CHECK(l0.init[0] == (kBranchEncoding | 2));  // B L2, two instructions on
  CHECK(l1.init[0] == kNopEncoding);
  CHECK(t.threads[1].code_location == std::vector<int>{t.threads[0].init[3].second.location, t.threads[0].init[2].second.location, -1});
  CHECK(t.threads[0].code[1].op == Op::nop);  // DC CVAU: fetches are coherent
  // Without Variant=ifetch the same forms stay outside the subset.
  CHECK(parse_test("AArch64 C\nCacheType=DIC\n{ }\n P0 ;\n NOP ;\nexists 0:X0=0\n", "c.litmus").unsupported ==
        "CacheType=DIC");
  CHECK(parse_test("AArch64 D\n{ 0:X1=x; }\n P0 ;\n DC CVAU,X1 ;\nexists 0:X0=0\n", "d.litmus").unsupported ==
        "instruction 'DC CVAU,X1' (line 4)");
  CHECK(parse_test("AArch64 I\nVariant=ifetch\n{ ins_t 0:X0=instr:\"ADD X0,X0,#1\"; }\n P0 ;\n NOP ;\nexists 0:X0=0\n",
                   "i.litmus")
            .unsupported == "instruction value 'ADD X0,X0,#1'");
}
