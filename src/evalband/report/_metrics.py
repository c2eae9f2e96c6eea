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
    from evalband.analysis import Comparison
    from evalband.analysis._metrics import MetricRow, MetricSummary
    from evalband.stats import Interval

__all__ = [
    "METRIC_HEADERS",
    "SLICED_SUMMARY_HEADERS",
    "SUMMARY_HEADERS",
    "metric_cells",
    "summary_cells",
    "interval_words",
    "metric_difference_plot",
    "metric_ecdf_plot",
    "spread_metrics",
    "MAX_ECDF_METRICS",
    "LEVEL_HEADERS",
    "LEVEL_DIFFERENCE_HEADERS",
    "LEVEL_NOTE",
    "level_cells",
    "level_difference_cells",
]

METRIC_HEADERS = ("metric", "slice", "n", "baseline", "candidate", "Δ candidate - baseline",
                  "p", "p adj", "verdict")
"""The columns of a comparison's metric table."""

SUMMARY_HEADERS = ("metric", "n", "mean", "interval", "better")
"""The columns of a run's metric table."""

SLICED_SUMMARY_HEADERS = ("metric", "slice", "n", "mean", "interval", "better")
"""The columns of a run's metric table per slice (``show``: a panel with factors)."""


LEVEL_HEADERS = ("metric", "slice", "n", "level", "at level", "at least level")
"""The columns of a run's ordinal levels: each level's share and the share at it or above."""

LEVEL_DIFFERENCE_HEADERS = ("metric", "slice", "n", "at least level", "baseline", "candidate",
                            "Δ candidate - baseline (points)", "role")
"""The columns of a comparison's ordinal levels: the share at each level or above."""

LEVEL_NOTE = ("ordinal levels: each level's share of the non-error episodes and the share at "
              "that level or above, with Wilson intervals; the levels run from the lowest to "
              "the highest value seen; a comparison's differences in the share at least at "
              "each level use Newcombe's score interval (paired on matched episodes, else "
              "hybrid), at the nominal level, not adjusted: descriptive, never in the "
              "verdict's family (a primary ordinal metric is decided by its median)")
