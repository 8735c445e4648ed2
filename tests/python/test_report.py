"""Tests for scripts/report.py (needs matplotlib: run with /usr/bin/python3).

  /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPTS = REPO / "scripts"
FIXTURES = HERE / "fixtures"
sys.path.insert(0, str(SCRIPTS))

import cohsim_results as cr  # noqa: E402
import report  # noqa: E402
import report_measured  # noqa: E402
import report_plots  # noqa: E402

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:  # e.g. a python3 without python3-matplotlib: use /usr/bin/python3
    HAVE_MPL = False
NEED_MPL = unittest.skipUnless(HAVE_MPL, "matplotlib missing: run with /usr/bin/python3 "
                                         "(apt-get install python3-matplotlib)")


class RowKindTest(unittest.TestCase):
    def test_rows_are_labelled_as_validate_labels_them(self):
        rows = json.loads((REPO / "data" / "calibration.json").read_text())["rows"]
        kinds = report_measured.row_kinds("configs/scenarios/ipi-kunpeng920.json", rows)
        self.assertEqual(kinds["kp920.ipi.cpu0.wmb.nowrites"], "fitted")
        # wmb = nowrites + write-delta and dsb-ishst = wmb - barrier-gain, all three fitted
        self.assertEqual(kinds["kp920.ipi.cpu0.wmb"], "identity")
        self.assertEqual(kinds["kp920.ipi.cpu0.dsb-ishst"], "identity")
        self.assertEqual(kinds["kp920.ipi.cpu48.wmb"], "fitted")  # pins gic.socket_crossing
        self.assertEqual(kinds["kp920.ipi.cpu48.dsb-ishst"], "predicted")
        self.assertEqual(kinds["kp920.ipi.nowrites.barrier-gain"], "predicted")
        self.assertEqual(set(report_measured.row_kinds("no/such.json", rows).values()), {"predicted"})


class FormatTest(unittest.TestCase):
    def test_fmt_num(self):
        cases = [(0, "0"), (1234567, "1.235e6"), (0.5, "0.5"), (666.3, "666.3"),
                 (12.0, "12"), (4800, "4800"), (0.0001234, "1.234e-4"), (-61.75, "-61.75"),
                 (None, "-")]
        for v, s in cases:
            self.assertEqual(cr.fmt_num(v), s, v)

    def test_pct(self):
        self.assertEqual(cr.fmt_pct(cr.pct_diff(130, 100)), "+30.0%")
        self.assertEqual(cr.fmt_pct(cr.pct_diff(97.5, 100)), "-2.50%")
        self.assertEqual(cr.fmt_pct(cr.pct_diff(1, 0)), "n/a")
        self.assertEqual(cr.fmt_pct(cr.pct_diff(0, 0)), "n/a")  # not defined, never 0 %

    def test_log_y_when_the_values_span_more_than_ten_times_or_when_asked(self):
        self.assertTrue(report_plots.use_log_y([5200, 453000], "auto"))
        self.assertFalse(report_plots.use_log_y([100, 1000], "auto"))   # 10x exactly: linear
        self.assertFalse(report_plots.use_log_y([0, 1, 1000], "auto"))  # a zero cannot be drawn
        self.assertFalse(report_plots.use_log_y([5200, 453000], "off"))
        self.assertTrue(report_plots.use_log_y([100, 200], "on"))

    def test_parse_number_and_log2_axis(self):
        self.assertEqual(cr.parse_number("34ns"), 34.0)
        self.assertEqual(cr.parse_number("2us"), 2000.0)
        self.assertIsNone(cr.parse_number("fast"))
        self.assertTrue(report_plots.is_pow2_like(["2", "4", "8", "16", "32", "64", "96"]))
        self.assertFalse(report_plots.is_pow2_like(["10", "20", "30"]))
        self.assertFalse(report_plots.is_pow2_like(["a", "b", "c"]))


class ReportCase(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cohsim-report-test-"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_plain_markdown(self, md):
        self.assertNotRegex(md, r"<[A-Za-z/][^>]*>", "HTML in the Markdown")
        tables = [l for l in md.splitlines() if l.startswith("|")]
        self.assertTrue(tables)
        for l in tables:
            self.assertTrue(l.endswith("|"), l)

    def assert_outputs(self, out, stems):
        html = (out / "report.html").read_text()
        self.assertNotIn('src="http', html)
        self.assertEqual(html.count('src="data:image/png;base64,'), len(list(out.glob("*.png"))))
        for stem in stems:
            self.assertGreater((out / (stem + ".png")).stat().st_size, 1000, stem)
            self.assertIn("<svg", (out / (stem + ".svg")).read_text()[:2000], stem)
        md = (out / "report.md").read_text()
        self.assert_plain_markdown(md)
        return md, html


@NEED_MPL
class CsvReportTest(ReportCase):
    def test_report_from_fixture_csv(self):
        out = self.tmp / "rep"
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"),
                            str(FIXTURES / "sweep_results.csv"), "--out", str(out),
                            "--title", "qspinlock: cmpxchg vs fetch-add"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        md, html = self.assert_outputs(out, [
            "metric_acquire_ns.p50", "metric_acquire_ns.p99", "metric_ops_per_us",
            "metric_remote_transfers", "difference"])
        self.assertTrue(md.startswith("# qspinlock: cmpxchg vs fetch-add\n"))
        self.assertIn("Scenario: `configs/scenarios/qspinlock.json`", md)
        self.assertIn("Swept: cpus = 2, 4, 8, 16, 32, 64, 96", md)
        self.assertIn("baseline: cmpxchg", md)
        self.assertIn("Failed or missing runs: 1", md)
        self.assertIn("## Results at cpus=96", md)
        # baseline row, then the other variant with min/median/max and the difference in %
        # (a sweep leaves the absolute difference out: 80 columns for email)
        self.assertRegex(md, r"\| acquire_ns\.p50 +\| cmpxchg +\| +1534 \| +1553 \| +1571 \| +base \|")
        self.assertRegex(md, r"\| acquire_ns\.p50 +\| fetch-add +\| +1097 \| +1097 \| +1097 \| +-29\.4% \|")
        self.assertIn("<figure><img", html)
        self.assertLessEqual(max(len(l) for l in md.splitlines()), 80)

    def test_a_sweep_report_tabulates_every_point(self):
        out = self.tmp / "rep"
        md = report.report_from_csv(FIXTURES / "sweep_results.csv", out)["md"].read_text()
        table = md.split("## ops_per_us at every point\n")[1].split("\n\n## ")[0]
        self.assertIn("Median over 2 seeds; in brackets the difference to cmpxchg.", table)
        rows = [[c.strip() for c in l.strip("|").split("|")] for l in table.splitlines()
                if l.startswith("|")]
        self.assertEqual(rows[0], ["cpus", "cmpxchg (base)", "fetch-add"])
        self.assertEqual([r[0] for r in rows[2:]], ["2", "4", "8", "16", "32", "64", "96"])
        self.assertEqual(rows[2], ["2", "21.21", "21.98 (+3.61%)"])
        self.assertEqual(rows[8], ["96", "2.902", "3.785 (+30.4%)"])
        for metric in ("acquire_ns.p50", "acquire_ns.p99", "remote_transfers"):
            self.assertIn("## %s at every point" % metric, md)
        # the same tables in plain text for an email body
        text = (out / "report.txt").read_text()
        self.assertIn("ops_per_us at every point\n-------------------------\n", text)
        self.assertRegex(text, r"\n  96  +2\.902  +3\.785 \(\+30\.4%\)\n")
        self.assertNotIn("|", text)
        self.assertNotIn("`", text)
        self.assertLessEqual(max(len(l) for l in text.splitlines()), 80)

    def test_measured_rows_are_drawn_beside_the_model_with_their_tolerance(self):
        # the SMMU rows of data/calibration.json, and one more from --measured
        csv = self.tmp / "smmu" / "results.csv"
        csv.parent.mkdir()
        model = {"2": 400400, "4": 386550, "8": 304800, "16": 152400, "32": 26988, "64": 8419,
                 "96": 6198}
        csv.write_text("scenario,variant,seed,param.cpus,metric.cpus,metric.ops_per_cpu_per_s,status\n"
                       + "".join("configs/scenarios/smmu-kunpeng920.json,cmpxchg,1,%s,%s,%s,ok\n"
                                 % (c, c, v) for c, v in model.items()))
        extra = self.tmp / "more.json"
        extra.write_text(json.dumps({"rows": [
            {"id": "mine", "scenario": "configs/scenarios/smmu-kunpeng920.json", "set": {"cpus": 32},
             "metric": "ops_per_cpu_per_s", "measured": 30000, "tolerance_pct": 10},
            {"id": "other-set", "scenario": "configs/scenarios/smmu-kunpeng920.json",
             "set": {"cpus": 32, "duration": "1ms"}, "metric": "ops_per_cpu_per_s", "measured": 1}]}))
        out = self.tmp / "rep"
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), str(csv), "--out", str(out),
                            "--measured", str(extra)], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        plots = json.loads((out / "plot-data.json").read_text())
        self.assertEqual([p["metric"] for p in plots], ["ops_per_cpu_per_s"])  # not cpus vs cpus
        self.assertTrue(plots[0]["log_x"] and plots[0]["log_y"])
        model_series, measured = plots[0]["series"]
        self.assertEqual(model_series["y"], list(model.values()))
        self.assertEqual(measured["kind"], "measured")
        self.assertEqual(measured["rows"], ["kp920.smmu.cmpxchg.cpus%s" % c for c in model] + ["mine"])
        self.assertEqual(measured["y"], [453000, 409000, 295000, 157000, 33600, 9500, 5200, 30000])
        self.assertEqual(measured["tolerance_pct"], [25] * 7 + [10])
        self.assertEqual(measured["high"][0], 453000 * 1.25)
        md = (out / "report.md").read_text()
        # a row the platform's numbers (or a structural choice) were fitted to says so: it is no test of the
        # model; a predicted one says nothing
        self.assertRegex(md, r"\| +32 \| +26988 \| +33600 ±25% \(fitted\), 30000 ±10% \|")
        self.assertRegex(md, r"\| +2 \| +4.004e5 \| +4.530e5 ±25% \(fitted\) \|")
        self.assertRegex(md, r"\| +8 \| +3.048e5 \| +2.950e5 ±25% \|")
        self.assertEqual(measured["fit"][:3], ["fitted", "fitted", "predicted"])
        bad = self.tmp / "bad.json"
        bad.write_text("[1]")
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), str(csv), "--out",
                            str(self.tmp / "rep2"), "--measured", str(bad)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.json: expected {\"rows\": [...]}", r.stderr)
        self.assertFalse((self.tmp / "rep2").exists())

    def assert_within_80_columns(self, out):
        for name in ("report.md", "report.txt"):
            for line in (out / name).read_text(encoding="utf-8").splitlines():
                self.assertLessEqual(len(line), 80, "%s: %s" % (name, line))

    def test_a_multi_variant_sweep_report_fits_80_columns(self):
        # the README's SMMU sweep (3 variants x 7 CPU counts, trimmed points/*.json beside it):
        # its measured rows (data/calibration.json) for every variant and its long line names
        # made report.md 170 columns wide, report.txt 162
        src = FIXTURES / "smmu_sweep"
        out = self.tmp / "rep"
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), str(src / "results.csv"),
                            "--out", str(out)], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_within_80_columns(out)
        md = (out / "report.md").read_text(encoding="utf-8")
        self.assert_plain_markdown(md)
        table = md.split("## ops_per_cpu_per_s (ops/s per CPU) at every point\n")[1].split("\n## ")[0]
        self.assertRegex(table, r"\| cpus \| cmpxchg \(base\) \| spinlock-fallback \| +fetch-add \|\n")
        # the measured rows one per line, beside the model's value and its error
        self.assertIn("Measured beside the model", table)
        self.assertRegex(table, r"\| cpus \| variant +\| +measured \| +model \| +error \|")
        for v in ("cmpxchg", "spinlock-fallback", "fetch-add"):
            self.assertRegex(table, r"\| +96 \| %s +\| +[0-9.e]+ ±\d+%%( \(\w+\))? \| +[0-9.e]+ \| +[-+][0-9.]+%% \|"
                             % re.escape(v))
        # the contended lines a table per variant, no name cut
        self.assertIn("| line (spinlock-fallback) ", md)
        self.assertIn("`arm_smmu_cmdq.valid_map_ptr+owner_prod+lock+slock`", md)
        # report.html keeps the whole tables
        html = (out / "report.html").read_text(encoding="utf-8")
        self.assertIn("<th>measured</th>", html)
        self.assertIn("<th>variant</th><th>line</th>", html)
        self.assertNotIn("line (cmpxchg)", html)
        # more variants, with longer names, than fit side by side: the every-point tables go
        # in parts of 80 columns, each repeating the swept parameter
        rows = (src / "results.csv").read_text().splitlines()
        more = self.tmp / "more"
        shutil.copytree(src / "points", more / "points")  # the headline metrics: 2 tables, 2 plots
        variants = ["cmpxchg", "spinlock-fallback", "fetch-add"]
        renamed = [v + "-with-a-long-name" for v in variants]
        lines = rows[:1] + rows[1:] + [l.replace("," + v + ",", "," + n + ",", 1)
                                       for l in rows[1:] for v, n in zip(variants, renamed)
                                       if ("," + v + ",") in l]
        (more / "results.csv").write_text("\n".join(lines) + "\n")
        desc = json.loads((src / "sweep.json").read_text())
        desc["variants"] = variants + renamed
        (more / "sweep.json").write_text(json.dumps(desc))
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), str(more / "results.csv"),
                            "--out", str(out)], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_within_80_columns(out)
        md = (out / "report.md").read_text(encoding="utf-8")
        table = md.split("## total_ops_per_s (ops/s) at every point\n")[1].split("\n## ")[0]
        heads = [[c.strip() for c in l.strip("|").split("|")] for l in table.splitlines()
                 if l.startswith("| cpus |")]
        self.assertGreater(len(heads), 1)
        self.assertEqual(sorted(c for h in heads for c in h[1:]),
                         sorted(["cmpxchg (base)"] + variants[1:] + renamed))
        self.assertEqual(table.count("|   96 |"), len(heads))

    def test_baseline_option_and_errors(self):
        out = self.tmp / "rep"
        res = report.report_from_csv(FIXTURES / "sweep_results.csv", out, baseline="fetch-add")
        md = res["md"].read_text()
        self.assertIn("| vs fetch-add |", md)
        self.assertIn("+41.6%", md)
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"),
                            str(FIXTURES / "sweep_results.csv"), "--out", str(out),
                            "--baseline", "nosuch"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("baseline variant 'nosuch' not among cmpxchg, fetch-add", r.stderr)
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)

    def test_report_from_sweep_with_points(self):
        """A real sweep (fake binary): contention and phases come from points/*.json."""
        out = self.tmp / "sweep"
        r = subprocess.run([sys.executable, str(SCRIPTS / "sweep.py"), str(FIXTURES / "compare.json"),
                            "--param", "cpus=2,4,8", "--variant", "cmpxchg,fetch-add",
                            "--seeds", "2", "-q", "--out", str(out),
                            "--cohsim", str(HERE / "fake_cohsim.py")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        res = report.report_from_csv(out / "results.csv", out / "report")
        md = res["md"].read_text()
        self.assertIn("Platform: kunpeng920", md)
        self.assertIn("## Top contended lines at cpus=8", md)
        self.assertRegex(md, r"\| cmpxchg +\| `cmdq\.q\.llq` +\| +0 \| +320 \| +80 \| +240 \|")
        self.assertIn("## Time by phase (ns) at cpus=8", md)
        self.assertRegex(md, r"\| claim +\| +960 \(")
        self.assertIn("phases.png", res["plots"])


@NEED_MPL
class CompareReportTest(ReportCase):
    def test_report_from_compare_json_with_sensitivity(self):
        out = self.tmp / "cmp"
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), "--from-json",
                            str(FIXTURES / "compare.json"), "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        md, _ = self.assert_outputs(out, ["tornado", "difference", "phases"])
        self.assertIn("Platform: kunpeng920", md)
        self.assertIn("(baseline: wmb)", md)                 # from compare.json
        self.assertRegex(md, r"\| cmd_latency_ns\.p50 +\| dma-wmb +\|.*\| +-18\.0% \|")
        self.assertIn("## Sensitivity", md)
        # report.md within 80 columns: each input's change at either end; report.html the whole row
        self.assertRegex(md, r"\| interconnect\.die\.latency \| +-9\.80% \| +\+11\.4% \|")
        html = (out / "report.html").read_text()
        self.assertRegex(html, r"<td>platform\.interconnect\.die\.latency</td><td>estimate</td><td>25ns \.\. 45ns</td>"
                               r"<td class=\"r\">601</td><td class=\"r\">666\.3</td><td class=\"r\">742</td>")
        for line in md.splitlines() + (out / "report.txt").read_text().splitlines():
            self.assertLessEqual(len(line), 80, line)
        self.assertIn("- cmd_latency_ns.p50: -22.1% .. -14.6%", md)
        self.assertIn("## Top contended lines", md)
        self.assertIn("`cpus=64`", md)
        # the widest bar first in the table (largest swing)
        order = [l.split("|")[1].strip() for l in md.split("## Sensitivity")[1].splitlines()
                 if l.startswith("| ") and not l.startswith("| input")]
        self.assertEqual(order[0], "interconnect.die.latency")

    def test_sensitivity_names_each_input_kind_and_marks_screened_and_undefined(self):
        data = json.loads((FIXTURES / "compare.json").read_text())
        extra = dict(data["sensitivity"][0], param="platform.cpu.wfi_wake", kind="calibrated", run="screen",
                     low="130ns", high="206ns")
        baseline_rows = [dict(s, variant="wmb", value_low=s["value_low"] * 1.1, value_high=s["value_high"] * 1.1,
                              baseline_value=s["baseline_value"] * 1.1) for s in data["sensitivity"]]
        data["sensitivity"] = data["sensitivity"] + [extra] + baseline_rows
        data["difference_range"]["ipis_missed"] = {"low": None, "high": None, "unit": "%"}
        src = self.tmp / "c.json"
        src.write_text(json.dumps(data))
        res = report.report_from_compare_json(src, self.tmp / "k")
        md = res["md"].read_text()
        page = res["html"].read_text()
        self.assertIn("<td>platform.cpu.wfi_wake</td><td>calibrated, screened</td><td>130ns .. 206ns</td>", page)
        self.assertIn("<td>platform.interconnect.die.latency</td><td>estimate</td>", page)
        # report.md: the inputs by what they do to the difference (here the same at every end)
        self.assertRegex(md, r"move the difference in cmd_latency_ns\.p50 to wmb most")
        self.assertRegex(md, r"\| interconnect\.die\.latency +\| +-9\.09% \| +-9\.09% \| +-9\.09% \|")
        self.assertIn("No range (the baseline's value is 0): ipis_missed.", md)
        self.assertIn("tornado.png", res["plots"])

    def test_importable_api(self):
        res = report.report_from_compare_json(FIXTURES / "compare.json", self.tmp / "x",
                                              baseline="dma-wmb", title="T")
        self.assertEqual(sorted(res["plots"]), ["difference.png", "phases.png", "tornado.png"])
        self.assertTrue(res["md"].read_text().startswith("# T\n"))
        with self.assertRaises(report.InputError):
            report.build_report(report.load_compare({"runs": []}), self.tmp / "y")


@NEED_MPL
class TwoVariantCompareReportTest(ReportCase):
    """The A/B comparison as `cohsim compare --report` writes it: the variants
    differ in a parameter each sets (barrier), one seed, declared headlines."""

    def compare_doc(self, seeds=(1,)):
        runs = []
        for variant, ns, total in (("wmb", 2155.0, 206.9), ("dsb-ishst", 2143.0, 205.7)):
            for seed in seeds:
                runs.append({"scenario": "configs/scenarios/ipi-kunpeng920.json", "platform": "kunpeng920",
                             "workload": "ipi-bench", "variant": variant, "seed": seed,
                             "variant_params": {"barrier": variant},
                             "params": {"barrier": variant, "rounds": 1000, "source_cpu": 0},
                             "metrics": {"ns_per_call": ns + seed, "total_ms": total, "ipis_sent": 96000}})
        return {"scenario": "configs/scenarios/ipi-kunpeng920.json", "platform": "kunpeng920",
                "workload": "ipi-bench", "baseline": "wmb", "overrides": {"rounds": "1000"},
                "headline": [{"metric": "ns_per_call", "unit": "ns", "lower_is_better": True},
                             {"metric": "total_ms", "unit": "ms", "lower_is_better": True}],
                "params": runs[0]["params"], "runs": runs}

    def report(self, doc):
        src = self.tmp / "compare.json"
        src.write_text(json.dumps(doc))
        out = self.tmp / "rep"
        r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), "--from-json", str(src), "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def test_both_values_and_the_difference_appear_in_markdown_and_html(self):
        out = self.report(self.compare_doc())
        md, html = self.assert_outputs(out, ["bars_ns_per_call", "bars_total_ms", "difference"])
        self.assertRegex(md, r"\| ns_per_call \(ns\) +\| wmb +\| +2156 \| +base \| +base \|")
        self.assertRegex(md, r"\| ns_per_call \(ns\) +\| dsb-ishst +\| +2144 \| +-12 \| +-0\.56% \|")
        for text in ("2156", "2144", "-12", "-0.56%"):
            self.assertIn(text, html)
        self.assertIn("dsb-ishst sets `barrier=dsb-ishst`", md)
        self.assertIn("--set: `rounds=1000`", md)
        self.assertIn("Seeds: 1\n", md)
        self.assertNotIn("Swept:", md)
        # barrier differs only with the variant: never a fixed parameter
        self.assertNotIn("`barrier=", md.split("## Parameters")[1])

    def test_a_table_too_wide_for_email_leaves_out_the_absolute_difference(self):
        doc = self.compare_doc()
        long = "dsb-ishst-with-a-name-long-enough-for-81-cols"  # 45 characters: within 80 columns only without the diff
        for run in doc["runs"]:
            if run["variant"] == "dsb-ishst":
                run["variant"] = long
        out = self.report(doc)
        md = (out / "report.md").read_text()
        headline = md.split("## Headline metrics")[1].split("\n## ")[0]
        self.assertRegex(headline, r"\| ns_per_call \(ns\) +\| %s +\| +2144 \| +-0\.56%% \|" % long)
        self.assertNotIn("| diff ", headline)
        for line in (out / "report.txt").read_text().split("Headline metrics")[1].split("Other metrics")[0].splitlines():
            self.assertLessEqual(len(line), 80, line)
        # short names keep it (the test above)
        self.assertIn("| diff ", (self.report(self.compare_doc()) / "report.md").read_text())

    def test_calibration_rows_the_compare_ran_stand_beside_the_model_with_their_label(self):
        doc = self.compare_doc()
        for run in doc["runs"]:
            run["params"]["data_writes"] = 7
        doc["params"] = doc["runs"][0]["params"]
        md = (self.report(doc) / "report.md").read_text()
        # wmb and dsb-ishst follow from fitted rows, barrier-gain (their difference) is fitted:
        # the report says in its first lines that nothing in it tests the model
        self.assertIn("- Measured rows: 1 fitted, 2 identity: no test of the model\n", md.split("## ")[0])
        table = md.split("## Measured beside the model")[1]
        # the unit once, with the measured value
        self.assertRegex(table, r"\| kp920\.ipi\.cpu0\.wmb +\| +1319 ns \| +2156 \| +\+63\.4% \| +3% \| identity +\|")
        self.assertRegex(table, r"\| kp920\.ipi\.cpu0\.barrier-gain +\| +32\.6 ns \| +12 \| .* \| fitted +\|")
        self.assertNotIn("cpu48", table)  # another source CPU: not what this compare ran
        # on another platform (compare --platform) the rows measured on this one are not shown
        for run in doc["runs"]:
            run["platform_file"] = "configs/platforms/skylake-sp-2s.json"
        self.assertNotIn("Measured beside", (self.report(doc) / "report.md").read_text())
        for run in doc["runs"]:
            run["platform_file"] = "configs/platforms/kunpeng920.json"
        self.assertIn("Measured beside", (self.report(doc) / "report.md").read_text())
        # without the calibration rows' settings, no row is shown
        self.assertNotIn("Measured beside", (self.report(self.compare_doc()) / "report.md").read_text())

    def test_the_report_says_how_to_rerun_it(self):
        doc = self.compare_doc()
        doc.update({"command": "build/release/cohsim compare configs/scenarios/ipi-kunpeng920.json --set rounds=1000 "
                               "--report /tmp/a/rather/long/directory/name/for/the/report -q",
                    "git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": True,
                    "build_id": "0123456789ab-dirty-feedbeef", "version": "0.1.0",
                    "inputs": {"configs/platforms/kunpeng920.json": "aa" * 32,
                               "configs/scenarios/ipi-kunpeng920.json": "bb" * 32}})
        out = self.report(doc)
        md = (out / "report.md").read_text()
        part = md.split("## Reproduce")[1]
        self.assertIn("```text\nbuild/release/cohsim compare configs/scenarios/ipi-kunpeng920.json \\\n"
                      "    --set rounds=1000 \\\n"
                      "    --report /tmp/a/rather/long/directory/name/for/the/report -q\n```", part)
        self.assertIn("- Commit: 0123456789abcdef0123456789abcdef01234567 (dirty tree)", part)
        self.assertIn("- Build: 0123456789ab-dirty-feedbeef; cohsim 0.1.0", part)
        self.assertIn("aaaaaaaaaaaaaaaa  configs/platforms/kunpeng920.json", part)
        for line in md.splitlines():
            self.assertLessEqual(len(line), 80, line)
        self.assertIn("0123456789abcdef0123456789abcdef01234567", (out / "report.txt").read_text())
        self.assertIn("Reproduce", (out / "report.html").read_text())
        self.assertNotIn("## Reproduce", (self.report(self.compare_doc()) / "report.md").read_text())

    def test_seeds_that_change_nothing_are_called_deterministic_not_a_spread(self):
        doc = self.compare_doc(seeds=(1, 2, 3))
        for run in doc["runs"]:
            run["metrics"]["ns_per_call"] = 2155.0 if run["variant"] == "wmb" else 2143.0
        md = (self.report(doc) / "report.md").read_text()
        self.assertIn("- Seeds: 3 (1, 2, 3), identical results: deterministic\n", md)
        md = (self.report(self.compare_doc(seeds=(1, 2, 3))) / "report.md").read_text()
        self.assertIn("- Seeds: 3 (1, 2, 3)\n", md)

    def test_a_warning_of_a_run_is_in_the_first_lines_once_per_variant_and_wrapped(self):
        doc = self.compare_doc(seeds=(1, 2))
        unfair = ("lock tas is unfair here: one CPU took 100.0 % of the sections (an even share is 25.0 %), "
                  "200 in a row at the most; ns_per_section is its throughput, not a thread's wait")
        for run in doc["runs"]:
            if run["variant"] == "dsb-ishst":
                run["warnings"] = [unfair]
        md = (self.report(doc) / "report.md").read_text()
        head = md.split("## ")[0]
        self.assertEqual(head.count("- Warning (dsb-ishst): lock tas is unfair here"), 1)
        self.assertNotIn("Warning (wmb)", head)
        self.assertIn("a thread's wait", head)
        for line in head.splitlines():
            self.assertLessEqual(len(line), 80, line)
        self.assertIn("Warning (dsb-ishst)", (self.report(doc) / "report.html").read_text())
        self.assertNotIn("Warning", (self.report(self.compare_doc()) / "report.md").read_text())

    def test_paragraphs_are_wrapped_for_email(self):
        doc = self.compare_doc()
        for run in doc["runs"]:
            run["params"].update({"parameter_number_%d" % i: "value-%d" % i for i in range(12)})
        doc["params"] = doc["runs"][0]["params"]
        md = (self.report(doc) / "report.md").read_text()
        self.assertIn("`parameter_number_11=value-11`", md)
        for line in md.splitlines():
            if not line.startswith("|"):
                self.assertLessEqual(len(line), 80, line)

    def test_headline_metrics_come_first_with_units_and_a_bar_chart_each(self):
        out = self.report(self.compare_doc())
        md = (out / "report.md").read_text()
        self.assertLess(md.index("## Headline metrics"), md.index("## Other metrics"))
        self.assertLess(md.index("| total_ms (ms)"), md.index("| ipis_sent"))
        html = (out / "report.html").read_text()
        # the bar charts stand right under the headline table
        self.assertLess(html.index('alt="ns_per_call per variant'), html.index("Other metrics"))
        self.assertTrue((out / "bars_ns_per_call.svg").exists())

    def test_bar_chart_error_bars_span_the_seeds_and_the_baseline_is_marked(self):
        out = self.report(self.compare_doc(seeds=(1, 2, 3)))
        svg = (out / "bars_ns_per_call.svg").read_text()
        self.assertIn("wmb (baseline)", svg)
        self.assertIn("min..max over 3 seeds", (out / "report.html").read_text())
        md = (out / "report.md").read_text()
        self.assertRegex(md, r"\| ns_per_call \(ns\) +\| dsb-ishst +\| +2144 \| +2145 \| +2146 \| +-12 \| +-0\.56% \|")


@NEED_MPL
class ValidateReportTest(ReportCase):
    """scripts/report.py --from-validate: what cohsim validate --report runs."""

    def row(self, row_id, status, measured, predicted, tol=10, bound=""):
        error = None if predicted is None else 100.0 * (predicted - measured) / measured
        return {"id": row_id, "platform": "p", "status": status, "measured": measured, "predicted": predicted,
                "error_pct": error, "tolerance_pct": tol, "bound": bound, "unit": "ns", "pins": [], "note": ""}

    def test_every_kind_of_row_is_plotted_or_named_and_the_page_is_self_contained(self):
        rows = [self.row("t.ok", "ok", 34.5, 35.0), self.row("t.miss", "MISS", 20.0, 35.0),
                self.row("t.known", "known miss", 60.0, 35.0), self.row("t.bound", "ok", 30.0, 35.0, 0, "at_least"),
                self.row("t.delta", "MISS", 5.0, -2.0), self.row("t.error", "ERROR", 10.0, None)]
        (self.tmp / "validate.json").write_text(json.dumps({"summary": "validate: 2 ok", "rows": rows}))
        (self.tmp / "report.md").write_text("# the table <of rows>\n")
        out = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), "--quiet", "--from-validate",
                              str(self.tmp / "validate.json"), "--out", str(self.tmp)],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr, "")
        for name in ("parity.png", "parity.svg", "errors.png", "errors.svg"):
            self.assertTrue((self.tmp / name).stat().st_size > 0, name)
        page = (self.tmp / "report.html").read_text()
        self.assertEqual(page.count('src="data:image/png;base64,'), 2)
        self.assertNotIn('src="parity', page)
        self.assertIn("&lt;of rows&gt;", page)  # report.md's text, escaped
        self.assertIn("Not shown (no positive prediction): t.delta, t.error.", page)

    def test_a_validate_json_without_rows_is_bad_input(self):
        (self.tmp / "validate.json").write_text(json.dumps({"rows": []}))
        out = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), "--from-validate",
                              str(self.tmp / "validate.json"), "--out", str(self.tmp)],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("at least one row", out.stderr)


if __name__ == "__main__":
    unittest.main()
