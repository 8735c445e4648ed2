#!/usr/bin/env python3
"""Regenerate the prediction table of docs/locks.md ("Haswell-EX and Kunpeng 920 locks").

For every benchmark and thread count it runs
    cohsim compare SCENARIO --set threads=N --sensitivity --json OUT \
        --screen-set duration=4ms --screen-set epochs=1 --screen-set epoch_settle=0.6 --full-runs 5
(both variants, qspinlock and cna, and every uncertain input at its range
ends and every alternative mechanism, one at a time) and reports ops_per_us of
each variant at nominal with its range [min, max] over those runs, and the
cna/qspinlock ratio with its range. `--points` limits the sensitivity runs to
some thread counts (the others get nominal values only, marked "-").

    scripts/locks_predictions.py                       # every point with its range (over an hour)
    scripts/locks_predictions.py --points 8,32,72,142  # ranges at these thread counts only
    scripts/locks_predictions.py --write docs/locks.md # replace the table between the markers

The JSON documents go to --out (default build/locks-predictions/); a point
whose JSON is there already is not run again (delete it to re-run).
"""
import argparse
import json
import os
import subprocess
import sys

STUDIES = [
    ("lock2", "Haswell-EX", "configs/scenarios/lock2-haswell-ex.json", [1, 2, 4, 8, 16, 32, 36, 72, 108, 142]),
    ("locktorture", "Haswell-EX", "configs/scenarios/locktorture-haswell-ex.json", [1, 2, 4, 8, 16, 32, 36, 72, 108, 142]),
    ("locktorture", "Kunpeng 920", "configs/scenarios/locktorture-kunpeng920.json", [8, 16, 32, 64, 96]),
]
BEGIN, END = "<!-- locks-predictions:begin -->", "<!-- locks-predictions:end -->"
METRIC = "ops_per_us"


def run_point(cohsim, scenario, threads, sensitivity, out_dir, ranges):
    name = os.path.basename(scenario).replace(".json", "")
    out = os.path.join(out_dir, f"{name}-t{threads}{'-s' if sensitivity else ''}.json")
    if not os.path.exists(out):
        cmd = [cohsim, "compare", scenario, "--set", f"threads={threads}", "--json", out, "-q"]
        if not sensitivity:
            cmd += ["--no-sensitivity"]  # nominal values only (compare's quick ranges are not this study's)
        else:
            # Every input screened with one short epoch; the five that move it most re-run at full length.
            cmd += ["--sensitivity", "--screen-set", "duration=4ms", "--screen-set", "epochs=1",
                    "--screen-set", "epoch_settle=0.6", "--full-runs", "5"]
            if ranges and os.path.exists(ranges):
                cmd += ["--ranges", ranges]
        print(" ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f), out


def summarise(doc):
    """Per variant: (nominal, low, high) of ops_per_us; and the ratio cna/qspinlock (nominal, low, high)."""
    nominal = {r["variant"]: r["metrics"][METRIC] for r in doc["runs"]}
    lo, hi = dict(nominal), dict(nominal)
    ratio = nominal["cna"] / nominal["qspinlock"]
    rlo = rhi = ratio
    by_input = {}
    for row in doc.get("sensitivity", []):
        if row["metric"] != METRIC or not row.get("baseline_value"):
            continue
        v = row["variant"]
        for key in ("value_low", "value_high"):
            # A screened input ran short: its change relative to the short nominal, applied to the full nominal.
            value = nominal[v] * row[key] / row["baseline_value"]
            lo[v] = min(lo[v], value)
            hi[v] = max(hi[v], value)
            by_input.setdefault((row["param"], key), {})[v] = value
    for vals in by_input.values():
        if "cna" in vals and "qspinlock" in vals and vals["qspinlock"] > 0:
            r = vals["cna"] / vals["qspinlock"]
            rlo, rhi = min(rlo, r), max(rhi, r)
    return nominal, lo, hi, (ratio, rlo, rhi)


def table(cohsim, out_dir, points):
    lines = []
    for bench, machine, scenario, counts in STUDIES:
        lines.append(f"**{bench} on {machine}** (`{scenario}`), ops_per_us: nominal [range]")
        lines.append("")
        lines.append("| threads | qspinlock | cna | cna / qspinlock |")
        lines.append("|---|---|---|---|")
        ranges = None
        for n in counts:
            sens = points is None or n in points
            doc, path = run_point(cohsim, scenario, n, sens, out_dir, ranges)
            if sens and ranges is None:
                ranges = path  # reuse the calibrated ranges of the first study point
            nom, lo, hi, (r, rlo, rhi) = summarise(doc)
            if sens:
                cell = lambda v: f"{nom[v]:.3g} [{lo[v]:.3g}, {hi[v]:.3g}]"
                lines.append(f"| {n} | {cell('qspinlock')} | {cell('cna')} | {r:.2f} [{rlo:.2f}, {rhi:.2f}] |")
            else:
                lines.append(f"| {n} | {nom['qspinlock']:.3g} - | {nom['cna']:.3g} - | {r:.2f} - |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cohsim", default="build/release/cohsim")
    ap.add_argument("--out", default="build/locks-predictions")
    ap.add_argument("--points", help="thread counts that get a sensitivity range (default: all)")
    ap.add_argument("--write", help="a Markdown file whose table between the markers is replaced")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    points = None if a.points is None else {int(x) for x in a.points.split(",") if x}
    text = table(a.cohsim, a.out, points)
    if a.write:
        with open(a.write) as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            sys.exit(f"{a.write}: no {BEGIN} ... {END} markers")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(a.write, "w") as f:
            f.write(head + BEGIN + "\n" + text + "\n" + END + tail)
    else:
        print(text)


if __name__ == "__main__":
    main()
