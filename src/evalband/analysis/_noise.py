"""The noise floor of a run: how far a suite of M episodes swings, and how often repeats flip.

Two readings of one run, before any comparison (seed 000's "swing", seed 004's "flip floor"):

* **The swing.** Cut the run into consecutive suites of ``M`` episodes and read each suite's
  success rate as if it were the only eval you had run. Their spread (min, max, std) next to
  the pooled band shows how much a single ``M``-episode number could have moved, and the
  binomial std ``sqrt(p(1-p)/M)`` says how much it must move from sampling alone.
* **The flip rate.** For a panel with repeats, every pair of repeats of one condition is a
  same-condition pair; the share of pairs whose outcomes differ is the flip rate, the floor
  below which no policy comparison on this rig can see.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalband._util.validate import check_confidence
from evalband.episode import EpisodeRecord, Outcome, record_key
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.stats import Interval, interval, intervals

__all__ = [
    "Suite",
    "Swing",
    "FlipPoint",
    "FlipRate",
    "NoiseFloor",
    "noise_floor",
    "flip_rate_of_groups",
    "flip_band",
]


@dataclass(frozen=True)
class Suite:
    """One suite: a block of consecutive counted episodes in plan order.

    Attributes:
        index: the suite's position (0, 1, ...).
        first: the ``(cell, episode)`` of its first episode (any repeat).
        last: the ``(cell, episode)`` of its last episode (any repeat).
        n: counted episodes in the suite.
        successes: successes among them.
        rate: the suite's success rate with its Wilson band.
    """

    index: int
    first: tuple[str, int]
    last: tuple[str, int]
    n: int
    successes: int
    rate: Interval


@dataclass(frozen=True)
class Swing:
    """How far the full suites' rates spread.

    Attributes:
        n_suites: full suites (the trailing partial suite is not one of them).
        min_rate: the lowest suite rate.
        max_rate: the highest suite rate.
        std: sample standard deviation (``ddof=1``) of the suite rates; ``None`` with one suite.
        outside_band: suites whose rate lies outside the pooled band.
        share_outside: ``outside_band / n_suites``.
        binomial_std: ``sqrt(p(1-p)/M)`` with the pooled rate ``p``: the std a suite rate has
            from sampling alone when every episode is the same coin.
    """

    n_suites: int
    min_rate: float
    max_rate: float
    std: float | None
    outside_band: int
    share_outside: float
    binomial_std: float


@dataclass(frozen=True)
class FlipPoint:
    """The flip rate as conditions accumulate: the state after ``groups`` conditions.

    Attributes:
        groups: conditions (``(cell, episode)`` with at least two counted repeats) so far.
        pairs: same-condition pairs so far.
        flips: pairs whose outcomes differ so far.
        rate: ``flips / pairs``.
    """

    groups: int
    pairs: int
    flips: int
    rate: float


@dataclass(frozen=True)
class FlipRate:
    """How often two repeats of the same condition disagree.

    Attributes:
        groups: conditions with at least two counted repeats.
        pairs: same-condition pairs (``r(r-1)/2`` per condition with ``r`` counted repeats).
        flips: pairs with one success and one non-success.
        rate: ``flips / pairs`` with its band (:func:`flip_band`: a cluster of conditions,
            by default each condition, is the unit of dependence).
        running: the flip rate after each successive condition, in plan order.
        independent_reference: ``2p(1-p)`` with ``p`` the success rate over the paired
            episodes: the flip rate if every attempt were an independent coin of one rate.
        excluded_errors: error episodes left out of the pairs.
    """

    groups: int
    pairs: int
    flips: int
    rate: Interval
    running: tuple[FlipPoint, ...]
    independent_reference: float
    excluded_errors: int


@dataclass(frozen=True)
class NoiseFloor:
    """The noise floor of one run: the swing of suites and the same-condition flip rate.

    Attributes:
        suite_size: ``M``, episodes per suite.
        confidence: the level of every band.
        errors_as_failures: whether errors were counted as failures.
        n_episodes: counted episodes (every repeat of every condition).
        excluded_errors: error episodes left out (0 with ``errors_as_failures``).
        pooled: the success rate over every counted episode, with its Wilson band.
        suites: the full suites in plan order.
        partial: the trailing suite with fewer than ``M`` episodes (not part of the swing).
        swing: the spread of the full suites' rates; ``None`` without a full suite.
        flip: the flip rate; ``None`` when no condition has two counted repeats.
    """

    suite_size: int
    confidence: float
    errors_as_failures: bool
    n_episodes: int
    excluded_errors: int
    pooled: Interval
    suites: tuple[Suite, ...]
    partial: Suite | None
    swing: Swing | None
    flip: FlipRate | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (nested results as dictionaries, tuples as lists)."""
        out: dict[str, Any] = asdict(self)
        return out


