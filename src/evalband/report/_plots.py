"""The report's slice plots: forest of rates, per-slice deltas, outcome breakdown, power.

Each function takes analysis results and returns the figure as inline SVG markup, written
by :mod:`evalband.report._svgplot` (no matplotlib). Nothing here computes a statistic: rates, bands,
deltas and sample sizes arrive computed. Element counts stay bounded: at most
:data:`MAX_ROWS` slices are drawn (the tables list them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evalband.report import _format as fmt
from evalband.report._svg import IMPROVED, NEUTRAL, OUTCOME_COLOURS, PALETTE, REGRESSED
from evalband.report._svgplot import Axes, Canvas, label_width, log_ticks, nice_ticks
from evalband.report._words import look

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.report._curves import PowerCurve
    from evalband.report._data import RunView
    from evalband.stats import Interval

__all__ = ["MAX_ROWS", "ForestRow", "forest_rows", "forest_plot",
           "delta_plot", "outcome_plot", "power_plot", "shown_rows", "log_axis"]

MAX_ROWS = 40
"""Most slices a plot draws."""

_OUTCOMES = ("success", "failure", "timeout", "error")


@dataclass(frozen=True)
class ForestRow:
    """One slice of the forest plot: per run, ``(estimate, low, high)`` or ``None``."""

    name: str
    kind: str
    rates: tuple[tuple[float, float, float] | None, ...]


def _triple(rate: Interval | None) -> tuple[float, float, float] | None:
    if rate is None:
        return None
    return (float(rate.estimate), float(rate.low), float(rate.high))


def forest_rows(runs: Sequence[RunView], comparisons: Sequence[Comparison]) -> list[ForestRow]:
    """The rows of the forest plot, from the comparisons (or the single run's slices).

    With comparisons, the baseline's rates come from the first comparison and each
    candidate's from its own; the whole run is the last row.
    """
    rows = []
    if comparisons:
        for i, row in enumerate(comparisons[0].slice_rows):
            rates = [_triple(row.rate_baseline)]
            rates += [_triple(c.slice_rows[i].rate_candidate) for c in comparisons]
            rows.append(ForestRow(row.name, row.kind, tuple(rates)))
        if rows and rows[-1].kind == "all":
            return rows
        overall = [v.summary.rate for v in runs]
        rows.append(ForestRow("all", "all", tuple(
            (r.estimate, r.low, r.high) if r else None for r in overall)))
        return rows
    for s in runs[0].slices:
        rate = s.summary.rate
        rows.append(ForestRow(s.name, s.kind, ((rate.estimate, rate.low, rate.high)
                                                if rate else None,)))
    return rows


def shown_rows(n: int) -> int:
    """How many of ``n`` slices a plot draws.

    >>> shown_rows(3), shown_rows(100)
    (3, 40)
    """
    return min(n, MAX_ROWS)


def _height(rows: float, per_row: float = 0.32, base: float = 1.3) -> float:
    return max(2.0, base + per_row * rows)


def _top(fig: Canvas, columns: int) -> float:
    """The top margin: room for the legend rows above the panel."""
    return 14 + 17 * fig.legend_rows(columns)


LABEL_SHARE = 0.4
"""The most of a plot's width its row labels take; a longer slice name is shortened in the
middle (its full name is in each marker's tooltip), so the plot keeps its drawing area."""


def shorten(name: str, chars: int) -> str:
    """``name`` cut to ``chars`` characters in the middle (``…``), kept whole if it fits.

    >>> shorten("embodiment=franka_panda", 12), shorten("all", 12)
    ('embod…_panda', 'all')
    """
    if len(name) <= chars:
        return name
    head = (chars - 1) // 2
    return name[:head] + "…" + name[len(name) - (chars - 1 - head):]


def _slice_axes(fig: Canvas, names: Sequence[str], xlim: tuple[float, float], *,
                top: float = 14, right: float = 16, size: float = 12.0) -> Axes:
    """A panel with one row per name (the first on top), its labels on the left."""
    most = max(8, int((LABEL_SHARE * fig.width - 12) / label_width(["x"], size)))
    names = [shorten(n, most) for n in names]
    left = 12 + label_width(names, size)
    ax = fig.axes(xlim, (-len(names) + 0.4, 0.6), left=left, top=top, right=right)
    xticks = [v for v in nice_ticks(*xlim) if xlim[0] <= v <= xlim[1]]
    ax.frame(xticks, [-float(i) for i in range(len(names))], ylabels=list(names), grid="x",
             ytick_size=size)
    return ax


def forest_plot(rows: Sequence[ForestRow], labels: Sequence[str],
                confidence: float = 0.95) -> str:
    """Per-slice success rates with Wilson bands, one marker per run (baseline first).

    >>> svg = forest_plot([ForestRow("all", "all", ((0.5, 0.4, 0.6),))], ["a (p)"])
    >>> svg.count('class="interval"')
    1
    """
    shown = list(rows[: shown_rows(len(rows))])
    m = len(labels)
    fig = Canvas(7.5, _height(len(shown) * max(1, m) / 1.6), "Per-slice success rates",
                 f"{len(shown)} slices, success rate (%) with its {fmt.level(confidence)} "
                 f"Wilson band for each of {m} run(s).")
    if m > 1:
        for j, label in enumerate(labels):
            fig.add_legend(label, PALETTE[j % len(PALETTE)], "dot")
    ax = _slice_axes(fig, [r.name for r in shown], (-2, 102), top=_top(fig, min(m, 3)))
    for j, label in enumerate(labels):
        offset = (j - (m - 1) / 2) * (0.7 / max(m, 1))
        colour = PALETTE[j % len(PALETTE)]
        for i, r in enumerate(shown):
            t = r.rates[j] if j < len(r.rates) else None
            if t:
                ax.interval(-i + offset, 100 * t[0], 100 * t[1], 100 * t[2], colour,
                            label=f"{r.name}, {label}: {100 * t[0]:.1f}% "
                                  f"[{100 * t[1]:.1f}, {100 * t[2]:.1f}]")
    ax.xlabel(f"success rate (%) with {fmt.level(confidence)} Wilson band")
    return fig.svg(min(m, 3))


def delta_plot(c: Comparison) -> str:
    """Per-slice paired differences (candidate - baseline) with intervals; the aggregate last.

    Regressed slices are red, improved green, the rest grey; a hollow marker is a possible
    regression (negative estimate, interval containing 0).
    """
    shown = [(r, r.delta) for r in c.slice_rows if r.delta is not None]
    shown = shown[: shown_rows(len(c.slice_rows))]
    names = [r.name for r, _ in shown] + ["aggregate ΔJ (last)"]
    agg = c.aggregate
    values = [100 * v for _, d in shown for v in (d.low, d.high)]
    values += [100 * agg.low, 100 * agg.high, 0.0]
    lo, hi = min(values), max(values)
    pad = 0.05 * (hi - lo or 1.0)
    fig = Canvas(7.5, _height(len(names)), f"Per-slice Δ, {c.candidate} - {c.baseline}",
                 f"Paired difference in points with its interval for {len(shown)} slices, "
                 "then the aggregate.")
    words = [str(row.verdict) for row, _ in shown]  # drawn right of the panel: room for them
    ax = _slice_axes(fig, names, (lo - pad, hi + pad), top=30,
                     right=max(70.0, 14 + label_width(words, 10)))
    ax.vline(0, "#333333", 0.8)
    for i, (row, d) in enumerate(shown):
        colour = look(row.verdict).colour
        hollow = bool(row.possible_regression and row.verdict != "regressed")
        ax.interval(-i, 100 * d.estimate, 100 * d.low, 100 * d.high, colour, size=5,
                    hollow=hollow, width=1.4, label=f"{row.name}: {row.verdict}")
        ax.text(ax.left + ax.width + 5, ax.sy(-i), row.verdict, colour, size=10)
    ax.interval(-len(shown), 100 * agg.delta, 100 * agg.low, 100 * agg.high, "#1f4e8c",
                size=5, shape="D", width=1.6, label="aggregate ΔJ")
    ax.xlabel(f"candidate - baseline (points), {int(round(100 * c.confidence))}% interval")
    ax.title(f"{c.candidate} vs {c.baseline}")
    return fig.svg()


def outcome_plot(runs: Sequence[RunView]) -> str:
    """Stacked shares of success / failure / timeout / error per slice and run."""
    kinds = [s for s in runs[0].slices]
    names = [s.name for s in kinds][: shown_rows(len(kinds))]
    labels, counts = [], []
    for name in names:
        for view in runs:
            match = next((s for s in view.slices if s.name == name), None)
            if match is None:
                continue
            labels.append(f"{name} · {view.run_id}" if len(runs) > 1 else name)
            counts.append([match.summary.counts.get(o, 0) for o in _OUTCOMES])
    data = np.array(counts, dtype=float).reshape(len(counts), len(_OUTCOMES))
    totals = data.sum(axis=1, keepdims=True)
    shares = np.divide(100 * data, totals, out=np.zeros_like(data), where=totals > 0)
    fig = Canvas(7.5, _height(len(labels), per_row=0.26), "Outcome breakdown",
                 f"Share of success, failure, timeout and error for {len(labels)} "
                 "slice and run rows.")
    present = [k for k, _ in enumerate(_OUTCOMES) if shares[:, k].any()]
    for k in present:
        fig.add_legend(_OUTCOMES[k], OUTCOME_COLOURS[_OUTCOMES[k]], "box")
    ax = _slice_axes(fig, labels, (0, 100), top=_top(fig, 4), right=62, size=10.0)
    for i, row in enumerate(shares):
        left = 0.0
        for k in present:
            if row[k] > 0:
                ax.hbar(-i, left, float(row[k]), 0.7, OUTCOME_COLOURS[_OUTCOMES[k]],
                        label=f"{labels[i]}: {_OUTCOMES[k]} {int(data[i, k])} "
                              f"({row[k]:.1f}%)")
            left += float(row[k])
        ax.text(ax.left + ax.width + 5, ax.sy(-i), f"n={int(data[i].sum())}", NEUTRAL, 9.5)
    ax.xlabel("share of attempted episodes (%)")
    return fig.svg(4)


def log_axis(lo: float, hi: float) -> tuple[tuple[float, float], list[float], list[float]]:
    """Limits padded to whole 2/5 steps around ``[lo, hi]``, major and minor log ticks.

    >>> log_axis(30, 700)[0]
    (20.0, 1000.0)
    """
    lo, hi = max(lo, 1e-12), max(hi, lo * 10)
    steps = [m * 10.0**e for e in range(int(np.floor(np.log10(lo))) - 1,
                                        int(np.ceil(np.log10(hi))) + 1) for m in (1, 2, 5)]
    a = max([s for s in steps if s <= lo], default=lo)
    b = min([s for s in steps if s >= hi], default=hi)
    major, minor = log_ticks(a, b)
    return (float(a), float(b)), major, minor


def power_plot(pc: PowerCurve) -> str:
    """Episodes per arm needed against the gap; this run's n and the gap it resolves."""
    gaps = (100 * pc.gaps).tolist()
    series = [np.asarray(pc.n_down), np.asarray(pc.n_up)]
    if pc.n_paired is not None and pc.discordant is not None:
        series.append(np.asarray(pc.n_paired))
    values = np.concatenate(series)
    values = values[np.isfinite(values) & (values > 0)]
    marks_n = [v for v in (pc.n, pc.n_slice) if v is not None and v >= 1]
    lo = float(min([*values.tolist(), *marks_n], default=1.0))
    hi = float(max([*values.tolist(), *marks_n], default=10.0))
    ylim, major, minor = log_axis(lo, hi)
    fig = Canvas(7.5, 3.4, "Power curve",
                 f"Episodes per arm needed at 80% power against the gap from the baseline "
                 f"rate {fmt.percent(pc.p)}; this run has n = {pc.n:,} per arm.")
    fig.add_legend("candidate worse by the gap", REGRESSED)
    fig.add_legend("candidate better by the gap", IMPROVED)
    if len(series) == 3:
        assert pc.discordant is not None
        fig.add_legend(f"matched pairs, discordant share {100 * pc.discordant:.0f}%",
                       "#1f4e8c", "dash")
    # the marked gaps this run resolves may lie past the curve's last gap: the axis holds them
    marked = [100 * g for g in (pc.mdd_down, pc.mdd_up, pc.mdd_slice) if g is not None]
    first, last = min([gaps[0], *marked]), max([gaps[-1], *marked])
    span = last - first
    ax = fig.axes((first - 0.03 * span, last + 0.03 * span), ylim, ylog=True,
                  top=_top(fig, 3), left=28 + label_width([f"{v:,.0f}" for v in major]))
    ax.frame([v for v in nice_ticks(*ax.xlim) if ax.xlim[0] <= v <= ax.xlim[1]], major,
             yminor=minor)
    ax.line(gaps, series[0].tolist(), REGRESSED, 1.6, label="candidate worse by the gap")
    ax.line(gaps, series[1].tolist(), IMPROVED, 1.6, label="candidate better by the gap")
    if len(series) == 3:
        ax.line(gaps, series[2].tolist(), "#1f4e8c", 1.4, dash="5 3", label="matched pairs")
    marks: list[tuple[float | None, int, str, str]] = []
    right = ax.left + ax.width - 4
    if pc.n >= 1:  # a run without a counted episode has no n to mark on a log axis
        ax.hline(pc.n, "#333333", 1.0, dash="1.5 2.5")
        ax.text(right, ax.sy(pc.n) - 3, f"this run: n = {pc.n:,} per arm", size=10.5,
                anchor="end", baseline="auto")
        marks += [(pc.mdd_down, pc.n, REGRESSED, "end"), (pc.mdd_up, pc.n, IMPROVED, "start")]
    if pc.n_slice is not None and pc.n_slice >= 1 and pc.n_slice != pc.n:
        ax.hline(pc.n_slice, "#777777", 0.9, dash="1.5 2.5")
        ax.text(right, ax.sy(pc.n_slice) + 3, f"smallest slice: n = {pc.n_slice:,}", "#555555",
                10.5, anchor="end", baseline="hanging")
        marks.append((pc.mdd_slice, pc.n_slice, "#555555", "start"))
    for gap, n, colour, side in marks:
        if gap is not None:
            ax.markers([100 * gap], [n], colour, 6, hollow=True)
            text = f"{fmt.gap(gap)} pts"
            x = ax.sx(100 * gap)
            room = label_width([text], 10.5) + 10  # kept inside the figure: flip at an edge
            if side == "start" and x + room > fig.width:
                side = "end"
            elif side == "end" and x - room < 0:
                side = "start"
            dx = -8 if side == "end" else 8
            ax.text(x + dx, ax.sy(n) - 8, text, colour, 10.5, anchor=side, baseline="auto")
    ax.xlabel(f"gap from the baseline rate {fmt.percent(pc.p)} (points)")
    ax.ylabel("episodes per arm (80% power)", ax.left - 14)
    return fig.svg(3)
