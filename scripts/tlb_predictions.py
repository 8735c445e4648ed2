#!/usr/bin/env python3
"""The TLB shootdown prediction tables of docs/tlb.md, regenerated.

swap-mt (configs/scenarios/swap-mt-skylake.json, or another platform with
--platform): for each thread count, `cohsim compare --variants
csd-aligned,csd-unaligned --seeds S --json` and the pages_per_s difference
(per seed: min..max and median), the csd lines moved per shootdown in each
variant, IPIs per shootdown and the senders' shares. With --sensitivity N the
point at N threads also runs `cohsim sensitivity` (screened with short runs)
and prints the range of the difference over the estimates' range ends and
the structural alternatives.

madvise-dontneed (configs/scenarios/tlb-madvise-haswell-ex.json): ns per
iteration and its split at 1, 2 and 4 threads in socket 0 and across
sockets, for both variants.

    scripts/tlb_predictions.py swap --threads 2,4,8,16,32 --seeds 3 --sensitivity 32
    scripts/tlb_predictions.py swap --platform configs/platforms/haswell-ex.json --threads 2,8,18,36,72
    scripts/tlb_predictions.py madvise
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COHSIM = os.path.join(ROOT, "build", "release", "cohsim")
VARIANTS = "csd-aligned,csd-unaligned"


def fail(msg):
    print(f"tlb_predictions: {msg}", file=sys.stderr)
    sys.exit(2)


def run(args, allow_failed_inputs=False):
    p = subprocess.run([COHSIM] + args, cwd=ROOT, capture_output=True, text=True)
    # sensitivity exits 1 when some inputs' runs failed (e.g. a platform range end the model cannot
    # build); the table keeps the others.
    if p.returncode != 0 and not (allow_failed_inputs and "input(s) failed" in p.stderr + p.stdout):
        fail(f"cohsim {' '.join(args)} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def compare(scenario, sets, seeds, platform=None):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        args = ["compare", scenario, "--variants", VARIANTS, "--seeds", str(seeds), "--json", out,
                "--no-sensitivity"]  # the seeds' values only; the study's ranges come from its own --sensitivity
        for s in sets:
            args += ["--set", s]
        if platform:
            args += ["--platform", platform]
        run(args)
        with open(out) as f:
            doc = json.load(f)
    by = {}
    for r in doc["runs"]:
        by.setdefault(r["variant"], []).append(r["metrics"])
    return by


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def swap(a):
    scen = os.path.join("configs", "scenarios", "swap-mt-skylake.json")
    print(f"swap-mt, {a.platform or 'skylake-sp-2s'}: pages_per_s of csd-unaligned vs csd-aligned, {a.seeds} seeds\n")
    print("| threads | pages/s aligned | diff (seeds min..max, median) | csd lines / shootdown aligned -> unaligned "
          "| IPIs / shootdown | share csd+queue | share IPI send | share wait | share flush |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in a.threads:
        by = compare(scen, [f"threads={n}"] + a.set, a.seeds, a.platform)
        al, un = by["csd-aligned"], by["csd-unaligned"]
        diffs = [100.0 * (u["pages_per_s"] / b["pages_per_s"] - 1) for b, u in zip(al, un)]
        print(f"| {n} | {med(al, 'pages_per_s'):.3g} | {min(diffs):+.2f} .. {max(diffs):+.2f} % "
              f"({statistics.median(diffs):+.2f}) | {med(al, 'csd_lines_per_shootdown'):.1f} -> "
              f"{med(un, 'csd_lines_per_shootdown'):.1f} | {med(al, 'ipis_per_shootdown'):.1f} | "
              f"{100 * med(al, 'share_csd_queue'):.2f} % | {100 * med(al, 'share_ipi_send'):.3f} % | "
              f"{100 * med(al, 'share_wait'):.2f} % | {100 * med(al, 'share_flush'):.2f} % |")
    if a.sensitivity:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "s.json")
            sens_scen = scen
            if a.platform:  # sensitivity takes no --platform: a copy of the scenario names it
                with open(os.path.join(ROOT, scen)) as f:
                    doc = json.load(f)
                doc["platform"] = os.path.abspath(os.path.join(ROOT, a.platform))
                sens_scen = os.path.join(d, "scenario.json")
                with open(sens_scen, "w") as f:
                    json.dump(doc, f)
            args = ["sensitivity", sens_scen, "--variants", VARIANTS, "--set", f"threads={a.sensitivity}",
                    "--screen-set", "duration=1ms", "--screen-set", "warmup=300us", "--json", out]
            for s in a.set:
                args += ["--set", s]
            text = run(args, allow_failed_inputs=True)
            with open(out) as f:
                doc = json.load(f)
        failed = [l.strip() for l in text.splitlines() if "FAILED" in l]
        print(f"\nsensitivity at {a.sensitivity} threads: range of each difference (csd-unaligned vs csd-aligned)")
        for k, v in sorted(doc["difference_range"].items()):
            if k.split(" ")[0] in ("pages_per_s", "csd_lines_per_shootdown", "ipis_per_shootdown", "share_wait"):
                print(f"  {k}: {v['low']:+.2f} .. {v['high']:+.2f} %")
        for l in failed:
            print(f"  not run: {l}")


def madvise(a):
    scen = os.path.join("configs", "scenarios", "tlb-madvise-haswell-ex.json")
    print("madvise-dontneed, haswell-ex: ns per iteration (thread 0 on CPU 0 loops madvise + touch)\n")
    print("| threads | CPUs | ns/iter aligned | ns/iter unaligned | csd lines / shootdown | IPIs / shootdown "
          "| share csd+queue | share IPI send | share wait | share flush |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cpus in ["0", "0,1", "0-3", "0,18", "0,18,36,54"]:
        n = len(cpus.split(",")) if "-" not in cpus else 4
        sets = [f"threads={n}"] + ([f"cpus={cpus}"] if n > 1 else [])  # "0" alone would be a count
        by = compare(scen, sets + a.set, 1)
        al, un = by["csd-aligned"][0], by["csd-unaligned"][0]
        print(f"| {n} | {cpus} | {al['ns_per_iteration']:.0f} | {un['ns_per_iteration']:.0f} | "
              f"{al['csd_lines_per_shootdown']:.1f} | {al['ipis_per_shootdown']:.1f} | "
              f"{100 * al['share_csd_queue']:.1f} % | {100 * al['share_ipi_send']:.1f} % | "
              f"{100 * al['share_wait']:.1f} % | {100 * al['share_flush']:.1f} % |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["swap", "madvise"])
    ap.add_argument("--threads", default="2,4,8,16,32", help="swap: thread counts")
    ap.add_argument("--seeds", type=int, default=3, help="swap: seeds per point (the writers' start pages)")
    ap.add_argument("--platform", default=None, help="swap: another platform file")
    ap.add_argument("--sensitivity", type=int, default=0, help="swap: run the sensitivity study at this thread count")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE passed to every run")
    a = ap.parse_args()
    if not os.path.exists(COHSIM):
        fail(f"{COHSIM} not built (cmake --build build/release)")
    try:
        a.threads = [int(x) for x in a.threads.split(",")]
    except ValueError:
        fail(f"--threads {a.threads}: expected a comma-separated list of counts")
    swap(a) if a.what == "swap" else madvise(a)


if __name__ == "__main__":
    main()
