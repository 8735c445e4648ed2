#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets from configs/ (run from the repo root).

corpus/platform/: every shipped platform file, and one that includes another.
corpus/scenario/: every shipped scenario, alone and with --set overrides.
corpus/cli/:      command lines (one token per line) naming shipped files.
Also writes cohsim.dict (a libFuzzer dictionary: every key and short string
value of the configs) next to the corpus.
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out = root / "tests" / "fuzz" / "corpus"
platforms = sorted((root / "configs" / "platforms").glob("*.json"))
scenarios = sorted((root / "configs" / "scenarios").glob("*.json"))


def put(target, name, text):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)


for p in platforms:
    put("platform", p.name, p.read_text())
put("platform", "include-kunpeng920.json",
    '{"include": "platforms/kunpeng920.json", "name": "kp920-variant"}\n')

small = {"c2c": ["rounds=5", "warmup=1"], "mem-latency": ["loads=10", "buffer=4KiB"],
         "ipi-bench": ["rounds=2"], "dma-map-bench": ["duration=10us"]}
for s in scenarios:
    text = s.read_text()
    put("scenario", s.name, text)
    workload = json.loads(text).get("workload", "")
    sets = small.get(workload, []) + ["platform.interconnect.cluster.latency=20ns"]
    put("scenario", s.stem + "-sets.json", text.rstrip("\n") + "".join("\n--set " + x for x in sets) + "\n")

cli = {
    "topo": ["topo", "configs/platforms/kunpeng920.json"],
    "topo-json-path": ["topo", "configs/platforms/haswell-ex.json", "--json", "--from", "0", "--to", "30"],
    "topo-path": ["topo", "configs/platforms/skylake-sp-2s.json", "--from", "1", "--to", "2"],
    "schema-platform": ["schema", "platform"],
    "schema-scenario": ["schema", "scenario"],
    "help": ["help"],
    "help-run": ["help", "run"],
    "validate": ["validate", "-q"],
    "version": ["--version"],
}
for name, argv in cli.items():
    put("cli", name, "\n".join(argv) + "\n")

words = set()


def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            words.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
    elif isinstance(v, str) and len(v) <= 24:
        words.add(v)


for f in platforms + scenarios:
    walk(json.loads(f.read_text()))
words |= {"include", "value", "source", "range", "estimate: ", "calibration: ", "--set ", "platform.",
          "ns", "us", "ps", "GHz", "KiB", "MiB", "--from", "--to", "--json", "--help", "topo", "schema"}
lines = sorted('"%s"' % w.replace("\\", "\\\\").replace('"', '\\"') for w in words if w.isprintable())
(out.parent / "cohsim.dict").write_text("\n".join(lines) + "\n")
