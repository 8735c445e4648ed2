#!/usr/bin/python3
"""The plots and page of `cohsim validate --report DIR`: from DIR/validate.json
(rows: measured, predicted, error, tolerance, status) and DIR/report.md
(written by cohsim), the parity plot (predicted vs measured, log-log, each
row's tolerance band), the error of each row against its tolerance, and a
self-contained report.html with both plots inline and report.md's text.
Run through scripts/report.py --from-validate FILE --out DIR.
"""

import json
from pathlib import Path

import cohsim_results as cr
import report
import report_plots

STATUS_COLORS = {"ok": "#2a9d4a", "known miss": "#e09a20", "MISS": "#d03030"}
OTHER_COLOR = "#7a3fb0"  # NOW FITS, MOVED, ERROR: a row the validation fails for another reason
DPI = 160
BOUND_ARROW = 3.0  # a lower bound's band on the parity plot: from its lower end up by this factor, then an arrow


def _color(status):
    return STATUS_COLORS.get(status, OTHER_COLOR)


def load_validate(path):
    """validate.json as a list of rows, numbered from 1 in report order."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise cr.InputError("cannot read %s: %s" % (path, e))
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise cr.InputError("%s: expected {\"rows\": [...]} with at least one row" % path)
    for n, r in enumerate(rows, 1):
        r["n"] = n
    return data, rows


def _band(r):
    """The predictions row r accepts: (low, high); high is None for a lower bound."""
    m = r["measured"]
    tol = r["tolerance_abs"] if "tolerance_abs" in r else abs(m) * r["tolerance_pct"] / 100.0
    if r.get("bound") == "at_least":
        return m - tol, None
    return m - tol, m + tol


def plot_parity(plt, rows, out_dir, plots):
    shown = [r for r in rows if r["measured"] > 0 and (r.get("predicted") or 0) > 0]
    left_out = [r for r in rows if r not in shown]
    values = [v for r in shown for v in (r["measured"], r["predicted"])]
    values += [v for r in shown for v in _band(r) if v and v > 0]
    lo, hi = (min(values) / 1.6, max(values) * 1.6) if values else (0.1, 10.0)
    fig = plt.figure(figsize=(9.0, 6.0))
    grid = fig.add_gridspec(1, 2, width_ratios=[3.0, 1.45])
    ax, key = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    ax.plot([lo, hi], [lo, hi], color="#555555", linestyle="--", linewidth=0.9, label="predicted = measured")
    for r in shown:
        band_lo, band_hi = _band(r)
        bottom = max(band_lo, lo)
        # A lower bound accepts everything above: a short band with an arrow, not a stripe to the top.
        top = band_hi or min(bottom * BOUND_ARROW, hi)
        ax.plot([r["measured"]] * 2, [bottom, top], color=_color(r["status"]),
                alpha=0.28, linewidth=7, solid_capstyle="butt")
        if band_hi is None:
            ax.plot(r["measured"], top, marker="^", markersize=7, color=_color(r["status"]), alpha=0.4)
        ax.plot(r["measured"], r["predicted"], marker="^" if r.get("bound") == "at_least" else "o",
                markersize=6, color=_color(r["status"]), markeredgecolor="black", markeredgewidth=0.5)
        ax.annotate(str(r["n"]), (r["measured"], r["predicted"]), xytext=(5, 3), textcoords="offset points",
                    fontsize=7)
    for status in [s for s in STATUS_COLORS if any(r["status"] == s for r in shown)]:
        ax.plot([], [], "o", color=_color(status), label=status)
    if any(r["status"] not in STATUS_COLORS for r in shown):
        ax.plot([], [], "o", color=OTHER_COLOR, label="NOW FITS / MOVED / ERROR")
    if any(r.get("bound") == "at_least" for r in shown):
        ax.plot([], [], "^", color="#888888", label="lower bound (band: up)")
    ax.plot([], [], color="#888888", alpha=0.4, linewidth=7, label="tolerance band")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("measured (each row in its own unit)")
    ax.set_ylabel("predicted (same unit)")
    ax.set_title("Parity: predicted vs measured (%d rows)" % len(shown))
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left")
    key.axis("off")
    lines = ["%2d  %s" % (r["n"], r["id"]) for r in shown]
    lines += ["--  %s (%s)" % (r["id"], "no prediction" if r.get("predicted") is None else "not > 0: not shown")
              for r in left_out]
    key.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", family="monospace",
             fontsize=max(4.5, min(7.5, 330.0 / max(len(lines), 1))), transform=key.transAxes)
    key.set_title("key", fontsize=8, loc="left")
    caption = ("Parity plot: each row's prediction against its measurement on log-log axes; on the dashed "
               "diagonal the model is exact. The shaded band at each row spans the predictions its tolerance "
               "accepts (for a lower bound, everything above its lower end); the number keys the row.")
    if left_out:
        caption += " Not shown (no positive prediction): %s." % ", ".join(r["id"] for r in left_out)
    report_plots.save_figure(plt, fig, out_dir, "parity", caption, plots, dpi=DPI)


def plot_errors(plt, rows, out_dir, plots):
    absolute = [r for r in rows if "tolerance_abs" in r]  # judged in their unit: a percent error means nothing
    rows = [r for r in rows if "tolerance_abs" not in r]
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.3 * len(rows)))
    ends = [r["error_pct"] for r in rows if r.get("error_pct") is not None]
    ends += [t for r in rows for t in (-r["tolerance_pct"], r["tolerance_pct"])] + [-1.0, 1.0]
    pad = 0.15 * (max(ends) - min(ends))
    left, right = min(ends) - pad, max(ends) + pad
    for i, r in enumerate(rows):
        tol = r["tolerance_pct"]
        bound = r.get("bound") == "at_least"
        ax.barh(i, (right + tol) if bound else 2 * tol, left=-tol, height=0.8, color="#bbbbbb", alpha=0.5,
                label="errors the tolerance accepts" if i == 0 else None)
        e = r.get("error_pct")
        if e is None:
            ax.text(0, i, " no prediction (%s)" % r["status"], va="center", fontsize=7, color=OTHER_COLOR)
            continue
        ax.barh(i, e, height=0.45, color=_color(r["status"]))
        ax.text(e, i, " %+.1f%% " % e, va="center", ha="left" if e >= 0 else "right", fontsize=7)
    for status in [s for s in STATUS_COLORS if any(r["status"] == s for r in rows)]:
        ax.barh([0], [0], color=_color(status), label=status)
    if any(r["status"] not in STATUS_COLORS for r in rows):
        ax.barh([0], [0], color=OTHER_COLOR, label="NOW FITS / MOVED / ERROR")
    ax.legend(fontsize=7, loc="best")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlim(left, right)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(["%d  %s" % (r["n"], r["id"]) for r in rows], fontsize=7)
    for label, r in zip(ax.get_yticklabels(), rows):
        label.set_color(_color(r["status"]))
    ax.invert_yaxis()
    ax.set_xlabel("error = (predicted - measured) / measured (%)")
    ax.set_title("Error of each row; grey: the errors its tolerance accepts")
    ax.grid(True, axis="x", alpha=0.3)
    report_plots.save_figure(plt, fig, out_dir, "errors",
                             "Error of each row (bar, coloured by status) and the errors its tolerance "
                             "accepts (grey; a lower bound's runs to the right edge)." +
                             (" Not shown (an absolute tolerance, in the table): %s." %
                              ", ".join(r["id"] for r in absolute) if absolute else ""), plots, dpi=DPI)


def report_from_validate_json(path, out_dir, title=None):
    """Writes parity.png/.svg, errors.png/.svg and report.html into out_dir from
    validate.json and the report.md beside it. Returns {"md", "html", "plots"}."""
    path, out_dir = Path(path), Path(out_dir)
    data, rows = load_validate(path)
    md = path.parent / "report.md"
    try:
        text = md.read_text(encoding="utf-8")
    except OSError as e:
        raise cr.InputError("cannot read %s (cohsim validate --report writes it): %s" % (md, e))
    plt = report_plots.pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = []
    plot_parity(plt, rows, out_dir, plots)
    plot_errors(plt, rows, out_dir, plots)
    title = title or "cohsim validate: predicted vs measured"
    blocks = [("h1", title), ("p", data.get("summary", "")),
              ("p", "The parity plot and the error of each row against its tolerance; the full table, the "
                    "parameters each row pins and the estimates no row pins follow (report.md). How to read "
                    "them: docs/validation.md in the cohsim tree."),
              ("figures",), ("h2", "report.md"), ("pre", text)]
    page = out_dir / "report.html"
    cr.atomic_write_text(page, report.to_html(blocks, plots, out_dir, title))
    return {"md": md, "html": page, "plots": [p for p, _ in plots]}
