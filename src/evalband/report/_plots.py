"""The report's slice plots: forest of rates, per-slice deltas, outcome breakdown, power.

Each function takes analysis results and returns a matplotlib figure (convert it with
:func:`~evalband.report._svg.figure_svg`). Nothing here computes a statistic: rates, bands,
deltas and sample sizes arrive computed. Element counts stay bounded: at most
:data:`MAX_ROWS` slices are drawn (the tables list them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.report import _format as fmt
from evalband.report._svg import (
    IMPROVED,
    NEUTRAL,
    OUTCOME_COLOURS,
    PALETTE,
    REGRESSED,
    new_figure,
    styled,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from evalband.analysis import Comparison
    from evalband.report._curves import PowerCurve
    from evalband.report._data import RunView

__all__ = ["MAX_ROWS", "ForestRow", "plain_log_labels", "forest_rows", "forest_plot",
           "delta_plot", "outcome_plot", "power_plot", "shown_rows"]

MAX_ROWS = 40
"""Most slices a plot draws."""

_OUTCOMES = ("success", "failure", "timeout", "error")


@dataclass(frozen=True)
class ForestRow:
    """One slice of the forest plot: per run, ``(estimate, low, high)`` or ``None``."""

    name: str
    kind: str
    rates: tuple[tuple[float, float, float] | None, ...]


def _triple(rate: dict[str, Any] | None) -> tuple[float, float, float] | None:
    if not rate:
        return None
    return (float(rate["estimate"]), float(rate["low"]), float(rate["high"]))


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


def _slice_axis(ax: Axes, names: Sequence[str]) -> None:
    ax.set_yticks(-np.arange(len(names)), labels=list(names))
    ax.set_ylim(-len(names) + 0.4, 0.6)
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)


@styled
def forest_plot(rows: Sequence[ForestRow], labels: Sequence[str],
                confidence: float = 0.95) -> Figure:
    """Per-slice success rates with Wilson bands, one marker per run (baseline first)."""
    shown = list(rows[: shown_rows(len(rows))])
    fig = new_figure(7.5, _height(len(shown) * max(1, len(labels)) / 1.6))
    ax = fig.add_subplot()
    m = len(labels)
    for j, label in enumerate(labels):
        offset = (j - (m - 1) / 2) * (0.7 / max(m, 1))
        pts = [(i, r.rates[j]) for i, r in enumerate(shown) if j < len(r.rates) and r.rates[j]]
        if not pts:
            continue
        y = np.array([-i + offset for i, _ in pts])
        est = np.array([100 * t[0] for _, t in pts if t])
        err = np.array([[100 * (t[0] - t[1]) for _, t in pts if t],
                        [100 * (t[2] - t[0]) for _, t in pts if t]])
        ax.errorbar(est, y, xerr=err, fmt="o", color=PALETTE[j % len(PALETTE)], ms=4.5,
                    capsize=2.5, lw=1.3, label=label)
    _slice_axis(ax, [r.name for r in shown])
    ax.set_xlim(-2, 102)
    ax.set_xlabel(f"success rate (%) with {fmt.level(confidence)} Wilson band")
    if m > 1:
        fig.legend(loc="outside upper left", ncols=min(m, 3), frameon=False, fontsize=8)
    return fig


@styled
def delta_plot(c: Comparison) -> Figure:
    """Per-slice paired differences (candidate - baseline) with intervals; the aggregate last.

    Regressed slices are red, improved green, the rest grey; a hollow marker is a possible
    regression (negative estimate, interval containing 0).
    """
    shown = [r for r in c.slice_rows if r.delta][: shown_rows(len(c.slice_rows))]
    names = [r.name for r in shown] + ["aggregate ΔJ (last)"]
    fig = new_figure(7.5, _height(len(names)))
    ax = fig.add_subplot()
    ax.axvline(0, color="#333333", lw=0.8)
    for i, row in enumerate(shown):
        d = row.delta or {}
        colour = (REGRESSED if row.verdict == "regressed" else
                  IMPROVED if row.verdict == "improved" else NEUTRAL)
        hollow = row.possible_regression and row.verdict != "regressed"
        ax.errorbar([100 * d["estimate"]], [-i],
                    xerr=[[100 * (d["estimate"] - d["low"])], [100 * (d["high"] - d["estimate"])]],
                    fmt="o", color=colour, mfc="white" if hollow else colour, ms=5, capsize=2.5,
                    lw=1.4)
        ax.annotate(row.verdict, (1.0, -i), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=7.5,
                    color=colour)
    agg = c.aggregate
    y = -len(shown)
    ax.errorbar([100 * agg.delta], [y], xerr=[[100 * (agg.delta - agg.low)],
                                              [100 * (agg.high - agg.delta)]],
                fmt="D", color="#1f4e8c", ms=5, capsize=2.5, lw=1.6)
    _slice_axis(ax, names)
    ax.set_xlabel(f"candidate - baseline (points), {int(round(100 * c.confidence))}% interval")
    ax.set_title(f"{c.candidate} vs {c.baseline}", loc="left")
    return fig


@styled
def outcome_plot(runs: Sequence[RunView]) -> Figure:
    """Stacked shares of success / failure / timeout / error per slice and run."""
    kinds = [s for s in runs[0].slices]
    names = [s.name for s in kinds][: shown_rows(len(kinds))]
    labels, counts = [], []
    for name in names:
        for j, view in enumerate(runs):
            match = next((s for s in view.slices if s.name == name), None)
            if match is None:
                continue
            labels.append(f"{name} · {view.run_id}" if len(runs) > 1 else name)
            counts.append([match.summary.counts.get(o, 0) for o in _OUTCOMES] + [j])
    fig = new_figure(7.5, _height(len(labels), per_row=0.26))
    ax = fig.add_subplot()
    data = np.array([row[:4] for row in counts], dtype=float)
    totals = data.sum(axis=1, keepdims=True)
    shares = np.divide(100 * data, totals, out=np.zeros_like(data), where=totals > 0)
    left = np.zeros(len(labels))
    y = -np.arange(len(labels))
    for k, outcome in enumerate(_OUTCOMES):
        if not shares[:, k].any():
            continue
        ax.barh(y, shares[:, k], left=left, height=0.7, color=OUTCOME_COLOURS[outcome],
                label=outcome)
        left += shares[:, k]
    for i, row in enumerate(counts):
        ax.annotate(f"n={int(sum(row[:4]))}", (100, -i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=7, color=NEUTRAL)
    ax.set_yticks(y, labels=labels, fontsize=7.5)
    ax.set_ylim(-len(labels) + 0.4, 0.6)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of attempted episodes (%)")
    fig.legend(loc="outside upper left", ncols=4, frameon=False, fontsize=8)
    return fig


@styled
def power_plot(pc: PowerCurve) -> Figure:
    """Episodes per arm needed against the gap; this run's n and the gap it resolves."""
    fig = new_figure(7.5, 3.4)
    ax = fig.add_subplot()
    gaps = 100 * pc.gaps
    ax.plot(gaps, pc.n_down, color=REGRESSED, lw=1.6, label="candidate worse by the gap")
    ax.plot(gaps, pc.n_up, color=IMPROVED, lw=1.6, label="candidate better by the gap")
    if pc.n_paired is not None and pc.discordant is not None:
        ax.plot(gaps, pc.n_paired, color="#1f4e8c", lw=1.4, ls="--",
                label=f"matched pairs, discordant share {100 * pc.discordant:.0f}%")
    marks: list[tuple[float | None, int, str, str]] = []
    if pc.n >= 1:  # a run without a counted episode has no n to mark on a log axis
        ax.axhline(pc.n, color="#333333", lw=1.0, ls=":")
        ax.annotate(f"this run: n = {pc.n:,} per arm", (0.99, pc.n),
                    xycoords=("axes fraction", "data"), ha="right", va="bottom", fontsize=8)
        marks += [(pc.mdd_down, pc.n, REGRESSED, "right"), (pc.mdd_up, pc.n, IMPROVED, "left")]
    if pc.n_slice is not None and pc.n_slice >= 1 and pc.n_slice != pc.n:
        ax.axhline(pc.n_slice, color="#777777", lw=0.9, ls=":")
        ax.annotate(f"smallest slice: n = {pc.n_slice:,}", (0.99, pc.n_slice),
                    xycoords=("axes fraction", "data"), ha="right", va="top", fontsize=8,
                    color="#555555")
        marks.append((pc.mdd_slice, pc.n_slice, "#555555", "left"))
    for gap, n, colour, side in marks:
        if gap is not None:
            ax.plot([100 * gap], [n], "o", color=colour, ms=6, mfc="white", mew=1.6)
            ax.annotate(f"{fmt.gap(gap)} pts", (100 * gap, n),
                        xytext=(-6 if side == "right" else 6, 6), ha=side,
                        textcoords="offset points", fontsize=8, color=colour)
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis)
    ax.set_xlabel(f"gap from the baseline rate {fmt.percent(pc.p)} (points)")
    ax.set_ylabel("episodes per arm (80% power)")
    ax.grid(which="major", color="#e5e5e5", linewidth=0.6)
    fig.legend(loc="outside upper left", ncols=3, frameon=False, fontsize=8)
    return fig


def plain_log_labels(axis: Any) -> None:
    """``1,000`` instead of mathtext ``10^3`` on a log axis (mathtext is slow to lay out).

    Minor ticks only at 2 and 5 of each decade: every tick is an object matplotlib lays
    out, and the default eight per decade made the log plots the slowest in a report.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axis.set_minor_locator(LogLocator(base=10.0, subs=(2.0, 5.0)))
    axis.set_minor_formatter(NullFormatter())