def _check_suite_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InvalidParameterError(
            f"`suite_size` must be a whole number of episodes >= 1 (e.g. 20); got {value!r}",
            parameters=("suite_size",))
    return int(value)


def _check_records(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    rows = list(records)
    if not rows:
        raise InvalidInputError(
            "noise_floor needs the episodes of a run; got no episodes (is the run empty?)"
        )
    runs = sorted({r.run_id for r in rows})
    if len(runs) > 1:
        raise InvalidInputError(
            f"noise_floor reads one run at a time; got episodes of {len(runs)} runs "
            f"({', '.join(runs[:5])}); pass one run's episodes"
        )
    keys = list(map(record_key, rows))
    if len(set(keys)) != len(keys):
        seen: set[tuple[str, int, int]] = set()
        for cell, episode, repeat in keys:
            if (cell, episode, repeat) in seen:
                raise InvalidInputError(
                    f"episode (cell={cell!r}, episode={episode}, repeat={repeat}) appears "
                    "twice; each (cell, episode, repeat) of a run is recorded once"
                )
            seen.add((cell, episode, repeat))
    if keys == sorted(keys):  # already in plan order (as the store returns them)
        return rows
    return sorted(rows, key=record_key)


def _suites(
    counted: Sequence[EpisodeRecord], size: int, confidence: float
) -> tuple[tuple[Suite, ...], Suite | None]:
    """The full suites of ``size`` consecutive episodes, and the trailing partial one.

    Successes are summed per block with numpy and every band comes from one
    :func:`evalband.stats.intervals` call (equal to one :func:`interval` per suite).
    """
    wins = np.fromiter((r.outcome is Outcome.SUCCESS for r in counted), dtype=np.int64,
                       count=len(counted))
    cum = np.concatenate(([0], np.cumsum(wins)))
    starts = np.arange(0, len(counted), size)
    ends = np.minimum(starts + size, len(counted))
    successes = cum[ends] - cum[starts]
    bands = intervals(successes, ends - starts, "wilson", confidence)
    out = [
        Suite(
            index=i,
            first=(counted[a].cell, counted[a].episode),
            last=(counted[b - 1].cell, counted[b - 1].episode),
            n=b - a,
            successes=k,
            rate=band,
        )
        for i, (a, b, k, band) in enumerate(
            zip(starts.tolist(), ends.tolist(), successes.tolist(), bands, strict=True)
        )
    ]
    n_full = len(counted) // size
    return tuple(out[:n_full]), (out[n_full] if len(out) > n_full else None)


def _swing(suites: Sequence[Suite], pooled: Interval, suite_size: int) -> Swing | None:
    if not suites:
        return None
    rates = np.array([s.rate.estimate for s in suites], dtype=np.float64)
    outside = int(np.count_nonzero((rates < pooled.low) | (rates > pooled.high)))
    p = pooled.estimate
    return Swing(
        n_suites=len(suites),
        min_rate=float(rates.min()),
        max_rate=float(rates.max()),
        std=float(np.std(rates, ddof=1)) if len(suites) > 1 else None,
        outside_band=outside,
        share_outside=outside / len(suites),
        binomial_std=math.sqrt(p * (1.0 - p) / suite_size),
    )


def flip_band(
    flips: Sequence[int], pairs: Sequence[int], clusters: Sequence[Hashable], confidence: float
) -> Interval:
    """The flip rate's band with ``clusters`` (one label per condition) as the unit.

    Flips and pairs are summed per cluster and passed to
    :func:`evalband.stats.cluster_proportion_interval` (Wilson on the Korn-Graubard effective
    sample size, t-corrected): pairs that share an attempt, or conditions that share a
    scene, are not counted as independent.

    >>> band = flip_band([1, 0, 1, 1], [1, 1, 1, 1], ["s1", "s1", "s2", "s2"], 0.95)
    >>> band.estimate, band.method
    (0.75, 'cluster-wilson')
    """
    from evalband.stats import cluster_proportion_interval

    index: dict[Hashable, int] = {}
    for label in clusters:
        index.setdefault(label, len(index))
    codes = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
    k = np.bincount(codes, weights=np.asarray(flips, dtype=np.float64), minlength=len(index))
    n = np.bincount(codes, weights=np.asarray(pairs, dtype=np.float64), minlength=len(index))
    return cluster_proportion_interval(k.round(), n.round(), confidence=confidence)


def flip_rate_of_groups(
    groups: Iterable[Sequence[bool]],
    *,
    confidence: float = 0.95,
    excluded_errors: int = 0,
    clusters: Sequence[Hashable] | None = None,
) -> FlipRate | None:
    r"""The flip rate of same-condition pairs, from the outcomes of each condition in order.

    The one implementation of the flip rate: :func:`noise_floor` (conditions are
    ``(cell, episode)`` of a run) and :func:`evalband.session.analyze_session` (conditions
    are ``(policy, scene)`` of a hardware session) both call it. A condition with
    :math:`r \ge 2` outcomes of which :math:`s` are successes gives :math:`r(r-1)/2` pairs,
    :math:`s(r-s)` of them flipped (one success, one non-success); conditions with fewer
    than two outcomes give no pair and are left out of ``groups`` and ``running``. The
    rate is flips / pairs; its band treats a cluster as the unit of dependence
    (:func:`flip_band`): by default each condition is its own cluster (its :math:`r(r-1)/2`
    pairs share attempts), and ``clusters`` can group conditions that share more (a
    session's policies on one scene);
    ``running`` recomputes it after each successive condition; ``independent_reference``
    is :math:`2p(1-p)` with :math:`p` the success rate over the paired outcomes.

    Args:
        groups: the outcomes (True = success) of each condition, in the order ``running``
            should follow.
        confidence: two-sided level of the band, in (0, 1).
        excluded_errors: how many outcomes the caller left out (reported as is).
        clusters: one cluster label per condition of ``groups`` (default: each condition
            its own cluster).

    Returns:
        A :class:`FlipRate`, or ``None`` when no condition has two outcomes.

    Raises:
        InvalidInputError: ``clusters`` of another length than ``groups``.

    >>> flip = flip_rate_of_groups([[True, False], [True, True], [False]])
    >>> flip.groups, flip.pairs, flip.flips, flip.rate.estimate
    (2, 2, 1, 0.5)
    >>> [point.rate for point in flip.running]
    [1.0, 0.5]
    """
    listed = [list(g) for g in groups]
    if clusters is not None and len(clusters) != len(listed):
        raise InvalidInputError(
            f"clusters must label every condition: {len(clusters)} labels for {len(listed)} "
            "conditions"
        )
    labels = list(range(len(listed))) if clusters is None else list(clusters)
    kept_labels = [c for g, c in zip(listed, labels, strict=True) if len(g) >= 2]
    kept = [g for g in listed if len(g) >= 2]
    if not kept:
        return None
    sizes = np.array([len(g) for g in kept], dtype=np.int64)
    wins = np.array([sum(bool(x) for x in g) for g in kept], dtype=np.int64)
    # r repeats with s successes: r(r-1)/2 pairs, of which s(r-s) pair a success with a miss.
    pairs = sizes * (sizes - 1) // 2
    flips = wins * (sizes - wins)
    cum_pairs, cum_flips = np.cumsum(pairs), np.cumsum(flips)
    running = tuple(
        FlipPoint(groups=i + 1, pairs=int(cp), flips=int(cf), rate=float(cf / cp))
        for i, (cp, cf) in enumerate(zip(cum_pairs, cum_flips, strict=True))
    )
    p = float(wins.sum() / sizes.sum())
    return FlipRate(
        groups=int(sizes.size),
        pairs=int(cum_pairs[-1]),
        flips=int(cum_flips[-1]),
        rate=flip_band(flips.tolist(), pairs.tolist(), kept_labels, confidence),
        running=running,
        independent_reference=2.0 * p * (1.0 - p),
        excluded_errors=int(excluded_errors),
    )


def _flip_rate(
    rows: Sequence[EpisodeRecord], errors_as_failures: bool, confidence: float
) -> FlipRate | None:
    if not any(r.repeat for r in rows):  # one attempt per condition: no pair to flip
        return None
    groups: dict[tuple[str, int], list[bool]] = {}
    excluded = 0
    for record in rows:  # rows are in plan order, so groups are too
        if record.outcome is Outcome.ERROR and not errors_as_failures:
            excluded += 1
            continue
        groups.setdefault((record.cell, record.episode), []).append(record.success)
    return flip_rate_of_groups(groups.values(), confidence=confidence, excluded_errors=excluded)


def noise_floor(
    records: Sequence[EpisodeRecord],
    suite_size: int = 20,
    *,
    confidence: float = 0.95,
    errors_as_failures: bool = False,
) -> NoiseFloor:
    r"""The swing of ``suite_size``-episode suites and the same-condition flip rate of a run.

    **Suites.** Every episode (all repeats: the run's whole count, as ``show`` reports it) is
    put in plan order, sorted by ``(cell, episode, repeat)`` as the store returns them; error
    episodes are left out (and counted) unless ``errors_as_failures``. Consecutive blocks of
    :math:`M` = ``suite_size`` counted episodes are the suites; a trailing block of fewer
    than :math:`M` is reported as ``partial`` and not used for the swing. Each suite and the
    pool of all counted episodes get a Wilson (1927) score band (Wilson, E. B.,
    *JASA* 22:209-212; Newcombe 1998, *Statistics in Medicine* 17:857-872, method 3, via
    :func:`evalband.stats.interval`). The swing is the min, max and sample standard
    deviation (``ddof=1``) of the suite rates, the share of suites whose rate lies outside
    the pooled band, and for comparison the std of a binomial proportion at the suite size,

    .. math:: \sigma_M = \sqrt{\hat p (1 - \hat p) / M},

    (the variance of Binomial(M, p)/M, e.g. Casella & Berger 2002, *Statistical Inference*,
    2nd ed., section 3.2), with :math:`\hat p` the pooled rate. A suite std well above
    :math:`\sigma_M` means the suites are not draws of one coin (heterogeneous cells mixed
    into suites, or drift, or repeats of one condition that agree); one near it means the
    swing is sampling noise alone. With several cells a suite can span cells; read the swing
    per cell when cells differ a lot.

    **Flip rate.** For every ``(cell, episode)`` with :math:`r \ge 2` counted repeats, every
    pair of repeats :math:`i < j` is a same-condition pair, flipped when one succeeds and the
    other does not: with :math:`s` successes that is :math:`s(r-s)` of :math:`r(r-1)/2`
    pairs. The flip rate is flips / pairs; its band takes the condition as the unit of
    dependence (pairs of one condition share attempts): Wilson's interval on the
    Korn-Graubard effective number of pairs with a t correction
    (:func:`evalband.stats.cluster_proportion_interval`, via :func:`flip_band`), which keeps
    nominal coverage with 2-5 repeats where a Wilson band on the pairs does not. It is
    also recomputed after each successive condition (``running``: seed 004's "~30% after 6
    scenes, 28% after 12, 27% after 26"). ``independent_reference`` is :math:`2p(1-p)`, the
    flip rate of independent attempts with one success rate :math:`p` (the paired episodes'
    rate).

    Args:
        records: the episodes of one run (any order).
        suite_size: :math:`M`, episodes per suite (>= 1).
        confidence: two-sided level of every band, in (0, 1).
        errors_as_failures: count ``error`` episodes as failures instead of leaving them out.

    Returns:
        A :class:`NoiseFloor`.

    Raises:
        InvalidParameterError: ``suite_size`` not a whole number >= 1, or ``confidence``
            outside (0, 1).
        InvalidInputError: no episodes, episodes of several runs, a repeated
            ``(cell, episode, repeat)``, or no counted episode (all errors).

    >>> from evalband.episode import EpisodeRecord
    >>> def rec(episode, ok, repeat=0):
    ...     return EpisodeRecord("r", "p", "f", "", episode, repeat, episode,
    ...                          "success" if ok else "failure", True, False, 1)
    >>> wins = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    >>> nf = noise_floor([rec(i, w) for i, w in enumerate(wins)], suite_size=4)
    >>> [s.successes for s in nf.suites], nf.partial.n, nf.pooled.estimate
    ([3, 1], 2, 0.6)
    >>> nf.swing.min_rate, nf.swing.max_rate, round(nf.swing.std, 4)
    (0.25, 0.75, 0.3536)
    >>> repeats = [rec(0, True), rec(0, False, 1), rec(1, True), rec(1, True, 1)]
    >>> nf = noise_floor(repeats, suite_size=3)
    >>> nf.n_episodes, [s.successes for s in nf.suites], nf.partial.n
    (4, [2], 1)
    >>> nf.flip.pairs, nf.flip.flips, nf.flip.rate.estimate
    (2, 1, 0.5)
    """
    size = _check_suite_size(suite_size)
    level = check_confidence(confidence)
    counted_errors = bool(errors_as_failures)
    from evalband.analysis._pairs import stored_columns

    columns = stored_columns(records)
    if columns is not None and len(columns["cell"]):  # a stored run: its columns
        return _noise_columns(columns, size, level, counted_errors)
    rows = _check_records(records)
    counted = [r for r in rows if counted_errors or r.outcome is not Outcome.ERROR]
    excluded = len(rows) - len(counted)
    if not counted:
        raise InvalidInputError(
            f"noise_floor found no counted episode among {len(rows)} episodes ({excluded} "
            "errors); pass errors_as_failures=True to count errors as failures"
        )
    successes = sum(r.success for r in counted)
    pooled = interval(successes, len(counted), confidence=level)
    suites, partial = _suites(counted, size, level)
    return NoiseFloor(
        suite_size=size,
        confidence=level,
        errors_as_failures=counted_errors,
        n_episodes=len(counted),
        excluded_errors=excluded,
        pooled=pooled,
        suites=suites,
        partial=partial,
        swing=_swing(suites, pooled, size),
        flip=_flip_rate(rows, counted_errors, level),
    )


def _noise_columns(
    columns: Any, size: int, level: float, errors_as_failures: bool
) -> NoiseFloor:
    """:func:`noise_floor` of a stored run's columns (the same result, no records).

    The store gives one run's episodes once each, in plan order.
    """
    from evalband.store._columns import OUTCOME_CODES

    outcome = np.asarray(columns["outcome"])
    error = outcome == OUTCOME_CODES.index(Outcome.ERROR.value)
    use = np.ones(outcome.size, dtype=bool) if errors_as_failures else ~error
    n = int(use.sum())
    excluded = int(outcome.size - n)
    if not n:
        raise InvalidInputError(
            f"noise_floor found no counted episode among {outcome.size} episodes ({excluded} "
            "errors); pass errors_as_failures=True to count errors as failures"
        )
    won = (outcome[use] == OUTCOME_CODES.index(Outcome.SUCCESS.value)).astype(np.int64)
    pooled = interval(int(won.sum()), n, confidence=level)
    cells, episodes = columns["cell"][use], columns["episode"][use]
    cum = np.concatenate(([0], np.cumsum(won)))
    starts = np.arange(0, n, size)
    ends = np.minimum(starts + size, n)
    successes = cum[ends] - cum[starts]
    bands = intervals(successes, ends - starts, "wilson", level)
    out = [
        Suite(index=i, first=(str(cells[a]), int(episodes[a])),
              last=(str(cells[b - 1]), int(episodes[b - 1])), n=b - a, successes=k, rate=band)
        for i, (a, b, k, band) in enumerate(
            zip(starts.tolist(), ends.tolist(), successes.tolist(), bands, strict=True))
    ]
    n_full = n // size
    suites, partial = tuple(out[:n_full]), (out[n_full] if len(out) > n_full else None)
    flip = None
    if bool(np.any(columns["repeat"])):  # groups of repeats of one (cell, episode)
        groups: dict[tuple[str, int], list[bool]] = {}
        for cell, episode, ok in zip(cells.tolist(), episodes.tolist(),
                                     (won > 0).tolist(), strict=True):
            groups.setdefault((cell, episode), []).append(ok)
        flip = flip_rate_of_groups(groups.values(), confidence=level,
                                   excluded_errors=excluded if bool(np.any(error)) else 0)
    return NoiseFloor(
        suite_size=size, confidence=level, errors_as_failures=errors_as_failures,
        n_episodes=n, excluded_errors=excluded, pooled=pooled, suites=suites,
        partial=partial, swing=_swing(suites, pooled, size), flip=flip,
    )
