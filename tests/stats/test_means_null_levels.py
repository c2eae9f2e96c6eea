"""The paired t test a primary metric is decided by holds its per-direction level.

Issue 29: in ``compare``'s family of 3 success + 3 metric slices, a metric slice is decided
at the first step of the discrete Holm procedure at ``alpha / 6`` (two-sided) and up to
``alpha / 3`` when the success slices' exact tests can attain no small p, so each direction
must reject identical policies at most half that level of the time. Under two identical policies the
matched differences are symmetric about 0, where Student's t is conservative at these levels
(Efron 1969, *JASA* 64:1278-1302), also for metrics piled at 0 and for metrics that are
exactly 0 in most episodes (few nonzero differences). Small seeded Monte Carlo; the big one
is ``bench/bench_metrics.py`` (``family``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from evalband.stats._means import t_mean_difference, welch_mean_difference

LAWS: dict[str, Callable[[np.random.Generator, int], NDArray[np.float64]]] = {
    "piled at 0, Beta(0.4, 3)": lambda rng, n: rng.beta(0.4, 3.0, n),
    "piled at 1, 1 - Beta(0.3, 4)": lambda rng, n: 1.0 - rng.beta(0.3, 4.0, n),
    "mostly exactly 0 (1 episode in 10 scores)": lambda rng, n: (
        (rng.random(n) < 0.1) * rng.beta(2.0, 2.0, n)),
}

REPS = 4000
LEVEL = 0.05 / 3  # the largest a metric slice of that family can be granted (3 metric tests)


def _most_allowed(reps: int, rate: float) -> int:
    """The largest count a test at ``rate`` exceeds with probability below 0.001."""
    return int(stats.binom.ppf(0.999, reps, rate))


@pytest.mark.parametrize(("law", "n"), [*((law, 20) for law in sorted(LAWS)),
                                         ("piled at 0, Beta(0.4, 3)", 100)])
def test_paired_t_holds_its_level_per_direction(law: str, n: int) -> None:
    """Identical policies (same law for both runs, paired), 4,000 seeded comparisons.

    Each direction at ``alpha / 3`` two-sided must reject at most ``alpha / 6`` of the time
    (~33 of 4,000): more than :func:`_most_allowed` (52) has probability < 0.001 there, and
    a test rejecting twice as often (~67) exceeds it with probability ~0.96.
    """
    rng = np.random.default_rng(np.random.SeedSequence([29, n, len(law)]))
    down = up = 0
    for _ in range(REPS):
        base, cand = LAWS[law](rng, n), LAWS[law](rng, n)
        d = t_mean_difference(cand - base, bounded=True)
        if d.p_value <= LEVEL:
            down += d.estimate < 0
            up += d.estimate > 0
    most = _most_allowed(REPS, LEVEL / 2)
    assert down <= most and up <= most, (down, up, most)


@pytest.mark.parametrize("law", ["piled at 0, Beta(0.4, 3)",
                                 "mostly exactly 0 (1 episode in 10 scores)"])
def test_welch_holds_its_level_per_direction(law: str) -> None:
    """The unpaired case (no episode pairs): Welch's t, 20 episodes per run."""
    rng = np.random.default_rng(np.random.SeedSequence([29, 2, len(law)]))
    down = up = 0
    for _ in range(REPS):
        base, cand = LAWS[law](rng, 20), LAWS[law](rng, 20)
        if np.ptp(base) == 0 and np.ptp(cand) == 0:
            continue  # no variance: no test (the row says so)
        d = welch_mean_difference(cand, base, bounded=True)
        if d.p_value <= LEVEL:
            down += d.estimate < 0
            up += d.estimate > 0
    most = _most_allowed(REPS, LEVEL / 2)
    assert down <= most and up <= most, (down, up, most)
