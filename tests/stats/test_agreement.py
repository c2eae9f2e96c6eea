"""Agreement statistics against scipy, SimplerEnv's published definition, brute force, and
simulation (the full audit is ``bench/bench_agree.py``)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from evalband.stats._agreement import (
    established_agreement,
    kendall_tau_b,
    mmrv,
    pearson,
    rank_set_bounds,
    spearman,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_agree  # noqa: E402


def simpler_mmrv(sim: list[float], real: list[float]) -> float:
    """SimplerEnv's ``mean_maximum_rank_violation`` as published (simpler_env/utils/metrics.py),
    transcribed loop for loop."""
    violations = []
    for i in range(len(sim)):
        worst = 0.0
        for j in range(len(sim)):
            if (sim[i] > sim[j]) != (real[i] > real[j]):
                worst = max(worst, abs(real[i] - real[j]))
        violations.append(worst)
    return sum(violations) / len(violations)


def test_point_statistics_match_scipy_and_simplerenv() -> None:
    rng = np.random.default_rng(1)
    for k in (3, 6, 10):
        for _ in range(20):
            a = np.round(rng.random(k), 1)  # ties on purpose
            b = np.round(rng.random(k), 1)
            if np.ptp(a) == 0 or np.ptp(b) == 0:
                continue
            assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
            assert kendall_tau_b(a, b) == pytest.approx(kendalltau(a, b).statistic)
            assert pearson(a, b) == pytest.approx(pearsonr(a, b).statistic)
            assert mmrv(a, b) == pytest.approx(simpler_mmrv(list(a), list(b)))


def test_rank_set_bounds_are_the_extremes_over_every_allowed_ordering() -> None:
    rng = np.random.default_rng(2)
    for _ in range(60):
        k = int(rng.integers(3, 7))
        truth = rng.permutation(k)  # a hidden true order: 0 is the best
        better = np.zeros((k, k), dtype=bool)
        for i, j in itertools.permutations(range(k), 2):
            if truth[i] < truth[j] and rng.random() < 0.4:
                better[i, j] = True
        low = 1 + better.sum(axis=0)
        high = k - better.sum(axis=1)
        cheap = np.round(rng.random(k), 1)
        if np.ptp(cheap) == 0:
            continue
        (s_lo, s_hi), (k_lo, k_hi) = rank_set_bounds(cheap, low, high, better)
        spear, kend = [], []
        for perm in itertools.permutations(range(1, k + 1)):  # perm[j]: j's rank, 1 = best
            r = np.array(perm)
            if np.all((r >= low) & (r <= high)):
                spear.append(spearman(cheap, -r))
            if all(r[i] < r[j] for i, j in zip(*np.nonzero(better), strict=True)):
                kend.append(kendall_tau_b(cheap, -r))
                assert k_lo - 1e-9 <= kend[-1] <= k_hi + 1e-9  # Kendall: a valid bound
        assert s_lo == pytest.approx(min(spear)) and s_hi == pytest.approx(max(spear))
        assert k_lo <= min(kend) and max(kend) <= k_hi


def test_established_agreement_counts() -> None:
    better = np.zeros((3, 3), dtype=bool)
    better[0, 1] = better[0, 2] = True
    assert established_agreement([3, 1, 5], better) == (1, 1, 0)


@pytest.mark.parametrize("design", [(6, 46, 0.17, 0.05, False), (6, 200, 0.5, 0.0, True)],
                         ids=["seed-like", "perfect-order"])
def test_spearman_interval_covers_the_truth_small_simulation(
    design: tuple[int, int, float, float, bool],
) -> None:
    row = bench_agree.coverage(design, reps=40, seed=3, boot_reps=60)
    assert row["bound_band"][1] >= 0.95


def test_at_the_seeds_noise_floor_orderings_mostly_cannot_be_validated() -> None:
    floor = bench_agree.seed_floor(reps=60, seed=4)
    assert floor["cannot_validate"] >= 0.65  # most draws establish no behavioural order (~83%)
