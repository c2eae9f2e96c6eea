"""The series the plots draw, read off counts with :mod:`evalband.stats` (no formula here).

* the cumulative success rate as episodes accumulate, with the Wilson band of each prefix,
  on a grid of at most :data:`MAX_POINTS` prefixes (a 100,000-episode run is never drawn
  point by point);
* the running paired verdict of a comparison: where, as matched pairs accumulated, the
  paired interval's verdict changed (seed 004's "moments a story was believed");
* the power curve: episodes per arm that each gap needs (:func:`evalband.stats.sample_size`)
  and the gap this run's n resolves (:func:`evalband.stats.minimum_detectable_difference`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from evalband.report._data import RunView

__all__ = [
    "MAX_POINTS",
    "CumulativeCurve",
    "StoryPoint",
    "PowerCurve",
    "accumulation_order",
    "prefix_grid",
    "cumulative_curve",
    "running_verdicts",
    "power_curve",
]

MAX_POINTS = 500
"""Most prefixes a cumulative curve is evaluated at."""


@dataclass(frozen=True)
class CumulativeCurve:
    """Success rate and Wilson band after the first ``n[i]`` counted episodes."""

    n: NDArray[np.int64]
    k: NDArray[np.int64]
    rate: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]


@dataclass(frozen=True)
class StoryPoint:
    """The running paired verdict after ``pairs`` matched pairs: where it changed.

    ``state`` is ``"candidate better"``, ``"baseline better"`` or ``"not established"``;
    ``estimate``, ``low`` and ``high`` are the paired difference (candidate - baseline).
    """

    pairs: int
    state: str
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class PowerCurve:
    """Episodes per arm needed against the gap, around the baseline rate ``p``.

    ``n_up``/``n_down`` are the unpaired sample sizes for a candidate ``gap`` above/below
    ``p`` (NaN where no such rate exists); ``n_paired`` the matched-pairs size with the
    observed discordant share (``None`` without pairs). ``mdd_*`` are the gaps this run's
    ``n`` (and the smallest slice's ``n_slice``, in ``slice_direction``) resolve at 80%
    power, ``None`` where none does.
    """

    p: float
    gaps: NDArray[np.float64]
    n_up: NDArray[np.float64]
    n_down: NDArray[np.float64]
    n_paired: NDArray[np.float64] | None
    discordant: float | None
    n: int
    mdd_up: float | None
    mdd_down: float | None
    mdd_paired: float | None
    n_slice: int | None
    mdd_slice: float | None
    confidence: float
    slice_direction: str = "down"


def accumulation_order(record: EpisodeRecord) -> tuple[int, int, str]:
    """Sort key: episode index first, so every cell advances together (a balanced prefix).

    >>> from evalband.episode import EpisodeRecord
    >>> r = EpisodeRecord("r", "p", "f", "c=b", 3, 1, 0, "success", True, False, 1)
    >>> accumulation_order(r)
    (3, 1, 'c=b')
    """
    return (record.episode, record.repeat, record.cell)


def prefix_grid(total: int, points: int = MAX_POINTS) -> NDArray[np.int64]:
    """Prefix lengths ``1..total`` to evaluate: all of them, or at most ``points``.

    Past ``points`` the grid mixes a geometric half (the early, fast-moving part) with a
    regular half, and always ends at ``total``.

    >>> prefix_grid(5).tolist()
    [1, 2, 3, 4, 5]
    >>> g = prefix_grid(100_000)
    >>> len(g) <= 500, int(g[0]), int(g[-1])
    (True, 1, 100000)
    """
    if total <= 0:
        return np.zeros(0, dtype=np.int64)
    if total <= points:
        return np.arange(1, total + 1, dtype=np.int64)
    half = points // 2
    geo = np.geomspace(1, total, half)
    lin = np.linspace(1, total, points - half)
    grid = np.unique(np.rint(np.r_[geo, lin]).astype(np.int64))
    return grid[(grid >= 1) & (grid <= total)]


def cumulative_curve(
    records: Sequence[EpisodeRecord],
    *,
    errors_as_failures: bool = False,
    confidence: float = 0.95,
    points: int = MAX_POINTS,
) -> CumulativeCurve | None:
    """The success rate of every prefix on :func:`prefix_grid`, with its Wilson band.

    Episodes are counted in :func:`accumulation_order`; errors are left out unless
    ``errors_as_failures`` (as in the run's summary). ``None`` with no counted episode.

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, o: EpisodeRecord("r", "p", "f", "", i, 0, i, o, True, False, 1)
    >>> c = cumulative_curve([rec(0, "success"), rec(1, "failure")])
    >>> c.n.tolist(), c.rate.tolist()
    ([1, 2], [1.0, 0.5])
    """
    from evalband.analysis._pairs import stored_columns
    from evalband.analysis._summary import counted
    from evalband.stats import interval_bounds

    columns = stored_columns(records)
    if columns is not None:  # a stored run not read as records: its columns
        return _cumulative_columns(columns, errors_as_failures, confidence, points)
    rows = counted(records, errors_as_failures)
    n = len(rows)
    if not n:
        return None
    code = {cell: i for i, cell in enumerate(sorted({r.cell for r in rows}))}
    # accumulation_order as one numpy sort: episode, then repeat, then cell
    order = np.lexsort((np.fromiter((code[r.cell] for r in rows), dtype=np.int64, count=n),
                        np.fromiter((r.repeat for r in rows), dtype=np.int64, count=n),
                        np.fromiter((r.episode for r in rows), dtype=np.int64, count=n)))
    won = np.fromiter((r.outcome is Outcome.SUCCESS for r in rows), dtype=np.int64, count=n)
    wins = np.cumsum(won[order])
    grid = prefix_grid(n, points)
    k = wins[grid - 1]
    low, high = interval_bounds(k, grid, "wilson", confidence)  # every prefix in one call
    return CumulativeCurve(n=grid, k=k, rate=k / grid, low=low, high=high)


def _cumulative_columns(
    columns: Mapping[str, NDArray[Any]], errors_as_failures: bool, confidence: float,
    points: int,
) -> CumulativeCurve | None:
    """:func:`cumulative_curve` of a stored run's columns (the same curve, no records)."""
    from evalband.analysis._pairs import cell_ranks
    from evalband.stats import interval_bounds
    from evalband.store._columns import OUTCOME_CODES

    outcome = columns["outcome"]
    use = (np.ones(outcome.size, dtype=bool) if errors_as_failures
           else outcome != OUTCOME_CODES.index(Outcome.ERROR.value))
    n = int(use.sum())
    if not n:
        return None
    _, (code,) = cell_ranks(columns["cell"])
    order = np.lexsort((code[use], columns["repeat"][use], columns["episode"][use]))
    won = (outcome[use] == OUTCOME_CODES.index(Outcome.SUCCESS.value)).astype(np.int64)
    wins = np.cumsum(won[order])
    grid = prefix_grid(n, points)
    k = wins[grid - 1]
    low, high = interval_bounds(k, grid, "wilson", confidence)
    return CumulativeCurve(n=grid, k=k, rate=k / grid, low=low, high=high)


def _state(low: float, high: float) -> str:
    if low > 0:
        return "candidate better"
    if high < 0:
        return "baseline better"
    return "not established"


def running_verdicts(
    baseline: Sequence[EpisodeRecord],
    candidate: Sequence[EpisodeRecord],
    *,
    errors_as_failures: bool = False,
    confidence: float = 0.95,
    points: int = MAX_POINTS,
) -> list[StoryPoint]:
    """Where the paired verdict changed as matched pairs accumulated, and the final one.

    Pairs match by ``(cell, episode, repeat)`` and accumulate in
    :func:`accumulation_order`; at each prefix on :func:`prefix_grid` the paired interval
    is :func:`evalband.stats.diff_paired` (candidate - baseline). The result lists the first
    prefix of each new verdict (after the first) and always ends with the full set. Pairing
    is :func:`evalband.analysis.paired_outcomes`.
    """
    from evalband.analysis._summary import paired_outcomes
    from evalband.stats import diff_paired

    pairs = paired_outcomes(baseline, candidate, errors_as_failures=errors_as_failures)
    if not pairs.a.size:
        return []
    b, c = pairs.a, pairs.b
    both, c_only, b_only = (np.cumsum(x) for x in (b & c, c & ~b, b & ~c))
    out: list[StoryPoint] = []
    last = None
    grid = prefix_grid(int(pairs.a.size), points)
    for n in grid:
        i = int(n) - 1
        neither = int(n) - int(both[i]) - int(c_only[i]) - int(b_only[i])
        d = diff_paired(int(both[i]), int(c_only[i]), int(b_only[i]), neither,
                        confidence=confidence)
        state = _state(d.low, d.high)
        point = StoryPoint(int(n), state, d.estimate, d.low, d.high)
        if last is not None and state != last:
            out.append(point)
        last = state
        if n == grid[-1]:
            out.append(point)
    return out


def _sizes(p: float, gaps: NDArray[np.float64], sign: float, alpha: float,
           discordant: float | None = None) -> NDArray[np.float64]:
    from evalband.stats import sample_size

    out = np.full(gaps.shape, np.nan)
    for i, gap in enumerate(gaps):
        other = p + sign * float(gap)
        if not 0.0 <= other <= 1.0:
            continue
        try:
            out[i] = sample_size(other, p, alpha=alpha, paired=discordant is not None,
                                 discordant=discordant)
        except InvalidParameterError:  # impossible with this discordant share
            continue
    return out


def _mdd(n: int, p: float, alpha: float, direction: str,
         discordant: float | None = None) -> float | None:
    from evalband.stats import minimum_detectable_difference

    if n < 1:
        return None
    try:
        return minimum_detectable_difference(n, p, alpha=alpha, direction=direction,
                                             paired=discordant is not None,
                                             discordant=discordant)
    except InvalidParameterError:  # no gap in that direction reaches 80% power
        return None


def power_curve(runs: Sequence[RunView], confidence: float = 0.95,
                points: int = 48) -> PowerCurve | None:
    """The power curve around the first run's rate, at this report's n per arm.

    ``n`` is the smallest run's counted episodes (per arm); ``n_slice`` the smallest
    factor slice's (when the panel has factors), whose resolvable gap is a drop (a slice
    regression) where one is resolvable, else a rise. The gap axis runs from 0.6 down to
    half the smallest resolvable gap (at most 2 points). With two or more runs, the paired curve
    uses the observed discordant share of the first two runs'
    :func:`evalband.analysis.paired_counts`. ``None`` when the first run has no counted
    episode.
    """
    from evalband.analysis import paired_counts

    first = runs[0]
    if first.summary.rate is None:
        return None
    alpha = 1.0 - confidence
    p = first.summary.rate.estimate
    n = min(v.summary.n for v in runs)
    room = 1.0 if p < 0.5 else -1.0  # the paired curve goes where the rate has room
    discordant = None
    if len(runs) > 1:
        pairs = paired_counts(first.data.records, runs[1].data.records,
                              errors_as_failures=first.data.errors_as_failures)
        if pairs.n and pairs.a_only + pairs.b_only:
            discordant = (pairs.a_only + pairs.b_only) / pairs.n
    factor_ns = [s.summary.n for v in runs for s in v.slices if s.kind == "factor"]
    n_slice = min(factor_ns) if factor_ns else None
    mdd_up, mdd_down = _mdd(n, p, alpha, "up"), _mdd(n, p, alpha, "down")
    mdd_paired = (_mdd(n, p, alpha, "up" if room > 0 else "down", discordant)
                  if discordant else None)
    mdd_slice, slice_direction = None, "down"
    if n_slice is not None:
        mdd_slice = _mdd(n_slice, p, alpha, "down")
        if mdd_slice is None:
            mdd_slice, slice_direction = _mdd(n_slice, p, alpha, "up"), "up"
    found = [m for m in (mdd_up, mdd_down, mdd_paired, mdd_slice) if m is not None]
    lowest = min([0.02, *(0.5 * m for m in found)])  # the curve reaches this run's gaps
    gaps = np.linspace(max(lowest, 0.001), 0.6, points)
    return PowerCurve(
        p=p,
        gaps=gaps,
        n_up=_sizes(p, gaps, 1.0, alpha),
        n_down=_sizes(p, gaps, -1.0, alpha),
        n_paired=_sizes(p, gaps, room, alpha, discordant) if discordant else None,
        discordant=discordant,
        n=n,
        mdd_up=mdd_up,
        mdd_down=mdd_down,
        mdd_paired=mdd_paired,
        n_slice=n_slice,
        mdd_slice=mdd_slice,
        slice_direction=slice_direction,
        confidence=confidence,
    )
