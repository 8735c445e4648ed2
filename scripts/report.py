#!/usr/bin/python3
"""Turn cohsim results into a short Markdown report (for patch-review email),
a self-contained HTML report (plots inline) and PNG + SVG plots.

  scripts/report.py sweep-out/x/results.csv --out DIR [--baseline V] [--title T]
  scripts/report.py --from-json DIR/compare.json --out DIR     (cohsim compare --report)
  scripts/report.py --from-validate DIR/validate.json --out DIR (cohsim validate --report;
                    the parity and error plots and report.html: report_validate.py)

From a sweep CSV it also reads sweep.json and points/*.json beside the CSV, when
present, for the grid labels, the platform, contended lines and phases.
Importable: report_from_csv(), report_from_compare_json(), build_report().
Needs matplotlib: run with /usr/bin/python3 (Debian python3-matplotlib).
"""

import argparse
import base64
import html
import json
import math
import re
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cohsim_results as cr  # noqa: E402
from report_plots import (  # noqa: E402
    change_from_nominal, group_stats, input_kind, nominal_value, param_values, plot_difference,
    plot_headline_bars, plot_phases, plot_sweeps, plot_tornado, pyplot, runs_at, sort_key,
    to_float)
from report_measured import (  # noqa: E402
    compare_measured, measured_block, measured_rows, reproduce_blocks)

TOP_LINES = 5
MD_WIDTH = 78  # report.md's paragraphs are wrapped to this (email)


InputError = cr.InputError  # one class, shared with report_validate.py


# ------------------------------------------------------------ loading ---

def _doc_run(doc, params):
    # compare --platforms names its columns VARIANT@PLATFORM ("label")
    return {"variant": doc.get("label") or doc.get("variant") or "", "seed": doc.get("seed", ""),
            "params": params, "metrics": cr.numeric_metrics(doc),
            "contention": doc.get("contention"), "phases": doc.get("phases"),
            "warnings": doc.get("warnings")}


