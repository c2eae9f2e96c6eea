"""The report's run plots: cumulative success with its band, the suite swing, episode traces.

Every series arrives computed (:mod:`evalband.report._curves`, :func:`evalband.analysis.
noise_floor`, :mod:`evalband.report._traces`); a curve is drawn as one path and its band as
one polygon however many episodes the run has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.report import _format as fmt
from evalband.report._plots import plain_log_labels
from evalband.report._svg import OUTCOME_COLOURS, PALETTE, new_figure, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


@styled
def cumulative_plot(curves: Sequence[tuple[str, CumulativeCurve]],
                    stories: Sequence[StoryPoint] = ()) -> Figure:
    """Cumulative success rate per run as episodes accumulate, with the running Wilson band.

    Dotted verticals mark where the paired verdict of the first comparison changed
    (``stories``), each labelled with the interval that backed it then.
    """
    fig = new_figure(7.5, 3.6)
    ax = fig.add_subplot()
    longest = max(int(c.n[-1]) for _, c in curves)
    for j, (label, curve) in enumerate(curves):
        colour = PALETTE[j % len(PALETTE)]
        ax.fill_between(curve.n, 100 * curve.low, 100 * curve.high, color=colour, alpha=0.18,
                        lw=0, step=None)
        ax.plot(curve.n, 100 * curve.rate, color=colour, lw=1.5,
                label=f"{label}: {100 * curve.rate[-1]:.1f}% after {int(curve.n[-1]):,}")
    for point in stories[:-1][:8]:
        colour = _STORY_COLOURS[point.state]
        ax.axvline(point.pairs, color=colour, ls=":", lw=1.1)
        ax.annotate(f"{point.state}\nΔ {fmt.points(point)}",
                    (point.pairs, 0.98), xycoords=("data", "axes fraction"), xytext=(3, 0),
                    textcoords="offset points", va="top", fontsize=7, color=colour)
    if longest > 1000:
        ax.set_xscale("log")
        plain_log_labels(ax.xaxis)
    else:
        ax.xaxis.set_major_locator(_integers())
    if longest > 1:
        ax.set_xlim(1, longest)
    else:  # one episode: a dot, not a zero-width axis
        ax.set_xlim(0.5, 1.5)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("episodes counted (episode index first: every cell advances together)")
    ax.set_ylabel("cumulative success rate (%)")
    ax.grid(color="#ececec", linewidth=0.6)
    # above the axes: inside, a legend would sit on a curve (a low rate runs along the bottom)
    fig.legend(loc="outside upper left", ncols=min(len(curves), 2), frameon=False, fontsize=8)
    return fig


@styled
def swing_plot(runs: Sequence[RunView]) -> Figure:
    """Each suite's rate against the pooled Wilson band, one panel per run.

    Up to :data:`MAX_SUITE_DOTS` suites are dots (with the binomial +-2 sigma range of a
    suite around the pooled rate); more are a histogram of suite rates.
    """
    shown = [v for v in runs if v.noise is not None][:4]
    fig = new_figure(7.5, 3.0)
    axes = fig.subplots(1, len(shown), sharey=True, squeeze=False)[0]
    for j, (ax, view) in enumerate(zip(axes, shown, strict=True)):
        floor = view.noise
        assert floor is not None  # filtered above
        colour = PALETTE[runs.index(view) % len(PALETTE)]
        pooled = floor.pooled
        rates = np.array([100 * s.rate.estimate for s in floor.suites])
        sigma = floor.swing.binomial_std if floor.swing else 0.0
        if len(rates) <= MAX_SUITE_DOTS:
            ax.axhspan(100 * pooled.low, 100 * pooled.high, color=colour, alpha=0.2, lw=0,
                       label=f"pooled {fmt.level(floor.confidence)} band")
            ax.axhline(100 * pooled.estimate, color=colour, lw=1.0)
            for s in (-2, 2):
                ax.axhline(100 * (pooled.estimate + s * sigma), color="#999999", lw=0.8,
                           ls="--", label="±2σ of one suite" if s < 0 else None)
            inside = (rates >= 100 * pooled.low) & (rates <= 100 * pooled.high)
            x = np.arange(len(rates))
            ax.plot(x[inside], rates[inside], "o", color=colour, ms=4)
            ax.plot(x[~inside], rates[~inside], "o", color=OUTSIDE, ms=4.5,
                    label="outside the pooled band")
            ax.xaxis.set_major_locator(_integers())
            ax.set_xlabel(f"suite of {floor.suite_size} episodes")
        else:
            m = floor.suite_size  # rates live on the 1/m lattice: whole lattice steps per bin
            step = -(-m // 50)
            edges = (np.arange(0, m + step + 1, step) - 0.5) * 100 / m
            ax.hist(rates, bins=edges, orientation="horizontal", color=colour, alpha=0.75)
            ax.axhspan(100 * pooled.low, 100 * pooled.high, color=colour, alpha=0.2, lw=0)
            ax.axhline(100 * pooled.estimate, color=colour, lw=1.0)
            ax.set_xlabel(f"suites of {floor.suite_size} (count)")
        ax.set_title(view.run_id, fontsize=8.5, loc="left")
        ax.set_ylim(-2, 102)
        if j == 0:
            ax.set_ylabel("suite success rate (%)")
            handles, names = ax.get_legend_handles_labels()
            if handles:  # above the panels, never over a suite's dot
                fig.legend(handles, names, loc="outside upper left", ncols=len(handles),
                           frameon=False, fontsize=8)
    return fig


@styled
def trace_plot(traces: TraceSet) -> Figure:
    """Inspect episodes: reach1d position and velocity with the success bands, or PushT paths."""
    if traces.kind == "pusht":
        return _pusht(traces)
    from evalband.report._traces import REACH1D_GUIDES

    BOUNDARY, SUCCESS_POSITION, SUCCESS_VELOCITY = (  # noqa: N806 - the env's constants
        REACH1D_GUIDES[k] for k in ("boundary", "success_position", "success_velocity"))
    runs = list(traces.runs)
    fig = new_figure(7.5, 4.6)
    axes = fig.subplots(2, len(runs), sharex=True, sharey="row", squeeze=False)
    for col, run_id in enumerate(runs):
        top, bottom = axes[0][col], axes[1][col]
        top.axhspan(-SUCCESS_POSITION, SUCCESS_POSITION, color="#2e7d32", alpha=0.12, lw=0)
        bottom.axhspan(-SUCCESS_VELOCITY, SUCCESS_VELOCITY, color="#2e7d32", alpha=0.12, lw=0)
        for b in (-BOUNDARY, BOUNDARY):
            top.axhline(b, color="#c62828", lw=0.8, ls="--")
        for trace in (t for t in traces.traces if t.run_id == run_id):
            colour = OUTCOME_COLOURS.get(trace.outcome, "#333333")
            t = trace.series.get("t", [])
            top.plot(t, trace.series.get("x", []), color=colour, lw=1.2)
            bottom.plot(t, trace.series.get("v", []), color=colour, lw=1.2)
            if t:
                top.annotate(f"ep {trace.key[1]}", (t[-1], trace.series["x"][-1]), xytext=(2, 0),
                             textcoords="offset points", fontsize=6.5, color=colour)
        top.set_title(run_id, fontsize=8.5, loc="left")
        bottom.set_xlabel("time (s)")
    axes[0][0].set_ylabel("position x (m)")
    axes[1][0].set_ylabel("velocity v (m/s)")
    return fig


def _pusht(traces: TraceSet) -> Figure:
    from evalband.report._traces import PUSHT_GUIDES

    TABLE_HALF = PUSHT_GUIDES["table_half"]  # noqa: N806 - the env's constants
    TARGET = (PUSHT_GUIDES["target_x"], PUSHT_GUIDES["target_y"])  # noqa: N806

    runs = list(traces.runs)
    fig = new_figure(7.5, 3.9)
    axes = fig.subplots(1, len(runs), sharex=True, sharey=True, squeeze=False)[0]
    for ax, run_id in zip(axes, runs, strict=True):
        ax.add_patch(_square(TABLE_HALF))
        ax.plot([TARGET[0]], [TARGET[1]], "+", color="#1f4e8c", ms=12, mew=2)
        for trace in (t for t in traces.traces if t.run_id == run_id):
            colour = OUTCOME_COLOURS.get(trace.outcome, "#333333")
            s = trace.series
            ax.plot(s.get("tee_x", []), s.get("tee_y", []), color=colour, lw=1.4)
            ax.plot(s.get("pusher_x", []), s.get("pusher_y", []), color=colour, lw=0.8,
                    ls=":", alpha=0.8)
            if s.get("tee_x"):
                ax.plot([s["tee_x"][0]], [s["tee_y"][0]], "o", color=colour, ms=4)
                ax.plot([s["tee_x"][-1]], [s["tee_y"][-1]], "s", color=colour, ms=4)
        ax.set_aspect("equal")
        ax.set_xlim(-TABLE_HALF * 1.05, TABLE_HALF * 1.05)
        ax.set_ylim(-TABLE_HALF * 1.05, TABLE_HALF * 1.05)
        ax.set_title(run_id, fontsize=8.5, loc="left")
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    return fig


def _square(half: float) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((-half, -half), 2 * half, 2 * half, fill=False, ec="#999999", lw=0.8)


def _integers() -> Any:
    """A tick locator on whole numbers (episode counts, suite indices)."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)
