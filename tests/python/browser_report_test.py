"""A compare report as a reader sees it: report.html in headless Chromium.

Run by ctest (report_in_browser) with COHSIM (the binary) and
COHSIM_BROWSER_OUT (where the report and its screenshot stay, under the build
directory). Needs Debian's chromium (scripts/setup.sh installs it): without it
the test fails, it does not skip.

  COHSIM=build/release/cohsim /usr/bin/python3 tests/python/browser_report_test.py -v
"""

import os
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
        # Four variants, a few rounds: a report with four charts in a few seconds (the quick ranges
        # run every input at these rounds: the --set is shorter than the scenario's screen).
        r = subprocess.run([str(COHSIM), "compare", str(SCENARIO), "--set", "rounds=20",
                            "--report", str(cls.report), "-q"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError("cohsim compare failed (%d): %s" % (r.returncode, r.stderr))

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
