"""The metric sections of every renderer: one run's metric means, two runs' differences.

Pure functions of the stored results (:class:`~evalband.analysis.MetricSummary`,
:class:`~evalband.analysis.MetricRow`): the terminal, the Markdown and the HTML report read
the same headers and cells from here, so they say the same thing. A primary metric's row
carries its verdict (decided in the comparison's family); every other row says
``descriptive``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evalband.report import _format as fmt

if TYPE_CHECKING:
    from evalband.analysis import Comparison, MetricRow, MetricSummary

__all__ = [
    "METRIC_HEADERS",
    "SUMMARY_HEADERS",
    "metric_cells",
    "summary_cells",
    "interval_words",
    "metric_difference_plot",
    "metric_ecdf_plot",
    "MAX_ECDF_METRICS",
]

METRIC_HEADERS = ("metric", "slice", "n", "baseline", "candidate", "Δ candidate - baseline",
                  "p", "p adj", "verdict")
"""The columns of a comparison's metric table."""

SUMMARY_HEADERS = ("metric", "n", "mean", "interval", "better")
"""The columns of a run's metric table."""


def number(x: float | None) -> str:
    """A metric's value in 4 significant digits (``-`` when missing).

    >>> number(-1.23456), number(None), number(1234.5)
    ('-1.235', '-', '1234')
    """
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.4g}"


def _signed(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:+.4g}"


def interval_words(method: str, bounded: bool | None = None) -> str:
    """What an interval's method is, in words (the type it was chosen for).

    >>> interval_words("student-t", False)
    't (unbounded)'
    >>> interval_words("bootstrap-bca", True)
    'BCa bootstrap (bounded in [0, 1])'
    """
    words = {"student-t": "t", "bootstrap-bca": "BCa bootstrap",
             "bootstrap-percentile": "percentile bootstrap", "no spread": "no spread",
             "paired-t": "paired t", "welch-t": "Welch t",
             "paired-bootstrap-bca": "paired BCa bootstrap"}.get(method, method)
    if bounded is None:
        return words
    return f"{words} ({'bounded in [0, 1]' if bounded else 'unbounded'})"


def summary_cells(s: MetricSummary) -> list[str]:
    """One run's metric as table cells (:data:`SUMMARY_HEADERS`).

    >>> from evalband.analysis import MetricSummary
    >>> from evalband.stats import Interval
    >>> summary_cells(MetricSummary("return", 20, Interval(-3.2, -4.0, -2.4, "student-t",
    ...                                                     0.95), False))
    ['return', '20', '-3.2', '[-4, -2.4] 95% t (unbounded)', 'higher']
    """
    m = s.mean
    return [s.metric + (" (primary)" if s.primary else ""), str(s.n), number(m.estimate),
            f"[{number(m.low)}, {number(m.high)}] {fmt.level(m.confidence)} "
            f"{interval_words(m.method, s.bounded)}", s.direction]


def metric_cells(row: MetricRow) -> list[str]:
    """A comparison's metric row as table cells (:data:`METRIC_HEADERS`).

    A descriptive row's verdict cell says ``descriptive``; ``n`` is the matched pairs
    (``pairs``) or both runs' episodes.
    """
    d = row.delta
    n = (f"{row.n_pairs} pairs" if row.pairing == "paired"
         else f"{row.n_baseline} + {row.n_candidate}")
    delta = "-" if d is None else (
        f"{_signed(d.estimate)} [{_signed(d.low)}, {_signed(d.high)}] "
        f"{fmt.level(d.confidence)} {interval_words(d.method)}")
    if row.role == "primary":
        verdict = "inconclusive" if row.verdict is None else str(row.verdict)
        if row.reasons:
            verdict += f" ({'; '.join(row.reasons)})"
    else:
        verdict = "descriptive" + (f" ({'; '.join(row.reasons)})" if row.reasons else "")
    better = "" if row.direction == "higher" else " (lower is better)"
    return [row.metric + better, row.slice, n, number(row.mean_baseline),
            number(row.mean_candidate), delta, fmt.p_value(row.p_value),
            fmt.p_value(row.p_holm) if row.role == "primary" else "-", verdict]


