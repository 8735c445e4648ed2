#!/usr/bin/python3
"""Shared helpers for cohsim result documents, sweep CSVs and number formatting.

Used by scripts/sweep.py and scripts/report.py; standard library only.

A result document is what `cohsim run --json FILE` writes:
  {"scenario", "platform", "workload", "variant", "params": {flat name: value},
   "seed", "version", "metrics": {flat name: number}, "host": {...},
   "contention": [...], "phases": {...} (optional)}
It is *complete* if it parses as JSON and has a "metrics" object.
"""

import csv
import hashlib
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_COHSIM = "build/release/cohsim"

_UMASK = os.umask(0)
os.umask(_UMASK)


class InputError(Exception):
    """Input a script cannot use (unreadable, malformed, missing a tool): its
    message says what; the scripts exit 2 with it."""


FIXED_COLUMNS = ["scenario", "variant", "seed"]
STATUS_COLUMN = "status"
PARAM_PREFIX = "param."
METRIC_PREFIX = "metric."


# ---------------------------------------------------------------- results ---

def load_result(path):
    """Return the parsed result document at `path`, or None if it is missing,
    unreadable, not JSON, or has no "metrics" object (i.e. incomplete)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        return None
    return doc


def is_complete(path):
    return load_result(path) is not None


def numeric_metrics(doc):
    """The metrics of a result document that are numbers (bools excluded)."""
    out = {}
    for k, v in (doc.get("metrics") or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
    return out


# ---------------------------------------------------------------- point ids ---

_SAFE = re.compile(r"[^A-Za-z0-9._+=-]")


def value_str(v):
    """A parameter value as text (JSON scalars keep their usual spelling)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def point_id(variant, params, seed):
    """Stable file-name-safe id of one grid point.

    Readable when possible ("cmpxchg__cpus=8__s1"); the order of `params` does
    not matter. Characters outside [A-Za-z0-9._+=-], or a very long id, get a
    short hash of the exact values appended so distinct points never collide.
    """
    parts = [variant or "default"]
    parts += ["%s=%s" % (k, value_str(params[k])) for k in sorted(params)]
    parts.append("s%s" % seed)
    raw = "__".join(parts)
    safe = _SAFE.sub("-", raw)
    if safe != raw or len(safe) > 120:
        canon = json.dumps([variant, sorted((k, value_str(v)) for k, v in params.items()),
                            str(seed)])
        digest = hashlib.sha1(canon.encode()).hexdigest()[:10]
        safe = safe[:100] + "-" + digest
    return safe


# ---------------------------------------------------------------- files ---

def atomic_write_text(path, text):
    """Write `text` to `path` via a temp file in the same directory + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def csv_columns(param_names, metric_names):
    """Stable column order: fixed, params sorted, metrics sorted, status."""
    return (FIXED_COLUMNS + [PARAM_PREFIX + p for p in sorted(param_names)]
            + [METRIC_PREFIX + m for m in sorted(metric_names)] + [STATUS_COLUMN])


def write_results_csv(path, rows, param_names):
    """rows: dicts with scenario, variant, seed, params{}, metrics{}, status."""
    metric_names = set()
    for r in rows:
        metric_names.update(r.get("metrics") or {})
    cols = csv_columns(param_names, metric_names)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        line = [r.get("scenario", ""), r.get("variant", ""), r.get("seed", "")]
        line += [value_str(r["params"][p]) if p in r.get("params", {}) else ""
                 for p in sorted(param_names)]
        m = r.get("metrics") or {}
        line += [repr_num(m[k]) if k in m else "" for k in sorted(metric_names)]
        line.append(r.get("status", ""))
        w.writerow(line)
    atomic_write_text(path, buf.getvalue())
    return cols


def read_results_csv(path):
    """Parse a sweep CSV into (param_names, metric_names, rows); each row has
    scenario, variant, seed, params{name: str}, metrics{name: float}, status."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        params = [c[len(PARAM_PREFIX):] for c in fields if c.startswith(PARAM_PREFIX)]
        metrics = [c[len(METRIC_PREFIX):] for c in fields if c.startswith(METRIC_PREFIX)]
        rows = []
        for rec in reader:
            row = {
                "scenario": rec.get("scenario", ""),
                "variant": rec.get("variant", ""),
                "seed": rec.get("seed", ""),
                "status": rec.get(STATUS_COLUMN) or "ok",
                "params": {p: rec.get(PARAM_PREFIX + p, "") for p in params},
                "metrics": {},
            }
            for m in metrics:
                v = rec.get(METRIC_PREFIX + m, "")
                if v not in ("", None):
                    try:
                        row["metrics"][m] = float(v)
                    except ValueError:
                        pass
            rows.append(row)
    return params, metrics, rows


def repr_num(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isfinite(v) and v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    return str(v)


# ---------------------------------------------------------------- numbers ---

_UNITS = {
    "ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9,          # -> ns
    "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9,                   # -> Hz
    "b": 1.0, "kb": 1024.0, "kib": 1024.0, "mb": 1024.0 ** 2, "mib": 1024.0 ** 2,
    "gb": 1024.0 ** 3, "gib": 1024.0 ** 3,
}
_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


def parse_number(v):
    """float for numbers and unit-bearing config values ("34ns" -> 34.0 in ns,
    "2GHz" -> 2e9), None for anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = _NUM_UNIT.match(str(v))
    if not m:
        return None
    unit = m.group(2).lower()
    if unit and unit not in _UNITS:
        return None
    return float(m.group(1)) * _UNITS.get(unit, 1.0)


def fmt_num(v, sig=4):
    """A number with about `sig` significant digits, email friendly."""
    if v is None:
        return "-"
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        mant, exp = ("%.*e" % (sig - 1, v)).split("e")
        return "%se%d" % (mant, int(exp))
    decimals = max(0, sig - 1 - int(math.floor(math.log10(a))))
    s = "%.*f" % (decimals, v)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def fmt_pct(p):
    if p is None:
        return "n/a"
    if math.isnan(p):
        return "n/a"
    if abs(p) < 0.005:
        return "0.00%"
    if abs(p) < 10:
        return "%+.2f%%" % p
    return "%+.1f%%" % p


def pct_diff(value, base):
    """Percent difference of value relative to base, None if undefined."""
    if value is None or base is None:
        return None
    if base == 0:  # not defined, even for 0 vs 0 (as cohsim's own pct)
        return None
    return (value - base) / abs(base) * 100.0