def load_csv(csv_path):
    """A sweep CSV (+ sweep.json and points/*.json beside it) as report data."""
    csv_path = Path(csv_path)
    try:
        swept, _, rows = cr.read_results_csv(csv_path)
    except OSError as e:
        raise InputError("cannot read %s: %s" % (csv_path, e))
    base = csv_path.parent
    desc = {}
    if (base / "sweep.json").exists():
        try:
            desc = json.loads((base / "sweep.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            desc = {}
    docs = {}
    for f in sorted((base / "points").rglob("*.json")) if (base / "points").is_dir() else []:
        d = cr.load_result(f)
        if d is not None:
            docs[f.stem] = d

    def key(variant, seed, params):
        return (variant, str(seed), tuple(cr.value_str(params.get(n, "")) for n in swept))
    by_content = {key(d.get("variant", ""), d.get("seed", ""), d.get("params") or {}): d
                  for d in docs.values()}
    runs, failed = [], 0
    for r in rows:
        if r["status"] != "ok":
            failed += 1
            continue
        doc = None
        for v in (r["variant"], ""):
            doc = doc or docs.get(cr.point_id(v, r["params"], r["seed"]))
        doc = doc or by_content.get(key(r["variant"], r["seed"], r["params"])) or {}
        runs.append({"variant": r["variant"], "seed": r["seed"], "params": r["params"],
                     "metrics": r["metrics"], "contention": doc.get("contention"),
                     "phases": doc.get("phases"), "warnings": doc.get("warnings")})
    first = next(iter(docs.values()), {})
    variants = [v or first.get("variant", "") for v in desc.get("variants", [])]
    order = desc.get("param_order") or list(desc.get("params") or {})
    swept = [n for n in order if n in swept] + [n for n in swept if n not in order]
    return {"scenario": (rows[0]["scenario"] if rows else desc.get("scenario", "")),
            "platform": first.get("platform"), "workload": first.get("workload"),
            "headline": first.get("headline") or [],
            "fixed": desc.get("set") or {}, "swept": swept, "variants": variants,
            "order": {n: [cr.value_str(v) for v in vals]
                      for n, vals in (desc.get("params") or {}).items() if isinstance(vals, list)},
            "baseline": None, "runs": runs, "failed": failed,
            "sensitivity": None, "difference_range": None, "source": csv_path.name}


def load_compare(data):
    """The compare.json document written by `cohsim compare` as report data."""
    runs_in = data.get("runs")
    if not isinstance(runs_in, list):
        raise InputError("compare JSON has no \"runs\" list")
    docs = [d for d in runs_in if isinstance(d, dict) and isinstance(d.get("metrics"), dict)]
    # Every run of a compare has the same --set; what differs between runs is
    # the variant (its own parameters), never a swept point, so all variants
    # are reported side by side.
    runs = [_doc_run(d, {}) for d in docs]
    first = docs[0] if docs else {}
    settings, platform_files = {}, {}
    for d in docs:
        name = d.get("label") or d.get("variant")
        if isinstance(d.get("variant_params"), dict) and name:
            settings.setdefault(name, d["variant_params"])
        if d.get("platform_file") and name:
            platform_files.setdefault(name, d["platform_file"])
    return {"scenario": data.get("scenario") or first.get("scenario", ""),
            "platform": data.get("platform") or first.get("platform"),
            "platform_file": data.get("platform_file") or first.get("platform_file"),
            "workload": data.get("workload") or first.get("workload"),
            "headline": data.get("headline") or first.get("headline") or [],
            "variant_settings": settings, "overrides": data.get("overrides") or {},
            "platform_files": platform_files if len(set(platform_files.values())) > 1 else {},
            "fixed": {k: v for k, v in (data.get("params") or {}).items()
                      if not any(k in vs for vs in settings.values())},
            "swept": [], "variants": [],
            "baseline": data.get("baseline"), "runs": runs,
            "failed": len(runs_in) - len(docs),
            "sensitivity": data.get("sensitivity") or None,
            "difference_range": data.get("difference_range") or None,
            "sensitivity_mode": data.get("sensitivity_mode") or None,
            "provenance": {k: data.get(k) for k in ("command", "git_commit", "git_dirty", "build_id", "version",
                                                    "inputs")},
            "source": "compare.json"}


def summary_point(data):
    """Params of the point summarised in tables: the largest value of each
    swept param (e.g. the most CPUs) when such runs exist."""
    runs, swept = data["runs"], data["swept"]
    if not swept:
        return {}
    point = {n: param_values(runs, n, data.get("order"))[-1] for n in swept}
    if any(all(r["params"].get(n) == v for n, v in point.items()) for r in runs):
        return point
    counts = {}
    for r in runs:
        k = tuple(r["params"].get(n, "") for n in swept)
        counts[k] = counts.get(k, 0) + 1
    return dict(zip(swept, max(counts, key=counts.get)))


def _signed(v):
    """A difference with its sign: +12.5, -3, 0."""
    text = cr.fmt_num(v)
    return text if v <= 0 else "+" + text


def _pct_or_na(v):
    """A difference in % (not defined, null in JSON, where the baseline was 0)."""
    return "n/a" if v is None else cr.fmt_num(v) + "%"


def _swing(s):
    return -abs(change_from_nominal(s, "value_high") - change_from_nominal(s, "value_low"))



# ------------------------------------------------------------ rendering ---

def md_table(headers, rows, aligns):
    cells = [[str(c) for c in r] for r in [headers] + rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        return "| " + " | ".join(c.rjust(w[i]) if aligns[i] == "r" else c.ljust(w[i])
                                 for i, c in enumerate(r)) + " |"
    sep = "|" + "|".join(("-" * (w[i] + 1) + ":") if a == "r" else ("-" * (w[i] + 2))
                         for i, a in enumerate(aligns)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


TABLE_WIDTH = MD_WIDTH + 2  # a sweep's tables in report.md and report.txt: 80 columns (email)


def md_table_of(block):
    """A ("table"|"md_table", headers, rows, aligns[, columns[, key]]) block in Markdown: the
    first COLUMNS columns when given (the rest are in report.html only)."""
    headers, rows, aligns = block[1:4]
    n = block[4] if len(block) > 4 and block[4] is not None else len(headers)
    return md_table(headers[:n], [r[:n] for r in rows], aligns[:n])


def table_width(block):
    """The width in characters of a table block in Markdown."""
    return max(len(line) for line in md_table_of(block).splitlines())


def fit_table(block, width):
    """The table `block` as one or more blocks of at most `width` columns in Markdown (None:
    as it is): when too wide, its columns after the first KEY (block[5], default 1; repeated
    in each part) are split into consecutive tables. A part that is too wide alone stays so."""
    if width is None or table_width(block) <= width:
        return [block]
    headers, rows, aligns = block[1:4]
    n = block[4] if len(block) > 4 and block[4] is not None else len(headers)
    key = min(block[5] if len(block) > 5 else 1, n - 1)

    def part(cols):
        return (block[0], [headers[i] for i in cols], [[r[i] for i in cols] for r in rows],
                [aligns[i] for i in cols])
    parts, cols = [], list(range(key))
    for i in range(key, n):
        if len(cols) > key and table_width(part(cols + [i])) > width:
            parts.append(part(cols))
            cols = list(range(key))
        cols.append(i)
    return parts + [part(cols)]


def _tables(blocks, width):
    """`blocks` with their wide tables split to `width` (fit_table); HTML-only blocks left out."""
    out = []
    for b in blocks:
        if b[0] in ("table", "md_table"):
            out.extend(fit_table(b, width))
        elif b[0] != "html_table":
            out.append(b)
    return out


def to_markdown(blocks, plots, width=None):
    """report.md; every table within WIDTH columns when given (fit_table)."""
    out = []
    for b in _tables(blocks, width):
        if b[0] == "h1":
            out.append("# " + b[1])
        elif b[0] == "h2":
            out.append("## " + b[1])
        elif b[0] in ("p", "md_p"):  # wrapped for email (a code span is never split)
            out.append(textwrap.fill(b[1], MD_WIDTH, break_long_words=False, break_on_hyphens=False))
        elif b[0] == "ul":  # wrapped for email too, a continued item indented under its text
            out.append("\n".join(textwrap.fill(i, MD_WIDTH, initial_indent="- ", subsequent_indent="  ",
                                                break_long_words=False, break_on_hyphens=False)
                                  for i in b[1]))
        elif b[0] == "pre":
            out.append("```text\n%s\n```" % b[1])
        elif b[0] in ("table", "md_table"):
            out.append(md_table_of(b))
    if plots:
        names = sorted({re.sub(r"_.*", "_*", p[:-4]) + ".png" for p, _ in plots})
        out.append(textwrap.fill("Plots: %d, inline in report.html; as PNG and SVG beside it (%s)."
                                 % (len(plots), ", ".join(names)), MD_WIDTH, break_long_words=False,
                                 break_on_hyphens=False))
    return "\n\n".join(out) + "\n"


def _plain(text):
    return str(text).replace("`", "")


def to_text(blocks, plots, width=None):
    """report.txt: the Markdown's content as plain text for an email body: headings
    underlined, no code marks, tables as aligned columns (the Markdown's columns and
    parts, so never wider than the Markdown's)."""
    out = []
    for b in _tables(blocks, width):
        if b[0] in ("h1", "h2"):
            out.append("%s\n%s" % (_plain(b[1]), ("=" if b[0] == "h1" else "-") * len(_plain(b[1]))))
        elif b[0] in ("p", "md_p"):
            out.append(textwrap.fill(_plain(b[1]), MD_WIDTH, break_long_words=False,
                                     break_on_hyphens=False))
        elif b[0] == "ul":
            out.append("\n".join(textwrap.fill(_plain(i), MD_WIDTH, initial_indent="- ",
                                                subsequent_indent="  ") for i in b[1]))
        elif b[0] == "pre":
            out.append("\n".join("    " + line for line in b[1].splitlines()))
        elif b[0] in ("table", "md_table"):
            n = b[4] if len(b) > 4 and b[4] is not None else len(b[1])
            cells = [[_plain(c) for c in r[:n]] for r in [b[1]] + b[2]]
            w = [max(len(r[i]) for r in cells) for i in range(n)]
            line = lambda r: "  ".join(c.rjust(w[i]) if b[3][i] == "r" else c.ljust(w[i])  # noqa: E731
                                       for i, c in enumerate(r)).rstrip()
            out.append("\n".join([line(cells[0]), "  ".join("-" * x for x in w)]
                                 + [line(r) for r in cells[1:]]))
    if plots:
        out.append("Plots: %d, in report.html and as PNG and SVG beside it." % len(plots))
    return "\n\n".join(out) + "\n"


def _inline(text):
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))


CSS = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
       "padding:2px 8px}th{background:#f2f2f2}td.r{text-align:right;font-variant-numeric:"
       "tabular-nums}code{background:#f4f4f4}figure{margin:1em 0}img{max-width:100%}")


def _figures(plots, out_dir):
    """The plots as <figure>s with the PNG inline, so the page needs no other file."""
    out = []
    for name, caption in plots:
        data = base64.b64encode((out_dir / name).read_bytes()).decode()
        out.append('<figure><img alt="%s" src="data:image/png;base64,%s"><figcaption>%s'
                   "</figcaption></figure>" % (html.escape(caption), data, html.escape(caption)))
    return out


def to_html(blocks, plots, out_dir, title):
    """The page: blocks in order; the plots whose file name starts with PREFIX where a
    ("figures", PREFIX) block stands, the others at the end."""
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>%s</title>"
           "<style>%s</style></head><body>" % (html.escape(title), CSS)]
    placed = set()
    for b in blocks:
        if b[0] in ("h1", "h2"):
            out.append("<%s>%s</%s>" % (b[0], _inline(b[1]), b[0]))
        elif b[0] in ("p", "html_p"):
            out.append("<p>%s</p>" % _inline(b[1]))
        elif b[0] == "ul":
            out.append("<ul>%s</ul>" % "".join("<li>%s</li>" % _inline(i) for i in b[1]))
        elif b[0] == "pre":
            out.append("<pre>%s</pre>" % html.escape(b[1]))
        elif b[0] == "figures":
            here = [p for p in plots if p[0].startswith(b[1] if len(b) > 1 else "") and p[0] not in placed]
            out.extend(_figures(here, out_dir))
            placed.update(p[0] for p in here)
        elif b[0] in ("table", "html_table"):
            headers, rows, aligns = b[1:4]
            out.append("<table><tr>%s</tr>%s</table>" % (
                "".join("<th>%s</th>" % _inline(h) for h in headers),
                "".join("<tr>%s</tr>" % "".join(
                    "<td%s>%s</td>" % (' class="r"' if a == "r" else "", _inline(str(c)))
                    for c, a in zip(r, aligns)) for r in rows)))
    rest = [p for p in plots if p[0] not in placed]
    if rest:
        out.append("<h2>Plots</h2>")
        out.extend(_figures(rest, out_dir))
    out.append("</body></html>\n")
    return "\n".join(out)


