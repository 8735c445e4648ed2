"""Tests for scripts/sweep.py, run against tests/python/fake_cohsim.py.

  /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPTS = REPO / "scripts"
FAKE = HERE / "fake_cohsim.py"
REAL = REPO / "build" / "release" / "cohsim"
sys.path.insert(0, str(SCRIPTS))

import cohsim_results as cr  # noqa: E402
import sweep  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


class SweepCase(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cohsim-sweep-test-"))
        self.scenario = self.tmp / "scn.json"
        self.scenario.write_text("{}\n")
        self.out = self.tmp / "out"
        self.log = self.tmp / "calls.log"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sweep(self, *args, env=None, cohsim=str(FAKE), scenario=True):
        e = dict(os.environ, FAKE_COHSIM_LOG=str(self.log))
        e.pop("COHSIM", None)
        e.update(env or {})
        cmd = [sys.executable, str(SCRIPTS / "sweep.py")]
        if scenario:
            cmd.append(str(self.scenario))
        cmd += list(args)
        if cohsim:
            cmd += ["--cohsim", cohsim]
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=60)

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(l) for l in self.log.read_text().splitlines()]

    def grid_args(self):
        return ["--param", "cpus=2,4", "--variant", "cmpxchg,fetch-add", "--seeds", "2",
                "-j", "4", "--out", str(self.out)]


class GridTest(unittest.TestCase):
    def test_expand_grid_is_cartesian_and_stable(self):
        params = sweep.parse_params(["cpus=2,4", "mode=x,y,z"])
        self.assertEqual(params, [("cpus", ["2", "4"]), ("mode", ["x", "y", "z"])])
        pts = sweep.expand_grid(params, ["a", "b"], [1, 2])
        self.assertEqual(len(pts), 2 * 3 * 2 * 2)
        self.assertEqual(len({p["id"] for p in pts}), len(pts))
        self.assertEqual(pts[0], {"id": "a__cpus=2__mode=x__s1", "variant": "a", "seed": 1,
                                  "params": {"cpus": "2", "mode": "x"}})
        self.assertEqual(pts[-1]["id"], "b__cpus=4__mode=z__s2")
        self.assertEqual(sweep.expand_grid(params, ["a", "b"], [1, 2]), pts)

    def test_no_params_and_default_variant(self):
        self.assertEqual(sweep.parse_variants(None), [""])
        self.assertEqual(sweep.parse_variants(""), [""])
        pts = sweep.expand_grid([], [""], [1, 2, 3])
        self.assertEqual([p["id"] for p in pts], ["default__s1", "default__s2", "default__s3"])
        cmd = sweep.point_command("cohsim", "s.json", pts[0], [("k", "v")], "o.json")
        self.assertEqual(cmd, ["cohsim", "run", "s.json", "--set", "k=v", "--seed", "1",
                               "--json", "o.json", "-q"])

    def test_seeds(self):
        self.assertEqual(sweep.parse_seeds(None, None), [1])
        self.assertEqual(sweep.parse_seeds(3, None), [1, 2, 3])
        self.assertEqual(sweep.parse_seeds(None, "7,11"), [7, 11])
        for bad in ((2, "1"), (0, None), (None, "1,x"), (None, "1,1")):
            with self.assertRaises(sweep.UsageError):
                sweep.parse_seeds(*bad)

    def test_bad_params(self):
        for bad in (["cpus"], ["=2"], ["cpus="], ["cpus=2,,4"], ["cpus=2,2"], ["a=1", "a=2"]):
            with self.assertRaises(sweep.UsageError, msg=bad):
                sweep.parse_params(bad)

    def test_point_id(self):
        a = cr.point_id("v", {"b": "1", "a": "2"}, 3)
        self.assertEqual(a, cr.point_id("v", {"a": "2", "b": "1"}, 3))
        self.assertEqual(a, "v__a=2__b=1__s3")
        odd1 = cr.point_id("v", {"path": "a/b c"}, 1)
        odd2 = cr.point_id("v", {"path": "a b/c"}, 1)
        self.assertNotEqual(odd1, odd2)
        self.assertRegex(odd1, r"^[A-Za-z0-9._+=-]+$")


class RunTest(SweepCase):
    def test_runs_grid_and_writes_stable_csv(self):
        r = self.sweep(*self.grid_args())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.calls()), 8)
        header, rows = read_csv(self.out / "results.csv")
        self.assertEqual(header, ["scenario", "variant", "seed", "param.cpus",
                                  "metric.latency_ns.p50", "metric.ops_per_s",
                                  "metric.remote_transfers", "status"])
        self.assertEqual(len(rows), 8)
        self.assertEqual({r["status"] for r in rows}, {"ok"})
        self.assertEqual([(r["variant"], r["param.cpus"], r["seed"]) for r in rows[:3]],
                         [("cmpxchg", "2", "1"), ("cmpxchg", "2", "2"), ("cmpxchg", "4", "1")])
        desc = json.loads((self.out / "sweep.json").read_text())
        self.assertEqual(desc["params"], {"cpus": ["2", "4"]})
        self.assertEqual(desc["variants"], ["cmpxchg", "fetch-add"])
        self.assertEqual(desc["seeds"], [1, 2])
        # a line per completed point on a non-TTY stderr
        self.assertEqual(r.stderr.count(" ok "), 8)
        self.assertIn("[8 done, 0 failed / 8]", r.stderr)

    def test_relative_out_dir(self):
        r = subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), "scn.json", "--param",
                            "cpus=2,4", "-q", "--out", "rel", "--cohsim", str(FAKE)],
                           cwd=str(self.tmp), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(list((self.tmp / "rel" / "points").glob("*.json"))), 2)

    def test_fixed_sets_and_swept_params_reach_the_binary(self):
        r = self.sweep("--param", "cpus=8", "--set", "workload.batch=4", "-q",
                       "--out", str(self.out))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        (call,) = self.calls()
        self.assertNotIn("--variant", call)
        self.assertIn("workload.batch=4", call)
        self.assertIn("cpus=8", call)
        self.assertEqual(call[call.index("--json") + 1],
                         str(self.out / "points" / "default__cpus=8__s1.json"))

    def test_resume_skips_complete_and_reruns_incomplete(self):
        self.assertEqual(self.sweep(*self.grid_args()).returncode, 0)
        self.assertEqual(len(self.calls()), 8)
        self.log.unlink()
        r = self.sweep(*self.grid_args())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), [])
        self.assertIn("8 of 8 points already complete", r.stderr)
        pts = self.out / "points"
        (pts / "cmpxchg__cpus=2__s1.json").write_text('{"metrics": {"x": 1')   # torn
        (pts / "cmpxchg__cpus=4__s2.json").write_text('{"scenario": "x"}')      # no metrics
        (pts / "fetch-add__cpus=2__s1.json").unlink()                           # missing
        r = self.sweep(*self.grid_args())
        self.assertEqual(r.returncode, 0, r.stderr)
        rerun = sorted(Path(c[c.index("--json") + 1]).stem for c in self.calls())
        self.assertEqual(rerun, ["cmpxchg__cpus=2__s1", "cmpxchg__cpus=4__s2",
                                 "fetch-add__cpus=2__s1"])
        _, rows = read_csv(self.out / "results.csv")
        self.assertEqual(len(rows), 8)
        self.assertEqual({r["status"] for r in rows}, {"ok"})

    def test_stale_points_of_another_build_or_changed_inputs_are_recomputed(self):
        self.assertEqual(self.sweep(*self.grid_args()).returncode, 0)
        self.assertEqual(len(self.calls()), 8)
        doc = json.loads((self.out / "points" / "cmpxchg__cpus=2__s1.json").read_text())
        self.assertEqual(doc["build_id"], "fake-build-1")
        # a new build: every point is recomputed, and the line says why
        self.log.unlink()
        r = self.sweep(*self.grid_args(), env={"COHSIM_BUILD_ID": "fake-build-2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.calls()), 8)
        self.assertIn("recomputing 8 of 8 points: 8 made by another build (fake-build-1; "
                      "this binary is fake-build-2)", r.stderr)
        self.assertNotIn("already complete", r.stderr)
        # the same build again: nothing runs
        self.log.unlink()
        r = self.sweep(*self.grid_args(), env={"COHSIM_BUILD_ID": "fake-build-2"})
        self.assertEqual(self.calls(), [])
        self.assertNotIn("recomputing", r.stderr)
        # a changed input (the scenario file): recomputed too
        self.scenario.write_text('{"changed": true}\n')
        r = self.sweep(*self.grid_args(), env={"COHSIM_BUILD_ID": "fake-build-2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.calls()), 8)
        self.assertIn("recomputing 8 of 8 points: 8 whose input files changed since", r.stderr)

    def test_override_variant_is_accepted_and_passed_on(self):
        r = self.sweep("--variant", "cmpxchg", "--set", "lock=tas", "--override-variant", "-q",
                       "--out", str(self.out))
        self.assertEqual(r.returncode, 0, r.stderr)
        (call,) = self.calls()
        self.assertIn("--override-variant", call)

    def test_failed_point_does_not_stop_others(self):
        # an earlier complete sweep here: its results.csv must not outlive a failed one
        self.assertEqual(self.sweep(*self.grid_args(), "-q").returncode, 0)
        self.assertTrue((self.out / "results.csv").exists())
        shutil.rmtree(self.out / "points")
        self.log.unlink()
        r = self.sweep(*self.grid_args(), env={"FAKE_COHSIM_FAIL": "cpus=4"})
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(self.calls()), 8)
        self.assertIn("FAILED cmpxchg__cpus=4__s1 (exit 1)", r.stderr)
        self.assertIn("--set cpus=4 --seed 1", r.stderr)          # the command line
        self.assertIn("check failed: coherence invariant", r.stderr)  # the stderr tail
        self.assertIn("4 of 8 point(s) failed", r.stderr)
        err = (self.out / "points" / "fetch-add__cpus=4__s2.err").read_text()
        self.assertIn("# command: ", err)
        self.assertIn("run %s --variant fetch-add" % self.scenario, err)
        self.assertIn("check failed", err)
        # never a partial results.csv: none at all, the complete points kept for the re-run
        self.assertIn("no results.csv written", r.stderr)
        self.assertEqual(sorted(p.name for p in self.out.iterdir()), ["points", "sweep.json"])
        self.assertEqual(len(list((self.out / "points").glob("*.json"))), 4)
        # --collect tabulates the complete ones, the failed ones marked missing (exit 1)
        r = self.sweep("--collect", str(self.out), "-q", cohsim=None, scenario=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        _, rows = read_csv(self.out / "results.csv")
        status = {(r["variant"], r["param.cpus"], r["seed"]): r["status"] for r in rows}
        self.assertEqual(status[("cmpxchg", "4", "1")], "missing")
        self.assertEqual(status[("cmpxchg", "2", "1")], "ok")
        self.assertEqual(sum(s == "ok" for s in status.values()), 4)
        # fixed: only the failed points run again; their .err files go away
        self.log.unlink()
        r = self.sweep(*self.grid_args())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.calls()), 4)
        self.assertEqual(list((self.out / "points").glob("*.err")), [])
        _, rows = read_csv(self.out / "results.csv")
        self.assertEqual([r["status"] for r in rows], ["ok"] * 8)

    def test_an_interrupted_sweep_leaves_no_results_csv(self):
        self.assertEqual(self.sweep(*self.grid_args(), "-q").returncode, 0)
        shutil.rmtree(self.out / "points")
        self.log.unlink()
        e = dict(os.environ, FAKE_COHSIM_LOG=str(self.log), FAKE_COHSIM_SLEEP="30")
        e.pop("COHSIM", None)
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "sweep.py"), str(self.scenario),
                                 *self.grid_args(), "-q", "--cohsim", str(FAKE)],
                                env=e, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while len(self.calls()) < 4 and time.monotonic() < deadline:  # points running
                time.sleep(0.05)
            self.assertEqual(len(self.calls()), 4)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("no results.csv written", err)
        self.assertFalse((self.out / "results.csv").exists())

    def test_exit_zero_without_result_is_a_failure(self):
        r = self.sweep("--param", "cpus=2,4", "-q", "--out", str(self.out),
                       env={"FAKE_COHSIM_NOJSON": "cpus=2"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("exit 0 but", r.stderr)

    def test_timeout_is_a_failure(self):
        r = self.sweep("--param", "cpus=2", "--timeout", "0.3", "-q", "--out", str(self.out),
                       env={"FAKE_COHSIM_SLEEP": "10"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("timeout after 0.3s", r.stderr)

    def test_bad_arguments_exit_2(self):
        cases = [
            (["--param", "cpus"], "NAME=VALUE"),
            (["--param", "cpus=2", "--seeds", "2", "--seed-list", "1"], "either --seeds"),
            (["--param", "cpus=2", "--seed-list", "1,-1"], "not an integer in 0..2^64-1"),
            (["--param", "cpus=2", "--seed-list", "18446744073709551616"], "not an integer in 0..2^64-1"),
            (["--param", "cpus=2", "--set", "cpus=4"], "both swept"),
            (["-j", "0"], "-j must be"),
        ]
        for args, msg in cases:
            r = self.sweep(*args, "--out", str(self.out))
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(msg, r.stderr)
        r = self.sweep("--out", str(self.out), cohsim=str(self.tmp / "nope"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("cohsim binary not found", r.stderr)
        r = self.sweep("--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(self.calls(), [])

    def test_refuses_to_mix_different_fixed_sets(self):
        self.assertEqual(self.sweep("--set", "a=1", "-q", "--out", str(self.out)).returncode, 0)
        r = self.sweep("--set", "a=2", "-q", "--out", str(self.out))
        self.assertEqual(r.returncode, 2)
        self.assertIn("different --set", r.stderr)


class NameCheckTest(SweepCase):
    """Variant and parameter names are checked before the first point."""

    def test_unknown_variant_or_name_fails_before_any_point(self):
        r = self.sweep("--param", "cpus=2,4", "--variant", "cmpxchg,fetch-ad", "-q", "--out", str(self.out),
                       env={"FAKE_COHSIM_VARIANTS": "cmpxchg,fetch-add"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("variant fetch-ad: scn.json: variants: unknown variant 'fetch-ad'", r.stderr)
        self.assertIn("(no point ran)", r.stderr)
        self.assertEqual(self.calls(), [])
        self.assertFalse((self.out / "points").exists())
        r = self.sweep("--param", "cpus=2,4", "--set", "round=3", "-q", "--out", str(self.out),
                       env={"FAKE_COHSIM_UNKNOWN": "round"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("params.round: unknown key", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_default_output_is_under_the_current_directory(self):
        r = subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), "scn.json", "--param", "cpus=2",
                            "-q", "--cohsim", str(FAKE)],
                           cwd=str(self.tmp), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue((self.tmp / "sweep-out" / "scn" / "results.csv").exists())

    @unittest.skipUnless(REAL.exists(), "build/release/cohsim not built")
    def test_the_real_binary_refuses_a_set_that_a_variant_sets_and_suggests_names(self):
        spin = REPO / "configs" / "scenarios" / "spinlock-kunpeng920.json"
        r = subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), str(spin), "--variant", "ticket",
                            "--set", "lock=tas", "-q", "--out", str(self.out), "--cohsim", str(REAL)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("'ticket' sets it to \"ticket\"", r.stderr)
        r = subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), str(spin), "--param", "section=10,20",
                            "-q", "--out", str(self.out), "--cohsim", str(REAL)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("did you mean 'sections'?", r.stderr)
        self.assertFalse((self.out / "points").exists())
        # the flag the refusal suggests is one sweep.py takes
        self.assertIn("--override-variant", subprocess.run(
            [sys.executable, str(SCRIPTS / "sweep.py"), "--help"], capture_output=True, text=True).stdout)


    @unittest.skipUnless(REAL.exists(), "build/release/cohsim not built")
    def test_bad_values_fail_before_any_point_and_write_nothing(self):
        def sweep(scenario, *args):
            return subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"),
                                   str(REPO / "configs" / "scenarios" / scenario), *args,
                                   "-q", "--out", str(self.out), "--cohsim", str(REAL)],
                                  capture_output=True, text=True, timeout=120)
        # a later value out of bounds (the first one is fine), in every variant
        r = sweep("smmu-kunpeng920.json", "--param", "cpus=2,-4",
                  "--variant", "cmpxchg,fetch-add")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("params.cpus: value -4: a CPU count must be 1..96", r.stderr)
        self.assertIn("(variant cmpxchg, cpus=-4, and 1 more)", r.stderr)
        self.assertIn("no point ran", r.stderr)
        self.assertFalse(self.out.exists())
        # a value that cannot be read
        r = sweep("smmu-kunpeng920.json", "--param", "duration=1ms,fast")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("params.duration", r.stderr)
        self.assertIn("fast", r.stderr)
        self.assertFalse(self.out.exists())
        # values fine alone that do not go together
        r = sweep("c2c-kunpeng920.json", "--param", "cpu_a=1,2", "--param", "cpu_b=2,3")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("params.cpu_b: value 2: must differ from cpu_a (cpu_a=2, cpu_b=2)", r.stderr)
        self.assertFalse(self.out.exists())
        # a job list is not written either
        jobs = self.tmp / "jobs.txt"
        r = sweep("smmu-kunpeng920.json", "--param", "cpus=2,200", "--emit-joblist", str(jobs))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("params.cpus: value 200", r.stderr)
        self.assertFalse(jobs.exists())
        self.assertFalse(self.out.exists())


class MultiMachineTest(SweepCase):
    def test_emit_joblist_then_collect(self):
        parent = REPO / "sweep-out"
        if not parent.exists():
            self.addCleanup(lambda: parent.rmdir() if not any(parent.iterdir()) else None)
        out = parent / ("_test-%d" % os.getpid())
        self.addCleanup(shutil.rmtree, out, True)
        jobs = self.tmp / "jobs.txt"
        r = self.sweep("--param", "cpus=2,4", "--variant", "cmpxchg,fetch-add",
                       "--out", str(out), "--emit-joblist", str(jobs))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), [])                      # nothing ran
        self.assertFalse((out / "points").exists())
        lines = jobs.read_text().splitlines()
        self.assertEqual(len(lines), 4)
        rel = out.relative_to(REPO).as_posix()
        self.assertEqual(lines[0], (
            "cd %s && mkdir -p %s/points && tests/python/fake_cohsim.py run %s "
            "--variant cmpxchg --set cpus=2 --seed 1 --json %s/points/cmpxchg__cpus=2__s1.json -q"
            % (REPO, rel, self.scenario, rel)))
        for line in lines:   # what GNU parallel would do on each host
            subprocess.run(["bash", "-c", line], check=True, env=dict(
                os.environ, FAKE_COHSIM_LOG=str(self.log)))
        (out / "points" / "cmpxchg__cpus=4__s1.json").unlink()
        r = self.sweep("--collect", str(out), scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 1)
        self.assertIn("1 of 4 grid point(s) have no complete result: cmpxchg__cpus=4__s1",
                      r.stderr)
        _, rows = read_csv(out / "results.csv")
        self.assertEqual([r["status"] for r in rows], ["ok", "missing", "ok", "ok"])
        # re-emitting lists only the missing point
        r = self.sweep("--param", "cpus=2,4", "--variant", "cmpxchg,fetch-add",
                       "--out", str(out), "--emit-joblist", str(jobs))
        self.assertEqual(len(jobs.read_text().splitlines()), 1)

    @unittest.skipUnless(REAL.exists(), "build/release/cohsim not built")
    def test_the_joblist_run_by_gnu_parallel_then_collected_matches_a_local_sweep(self):
        parallel = shutil.which("parallel")
        version = subprocess.run([parallel, "--version"], capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL).stdout if parallel else ""
        self.assertIn("GNU parallel", version, "GNU parallel is not installed (moreutils' parallel "
                      "is another program): apt-get install parallel (scripts/setup.sh does)")
        c2c = str(REPO / "configs" / "scenarios" / "c2c-kunpeng920.json")
        # from CPU 24 (die 1) to its cluster, to die 0 and to the other socket
        grid = [c2c, "--param", "cpu_b=1,26,48", "--set", "cpu_a=24", "--set", "rounds=200",
                "--cohsim", str(REAL), "-q"]
        run = lambda *a: subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), *a],
                                        capture_output=True, text=True, timeout=120)
        local, multi, jobs = self.tmp / "local", self.tmp / "multi", self.tmp / "jobs.txt"
        r = run(*grid, "--out", str(local))
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(*grid, "--out", str(multi), "--emit-joblist", str(jobs))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(jobs.read_text().splitlines()), 3)
        # ":" is this machine in parallel's list of logins (no ssh), with two job slots.
        with open(jobs) as job_lines:
            r = subprocess.run([parallel, "--will-cite", "--sshlogin", "2/:", "--halt", "now,fail=1",
                                "--joblog", str(self.tmp / "jobs.log")], stdin=job_lines,
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(list((multi / "points").glob("*.json"))), 3)
        r = run("--collect", str(multi))
        self.assertEqual(r.returncode, 0, r.stderr)
        local_header, local_rows = read_csv(local / "results.csv")
        multi_header, multi_rows = read_csv(multi / "results.csv")
        self.assertEqual(multi_header, local_header)
        self.assertIn("metric.one_way_ns", multi_header)
        self.assertEqual(multi_rows, local_rows)
        self.assertEqual([(r["param.cpu_b"], r["metric.one_way_ns"]) for r in multi_rows],
                         [("1", "87.85"), ("26", "34.5"), ("48", "158.6")])
        self.assertEqual({r["status"] for r in multi_rows}, {"ok"})

    def test_emit_joblist_default_binary_is_repo_relative(self):
        # A real scenario: where the default binary is built, sweep.py checks the names with it.
        self.scenario = REPO / "configs" / "scenarios" / "c2c-kunpeng920.json"
        jobs = self.tmp / "jobs.txt"
        r = self.sweep("--param", "rounds=20", "--out", str(self.out), "--emit-joblist",
                       str(jobs), "-q", cohsim=None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" && build/release/cohsim run ", jobs.read_text())

    def test_collect_from_anywhere_without_sweep_json(self):
        self.assertEqual(self.sweep(*self.grid_args(), "-q").returncode, 0)
        gathered = self.tmp / "gathered"
        for i, f in enumerate(sorted((self.out / "points").glob("*.json"))):
            dest = gathered / "points" / ("host%d" % (i % 2)) / ("r%d.json" % i)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest)
        (gathered / "points" / "broken.json").write_text("{")
        r = self.sweep("--collect", str(gathered), scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 1)               # the broken file is reported
        self.assertIn("broken.json is incomplete", r.stderr)
        header, rows = read_csv(gathered / "results.csv")
        self.assertEqual(header, read_csv(self.out / "results.csv")[0])
        self.assertEqual(len(rows), 8)
        key = lambda r: (r["variant"], r["param.cpus"], r["seed"])
        self.assertEqual(sorted(map(key, rows)),
                         sorted(map(key, read_csv(self.out / "results.csv")[1])))
        self.assertTrue(json.loads((gathered / "sweep.json").read_text())["inferred"])
        r = self.sweep("--collect", str(self.tmp / "nothing"), scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 2)


class JoblistTest(SweepCase):
    """sweep.py --joblist FILE: a job list cohsim wrote (sensitivity|validate --emit-joblist), run here."""

    def write_jobs(self, *lines):
        (self.tmp / "res").mkdir(exist_ok=True)  # the points folder, which cohsim makes when it emits
        jobs = self.tmp / "jobs.txt"
        jobs.write_text("".join(l + "\n" for l in lines))
        return jobs

    def job(self, name, *sets):
        return "cd %s && %s %s run %s %s --json res/%s.json -q" % (
            self.tmp, sys.executable, FAKE, self.scenario,
            " ".join("--set %s" % s for s in sets), name)

    def test_runs_the_lines_without_a_result_and_only_those(self):
        jobs = self.write_jobs(self.job("a", "cpus=2"), self.job("b", "cpus=4"))
        r = self.sweep("--joblist", str(jobs), "-q", scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(cr.is_complete(self.tmp / "res" / "a.json"))
        self.assertTrue(cr.is_complete(self.tmp / "res" / "b.json"))
        self.assertEqual(len(self.calls()), 2)
        (self.tmp / "res" / "b.json").unlink()  # a lost result: that line alone runs again
        r = self.sweep("--joblist", str(jobs), scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.calls()), 3)
        self.assertIn("cpus=4", " ".join(self.calls()[-1]))
        self.assertIn("1 of 2 line(s)", r.stderr)

    def test_a_failed_line_exits_1_with_its_stderr_kept(self):
        jobs = self.write_jobs(self.job("a", "cpus=2"), self.job("b", "cpus=4"))
        r = self.sweep("--joblist", str(jobs), "-q", env={"FAKE_COHSIM_FAIL": "cpus=4"},
                       scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 1)
        self.assertTrue((self.tmp / "jobs.sweep" / "b.err").exists())
        self.assertTrue(cr.is_complete(self.tmp / "res" / "a.json"))

    def test_a_timed_out_line_is_ended_with_its_cohsim(self):
        # bash runs the line and waits for its cohsim (a command follows it, so bash does not exec it):
        # the timeout must end the whole process group, not bash alone
        jobs = self.write_jobs(self.job("slow", "cpus=2") + "; echo after")
        start = time.monotonic()
        r = self.sweep("--joblist", str(jobs), "--timeout", "1", "-q", env={"FAKE_COHSIM_SLEEP": "30"},
                       scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 1)
        self.assertLess(time.monotonic() - start, 20)
        left = subprocess.run(["pgrep", "-f", str(self.scenario)], capture_output=True, text=True)
        self.assertEqual(left.stdout.strip(), "", "a cohsim of the timed-out line is still running")

    def test_bad_job_lists_exit_2(self):
        for text, why in (("echo no result\n", "no --json FILE"),
                          (self.job("a") + "\n" + self.job("a") + "\n", "ids of a job list must differ"),
                          ("cd 'unclosed\n", "not a shell command")):
            jobs = self.tmp / "bad.txt"
            jobs.write_text(text)
            r = self.sweep("--joblist", str(jobs), scenario=False, cohsim=None)
            self.assertEqual(r.returncode, 2, text)
            self.assertIn(why, r.stderr)
        r = self.sweep("--joblist", str(self.tmp / "none.txt"), scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read the job list", r.stderr)
        r = self.sweep("--joblist", str(self.tmp / "bad.txt"), "--collect", str(self.out),
                       scenario=False, cohsim=None)
        self.assertEqual(r.returncode, 2)
        r = self.sweep("--joblist", str(self.tmp / "bad.txt"), "--chunk", "3", scenario=False,
                       cohsim=None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("need --backend slurm", r.stderr)


if __name__ == "__main__":
    unittest.main()
