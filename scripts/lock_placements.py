#!/usr/bin/python3
"""Run the spinlock scenario for each lock kind at each CPU placement over a few
seeds, and print one markdown table: time, who got the lock next, and what the
lock word's line did (the mechanism columns of docs/locks.md).

  scripts/lock_placements.py [--scenario configs/scenarios/spinlock-kunpeng920.json]
      [--kinds tas,ticket,qspinlock] [--placements "0,1,2,3 0,1,24,25 ..."]
      [--seeds 3] [--set k=v ...] [--cohsim build/release/cohsim] [--out DIR]

Every point runs `cohsim run SCENARIO --variant KIND --set cpus=PLACEMENT
--seed S --json DIR/KIND-PLACEMENT-S.json -q` from the repo root. Columns,
per critical section unless said otherwise:
  ms            total_ms, mean over seeds, with [min, max] when the seeds differ
With --set start_stagger=1us the threads start at random times and the seed
chooses a FIFO lock's turn order (docs/locks.md).
  same-die      hand-offs to a CPU of the releaser's die (handoffs.cluster + .die), in %
  cross-die     hand-offs to a CPU of another die (handoffs.cross_die + .socket), in %
  kept          the releaser took it again (reacquired), in %
                (these three: min-max over the seeds when they differ)
  share         share_min-share_max of the sections per CPU
  xfer c/d/x/s  the lock line's cache-to-cache transfers by hop class (cluster,
                die, cross_die, socket)
  L3 atomics    atomics executed in a die's L3 on the lock line (llc_atomics)
  reads         data reads at the home for the lock line (memory_reads)
  wait ns       time requests for the lock line waited at its home (wait_ns)
Exit status: 0 every point ran, 1 a run failed, 2 bad arguments or bad input
(cohsim's message is printed; the table stops there).
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLACEMENTS = "0,1,2,3 0,1,4,5 0,4,8,12 0,1,24,25 0,1,48,49 0,1,72,73 0,24,48,72"
HOPS = ["cluster", "die", "cross_die", "socket"]


def run_point(args, kind, cpus, seed):
    out = Path(args.out) / f"{kind}-{cpus.replace(',', '_')}-{seed}.json"
    cmd = [args.cohsim, "run", args.scenario, "--variant", kind, "--set", f"cpus={cpus}", "--seed", str(seed),
           "--json", str(out), "-q"]
    for s in args.set:
        cmd += ["--set", s]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode == 2:  # bad input (scenario, override, CPU list): the same for every point
        sys.stderr.write(done.stderr)
        sys.exit(2)
    if done.returncode != 0:
        sys.stderr.write(f"failed: {' '.join(cmd)}\n{done.stderr}")
        return None
    return json.loads(out.read_text())


def lock_line(doc):
    """The contention entry of the lock word (its symbol starts with 'spinlock.' and is not the array)."""
    for entry in doc.get("contention", []):
        if entry["symbol"].startswith("spinlock.") and entry["symbol"] != "spinlock.array":
            return entry
    return {"transfers": {}, "llc_atomics": 0, "memory_reads": 0, "wait_ns": 0.0}


def row(kind, cpus, docs):
    sections = float(docs[0]["params"]["sections"])
    ms = [d["metrics"]["total_ms"] for d in docs]

    def mean(f):
        return statistics.mean(f(d) for d in docs)

    def handoff_share(classes):
        shares = [100 * sum(d["metrics"].get(f"handoffs.{c}", 0) for c in classes) / (sections - 1) if classes
                  else 100 * d["metrics"]["reacquired"] / (sections - 1) for d in docs]
        lo, hi = round(min(shares)), round(max(shares))
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    time = f"{statistics.mean(ms):.3f}"
    if max(ms) - min(ms) > 5e-4:
        time += f" [{min(ms):.3f}, {max(ms):.3f}]"
    xfer = "/".join(f"{mean(lambda d: lock_line(d)['transfers'].get(h, 0)) / sections:.2f}" for h in HOPS)
    share = f"{mean(lambda d: d['metrics']['share_min']):.2f}-{mean(lambda d: d['metrics']['share_max']):.2f}"
    return (f"| {kind} | {{{cpus}}} | {time} | {handoff_share(['cluster', 'die'])} | "
            f"{handoff_share(['cross_die', 'socket'])} | {handoff_share([])} | {share} | {xfer} | "
            f"{mean(lambda d: lock_line(d)['llc_atomics']) / sections:.2f} | "
            f"{mean(lambda d: lock_line(d)['memory_reads']) / sections:.2f} | "
            f"{mean(lambda d: lock_line(d)['wait_ns']) / sections:.0f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="configs/scenarios/spinlock-kunpeng920.json")
    p.add_argument("--kinds", default="tas,ticket,qspinlock")
    p.add_argument("--placements", default=PLACEMENTS, help="space-separated CPU lists")
    p.add_argument("--seeds", type=int, default=3, help="seeds 1..N")
    p.add_argument("--set", action="append", default=[], help="extra KEY=VALUE overrides, repeatable")
    p.add_argument("--cohsim", default="build/release/cohsim")
    p.add_argument("--out", default="build/lock_placements", help="directory of the result documents")
    try:
        args = p.parse_args()
    except SystemExit as e:
        sys.exit(2 if e.code else 0)
    if args.seeds < 1:
        sys.stderr.write("lock_placements: --seeds: expected a count >= 1\n")
        sys.exit(2)
    (REPO / args.out).mkdir(parents=True, exist_ok=True)
    args.out = str(REPO / args.out)
    print("| lock | CPUs | ms | same-die % | cross-die % | kept % | share | xfer c/d/x/s | L3 atomics | reads | wait ns |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    for kind in args.kinds.split(","):
        for cpus in args.placements.split():
            docs = [run_point(args, kind, cpus, s) for s in range(1, args.seeds + 1)]
            if any(d is None for d in docs):
                failed = True
                continue
            print(row(kind, cpus, docs), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