# ------------------------------------------------------------ report ---

def every_point_tables(data, metrics, variants, baseline, units, measured):
    """One table per metric: a row per swept point, a column per variant (the others with
    their difference to the baseline) and the measured value where a row gives one."""
    runs, swept = data["runs"], data["swept"]
    points = sorted({tuple(r["params"].get(n, "") for n in swept) for r in runs},
                    key=lambda p: [param_values(runs, n, data.get("order")).index(v)
                                   for n, v in zip(reversed(swept), reversed(p))])
    nseeds = max(len({r["seed"] for r in runs_at(runs, dict(zip(swept, p)))}) for p in points)
    blocks = []

    def measured_cell(r, with_variant):
        return "%s%s ±%s%%%s" % (r["variant"] + " " if with_variant and r["variant"] else "",
                                 cr.fmt_num(r["value"]), cr.fmt_num(r["tolerance_pct"]),
                                 "" if r["fit"] == "predicted" else " (%s)" % r["fit"])
    for m in metrics:
        # a row of another variant than those swept is not this sweep's measurement
        here = [r for r in measured if r["metric"] == m and r["variant"] in (None, *variants)]
        rows, beside = [], []  # beside: the measured rows one per line, for report.md
        for p in points:
            at = runs_at(runs, dict(zip(swept, p)))
            base = group_stats(at, baseline, m)
            cells = []
            for v in variants:
                s = group_stats(at, v, m)
                cells.append("-" if not s else cr.fmt_num(s["median"]) if v == baseline or not base
                             else "%s (%s)" % (cr.fmt_num(s["median"]),
                                               cr.fmt_pct(cr.pct_diff(s["median"], base["median"]))))
            if here:
                fit = [r for r in here if r["x"] == p[0] and r["combo"] == dict(zip(swept[1:], p[1:]))]
                cells.append(", ".join(measured_cell(r, len(variants) > 1) for r in fit) or "-")
                for r in fit:  # a row without a variant fits each
                    for v in [r["variant"]] if r["variant"] else variants:
                        s = group_stats(at, v, m)
                        beside.append(list(p) + ([v] if len(variants) > 1 else [])
                                      + [measured_cell(r, False),
                                         cr.fmt_num(s["median"]) if s else "-",
                                         cr.fmt_pct(cr.pct_diff(s["median"], r["value"])) if s else "-"])
            rows.append(list(p) + cells)
        heads = list(swept) + [v + (" (base)" if v == baseline and len(variants) > 1 else "")
                               for v in variants] + (["measured"] if here else [])
        table = ("table", heads, rows, ["r"] * len(heads), None, len(swept))
        # report.md within 80 columns: a measured column too wide (several variants' rows
        # in a cell) is in report.html only; report.md lists them below, one per line
        wide = bool(here) and table_width(table) > TABLE_WIDTH
        if wide:
            table = table[:4] + (len(heads) - 1, len(swept))
        blocks += [("h2", "%s%s at every point" % (m, " (%s)" % units[m] if units.get(m) else "")),
                   ("p", "Median%s; in brackets the difference to %s%s." % (
                       " over %d seeds" % nseeds if nseeds > 1 else "", baseline,
                       "; measured: data/calibration.json or --measured, with its tolerance, and "
                       "(fitted) or (identity) where the model was fitted to it, so it is no test"
                       if here else "") if len(variants) > 1 or here else "Median%s." % (
                       " over %d seeds" % nseeds if nseeds > 1 else "")),
                   table]
        if wide:
            bheads = list(swept) + (["variant"] if len(variants) > 1 else []) + [
                "measured", "model", "error"]
            blocks += [("md_p", "Measured beside the model (error: the model's, in % of the "
                                "measured value):"),
                       ("md_table", bheads, beside,
                        ["r"] * len(swept) + (["l"] if len(variants) > 1 else []) + ["r"] * 3,
                        None, len(swept))]
    return blocks


