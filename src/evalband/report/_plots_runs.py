"""The report's run plots: cumulative success with its band, the suite swing, episode traces.

Every series arrives computed (:mod:`evalband.report._curves`, :func:`evalband.analysis.
noise_floor`, :mod:`evalband.report._traces`); a curve is drawn as one path and its band as
one polygon however many episodes the run has. Each returns inline SVG markup
(:mod:`evalband.report._svgplot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from evalband.report import _format as fmt
from evalband.report._plots import log_axis
from evalband.report._svg import OUTCOME_COLOURS, PALETTE
from evalband.report._svgplot import Axes, Canvas, integer_ticks, nice_ticks

if TYPE_CHECKING:
    from evalband.report._curves import CumulativeCurve, StoryPoint
    from evalband.report._data import RunView
    from evalband.report._traces import TraceSet

__all__ = ["cumulative_plot", "swing_plot", "trace_plot", "MAX_SUITE_DOTS"]

MAX_SUITE_DOTS = 120
"""Above this many suites the swing is drawn as a histogram, not a dot per suite."""
OUTSIDE = "#222222"
"""Suites outside the pooled band: dark, not red (red means a regression or a failure)."""
_STORY_COLOURS = {"candidate better": "#2e7d32", "baseline better": "#c62828",
                  "not established": "#777777"}


def _ticks(lim: tuple[float, float], integer: bool = False) -> list[float]:
    ticks = integer_ticks(*lim) if integer else nice_ticks(*lim)
    return [v for v in ticks if lim[0] - 1e-9 <= v <= lim[1] + 1e-9]


def cumulative_plot(curves: Sequence[tuple[str, CumulativeCurve]],
                    stories: Sequence[StoryPoint] = ()) -> str:
    """Cumulative success rate per run as episodes accumulate, with the running Wilson band.

    Dotted verticals mark where the paired verdict of the first comparison changed
    (``stories``), each labelled with the interval that backed it then.
    """
    longest = max(int(c.n[-1]) for _, c in curves)
    fig = Canvas(7.5, 3.6, "Cumulative success rate",
                 f"Success rate (%) of {len(curves)} run(s) after each number of counted "
                 f"episodes, up to {longest:,}, with the running Wilson band.")
    for j, (label, curve) in enumerate(curves):
        fig.add_legend(f"{label}: {100 * curve.rate[-1]:.1f}% after {int(curve.n[-1]):,}",
                       PALETTE[j % len(PALETTE)])
    columns = min(len(curves), 2)
    log = longest > 1000
    xlim = (1.0, float(longest)) if longest > 1 else (0.5, 1.5)
    top = 14 + 17 * fig.legend_rows(columns)
    if log:
        xlim, major, minor = log_axis(1.0, float(longest))
        xlim = (1.0, float(longest))
        major = [v for v in major if v <= longest]
        minor = [v for v in minor if v <= longest]
    ax = fig.axes(xlim, (-2, 102), xlog=log, top=top, left=56, right=28)
    if log:
        ax.frame(major, _ticks((-2, 102)), xminor=minor)
    else:
        ax.frame(_ticks(xlim, integer=True), _ticks((-2, 102)))
    for j, (_, curve) in enumerate(curves):
        colour = PALETTE[j % len(PALETTE)]
        n = curve.n.tolist()
        ax.band(n, (100 * curve.low).tolist(), (100 * curve.high).tolist(), colour, 0.18)
        if len(n) == 1:
            ax.markers(n, [100 * float(curve.rate[0])], colour, 4)
        ax.line(n, (100 * curve.rate).tolist(), colour, 1.5)
    for k, point in enumerate(stories[:-1][:8]):
        colour = _STORY_COLOURS[point.state]
        ax.vline(point.pairs, colour, 1.1, dash="1.5 2.5")
        # staggered down the panel: verdicts that changed close together stay readable
        ax.text(ax.sx(point.pairs) + 3, ax.top + 10 + 25 * (k % 6),
                f"{point.state}\nΔ {fmt.points(point)}", colour, 9.5, baseline="auto", halo=True)
    ax.xlabel("episodes counted (episode index first: every cell advances together)")
    ax.ylabel("cumulative success rate (%)", ax.left - 14)
    return fig.svg(columns)


def swing_plot(runs: Sequence[RunView]) -> str:
    """Each suite's rate against the pooled Wilson band, one panel per run.

    Up to :data:`MAX_SUITE_DOTS` suites are dots (with the binomial +-2 sigma range of a
    suite around the pooled rate); more are a histogram of suite rates.
    """
    shown = [v for v in runs if v.noise is not None][:4]
    fig = Canvas(7.5, 3.0, "Suite swing",
                 f"Success rate (%) of each consecutive suite against the pooled band, "
                 f"for {len(shown)} run(s).")
    first = shown[0].noise
    assert first is not None
    if len(first.suites) <= MAX_SUITE_DOTS:
        colour = PALETTE[runs.index(shown[0]) % len(PALETTE)]
        fig.add_legend(f"pooled {fmt.level(first.confidence)} band", colour, "box")
        fig.add_legend("±2σ of one suite", "#999999", "dash")
        fig.add_legend("outside the pooled band", OUTSIDE, "dot")
    top = 30 + 17 * fig.legend_rows(3)
    for j, view in enumerate(shown):
        floor = view.noise
        assert floor is not None  # filtered above
        colour = PALETTE[runs.index(view) % len(PALETTE)]
        pooled = floor.pooled
        rates = [100 * s.rate.estimate for s in floor.suites]
        sigma = floor.swing.binomial_std if floor.swing else 0.0
        kw = {"col": j, "cols": len(shown), "top": top, "left": 56, "gap": 18}
        ax: Axes
        if len(rates) <= MAX_SUITE_DOTS:
            xlim = (-0.6, max(len(rates) - 0.4, 0.6))
            ax = fig.axes(xlim, (-2, 102), **kw)  # type: ignore[arg-type]
            ax.frame(_ticks(xlim, integer=True), _ticks((-2, 102)), ytick_labels=j == 0)
            ax.hspan(100 * pooled.low, 100 * pooled.high, colour, 0.2)
            ax.hline(100 * pooled.estimate, colour, 1.0)
            for s in (-2, 2):
                ax.hline(100 * (pooled.estimate + s * sigma), "#999999", 0.8, dash="5 3")
            for i, rate in enumerate(rates):
                inside = 100 * pooled.low <= rate <= 100 * pooled.high
                ax.markers([i], [rate], colour if inside else OUTSIDE, 4 if inside else 4.5)
            ax.xlabel(f"suite of {floor.suite_size} episodes")
        else:
            m = floor.suite_size  # rates live on the 1/m lattice: whole lattice steps per bin
            step = -(-m // 50)
            edges = (np.arange(0, m + step + 1, step) - 0.5) * 100 / m
            counts, _ = np.histogram(rates, bins=edges)
            xlim = (0.0, float(max(int(counts.max()), 1)) * 1.05)
            ax = fig.axes(xlim, (-2, 102), **kw)  # type: ignore[arg-type]
            ax.frame(_ticks(xlim, integer=True), _ticks((-2, 102)), ytick_labels=j == 0)
            ax.hspan(100 * pooled.low, 100 * pooled.high, colour, 0.2)
            for count, a, b in zip(counts.tolist(), edges[:-1], edges[1:], strict=True):
                if count:
                    ax.hbar(float((a + b) / 2), 0.0, float(count), float(b - a), colour,
                            label=f"{count} suites at {max(a, 0):.0f}-{min(b, 100):.0f}%")
            ax.hline(100 * pooled.estimate, colour, 1.0)
            ax.xlabel(f"suites of {floor.suite_size} (count)")
        ax.title(view.run_id, 11.5)
        if j == 0:
            ax.ylabel("suite success rate (%)", ax.left - 14)
    return fig.svg(3)


def _limits(values: Sequence[float], pad: float = 0.05) -> tuple[float, float]:
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    span = (hi - lo) or 1.0
    return (lo - pad * span, hi + pad * span)


def trace_plot(traces: TraceSet) -> str:
    """Inspect episodes as the env family's trace spec says: series over time, or x/y paths."""
    draw = {"series": _series, "paths": _paths}.get(traces.spec.draw)
    if draw is None:
        from evalband.errors import EvalbandError

        raise EvalbandError(f"env family {traces.spec.family!r} declares trace drawing "
                            f"{traces.spec.draw!r}; expected 'series' or 'paths'")
    return draw(traces)


