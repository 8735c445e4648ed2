"""Tests for scripts/sweep_slurm.py that need no cluster (the real-Slurm test is
scripts/slurm_test.sh, ctest `slurm_sweep`)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE.parent.parent / "scripts"
FAKE = HERE / "fake_cohsim.py"
sys.path.insert(0, str(SCRIPTS))

import sweep  # noqa: E402
import sweep_slurm  # noqa: E402


class SlurmBackendTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cohsim-sweep-slurm-test-"))
        self.scenario = self.tmp / "scn.json"
        self.scenario.write_text("{}\n")
        self.out = self.tmp / "out"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sweep(self, *args, path=None):
        env = dict(os.environ)
        env.pop("COHSIM", None)
        if path is not None:
            env["PATH"] = path
        return subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), *args],
                              env=env, capture_output=True, text=True, timeout=60)

    def test_estimate_from_the_points_cpus(self):
        pts = {p["id"]: p for p in sweep.expand_grid([("cpus", ["8", "1792"])], [""], [1])}
        ids = sorted(pts)
        small = [i for i in ids if "cpus=8_" in i]
        self.assertEqual(sweep_slurm.estimate(pts, small, []), (512 + 8, (300 + 16 + 59) // 60))
        self.assertEqual(sweep_slurm.estimate(pts, ids, []),          # a chunk of both
                         (512 + 1792, (300 + 16 + 300 + 3584 + 59) // 60))
        one = sweep.expand_grid([], [""], [1])
        self.assertEqual(sweep_slurm.point_cpus(one[0], [("cpus", "4")]), 4)
        self.assertEqual(sweep_slurm.point_cpus(one[0], []), sweep_slurm.DEFAULT_CPUS)
        self.assertEqual(sweep_slurm.fmt_time(125), "2:05:00")

    def test_sbatch_missing_is_exit_2_and_submits_nothing(self):
        bindir = self.tmp / "bin"      # python3 only: no sbatch on this PATH
        bindir.mkdir()
        os.symlink(sys.executable, bindir / "python3")
        r = self.sweep(str(self.scenario), "--param", "cpus=2,4", "--out", str(self.out),
                       "--cohsim", str(FAKE), "--backend", "slurm", path=str(bindir))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("error: sbatch not found on PATH", r.stderr)
        self.assertFalse((self.out / "slurm" / "submissions.json").exists())

    def test_bad_slurm_arguments_exit_2(self):
        base = [str(self.scenario), "--out", str(self.out), "--cohsim", str(FAKE)]
        for extra, msg in ((["--chunk", "2"], "need --backend slurm"),
                           (["--mem", "1G"], "need --backend slurm"),
                           (["--backend", "slurm", "--chunk", "0"], "--chunk must be at least 1"),
                           (["--backend", "slurm", "--emit-joblist", str(self.tmp / "j")],
                            "give one"),
                           (["--backend", "pbs"], "invalid choice")):
            r = self.sweep(*base, *extra)
            self.assertEqual(r.returncode, 2, (extra, r.stderr))
            self.assertIn(msg, r.stderr)
        r = self.sweep("--status", str(self.tmp / "nothing"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no sweep.json", r.stderr)

    def test_status_from_files_and_logs(self):
        # A local sweep's grid, then a recorded array whose logs say: one point ended
        # without a result, one is running; squeue is not on PATH, so the logs decide.
        r = self.sweep(str(self.scenario), "--param", "cpus=2,4,8", "--out", str(self.out),
                       "--cohsim", str(FAKE), "-q")
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = [p["id"] for p in json.loads((self.out / "sweep.json").read_text())["points"]]
        for i in ids[1:]:
            (self.out / "points" / (i + ".json")).unlink()
        logs = self.out / "slurm" / "logs"
        logs.mkdir(parents=True)
        (self.out / "slurm" / "submissions.json").write_text(json.dumps(
            [{"job_id": "7", "tasks": [[i] for i in ids[1:]]}]))
        (logs / "7_0.log").write_text("cohsim-sweep-start %s 100.0\ncohsim-sweep-end %s 1 110.0\n"
                                      % (ids[1], ids[1]))
        (logs / "7_1.log").write_text("cohsim-sweep-start %s 105.0\n" % ids[2])
        bindir = self.tmp / "bin"
        bindir.mkdir()
        os.symlink(sys.executable, bindir / "python3")
        r = self.sweep("--status", str(self.out), path=str(bindir))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("3 points: 1 done, 1 running, 0 pending, 1 failed, ETA ~0:10", r.stdout)
        self.assertIn("failed %s (job 7 task 0, exit 1): log %s" % (ids[1], logs / "7_0.log"),
                      r.stdout)


if __name__ == "__main__":
    unittest.main()
