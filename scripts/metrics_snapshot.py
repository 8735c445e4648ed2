#!/usr/bin/env python3
"""Record or check the metrics of every shipped scenario and variant.

A speed change must not change what the model predicts. This runs every
scenario in configs/scenarios/ with each of its variants (and the baseline's
values) at a small size, and writes the metrics to one JSON file, or compares
them with a file recorded earlier:

    scripts/metrics_snapshot.py --record /tmp/before.json
    ... change the code, rebuild ...
    scripts/metrics_snapshot.py --check /tmp/before.json

--full runs the scenarios at their own (default) size instead; it takes
minutes. A run that ends without results (exit status 1: the watchdog's "cannot
make progress", as plain hpet on the Superdome Flex does by design) is recorded
as that outcome. Exit status: 0 identical, 1 a difference (each is printed), 2
bad usage or a run that failed otherwise.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

# The small sizes, per workload (as .ci/run uses them).
SMALL = {
    "c2c": ["rounds=20", "warmup=2"],
    "mem-latency": ["loads=300", "warmup=30"],
    "ipi-bench": ["rounds=2"],
    "ipi-latency": ["ipis_per_pair=2"],
    "dma-map-bench": ["duration=20us", "warmup=5us"],
    "spinlock": ["sections=100"],
    "aim7-compute": ["duration=2ms", "warmup=1ms"],
}


def fail(message):
    print(f"metrics_snapshot: {message}", file=sys.stderr)
    sys.exit(2)


def runs(root, full):
    for path in sorted(glob.glob(os.path.join(root, "configs", "scenarios", "*.json"))):
        doc = json.load(open(path))
        workload = doc.get("workload", "")
        sets = [] if full else SMALL.get(workload)
        if sets is None:
            print(f"metrics_snapshot: no small size known for workload '{workload}' ({path}); skipped", file=sys.stderr)
            continue
        for variant in [None] + list((doc.get("variants") or {}).keys()):
            yield path, variant, sets


def metrics_of(cohsim, path, variant, sets):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [cohsim, "run", path, "-q", "--json", out]
        if variant:
            cmd += ["--variant", variant]
        for s in sets:
            cmd += ["--set", s]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = r.stderr.splitlines()
        stuck = "cohsim: the simulation cannot make progress"
        if r.returncode == 1 and stuck in lines and not os.path.exists(out):
            # A run the model ends by design (plain hpet on the Superdome Flex): the
            # outcome, with the watchdog's verdict and time, is what is recorded.
            at = lines.index(stuck)
            return {"exit_status": 1, "error": stuck, "watchdog": lines[at + 1] if at + 1 < len(lines) else ""}
        if r.returncode != 0:
            fail(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
        return json.load(open(out))["metrics"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="FILE", help="write the metrics to FILE")
    g.add_argument("--check", metavar="FILE", help="compare with the metrics recorded in FILE")
    ap.add_argument("--cohsim", default="build/release/cohsim", help="the cohsim binary (default: %(default)s)")
    ap.add_argument("--full", action="store_true", help="the scenarios' own sizes instead of the small ones")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.access(a.cohsim, os.X_OK):
        ap.error(f"{a.cohsim}: not an executable (build first, or pass --cohsim)")
    got = {}
    for path, variant, sets in runs(root, a.full):
        key = f"{os.path.basename(path)}:{variant or '(baseline)'}"
        print(f"  {key}", file=sys.stderr, flush=True)
        got[key] = metrics_of(a.cohsim, path, variant, sets)
    if a.record:
        tmp = a.record + ".tmp"
        with open(tmp, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        os.replace(tmp, a.record)
        print(f"metrics_snapshot: {len(got)} runs recorded in {a.record}")
        return 0
    try:
        want = json.load(open(a.check))
    except (OSError, ValueError) as e:
        fail(f"{a.check}: {e}")
    diffs = 0
    for key in sorted(set(want) | set(got)):
        w, h = want.get(key), got.get(key)
        if json.dumps(w, sort_keys=True) == json.dumps(h, sort_keys=True):
            continue
        diffs += 1
        if w is None or h is None:
            print(f"{key}: only in {'the record' if h is None else 'this run'}")
            continue
        for m in sorted(set(w) | set(h)):
            if json.dumps(w.get(m), sort_keys=True) != json.dumps(h.get(m), sort_keys=True):
                print(f"{key}: {m}: {w.get(m)} -> {h.get(m)}")
    print(f"metrics_snapshot: {len(got)} runs, {diffs} differ from {a.check}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
