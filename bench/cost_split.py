#!/usr/bin/env python3
"""Where a run's host instructions go: a callgrind profile split by component.

    valgrind --tool=callgrind --callgrind-out-file=/tmp/run.cg \\
        build/profile/cohsim selftest coherence --cpus 4 --ops 10000 -q
    valgrind --tool=callgrind --callgrind-out-file=/tmp/setup.cg \\
        build/profile/cohsim selftest coherence --cpus 4 --ops 1 -q
    bench/cost_split.py /tmp/run.cg --baseline /tmp/setup.cg --per 39996 --unit op

Each instruction is charged to the component whose source line it is
(callgrind's self cost, by file and line): the engine (src/sim,
include/cohsim/sim: the event queue, processes, waits; its code inlined into a
model's coroutine counts as the engine's), the fabric, the interconnect, the
CPU model, the interrupt controllers, the devices, the kernel models and
workloads, the command line (the selftest's tester and checker included).
Lines of the C++ library (containers, algorithms) are charged to the
component of the function they were inlined into, <random> to "random
numbers", malloc/new/free to "allocator". What is left (the dynamic loader,
libc's string functions, Boost, fmt, nlohmann-json) is "libraries and start-up".

The profile needs line information: build with -g (the `profile` preset:
`cmake --preset profile && cmake --build --preset profile`). --baseline
subtracts a second profile (the same command doing one operation, say) so
that start-up and set-up cancel; --per divides by a count (operations,
events). Exit status 0, or 2 for bad input (a missing or unreadable profile,
no callgrind_annotate, a profile without line information).
"""
import argparse
import re
import shutil
import subprocess
import sys

# Project sources, by path (the first match wins).
PATHS = [
    ("interconnect", r"(^|/)(src|include/cohsim)/fabric/(interconnect|link_timeline)"),
    ("engine", r"(^|/)(src|include/cohsim)/sim/"),
    ("fabric", r"(^|/)(src|include/cohsim)/fabric/"),
    ("cpu", r"(^|/)(src|include/cohsim)/cpu/"),
    ("irq", r"(^|/)(src|include/cohsim)/irq/"),
    ("devices", r"(^|/)(src|include/cohsim)/devices/"),
    ("models and workloads", r"(^|/)(models|bench)/"),
    ("command line and tester", r"(^|/)(src|include/cohsim)/cli/"),
    ("config and scenario", r"(^|/)(src|include/cohsim)/(config|scenario|topo)/"),
    ("litmus", r"(^|/)(src|include/cohsim)/litmus/"),
]
# Functions, by qualified name, for lines of the C++ library inlined into them.
FUNCTIONS = [
    ("interconnect", r"^cohsim::fabric::(Interconnect|LinkTimeline)\b"),
    ("engine", r"^cohsim::sim::"),
    ("fabric", r"^cohsim::fabric::"),
    ("cpu", r"^cohsim::cpu::"),
    ("irq", r"^cohsim::irq::"),
    ("devices", r"^cohsim::devices::"),
    ("models and workloads", r"^cohsim::models::|^cohsim_bench::"),
    ("command line and tester", r"^cohsim::cli::"),
    ("config and scenario", r"^cohsim::(config|scenario|topo)::"),
    ("litmus", r"^cohsim::litmus::"),
]
RANDOM = r"/bits/random\.(tcc|h)$"
ALLOCATOR = r"^(malloc|_int_malloc|_int_free|free|realloc|_int_realloc|cfree|malloc_consolidate|unlink_chunk|" \
            r"operator new|operator delete|tcache_)"
ORDER = ["engine", "fabric", "interconnect", "cpu", "irq", "devices", "models and workloads", "command line and tester",
         "config and scenario", "litmus", "random numbers", "C++ library (other)", "allocator", "libraries and start-up"]


class Bad(Exception):
    """Bad input: reported on one line, exit 2."""


def parse_annotate(text):
    """{(file, function): self cost} from callgrind_annotate's per-function table."""
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?):(\S.*)$", line)
        if not m or m.group(2) == "PROGRAM TOTALS":
            continue
        function = re.sub(r"\s*\[[^\]]*\]$", "", m.group(3))  # the object file
        key = (m.group(2), function)
        costs[key] = costs.get(key, 0) + int(m.group(1).replace(",", ""))
    return costs


