#!/usr/bin/env python3
"""Where one smp_call_function_single of the IPI benchmark spends its time, by
phase and by the target's hop class, from a cohsim trace.

Runs `cohsim run SCENARIO --trace` for a few rounds over every target and
splits each measured remote call into
  send path  the call's start to gic_ipi_send_mask (the 7 globals, the csd
             stores, llist_add's load and CASAL)
  barrier    the dsb before the ICC_SGI1R_EL1 write
  delivery   the end of the dsb to the target's wake-up starting (SGI1R
             write, routing, redistributor)
  wake-up    WFI exit of the idle target
  entry      exception entry, IAR, dsb sy, EOI, isb, dispatch
  handler    __flush_smp_call_function_queue (llist_del_all, the csd loads,
             func, csd_unlock)
  return     the end of the handler to the sender leaving csd_lock_wait
and prints the mean of each phase per class as a Markdown table.

    scripts/ipi_phases.py configs/scenarios/ipi-kunpeng920.json --variant wmb \\
        --set source_cpu=0 --rounds 3
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PHASES = ["send path", "barrier", "delivery", "wake-up", "entry", "handler", "return"]
CLASSES = ["cluster", "die", "cross_die", "socket"]


def fail(msg):
    print(f"ipi_phases: {msg}", file=sys.stderr)
    sys.exit(2)


def platform_shape(scenario_path):
    """CPUs per cluster, die and socket from the scenario's platform file (CPUs numbered in order)."""
    try:
        with open(scenario_path) as f:
            scen = json.load(f)
        with open(os.path.join(os.path.dirname(scenario_path), scen["platform"])) as f:
            topo = json.load(f)["topology"]
    except (OSError, KeyError, json.JSONDecodeError) as e:
        fail(f"{scenario_path}: cannot read the platform's topology: {e}")

    def num(key):
        v = topo[key]
        return v["value"] if isinstance(v, dict) else v
    cluster = num("cores_per_cluster") * num("threads_per_core")
    die = cluster * num("clusters_per_die")
    socket = die * num("dies_per_socket")
    return cluster, die, socket, socket * num("sockets")


def hop_class(a, b, shape):
    cluster, die, socket, _ = shape
    if a // cluster == b // cluster:
        return "cluster"
    if a // die == b // die:
        return "die"
    if a // socket == b // socket:
        return "cross_die"
    return "socket"


def slices(trace):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_track = {}
    for e in events:
        if e.get("ph") == "X":
            by_track.setdefault(e["tid"], []).append((e["ts"] * 1000.0, (e["ts"] + e["dur"]) * 1000.0, e["name"]))
    for v in by_track.values():
        v.sort()
    return by_track


def first(track, name, lo, hi):
    """The first slice `name` of `track` starting in [lo, hi] (ns; the trace's microseconds round to 1 ps)."""
    for b, e, n in track:
        if n == name and lo - 0.01 <= b <= hi + 0.01:
            return b, e
    return None


def phases_of_calls(by_track, source, shape, skip_calls):
    calls = [(b, e) for b, e, n in by_track.get(source, []) if n == "smp_call_function_single"]
    sums = {c: [0.0] * len(PHASES) for c in CLASSES}
    counts = {c: 0 for c in CLASSES}
    for b, e in calls[skip_calls:]:
        send = first(by_track[source], "gic_ipi_send_mask", b, e)
        if send is None:
            continue  # the local call: no IPI
        dsb = next(((sb, se) for sb, se, n in by_track[source] if n.startswith("dsb") and send[0] <= sb <= send[1]), None)
        target, wake = None, None
        for tid, track in by_track.items():
            if tid == source:
                continue
            wake = first(track, "WFI wake-up", b, e)
            if wake:
                target = tid
                break
        if target is None or dsb is None:
            continue
        entry = first(by_track[target], "gic_handle_irq: IAR, dsb sy, EOI, dispatch", wake[1], e)
        handler = first(by_track[target], "__flush_smp_call_function_queue", entry[1] if entry else b, e)
        if entry is None or handler is None:
            continue
        parts = [send[0] - b, dsb[1] - dsb[0], wake[0] - dsb[1], wake[1] - wake[0], handler[0] - wake[1],
                 handler[1] - handler[0], e - handler[1]]
        cls = hop_class(source, target, shape)
        sums[cls] = [s + p for s, p in zip(sums[cls], parts)]
        counts[cls] += 1
    return {c: [s / counts[c] for s in sums[c]] for c in CLASSES if counts[c]}, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--variant", default="wmb")
    ap.add_argument("--set", action="append", default=[], metavar="K=V", help="passed to cohsim run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds traced after the warm-up round (default 3)")
    ap.add_argument("--cohsim", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "cohsim"))
    args = ap.parse_args()
    if args.rounds < 1:
        fail("--rounds must be at least 1")
    if not os.path.exists(args.cohsim):
        fail(f"{args.cohsim}: no cohsim binary (build first, or pass --cohsim)")
    shape = platform_shape(args.scenario)
    source, warmup = 0, 1
    for kv in args.set:
        key, _, value = kv.partition("=")
        try:
            if key == "source_cpu":
                source = int(value)
            elif key == "warmup_rounds":
                warmup = int(value)
            elif key == "rounds":
                fail("give the rounds with --rounds, not --set rounds=")
        except ValueError:
            fail(f"--set {kv}: expected an integer")
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        cmd = [args.cohsim, "run", args.scenario, "-q", "--variant", args.variant, "--set", f"rounds={args.rounds}",
               "--set", "warmup_rounds=1", "--trace", trace_path]
        for kv in args.set:
            cmd += ["--set", kv]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)} failed:\n{r.stderr}")
        with open(trace_path) as f:
            by_track = slices(json.load(f))
    # The warm-up rounds' calls come first: as many per round as the measured rounds have.
    calls = sum(1 for b, e, n in by_track.get(source, []) if n == "smp_call_function_single")
    per_round = calls // (warmup + args.rounds)
    means, counts = phases_of_calls(by_track, source, shape, skip_calls=warmup * per_round)
    if not means:
        fail("no remote call in the traced rounds (are the targets all the source CPU?)")
    print(f"| phase (ns) | {' | '.join(c for c in CLASSES if c in means)} |")
    print(f"|---|{'---|' * len(means)}")
    for i, p in enumerate(PHASES):
        print(f"| {p} | {' | '.join(f'{means[c][i]:.1f}' for c in CLASSES if c in means)} |")
    print(f"| total | {' | '.join(f'{sum(means[c]):.1f}' for c in CLASSES if c in means)} |")
    print(f"| calls | {' | '.join(str(counts[c]) for c in CLASSES if c in means)} |")


if __name__ == "__main__":
    main()
