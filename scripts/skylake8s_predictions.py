#!/usr/bin/env python3
"""Regenerates the prediction tables of docs/skylake-sp-8s.md.

For every point it runs `cohsim sensitivity` (every estimate at both ends of
its range and every structural choice at each alternative, one at a time) and
prints the nominal prediction, the envelope of those runs (low .. high) and
the input that moves it most:

  - c2c one-way latency (variants blind-cas and cas of
    configs/scenarios/c2c-skylake-sp-8s.json) from CPU 0 to CPU 1 (its
    own socket), CPU 28 (socket 1: 1 UPI crossing) and CPU 196 (socket 7: the
    farthest, 2 crossings; 3 under the plain-hypercube alternative);
  - atomic-counter ns_per_increment at 1, 2, 4, ... 448 threads.

Usage: scripts/skylake8s_predictions.py [--cohsim build/release/cohsim]
       [--out FILE.md] [--json FILE] [--only c2c|counter] [--threads 1,2,...]
       [--screen-set duration=50us ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C2C = "configs/scenarios/c2c-skylake-sp-8s.json"
COUNTER = "configs/scenarios/atomic-counter-skylake-sp-8s.json"
PAIRS = [("own socket", 1), ("1 crossing (socket 1)", 28), ("farthest (socket 7)", 196)]
THREADS = [1, 2, 4, 8, 16, 28, 56, 112, 224, 448]


def sensitivity(cohsim, scenario, sets, variants=None, screen=()):
    """One `cohsim sensitivity` study; per variant ("" without): nominal, low, high, the top input."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.json")
        cmd = [cohsim, "sensitivity", scenario, "--json", out, "-q"]
        if variants:
            cmd += ["--variants", ",".join(variants)]
        for s in sets:
            cmd += ["--set", s]
        for s in screen:
            cmd += ["--screen-set", s]
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}")
        doc = json.load(open(out))
    command = " ".join(["cohsim"] + [a for a in cmd[1:] if a not in ("--json", out, "-q")])
    result = {}
    for variant in variants or [""]:
        rows = [row for row in doc["sensitivity"] if row["variant"] == variant]
        if not rows:
            sys.exit(f"{command}: no input was varied")
        nominal = rows[0]["baseline_value"]
        values = [nominal]
        top, top_move = "", -1.0
        for row in rows:
            if row.get("run") != "full":
                continue  # a screened-only input ran short: its value is not comparable
            for v in (row["value_low"], row["value_high"]):
                values.append(v)
                if abs(v - nominal) > top_move:
                    top_move, top = abs(v - nominal), row["param"].replace("platform.", "")
        result[variant] = {"nominal": nominal, "low": min(values), "high": max(values),
                           "top": top if top_move > 1e-3 * abs(nominal) else "(none)",
                           "command": command}
    return result


def run_metrics(cohsim, scenario, sets):
    """The metrics of one nominal `cohsim run`."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        cmd = [cohsim, "run", scenario, "--json", out, "-q"] + [x for s in sets for x in ("--set", s)]
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr}")
        return json.load(open(out))["metrics"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cohsim", default=os.path.join(ROOT, "build/release/cohsim"))
    ap.add_argument("--out", help="write the Markdown tables here (default: stdout)")
    ap.add_argument("--json", help="also write every point as JSON")
    ap.add_argument("--only", choices=["c2c", "counter"])
    ap.add_argument("--threads", default=",".join(map(str, THREADS)))
    ap.add_argument("--screen-set", action="append", default=[],
                    help="passed to cohsim sensitivity for the atomic-counter points (e.g. duration=50us)")
    a = ap.parse_args()
    lines, points = [], []
    fmt = "{:.1f}"
    if a.only in (None, "c2c"):
        lines += ["| pair (from CPU 0) | CPU | blind-cas one-way ns | range | cas one-way ns | range | moves it most (cas) |",
                  "|---|---|---|---|---|---|---|"]
        for name, cpu in PAIRS:
            res = sensitivity(a.cohsim, C2C, [f"cpu_b={cpu}"], ["blind-cas", "cas"])
            for op in ("blind-cas", "cas"):
                points.append({"workload": "c2c", "cpu_b": cpu, "op": op, **res[op]})
                print(f"c2c {op} cpu_b={cpu}: {res[op]['nominal']:.1f} ns", file=sys.stderr)
            b, c = res["blind-cas"], res["cas"]
            lines.append(f"| {name} | {cpu} | {fmt.format(b['nominal'])} | {fmt.format(b['low'])} .. "
                         f"{fmt.format(b['high'])} | {fmt.format(c['nominal'])} | {fmt.format(c['low'])} .. "
                         f"{fmt.format(c['high'])} | {c['top']} |")
        lines.append("")
    if a.only in (None, "counter"):
        lines += ["| threads | ns_per_increment | range | moves it most | increments per transfer | "
                  "per-thread increments min / median / max |", "|---|---|---|---|---|---|"]
        for n in [int(x) for x in a.threads.split(",")]:
            r = sensitivity(a.cohsim, COUNTER, [f"threads={n}"], screen=a.screen_set)[""]
            m = run_metrics(a.cohsim, COUNTER, [f"threads={n}"])
            points.append({"workload": "atomic-counter", "threads": n, **r, "metrics": m})
            print(f"atomic-counter threads={n}: {r['nominal']:.1f} ns", file=sys.stderr)
            lines.append(f"| {n} | {fmt.format(r['nominal'])} | {fmt.format(r['low'])} .. {fmt.format(r['high'])} "
                         f"| {r['top']} | {m['increments_per_transfer']:.1f} | {m['per_thread_min']:.0f} / "
                         f"{m['per_thread_median']:.0f} / {m['per_thread_max']:.0f} |")
        lines.append("")
    text = "\n".join(lines)
    if a.out:
        open(a.out, "w").write(text + "\n")
    else:
        print(text)
    if a.json:
        json.dump(points, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
