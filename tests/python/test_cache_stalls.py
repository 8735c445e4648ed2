"""Tests for bench/cache_stalls.py: the per-unit counts of a cachegrind
profile, the cycle estimate's bounds, and its refusal of bad input.

  /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import io
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import bench_script

cache_stalls = bench_script.load("cache_stalls")

EVENTS = "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\n"


def profile(summary, events=EVENTS, cmd="/b/cohsim selftest coherence --ops 10"):
    return f"desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: {cmd}\n" + events + "fl=a.c\nfn=f\n1 2\n" + summary


class CacheStallsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text, mode="w"):
        p = Path(self.dir.name) / name
        if mode == "wb":
            p.write_bytes(text)
        else:
            p.write_text(text)
        return str(p)

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cache_stalls.main(list(args))
        return code, out.getvalue(), err.getvalue()

    def test_counts_are_grouped_and_divided_after_the_baseline(self):
        #                        Ir   I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc  Bcm Bi Bim
        run = self.write("run", profile("summary: 1100 30 2 500 25 3 200 15 1 300 40 20 10\n"))
        base = self.write("base", profile("summary: 100 10 0 100 5 1 100 5 1 100 20 10 10\n"))
        c = cache_stalls.per_unit(cache_stalls.load(run)[0], cache_stalls.load(base)[0], 10)
        self.assertEqual(c["instructions"], 100)
        self.assertEqual(c["I1 misses"], 2)
        self.assertEqual(c["D1 misses"], 3)  # reads and writes
        self.assertEqual(c["LL misses"], 0.4)  # instruction and data, read and write
        self.assertEqual(c["branches"], 21)  # conditional and indirect
        self.assertEqual(c["mispredictions"], 2)
        self.assertEqual(c["  of them indirect"], 0)

    def test_the_estimate_lies_between_the_instructions_alone_and_every_stall_at_its_highest(self):
        c = {"instructions": 1200, "I1 misses": 10, "D1 misses": 10, "LL misses": 1, "branches": 100,
             "mispredictions": 4, "  of them indirect": 1}
        low, high = cache_stalls.estimate(c)
        self.assertEqual(low, 1200 / 4 + 4 * 15)
        self.assertEqual(high, 1200 / 3 + 4 * 20 + 10 * 16 + 10 * 16 + 300)
        code, out, _ = self.run_main(self.write("p", profile("summary: 1200 10 0 1 10 1 0 0 0 90 3 10 1\n")),
                                     "--seconds-per-unit", "1e-6", "--ghz", "2")
        self.assertEqual(code, 0)
        self.assertIn("cycles taken", out)
        self.assertIn("2,000 (0.60 instructions per cycle)", out)

    def test_bad_input_exits_2_with_one_line(self):
        no_sim = self.write("nosim", profile("summary: 5\n", events="events: Ir\n"))
        cases = [
            (self.write("text", "hello\n"), [], "not a cachegrind profile"),
            (self.write("bin", b"\xff\xfe\x00", mode="wb"), [], "cannot read"),
            (str(Path(self.dir.name) / "missing"), [], "cannot read"),
            (no_sim, [], "--cache-sim=yes --branch-sim=yes"),
            (self.write("words", profile("summary: a b c d e f g h i j k l m\n")), [], "not a list of counts"),
            (self.write("ok", profile("summary: 1 1 1 1 1 1 1 1 1 1 1 1 1\n")), ["--ghz", "3"], "go together"),
            (self.write("short", profile("summary: 100 1 2\n")), [], "3 counts for 13 events"),
            # a baseline of more instructions (the two swapped), or of another program
            (self.write("small", profile("summary: 10 1 1 1 1 1 1 1 1 1 1 1 1\n")),
             ["--baseline", self.write("big", profile("summary: 20 1 1 1 1 1 1 1 1 1 1 1 1\n"))], "were they swapped?"),
            (self.write("big2", profile("summary: 20 1 1 1 1 1 1 1 1 1 1 1 1\n")),
             ["--baseline", self.write("other", profile("summary: 10 1 1 1 1 1 1 1 1 1 1 1 1\n", cmd="/b/engine_bench x"))],
             "a run of engine_bench, the profile one of cohsim"),
            (self.write("ok3", profile("summary: 1 1 1 1 1 1 1 1 1 1 1 1 1\n")),
             ["--seconds-per-unit", "1e-200", "--ghz", "1e-200"], "expected at least one"),
        ]
        for path, extra, says in cases:
            with self.subTest(says=says):
                code, out, err = self.run_main(path, *extra)
                self.assertEqual(code, 2)
                self.assertEqual(out, "")
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1)
        for bad in ("0", "-1", "inf", "nan", "x"):
            with self.subTest(per=bad):
                code, _, err = self.run_main(self.write("ok2", profile("summary: 1 1 1 1 1 1 1 1 1 1 1 1 1\n")), "--per", bad)
                self.assertEqual(code, 2)
                self.assertIn(f"{bad}: expected a positive number", err)
                self.assertEqual(len(err.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
