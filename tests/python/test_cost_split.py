"""Tests for bench/cost_split.py: the attribution of a callgrind profile's
lines to cohsim's components, and its refusal of bad input.

  /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import shutil
import subprocess
import sys
import tempfile
import unittest

import bench_script

SCRIPT = bench_script.BENCH / "cost_split.py"
cost_split = bench_script.load("cost_split")

# callgrind_annotate's function table as it prints it: the common path prefix
# stripped from some files, an object file or a clone name after the function.
ANNOTATE = """\
--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
32,864,408 (100.0%)  PROGRAM TOTALS
5,050,000 (15.37%)  include/cohsim/sim/simulator.hpp:cohsim_bench::cohsim_pong(cohsim_bench::cohsim_pong(int)::Frame*) [clone .actor]
3,541,700 (10.78%)  bench/cohsim_workloads.hpp:cohsim_bench::cohsim_ping(int) [clone .actor] [/b/engine_bench]
3,639,738 (11.08%)  /b/../main/src/sim/simulator.cpp:cohsim::sim::Simulator::run(cohsim::sim::RunLimits const&) [/b/cohsim]
6,720,071 ( 3.32%)  /b/../main/include/cohsim/fabric/interconnect.hpp:cohsim::fabric::Interconnect::walk(std::vector<Step> const&, unsigned long)
1,000,000 ( 1.00%)  /usr/include/c++/12/bits/stl_vector.h:cohsim::fabric::Interconnect::walk(std::vector<Step> const&, unsigned long)
  800,000 ( 1.00%)  /usr/include/c++/12/bits/stl_vector.h:cohsim::fabric::Fabric::obtain(cohsim::fabric::Fabric::obtain(int)::Frame*) [clone .actor]
  700,000 ( 1.00%)  /b/../main/src/fabric/home.cpp:cohsim::fabric::Fabric::obtain(int) [/b/cohsim]
  600,000 ( 1.00%)  /usr/include/c++/12/bits/hashtable.h:cohsim::cli::(anonymous namespace)::tester(int)
  500,000 ( 1.00%)  /usr/include/c++/12/bits/random.tcc:std::mersenne_twister_engine<unsigned long, 64ul>::_M_gen_rand() [/b/cohsim]
  400,000 ( 1.00%)  ./malloc/./malloc/malloc.c:_int_malloc [/usr/lib/x86_64-linux-gnu/libc.so.6]
  300,000 ( 1.00%)  ???:operator new(unsigned long) [/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30]
  200,000 ( 1.00%)  ./elf/./elf/dl-lookup.c:do_lookup_x [/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2]
  100,000 ( 1.00%)  /usr/include/c++/12/bits/stl_algo.h:std::__introsort_loop<int*>(int*, int*)
"""


class CostSplitCase(unittest.TestCase):
    def test_lines_are_charged_to_their_source_and_library_lines_to_the_function_they_are_inlined_into(self):
        parts = cost_split.split(cost_split.parse_annotate(ANNOTATE))
        self.assertEqual(parts["engine"], 5_050_000 + 3_639_738)  # engine code inlined into a workload is the engine's
        self.assertEqual(parts["models and workloads"], 3_541_700)
        self.assertEqual(parts["interconnect"], 6_720_071 + 1_000_000)
        self.assertEqual(parts["fabric"], 800_000 + 700_000)
        self.assertEqual(parts["command line and tester"], 600_000)
        self.assertEqual(parts["random numbers"], 500_000)
        self.assertEqual(parts["allocator"], 400_000 + 300_000)
        self.assertEqual(parts["libc and other libraries"], 200_000)
        self.assertEqual(parts["C++ library (other)"], 100_000)
        self.assertEqual(sum(parts.values()), 23_551_509)  # each function line once; PROGRAM TOTALS is not one

    def test_names_lose_their_parameters_and_template_arguments(self):
        self.assertEqual(cost_split.bare_name("std::mersenne_twister_engine<unsigned long, 64ul>::operator()()"),
                         "std::mersenne_twister_engine::operator")
        self.assertEqual(cost_split.bare_name("cohsim::cli::(anonymous namespace)::tester(int)"),
                         "cohsim::cli::{anonymous}::tester")

    def test_entries_count_the_calls_of_coroutine_bodies_under_compressed_names_and_destructions_apart(self):
        # callgrind names a function at its first use, "(id) name", and by "(id)" after.
        raw = "\n".join([
            "fn=(1) cohsim::sim::Simulator::run(cohsim::sim::RunLimits const&)",
            "cfn=(2) cohsim::cpu::Cpu::rmw(cohsim::cpu::Cpu::rmw(int)::Frame*) [clone .actor]",
            "calls=7 0x1234",
            "10 500",
            "cfn=(3) cohsim::sim::Simulator::schedule(unsigned long)",
            "calls=100 0x5678",
            "10 900",
            "fn=(4) cohsim::fabric::Fabric::obtain(int)",
            "cfi=(9) /work/main/src/cpu/cpu.cpp",
            "cfn=(2)",
            "calls=5 0x1234",
            "10 300",
            "fn=(5) cohsim::cpu::Cpu::rmw(cohsim::cpu::Cpu::rmw(int)::Frame*) [clone .destroy]",
            "cfn=(2)",
            "calls=3 0x1234",
            "10 60",
        ])
        self.assertEqual(cost_split.count_entries(raw), (15, 3))

    def run_script(self, *args):
        return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)

    def test_a_missing_profile_is_refused_with_its_path(self):
        r = self.run_script("/nonexistent/callgrind.out")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/callgrind.out", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_a_count_that_is_not_a_positive_number_is_refused(self):
        for per in ("0", "-3", "inf", "nan"):
            with tempfile.NamedTemporaryFile() as f:
                r = self.run_script(f.name, "--per", per)
            self.assertEqual(r.returncode, 2, per)
            self.assertIn("--per", r.stderr)

    def test_a_profile_given_as_its_own_baseline_is_refused(self):
        with tempfile.NamedTemporaryFile() as f:
            r = self.run_script(f.name, "--baseline", f.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("same file", r.stderr)

    @unittest.skipUnless(shutil.which("callgrind_annotate"), "valgrind not installed")
    def test_a_file_that_is_not_a_profile_is_refused_in_one_line_text_or_binary(self):
        for content in (b"just some text\n", bytes(range(256)) * 8):
            with tempfile.NamedTemporaryFile() as f:
                f.write(content)
                f.flush()
                r = self.run_script(f.name)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f.name, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
