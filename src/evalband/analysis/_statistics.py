"""Per-slice statistics of a comparison: one registered function each.

A compared slice carries, besides its counts, rates, test and decision, the statistics
registered here (its ``extras``): each is one function decorated with
:func:`slice_statistic`, which gives its name in ``--json``, its type (the JSON Schema in
``docs/schemas/comparison.schema.json`` is generated from it), what it means, and optionally
its column in the slice table (terminal, Markdown, HTML: ``evalband.report._table``). The row
builder (:mod:`evalband.analysis._compare`) calls every registered statistic for every slice,
in registration order; a verdict rule may read one (the checks of
:data:`~evalband.analysis._verdicts.SLICE_CHECKS` read the intervention rates and the
latency). Adding a statistic is adding one function
here (and its test): the row, ``--json``, the schema and the tables follow.

A statistic reads a :class:`SliceData`: the slice's :class:`~evalband.analysis._pairs.PairTable`,
each run's :class:`ArmData` (the slice's episode counts and a per-run memo for what every
slice of the comparison shares, such as one pass over the run's timed successes), the panel
and the comparison's confidence. A name with ``{arm}`` registers the function once per run
(``baseline``, ``candidate``), the arm passed as its second argument.

>>> [s.name for s in STATISTICS][:3]
['unaided_rate_baseline', 'unaided_rate_candidate', 'intervention_rate_baseline']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from evalband.analysis._pairs import PairTable, RunColumns, pair_spans
from evalband.panel import Panel
from evalband.stats import Interval, interval

__all__ = [
    "StatisticColumn",
    "SliceStatistic",
    "STATISTICS",
    "slice_statistic",
    "statistic",
    "RunSide",
    "ArmData",
    "SliceData",
    "PairedTimeDelta",
    "compute_statistics",
    "wilson",
]

ARMS = ("baseline", "candidate")
_MISSING = object()


@dataclass(frozen=True)
class StatisticColumn:
    """How the slice table shows a statistic (see ``evalband.report._table.Column``).

    Attributes:
        key: the column's key (``columns=`` of the renderers selects by it).
        format: the name of its formatter in ``evalband.report._format`` (e.g.
            ``"signed_seconds"``).
        band: the value is a band (``estimate``, ``low``, ``high``): HTML writes it on two lines
            and sorts by its estimate.
        terminal: the terminal header (``str.format`` with ``level`` and ``interval``), or None.
        markdown: the Markdown header, or None.
        html: the HTML header and its second line, or None.
    """

    key: str
    format: str
    band: bool = False
    terminal: str | None = None
    markdown: str | None = None
    html: tuple[str, str] | None = None


@dataclass(frozen=True)
class SliceStatistic:
    """One registered statistic: its name, JSON type, meaning, function and column.

    ``arm``: for a statistic registered once per run, the run (``compute`` is then called as
    ``compute(data, data.<arm>)``; :func:`compute_statistics` does it).
    """

    name: str
    type: Any
    doc: str
    compute: Callable[..., Any]
    column: StatisticColumn | None = None
    arm: str | None = None


STATISTICS: list[SliceStatistic] = []
"""Every registered statistic, in registration order (the order of ``--json``)."""


def slice_statistic(
    name: str, type_: Any, *, doc: str, column: StatisticColumn | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a per-slice statistic (a decorator).

    Args:
        name: its key in ``--json``; with ``{arm}`` the function is registered once per run
            (``baseline``, ``candidate``) and called as ``fn(data, arm)``.
        type_: its JSON type as a Python type (``float | None``, a ``msgspec.Struct``...).
        doc: what it is, in one sentence (the schema's description).
        column: its column in the slice table, if it has one.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if "{arm}" in name:
            for arm in ARMS:
                _add(SliceStatistic(name.format(arm=arm), type_, doc.format(arm=arm), fn,
                                    column, arm))
        else:
            _add(SliceStatistic(name, type_, doc, fn, column))
        return fn

    return register


def _add(stat: SliceStatistic) -> None:
    if any(s.name == stat.name for s in STATISTICS):
        raise ValueError(f"a slice statistic named {stat.name!r} is registered already")
    STATISTICS.append(stat)


def statistic(name: str) -> SliceStatistic:
    """The registered statistic called ``name``.

    >>> statistic("latency_budget_ms").type
    float | None
    """
    for stat in STATISTICS:
        if stat.name == name:
            return stat
    raise KeyError(name)


# ---------------------------------------------------------------------------- inputs


class RunSide:
    """One run within a comparison: its columns and per-cell counts, shared by every slice.

    ``counts`` (:meth:`~evalband.analysis._pairs.RunColumns.cell_counts`, rows x cells):
    episodes, counted episodes (errors left out unless failures), counted episodes that
    succeeded unaided, counted episodes that were helped, counted successes. :meth:`memo`
    keeps what a statistic derives from the whole run once per comparison.
    """

    def __init__(self, columns: RunColumns, n_cells: int, errors_as_failures: bool) -> None:
        self.columns = columns
        self.n_cells = n_cells
        self.use = columns.counted(errors_as_failures)
        self.counts = columns.cell_counts(n_cells, errors_as_failures)
        self._memo: dict[Hashable, Any] = {}

    @classmethod
    def of(cls, columns: RunColumns, n_cells: int, errors_as_failures: bool) -> RunSide:
        """The run's side, kept with its columns while they live.

        A sweep of candidates or a report after a comparison reads the same run's sums
        without computing them twice.
        """
        sides = columns.sides
        side = sides.get((n_cells, errors_as_failures))
        if side is None:
            side = sides[n_cells, errors_as_failures] = cls(columns, n_cells, errors_as_failures)
        return side

    def slice_counts(self, members: NDArray[np.bool_]) -> list[tuple[int, int, int, int]]:
        """The run's episode counts per slice (``members``: slices x cells), kept per slices.

        Per slice: episodes, counted episodes, counted unaided successes, counted helped
        episodes.
        """
        key = ("slice counts", members.tobytes(), members.shape)
        found: list[tuple[int, int, int, int]] | None = self._memo.get(key)
        if found is None:
            found = self._memo[key] = [
                (e, n, u, h) for e, n, u, h in (members @ self.counts[:4].T).tolist()]
        return found

    def memo(self, key: Hashable, build: Callable[[RunSide], Any]) -> Any:
        """``build(self)``, computed once per run under ``key`` (kept with the run's side)."""
        found = self._memo.get(key, _MISSING)
        if found is _MISSING:
            found = self._memo[key] = build(self)
        return found




class ArmData(msgspec.Struct, frozen=True):
    """One run's side of a compared slice: its episode counts and the run they come from.

    (A frozen struct, as :class:`SliceData`: a comparison makes two per slice.)

    Attributes:
        side: the run (its columns and memo).
        members: which of the panel's cells are in the slice.
        episodes: the slice's episodes of this run.
        counted: the episodes its rate counts (errors left out unless counted as failures).
        unaided: counted episodes that succeeded without help.
        helped: counted episodes with an intervention or assistance.
        successes: the slice's successes of the rate (the :class:`PairTable`'s ``k``).
        n: the rate's denominator (the :class:`PairTable`'s ``n``).
        members_key: ``members.tobytes()`` when the caller made it already (both arms of a
            slice share it), else ``None``.
    """

    side: RunSide
    members: NDArray[np.bool_]
    episodes: int
    counted: int
    unaided: int
    helped: int
    successes: int
    n: int
    members_key: bytes | None = None

    @property
    def errors(self) -> int:
        """Error episodes left out of the rate."""
        return self.episodes - self.counted

    def of_slice(self, key: str, build: Callable[[RunSide], tuple[Any, Any]],
                 reduce: Callable[[Any], Any]) -> Any:
        """``reduce`` of the slice's part of a per-run array (``build`` gives ``(values, cells)``).

        A statistic of this run's episodes alone: kept with the run's side, per slice (its
        cells), so a run compared again computes it once.
        """
        kept = self.side._memo
        cells = self.members_key
        part = (key, reduce, self.members.tobytes() if cells is None else cells)
        found = kept.get(part, _MISSING)
        if found is _MISSING:
            values, cells = self.side.memo(key, build)
            found = kept[part] = reduce(values[self.members[cells]])
        return found


class SliceData(msgspec.Struct, frozen=True):
    """What a statistic (and a slice check) reads of one compared slice.

    Attributes:
        kind: ``"factor"``, ``"cell"`` or ``"all"``.
        name: the slice's name (``embodiment=franka_panda``).
        slices: its factor values.
        table: its pair table (counts of both runs, matched pair types).
        baseline: the baseline's side.
        candidate: the candidate's side.
        panel: the panel.
        confidence: the comparison's nominal confidence.
        shared: what a statistic derives from both runs at once, once per comparison.
    """

    kind: str
    name: str
    slices: Mapping[str, str]
    table: PairTable
    baseline: ArmData
    candidate: ArmData
    panel: Panel
    confidence: float
    shared: dict[str, Any] = msgspec.field(default_factory=dict)

    def memo(self, key: str, build: Callable[[SliceData], Any]) -> Any:
        """``build(self)`` computed once per comparison (every slice shares it)."""
        if key not in self.shared:
            self.shared[key] = build(self)
        return self.shared[key]


@lru_cache(maxsize=8192)
def wilson(k: int, n: int, confidence: float) -> Interval:
    """The Wilson band of ``k`` of ``n`` (memoised: the same counts recur; it is frozen)."""
    return interval(k, n, confidence=confidence)


def compute_statistics(data: SliceData) -> dict[str, Any]:
    """Every registered statistic of one slice, by name, in registration order."""
    arms = (data.baseline, data.candidate)
    out: dict[str, Any] = {}
    for name, compute, arm in _plan():
        out[name] = compute(data) if arm < 0 else compute(data, arms[arm])
    return out


_PLAN: list[tuple[str, Callable[..., Any], int]] = []


def _plan() -> list[tuple[str, Callable[..., Any], int]]:
    """:data:`STATISTICS` as (name, function, arm: 0 baseline, 1 candidate, -1 none).

    Made again when a statistic was registered since (registration only appends).
    """
    if len(_PLAN) != len(STATISTICS):
        _PLAN[:] = [(stat.name, stat.compute, -1 if stat.arm is None else ARMS.index(stat.arm))
                    for stat in STATISTICS]
    return _PLAN


# ---------------------------------------------------------------------------- the statistics


@slice_statistic("unaided_rate_{arm}", float | None,
                 doc="share of the {arm}'s counted episodes that succeeded without help")
def unaided_rate(data: SliceData, arm: ArmData) -> float | None:
    """Unaided successes over counted episodes (None without counted episodes)."""
    return arm.unaided / arm.counted if arm.counted else None


@slice_statistic("intervention_rate_{arm}", float | None,
                 doc="share of the {arm}'s counted episodes with an intervention or assistance")
def intervention_rate(data: SliceData, arm: ArmData) -> float | None:
    """Helped episodes over counted episodes (None without counted episodes)."""
    return arm.helped / arm.counted if arm.counted else None


@slice_statistic("inflated_{arm}", float | None,
                 doc="the {arm}'s success rate minus its unaided success rate (what help added)")
def inflated(data: SliceData, arm: ArmData) -> float | None:
    """Raw minus unaided success rate (None without episodes)."""
    unaided = unaided_rate(data, arm)
    return arm.successes / arm.n - unaided if arm.n and unaided is not None else None


def _latencies(side: RunSide) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    cols = side.columns
    measured = side.use & ~np.isnan(cols.latency_p95)
    return cols.latency_p95[measured], cols.cell[measured]


@slice_statistic("latency_p95_candidate_ms", float | None,
                 doc="95th percentile of the candidate's per-episode p95 policy latency, ms")
def latency_p95_candidate_ms(data: SliceData) -> float | None:
    """The 95th percentile of the slice's p95 latencies (None when none was measured)."""
    return data.candidate.of_slice("latency", _latencies, _p95)  # type: ignore[no-any-return]


def _p95(latencies: NDArray[np.float64]) -> float | None:
    return float(np.percentile(latencies, 95)) if latencies.size else None


@slice_statistic("latency_budget_ms", float | None,
                 doc="the tightest latency budget the panel sets for the slice's factor values")
def latency_budget_ms(data: SliceData) -> float | None:
    """The smallest budget keyed ``factor=value`` or ``value`` (None when none applies)."""
    budgets = data.panel.latency_budget_ms
    if not budgets:
        return None
    found = [budgets[key] for factor, value in data.slices.items()
             for key in (f"{factor}={value}", value) if key in budgets]
    return min(found) if found else None


def _timed(side: RunSide) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    cols = side.columns
    timed = side.use & cols.timed
    return cols.time_to_success[timed], cols.cell[timed]


@slice_statistic("mean_time_to_success_{arm}_s", float | None,
                 doc="mean time to success of the {arm}'s timed successes, seconds")
def mean_time_to_success(data: SliceData, arm: ArmData) -> float | None:
    """Mean of the slice's recorded times to success (None without one)."""
    return arm.of_slice("timed", _timed, _mean)  # type: ignore[no-any-return]


def _mean(times: NDArray[np.float64]) -> float | None:
    return float(np.add.reduce(times) / times.size) if times.size else None


class PairedTimeDelta(msgspec.Struct, frozen=True):
    """A paired mean difference in seconds with its Student t interval (``n`` pairs)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    method: str


class _PairedTimes:
    """Per cell: pairs where both succeeded with a recorded time (``count``), and their sums.

    ``total`` and ``squares`` sum ``d - shift`` and its square per cell, where ``d`` is
    candidate - baseline and ``shift`` the mean over every such pair (centred sums keep the
    variance exact to rounding). (A plain class with slots: a comparison makes one.)
    """

    __slots__ = ("_cells", "count", "shift", "squares", "total")

    def __init__(self, count: NDArray[np.int64], total: NDArray[Any],  # float64 both
                 squares: NDArray[Any], shift: float) -> None:
        self.count = count
        self.total = total
        self.squares = squares
        self.shift = shift
        self._cells: list[tuple[int, float, float]] = list(zip(
            count.tolist(), total.tolist(), squares.tolist(), strict=True))

    def sums(self, members: NDArray[np.bool_]) -> tuple[int, float, float]:
        """The pairs, their total and their squares over the cells in ``members``.

        Each sum as ``numpy.add.reduce`` of the cells' values in order adds them; a slice of
        one cell takes that cell's values as they are (a sum of one number is that number,
        to the bit), without a call into numpy per sum.
        """
        inside: list[bool] = members.tolist()
        if inside.count(True) == 1:
            return self._cells[inside.index(True)]
        return (int(np.add.reduce(self.count[members])),
                float(np.add.reduce(self.total[members])),
                float(np.add.reduce(self.squares[members])))


def _paired_times(data: SliceData) -> _PairedTimes:
    """The time-to-success differences of every pair where both episodes succeeded.

    Episodes pair by ``(cell, episode, repeat)``, as in
    :func:`~evalband.analysis._pairs.cell_tables`.
    """
    base, cand = data.baseline.side.columns, data.candidate.side.columns
    n_cells = data.baseline.side.n_cells
    spans = pair_spans(base, cand)
    # the same episodes: the pairs are where both have a time, taken in key order (the
    # order of the intersection below, so the sums below add in the same order)
    if base.same_keys(cand, spans, True):
        cell_b, ok_b, time_b = base.timed_by_key
        _, ok_c, time_c = cand.timed_by_key
        both = ok_b & ok_c
        cell = cell_b[both]
        d = (time_c - time_b)[both]  # elementwise: the same differences, one mask read
    else:
        ok_b, ok_c = base.timed, cand.timed
        kb, kc = base.keys(spans, True), cand.keys(spans, True)  # every record's key
        _, ib, ic = np.intersect1d(kb[ok_b], kc[ok_c], assume_unique=True,
                                   return_indices=True)
        cell = base.cell[ok_b][ib]
        d = cand.time_to_success[ok_c][ic] - base.time_to_success[ok_b][ib]
    shift = float(np.add.reduce(d)) / d.size if d.size else 0.0  # d.mean(), unwrapped
    d = d - shift
    return _PairedTimes(np.bincount(cell, minlength=n_cells),  # float64 sums
                        np.bincount(cell, weights=d, minlength=n_cells),
                        np.bincount(cell, weights=d * d, minlength=n_cells), shift)


_PLAYED_TO_THE_END = ("return", "final_step")
"""Success rules under which an episode plays to its end (no time to success)."""


@lru_cache(maxsize=4096)
def _t_quantile(df: int, confidence: float) -> float:
    """Student's t two-sided critical value (``scipy.special.stdtrit``, memoised: it iterates)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2))