def _series(traces: TraceSet) -> str:
    """Rows of named series over time; per row a shaded band, dashed lines at +/- ``lines``."""
    spec = traces.spec
    rows = spec.options["rows"]
    runs = list(traces.runs)
    fig = Canvas(7.5, spec.height, "Episode inspection",
                 spec.figure.format(traces=len(traces.traces), runs=len(runs)))
    ts = [v for t in traces.traces for v in t.series.get("t", [])]
    tlim = _limits(ts, 0.02)
    limits = []
    for row in rows:
        values = [v for t in traces.traces for v in t.series.get(row["series"], [])]
        extent = row.get("lines", row.get("band"))
        limits.append(_limits([*values, -extent, extent]))
    for col, run_id in enumerate(runs):
        kw = {"col": col, "cols": len(runs), "rows": len(rows), "top": 30, "left": 62,
              "gap": 18, "vgap": 18, "right": 34}
        axes = [fig.axes(tlim, lim, row=i, **kw)  # type: ignore[arg-type]
                for i, lim in enumerate(limits)]
        for ax, lim in zip(axes, limits, strict=True):
            ax.frame(_ticks(tlim), _ticks(lim), ytick_labels=col == 0)
        for ax, row in zip(axes, rows, strict=True):
            if "band" in row:
                ax.hspan(-row["band"], row["band"], "#2e7d32", 0.12)
        for ax, row in zip(axes, rows, strict=True):
            for b in ((-row["lines"], row["lines"]) if "lines" in row else ()):
                ax.hline(b, "#c62828", 0.8, dash="5 3")
        for trace in (t for t in traces.traces if t.run_id == run_id):
            colour = OUTCOME_COLOURS.get(trace.outcome, "#333333")
            t = trace.series.get("t", [])
            label = f"{run_id} episode {trace.key[1]}: {trace.outcome}"
            for ax, row in zip(axes, rows, strict=True):
                ax.line(t, trace.series.get(row["series"], []), colour, 1.2, label=label)
            for ax, row in zip(axes, rows, strict=True):
                if row.get("mark_end") and t:
                    ax.text(ax.sx(t[-1]) + 2, ax.sy(trace.series[row["series"]][-1]),
                            f"ep {trace.key[1]}", colour, 8.5)
        axes[0].title(run_id, 11.5)
        axes[-1].xlabel("time (s)")
        if col == 0:
            for ax, row in zip(axes, rows, strict=True):
                ax.ylabel(row["label"], ax.left - 14)
    return fig.svg()