EMAIL_INPUTS = 10  # the per-input sensitivity rows report.md and report.txt keep when the table is too wide


def email_difference_table(sens, units, baseline):
    """The blocks of report.md and report.txt for a compare's too-wide per-input table: the
    EMAIL_INPUTS inputs that move a headline metric's difference to the baseline most (the
    first headline metric the rows have), with that difference at each end of the input's
    range beside the nominal one; None when the rows do not hold the baseline's and another
    variant's values of one metric."""
    metrics = [m for m in units if any(s.get("metric") == m for s in sens)] or sorted({s.get("metric") for s in sens})
    if not metrics:
        return None
    m = metrics[0]
    base = {_input_key(s): s for s in sens if s.get("metric") == m and s.get("variant") == baseline}

    def diff(s, b, k):
        return cr.pct_diff(to_float(s.get(k)), to_float(b.get(k)))
    found = []
    for s in sens:
        b = base.get(_input_key(s))
        if s.get("metric") != m or s.get("variant") in (None, baseline) or b is None:
            continue
        nominal, low, high = (diff(s, b, k) for k in ("baseline_value", "value_low", "value_high"))
        if None in (nominal, low, high) or any(math.isnan(x) for x in (nominal, low, high)):
            continue
        found.append((max(abs(low - nominal), abs(high - nominal)), s, nominal, low, high))
    if not found:
        return None
    found.sort(key=lambda t: -t[0])
    rows = [t[1:] for t in _each_input_once(found, lambda t: t[1])]
    several = len({s.get("variant") for s, *_ in rows}) > 1
    table = [[_input_name(s)] + ([s.get("variant", "")] if several else [])
             + [cr.fmt_pct(nominal), cr.fmt_pct(low), cr.fmt_pct(high)] for s, nominal, low, high in rows]
    heads = ["input"] + (["variant"] if several else []) + ["nominal", "at low end", "at high end"]
    return [("md_p", "The %d inputs that move the difference in %s to %s most (the difference at each end "
                     "of the input's range beside the nominal one; platform inputs without their `platform.` "
                     "prefix; every input, variant and metric with its kind, range and values is in report.html):"
                     % (len(rows), m, baseline)),
            ("md_table", heads, table, ["l"] * (len(heads) - 3) + ["r"] * 3)]


