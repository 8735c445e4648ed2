"""A compare report as a reader sees it: report.html in headless Chromium.

Run by ctest (report_in_browser) with COHSIM (the binary) and
COHSIM_BROWSER_OUT (where the report and its screenshot stay, under the build
directory). Needs Debian's chromium (scripts/setup.sh installs it): without it
the test fails, it does not skip.

  COHSIM=build/release/cohsim /usr/bin/python3 tests/python/browser_report_test.py -v
"""

import os
import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import browser_check  # noqa: E402

COHSIM = Path(os.environ.get("COHSIM", REPO / "build" / "release" / "cohsim"))
OUT = Path(os.environ.get("COHSIM_BROWSER_OUT", REPO / "build" / "release" / "browser-report"))
SCENARIO = REPO / "configs" / "scenarios" / "ipi-kunpeng920.json"


class ReportInBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.chromium = browser_check.find_chromium(None)
        if not cls.chromium:
            raise AssertionError("chromium is not installed: the report cannot be tested in a "
                                 "browser. Install Debian's chromium (scripts/setup.sh does).")
        if not COHSIM.is_file():
            raise AssertionError("%s not built (set COHSIM)" % COHSIM)
        cls.report = OUT / "ipi-compare"
        shutil.rmtree(cls.report, ignore_errors=True)
        OUT.mkdir(parents=True, exist_ok=True)
        # Two variants, three rounds: the quick ranges run every input at this length (the --set is
        # shorter than the scenario's screen), about 200 short runs: seconds in a release build, a
        # few minutes under the sanitizers.
        r = subprocess.run([str(COHSIM), "compare", str(SCENARIO), "--variants", "wmb,dsb-ishst",
                            "--set", "rounds=3", "--report", str(cls.report), "-q"],
                           capture_output=True, text=True, timeout=840)
        if r.returncode != 0:
            raise AssertionError("cohsim compare failed (%d): %s" % (r.returncode, r.stderr))

    def test_the_report_shows_measured_beside_model_labels_ranges_and_how_to_rerun(self):
        # what a reviewer needs before trusting the numbers (issue 44): the calibration rows this
        # compare ran beside the model with their tolerance and label, the first lines saying the
        # measured rows are fitted, each difference's range, the command line and the commit
        md = (self.report / "report.md").read_text()
        head, _, rest = md.partition("## ")
        self.assertIn("- Measured rows: 1 fitted, 2 identity: no test of the model", head)
        measured = md.split("## Measured beside the model")[1].split("\n## ")[0]
        self.assertRegex(measured, r"\| row +\| +measured +\| +model +\| +error +\| +tol +\| +label +\|")
        self.assertRegex(measured, r"\| kp920\.ipi\.cpu0\.barrier-gain +\| +32\.6 ns \| .* \| fitted +\|")
        self.assertRegex(measured, r"\| kp920\.ipi\.cpu0\.wmb +\| +1319 ns \| .* \| identity +\|")
        ranges = md.split("## Sensitivity")[1].split("\n## ")[0]
        self.assertIn("quick ranges", ranges)
        # the inputs that move the difference most, the one that can erase it first
        self.assertIn("move the difference in ns_per_call to wmb most", ranges)
        self.assertRegex(ranges, r"\| cpu\.system_write_slots +\| +-\d+\.\d+% \| +-\d+\.\d+% \| +0\.00% \|")
        self.assertRegex(ranges, r"- ns_per_call \(dsb-ishst vs wmb\): -\d+\.\d+% \.\. 0\.00%")
        for line in md.splitlines():  # within 80 columns for email
            self.assertLessEqual(len(line), 80, line)
        rerun = md.split("## Reproduce")[1]
        command = re.sub(r"\s*\\\n\s*", " ", rerun)  # the command wrapped for email, joined again
        self.assertRegex(command, r"cohsim compare (\S*/)?configs/scenarios/ipi-kunpeng920\.json "
                                  r"--variants wmb,dsb-ishst --set rounds=3 --report \S+ -q\n")
        self.assertRegex(rerun, r"- Commit: ([0-9a-f]{40}( \(dirty tree\))?|unknown)")
        # an arm64 run lists no x86-only parameter (they were not read: no effect here)
        params = md.split("## Parameters")[1].split("\n## ")[0]
        self.assertIn("`call_path_cycles=60`", params)
        for x86_only in ("nox2apic", "idle_exit_cycles", "schedule_idle_cycles"):
            self.assertNotIn(x86_only, params)
        html = (self.report / "report.html").read_text()
        for text in ("Measured beside the model", "kp920.ipi.cpu0.barrier-gain", "Reproduce",
                     "<td>platform.cpu.irq_entry</td><td>estimate</td>"):  # the whole per-input table
            self.assertIn(text, html)

    def test_every_image_of_the_compare_report_loads_and_the_console_stays_clean(self):
        shot = OUT / "ipi-compare-report.png"
        images, problems = browser_check.check_page(self.report / "report.html", self.chromium,
                                                    screenshot=shot)
        self.assertEqual(problems, [])
        # one bar chart per headline metric (ns_per_call, total_ms), the difference chart and the
        # quick ranges' tornado
        self.assertEqual(len(images), 4)
        self.assertGreater(shot.stat().st_size, 10000)
        self.assertEqual(shot.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")

    def test_a_broken_image_or_a_console_error_is_reported(self):
        html = (self.report / "report.html").read_text()
        broken = OUT / "ipi-compare-broken.html"
        broken.write_text(html.replace("base64,iVBORw0KGgo", "base64,notapng", 1).replace(
            "</body>", "<script>console.error('from the page')</script></body>"))
        images, problems = browser_check.check_page(broken, self.chromium)
        self.assertEqual(len(images), 4)
        self.assertEqual(len(problems), 2, problems)
        self.assertRegex(problems[0], r"^image 1 \(.*\) did not load: .* natural size 0x0$")
        self.assertEqual(problems[1], "console.error: from the page")


if __name__ == "__main__":
    unittest.main()