"""What the level tables are, in words (the terminal, Markdown and HTML print it)."""


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
    >>> interval_words("bootstrap-t", True)
    'studentised bootstrap (bounded in [0, 1])'
    """
    words = {"student-t": "t", "bootstrap-bca": "BCa bootstrap",
             "bootstrap-percentile": "percentile bootstrap", "no spread": "no spread",
             "paired-t": "paired t", "welch-t": "Welch t",
             "paired-bootstrap-bca": "paired BCa bootstrap",
             "bootstrap-t": "studentised bootstrap", "wilson": "Wilson score, 0/1 values",
             "order-statistic-median": "median, exact order statistics",
             "sign-test-median": "median of differences, exact sign test",
             "newcombe-paired": "Newcombe paired score",
             "newcombe-hybrid-score": "Newcombe hybrid score",
             }.get(method, method)
    if bounded is None:
        return words
    return f"{words} ({'bounded in [0, 1]' if bounded else 'unbounded'})"


def summary_cells(s: MetricSummary, *, sliced: bool = False) -> list[str]:
    """One run's metric as table cells (:data:`SUMMARY_HEADERS`; ``sliced``: with the slice).

    >>> from evalband.analysis._metrics import MetricSummary
    >>> from evalband.stats import Interval
    >>> summary_cells(MetricSummary("return", 20, Interval(-3.2, -4.0, -2.4, "student-t",
    ...                                                     0.95), False))
    ['return', '20', '-3.2', '[-4, -2.4] 95% t (unbounded)', 'higher']
    """
    m = s.mean
    estimate = number(m.estimate) + (" (median)" if s.estimand == "median" else "")
    return [s.metric + (" (primary)" if s.primary else ""), *([s.slice] if sliced else []),
            str(s.n), estimate,
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


def _share(band: Interval | None) -> str:
    if band is None:
        return "-"
    return f"{band.k}/{band.n} = {fmt.rate(band)} {fmt.level(band.confidence)} Wilson"


def level_cells(s: MetricSummary, *, sliced: bool = True) -> list[list[str]]:
    """An ordinal metric's levels as table rows (:data:`LEVEL_HEADERS`), one per level.

    ``sliced``: with the slice column (else it is left out). Empty for a metric with no
    levels (not ordinal, or values that are not whole numbers).

    >>> from evalband.analysis._metrics import MetricSummary
    >>> from evalband.analysis._ordinal import level_shares
    >>> from evalband.stats import Interval
    >>> import numpy as np
    >>> x = np.array([0.0, 1.0, 1.0, 3.0])
    >>> s = MetricSummary("grasp", 4, Interval(1.0, 0.0, 3.0, "order-statistic-median",
    ...                   0.95), False, levels=level_shares(x, [0, 1, 2, 3]))
    >>> [row[3:5] for row in level_cells(s)][1]
    ['1', '2/4 = 50.0% [15.0, 85.0] 95% Wilson']
    >>> level_cells(s)[3][5]
    '1/4 = 25.0% [4.6, 69.9] 95% Wilson'
    """
    return [[s.metric + (" (primary)" if s.primary else ""), *([s.slice] if sliced else []),
             str(s.n), str(x.level), _share(x.share),
             "all" if x.at_least is None else _share(x.at_least)] for x in s.levels]


def level_difference_cells(row: MetricRow) -> list[list[str]]:
    """An ordinal metric's per-level differences as table rows (:data:`LEVEL_DIFFERENCE_HEADERS`).

    One row per level above the lowest: both runs' share at that level or above (over the
    matched episodes when they pair), the difference in points with its interval, and
    ``descriptive`` (also for a primary metric: its decision is the median's).
    """
    n = (f"{row.n_pairs} pairs" if row.pairing == "paired"
         else f"{row.n_baseline} + {row.n_candidate}")
    out = []
    for x in row.levels:
        d = x.delta
        delta = "-" if d is None else (f"{fmt.points(d)} {fmt.level(d.confidence)} "
                                       f"{interval_words(d.method)}")
        out.append([row.metric, row.slice, n, f"≥ {x.level}", fmt.percent(x.at_least_baseline),
                    fmt.percent(x.at_least_candidate), delta, "descriptive"])
    return out


def metric_difference_plot(c: Comparison) -> str:
    """An inline SVG of every metric row's difference with its interval, one panel a metric.

    Each metric gets its own horizontal axis (units differ); a dot is the mean difference,
    the bar its interval, a dashed line 0; red: a primary slice regressed, green improved,
    grey: not decided or descriptive. Empty when the comparison has no difference to draw.
    """
    from evalband.report._svgplot import Canvas, label_width, nice_ticks

    rows = [r for r in c.metrics if r.delta is not None and math.isfinite(r.delta.low)]
    if not rows:
        return ""
    metrics = list(dict.fromkeys(r.metric for r in rows))
    most = max(sum(r.metric == m for r in rows) for m in metrics)
    labels = [r.slice + ("" if r.role == "primary" else " (descriptive)") for r in rows]
    left = min(label_width(labels) + 16, 320.0)
    fig = Canvas(7.5, (len(metrics) * (most * 18 + 70) + 20) / 96,
                 f"metric differences, {c.candidate} - {c.baseline}",
                 "each metric's mean difference per slice with its interval")
    for k, metric in enumerate(metrics):
        mine = [r for r in rows if r.metric == metric]
        lows = [r.delta.low for r in mine if r.delta is not None] + [0.0]
        highs = [r.delta.high for r in mine if r.delta is not None] + [0.0]
        lo, hi = min(lows), max(highs)
        span = (hi - lo) or 1.0
        ticks = nice_ticks(lo - 0.05 * span, hi + 0.05 * span, 5)
        ax = fig.axes((min(ticks[0], lo), max(ticks[-1], hi)), (len(mine) - 0.5, -0.5),
                      left=left, row=k, rows=len(metrics), top=24, bottom=40, vgap=56)
        ax.title(f"Δ {metric} (candidate - baseline)")
        ax.frame(ticks, list(range(len(mine))),
                 ylabels=[r.slice + ("" if r.role == "primary" else " (descriptive)")
                          for r in mine], grid="x")
        ax.vline(0.0, "#999", dash="3 3")
        for y, r in enumerate(mine):
            d = r.delta
            assert d is not None
            colour = {"regressed": "#c0392b", "improved": "#27ae60"}.get(
                str(r.verdict) if r.verdict is not None else "", "#555")
            ax.interval(y, d.estimate, d.low, d.high, colour,
                        label=f"{r.slice}: {_signed(d.estimate)} [{_signed(d.low)}, "
                              f"{_signed(d.high)}]")
    return fig.svg()


def metric_rows_of(comparisons: Sequence[Comparison]) -> bool:
    """Whether any of the comparisons has a metric row."""
    return any(c.metrics for c in comparisons)


MAX_ECDF_METRICS = 6
"""Metrics drawn in the distributions figure (the first ones, declared metrics first)."""

_RUN_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def spread_metrics(runs: Sequence[tuple[str, Mapping[str, Sequence[float]]]],
                   limit: int = MAX_ECDF_METRICS) -> list[tuple[str, float, float]]:
    """The metrics a distribution figure draws, with their range over every run.

    In the runs' order (declared metrics first); a metric with one value in every episode of
    every run is left out (nothing to see); at most ``limit``.

    >>> spread_metrics([("a", {"x": [1.0, 1.0], "y": [0.0, 2.0]}), ("b", {"y": [3.0]})])
    [('y', 0.0, 3.0)]
    """
    names: list[str] = []
    for _, values in runs:
        names.extend(n for n in values if n not in names)
    shown = []
    for name in names:
        every = [float(x) for _, values in runs for x in values.get(name, ())]
        if every and max(every) > min(every):
            shown.append((name, min(every), max(every)))
    return shown[:limit]


def metric_ecdf_plot(runs: Sequence[tuple[str, Mapping[str, Sequence[float]]]]) -> str:
    """An inline SVG of each metric's empirical distribution (ECDF), one step line per run.

    ``runs``: (label, metric name -> the run's values), baseline first. A metric with one
    value in every episode of every run is left out (nothing to see); at most
    :data:`MAX_ECDF_METRICS` metrics are drawn. Empty when nothing is left.

    >>> svg = metric_ecdf_plot([("a", {"return": [1.0, 2.0]}), ("b", {"return": [2.0, 4.0]})])
    >>> svg.startswith("<svg") and svg.count('class="series"') == 2
    True
    """
    from evalband.report._svgplot import Canvas, nice_ticks

    shown = spread_metrics(runs)
    if not shown:
        return ""
    cols = 2 if len(shown) > 1 else 1
    grid_rows = (len(shown) + cols - 1) // cols
    fig = Canvas(7.5, (grid_rows * 190 + 40) / 96, "metric distributions",
                 "each metric's empirical cumulative distribution, one line per run")
    for i, (label, _) in enumerate(runs):
        fig.add_legend(label, _RUN_COLOURS[i % len(_RUN_COLOURS)])
    top = 30 + 16 * fig.legend_rows(3)
    for k, (name, lo, hi) in enumerate(shown):
        ax = fig.axes((lo, hi), (0.0, 1.0), col=k % cols, cols=cols, row=k // cols,
                      rows=grid_rows, top=top, left=44, gap=44, vgap=56, bottom=36)
        ax.title(name)
        ax.frame(nice_ticks(lo, hi, 4), [0.0, 0.5, 1.0])
        for i, (label, values) in enumerate(runs):
            xs = sorted(float(x) for x in values.get(name, ()))
            if not xs:
                continue
            px, py = [lo], [0.0]
            for j, x in enumerate(xs):
                px += [x, x]
                py += [j / len(xs), (j + 1) / len(xs)]
            px.append(hi)
            py.append(1.0)
            ax.line(px, py, _RUN_COLOURS[i % len(_RUN_COLOURS)], label=label)
    return fig.svg()
