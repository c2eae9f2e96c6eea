"""Tests for evalband.stats._bootstrap.

Oracles: the Binomial(n, k/n) pmf and quantiles (exact distribution of the index
bootstrap's count), brute-force index resampling written out in this file,
``scipy.stats.bootstrap`` (BCa), ``numpy.quantile`` (the percentile step), the
closed-form plug-in variance of a stratified mean, Efron & Tibshirani's (1993)
closed-form acceleration for the mean, and the seed 000 worked example.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalband.errors import (
    InvalidCountsError,
    InvalidInputError,
    InvalidParameterError,
)
from evalband.stats import (
    Interval,
    bootstrap_interval,
    cluster_bootstrap_interval,
    interval,
    paired_stratified_bootstrap_interval,
    stratified_bootstrap_interval,
)
from evalband.stats import _bootstrap as boot

STRICT_ALPHA = 1e-3  # a correct sampler fails one of these tests 1 time in 1000


def _binary(k: int, n: int) -> np.ndarray:
    return np.r_[np.ones(k), np.zeros(n - k)]


def _pooled_chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    """Chi-square goodness-of-fit p-value, pooling cells with expected count < 5."""
    order = np.arange(expected.size)
    keep = expected >= 5
    first, last = order[keep][0], order[keep][-1]
    obs = np.r_[observed[:first].sum(), observed[first : last + 1], observed[last + 1 :].sum()]
    exp = np.r_[expected[:first].sum(), expected[first : last + 1], expected[last + 1 :].sum()]
    obs, exp = obs[exp > 0], exp[exp > 0]
    exp = exp * obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def _histogram_counts(values: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n + 1)
    out[np.rint(values * n).astype(int)] = counts
    return out


# ---------------------------------------------- binomial draws == index resampling


def test_binomial_draw_bootstrap_equals_index_resampling_in_distribution() -> None:
    n, k = 200, 45
    pmf = stats.binom.pmf(np.arange(n + 1), n, k / n)
    rng = np.random.default_rng(20240601)

    # Fast path, histogram branch (n + 1 <= reps): Multinomial(reps, pmf).
    values, counts = boot._binary_histogram(k, n, 200_000, rng)
    fast_hist = _histogram_counts(values, counts, n)
    # Fast path, per-replicate branch (n + 1 > reps): reps Binomial(n, k/n) draws.
    per_rep = np.zeros(n + 1)
    for _ in range(400):
        values, counts = boot._binary_histogram(k, n, 150, rng)
        per_rep += _histogram_counts(values, counts, n)
    # Brute-force index resampling, written out here (no library code).
    data = _binary(k, n)
    idx = rng.integers(0, n, size=(100_000, n))
    index_hist = np.bincount(data[idx].sum(axis=1).astype(int), minlength=n + 1)

    for hist in (fast_hist, per_rep, index_hist):
        assert _pooled_chi_square(hist, pmf * hist.sum()) > STRICT_ALPHA
    # Two-sample homogeneity: the fast histogram against index resampling.
    table = np.vstack([fast_hist, index_hist])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > STRICT_ALPHA


def test_the_distribution_test_can_fail() -> None:
    # Power check for the oracle above: a sampler off by 0.02 in p is rejected.
    n = 200
    rng = np.random.default_rng(3)
    wrong = np.bincount(rng.binomial(n, 0.245, size=200_000), minlength=n + 1)
    pmf = stats.binom.pmf(np.arange(n + 1), n, 45 / n)
    assert _pooled_chi_square(wrong, pmf * wrong.sum()) < 1e-6


def test_percentile_limits_converge_to_binomial_quantiles() -> None:
    # With many replicates the percentile interval is the Binomial(n, k/n) quantiles / n.
    n, k = 200, 45
    ci = bootstrap_interval(k=k, n=n, reps=200_000, seed=1)
    assert ci.low == stats.binom.ppf(0.025, n, k / n) / n
    assert ci.high == stats.binom.ppf(0.975, n, k / n) / n


def test_fast_and_index_paths_agree_on_the_interval() -> None:
    data = _binary(45, 200)
    fast = bootstrap_interval(data, reps=20_000, seed=5)
    slow = bootstrap_interval(data, reps=20_000, seed=6, fast=False)
    assert abs(fast.low - slow.low) <= 1 / 200 + 1e-12
    assert abs(fast.high - slow.high) <= 1 / 200 + 1e-12
    assert fast.estimate == slow.estimate == 0.225


# ---------------------------------------------------------------- worked example


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_bootstrap_lands_on_wilson_seed_000(seed: int) -> None:
    # Seed 000: pooled strong policy 45/200, Wilson [0.173, 0.288] vs bootstrap
    # [0.170, 0.285]. The percentile interval is on the 1/200 lattice; allow one step.
    ci = bootstrap_interval(k=45, n=200, seed=seed)
    assert ci.low == pytest.approx(0.170, abs=0.005 + 1e-9)
    assert ci.high == pytest.approx(0.285, abs=0.005 + 1e-9)
    wilson = interval(45, 200)
    assert abs(ci.low - wilson.low) < 0.01 and abs(ci.high - wilson.high) < 0.01


# -------------------------------------------------------------------- determinism


def test_same_seed_same_interval_different_seed_slightly_different() -> None:
    x = np.random.default_rng(0).exponential(size=60)
    a = bootstrap_interval(x, seed=123)
    b = bootstrap_interval(x, seed=123)
    c = bootstrap_interval(x, seed=124)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert abs(a.low - c.low) < 0.05 * a.width and abs(a.high - c.high) < 0.05 * a.width
    binary_a = bootstrap_interval(k=45, n=200, seed=7)
    assert binary_a == bootstrap_interval(k=45, n=200, seed=7)


def test_generator_seed_is_accepted_and_advanced() -> None:
    rng = np.random.default_rng(9)
    x = np.arange(30.0)
    first = bootstrap_interval(x, seed=rng)
    second = bootstrap_interval(x, seed=rng)
    assert first != second
    assert first == bootstrap_interval(x, seed=np.random.default_rng(9))


def test_chunking_does_not_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(1).normal(size=500)
    whole = bootstrap_interval(x, reps=3000, seed=4)
    monkeypatch.setattr(boot, "_CHUNK_ELEMENTS", 500 * 7)  # 7 rows per chunk
    assert bootstrap_interval(x, reps=3000, seed=4) == whole


# ----------------------------------------------------------------- percentile step


def test_histogram_quantiles_reproduce_numpy_quantile() -> None:
    rng = np.random.default_rng(2)
    for _ in range(300):
        size = int(rng.integers(1, 400))
        sample = rng.integers(0, int(rng.integers(1, 12)), size=size) / 7.0
        if rng.random() < 0.3:
            sample = rng.normal(size=size)
        probs = [0.0, float(rng.random()), 0.025, 0.975, 1.0]
        values, counts = boot._histogram(sample)
        assert boot._histogram_quantiles(values, counts, probs) == pytest.approx(
            list(np.quantile(sample, probs)), abs=1e-15
        )


# ----------------------------------------------------------------------------- BCa


def test_bca_matches_scipy_within_monte_carlo_error() -> None:
    x = np.random.default_rng(11).lognormal(size=40)
    ours = bootstrap_interval(x, method="bca", reps=40_000, seed=1)
    ref = stats.bootstrap(
        (x,), np.mean, method="BCa", n_resamples=40_000, rng=np.random.default_rng(99)
    ).confidence_interval
    # Monte-Carlo sd of each endpoint at 40k replicates is ~0.004 here.
    assert ours.low == pytest.approx(ref.low, abs=0.02)
    assert ours.high == pytest.approx(ref.high, abs=0.02)
    # Skewed data: BCa shifts right of the percentile interval.
    pct = bootstrap_interval(x, reps=40_000, seed=1)
    assert ours.high > pct.high


def test_bca_median_and_callable_match_scipy() -> None:
    x = np.random.default_rng(12).gamma(2.0, size=35)
    ours = bootstrap_interval(x, statistic="median", method="bca", reps=20_000, seed=2)
    ref = stats.bootstrap(
        (x,), np.median, method="BCa", n_resamples=20_000, rng=np.random.default_rng(3)
    ).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.06)
    assert ours.high == pytest.approx(ref.high, abs=0.06)
    sd = bootstrap_interval(x, statistic=np.std, method="bca", reps=20_000, seed=2)
    ref_sd = stats.bootstrap(
        (x,), np.std, method="BCa", n_resamples=20_000, rng=np.random.default_rng(4)
    ).confidence_interval
    assert sd.low == pytest.approx(ref_sd.low, abs=0.05)
    assert sd.high == pytest.approx(ref_sd.high, abs=0.05)
    assert sd.estimate == pytest.approx(float(np.std(x)))


def test_bca_levels_follow_efron_tibshirani_closed_form() -> None:
    # For the mean, the jackknife acceleration is
    #   a = sum (x_i - xbar)^3 / (6 (sum (x_i - xbar)^2)^(3/2))
    # (Efron & Tibshirani 1993, eq. 14.15 specialised to the mean). With a replicate
    # histogram symmetric about the estimate, z0 = 0 and alpha_1 = Phi(z / (1 - a z)).
    x = np.array([0.1, 0.4, 0.5, 0.9, 2.5, 6.0])
    d = x - x.mean()
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    values = np.array([1.0, 2.0, 3.0])
    counts = np.array([10, 5, 10])
    alpha_1, alpha_2 = boot._bca_probs(values, counts, 2.0, boot._jackknife(x, "mean"), 0.9)
    z = stats.norm.ppf(0.05)
    assert alpha_1 == pytest.approx(stats.norm.cdf(z / (1 - a * z)), abs=1e-12)
    assert alpha_2 == pytest.approx(stats.norm.cdf(-z / (1 + a * z)), abs=1e-12)


def test_jackknife_closed_form_equals_generic() -> None:
    x = np.random.default_rng(4).normal(size=23)
    np.testing.assert_allclose(boot._jackknife(x, "mean"), boot._jackknife(x, np.mean))
    brute = np.array([np.median(np.delete(x, i)) for i in range(x.size)])
    np.testing.assert_array_equal(boot._jackknife(x, "median"), brute)


def test_bca_on_binary_counts_and_degenerate_counts() -> None:
    ci = bootstrap_interval(k=45, n=200, method="bca", seed=0)
    assert ci.method == "bootstrap-bca"
    assert 0.16 < ci.low < 0.19 and 0.27 < ci.high < 0.30
    zero = bootstrap_interval(k=0, n=20, method="bca", seed=0)
    assert (zero.low, zero.high) == (0.0, 0.0)  # the documented boundary collapse


def test_bca_refuses_when_every_replicate_is_on_one_side() -> None:
    def shifted(x: np.ndarray, axis: int = -1) -> np.ndarray:
        # estimate (one row) 0; every replicate (many rows) 1.
        return np.full(x.shape[:-1], 0.0 if x.shape[0] == 1 else 1.0)

    with pytest.raises(InvalidInputError, match="percentile"):
        bootstrap_interval(np.arange(5.0), statistic=shifted, method="bca", reps=50, seed=0)


# ---------------------------------------------------------------------- stratified


def _brute_stratified(
    strata: dict[str, np.ndarray], weights: dict[str, float], reps: int, seed: int
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    total_w = sum(weights.values())
    out = np.zeros(reps)
    for name, x in strata.items():
        idx = rng.integers(0, x.size, size=(reps, x.size))
        out += weights[name] / total_w * x[idx].mean(axis=1)
    return out


def test_stratified_weighted_matches_brute_force_in_distribution() -> None:
    strata = {
        "a": _binary(20, 30),
        "b": _binary(10, 50),
        "c": np.array([0, 1, 2, 2, 1, 0, 2, 2, 2, 1, 0, 2, 1, 1, 2, 2, 0, 2, 1, 2], float),
    }
    weights = {"a": 1.0, "b": 2.0, "c": 1.0}
    norm = {k: v / 4.0 for k, v in weights.items()}
    reps = 60_000
    estimate, fast = boot._stratified_replicates(
        strata, norm, reps, np.random.default_rng(1), fast=True
    )
    brute = _brute_stratified(strata, weights, reps, seed=2)
    assert estimate == pytest.approx(sum(norm[s] * strata[s].mean() for s in strata))
    assert stats.ks_2samp(fast, brute).pvalue > STRICT_ALPHA
    # Exact plug-in variance of the stratified bootstrap mean: sum w_s^2 var_s / n_s.
    exact_var = sum(norm[s] ** 2 * strata[s].var() / strata[s].size for s in strata)
    assert fast.var() == pytest.approx(exact_var, rel=0.03)
    assert fast.mean() == pytest.approx(estimate, abs=4 * math.sqrt(exact_var / reps))
    # The KS test has power: unstratified pooled resampling has a different spread.
    pooled = np.concatenate(list(strata.values()))
    rng = np.random.default_rng(3)
    wrong = pooled[rng.integers(0, pooled.size, size=(reps, pooled.size))].mean(axis=1)
    assert stats.ks_2samp(fast, wrong).pvalue < 1e-6


def test_stratified_interval_matches_brute_force_percentiles() -> None:
    counts = {"easy": (18, 20), "hard": (4, 20), "mid": (30, 60)}
    weights = {"easy": 1, "hard": 1, "mid": 1}
    ci = stratified_bootstrap_interval(counts=counts, weights=weights, reps=40_000, seed=8)
    arrays = {k: _binary(*v) for k, v in counts.items()}
    brute = _brute_stratified(arrays, {k: float(v) for k, v in weights.items()}, 40_000, 9)
    low, high = np.quantile(brute, [0.025, 0.975])
    assert ci.low == pytest.approx(low, abs=0.01)
    assert ci.high == pytest.approx(high, abs=0.01)
    assert ci.estimate == pytest.approx((0.9 + 0.2 + 0.5) / 3)
    assert ci.n == 100 and ci.method == "stratified-bootstrap-percentile"


def test_stratified_default_weights_give_pooled_mean_and_counts_equal_arrays() -> None:
    counts = {"a": (3, 10), "b": (30, 40)}
    by_counts = stratified_bootstrap_interval(counts=counts, seed=4)
    by_arrays = stratified_bootstrap_interval({k: _binary(*v) for k, v in counts.items()}, seed=4)
    assert by_counts == by_arrays
    assert by_counts.estimate == pytest.approx(33 / 50)


def test_stratified_fast_false_same_distribution() -> None:
    counts = {"a": (3, 10), "b": (30, 40)}
    fast = stratified_bootstrap_interval(counts=counts, reps=40_000, seed=1)
    slow = stratified_bootstrap_interval(counts=counts, reps=40_000, seed=2, fast=False)
    assert abs(fast.low - slow.low) < 0.015 and abs(fast.high - slow.high) < 0.015


def test_stratified_narrower_than_pooled_bootstrap_when_strata_differ() -> None:
    # Conditioning on stratum sizes removes between-stratum variance.
    counts = {"easy": (95, 100), "hard": (5, 100)}
    strat = stratified_bootstrap_interval(counts=counts, seed=0)
    pooled = bootstrap_interval(k=100, n=200, seed=0)
    assert strat.width < 0.5 * pooled.width


# ------------------------------------------------- paired stratified (pair-type counts)


def _paired_diffs(both: int, a_only: int, b_only: int, neither: int) -> np.ndarray:
    """Per-pair differences y_A - y_B of a stratum, one entry per matched pair."""
    return np.r_[np.zeros(both), np.ones(a_only), -np.ones(b_only), np.zeros(neither)]


def test_paired_interval_agrees_with_index_resampling_at_20000_reps() -> None:
    # Two cells of n = 200 pairs, a hidden-regression shape (one up, one down).
    pairs = {"easy": (130, 40, 6, 24), "hard": (70, 5, 38, 87)}
    weights = {"easy": 1.0, "hard": 1.0}
    reps = 20_000
    fast = paired_stratified_bootstrap_interval(pairs, weights=weights, reps=reps, seed=11)
    diffs = {name: _paired_diffs(*c) for name, c in pairs.items()}
    brute = _brute_stratified(diffs, weights, reps, seed=12)  # index resampling, written here
    low, high = np.quantile(brute, [0.025, 0.975])
    # Tolerance: the replicate sd is <= 0.5 * sqrt(2 * 1/200) = 0.05, so the Monte Carlo sd of
    # a 2.5% quantile from B = 20,000 is ~sqrt(.025 * .975 / B) / (phi(1.96) / 0.05) ~ 0.001
    # per path; 0.01 is ~7 sd of the fast-minus-index gap (lattice step 0.0025 included).
    assert fast.low == pytest.approx(low, abs=0.01)
    assert fast.high == pytest.approx(high, abs=0.01)
    assert fast.estimate == pytest.approx(0.5 * (34 / 200) + 0.5 * (-33 / 200))
    assert fast.n == 400 and fast.method == "stratified-bootstrap-percentile"
    # The library's own index path (fast=False) lands in the same place.
    slow = paired_stratified_bootstrap_interval(
        pairs, weights=weights, reps=reps, seed=13, fast=False
    )
    assert slow.estimate == pytest.approx(fast.estimate)
    assert abs(slow.low - fast.low) < 0.01 and abs(slow.high - fast.high) < 0.01
    # ...and equals stratified_bootstrap_interval on the difference arrays (same reference).
    assert stratified_bootstrap_interval(diffs, weights=weights, seed=0).estimate == (
        pytest.approx(fast.estimate)
    )


def _exact_paired_distribution(
    strata: dict[str, np.ndarray], weights: dict[str, float]
) -> dict[int, float]:
    """Every index resample of every stratum enumerated: statistic (x 1e9, rounded) -> prob."""
    import itertools

    per_stratum = []
    for name, d in strata.items():
        dist: dict[float, float] = {}
        for idx in itertools.product(range(d.size), repeat=d.size):
            value = weights[name] * float(d[list(idx)].mean())
            dist[value] = dist.get(value, 0.0) + d.size ** (-d.size)
        per_stratum.append(dist)
    out: dict[int, float] = {}
    for combo in itertools.product(*(dist.items() for dist in per_stratum)):
        key = round(sum(v for v, _ in combo) * 1e9)
        out[key] = out.get(key, 0.0) + math.prod(p for _, p in combo)
    return out


def test_paired_multinomial_replicates_match_exact_enumeration_of_index_resamples() -> None:
    # n = 3 pairs per cell, 2 cells: 3^3 * 3^3 = 729 equally likely index resamples.
    pairs = {"x": (0, 1, 1, 1), "y": (1, 2, 0, 0)}
    weights = {"x": 0.3, "y": 0.7}  # unequal, so the two cells' lattices do not coincide
    exact = _exact_paired_distribution(
        {name: _paired_diffs(*c) for name, c in pairs.items()}, weights
    )
    assert sum(exact.values()) == pytest.approx(1.0)
    reps = 200_000
    estimate, replicates = boot._paired_multinomial_replicates(
        pairs, weights, reps, np.random.default_rng(5)
    )
    assert estimate == pytest.approx(0.3 * 0 + 0.7 * 2 / 3)
    keys, observed = np.unique(np.rint(replicates * 1e9).astype(np.int64), return_counts=True)
    assert set(keys.tolist()) <= set(exact)  # no value index resampling could not produce
    support = sorted(exact)
    seen = dict(zip(keys.tolist(), observed.tolist(), strict=True))
    obs = np.array([seen.get(k, 0) for k in support])
    expected = np.array([exact[k] for k in support]) * reps
    assert _pooled_chi_square(obs, expected) > STRICT_ALPHA
    total_variation = 0.5 * np.abs(obs / reps - expected / reps).sum()
    assert total_variation < 0.01
    # The test has power: resampling the two cells pooled (not stratified) is rejected.
    pooled = np.r_[_paired_diffs(*pairs["x"]), _paired_diffs(*pairs["y"])]
    rng = np.random.default_rng(6)
    wrong = pooled[rng.integers(0, 6, size=(reps, 6))].mean(axis=1)
    assert stats.ks_2samp(replicates, wrong).pvalue < 1e-6
    # The public interval is the percentile step applied to exactly these replicates.
    ci = paired_stratified_bootstrap_interval(
        pairs, weights=weights, reps=reps, seed=np.random.default_rng(5)
    )
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(replicates, [0.025, 0.975])))


def test_paired_default_weights_seed_and_degenerate_cells() -> None:
    pairs = {"a": (5, 3, 1, 1), "b": (20, 0, 10, 10)}
    ci = paired_stratified_bootstrap_interval(pairs, seed=3)
    assert ci.estimate == pytest.approx((3 - 1 + 0 - 10) / 50)  # size weights: pooled mean
    assert ci == paired_stratified_bootstrap_interval(pairs, seed=3)
    assert ci.low < ci.estimate < ci.high
    # No discordant pair anywhere: every resample's difference is 0.
    flat = paired_stratified_bootstrap_interval({"a": (4, 0, 0, 6)}, seed=0)
    assert (flat.estimate, flat.low, flat.high) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        ({}, InvalidInputError),
        ({"a": (1, 2, 3)}, InvalidInputError),
        ({"a": 5}, InvalidInputError),
        ({"a": (0, 0, 0, 0)}, InvalidInputError),
        ({"a": (1, -1, 0, 0)}, InvalidCountsError),
        ({"a": (1, 1.5, 0, 0)}, InvalidCountsError),
    ],
)
def test_paired_bad_pairs_raise(pairs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        paired_stratified_bootstrap_interval(pairs, seed=0)  # type: ignore[arg-type]


def test_paired_bad_weights_and_seed_raise() -> None:
    with pytest.raises(InvalidParameterError, match="weights must name"):
        paired_stratified_bootstrap_interval({"a": (1, 1, 0, 0)}, weights={"b": 1}, seed=0)
    with pytest.raises(InvalidParameterError, match="seed"):
        paired_stratified_bootstrap_interval({"a": (1, 1, 0, 0)}, seed=None)  # type: ignore[arg-type]


# ------------------------------------------------------------------------- cluster


def _correlated_clusters(groups: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rates = rng.choice([0.05, 0.95], size=groups)  # each scene mostly all-pass or all-fail
    values = (rng.random((groups, size)) < rates[:, None]).astype(float).ravel()
    labels = np.repeat([f"scene{g}" for g in range(groups)], size)
    return values, labels


def test_cluster_bootstrap_wider_than_iid_when_clusters_correlated() -> None:
    values, labels = _correlated_clusters(groups=30, size=10, seed=0)
    clustered = cluster_bootstrap_interval(values, labels, seed=1)
    iid = bootstrap_interval(values, seed=1)
    assert clustered.estimate == pytest.approx(values.mean())
    assert clustered.width > 2.0 * iid.width


def test_cluster_bootstrap_matches_brute_force_cluster_resampling() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 9, size=25)  # unequal cluster sizes: ratio of sums
    labels = np.repeat(np.arange(25), sizes)
    values = rng.integers(0, 3, size=labels.size).astype(float)
    reps = 20_000
    fast = boot._cluster_replicates(
        np.bincount(labels, weights=values),
        np.bincount(labels).astype(float),
        reps,
        np.random.default_rng(6),
    )
    # Brute force: list of clusters, pick G with replacement, concatenate, take the mean.
    clusters = [values[labels == g] for g in range(25)]
    picks = np.random.default_rng(7).integers(0, 25, size=(reps, 25))
    brute = np.array([np.concatenate([clusters[g] for g in row]).mean() for row in picks])
    assert stats.ks_2samp(fast, brute).pvalue > STRICT_ALPHA
    iid = values[np.random.default_rng(8).integers(0, values.size, (reps, values.size))]
    assert stats.ks_2samp(fast, iid.mean(axis=1)).pvalue < 1e-6


def test_cluster_with_singletons_is_the_iid_bootstrap() -> None:
    x = np.random.default_rng(2).normal(size=80)
    single = cluster_bootstrap_interval(x, range(80), reps=20_000, seed=3)
    iid = bootstrap_interval(x, reps=20_000, seed=4)
    assert single.low == pytest.approx(iid.low, abs=0.03)
    assert single.high == pytest.approx(iid.high, abs=0.03)


def test_cluster_labels_of_any_hashable_type() -> None:
    values = [1, 0, 1, 1, 0, 0]
    labels = [("s", 1), ("s", 1), ("s", 2), ("s", 2), ("s", 3), ("s", 3)]
    ci = cluster_bootstrap_interval(values, labels, seed=0)
    assert isinstance(ci, Interval) and ci.n == 6
    assert ci == cluster_bootstrap_interval(values, labels, seed=0)


# ----------------------------------------------------------------------- bad input


@pytest.mark.parametrize("seed", [None, -1, 1.5, "0", True])
def test_bad_seed_raises(seed: object) -> None:
    with pytest.raises(InvalidParameterError, match="seed"):
        bootstrap_interval(k=3, n=10, seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize("reps", [0, -5, 1.5, math.nan, "100", True])
def test_bad_reps_raise(reps: object) -> None:
    with pytest.raises(InvalidParameterError, match="reps"):
        bootstrap_interval(k=3, n=10, reps=reps, seed=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"confidence": 1.0},
        {"confidence": math.nan},
        {"method": "basic"},
        {"statistic": "mode"},
    ],
)
def test_bad_parameters_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidParameterError):
        bootstrap_interval(k=3, n=10, seed=0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "kwargs"),
    [
        ([], {}),
        ([0.1, math.nan], {}),
        ([[0, 1], [1, 0]], {}),
        (["a", "b"], {}),
        (None, {}),
        (None, {"k": 3}),
        ([0, 1], {"k": 1, "n": 2}),
        ([1.0], {"method": "bca"}),
    ],
)
def test_bad_data_raise(data: object, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        bootstrap_interval(data, seed=0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("k", "n"), [(11, 10), (-1, 10), (1.5, 10), (0, 0)])
def test_bad_counts_raise(k: object, n: object) -> None:
    with pytest.raises(InvalidCountsError):
        bootstrap_interval(k=k, n=n, seed=0)  # type: ignore[arg-type]


def test_bad_callable_statistic_raises() -> None:
    with pytest.raises(InvalidParameterError, match="axis"):
        bootstrap_interval([1.0, 2.0, 3.0], statistic=lambda x, axis: x, seed=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"counts": {"a": (1, 2)}, "weights": {"b": 1.0}},
        {"counts": {"a": (1, 2)}, "weights": {"a": -1.0}},
        {"counts": {"a": (1, 2)}, "weights": {"a": 0.0}},
        {"counts": {"a": (1, 2)}, "weights": {"a": math.inf}},
    ],
)
def test_stratified_bad_weights_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidParameterError, match="weight"):
        stratified_bootstrap_interval(seed=0, **kwargs)  # type: ignore[arg-type]


def test_stratified_bad_inputs_raise() -> None:
    with pytest.raises(InvalidInputError):
        stratified_bootstrap_interval(seed=0)
    with pytest.raises(InvalidInputError):
        stratified_bootstrap_interval({"a": [1, 0]}, counts={"a": (1, 2)}, seed=0)
    with pytest.raises(InvalidInputError):
        stratified_bootstrap_interval({}, seed=0)
    with pytest.raises(InvalidInputError):
        stratified_bootstrap_interval({"a": []}, seed=0)
    with pytest.raises(InvalidInputError):
        stratified_bootstrap_interval(counts={"a": 3}, seed=0)  # type: ignore[dict-item]
    with pytest.raises(InvalidCountsError):
        stratified_bootstrap_interval(counts={"a": (3, 2)}, seed=0)


def test_cluster_bad_inputs_raise() -> None:
    with pytest.raises(InvalidInputError, match="labels"):
        cluster_bootstrap_interval([1, 0, 1], ["a", "b"], seed=0)
    with pytest.raises(InvalidInputError, match="2 clusters"):
        cluster_bootstrap_interval([1, 0, 1], ["a", "a", "a"], seed=0)
    with pytest.raises(InvalidInputError, match="hashable"):
        cluster_bootstrap_interval([1, 0], [["a"], ["b"]], seed=0)
    with pytest.raises(InvalidInputError):
        cluster_bootstrap_interval([1, math.nan], ["a", "b"], seed=0)
    with pytest.raises(InvalidParameterError):
        cluster_bootstrap_interval([1, 0], ["a", "b"], seed=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "p"), [(1, 0.5), (200, 0.225), (64, 9 / 64), (5000, 0.001)])
def test_binomial_pmf_helper_matches_scipy(n: int, p: float) -> None:
    # The histogram branch builds the Binomial pmf from log-gamma; scipy.stats is the oracle.
    np.testing.assert_allclose(
        boot._binomial_pmf(n, p), stats.binom.pmf(np.arange(n + 1), n, p), rtol=1e-9, atol=1e-300
    )
