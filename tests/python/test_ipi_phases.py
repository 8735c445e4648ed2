"""Tests for scripts/ipi_phases.py against the real cohsim (build/release).

  /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPT = REPO / "scripts" / "ipi_phases.py"
REAL = REPO / "build" / "release" / "cohsim"
SCENARIO = REPO / "configs" / "scenarios" / "ipi-kunpeng920.json"


def phases(*sets, rounds=2):
    cmd = [sys.executable, str(SCRIPT), str(SCENARIO), "--rounds", str(rounds), "--cohsim", str(REAL)]
    for kv in sets:
        cmd += ["--set", kv]
    return subprocess.run(cmd, capture_output=True, text=True)


def table(stdout):
    rows = {}
    for line in stdout.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


@unittest.skipUnless(REAL.exists(), "build/release/cohsim not built")
class IpiPhasesCase(unittest.TestCase):
    def test_the_phases_of_each_class_add_up_to_its_total_and_count_the_measured_calls_only(self):
        r = phases("targets=1-3,48", "warmup_rounds=2")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = table(r.stdout)
        self.assertEqual(rows["calls"], ["6", "2"])  # 2 measured rounds: 3 cluster and 1 socket target each
        for col in range(2):
            parts = sum(float(rows[p][col]) for p in ("send path", "barrier", "delivery", "wake-up", "entry",
                                                       "handler", "return"))
            self.assertAlmostEqual(parts, float(rows["total"][col]), delta=0.2)

    def test_no_remote_call_is_an_error(self):
        r = phases("targets=[1]", "source_cpu=1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no remote call", r.stderr)


if __name__ == "__main__":
    unittest.main()
