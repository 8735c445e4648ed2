#!/usr/bin/python3
"""A tiny stand-in for `cohsim run`, following the binary's contract, for the
sweep/report tests. Controlled by environment variables:

  FAKE_COHSIM_LOG=FILE      append one JSON line (the argv) per invocation
  FAKE_COHSIM_FAIL=k=v,...  exit 1 with a stderr message when any --set k=v
                            (or variant=V / seed=N) matches
  FAKE_COHSIM_NOJSON=k=v,.. exit 0 without writing the JSON when matching
  FAKE_COHSIM_SLEEP=SECONDS sleep that long first
  FAKE_COHSIM_VARIANTS=a,b  `params`: the scenario's variants (default: any name)
  FAKE_COHSIM_UNKNOWN=k,... `params`: names no model reads
  COHSIM_BUILD_ID=ID        the build id `version --json` prints and results
                            record (default fake-build-1), as the real binary

A result records, like the real one's, build_id and inputs (the scenario
file's path -> its sha256).

`cohsim params SCENARIO [--variant V] [--set k=v]... --json F` (the name check
sweep.py runs first) exits 2 for an unknown variant or name and is not logged.
"""

import hashlib
import json
import math
import os
import sys
import tempfile
import time


def usage(msg):
    sys.stderr.write("cohsim: error: %s\n" % msg)
    sys.exit(2)


def matches(env, facts):
    spec = os.environ.get(env, "")
    return any(c and c in facts for c in spec.split(","))


def params_check(variant, sets):
    known = [v for v in os.environ.get("FAKE_COHSIM_VARIANTS", "").split(",") if v]
    if variant and known and variant not in known:
        usage("scn.json: variants: unknown variant '%s' (known: %s)" % (variant, ", ".join(known)))
    for k in sets:
        if k in os.environ.get("FAKE_COHSIM_UNKNOWN", "").split(","):
            usage("scn.json: params.%s: unknown key: no model reads it" % k)
    return 0


def build_id():
    return os.environ.get("COHSIM_BUILD_ID") or "fake-build-1"


def main(argv):
    if argv == ["version", "--json"]:
        print(json.dumps({"version": "0.1.0", "git_commit": "unknown", "git_dirty": False,
                          "build_id": build_id()}))
        return 0
    if len(argv) < 2 or argv[0] not in ("run", "params"):
        usage("usage: cohsim run SCENARIO [options]")
    scenario, rest = argv[1], argv[2:]
    variant, sets, seed, out = "cmpxchg", {}, 1, None
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-q", "--override-variant"):
            i += 1
            continue
        if i + 1 >= len(rest):
            usage("%s needs a value" % a)
        v = rest[i + 1]
        if a == "--variant":
            variant = v
        elif a == "--set":
            k, sep, val = v.partition("=")
            if not sep:
                usage("--set needs KEY=VALUE")
            sets[k] = val
        elif a == "--seed":
            seed = int(v)
        elif a == "--json":
            out = v
        else:
            usage("unknown option %s" % a)
        i += 2
    if argv[0] == "params":
        return params_check("" if variant == "cmpxchg" and "--variant" not in rest else variant, sets)
    if os.environ.get("FAKE_COHSIM_LOG"):
        with open(os.environ["FAKE_COHSIM_LOG"], "a") as f:
            f.write(json.dumps(argv) + "\n")
    time.sleep(float(os.environ.get("FAKE_COHSIM_SLEEP", "0")))
    facts = {"%s=%s" % kv for kv in sets.items()} | {"variant=" + variant, "seed=%d" % seed}
    if matches("FAKE_COHSIM_FAIL", facts):
        sys.stderr.write("simulating...\ncheck failed: coherence invariant violated "
                         "(fake failure for %s)\n" % sorted(facts))
        return 1
    if matches("FAKE_COHSIM_NOJSON", facts):
        return 0
    cpus = int(sets.get("cpus", "4"))
    f = {"cmpxchg": 1.0, "fetch-add": 0.7}.get(variant, 1.2)
    jitter = 1 + 0.01 * (seed - 1)
    doc = {
        "scenario": scenario, "platform": "kunpeng920", "workload": "fake-cmdq",
        "variant": variant, "params": dict(sets, cpus=cpus), "seed": seed,
        "version": "0.1.0", "build_id": build_id(),
        "inputs": {scenario: hashlib.sha256(open(scenario, "rb").read()).hexdigest()},
        "metrics": {
            "ops_per_s": 1e6 * math.sqrt(cpus) / f * jitter,
            "latency_ns.p50": 100 * f * math.log2(cpus + 1) * jitter,
            "remote_transfers": int(cpus * 50 * f),
        },
        "host": {"wall_s": 0.01, "events": 1000 * cpus},
        "contention": [
            {"symbol": "cmdq.q.llq", "home_node": 0,
             "transfers": {"local": int(cpus * 10 * f), "remote": int(cpus * 30 * f)}},
            {"symbol": "cmdq.owner", "home_node": 1,
             "transfers": {"local": cpus * 2, "remote": cpus * 5}},
        ],
        "phases": {"claim": 120.0 * f * cpus, "write": 300.0, "publish": 80.0 * f},
    }
    if out:
        d = os.path.dirname(os.path.abspath(out))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh)
        os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
