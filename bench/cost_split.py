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
numbers", malloc/new/free to "allocator". What is left is "libc and other
libraries": libc's string functions (memcmp, memcpy: on the hot path too),
the dynamic loader, Boost, fmt, nlohmann-json.

It also counts entries into coroutine bodies: the calls of GCC's `.actor`
functions (a coroutine's body), each a function entry, a dispatch on the
suspension point and an exit. They are the resumptions (a start included)
and the destructions of frames, which run through the same function (the
calls from a `.destroy` clone, counted apart). The profile must have
compressed names (callgrind's default).

The profile needs line information: build with -g (the `profile` preset:
`cmake --preset profile && cmake --build --preset profile`). --baseline
subtracts a second profile (the same command doing one operation, say) so
that start-up and set-up cancel; --per divides by a count (operations,
events). Exit status 0, or 2 for bad input (a missing or unreadable profile,
no callgrind_annotate, a profile without line information).
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys

# The project's components: the sources they are written in, and the functions
# (by qualified name) whose inlined C++ library lines they are charged. The
# first match wins (the interconnect's files are in src/fabric).
SRC = r"(^|/)(src|include/cohsim)/"
COMPONENTS = [
    ("interconnect", SRC + r"fabric/(interconnect|link_timeline)", r"^cohsim::fabric::(Interconnect|LinkTimeline)\b"),
    ("engine", SRC + r"sim/", r"^cohsim::sim::"),
    ("fabric", SRC + r"fabric/", r"^cohsim::fabric::"),
    ("cpu", SRC + r"cpu/", r"^cohsim::cpu::"),
    ("irq", SRC + r"irq/", r"^cohsim::irq::"),
    ("devices", SRC + r"devices/", r"^cohsim::devices::"),
    ("models and workloads", r"(^|/)(models|bench)/", r"^cohsim::models::|^cohsim_bench::"),
    ("command line and tester", SRC + r"cli/", r"^cohsim::cli::"),
    ("config and scenario", SRC + r"(config|scenario|topo)/", r"^cohsim::(config|scenario|topo)::"),
    ("litmus", SRC + r"litmus/", r"^cohsim::litmus::"),
]
RANDOM = r"/bits/random\.(tcc|h)$"
ALLOCATOR = r"^(malloc|_int_malloc|_int_free|free|realloc|_int_realloc|cfree|malloc_consolidate|unlink_chunk|" \
            r"operator new|operator delete|tcache_)"
ORDER = ["engine", "fabric", "interconnect", "cpu", "irq", "devices", "models and workloads", "command line and tester",
         "config and scenario", "litmus", "random numbers", "C++ library (other)", "allocator", "libc and other libraries"]


class Bad(Exception):
    """Bad input: reported on one line, exit 2."""


def parse_annotate(text):
    """{(file, function): self cost} from callgrind_annotate's per-function table."""
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?):(\S.*)$", line)
        if not m:  # a heading, or PROGRAM TOTALS (no file:function)
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
    for name, path, _ in COMPONENTS:
        if re.search(path, source_file):
            return name
    if re.search(RANDOM, source_file):
        return "random numbers"
    bare = bare_name(function)
    if re.match(ALLOCATOR, bare):
        return "allocator"
    if "/c++/" in source_file:
        for name, _, functions in COMPONENTS:
            if re.search(functions, bare):
                return name
        return "C++ library (other)"
    return "libc and other libraries"


def split(costs):
    """{component: cost}."""
    out = {}
    for (source_file, function), cost in costs.items():
        name = component(source_file, function)
        out[name] = out.get(name, 0) + cost
    return out


def count_entries(text):
    """(entries, of them from a .destroy clone) of coroutine bodies (`.actor`
    functions) in a callgrind output file's text (compressed names)."""
    names, entries, destroys, caller, callee = {}, 0, 0, "", None
    for line in text.splitlines():
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)  # the first use of an id names it
            if m.group(1) == "cfn":
                callee = names.get(m.group(2), "")
            else:
                caller, callee = names.get(m.group(2), ""), None
            continue
        m = re.match(r"calls=(\d+)", line)
        if m and callee is not None and ".actor" in callee:
            entries += int(m.group(1))
            if "[clone .destroy]" in caller:
                destroys += int(m.group(1))
    return entries, destroys


def readable(path):
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise Bad(f"{path}: cannot read the profile ({e.strerror})")


def load(path):
    """(costs, (coroutine entries, of them destructions)) of a profile."""
    run = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        last = run.stderr.strip().splitlines()[-1:] or ["no message"]
        raise Bad(f"{path}: not a callgrind profile (callgrind_annotate: {last[0]})")
    costs = parse_annotate(run.stdout)
    if not costs:
        raise Bad(f"{path}: not a callgrind profile (callgrind_annotate found no function)")
    unknown = sum(c for (f, _), c in costs.items() if f == "???")
    if unknown > sum(costs.values()) / 2:
        raise Bad(f"{path}: most of the profile has no source lines: build with -g "
                  "(cmake --preset profile && cmake --build --preset profile)")
    with open(path, encoding="utf-8", errors="replace") as f:
        return costs, count_entries(f.read())


def main(argv):
    ap = argparse.ArgumentParser(description="Split a callgrind profile's instructions by cohsim component.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("profile", help="callgrind output file (of a build with -g)")
    ap.add_argument("--baseline", help="a second profile whose costs are subtracted (start-up, set-up)")
    ap.add_argument("--per", type=float, default=None, help="divide by this count (operations, events)")
    ap.add_argument("--unit", default="unit", help="what --per counts, for the heading (default: unit)")
    ap.add_argument("--top", type=int, default=15, help="functions listed, by self cost (default 15; 0: none)")
    args = ap.parse_args(argv)
    if args.per is not None and not (args.per > 0 and math.isfinite(args.per)):
        ap.error("--per must be a positive count")
    if args.top < 0:
        ap.error("--top must be 0 or more")
    if args.unit != "unit" and args.per is None:
        ap.error("--unit names what --per counts: give --per too")
    for path in [args.profile] + ([args.baseline] if args.baseline else []):
        readable(path)
    if args.baseline and os.path.samefile(args.profile, args.baseline):
        raise Bad(f"{args.profile}: the profile and its baseline are the same file")
    if shutil.which("callgrind_annotate") is None:
        raise Bad("callgrind_annotate not found: install valgrind (apt-get install valgrind)")
    costs, (entries, destroys) = load(args.profile)
    if args.baseline:
        base_costs, (base_entries, base_destroys) = load(args.baseline)
        for key, cost in base_costs.items():
            costs[key] = costs.get(key, 0) - cost
        entries -= base_entries
        destroys -= base_destroys
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
    print(f"{'coroutine body entries':28s} {number.format(entries / per)}")
    print(f"{'  of them, to destroy a frame':28s} {number.format(destroys / per)}")
    if args.top:
        # C++ library lines are folded into the function they were inlined into.
        functions = {}
        for (source_file, function), cost in costs.items():
            bare = bare_name(function)
            functions[bare] = functions.get(bare, 0) + cost
        print(f"\nthe largest functions, up to {args.top} (self cost, inlined library code included):")
        # (With a baseline, functions of start-up cancel out: those left below 0.05 % are not listed.)
        kept = [(name, cost) for name, cost in functions.items() if cost >= 0.0005 * total]
        for name, cost in sorted(kept, key=lambda kv: -kv[1])[:args.top]:
            print(f"{number.format(cost / per)} {100 * cost / total:6.1f} %  {name[:110]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Bad as e:
        print(f"cost_split: {e}", file=sys.stderr)
        sys.exit(2)