def _input_key(s):
    """A sensitivity row's input: its parameter and, for a structural one, the alternative."""
    return s.get("param"), s.get("alternative")


def _each_input_once(items, row_of):
    """The first EMAIL_INPUTS of ITEMS whose sensitivity row (ROW_OF(item)) names an input not seen before."""
    out, seen = [], set()
    for item in items:
        if _input_key(row_of(item)) not in seen and len(out) < EMAIL_INPUTS:
            seen.add(_input_key(row_of(item)))
            out.append(item)
    return out


def _input_name(s):
    p = s.get("param", "")
    p = p[len("platform."):] if p.startswith("platform.") else p
    return p + (" = %s" % s["alternative"] if "alternative" in s else "")


def email_sensitivity_table(sens, units):
    """The blocks of report.md and report.txt that stand for a per-input sensitivity table too
    wide for 80 columns: the EMAIL_INPUTS inputs that swing the headline metrics (all, without
    them) most, each once, at the variant and metric where it swings most (named where the rows
    differ), with the change at each end."""
    headline = [s for s in sens if s.get("metric") in units] or sens  # all when no row is a headline's
    rows = _each_input_once(sorted(headline, key=_swing), lambda s: s)  # where each swings most
    variants = len({s.get("variant") for s in rows}) > 1
    metrics = len({s.get("metric") for s in rows}) > 1

    table = [[_input_name(s)] + ([s.get("variant", "")] if variants else []) + ([s.get("metric", "")] if metrics else [])
             + [cr.fmt_pct(change_from_nominal(s, "value_low")), cr.fmt_pct(change_from_nominal(s, "value_high"))]
             for s in rows]
    heads = ["input"] + (["variant"] if variants else []) + (["metric"] if metrics else []) + ["low end", "high end"]
    return [("md_p", "The %d inputs that move %s most, each where it moves them most, by the change at "
                     "each end of the input's range (platform inputs without their `platform.` prefix; every "
                     "input, variant and metric with its kind, range and values is in report.html):"
                     % (len(rows), "the headline metrics" if headline is not sens else "the results")),
            ("md_table", heads, table, ["l"] * (len(heads) - 2) + ["r", "r"])]


