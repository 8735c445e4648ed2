"""scripts/metrics_snapshot.py: a run the watchdog ends is a recorded outcome;
any other failed run is an error (exit 2), never a snapshot."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "metrics_snapshot.py")

FAKE = r'''#!/usr/bin/python3
import json, os, sys
args = sys.argv[1:]
scenario = os.path.basename(args[1])
if scenario == os.environ.get("FAKE_STUCK"):
    sys.stderr.write("cohsim: the simulation cannot make progress\nwatchdog: no progress for 50ms at t=50ms\n")
    sys.exit(1)
if scenario == os.environ.get("FAKE_BROKEN"):
    sys.stderr.write("cohsim: internal error: protocol error\n")
    sys.exit(1)
json.dump({"metrics": {"x": 1}}, open(args[args.index("--json") + 1], "w"))
'''


class MetricsSnapshotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.tmp.name, "cohsim")
        with open(self.fake, "w") as f:
            f.write(FAKE)
        os.chmod(self.fake, os.stat(self.fake).st_mode | stat.S_IEXEC)
        self.record = os.path.join(self.tmp.name, "snap.json")

    def tearDown(self):
        self.tmp.cleanup()

    def snapshot(self, **env):
        return subprocess.run([sys.executable, SCRIPT, "--record", self.record, "--cohsim", self.fake],
                              env=dict(os.environ, **env), capture_output=True, text=True)

    def test_a_run_the_watchdog_ends_is_recorded_with_its_verdict(self):
        r = self.snapshot(FAKE_STUCK="hpet-superdome-flex.json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.load(open(self.record))
        self.assertEqual(got["hpet-superdome-flex.json:hpet"],
                         {"exit_status": 1, "error": "cohsim: the simulation cannot make progress",
                          "watchdog": "watchdog: no progress for 50ms at t=50ms"})
        self.assertEqual(got["ipi-kunpeng920.json:(baseline)"], {"x": 1})

    def test_any_other_failed_run_exits_2_and_writes_no_snapshot(self):
        r = self.snapshot(FAKE_BROKEN="ipi-kunpeng920.json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("internal error", r.stderr)
        self.assertFalse(os.path.exists(self.record))


if __name__ == "__main__":
    unittest.main()
