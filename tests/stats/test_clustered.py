"""Scene-level tests and bands: brute-force enumeration, statsmodels, and seeded Monte Carlo.

The Monte Carlo must-shows (equal policies are "significant" at most 5% of the time with 2 and
3 attempts per scene; flip bands cover >= 93% with 2-5 repeats) draw sessions from their own
model here (a Beta latent success probability per policy x scene, coupled across policies by a
shared scene effect), not from evalband's simulator; bench/bench_clustered.py runs a fuller
grid.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.optimize import minimize_scalar
from statsmodels.stats import proportion as sm_proportion
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from evalband.errors import InvalidCountsError, InvalidInputError, InvalidParameterError
from evalband.stats import (
    cluster_proportion_interval,
    clustered_diff_unpaired,
    clustered_grouped_interval,
    clustered_grouped_test,
    clustered_paired_interval,
    clustered_paired_power,
    clustered_paired_sample_size,
    clustered_paired_test,
    holm_levels,
    interval,
    mcnemar,
    sign_flip_test,
)
from evalband.stats._cluster_rates import _mn_constrained


# ----------------------------------------------------------------- a session model of our own
def latent(rng: np.random.Generator, shape: tuple[int, ...], m: float, flip: float,
           rho: float) -> np.ndarray:
    """Latent q per (session, policy, scene): Beta with mean m and pair-flip prob `flip`."""
    sessions, policies, scenes = shape
    kappa = flip / (2 * m * (1 - m) - flip)
    z = rng.standard_normal((sessions, 1, scenes))
    e = rng.standard_normal(shape)
    u = sps.norm.cdf(math.sqrt(rho) * z + math.sqrt(1 - rho) * e)
    return sps.beta.ppf(u, m * kappa, (1 - m) * kappa)


def attempts(rng: np.random.Generator, q: np.ndarray, k: int) -> np.ndarray:
    return rng.random((*q.shape, k)) < q[..., None]


def upper_bound(hits: int, n: int) -> float:
    """One-sided 99% Clopper-Pearson upper bound of a Monte Carlo rate."""
    return float(sps.beta.ppf(0.99, hits + 1, n - hits)) if hits < n else 1.0


def lower_bound(hits: int, n: int) -> float:
    return float(sps.beta.ppf(0.01, hits, n - hits + 1)) if hits > 0 else 0.0


# ----------------------------------------------------------------- must show: size
@pytest.mark.parametrize("k", [2, 3])
def test_equal_policies_are_significant_at_most_5_percent(k: int) -> None:
    rng = np.random.default_rng(20261201 + k)
    reps, scenes = 1500, 26
    y = attempts(rng, latent(rng, (reps, 2, scenes), 0.45, 0.27, 0.4), k)
    b = (y[:, 0] & ~y[:, 1]).sum(axis=2)  # per session x scene: pairs only A won
    c = (~y[:, 0] & y[:, 1]).sum(axis=2)
    pairs = [k] * scenes
    ours = sum(clustered_paired_test(b[i], c[i], pairs).p_value <= 0.05 for i in range(reps))
    naive = sum(mcnemar(int(b[i].sum()), int(c[i].sum())).p_value <= 0.05 for i in range(reps))
    # ours keeps its level: the Monte Carlo lower bound is not above 5%
    assert lower_bound(ours, reps) <= 0.05, ours / reps
    assert ours / reps <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps)
    # the attempt-pairs McNemar (attempts as independent) does not: the dependence is real
    if k == 3:
        assert lower_bound(naive, reps) > 0.05, naive / reps


# ----------------------------------------------------------------- must show: flip bands
@pytest.mark.parametrize("repeats", [2, 3, 4, 5])
def test_flip_band_covers_with_2_to_5_repeats(repeats: int) -> None:
    rng = np.random.default_rng(77 + repeats)
    reps, flip = 800, 0.27
    pairs_per = repeats * (repeats - 1) // 2
    # noise: 30 conditions, each its own cluster; session: 20 scenes x 3 policies per scene
    noise = attempts(rng, latent(rng, (reps, 1, 30), 0.4, flip, 0.0), repeats).sum(axis=3)
    sess = attempts(rng, latent(rng, (reps, 3, 20), 0.5, flip, 0.5), repeats).sum(axis=3)
    covered = {"noise": 0, "session": 0, "wilson on pairs": 0}
    for i in range(reps):
        s = noise[i, 0]
        flips = s * (repeats - s)
        band = cluster_proportion_interval(flips, [pairs_per] * 30)
        covered["noise"] += band.low <= flip <= band.high
        naive = interval(int(flips.sum()), 30 * pairs_per)
        covered["wilson on pairs"] += naive.low <= flip <= naive.high
        t = sess[i]
        scene_flips = (t * (repeats - t)).sum(axis=0)
        band = cluster_proportion_interval(scene_flips, [3 * pairs_per] * 20)
        covered["session"] += band.low <= flip <= band.high
    assert covered["noise"] / reps >= 0.93, covered
    assert covered["session"] / reps >= 0.93, covered
    if repeats == 5:  # the band this replaces: pairs that share attempts are not independent
        assert upper_bound(covered["wilson on pairs"], reps) < 0.93, covered


# ----------------------------------------------------------------- the sign-flip test
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=10),
       st.lists(st.integers(0, 3), min_size=10, max_size=10), st.integers(-3, 3))
def test_sign_flip_matches_enumeration(x, w, delta_tenths) -> None:
    xs = np.array(x, dtype=float)
    ws = np.array(w[: len(x)], dtype=float)
    delta = delta_tenths / 10
    r = xs - delta * ws
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(x))))
    brute = float(np.mean(np.abs(signs @ r) >= abs(r.sum()) - 1e-9))
    assert sign_flip_test(xs, ws, delta=delta).p_value == pytest.approx(brute, abs=1e-12)
    halves = sign_flip_test(xs + 0.5, ws, delta=delta)  # not integer: enumerated
    r2 = xs + 0.5 - delta * ws
    assert halves.p_value == pytest.approx(
        float(np.mean(np.abs(signs @ r2) >= abs(r2.sum()) - 1e-9)), abs=1e-12)


def test_sign_flip_monte_carlo_beyond_16_clusters() -> None:
    x = np.linspace(-0.3, 1.1, 20) + 0.05  # real values, 20 clusters: seeded Monte Carlo
    signs = 1.0 - 2.0 * ((np.arange(2**20)[:, None] >> np.arange(20)) & 1)
    exact = float(np.mean(np.abs(signs @ x) >= abs(x.sum()) - 1e-12))
    got = sign_flip_test(x, seed=3)
    assert got.method == "sign-flip-monte-carlo"
    assert got.p_value == pytest.approx(exact, abs=4 * math.sqrt(exact / 20_000) + 1e-4)
    assert got.p_value == sign_flip_test(x, seed=3).p_value  # same seed, same answer


def test_one_pair_per_scene_is_mcnemar() -> None:
    for b, c in [(1, 7), (0, 5), (9, 3), (0, 0), (12, 12), (20, 8)]:
        scenes = max(b + c, 1)  # one matched pair per scene; (0, 0): one tied scene
        got = clustered_paired_test(([1] * b + [0] * c) or [0], ([0] * b + [1] * c) or [0],
                                    [1] * scenes)
        exact = sm_mcnemar([[0, b], [c, 0]], exact=True).pvalue
        asym = 1.0 if b + c == 0 else sm_mcnemar([[0, b], [c, 0]], exact=False,
                                                 correction=False).pvalue
        assert got.details["sign_flip_p"] == pytest.approx(min(1.0, exact))
        assert got.p_value == pytest.approx(max(min(1.0, exact), asym))


# ----------------------------------------------------------------- compatibility (property)
tables = st.integers(1, 3).flatmap(lambda k: st.lists(
    st.tuples(st.integers(0, k), st.integers(0, k)).filter(lambda t: t[0] + t[1] <= k)
    .map(lambda t: (t[0], t[1], k)), min_size=1, max_size=12))


@settings(max_examples=80, deadline=None)
@given(tables, st.sampled_from([0.9, 0.95, 0.99, 1 - 0.05 / 3]))
def test_paired_interval_excludes_zero_exactly_when_the_test_rejects(table, confidence) -> None:
    b, c, n = (list(v) for v in zip(*table, strict=True))
    test = clustered_paired_test(b, c, n)
    d = clustered_paired_interval(b, c, n, confidence=confidence)
    assert d.excludes_zero == (test.p_value <= 1 - confidence)
    assert d.low <= d.estimate <= d.high and d.high > d.low  # never zero width
    assert d.estimate == pytest.approx((sum(b) - sum(c)) / sum(n))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 4), st.integers(0, 4),
                          st.integers(1, 4)).filter(lambda t: t[0] <= t[1] and t[2] <= t[3]),
                min_size=2, max_size=8))
def test_grouped_interval_agrees_with_its_test(rows) -> None:
    ka, na, kb, nb = (list(v) for v in zip(*rows, strict=True))
    test = clustered_grouped_test(ka, na, kb, nb)
    d = clustered_grouped_interval(ka, na, kb, nb)
    assert d.excludes_zero == (test.p_value <= 0.05)
    assert d.high > d.low


@settings(max_examples=12, deadline=None)
@given(st.lists(tables, min_size=2, max_size=4))
def test_holm_step_intervals_agree_with_adjusted_p_in_every_row(family) -> None:
    tests = [clustered_paired_test(*zip(*t, strict=True)) for t in family]
    adjusted, rejected, levels = holm_levels([t.p_value for t in tests], 0.05)
    want = multipletests([t.p_value for t in tests], alpha=0.05, method="holm")
    assert adjusted.tolist() == pytest.approx(want[1].tolist())
    assert rejected.tolist() == want[0].tolist()
    for t, table, adj, level in zip(tests, family, adjusted, levels, strict=True):
        d = clustered_paired_interval(*zip(*table, strict=True), confidence=1 - level)
        assert d.excludes_zero == (adj <= 0.05) == (t.p_value <= level)


# ----------------------------------------------------------------- price list: exact power
@pytest.mark.parametrize(("n", "p_a", "p_b", "psi", "comparisons"),
                         [(6, 0.8, 0.3, 0.6, 1), (15, 0.7, 0.4, 0.4, 1), (24, 0.6, 0.3, 0.5, 3)])
def test_power_is_exact_enumeration_of_the_test(n, p_a, p_b, psi, comparisons) -> None:
    p10, p01 = (psi + p_a - p_b) / 2, (psi - p_a + p_b) / 2
    brute = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            prob = sps.multinomial.pmf([b, c, n - b - c], n, [p10, p01, 1 - psi])
            test = clustered_paired_test([1] * b + [0] * c + [0] * (n - b - c),
                                         [0] * b + [1] * c + [0] * (n - b - c), [1] * n)
            brute += prob * (test.p_value <= 0.05 / comparisons)
    got = clustered_paired_power(n, p_a, p_b, psi, comparisons=comparisons)
    assert got == pytest.approx(brute, abs=1e-12)


def test_sample_size_is_the_first_n_reaching_the_power() -> None:
    for p_a, p_b, psi, m in [(0.85, 0.4, 0.55, 1), (0.6, 0.4, 0.4, 1), (0.6, 0.4, 0.4, 6)]:
        n = clustered_paired_sample_size(p_a, p_b, psi, comparisons=m)
        assert clustered_paired_power(n, p_a, p_b, psi, comparisons=m) >= 0.8
        assert all(clustered_paired_power(k, p_a, p_b, psi, comparisons=m) < 0.8
                   for k in range(max(1, n - 15), n))
    assert clustered_paired_sample_size(0.6, 0.4, 0.4, comparisons=6) > \
        clustered_paired_sample_size(0.6, 0.4, 0.4)


# ----------------------------------------------------------------- proportions and drift
def test_cluster_band_formula_and_edges() -> None:
    k, n = [2, 0, 1, 2, 2, 0, 1, 1], [2] * 8
    p = sum(k) / sum(n)
    var = 8 / 7 * sum((a - p * b) ** 2 for a, b in zip(k, n, strict=True)) / sum(n) ** 2
    m = sum(n) / max(var / (p * (1 - p) / sum(n)), 1)
    q = sps.t.isf(0.025, 7)
    centre = (p + q * q / (2 * m)) / (1 + q * q / m)
    half = q / (1 + q * q / m) * math.sqrt(p * (1 - p) / m + q * q / (4 * m * m))
    band = cluster_proportion_interval(k, n)
    assert (band.low, band.high) == pytest.approx((centre - half, centre + half))
    zero = cluster_proportion_interval([0] * 10, [3] * 10)
    assert zero.low == 0.0 and zero.high > 0.2  # 10 clusters worth one trial each
    with pytest.raises(InvalidCountsError):
        cluster_proportion_interval([3], [2])
    with pytest.raises(InvalidInputError):
        cluster_proportion_interval([1, 1], [2])


def test_score_test_against_statsmodels_and_the_constrained_mle() -> None:
    k1, n1, k2, n2 = 30.5, 50.2, 20.1, 48.7
    for delta in (-0.2, 0.0, 0.05, 0.3):
        t1, t2 = _mn_constrained(k1 / n1, n1, k2 / n2, n2, delta)

        def nll(p2: float, d: float = delta) -> float:
            return -(k1 * math.log(p2 + d) + (n1 - k1) * math.log(1 - p2 - d)
                     + k2 * math.log(p2) + (n2 - k2) * math.log(1 - p2))

        best = minimize_scalar(nll, bounds=(max(0, -delta) + 1e-9, min(1, 1 - delta) - 1e-9),
                               method="bounded", options={"xatol": 1e-12})
        assert (t1, t2) == pytest.approx((best.x + delta, best.x), abs=1e-6)
    # one trial per cluster: the design effect is G/(G-1) (CR1), the effective counts are
    # 99/100 of the raw ones, and the score statistic is referred to t with 99 df
    ka, kb = [1] * 60 + [0] * 40, [1] * 45 + [0] * 55
    d, t = clustered_diff_unpaired(ka, [1] * 100, kb, [1] * 100)
    z = sm_proportion.test_proportions_2indep(60 * 0.99, 99, 45 * 0.99, 99, method="score",
                                              correction=True).statistic
    assert t.p_value == pytest.approx(2 * sps.t.sf(abs(z), 99), rel=1e-3)
    assert d.excludes_zero == (t.p_value <= 0.05)
    with pytest.raises(InvalidParameterError):
        clustered_diff_unpaired(ka, [1] * 100, kb, [1] * 100, equality_p=1.5)


def test_holm_levels_validates() -> None:
    with pytest.raises(InvalidParameterError):
        holm_levels([0.1, 0.2], alpha=1.2)
    adjusted, rejected, levels = holm_levels([], 0.05)
    assert adjusted.size == rejected.size == levels.size == 0