@slice_statistic(
    "time_to_success_delta_s", PairedTimeDelta | None,
    doc="paired mean time-to-success difference, candidate - baseline, seconds, over pairs "
        "where both succeeded; Student t interval at the nominal confidence (not adjusted)",
    column=StatisticColumn(
        "time_delta", "signed_seconds", band=True, terminal="delta time to success s",
        markdown="Δ time to success, s ({level})",
        html=("Δ time to success", "s, paired t {level}, both succeeded")))
def time_to_success_delta_s(data: SliceData) -> PairedTimeDelta | None:
    """Mean time-to-success difference (candidate - baseline) over the slice's pairs.

    The pairs are those where both succeeded with a recorded time; the interval is
    Student's t on the paired differences, ``mean ± t(n-1) · sd / sqrt(n)`` (as
    ``scipy.stats.ttest_rel(...).confidence_interval``); ``None`` under two pairs, and
    ``None`` when the panel judges success at the episode's end (a ``return`` or
    ``final_step`` rule: every episode plays to its end, so a success's time is the
    episode's length, not a time to success, and the column is not shown).
    """
    if data.panel.success.rule in _PLAYED_TO_THE_END:
        return None
    times: _PairedTimes = data.memo("paired times", _paired_times)
    n, total, squares = times.sums(data.baseline.members)
    if n < 2:
        return None
    centred = total / n
    var = max(squares - total * centred, 0.0) / (n - 1)
    mean = times.shift + centred
    half = _t_quantile(n - 1, data.confidence) * math.sqrt(var / n)
    return PairedTimeDelta(mean, mean - half, mean + half, n, data.confidence,
                           "paired t, pairs where both succeeded")


@slice_statistic(
    "discordance", Interval | None,
    doc="share of the matched pairs on which exactly one run succeeded (the discordance a "
        "paired design assumes), with its Wilson band at the nominal confidence; null without "
        "matched pairs")
def discordance(data: SliceData) -> Interval | None:
    """Discordant matched pairs over matched pairs, with its Wilson band (None: no pair)."""
    t = data.table
    pairs = t.both + t.baseline_only + t.candidate_only + t.neither
    if not pairs:
        return None
    return wilson(t.baseline_only + t.candidate_only, pairs, data.confidence)
