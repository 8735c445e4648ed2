#!/usr/bin/env python3
"""What a run's instructions cost in cycles beyond their count: cache misses
and branch mispredictions from a cachegrind profile, and the cycles they may
add, against the cycles the run took.

    valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes \\
        --cachegrind-out-file=/tmp/run.cgr build/profile/cohsim selftest coherence --cpus 4 --ops 10000 -q
    valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes \\
        --cachegrind-out-file=/tmp/setup.cgr build/profile/cohsim selftest coherence --cpus 4 --ops 1 -q
    bench/cache_stalls.py /tmp/run.cgr --baseline /tmp/setup.cgr --per 39996 --unit op \\
        --seconds-per-unit 1.8e-6 --ghz 3.0

Cachegrind simulates the host's first-level caches and last-level cache (the
sizes it reads from the CPU) and a simple branch predictor; it has no
prefetcher, no TLB and no out-of-order overlap, and its predictor is weaker
than current hardware's, so the counts are an upper bound on what the
hardware sees. The estimate charges textbook penalties (ranges: a
misprediction 15-20 cycles; an L1 miss 0-16, 0 when the out-of-order core
hides it, 16 an L2 hit on a core of this class; a last-level miss 0-300), on
top of the instructions at 3-4 per cycle. Cachegrind models no L2: the L1
penalty assumes the working set fits the L2 (2 MB a core on Sapphire Rapids;
the 4-CPU tester's does), an L1 miss served by the L3 costs 50-80 cycles.
With the run's CPU seconds per unit and a clock it prints the cycles the run
took and its instructions per cycle. A
guest without hardware counters does not know its clock: its nominal one
(/proc/cpuinfo's MHz) is a lower bound when turbo is on, so the instructions
per cycle it gives are an upper bound. Exit status 0, or 2 for bad input.
"""
import argparse
import math
import os
import sys

# cachegrind's event names: instructions, I1/LL instruction misses, data reads
# and writes with their D1/LL misses, conditional and indirect branches with
# their mispredictions.
NEEDED = ["Ir", "I1mr", "ILmr", "D1mr", "DLmr", "D1mw", "DLmw", "Bc", "Bcm", "Bi", "Bim"]
# (low, high) cycles per event: the stall estimate's bounds.
PENALTY = {"mispredictions": (15, 20), "I1 misses": (0, 16), "D1 misses": (0, 16), "LL misses": (0, 300)}
IPC = (4, 3)  # instructions per cycle without stalls: the low estimate's, the high's


class BadInput(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line and exit 2, like the script's own (not usage + error)."""

    def error(self, message):
        raise BadInput(message)


def load(path):
    """The summary counts of a cachegrind profile, by event name, and its command line."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BadInput(f"{path}: cannot read the profile ({e.strerror})") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: cannot read the profile (not text)") from None
    events = summary = None
    command = ""
    for line in lines:
        if line.startswith("cmd:"):
            command = line[4:].strip()
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            summary = line.split()[1:]
    if events is None or summary is None:
        raise BadInput(f"{path}: not a cachegrind profile (no 'events:' and 'summary:' lines)")
    missing = [e for e in NEEDED if e not in events]
    if missing:
        raise BadInput(f"{path}: the profile lacks {', '.join(missing)}: run cachegrind with --cache-sim=yes --branch-sim=yes")
    try:
        counts = [int(v) for v in summary]
    except ValueError:
        raise BadInput(f"{path}: the summary line is not a list of counts") from None
    if len(counts) != len(events):
        raise BadInput(f"{path}: the summary line has {len(counts)} counts for {len(events)} events")
    return dict(zip(events, counts)), command


def program(command):
    """The program a profile's command line ran (its file name)."""
    return os.path.basename(command.split()[0]) if command.split() else ""


def per_unit(run, baseline, per):
    """The counts cachegrind gives, grouped as the table shows them, per unit."""
    # (a count the baseline has a few more of, from start-up noise, shows as 0)
    d = {k: max(0.0, (run[k] - baseline.get(k, 0)) / per) for k in NEEDED}
    return {
        "instructions": d["Ir"],
        "I1 misses": d["I1mr"],
        "D1 misses": d["D1mr"] + d["D1mw"],
        "LL misses": d["ILmr"] + d["DLmr"] + d["DLmw"],
        "branches": d["Bc"] + d["Bi"],
        "mispredictions": d["Bcm"] + d["Bim"],
        "  of them indirect": d["Bim"],
    }


def cycles(c):
    """(low, high) cycles of each costed row: the instructions at 4 and 3 per
    cycle, each stall at its low and high penalty."""
    rows = {"instructions": (c["instructions"] / IPC[0], c["instructions"] / IPC[1])}
    rows.update({k: (c[k] * p[0], c[k] * p[1]) for k, p in PENALTY.items()})
    return rows


def estimate(c):
    """(low, high) cycles in all: the sums of the rows' bounds."""
    rows = cycles(c).values()
    return sum(r[0] for r in rows), sum(r[1] for r in rows)


def positive(text):
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive number")
    return v


def main(argv):
    ap = Parser(description="Cache misses, mispredictions and an estimate of their cycles from a cachegrind profile.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("profile", help="cachegrind output file (--cache-sim=yes --branch-sim=yes)")
    ap.add_argument("--baseline", help="a second profile whose counts are subtracted (start-up, set-up)")
    ap.add_argument("--per", type=positive, default=1.0, help="divide by this count (operations, events)")
    ap.add_argument("--unit", default="run", help="what --per counts, for the heading (default: run)")
    ap.add_argument("--seconds-per-unit", type=positive, help="CPU seconds per unit, measured on a release build")
    ap.add_argument("--ghz", type=positive, help="the clock (the nominal one: an upper bound on instructions per cycle)")
    try:
        a = ap.parse_args(argv)
        if (a.seconds_per_unit is None) != (a.ghz is None):
            raise BadInput("--seconds-per-unit and --ghz go together")
        run, run_command = load(a.profile)
        base, base_command = load(a.baseline) if a.baseline else ({}, run_command)
        if program(base_command) != program(run_command):
            raise BadInput(f"{a.baseline}: a run of {program(base_command) or 'an unknown program'}, the profile one of "
                           f"{program(run_command) or 'an unknown program'}: a baseline is the same command doing less")
        if base and base["Ir"] >= run["Ir"]:
            raise BadInput(f"{a.profile}: no more instructions than its baseline {a.baseline}: were they swapped?")
        took = a.seconds_per_unit * a.ghz * 1e9 if a.ghz is not None else None
        if took is not None and not (math.isfinite(took) and took >= 1):
            raise BadInput(f"--seconds-per-unit x --ghz is {took:g} cycles per {a.unit}: expected at least one")
    except BadInput as e:
        print(f"cache_stalls: {e}", file=sys.stderr)
        return 2
    c = per_unit(run, base, a.per)
    rows = cycles(c)
    print(f"{'per ' + a.unit:<24}{'count':>12}   cycles (low-high)")
    for k, v in c.items():
        cyc = f"{rows[k][0]:,.0f}-{rows[k][1]:,.0f}" if k in rows else ""
        if k == "instructions":
            cyc += f" (at {IPC[0]}-{IPC[1]} per cycle)"
        print(f"{k:<24}{v:>12,.2f}   {cyc}")
    low, high = estimate(c)
    print(f"{'estimated cycles':<24}{'':>12}   {low:,.0f}-{high:,.0f}")
    if a.ghz is not None:
        print(f"{'cycles taken':<24}{'':>12}   {took:,.0f} ({c['instructions'] / took:.2f} instructions per cycle)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
