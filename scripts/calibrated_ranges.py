#!/usr/bin/python3
"""Regenerates data/calibrated-ranges.json: for each shipped scenario with a
"screen", the range over which each calibrated platform number keeps the
calibration rows its source names within tolerance, as `cohsim sensitivity`
searches it. `cohsim compare` (its quick ranges, without --sensitivity)
varies calibrated numbers over these stored ranges instead of searching them.

  scripts/calibrated_ranges.py [--cohsim PATH] [--only STEM,...]

A stored range holds for one platform file (path relative to the repository),
nominal value and platform overrides, searched on the platform document and
calibration rows (with the model's expected predictions of them,
data/validate-expected.json) whose SHA-256 it records; after a change of
either (a model change shows as `cohsim validate --write-expected`) run this
again. The file is written anew: ranges still valid are reused, the others
searched again. Scenarios on one platform share the searches. With --only the
other scenarios' ranges are kept as they were.
Takes minutes (the search runs calibration rows at full length).
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cohsim_results as cr  # noqa: E402

OUT = cr.REPO_ROOT / "data" / "calibrated-ranges.json"
ABOUT = ("Each calibrated platform number's range: the values that keep every calibration row its source names "
         "within tolerance, searched by `cohsim sensitivity` (method below). `cohsim compare` without "
         "--sensitivity varies calibrated numbers over these instead of searching; a range holds only for the "
         "platform file, nominal value, overrides and the platform and calibration SHA-256 it records. "
         "Regenerate with scripts/calibrated_ranges.py.")


def key(r):
    return (r.get("platform"), r.get("param"), r.get("nominal"), r.get("platform_overrides"),
            r.get("platform_sha256"), r.get("calibration_sha256"))


def still_calibrated(r, platforms):
    """False when the range's parameter is in its platform file with a source that is not "calibration:".
    `platforms` caches the parsed platform files by path."""
    try:
        if r["platform"] not in platforms:
            platforms[r["platform"]] = json.loads((cr.REPO_ROOT / r["platform"]).read_text(encoding="utf-8"))
        node = platforms[r["platform"]]
        for part in r["param"].split(".")[1:]:  # "platform.smmu.map_cpu_work"
            node = node[part]
    except (OSError, KeyError, TypeError, ValueError):
        return True  # not found as written (e.g. an included file): keep it
    return not isinstance(node, dict) or str(node.get("source", "calibration:")).startswith("calibration:")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cohsim", default=str(cr.REPO_ROOT / "build" / "release" / "cohsim"))
    ap.add_argument("--only", help="scenario stems, comma-separated (default: every one with a screen)")
    args = ap.parse_args(argv)
    scenarios = sorted((cr.REPO_ROOT / "configs" / "scenarios").glob("*.json"))
    if args.only:
        wanted = set(args.only.split(","))
        scenarios = [s for s in scenarios if s.stem in wanted]
    # The file is written anew: a range from the old file is kept only when a study reuses it (the same
    # platform document, value and calibration hash), so ranges of edited files go.
    old = OUT.with_suffix(".previous.json")
    if OUT.exists():
        old.write_bytes(OUT.read_bytes())
    earlier = json.loads(old.read_text(encoding="utf-8"))["calibrated_ranges"]["ranges"] if old.exists() else []
    stored = {"method": "", "ranges": []}
    # --only: the other scenarios' ranges stay as they were (those of a parameter searched again are replaced,
    # those of a parameter no longer calibrated dropped).
    platforms = {}
    kept = [r for r in earlier if still_calibrated(r, platforms)] if args.only else []
    written = 0
    for n, scenario in enumerate(scenarios, 1):
        spec = json.loads(scenario.read_text(encoding="utf-8"))
        if "screen" not in spec or len(spec.get("variants", {})) < 2:
            continue
        screen = ["--screen-set=%s=%s" % (k, v if isinstance(v, str) else json.dumps(v))
                  for k, v in spec["screen"].items()]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "s.json"
            cmd = [args.cohsim, "sensitivity", str(scenario), *screen, "--full-runs", "0",
                   "--json", str(out), "-q"]
            # reusable: the old file's ranges and those found so far in this run
            reuse = Path(tmp) / "reuse.json"
            reuse.write_text(json.dumps({"calibrated_ranges": {"ranges": earlier + stored["ranges"]}}))
            cmd += ["--ranges", str(reuse)]
            sys.stderr.write("[%d/%d] %s\n" % (n, len(scenarios), scenario.name))
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0 or not out.exists():
                sys.stderr.write("calibrated_ranges: %s failed (exit %d):\n%s\n"
                                 % (scenario.name, done.returncode, done.stderr[-2000:]))
                return 1
            found = json.loads(out.read_text(encoding="utf-8"))["calibrated_ranges"]
        stored["method"] = found["method"]
        have = {key(r): i for i, r in enumerate(stored["ranges"])}
        for r in found["ranges"]:
            if r.get("low") is None:
                continue  # not varied there (rows on other platforms, no stored range): nothing to keep
            r = dict(r, note=r.get("note", "").split("reused from")[0].rstrip("; "))
            if key(r) in have:
                continue
            stored["ranges"].append(r)
        searched = {(r["platform"], r["param"]) for r in stored["ranges"]}
        out_doc = {"about": ABOUT, "calibrated_ranges": {
            "method": stored["method"],
            "ranges": sorted(stored["ranges"] + [r for r in kept if (r.get("platform"), r.get("param")) not in searched],
                             key=lambda r: (r["platform"], r["param"]))}}
        cr.atomic_write_text(OUT, json.dumps(out_doc, indent=1) + "\n")
        written = len(out_doc["calibrated_ranges"]["ranges"])
    if old.exists():
        old.unlink()
    sys.stderr.write("wrote %s: %d ranges (%d searched or reused in this run)\n" % (OUT, written, len(stored["ranges"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
