"""The measured rows a report shows beside the model (data/calibration.json and
--measured files), the label of each (fitted, identity, predicted, as `cohsim
validate` gives it), and the Reproduce section of a compare report."""

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cohsim_results as cr  # noqa: E402
from report_plots import group_stats  # noqa: E402

InputError = cr.InputError


CALIBRATION = cr.REPO_ROOT / "data" / "calibration.json"


def _same_file(a, b):
    return (cr.REPO_ROOT / str(a)).resolve() == (cr.REPO_ROOT / str(b)).resolve()


ROW_ID = re.compile(r"[a-z0-9]+(?:\.[a-z0-9][a-z0-9-]*){2,}")


def _fitted_ids(doc):
    """The row ids that "calibration: ..." sources anywhere in a platform or scenario
    document name (the rows its numbers were fitted to), as `cohsim validate` reads them."""
    found = set()
    if isinstance(doc, dict):
        src = doc.get("source")
        if isinstance(src, str) and src.startswith("calibration:"):
            found |= set(ROW_ID.findall(src[len("calibration:"):]))
        for v in doc.values():
            found |= _fitted_ids(v)
    elif isinstance(doc, list):
        for v in doc:
            found |= _fitted_ids(v)
    return found


def row_kinds(scenario, rows):
    """Each row id -> fitted (a number of the scenario or its platform names it),
    identity (the fitted rows fix it between them: a difference of two, or a part of a
    fitted difference whose other part is fixed) or predicted: `cohsim validate`'s labels."""
    fitted = set()
    try:
        scen_path = cr.REPO_ROOT / str(scenario)
        scen = json.loads(scen_path.read_text(encoding="utf-8"))
        fitted |= _fitted_ids(scen)
        plat = scen.get("platform") if isinstance(scen, dict) else None
        if isinstance(plat, str):
            fitted |= _fitted_ids(json.loads((scen_path.parent / plat).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass  # no scenario to read: every row is a prediction
    derived = []
    for r in rows:
        parts = re.fullmatch(r"\s*(\S+)\s*[-+/*]\s*(\S+)\s*", str(r.get("derived", "")))
        if parts:
            derived.append((r.get("id"), parts.group(1), parts.group(2)))

    def fixed(i, seen):
        if i in fitted:
            return True
        if i in seen:
            return False
        seen.add(i)
        for rid, a, b in derived:
            if rid == i and fixed(a, seen) and fixed(b, seen):
                return True
            if rid in fitted and i in (a, b) and fixed(b if i == a else a, seen):
                return True
        return False

    return {r.get("id"): "fitted" if r.get("id") in fitted else
            "identity" if fixed(r.get("id"), set()) else "predicted" for r in rows}


def measured_rows(data, files):
    """The measured rows (data/calibration.json and FILES, {"rows": [...]}) that a sweep's
    plots can show: same scenario, the first swept parameter set, every other swept one
    and every --set of the sweep the same. A row without "variant" fits every variant."""
    xname, others = data["swept"][0], data["swept"][1:]
    fixed = {k: cr.value_str(v) for k, v in (data.get("fixed") or {}).items()}
    found = []
    for f in [CALIBRATION] + [Path(x) for x in files or []]:
        try:
            doc = json.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InputError("--measured %s: cannot read it as JSON: %s" % (f, e))
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            raise InputError("--measured %s: expected {\"rows\": [...]} as in data/calibration.json" % f)
        kinds = row_kinds(data["scenario"], [r for r in rows if isinstance(r, dict)])
        for r in rows:
            sets = r.get("set") if isinstance(r, dict) else None
            if (not isinstance(sets, dict) or xname not in sets or "derived" in r or "bound" in r
                    or not isinstance(r.get("measured"), (int, float))
                    or not _same_file(r.get("scenario", ""), data["scenario"])):
                continue
            sets = {k: cr.value_str(v) for k, v in sets.items()}
            rest = {k: v for k, v in sets.items() if k != xname and k not in others}
            if rest != fixed or any(n not in sets for n in others):
                continue
            found.append({"id": r.get("id", "?"), "variant": r.get("variant"), "metric": r.get("metric"),
                          "x": sets[xname], "combo": {n: sets[n] for n in others},
                          "value": float(r["measured"]), "tolerance_pct": float(r.get("tolerance_pct") or 0),
                          "fit": kinds.get(r.get("id"), "predicted")})
    return found


def _shell_lines(command, width):
    """A shell command folded before its options into lines of WIDTH, continued with a backslash."""
    groups = []  # an option with its value stays on one line
    for word in command.split(" "):
        if groups and not word.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1]:
            groups[-1] += " " + word
        else:
            groups.append(word)
    lines, line = [], ""
    for word in groups:
        if line and len(line) + 1 + len(word) > width - 2:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = word if not line else line + " " + word
    return "\n".join(lines + [line])


def reproduce_blocks(prov, width):
    """What made the results (compare.json's command, git_commit, git_dirty, build_id,
    version, inputs), so that a reader can rerun them."""
    if not prov.get("command"):
        return []
    items = ["Commit: %s%s" % (prov.get("git_commit") or "unknown",
                                " (dirty tree)" if prov.get("git_dirty") else ""),
             "Build: %s; cohsim %s" % (prov.get("build_id") or "unknown", prov.get("version") or "?")]
    inputs = prov.get("inputs") or {}
    return [("h2", "Reproduce"),
            ("p", "The command that made these results, from a build of the commit below:"),
            ("pre", _shell_lines(str(prov["command"]), width - 4)), ("ul", items)] + (
        [("p", "The files it read, with their SHA-256 (the first 16 hex digits):"),
         ("pre", "\n".join("%s  %s" % (str(d)[:16], p) for p, d in sorted(inputs.items())))] if inputs else [])


def _own_platform(scenario, platform_file):
    """Whether PLATFORM_FILE is the platform SCENARIO names (True when that cannot be read)."""
    try:
        scen_path = cr.REPO_ROOT / str(scenario)
        plat = json.loads(scen_path.read_text(encoding="utf-8")).get("platform")
    except (OSError, ValueError, AttributeError):
        return True
    if not isinstance(plat, str):
        return True
    return (scen_path.parent / plat).resolve() == (cr.REPO_ROOT / str(platform_file)).resolve()


def compare_measured(data, runs, variants):
    """The rows of data/calibration.json a compare ran: same scenario, a variant it ran (or
    none named), every "set" key equal to what that variant ran with; a derived row when
    both its parts are there. Each: id, measured, model, tolerance, error and its label."""
    try:
        rows = json.loads(CALIBRATION.read_text(encoding="utf-8")).get("rows") or []
    except (OSError, ValueError):
        return []
    rows = [r for r in rows if isinstance(r, dict) and isinstance(r.get("measured"), (int, float))]
    if data.get("platform_file") and not _own_platform(data["scenario"], data["platform_file"]):
        return []  # compare --platform: the rows were measured on the scenario's own machine
    kinds = row_kinds(data["scenario"], rows)
    fixed = {k: cr.value_str(v) for k, v in (data.get("fixed") or {}).items()}
    settings = data.get("variant_settings") or {}
    model = {}
    for r in rows:
        if "derived" in r or not _same_file(r.get("scenario", ""), data["scenario"]):
            continue
        for v in variants:
            ran = dict(fixed, **{k: cr.value_str(x) for k, x in (settings.get(v) or {}).items()})
            sets = r.get("set") if isinstance(r.get("set"), dict) else {}
            if r.get("variant") not in (None, v) or any(ran.get(k) != cr.value_str(x) for k, x in sets.items()):
                continue
            st = group_stats(runs, v, r.get("metric"))
            if st:
                model[r["id"]] = st["median"]
                break
    for r in rows:
        parts = re.fullmatch(r"\s*(\S+)\s*([-/])\s*(\S+)\s*", str(r.get("derived", "")))
        if parts and parts.group(1) in model and parts.group(3) in model:
            a, b = model[parts.group(1)], model[parts.group(3)]
            if parts.group(2) == "-" or b:
                model[r["id"]] = a - b if parts.group(2) == "-" else a / b
    found = []
    for r in rows:
        if r["id"] not in model:
            continue
        m, v = model[r["id"]], float(r["measured"])
        absolute = r.get("tolerance_abs") is not None
        tol = float(r.get("tolerance_abs") if absolute else r.get("tolerance_pct") or 0)
        error = m - v if absolute else cr.pct_diff(m, v)
        found.append({"id": r["id"], "unit": r.get("unit") or "", "measured": v, "model": m, "tolerance": tol,
                      "absolute": absolute, "error": error, "fit": kinds.get(r["id"], "predicted")})
    return found


def measured_block(found):
    """The compare report's table of measured rows beside the model, and its first-lines summary."""
    def with_unit(x, unit):
        return cr.fmt_num(x) + (" " + unit if unit and unit != "ratio" else "")
    # the unit once, with the measured value (the model's is in the same unit)
    table = [[f["id"], with_unit(f["measured"], f["unit"]), cr.fmt_num(f["model"]),
              ("%+.1f %s" % (f["error"], f["unit"]) if f["absolute"] else cr.fmt_pct(f["error"])),
              ("%s %s" % (cr.fmt_num(f["tolerance"]), f["unit"]) if f["absolute"] else "%s%%" % cr.fmt_num(f["tolerance"])),
              f["fit"]] for f in found]
    counts = {k: sum(f["fit"] == k for f in found) for k in ("fitted", "identity", "predicted")}
    summary = "Measured rows: " + ", ".join("%d %s" % (n, k) for k, n in counts.items() if n)
    if not counts["predicted"]:
        summary += ": no test of the model"
    return summary, [("h2", "Measured beside the model"),
                     ("p", "The rows of data/calibration.json this compare ran. fitted: a number of the "
                           "scenario or its platform was fitted to the row; identity: the fitted rows fix it "
                           "between them; predicted: the model was not told it (`cohsim validate` labels "
                           "them the same way)."),
                     ("table", ["row", "measured", "model", "error", "tol", "label"], table,
                      ["l", "r", "r", "r", "r", "l"])]