def bare_name(function):
    """A function's qualified name without its parameters and template arguments."""
    name = function.replace("(anonymous namespace)", "{anonymous}")
    name = re.sub(r"\(.*", "", name)
    while True:
        shorter = re.sub(r"<[^<>]*>", "", name)
        if shorter == name:
            return name.strip()
        name = shorter


def component(source_file, function):
    """The component a line of `source_file`, inside `function`, is charged to."""
    for name, pattern in PATHS:
        if re.search(pattern, source_file):
            return name
    if re.search(RANDOM, source_file):
        return "random numbers"
    bare = bare_name(function)
    if re.match(ALLOCATOR, bare):
        return "allocator"
    if "/c++/" in source_file:
        for name, pattern in FUNCTIONS:
            if re.search(pattern, bare):
                return name
        return "C++ library (other)"
    return "libraries and start-up"


def split(costs):
    """{component: cost}."""
    out = {}
    for (source_file, function), cost in costs.items():
        name = component(source_file, function)
        out[name] = out.get(name, 0) + cost
    return out


def load(path):
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise Bad(f"{path}: cannot read the profile ({e.strerror})")
    run = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise Bad(f"{path}: callgrind_annotate failed: {run.stderr.strip().splitlines()[-1:] or ['no output']}")
    costs = parse_annotate(run.stdout)
    if not costs:
        raise Bad(f"{path}: not a callgrind profile (callgrind_annotate found no function)")
    unknown = sum(c for (f, _), c in costs.items() if f == "???")
    if unknown > sum(costs.values()) / 2:
        raise Bad(f"{path}: most of the profile has no source lines: build with -g "
                  "(cmake --preset profile && cmake --build --preset profile)")
    return costs


def main(argv):
    ap = argparse.ArgumentParser(description="Split a callgrind profile's instructions by cohsim component.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("profile", help="callgrind output file (of a build with -g)")
    ap.add_argument("--baseline", help="a second profile whose costs are subtracted (start-up, set-up)")
    ap.add_argument("--per", type=float, default=None, help="divide by this count (operations, events)")
    ap.add_argument("--unit", default="unit", help="what --per counts, for the heading (default: unit)")
    ap.add_argument("--top", type=int, default=15, help="functions listed, by self cost (default 15; 0: none)")
    args = ap.parse_args(argv)
    if args.per is not None and not args.per > 0:
        ap.error("--per must be a positive count")
    if args.top < 0:
        ap.error("--top must be 0 or more")
    if shutil.which("callgrind_annotate") is None:
        raise Bad("callgrind_annotate not found: install valgrind (apt-get install valgrind)")
    costs = load(args.profile)
    if args.baseline:
        for key, cost in load(args.baseline).items():
            costs[key] = costs.get(key, 0) - cost
    per = args.per or 1.0
    number = "{:14,.1f}" if args.per else "{:14,.0f}"
    parts = split(costs)
    total = sum(parts.values())
    if total <= 0:
        raise Bad("the profile costs no more than its baseline: were they swapped?")
    label = f"per {args.unit}" if args.per else "instructions"
    print(f"{'component':28s} {label:>14s} {'share':>7s}")
    for name in ORDER:
        if name in parts and abs(parts[name]) >= 0.0005 * total:
            print(f"{name:28s} {number.format(parts[name] / per)} {100 * parts[name] / total:6.1f} %")
    print(f"{'total':28s} {number.format(total / per)}")
    if args.top:
        # C++ library lines are folded into the function they were inlined into.
        functions = {}
        for (source_file, function), cost in costs.items():
            bare = bare_name(function)
            functions[bare] = functions.get(bare, 0) + cost
        print(f"\nthe {args.top} largest functions (self cost, inlined library code included):")
        for name, cost in sorted(functions.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"{number.format(cost / per)} {100 * cost / total:6.1f} %  {name[:110]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Bad as e:
        print(f"cost_split: {e}", file=sys.stderr)
        sys.exit(2)
