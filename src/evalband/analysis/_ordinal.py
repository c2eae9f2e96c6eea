"""An ordinal metric's levels: the share at each level, and two runs' "at least level k" shares.

A metric the panel declares ``type: ordinal`` (seed 004's grasp levels 0-3: 1 grasped, 2
held, 3 survived the stress test) is summarised by its median
(:func:`evalband.analysis._metrics.metric_summaries`), but a reader of an ordinal scale reads
the levels first: how many episodes reached level 3? Here:

* :func:`ordinal_levels`: the levels, read from the values (a panel declares no level
  list): every whole number from the lowest to the highest value seen, so a level no episode
  reached between two that were is shown at 0%. Values that are not whole numbers (or a
  range over :data:`MAX_LEVELS` levels) give no levels: the metric keeps its median alone, as
  before.
* :func:`level_shares`: one run's share of episodes at each level and at that level or
  above, each with its Wilson interval (the package's default for a proportion,
  :func:`evalband.stats._intervals.interval`).
* :func:`level_differences`: two runs' difference in the share "at least level k",
  ``candidate - baseline``, for every level above the lowest: Newcombe's paired score
  interval over matched episodes (:func:`evalband.stats._difference.diff_paired`), his
  hybrid score interval when no episode pairs (:func:`~evalband.stats._difference.
  diff_unpaired`). These rows are descriptive, at the nominal confidence, not adjusted: they
  never join the verdict's family, also for a primary metric (whose decision stays the
  median's).
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from evalband.stats import Difference, Interval

__all__ = ["MAX_LEVELS", "LevelShare", "LevelDifference", "ordinal_levels", "level_shares",
           "level_differences"]

MAX_LEVELS = 21
"""Most levels read from the values (0-20); a wider range gives no level table."""


class LevelShare(msgspec.Struct, frozen=True):
    """One run's share of episodes at one level of an ordinal metric.

    Attributes:
        level: the level (a whole number).
        k: episodes at this level.
        share: the share of episodes at this level with its Wilson interval.
        at_least: the share at this level or above with its Wilson interval (``None`` for
            the lowest level: every episode is at it or above).
    """

    level: int
    k: int
    share: Interval
    at_least: Interval | None = None


class LevelDifference(msgspec.Struct, frozen=True):
    """Two runs' difference in the share of episodes at one level or above (descriptive).

    Attributes:
        level: the level ``k`` (the share is of episodes scored ``k`` or more).
        at_least_baseline: the baseline's share (over the matched episodes when they pair).
        at_least_candidate: the candidate's share (likewise).
        delta: ``candidate - baseline`` with its Newcombe interval (paired on matched
            episodes, else the hybrid score interval) at the nominal confidence, not
            adjusted; ``None`` when a run has no episode.
    """

    level: int
    at_least_baseline: float | None
    at_least_candidate: float | None
    delta: Difference | None


def ordinal_levels(*samples: NDArray[np.float64]) -> list[int]:
    """The levels of an ordinal metric read from its values (empty: no level table).

    Every whole number from the lowest to the highest value of the ``samples``; empty when a
    value is not a whole number, when there is no value, or when the range spans more than
    :data:`MAX_LEVELS` levels.

    >>> ordinal_levels(np.array([0.0, 3.0, 1.0]), np.array([1.0]))
    [0, 1, 2, 3]
    >>> ordinal_levels(np.array([0.5, 1.0])), ordinal_levels(np.zeros(0))
    ([], [])
    """
    found = [s for s in samples if s.size]
    if not found:
        return []
    x = np.concatenate(found)
    if not bool(np.all(np.isfinite(x))) or not bool(np.all(x == np.round(x))):
        return []
    low, high = int(x.min()), int(x.max())
    if high - low + 1 > MAX_LEVELS:
        return []
    return list(range(low, high + 1))


def level_shares(values: NDArray[np.float64], levels: list[int], *,
                 confidence: float = 0.95) -> list[LevelShare]:
    """The share of ``values`` at each level and at least at it, with Wilson intervals.

    >>> s = level_shares(np.array([0.0, 1.0, 1.0, 3.0]), [0, 1, 2, 3])
    >>> [(x.level, x.k, x.share.estimate) for x in s]
    [(0, 1, 0.25), (1, 2, 0.5), (2, 0, 0.0), (3, 1, 0.25)]
    >>> [None if x.at_least is None else x.at_least.estimate for x in s]
    [None, 0.75, 0.25, 0.25]
    """
    from evalband.stats._intervals import interval

    n = int(values.size)
    if not n or not levels:
        return []
    out = []
    for j, level in enumerate(levels):
        k = int(np.count_nonzero(values == level))
        above = int(np.count_nonzero(values >= level))
        out.append(LevelShare(level, k, interval(k, n, "wilson", confidence),
                              None if j == 0 else interval(above, n, "wilson", confidence)))
    return out


def level_differences(baseline: NDArray[np.float64], candidate: NDArray[np.float64],
                      pairs: tuple[NDArray[np.intp], NDArray[np.intp]] | None,
                      levels: list[int], *, confidence: float = 0.95) -> list[LevelDifference]:
    """Each level's difference in the share "at least level k", ``candidate - baseline``.

    ``pairs``: the indices of the matched episodes in ``baseline`` and ``candidate``; with
    at least one pair the difference is over the pairs (Newcombe's paired score interval),
    else over every episode of both runs (Newcombe's hybrid score interval). The lowest
    level is left out (both shares are 1).

    >>> b, c = np.array([0.0, 1.0, 2.0, 2.0]), np.array([1.0, 2.0, 2.0, 2.0])
    >>> d = level_differences(b, c, (np.arange(4), np.arange(4)), [0, 1, 2])
    >>> [(x.level, x.at_least_baseline, x.at_least_candidate) for x in d]
    [(1, 0.75, 1.0), (2, 0.5, 0.75)]
    >>> d[1].delta.estimate, d[1].delta.method
    (0.25, 'newcombe-paired')
    """
    from evalband.stats._difference import diff_paired, diff_unpaired

    if pairs is not None and pairs[0].size:
        xb, xc = baseline[pairs[0]], candidate[pairs[1]]
    else:
        xb, xc, pairs = baseline, candidate, None
    out = []
    for level in levels[1:]:
        hb, hc = xb >= level, xc >= level
        if not xb.size or not xc.size:
            out.append(LevelDifference(level, _share(hb), _share(hc), None))
            continue
        if pairs is not None:
            delta = diff_paired(int(np.count_nonzero(hc & hb)), int(np.count_nonzero(hc & ~hb)),
                                int(np.count_nonzero(~hc & hb)),
                                int(np.count_nonzero(~hc & ~hb)), confidence=confidence)
        else:
            delta = diff_unpaired(int(np.count_nonzero(hc)), int(xc.size),
                                  int(np.count_nonzero(hb)), int(xb.size), confidence)
        out.append(LevelDifference(level, _share(hb), _share(hc), delta))
    return out


def _share(hit: NDArray[np.bool_]) -> float | None:
    return float(hit.mean()) if hit.size else None