def build_report(data, out_dir, baseline=None, title=None, log_y="auto", measured_files=None):
    """Write report.md, report.txt (plain text for email), report.html and the plots for `data` (from load_csv or
    load_compare) into out_dir. A sweep's plots draw y on a log scale per LOG_Y
    ("auto": where the values span more than 10x, "on", "off") and the measured
    rows of data/calibration.json and MEASURED_FILES beside the model; their
    series go to plot-data.json. Returns {"md", "html", "plots": [png names]}."""
    plt = pyplot()
    measured = measured_rows(data, measured_files) if data["swept"] else []  # bad file: no output
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = data["runs"]
    if not runs:
        raise InputError("no successful runs to report on (%d failed)" % data["failed"])
    variants = [v for v in data["variants"] if any(r["variant"] == v for r in runs)]
    for r in runs:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    data["variants"] = variants
    baseline = baseline or data.get("baseline") or variants[0]
    if baseline not in variants:
        raise InputError("baseline variant %r not among %s" % (baseline, ", ".join(variants)))
    data["baseline"] = baseline
    others = [v for v in variants if v != baseline]
    present = {m for r in runs for m in r["metrics"]}
    headline = [h for h in (data.get("headline") or [])
                if isinstance(h, dict) and h.get("metric") in present]
    units = {h["metric"]: h.get("unit") or "" for h in headline}
    metrics = list(units) + sorted(present - set(units))
    point = summary_point(data)
    here = runs_at(runs, point)
    where = (" at " + ", ".join("%s=%s" % kv for kv in point.items())) if point else ""
    seeds = sorted({str(r["seed"]) for r in runs}, key=sort_key)
    title = title or "cohsim: %s" % Path(str(data["scenario"])).stem

    info = ["Scenario: `%s`" % data["scenario"]]
    if data.get("platform"):
        info.append("Platform: %s" % data["platform"])
    if data.get("workload"):
        info.append("Workload: %s" % data["workload"])
    for n in data["swept"]:
        info.append("Swept: %s = %s" % (n, ", ".join(param_values(runs, n, data.get("order")))))
    info.append("Variants: %s (baseline: %s)" % (", ".join(variants), baseline))
    for v in variants:
        vs = (data.get("variant_settings") or {}).get(v)
        if vs:
            info.append("%s sets %s" % (v, ", ".join("`%s=%s`" % (k, cr.value_str(x))
                                                        for k, x in sorted(vs.items()))))
    for v in variants:
        if (data.get("platform_files") or {}).get(v):
            info.append("%s runs on `%s`" % (v, data["platform_files"][v]))
    if data.get("overrides"):
        info.append("--set: %s" % ", ".join("`%s=%s`" % (k, cr.value_str(x))
                                           for k, x in sorted(data["overrides"].items())))
    same = len(seeds) > 1 and all(
        len({json.dumps(r["metrics"], sort_keys=True) for r in runs
             if r["variant"] == v and r["params"] == p["params"]}) == 1 for v in variants for p in runs)
    info.append("Seeds: %s" % seeds[0] if len(seeds) == 1
                else "Seeds: %d (%s)%s" % (len(seeds), ", ".join(seeds),
                                           ", identical results: deterministic" if same else ""))
    if data["failed"]:
        info.append("Failed or missing runs: %d (not included)" % data["failed"])
    # what a run's model warned about (an unfair lock), once per variant and text
    for v in variants:
        said = []
        for r in runs:
            for w in (r.get("warnings") or []) if r["variant"] == v else []:
                if isinstance(w, str) and w not in said:
                    said.append(w)
        info.extend("Warning (%s): %s" % (v, w) for w in said)
    measured_tables = []
    if not data["swept"]:
        found = compare_measured(data, runs, variants)
        if found:
            summary, measured_tables = measured_block(found)
            info.insert(0, summary)
    blocks = [("h1", title), ("ul", info)]

    multi = any((group_stats(here, v, m) or {}).get("n", 0) > 1 for v in variants for m in metrics)
    swept = data["swept"]
    rows, diffs = {}, []
    for m in metrics:
        base = group_stats(here, baseline, m)
        for v in [baseline] + others:
            s = group_stats(here, v, m)
            if not s:
                continue
            p = None if v == baseline else cr.pct_diff(s["median"], base and base["median"])
            if v != baseline and (m in units or not units):
                diffs.append((m, v, p))
            vals = ([cr.fmt_num(s["min"]), cr.fmt_num(s["median"]), cr.fmt_num(s["max"])]
                    if multi else [cr.fmt_num(s["median"])])
            delta = ("base" if v == baseline else
                     _signed(s["median"] - base["median"]) if base else "-")
            label = "%s (%s)" % (m, units[m]) if units.get(m) else m
            # a sweep's tables leave out the absolute difference: 80 columns for email
            rows.setdefault(m in units, []).append(
                [label, v] + vals + ([] if not others else [delta] if not swept else [])
                + (["base" if v == baseline else cr.fmt_pct(p)] if others else []))
    heads = (["metric", "variant"] + (["min", "median", "max"] if multi else ["value"])
             + (["diff"] if others and not swept else []) + (["vs " + baseline] if others else []))
    aligns = ["l", "l"] + ["r"] * (len(heads) - 2)
    if "diff" in heads and any(table_width(("table", heads, g, aligns)) > TABLE_WIDTH for g in rows.values()):
        # a compare's table too wide for email leaves out the absolute difference too (the % stays)
        d = heads.index("diff")
        heads, aligns = heads[:d] + heads[d + 1:], aligns[:d] + aligns[d + 1:]
        rows = {k: [r[:d] + r[d + 1:] for r in g] for k, g in rows.items()}
    # a sweep plots and tabulates its headline metrics at every point (all of them when
    # none is declared), never a swept parameter against itself
    swept_metrics = [m for m in (list(units) if units else metrics) if m not in swept]
    if swept:
        blocks += every_point_tables(data, swept_metrics, variants, baseline, units, measured)
        blocks.append(("figures", "metric_"))
    if units:
        if not swept:
            blocks += [("h2", "Headline metrics" + where), ("table", heads, rows.get(True, []), aligns)]
        if others:
            blocks.append(("figures", "bars_"))
        if rows.get(False):
            blocks += [("h2", "Other metrics" + where), ("table", heads, rows[False], aligns)]
    else:
        blocks += [("h2", "Results" + where), ("table", heads, rows.get(False, []), aligns)]
    blocks += measured_tables

    plots = []
    sens = [s for s in (data.get("sensitivity") or []) if isinstance(s, dict)]
    mode = data.get("sensitivity_mode") if isinstance(data.get("sensitivity_mode"), dict) else {}
    if sens or data.get("difference_range") or mode.get("mode") == "none":
        blocks.append(("h2", "Sensitivity"))
    if mode.get("mode") == "quick":
        blocks.append(("p", "These are the %s. A screened input's ends are estimates: the full-length "
                       "difference moved by what the input changed in the short runs."
                       % mode.get("what", "quick ranges")))
    elif mode.get("mode") == "full":
        blocks.append(("p", "These are the full study's ranges (--sensitivity): every uncertain input at its "
                       "range ends, calibrated numbers over their searched ranges."))
    elif mode.get("mode") == "none":
        blocks.append(("p", "No range is given for the differences: %s." % mode.get("why", "")))
    if sens:
        same = len({(s.get("metric"), s.get("variant")) for s in sens}) == 1
        intro = []
        if same:
            intro.append("Effect of each input's low/high end on %s%s:" % (
                sens[0].get("metric", ""),
                " (%s)" % sens[0]["variant"] if sens[0].get("variant") else ""))
        intro.append("Kinds: estimate = a platform estimate over its declared range; calibrated = "
                     "over the values that keep its calibration rows within tolerance; workload estimate "
                     "= over the range its declaration gives; structural = another plausible mechanism (= name) run in "
                     "place of the platform's; screened = short runs only.")
        srows = []
        for s in sorted(sens, key=_swing):
            c = nominal_value(s)
            span = ("= %s" % s["alternative"]) if "alternative" in s else "%s .. %s" % (s.get("low"), s.get("high"))
            srows.append([s.get("param", ""), input_kind(s), span]
                         + ([] if same else [s.get("metric", ""), s.get("variant", "")])
                         + [cr.fmt_num(s.get("value_low")), cr.fmt_num(c),
                            cr.fmt_num(s.get("value_high")),
                            cr.fmt_pct(cr.pct_diff(to_float(s.get("value_low")), c)),
                            cr.fmt_pct(cr.pct_diff(to_float(s.get("value_high")), c))])
        heads = ["input", "kind", "range"] + ([] if same else ["metric", "variant"])
        full = ("table", heads + ["at low", "nominal", "at high", "low", "high"], srows, ["l"] * len(heads) + ["r"] * 5)
        if table_width(full) <= TABLE_WIDTH:
            blocks += [("p", t) for t in intro] + [full]
        else:
            # report.md and report.txt within 80 columns for email: the inputs that move the
            # headline metrics most, by their change at each end; the whole table in report.html
            blocks += [("html_p", t) for t in intro] + [("html_table",) + full[1:]]
            blocks += email_difference_table(sens, units, baseline) or email_sensitivity_table(sens, units)
        plot_tornado(plt, sens, baseline, out_dir, plots)
    rng = data.get("difference_range") or {}
    if rng:
        blocks.append(("p", "Predicted difference (%s vs %s) over the parameter ranges:"
                       % (", ".join(others) or "variant", baseline)))
        items = [(name, r) for name, r in rng.items() if isinstance(r, dict)]
        defined = [(n, r) for n, r in items if r.get("low") is not None and r.get("high") is not None]
        first = lambda n: next((i for i, h in enumerate(units) if n == h or n.startswith(h + " ")), len(units))  # noqa: E731
        defined.sort(key=lambda t: (first(t[0]), t[0]))  # the headline metrics first, in their order
        blocks.append(("ul", ["%s: %s .. %s" % (n, cr.fmt_pct(r["low"]), cr.fmt_pct(r["high"])) for n, r in defined]))
        undefined = [n for n, r in items if (n, r) not in defined]
        if undefined:
            blocks.append(("p", "No range (the baseline's value is 0): %s." % ", ".join(undefined)))

    crows = []
    for v in variants:
        agg, nseeds = {}, 0
        for r in (x for x in here if x["variant"] == v and isinstance(x.get("contention"), list)):
            nseeds += 1
            for c in r["contention"]:
                if not isinstance(c, dict):
                    continue
                t = c.get("transfers")
                parts = t if isinstance(t, dict) else {"total": t or 0}
                a = agg.setdefault(c.get("symbol", "?"), {"home": c.get("home_node", ""),
                                                          "parts": {}})
                for k, n in parts.items():
                    if isinstance(n, (int, float)):
                        a["parts"][k] = a["parts"].get(k, 0) + n
        top = sorted(agg.items(), key=lambda kv: -sum(kv[1]["parts"].values()))[:TOP_LINES]
        for sym, a in top:
            crows.append((v, sym, a["home"], {k: n / nseeds for k, n in a["parts"].items()}))
    if crows:
        keys = sorted({k for *_, p in crows for k in p})
        keys = keys if len(keys) <= 4 and keys != ["total"] else []

        table = ("table", ["variant", "line", "home", "transfers"] + keys,
                 [[v, "`%s`" % s, h, cr.fmt_num(sum(p.values()))]
                  + [cr.fmt_num(p.get(k, 0)) for k in keys] for v, s, h, p in crows],
                 ["l", "l", "r", "r"] + ["r"] * len(keys))
        blocks.append(("h2", "Top contended lines" + where))
        # report.md within 80 columns: a table too wide loses its split by hop class and then
        # its variant column (a table per variant, named in its first heading) there; report.html
        # keeps the whole table
        per_variant = table_width(table[:4] + (4,)) > TABLE_WIDTH and len(variants) > 1
        if per_variant:
            parts = [("md_table", ["line (%s)" % v] + table[1][2:],
                      [r[1:] for r, c in zip(table[2], crows) if c[0] == v], table[3][1:])
                     for v in variants if any(c[0] == v for c in crows)]
        else:
            parts = [table]
        if keys and max(table_width(t) for t in parts) > TABLE_WIDTH:
            parts = [t[:4] + (len(t[1]) - len(keys),) for t in parts]
            blocks.append(("md_p", "Transfers in total; by hop class (%s) in report.html."
                           % ", ".join(keys)))
        if per_variant:
            blocks.append(("html_table",) + table[1:])
        blocks += parts

    phase_names, ptable = [], {}
    for v in variants:
        per = {}
        for r in (x for x in here if x["variant"] == v and isinstance(x.get("phases"), dict)):
            for ph, ns in r["phases"].items():
                if isinstance(ns, (int, float)):
                    per.setdefault(ph, []).append(ns)
                    if ph not in phase_names:
                        phase_names.append(ph)
        if per:
            ptable[v] = {ph: statistics.median(vals) for ph, vals in per.items()}
    if ptable:
        pv = [v for v in variants if v in ptable]
        tot = {v: sum(ptable[v].values()) or 1.0 for v in pv}
        prow = [[ph] + ["%s (%.0f%%)" % (cr.fmt_num(ptable[v].get(ph, 0)),
                                          100.0 * ptable[v].get(ph, 0) / tot[v]) for v in pv]
                for ph in phase_names]
        prow.append(["total"] + [cr.fmt_num(sum(ptable[v].values())) for v in pv])
        blocks += [("h2", "Time by phase (ns)" + where),
                   ("table", ["phase"] + pv, prow, ["l"] + ["r"] * len(pv))]

    fixed = data.get("fixed") or {}
    if fixed:
        blocks += [("h2", "Parameters"),
                   ("p", ", ".join("`%s=%s`" % (k, cr.value_str(v)) for k, v in sorted(fixed.items())))]

    blocks += reproduce_blocks(data.get("provenance") or {}, MD_WIDTH)

    if others:
        for h in headline:
            plot_headline_bars(plt, data, here, variants, baseline, h, where, out_dir, plots)
    if data["swept"]:
        plot_data = plot_sweeps(plt, data, swept_metrics, {h["metric"]: h for h in headline},
                                measured, log_y, out_dir, plots)
        cr.atomic_write_text(out_dir / "plot-data.json", json.dumps(plot_data, indent=1) + "\n")
    if others:
        plot_difference(plt, diffs, baseline, where, out_dir, plots)
    if ptable:
        plot_phases(plt, phase_names, ptable, [v for v in variants if v in ptable], out_dir, plots)

    md = out_dir / "report.md"
    width = TABLE_WIDTH if data["swept"] else None  # a sweep's: 80 columns
    cr.atomic_write_text(md, to_markdown(blocks, plots, width))
    cr.atomic_write_text(out_dir / "report.txt", to_text(blocks, plots, width))
    page = out_dir / "report.html"
    cr.atomic_write_text(page, to_html(blocks, plots, out_dir, title))
    return {"md": md, "html": page, "plots": [p for p, _ in plots]}


