"""Ranking decides its pairs through ``decide()``: the same orders, p-values and intervals.

The ranking used to call :func:`evalband.stats.directional_holm` itself; it now goes through
the one decision engine (:class:`~evalband.analysis._verdicts.DirectionalHolm` in
:func:`~evalband.analysis._verdicts.decide`). These tests hold the two equal, bit for bit, on
seeded designs (paired, independent, clustered, a metric, ties and near-empty pairs).
"""

from __future__ import annotations

import numpy as np
import pytest

from evalband.analysis._rank import _DecidedPairs
from evalband.analysis._verdicts import DIRECTIONAL_HOLM
from evalband.stats._ranks import directional_holm, pair_difference, rank_policies


class _P:
    def __init__(self, p: float) -> None:
        self.p_value = p


@pytest.mark.parametrize("m", [1, 3, 10, 45])
def test_the_procedure_is_directional_holm(m: int) -> None:
    rng = np.random.default_rng(m)
    for _ in range(5):
        p = np.minimum(1.0, rng.beta(0.3, 3.0, m) * 2)
        established, adjusted, levels = directional_holm(p, alpha=0.05)
        steps = DIRECTIONAL_HOLM.steps([_P(float(x)) for x in p], 0.05)
        assert [s.rejected for s in steps] == established.tolist()
        assert [s.p_adjusted for s in steps] == adjusted.tolist()
        assert [1.0 - s.level for s in steps] == levels.tolist()  # exact round trip


def _designs() -> list[tuple[str, np.ndarray, np.ndarray | None, bool]]:
    rng = np.random.default_rng(11)
    out = []
    for k, n in ((2, 30), (3, 60), (5, 46)):
        rates = rng.uniform(0.1, 0.9, (k, 1))
        y = (rng.random((k, n)) < rates).astype(float)
        out.append((f"paired-{k}", y, None, True))
        out.append((f"unpaired-{k}", y, None, False))
        out.append((f"clustered-{k}", y, np.repeat(np.arange(n // 2), 2), True))
    y = (rng.random((4, 40)) < 0.5).astype(float)
    y[0, :] = y[1, :]  # a tie: no discordant pair
    y[2, :35] = np.nan  # few matched episodes
    out.append(("ties", y, None, True))
    out.append(("metric", rng.normal(0.0, 1.0, (3, 25)) + np.array([[0.0], [0.8], [0.1]]),
                None, True))
    return out


@pytest.mark.parametrize(("name", "y", "clusters", "paired"), _designs(),
                         ids=[d[0] for d in _designs()])
def test_ranking_through_decide_matches_the_direct_procedure(
        name: str, y: np.ndarray, clusters: np.ndarray | None, paired: bool) -> None:
    finite = y[np.isfinite(y)]
    binary = bool(np.all((finite == 0.0) | (finite == 1.0)))
    direct = rank_policies(y, clusters=clusters, paired=paired, alpha=0.1)
    via = _DecidedPairs(y, clusters, binary)
    decided = rank_policies(y, clusters=clusters, paired=paired, alpha=0.1, procedure=via)
    assert decided.established.tolist() == direct.established.tolist()
    assert decided.adjusted.tolist() == direct.adjusted.tolist()
    assert decided.levels.tolist() == direct.levels.tolist()
    assert (decided.better == direct.better).all()
    assert decided.tiers == direct.tiers
    assert decided.rank_low.tolist() == direct.rank_low.tolist()
    assert decided.rank_high.tolist() == direct.rank_high.tolist()
    for t, level, d in zip(direct.tests, direct.levels, via.decided, strict=True):
        before = pair_difference(y, t, float(level), clusters=clusters, flip=t.estimate < 0) \
            if binary else None
        if before is None:
            assert np.isnan(d.difference.low)
        else:
            assert d.difference == before  # the interval the rows printed, at the same level
