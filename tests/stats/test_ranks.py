"""Rank sets from pairwise tests (``stats/_ranks.py``) against independent oracles and simulation.

Oracles: statsmodels' Holm over the 2M one-sided hypotheses, statsmodels' exact McNemar,
scipy's one-sided Fisher tests, the seed's own price ("46 trials ... resolve only ~29-point
gaps"), brute-force enumeration of the exact power; the joint coverage of the rank sets by
seeded simulation (the full audit is ``bench/bench_rank.py``).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom, fisher_exact
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evalband.stats._rank_power import resolvable_gap, separation_power, separation_size
from evalband.stats._ranks import (
    directional_holm,
    pair_difference,
    pairwise_tests,
    rank_intervals,
    rank_policies,
    tiers_of,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_rank  # noqa: E402


def test_directional_holm_is_holm_over_both_one_sided_hypotheses_of_every_pair() -> None:
    rng = np.random.default_rng(3)
    for m in (1, 3, 10, 45):  # (statsmodels' multipletests takes ~0.15 s a call here)
        for _ in range(3):
            p = np.minimum(1.0, rng.beta(0.3, 3.0, m) * 2)
            established, adjusted, _ = directional_holm(p, alpha=0.05)
            one_sided = np.concatenate([p / 2, np.ones(m)])  # the other side never rejects
            reject, adj, _, _ = multipletests(one_sided, alpha=0.05, method="holm")
            assert established.tolist() == reject[:m].tolist()
            np.testing.assert_allclose(adjusted, adj[:m], rtol=1e-12)


def test_the_interval_levels_agree_with_the_decisions() -> None:
    rng = np.random.default_rng(4)
    for _ in range(40):
        p = np.minimum(1.0, rng.beta(0.3, 3.0, 10) * 2)
        established, _, levels = directional_holm(p, alpha=0.05)
        # established exactly when the two-sided p is within 1 - level of its own step
        assert ((p <= 1 - levels + 1e-15) == established).all()


def test_pair_tests_match_statsmodels_and_scipy() -> None:
    rng = np.random.default_rng(5)
    y = (rng.random((4, 60)) < np.array([[0.8], [0.5], [0.45], [0.2]])).astype(float)
    y[1, :5] = np.nan  # left out: pairs use what both have
    for t in pairwise_tests(y):
        both = np.isfinite(y[t.a]) & np.isfinite(y[t.b])
        a, b = y[t.a][both], y[t.b][both]
        table = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
                 [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]
        assert t.method == "mcnemar-exact"
        assert t.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    for t in pairwise_tests(y, paired=False):
        ka, na = int(np.nansum(y[t.a])), int(np.isfinite(y[t.a]).sum())
        kb, nb = int(np.nansum(y[t.b])), int(np.isfinite(y[t.b]).sum())
        table = [[ka, na - ka], [kb, nb - kb]]
        central = min(1.0, 2 * min(fisher_exact(table, alternative="less")[1],
                                   fisher_exact(table, alternative="greater")[1]))
        assert t.p_value == pytest.approx(central, rel=1e-9)


def test_every_interval_excludes_zero_exactly_when_the_order_is_established() -> None:
    rng = np.random.default_rng(6)
    seen = set()
    for paired, clustered in ((True, False), (False, False), (True, True)):
        for _ in range(6):
            y = (rng.random((5, 46)) < rng.uniform(0.1, 0.9, (5, 1))).astype(float)
            clusters = np.repeat(np.arange(23), 2) if clustered else None
            r = rank_policies(y, clusters=clusters, paired=paired)
            for t, done, level in zip(r.tests, r.established, r.levels, strict=True):
                d = pair_difference(y, t, level, clusters=clusters)
                assert d is not None and d.excludes_zero == bool(done)
                seen.add(bool(done))
    assert seen == {True, False}


def test_rank_sets_and_tiers_follow_the_established_orders() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(2, 8))
        est = rng.random(k)
        better = (est[:, None] > est[None, :]) & (rng.random((k, k)) < 0.4)
        low, high = rank_intervals(better)
        tiers = tiers_of(better, est)
        assert sorted(i for t in tiers for i in t) == list(range(k))
        tier_of = {i: n for n, t in enumerate(tiers) for i in t}
        for i, j in itertools.permutations(range(k), 2):
            if better[i, j]:
                assert tier_of[i] < tier_of[j]  # no order inside a tier
        for n, t in enumerate(tiers[1:], 1):
            for j in t:  # each below tier 1 sits under some policy of the tier above
                assert any(better[i, j] for i in tiers[n - 1])
        # the true ranks of any total order consistent with the established ones fit
        for perm in itertools.islice(itertools.permutations(range(k)), 50):
            rank = {p: r + 1 for r, p in enumerate(perm)}
            if all(rank[i] < rank[j] for i, j in zip(*np.nonzero(better), strict=True)):
                assert all(low[i] <= rank[i] <= high[i] for i in range(k))


def test_the_price_of_a_gap_matches_the_seed_and_brute_force() -> None:
    # seed 004: "46 trials per model ... enough to resolve only ~29-point gaps" (one pair)
    assert resolvable_gap(46, 0.45, policies=2, design="unpaired") == pytest.approx(0.29, abs=0.01)
    # seed 004: "telling a 60% grasper from a 40% one takes ~100 trials per model"
    assert 95 <= separation_size(0.6, 0.4, policies=2, design="unpaired") <= 110
    # the exact power by enumerating both binomials through the ranking's own pair test
    n, k = 60, 4
    fa, fb = binom.pmf(np.arange(n + 1), n, 0.7), binom.pmf(np.arange(n + 1), n, 0.4)
    power = 0.0
    for a in range(n + 1):
        for b in range(n + 1):
            y = np.zeros((2, n))
            y[0, :a], y[1, :b] = 1, 1
            (t,) = pairwise_tests(y, paired=False)
            if t.p_value <= 0.05 / (k * (k - 1) / 2) and t.estimate > 0:
                power += fa[a] * fb[b]
    assert separation_power(n, 0.7, 0.4, policies=k, design="unpaired") == pytest.approx(power)


@pytest.mark.parametrize("design", [
    bench_rank.Design("equal k=5 matched", (0.5,) * 5, 50, True),
    bench_rank.Design("near-tied k=10 unpaired", tuple(0.4 + 0.02 * i for i in range(10)), 50,
                      False),
    bench_rank.Design("equal k=6 scenes", (0.4,) * 6, 46, True, 23),
    bench_rank.Design("spread k=3 scenes", (0.2, 0.5, 0.8), 46, True, 23),
], ids=lambda d: d.name)
def test_joint_coverage_small_simulation(design: bench_rank.Design) -> None:
    row = bench_rank.coverage(design, reps=120, seed=11)
    assert row["band"][1] >= 0.95  # nominal 95% inside the Monte Carlo band


def test_identical_policies_overlap_and_30_points_apart_are_separated() -> None:
    same = bench_rank.coverage(bench_rank.Design("5 identical", (0.5,) * 5, 200), 150, 12)
    assert same["all_overlap"] >= 0.93 and same["band"][1] >= 0.95
    for paired in (True, False):
        apart = bench_rank.coverage(bench_rank.Design("30 apart", (0.2, 0.5, 0.8), 200, paired),
                                    40, 13)
        assert apart["fully_ordered"] >= 0.95  # exact pair power > 0.999 at n = 200


def test_the_printed_separation_cost_delivers_its_power_small_simulation() -> None:
    """The size ``rank`` prints for the leaders, simulated through the whole ranking."""
    for row in bench_rank.separation_check(reps=120, seed=14):
        assert row["band"][1] >= 0.80, row  # 80% promised; within the Monte Carlo band