def report_from_csv(csv_path, out_dir, baseline=None, title=None, log_y="auto", measured_files=None):
    """The report of a sweep's results.csv (see build_report)."""
    return build_report(load_csv(csv_path), out_dir, baseline, title, log_y, measured_files)


def report_from_compare_json(path, out_dir, baseline=None, title=None):
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError("cannot read %s: %s" % (path, e))
    if not isinstance(data, dict):
        raise InputError("%s: expected a JSON object" % path)
    return build_report(load_compare(data), out_dir, baseline, title)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Markdown/HTML/PNG/SVG report from cohsim results.")
    ap.add_argument("csv", nargs="?", help="results.csv written by scripts/sweep.py")
    ap.add_argument("--from-json", metavar="FILE", help="compare.json written by cohsim compare")
    ap.add_argument("--from-validate", metavar="FILE",
                    help="validate.json written by cohsim validate --report (report.md beside it)")
    ap.add_argument("--out", metavar="DIR",
                    help="output directory (default: report/ beside the input)")
    ap.add_argument("--baseline", metavar="VARIANT",
                    help="variant to compare against (default: compare.json's, else the first)")
    ap.add_argument("--title", metavar="T", help="report title")
    ap.add_argument("--log-y", choices=("auto", "on", "off"), default="auto",
                    help="sweep plots: y on a log scale (auto: where the values span more than 10x)")
    ap.add_argument("--measured", metavar="FILE", action="append", default=[],
                    help="sweep plots: measured rows to draw beside the model, in data/calibration.json's "
                         "format (that file is always read); repeatable")
    ap.add_argument("--quiet", action="store_true",
                    help="print nothing on success (cohsim, which stages the files, says where they went)")
    args = ap.parse_args(argv)
    if sum(bool(a) for a in (args.csv, args.from_json, args.from_validate)) != 1:
        ap.error("give one of SWEEP.csv, --from-json FILE or --from-validate FILE")
    src = Path(args.csv or args.from_json or args.from_validate)
    out = Path(args.out) if args.out else src.parent / "report"
    try:
        if args.from_validate:
            import report_validate
            res = report_validate.report_from_validate_json(src, out, args.title)
        elif args.csv:
            res = report_from_csv(src, out, args.baseline, args.title, args.log_y, args.measured)
        else:
            res = report_from_compare_json(src, out, args.baseline, args.title)
    except InputError as e:
        sys.stderr.write("report.py: error: %s\n" % e)
        return 2
    if not args.quiet:
        sys.stderr.write("wrote %s, report.txt, %s and %d plot(s) (PNG + SVG) in %s\n"
                         % (res["md"].name, res["html"].name, len(res["plots"]), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
