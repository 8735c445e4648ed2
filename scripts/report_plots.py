#!/usr/bin/python3
"""The plots of scripts/report.py (matplotlib, PNG + SVG), and the statistics
over runs that both the plots and the report's tables use.

A run is {"variant", "seed", "params": {name: value}, "metrics": {name: number},
...}, as report.load_csv() and report.load_compare() make them.
"""

import math
import re
import statistics
from pathlib import Path

import cohsim_results as cr


# ------------------------------------------------------------ analysis ---

def sort_key(v):
    """Orders values numerically where they parse as numbers, the rest after them by text."""
    n = cr.parse_number(v)
    return (0, n, "") if n is not None else (1, 0.0, str(v))


def param_values(runs, name, order=None):
    """Values of a swept param present in runs: in the sweep's own order when
    known (order: {name: [values]} from sweep.json), else sorted numerically."""
    present = {r["params"].get(name, "") for r in runs}
    given = [v for v in ((order or {}).get(name) or []) if v in present]
    return given + sorted(present - set(given), key=sort_key)


def is_pow2_like(values):
    """cpus-like: positive integers spanning >= 8x, most of them powers of two."""
    nums = [cr.parse_number(v) for v in values]
    if len(nums) < 3 or any(n is None or n <= 0 or n != int(n) for n in nums):
        return False
    pow2 = sum(1 for n in nums if int(n) & (int(n) - 1) == 0)
    return max(nums) / min(nums) >= 8 and pow2 * 2 >= len(nums)


def stats(values):
    """min, median, max and count of VALUES (None when empty)."""
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values),
            "max": max(values), "n": len(values)}


def group_stats(runs, variant, metric):
    """stats() of METRIC over the runs of VARIANT."""
    return stats([r["metrics"][metric] for r in runs
                  if r["variant"] == variant and metric in r["metrics"]])



def runs_at(runs, point):
    """The runs at POINT ({param: value})."""
    return [r for r in runs if all(r["params"].get(n) == v for n, v in point.items())]



# ------------------------------------------------------------ plots ---

def pyplot():
    """matplotlib.pyplot set up for files (Agg, 150 dpi, stable SVG ids)."""
    try:
        import matplotlib
    except ImportError:
        raise cr.InputError("report.py needs matplotlib: apt-get install python3-matplotlib "
                         "and run it with /usr/bin/python3")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.hashsalt": "cohsim", "figure.dpi": 150, "font.size": 9})
    return plt


def save_figure(plt, fig, out_dir, stem, caption, plots, dpi=None):
    """Writes STEM.png and STEM.svg and lists the PNG with its caption in PLOTS."""
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(str(out_dir / ("%s.%s" % (stem, ext))), format=ext, bbox_inches="tight",
                    metadata={"Date": None} if ext == "svg" else None, dpi=dpi or "figure")
    plt.close(fig)
    plots.append((stem + ".png", caption))


def file_stem(text):
    """TEXT made safe for a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "metric"


LOG_Y_SPAN = 10.0  # --log-y auto draws y on a log scale when max / min of the values exceeds this


def use_log_y(values, log_y):
    """Whether a y axis over VALUES is logarithmic: LOG_Y "on", "off", or "auto" (span > 10x)."""
    positive = [v for v in values if v > 0]
    if log_y != "auto":
        return log_y == "on" and bool(positive)
    return len(positive) == len(values) > 1 and max(positive) / min(positive) > LOG_Y_SPAN


def tick_label(v):
    """An axis tick in the tables' number format, without trailing zeros (4e5, 2.5e6, 1200)."""
    return re.sub(r"\.?0+(e|$)", r"\1", cr.fmt_num(v)) if "." in cr.fmt_num(v) else cr.fmt_num(v)


def sweep_title(data, metric):
    """METRIC: SCENARIO on PLATFORM, then the variants (the baseline named) and the --sets."""
    variants = ", ".join(v + (" (baseline)" if v == data.get("baseline") else "")
                         for v in data["variants"] if v)
    sets = ", ".join("%s=%s" % (k, cr.value_str(v)) for k, v in sorted((data.get("fixed") or {}).items()))
    return "%s: %s on %s%s%s" % (metric, Path(str(data["scenario"])).stem, data.get("platform") or "?",
                                 "\nvariants: " + variants if variants else "",
                                 "\n--set " + sets if sets else "")