def metric_difference_plot(c: Comparison) -> str:
    """An inline SVG of every metric row's difference with its interval, one panel a metric.

    Each metric gets its own horizontal axis (units differ); a dot is the mean difference,
    the bar its interval, a dashed line 0; red: a primary slice regressed, green improved.
    Empty when the comparison has no metric.
    """
    from html import escape

    rows = [r for r in c.metrics if r.delta is not None and math.isfinite(r.delta.low)]
    if not rows:
        return ""
    metrics = list(dict.fromkeys(r.metric for r in rows))
    width, label_w, row_h, head_h = 640, 200, 18, 22
    plot_w = width - label_w - 20
    parts: list[str] = []
    y = 4
    for metric in metrics:
        mine = [r for r in rows if r.metric == metric]
        assert all(r.delta is not None for r in mine)
        lows = [r.delta.low for r in mine if r.delta is not None] + [0.0]
        highs = [r.delta.high for r in mine if r.delta is not None] + [0.0]
        lo, hi = min(lows), max(highs)
        span = (hi - lo) or 1.0
        lo, hi = lo - 0.05 * span, hi + 0.05 * span

        def x(v: float, lo: float = lo, hi: float = hi) -> float:
            return label_w + (v - lo) / (hi - lo) * plot_w

        parts.append(f"<text x='4' y='{y + 14}' font-weight='bold'>Δ {escape(metric)} "
                     f"(candidate - baseline)</text>")
        y += head_h
        top = y
        for r in mine:
            d = r.delta
            assert d is not None
            colour = {"regressed": "#c0392b", "improved": "#27ae60"}.get(
                str(r.verdict) if r.verdict is not None else "", "#555")
            cy = y + row_h / 2
            parts.append(f"<text x='4' y='{cy + 4:.1f}'>{escape(r.slice)}"
                         f"{'' if r.role == 'primary' else ' (descriptive)'}</text>")
            parts.append(f"<line x1='{x(d.low):.1f}' x2='{x(d.high):.1f}' y1='{cy:.1f}' "
                         f"y2='{cy:.1f}' stroke='{colour}' stroke-width='2'/>")
            parts.append(f"<circle cx='{x(d.estimate):.1f}' cy='{cy:.1f}' r='3.5' "
                         f"fill='{colour}'><title>{escape(r.slice)}: {_signed(d.estimate)} "
                         f"[{_signed(d.low)}, {_signed(d.high)}]</title></circle>")
            y += row_h
        parts.append(f"<line x1='{x(0.0):.1f}' x2='{x(0.0):.1f}' y1='{top}' y2='{y}' "
                     "stroke='#999' stroke-dasharray='3 3'/>")
        parts.append(f"<text x='{label_w}' y='{y + 12}' font-size='10'>{number(lo)}</text>"
                     f"<text x='{width - 20}' y='{y + 12}' font-size='10' "
                     f"text-anchor='end'>{number(hi)}</text>")
        y += 20
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {y}' "
            f"width='{width}' height='{y}' font-family='sans-serif' font-size='12' "
            f"role='img'>{''.join(parts)}</svg>")


def metric_rows_of(comparisons: Sequence[Comparison]) -> bool:
    """Whether any of the comparisons has a metric row."""
    return any(c.metrics for c in comparisons)


MAX_ECDF_METRICS = 6
"""Metrics drawn in the distributions figure (the first ones, declared metrics first)."""

_RUN_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def metric_ecdf_plot(runs: Sequence[tuple[str, Mapping[str, Sequence[float]]]]) -> str:
    """An inline SVG of each metric's empirical distribution (ECDF), one step line per run.

    ``runs``: (label, metric name -> the run's values), baseline first. A metric with one
    value in every episode of every run is left out (nothing to see); at most
    :data:`MAX_ECDF_METRICS` metrics are drawn. Empty when nothing is left.

    >>> svg = metric_ecdf_plot([("a", {"return": [1.0, 2.0]}), ("b", {"return": [2.0, 4.0]})])
    >>> svg.startswith("<svg") and svg.count("<polyline") == 2
    True
    """
    from html import escape

    names: list[str] = []
    for _, values in runs:
        names.extend(n for n in values if n not in names)
    shown = []
    for name in names:
        every = [float(x) for _, values in runs for x in values.get(name, ())]
        if every and max(every) > min(every):
            shown.append((name, min(every), max(every)))
    shown = shown[:MAX_ECDF_METRICS]
    if not shown:
        return ""
    cols, panel_w, panel_h, pad = 2, 300, 150, 36
    rows = (len(shown) + cols - 1) // cols
    width, height = cols * (panel_w + pad) + 10, rows * (panel_h + pad + 14) + 24
    parts = []
    for i, (label, _) in enumerate(runs):
        colour = _RUN_COLOURS[i % len(_RUN_COLOURS)]
        parts.append(f"<rect x='{10 + 150 * i}' y='4' width='10' height='10' fill='{colour}'/>"
                     f"<text x='{24 + 150 * i}' y='13'>{escape(label[:20])}</text>")
    for k, (name, lo, hi) in enumerate(shown):
        x0 = 10 + (k % cols) * (panel_w + pad) + pad
        y0 = 24 + (k // cols) * (panel_h + pad + 14) + 14
        parts.append(f"<text x='{x0}' y='{y0 - 4}' font-weight='bold'>{escape(name)}</text>"
                     f"<rect x='{x0}' y='{y0}' width='{panel_w - pad}' height='{panel_h}' "
                     "fill='none' stroke='#ccc'/>"
                     f"<text x='{x0}' y='{y0 + panel_h + 12}' font-size='10'>{number(lo)}</text>"
                     f"<text x='{x0 + panel_w - pad}' y='{y0 + panel_h + 12}' font-size='10' "
                     f"text-anchor='end'>{number(hi)}</text>"
                     f"<text x='{x0 - 4}' y='{y0 + 8}' font-size='10' text-anchor='end'>1</text>"
                     f"<text x='{x0 - 4}' y='{y0 + panel_h}' font-size='10' "
                     "text-anchor='end'>0</text>")
        for i, (_, values) in enumerate(runs):
            xs = sorted(float(x) for x in values.get(name, ()))
            if not xs:
                continue
            points = [(lo, 0.0)]
            for j, x in enumerate(xs):
                points += [(x, j / len(xs)), (x, (j + 1) / len(xs))]
            points.append((hi, 1.0))
            path = " ".join(
                f"{x0 + (x - lo) / (hi - lo) * (panel_w - pad):.1f},"
                f"{y0 + panel_h - f * panel_h:.1f}" for x, f in points)
            parts.append(f"<polyline points='{path}' fill='none' stroke-width='1.5' "
                         f"stroke='{_RUN_COLOURS[i % len(_RUN_COLOURS)]}'/>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' "
            f"width='{width}' height='{height}' font-family='sans-serif' font-size='12' "
            f"role='img'>{''.join(parts)}</svg>")