def _paths(traces: TraceSet) -> str:
    """x/y paths on a square table: ``path`` solid (start and end marked), ``companion`` dotted."""
    spec = traces.spec
    half = float(spec.options["half"])
    target = spec.options["target"]
    (px, py), (cx, cy) = spec.options["path"], spec.options["companion"]
    runs = list(traces.runs)
    fig = Canvas(7.5, spec.height, "Episode inspection",
                 spec.figure.format(traces=len(traces.traces), runs=len(runs)))
    lim = (-half * 1.05, half * 1.05)
    # equal aspect: square panels, centred in their share of the width
    side = min(fig.height - 30 - 46, (fig.width - 60 - 16 - 18 * (len(runs) - 1)) / len(runs))
    spare = fig.width - 60 - 16 - 18 * (len(runs) - 1) - side * len(runs)
    for col, run_id in enumerate(runs):
        ax = fig.axes(lim, lim, left=60 + spare / 2, right=16 + spare / 2, top=30,
                      bottom=fig.height - 30 - side, col=col, cols=len(runs), gap=18)
        ax.frame(_ticks(lim), _ticks(lim), ytick_labels=col == 0)
        ax.rect(-half, -half, half, half, "#999999")
        ax.markers([target[0]], [target[1]], "#1f4e8c", 12 / 1.4, shape="+")
        for trace in (t for t in traces.traces if t.run_id == run_id):
            colour = OUTCOME_COLOURS.get(trace.outcome, "#333333")
            s = trace.series
            label = f"{run_id} episode {trace.key[1]}: {trace.outcome}"
            ax.line(s.get(px, []), s.get(py, []), colour, 1.4, label=label)
            ax.line(s.get(cx, []), s.get(cy, []), colour, 0.8, dash="1.5 2",
                    opacity=0.8, cls="pusher")
            if s.get(px):
                ax.markers([s[px][0]], [s[py][0]], colour, 4)
                ax.markers([s[px][-1]], [s[py][-1]], colour, 4, shape="s")
        ax.title(run_id, 11.5)
        ax.xlabel("x (m)")
        if col == 0:
            ax.ylabel("y (m)", 44)  # left of the tick labels, inside the figure
    return fig.svg()
