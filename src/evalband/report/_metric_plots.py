"""The HTML report's metric distributions beside the ECDF: violins per run, paired differences.

* :func:`metric_violin_plot`: each metric's distribution per run as a violin (a kernel
  density estimate of its values, drawn on a histogram of 256 bins, so a run of a million
  episodes costs one pass), with the quartile box, the median (hollow circle), the mean
  (diamond) and, for up to :data:`MAX_POINTS` episodes, every value as a point.
* :func:`metric_pairs_plot`: each metric's differences candidate - baseline over matched
  episodes (the pairs the comparison's paired interval is computed from), as points and the
  quartile box, with 0 dashed and the comparison's overall interval of the mean difference
  under them.

Every label is inside its figure (legends above the panels, titles above each panel); no
number on the page is computed here that a table does not already say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from evalband.analysis._metrics import MetricRow
    from evalband.report._svgplot import Axes

__all__ = ["MAX_POINTS", "metric_pairs_plot", "metric_violin_plot"]

MAX_POINTS = 400
"""Most points drawn per run and metric (more are thinned to evenly spaced order statistics)."""

_BINS = 256
_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def _density(x: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray] | None:
    """A Gaussian KDE (Silverman's bandwidth) of ``x`` on a grid over ``[lo, hi]``.

    Computed on a 256-bin histogram (one pass over ``x``); ``None`` when ``x`` has no spread.
    """
    n = x.size
    q1, q3 = np.percentile(x, [25, 75])
    spread = min(float(np.std(x, ddof=1)) if n > 1 else 0.0, float(q3 - q1) / 1.349 or math.inf)
    if not spread or not math.isfinite(spread) or hi <= lo:
        return None
    bandwidth = 0.9 * spread * n ** -0.2
    counts, edges = np.histogram(x, bins=_BINS, range=(lo, hi))
    grid = (edges[:-1] + edges[1:]) / 2
    width = edges[1] - edges[0]
    reach = int(min(_BINS, math.ceil(4 * bandwidth / width)))
    offsets = np.arange(-reach, reach + 1) * width
    kernel = np.exp(-0.5 * (offsets / bandwidth) ** 2)
    density = np.convolve(counts.astype(np.float64), kernel)[reach:reach + _BINS]
    return grid, density / density.max()


def _thinned(x: np.ndarray) -> np.ndarray:
    """At most :data:`MAX_POINTS` of the sorted values, evenly spaced in order."""
    xs = np.sort(x)
    if xs.size <= MAX_POINTS:
        return xs
    return xs[np.linspace(0, xs.size - 1, MAX_POINTS).round().astype(np.int64)]


def _jitter(k: int, y: float, half: float) -> float:
    """A point's y: spread over ``y +- half`` by the golden-ratio sequence (no random draw)."""
    return y + half * (2 * ((k * 0.6180339887498949) % 1.0) - 1)


def _box(ax: Axes, x: np.ndarray, y: float, colour: str, thickness: float) -> None:
    """The quartile box, the median (hollow circle) and the mean (diamond) at row ``y``."""
    q1, median, q3 = (float(v) for v in np.percentile(x, [25, 50, 75]))
    below, above = y - thickness / 2, y + thickness / 2
    if ax.sy(above) > ax.sy(below):  # a y axis that grows downwards (rows listed top first)
        below, above = above, below
    ax.rect(q1, below, q3, above, "#333")
    ax.parts.append(ax.marker(median, y, "#333", 4.0, "o", hollow=True))
    ax.parts.append(ax.marker(float(x.mean()), y, colour, 4.0, "D"))


def metric_violin_plot(runs: Sequence[tuple[str, Mapping[str, Sequence[float]]]],
                       max_metrics: int = 6) -> str:
    """An inline SVG of each metric's distribution per run: violin, quartiles, points.

    ``runs``: (label, metric name -> the run's values), baseline first (as
    :func:`~evalband.report._metrics.metric_ecdf_plot` takes them). A metric with one value
    in every episode of every run is left out; at most ``max_metrics`` are drawn. Empty when
    nothing is left.

    >>> svg = metric_violin_plot([("a", {"return": [1.0, 2.0, 2.5]}),
    ...                           ("b", {"return": [2.0, 4.0, 3.0]})])
    >>> svg.count('class="band"'), svg.count('class="estimate"') == 0
    (2, True)
    """
    from evalband.report._metrics import spread_metrics
    from evalband.report._svgplot import Canvas, nice_ticks

    shown = spread_metrics(runs, max_metrics)
    if not shown:
        return ""
    cols = 2 if len(shown) > 1 else 1
    grid_rows = (len(shown) + cols - 1) // cols
    per_panel = 30 * len(runs) + 80
    fig = Canvas(7.5, (grid_rows * per_panel + 40) / 96, "metric distributions per run",
                 "each metric's values per run: a violin (kernel density), the quartile box, "
                 "the median (hollow circle), the mean (diamond) and the episodes as points")
    for i, (label, _) in enumerate(runs):
        fig.add_legend(label, _COLOURS[i % len(_COLOURS)], kind="box")
    top = 30 + 16 * fig.legend_rows(3)
    for k, (name, lo, hi) in enumerate(shown):
        pad = 0.04 * (hi - lo)
        ax = fig.axes((lo - pad, hi + pad), (len(runs) - 0.5, -0.5), col=k % cols, cols=cols,
                      row=k // cols, rows=grid_rows, top=top, left=16, gap=40, vgap=56,
                      bottom=36)
        ax.title(name)
        ax.frame(nice_ticks(lo, hi, 4), list(range(len(runs))), ytick_labels=False, grid="x")
        for i, (_, values) in enumerate(runs):
            x = np.asarray(values.get(name, ()), dtype=np.float64)
            x = x[np.isfinite(x)]
            if not x.size:
                continue
            colour = _COLOURS[i % len(_COLOURS)]
            shape = _density(x, lo - pad, hi + pad)
            if shape is not None:
                grid, d = shape
                ax.band(grid.tolist(), (i - 0.42 * d).tolist(), (i + 0.42 * d).tolist(),
                        colour, opacity=0.35)
            for j, v in enumerate(_thinned(x)):
                ax.parts.append(ax.marker(float(v), _jitter(j, i, 0.3), colour, 2.2,
                                          cls="point"))
            _box(ax, x, i, colour, 0.18)
    return fig.svg()


def metric_pairs_plot(title: str, differences: Mapping[str, Sequence[float]],
                      overall: Mapping[str, MetricRow]) -> str:
    """An inline SVG of each metric's paired differences (candidate - baseline), one panel each.

    ``differences``: metric -> the differences over matched episodes; ``overall``: metric ->
    the comparison's row whose interval is drawn under the points (its overall row, or its
    only slice). A metric with fewer than 2 pairs is left out. Empty when nothing is left.

    >>> from evalband.analysis._metrics import MetricRow
    >>> from evalband.stats import Difference
    >>> row = MetricRow("return", "all", "all", "descriptive", "higher", False, "paired", 3,
    ...                 3, 3, 1.0, 2.0, Difference(1.0, 0.2, 1.8, "paired-t", 0.95, True), 0.03)
    >>> svg = metric_pairs_plot("b - a", {"return": [0.5, 1.0, 1.5]}, {"return": row})
    >>> svg.count('class="interval"'), svg.count('class="point"'), svg.count('class="mark"')
    (1, 3, 2)
    """
    from evalband.report._svgplot import Canvas, nice_ticks

    shown = [(m, np.asarray(d, dtype=np.float64)) for m, d in differences.items()
             if len(d) >= 2]
    if not shown:
        return ""
    fig = Canvas(7.5, (len(shown) * 130 + 20) / 96, f"paired differences, {title}",
                 "each metric's difference per matched episode, the quartile box, the mean "
                 "(diamond) and under them the comparison's interval of the mean difference")
    for k, (metric, d) in enumerate(shown):
        row = overall.get(metric)
        delta = row.delta if row is not None else None
        ends = [float(d.min()), float(d.max()), 0.0]
        if delta is not None and math.isfinite(delta.low) and math.isfinite(delta.high):
            ends += [delta.low, delta.high]
        lo, hi = min(ends), max(ends)
        pad = 0.05 * ((hi - lo) or 1.0)
        ax = fig.axes((lo - pad, hi + pad), (1.0, -1.0), left=16, row=k, rows=len(shown),
                      top=30, bottom=36, vgap=60)
        ax.title(f"Δ {metric} per matched episode ({d.size} pairs)")
        ax.frame(nice_ticks(lo, hi, 5), [], grid="x")
        ax.vline(0.0, "#999", dash="3 3")
        for j, v in enumerate(_thinned(d)):
            ax.parts.append(ax.marker(float(v), _jitter(j, -0.35, 0.3), "#4c72b0", 2.2,
                                      cls="point"))
        _box(ax, d, -0.35, "#4c72b0", 0.25)
        if delta is not None and math.isfinite(delta.low) and row is not None:
            colour = {"regressed": "#c0392b", "improved": "#27ae60"}.get(
                str(row.verdict) if row.verdict is not None else "", "#555")
            ax.interval(0.55, delta.estimate, delta.low, delta.high, colour,
                        label=f"mean difference {row.slice}: {delta.estimate:.4g} "
                              f"[{delta.low:.4g}, {delta.high:.4g}]")
    return fig.svg()