def y_label(metric, headline):
    """The axis label of METRIC: its unit and which way is better, from its headline declaration."""
    h = headline.get(metric) or {}
    better = h.get("lower_is_better")
    return "%s%s%s" % (metric, " (%s)" % h["unit"] if h.get("unit") else "",
                       "" if better is None else (", lower is better" if better else ", higher is better"))


def plot_sweeps(plt, data, metrics, headline, measured, log_y, out_dir, plots):
    """One line plot per metric against the first swept parameter, a line per variant, the
    measured rows (MEASURED: {"variant", "metric", "x", "combo", "value", "tolerance_pct",
    "id"}) as points with their tolerance. Returns each plot's series (the plot data)."""
    runs, swept = data["runs"], data["swept"]
    xname, others = swept[0], swept[1:]
    xs = param_values(runs, xname, data.get("order"))
    nums = [cr.parse_number(x) for x in xs]
    numeric = all(n is not None for n in nums)
    log2 = numeric and is_pow2_like(xs)
    position = {x: (nums[i] if numeric else i) for i, x in enumerate(xs)}
    combos = sorted({tuple(r["params"].get(n, "") for n in others) for r in runs},
                    key=lambda c: [sort_key(v) for v in c])
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    styles = ["-", "--", ":", "-."]
    plot_data = []
    for m in metrics:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        series, ys = [], []
        for vi, variant in enumerate(data["variants"]):
            for ci, combo in enumerate(combos):
                pos, med, lo, hi, at = [], [], [], [], []
                for x in xs:
                    pt = dict(zip(others, combo), **{xname: x})
                    s = group_stats(runs_at(runs, pt), variant, m)
                    if s:
                        at.append(x)
                        pos.append(position[x])
                        med.append(s["median"])
                        lo.append(s["min"])
                        hi.append(s["max"])
                label = (variant or "model") + "".join(", %s=%s" % kv for kv in zip(others, combo))
                color = colors[vi % len(colors)]
                if pos:
                    line, = ax.plot(pos, med, marker="o", markersize=3, label=label, color=color,
                                    linestyle=styles[ci % len(styles)])
                    if any(a != b for a, b in zip(lo, hi)):
                        ax.fill_between(pos, lo, hi, alpha=0.2, color=color, linewidth=0)
                    series.append({"kind": "model", "variant": variant, "label": label, "x": at,
                                   "y": med, "low": lo, "high": hi})
                    ys += lo + hi
                rows = [r for r in measured if r["metric"] == m and r["combo"] == dict(zip(others, combo))
                        and r["variant"] in (variant, None) and r["x"] in position]
                if rows:
                    y = [r["value"] for r in rows]
                    err = [r["value"] * r["tolerance_pct"] / 100.0 for r in rows]
                    ax.errorbar([position[r["x"]] for r in rows], y, yerr=err, fmt="s", markersize=4,
                                color=color, markerfacecolor="white", capsize=3, linewidth=0.8,
                                label="%s measured (±%s%%)" % (label, cr.fmt_num(rows[0]["tolerance_pct"])))
                    series.append({"kind": "measured", "variant": variant, "label": label,
                                   "x": [r["x"] for r in rows], "y": y,
                                   "low": [a - e for a, e in zip(y, err)],
                                   "high": [a + e for a, e in zip(y, err)],
                                   "tolerance_pct": [r["tolerance_pct"] for r in rows],
                                   "rows": [r["id"] for r in rows],
                                   "fit": [r.get("fit", "predicted") for r in rows]})
                    ys += y
        if log2:
            ax.set_xscale("log", base=2)
        if numeric:
            ax.set_xticks([n for n in nums])
            ax.set_xticklabels(xs)
            ax.minorticks_off()
        else:
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels(xs)
        log = use_log_y(ys, log_y)
        if log:
            ax.set_yscale("log")
        elif ys and min(ys) >= 0:
            ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: tick_label(v)))
        ax.set_xlabel(xname + (" (log2 scale)" if log2 else ""))
        ax.set_ylabel(y_label(m, headline) + (" (log scale)" if log else ""))
        ax.set_title(sweep_title(data, m), fontsize=9)
        ax.grid(True, alpha=0.3, which="both" if log else "major")
        ax.legend(fontsize=7)
        stem = "metric_" + file_stem(m)
        save_figure(plt, fig, out_dir, stem,
                    "%s vs %s (median, band = min..max over seeds%s)"
                    % (m, xname, "; squares: measured, bars: tolerance"
                       if any(s["kind"] == "measured" for s in series) else ""), plots)
        plot_data.append({"plot": stem + ".png", "metric": m, "x": xname, "log_x": log2,
                          "log_y": log, "series": series})
    return plot_data


def plot_headline_bars(plt, data, runs, variants, baseline, headline, where, out_dir, plots):
    """One bar per variant for a headline metric: the median over seeds, error
    bars from min to max, the baseline hatched and named, the axis from zero."""
    m, unit = headline["metric"], headline.get("unit") or ""
    shown = [(v, group_stats(runs, v, m)) for v in variants]
    shown = [(v, s) for v, s in shown if s]
    if not shown:
        return
    base = dict(shown).get(baseline)
    fig, ax = plt.subplots(figsize=(6.4, 1.6 + 0.1 * len(shown) + 2.0))
    med = [s["median"] for _, s in shown]
    err = [[s["median"] - s["min"] for _, s in shown], [s["max"] - s["median"] for _, s in shown]]
    bars = ax.bar(range(len(shown)), med, color=["#9a9a9a" if v == baseline else "#2a7ab0" for v, _ in shown],
                  hatch=None, edgecolor="black", linewidth=0.6,
                  yerr=err if any(s["n"] > 1 for _, s in shown) else None, capsize=4)
    for bar, (v, s) in zip(bars, shown):
        if v == baseline:
            bar.set_hatch("//")
        p = None if v == baseline or not base else cr.pct_diff(s["median"], base["median"])
        ax.annotate(("%s\n(baseline)" % cr.fmt_num(s["median"])) if v == baseline
                    else "%s\n%s" % (cr.fmt_num(s["median"]), cr.fmt_pct(p)),
                    (bar.get_x() + bar.get_width() / 2, s["max"]), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels([v + (" (baseline)" if v == baseline else "") for v, _ in shown])
    ax.set_ylim(0, max(s["max"] for _, s in shown) * 1.25 or 1)
    better = headline.get("lower_is_better")
    ax.set_ylabel("%s%s%s" % (m, " (%s)" % unit if unit else "",
                              "" if better is None else (", lower is better" if better else ", higher is better")))
    nseeds = max(s["n"] for _, s in shown)
    sets = ", ".join("%s=%s" % (k, cr.value_str(x)) for k, x in sorted((data.get("overrides") or {}).items()))
    ax.set_title("%s: %s on %s%s%s" % (m, Path(str(data["scenario"])).stem, data.get("platform") or "?", where,
                                       " (--set %s)" % sets if sets else ""), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    save_figure(plt, fig, out_dir, "bars_" + file_stem(m),
                "%s per variant%s (%s)" % (m, where, "median, error bars min..max over %d seeds"
                                            % nseeds if nseeds > 1 else "one seed"), plots)


def plot_difference(plt, diffs, baseline, where, out_dir, plots):
    """Horizontal bars: percent difference of each variant's median to baseline."""
    items = [(m, v, p) for m, v, p in diffs if p is not None]
    if not items:
        return
    fig, ax = plt.subplots(figsize=(6.4, 1.0 + 0.28 * len(items)))
    labels = ["%s (%s)" % (m, v) for m, v, _ in items]
    vals = [p for _, _, p in items]
    ax.barh(range(len(items)), vals, color=["#2a7ab0" if p >= 0 else "#c8553d" for p in vals])
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("difference of median vs %s (%%)" % baseline)
    ax.set_title("Difference vs %s%s" % (baseline, where))
    ax.grid(True, axis="x", alpha=0.3)
    save_figure(plt, fig, out_dir, "difference",
                "Difference of medians vs %s%s" % (baseline, where), plots)


TORNADO_BARS = 20  # the widest inputs per tornado; the table lists every input


def plot_tornado(plt, sens, baseline, out_dir, plots):
    """The sensitivity tornado: each input's low and high end, widest first."""
    # Bars are the change from each input's own nominal run, in %: screened
    # inputs (short runs) and full-length ones share one axis that way. With
    # several variants a second set of panels shows each difference to the
    # baseline variant at each input's low/high end.
    groups = {}
    for s in sens:
        groups.setdefault((s.get("metric", ""), s.get("variant", "")), []).append(s)
    panels = []
    for (metric, variant), items in groups.items():
        full = [s for s in items if s.get("run", "full") == "full"]
        panels.append(("Sensitivity of %s (nominal %s)" % (metric, cr.fmt_num(nominal_value(full[0] if full else items[0]))),
                       "change of %s from nominal (%%)%s" % (metric, "  [%s]" % variant if variant else ""),
                       [(s, change_from_nominal(s, "value_low"), change_from_nominal(s, "value_high")) for s in items]))
    base = {(s.get("metric"), s.get("param")): s for s in sens if s.get("variant") == baseline}
    for (metric, variant), items in groups.items():
        pairs = [(s, base.get((metric, s.get("param")))) for s in items if variant != baseline]
        pairs = [(s, b) for s, b in pairs if b is not None]
        if not pairs:
            continue
        nominal = cr.pct_diff(nominal_value(pairs[0][0]), nominal_value(pairs[0][1]))
        bars = []
        for s, b in pairs:
            lo = cr.pct_diff(to_float(s.get("value_low")), to_float(b.get("value_low")))
            hi = cr.pct_diff(to_float(s.get("value_high")), to_float(b.get("value_high")))
            if None not in (lo, hi, nominal) and s.get("run", "full") == "full":
                bars.append((s, lo - nominal, hi - nominal))
        if bars:
            panels.append(("Difference %s vs %s (nominal %s)" % (variant, baseline, cr.fmt_pct(nominal)),
                           "%s: difference %s vs %s, change from nominal (points)" % (metric, variant, baseline),
                           bars))
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(6.4, sum(1.4 + 0.45 * min(len(p[2]), TORNADO_BARS) for p in panels)))
    for ax, (title, xlabel, bars) in zip(axes[:, 0], panels):
        shown = sorted(bars, key=lambda b: -abs(b[2] - b[1]))[:TORNADO_BARS]
        for i, (s, lo, hi) in enumerate(shown):
            ax.barh(i, lo, color="#c8553d", label="input low" if i == 0 else None)
            ax.barh(i, hi, color="#2a7ab0", label="input high" if i == 0 else None)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(shown)))
        ax.set_yticklabels(["%s\n[%s] (%s .. %s)" % (s.get("param"), input_kind(s), s.get("low"), s.get("high"))
                            for s, _, _ in shown], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title + ("" if len(bars) <= TORNADO_BARS else ": the %d widest of %d inputs"
                              % (TORNADO_BARS, len(bars))), fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    save_figure(plt, fig, out_dir, "tornado", "Tornado: %s at each input's low/high end"
                % ", ".join(sorted({m for m, _ in groups})), plots)


def input_kind(s):
    """The input's kind (older files varied platform estimates only); screened ones say so."""
    kind = s.get("kind") or "estimate"
    return kind + (", screened" if s.get("run") == "screen" else "")


def change_from_nominal(s, key):
    """The change in % of a sensitivity row's value at KEY from its nominal value."""
    p = cr.pct_diff(to_float(s.get(key)), nominal_value(s))
    return 0.0 if p is None or math.isnan(p) else p

def to_float(v):
    """V as a number (units parsed), NaN when it is none."""
    n = None if v is None else cr.parse_number(v)
    return float("nan") if n is None else n


def nominal_value(s):
    """A sensitivity row's nominal value (its baseline run, else the middle of low and high)."""
    b = s.get("baseline_value")
    if b is not None and cr.parse_number(b) is not None:
        return cr.parse_number(b)
    return (to_float(s.get("value_low")) + to_float(s.get("value_high"))) / 2


def plot_phases(plt, phase_names, table, variants, out_dir, plots):
    """Stacked bars of time by phase, one bar per variant."""
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.45 * len(variants)))
    left = [0.0] * len(variants)
    for ph in phase_names:
        vals = [table[v].get(ph, 0.0) for v in variants]
        ax.barh(range(len(variants)), vals, left=left, label=ph)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(variants)))
    ax.set_yticklabels(variants)
    ax.invert_yaxis()
    ax.set_xlabel("time (ns, median over seeds)")
    ax.set_title("Time by phase")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(plt, fig, out_dir, "phases", "Time by phase per variant", plots)
