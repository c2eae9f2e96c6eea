"""Prediction-powered inference for a mean: the reference formulas, coverage and width.

The oracle for the estimate and interval is the authors' package, ``ppi_py`` (github.com/
aangelopoulos/ppi_py, ``ppi_py/ppi.py``: ``ppi_mean_pointestimate``, ``ppi_mean_ci``;
``ppi_py/utils/statistics_utils.py``: ``_calc_lam_glm``), transcribed below line by line with
numpy (the package itself pulls numba, sklearn and statsmodels' private helpers, so it is not
a dependency). The ``mover`` interval's parts are held to Wilson's and Tango's score
intervals, which it reduces to at ``lam`` 0 and 1. Coverage and width are simulated here with
a small seeded Monte Carlo (on the counts, all the ``mover`` interval depends on; the
vectorised path is first held equal to ``ppi_mean``); ``bench/bench_ppi.py`` runs the grid.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from evalband.errors import InvalidInputError
from evalband.stats import interval
from evalband.stats._ppi import mover_limits, ppi_mean, tuned_lambda_counts


def reference_ci(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, alpha: float,
                 lam: float | None) -> tuple[float, float, float]:
    """``ppi_py``'s ``ppi_mean_ci`` for a 1-d mean (weights all one), transcribed."""
    n, big_n = y.shape[0], yhat_u.shape[0]
    if lam is None:  # ppi_mean_ci: the lam = 1 estimate, then _calc_lam_glm with clip=True
        est1 = yhat_u.mean() + (y - yhat).mean()
        grads, grads_hat, grads_hat_u = y - est1, yhat - est1, yhat_u - est1
        gc, ghc = grads - grads.mean(), grads_hat - grads_hat.mean()
        cov_grads = (1 / n) * (gc @ ghc + ghc @ gc)
        var_grads_hat = np.cov(np.concatenate([grads_hat, grads_hat_u]))
        lam = float(np.clip(cov_grads / (2 * (1 + n / big_n) * var_grads_hat), 0, 1))
    est = (lam * yhat_u).mean() + (y - lam * yhat).mean()
    imputed_std = (lam * yhat_u).std() / np.sqrt(big_n)
    rectifier_std = (y - lam * yhat).std() / np.sqrt(n)
    half = NormalDist().inv_cdf(1 - alpha / 2) * np.sqrt(imputed_std**2 + rectifier_std**2)
    return float(est - half), float(est + half), lam


def labels(rng: np.random.Generator, p: float, agree: float, size: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """True success ``y`` and a cheap label that agrees with it with probability ``agree``."""
    y = rng.random(size) < p
    flip = rng.random(size) > agree
    return y.astype(float), np.where(flip, ~y, y).astype(float)


def counts(rng: np.random.Generator, p: float, agree: float, errors: str, n: int, big_n: int,
           reps: int) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` runs as counts: the labelled 2x2 table (both, trusted only, cheap only,
    neither) and the cheap successes among ``big_n`` unlabelled episodes."""
    if errors == "symmetric":
        e = 1.0 - agree
        probs = [p * (1 - e), p * e, (1 - p) * e, (1 - p) * (1 - e)]
    else:  # the cheap scorer calls failures successes, never the reverse
        rate = min(1.0, (1.0 - agree) / (1.0 - p))
        probs = [p, 0.0, (1 - p) * rate, (1 - p) * (1 - rate)]
    tables = rng.multinomial(n, probs, size=reps).astype(float)
    return tables, rng.binomial(big_n, probs[0] + probs[2], size=reps).astype(float)


def coverage_and_width(p: float, agree: float, errors: str, n: int, big_n: int, reps: int,
                       seed: int) -> tuple[int, float, float]:
    """Hits of the default ``mover`` interval, its mean width and the trusted Wilson's."""
    from evalband.stats._intervals import _wilson

    tables, k_u = counts(np.random.default_rng(seed), p, agree, errors, n, big_n, reps)
    _, low, high, _ = mover_limits(tables, k_u, big_n, tuned_lambda_counts(tables, k_u, big_n),
                                   0.95)
    w_low, w_high = _wilson(tables[:, 0] + tables[:, 1], np.full(reps, float(n)), 0.95)
    return (int(((low <= p) & (p <= high)).sum()), float(np.mean(high - low)),
            float(np.mean(w_high - w_low)))


@pytest.mark.parametrize("lam", [1.0, 0.0, 0.3, None])
@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_estimate_and_interval_equal_the_reference_formulas(lam: float | None,
                                                            kind: str) -> None:
    rng = np.random.default_rng(11)
    if kind == "binary":
        y, yhat = labels(rng, 0.6, 0.85, 300)
    else:  # a progress score and a noisy, biased prediction of it
        y = rng.beta(2, 3, 300)
        yhat = np.clip(y + rng.normal(0.05, 0.1, 300), 0, 1)
    r = ppi_mean(y[:60], yhat[:60], yhat[60:], confidence=0.9, lam=lam)
    low, high, used = reference_ci(y[:60], yhat[:60], yhat[60:], 0.1, lam)
    assert r.lam == pytest.approx(used, abs=1e-12)
    assert (r.low, r.high) == pytest.approx((low, high), abs=1e-12)
    assert r.estimate == pytest.approx((low + high) / 2, abs=1e-12)
    if lam == 0.0:  # the classical interval of the trusted labels
        assert (r.low, r.high) == pytest.approx((r.classical_low, r.classical_high))


def test_worked_example_by_hand() -> None:
    # Y = 1,1,0,1 and Yhat = 1,1,0,0 on the labelled items; 6 of 8 cheap-only labels are 1.
    # theta = 6/8 + (0 + 0 + 0 + 1)/4 = 1.0; se^2 = (0.75 * 0.25)/8 + (0.25 * 0.75)/4.
    r = ppi_mean([1, 1, 0, 1], [1, 1, 0, 0], [1, 0, 1, 1, 1, 0, 1, 1], lam=1.0)
    se = math.sqrt(0.1875 / 8 + 0.1875 / 4)
    assert r.estimate == 1.0 and r.se == pytest.approx(se)
    assert r.high - r.low == pytest.approx(2 * 1.959963985 * se)


def test_unbiased_where_the_cheap_scorer_is_biased() -> None:
    # the cheap scorer calls 30% of failures successes: its own mean is far off (0.58)
    rng = np.random.default_rng(5)
    reps, n, big_n, p = 3000, 30, 300, 0.4
    y = (rng.random((reps, n + big_n)) < p).astype(float)
    yhat = np.where((y == 0) & (rng.random(y.shape) < 0.3), 1.0, y)
    est = np.array([ppi_mean(y[i, :n], yhat[i, :n], yhat[i, n:], lam=1.0).estimate
                    for i in range(reps)])  # the paper's lam = 1: unbiased at every n
    se = est.std() / math.sqrt(reps)
    assert abs(est.mean() - p) < 3.5 * se
    assert abs(yhat.mean() - p) > 0.15


def test_the_vectorised_mover_is_ppi_mean() -> None:
    rng = np.random.default_rng(9)
    tables, k_u = counts(rng, 0.4, 0.85, "symmetric", 40, 400, 6)
    lam = tuned_lambda_counts(tables, k_u, 400)
    est, low, high, _ = mover_limits(tables, k_u, 400, lam, 0.9)
    for i in range(6):
        a, b, c, d = (int(x) for x in tables[i])
        y = np.repeat([1.0, 1.0, 0.0, 0.0], [a, b, c, d])
        yhat = np.repeat([1.0, 0.0, 1.0, 0.0], [a, b, c, d])
        r = ppi_mean(y, yhat, (np.arange(400) < k_u[i]).astype(float), method="mover",
                     confidence=0.9)
        assert (r.estimate, r.low, r.high, r.lam) == pytest.approx(
            (est[i], low[i], high[i], lam[i]), abs=1e-12)


@pytest.mark.parametrize("p, agree, errors, n", [
    (0.5, 0.85, "one-sided", 30),   # the design the earlier interval missed (93.6%)
    (0.5, 0.7, "symmetric", 20), (0.1, 0.85, "symmetric", 30), (0.3, 0.95, "one-sided", 60),
])
def test_coverage_reaches_95_percent(p: float, agree: float, errors: str, n: int) -> None:
    """2,000 seeded draws, ``N = 10 n``: the 99% band of the coverage reaches 95%.

    The first design is where the Newcombe-paired MOVER with the Wilson fallback covered
    93.6% (bench, 1,000 draws; 94.0% in 3,000 more): that code covered 1,882 of these 2,000
    draws (94.1%). The second is the tightest of the grid: its exact coverage is 95.1%
    (:func:`test_exact_coverage_by_enumeration`), so a point estimate from 2,000 draws lands
    below 95% about a third of the time; the band is the honest check here."""
    reps = 2000
    hits, width, wilson_width = coverage_and_width(p, agree, errors, n, 10 * n, reps, 29)
    mc = interval(hits, reps, method="clopper-pearson", confidence=0.99)
    assert mc.high >= 0.95, f"coverage {hits / reps:.4f}, 99% MC [{mc.low:.3f}, {mc.high:.3f}]"
    if agree >= 0.85 and p == 0.5:  # an informative cheap scorer: narrower than Wilson
        assert width < wilson_width


def test_clt_coverage_with_many_trusted_labels() -> None:
    rng = np.random.default_rng(65)
    reps, n, big_n, p, hits = 600, 150, 1500, 0.5, 0
    for _ in range(reps):
        y, yhat = labels(rng, p, 0.85, n + big_n)
        r = ppi_mean(y[:n], yhat[:n], yhat[n:], method="clt")
        hits += r.low <= p <= r.high
    mc = interval(hits, reps, method="wilson", confidence=0.99)
    assert mc.high >= 0.95, f"coverage {hits / reps:.3f}, 99% MC [{mc.low:.3f}, {mc.high:.3f}]"


@pytest.mark.parametrize("p, agree, errors", [(0.5, 0.85, "symmetric"),
                                              (0.35, 0.9, "one-sided"),
                                              (0.7, 0.95, "symmetric")])
def test_narrower_than_the_trusted_labels_alone_when_the_cheap_scorer_agrees(
        p: float, agree: float, errors: str) -> None:
    _, width, wilson_width = coverage_and_width(p, agree, errors, 60, 1200, 300, 3)
    assert width < 0.9 * wilson_width


@pytest.mark.parametrize("args, kwargs, match", [
    (([1], [1], [1, 0]), {}, "at least 2"),
    (([1, 0], [1], [1, 0]), {}, "both labels"),
    (([1, 0], [1, 0], [1, 0]), {"lam": 1.5}, "lam"),
    (([1, 0], [1, 0.5], [1, 0]), {"method": "mover"}, "0 or 1"),
    (([1, 0], [1, float("nan")], [1, 0]), {}, "finite"),
])
def test_bad_input_is_refused(args: tuple[list[float], ...], kwargs: dict[str, object],
                              match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        ppi_mean(*args, **kwargs)  # type: ignore[arg-type]


def test_equal_to_the_authors_package() -> None:
    """Against ``ppi_py`` itself (ppi-python, a dev dependency: ``make test`` installs it; not a
    user dependency, it needs numba and scikit-learn). On 2026-12-03 with ppi-python 0.2.3 the
    largest difference was 3.3e-16 over 600 random binary and continuous cases, lam 1, 0.4 and
    tuned."""
    import ppi_py
    rng = np.random.default_rng(0)
    for t in range(60):
        n, big_n = int(rng.integers(5, 200)), int(rng.integers(5, 2000))
        if t % 2:
            y, yhat = labels(rng, float(rng.random()), 0.85, n + big_n)
        else:
            y = rng.normal(size=n + big_n)
            yhat = y + rng.normal(0.3, 0.5, n + big_n)
        for lam in (1.0, None, 0.4):
            low, high = ppi_py.ppi_mean_ci(y[:n], yhat[:n], yhat[n:], alpha=0.05, lam=lam)
            r = ppi_mean(y[:n], yhat[:n], yhat[n:], lam=lam)
            assert (r.low, r.high) == pytest.approx(
                (float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-12)


def test_tuned_lambda_and_estimate_are_the_authors_package() -> None:
    """PPI++'s lam against ``ppi_py.ppi._calc_lam_glm`` (clip=True, as ``ppi_mean_ci``), from
    labels and from counts, and the tuned mover's estimate against
    ``ppi_mean_pointestimate(lam=None)``."""
    import ppi_py
    from ppi_py.ppi import _calc_lam_glm

    from evalband.stats._ppi import tuned_lambda

    rng = np.random.default_rng(1)
    for _ in range(40):
        n, big_n = int(rng.integers(10, 150)), int(rng.integers(20, 1500))
        y, yhat = labels(rng, float(rng.uniform(0.02, 0.98)), float(rng.uniform(0.6, 1)),
                         n + big_n)
        y_l, yh_l, yh_u = y[:n], yhat[:n], yhat[n:]
        est1 = yh_u.mean() + (y_l - yh_l).mean()
        ref = float(np.ravel(_calc_lam_glm(
            (y_l - est1)[:, None], (yh_l - est1)[:, None], (yh_u - est1)[:, None],
            np.eye(1), coord=None, clip=True))[0])
        assert tuned_lambda(y_l, yh_l, yh_u) == pytest.approx(ref, abs=1e-12)
        table = np.array([[(y_l * yh_l).sum(), (y_l * (1 - yh_l)).sum(),
                           ((1 - y_l) * yh_l).sum(), ((1 - y_l) * (1 - yh_l)).sum()]])
        assert tuned_lambda_counts(table, np.array([yh_u.sum()]), big_n)[0] == pytest.approx(
            ref, abs=1e-12)
    n, big_n = 40, 400
    y, yhat = labels(rng, 0.4, 0.85, n + big_n)
    r = ppi_mean(y[:n], yhat[:n], yhat[n:], method="mover")
    assert r.estimate == pytest.approx(float(np.ravel(
        ppi_py.ppi_mean_pointestimate(y[:n], yhat[:n], yhat[n:]))[0]), abs=1e-12)


def _level(z: float) -> float:
    """The confidence level whose normal quantile is ``z``."""
    return 2.0 * NormalDist().cdf(z) - 1.0


def test_the_rectifier_interval_is_wilson_at_lam_0_and_tango_at_lam_1() -> None:
    """The score interval of the rectifier, on random tables with empty cells too: Wilson's
    interval of the trusted labels at ``lam`` 0, Tango's paired interval at ``lam`` 1."""
    from evalband.stats import diff_paired
    from evalband.stats._ppi import _score_mean

    rng = np.random.default_rng(4)
    tables = np.array([rng.multinomial(int(rng.integers(2, 80)), rng.dirichlet([0.4] * 4))
                       for _ in range(300)], dtype=float)
    z = np.full(len(tables), 2.1)
    for lam in (0.0, 1.0):
        values = np.tile([1.0 - lam, 1.0, -lam, 0.0], (len(tables), 1))
        mean, low, high = _score_mean(tables, values, z)
        for i, (a, b, c, d) in enumerate(tables.astype(int)):
            ref = (interval(int(a + b), int(a + b + c + d), confidence=_level(2.1)) if lam == 0
                   else diff_paired(int(a), int(b), int(c), int(d), method="tango",
                                    confidence=_level(2.1)))
            assert (low[i], high[i]) == pytest.approx((ref.low, ref.high), abs=1e-9)
            assert mean[i] == pytest.approx((a + b) / (a + b + c + d) - lam * (a + c) / (
                a + b + c + d))


def test_mover_ends_are_the_score_intervals_combined() -> None:
    """``lam`` 0: the trusted labels' Blaker interval; ``lam`` 1 fixed: the cheap labels'
    Wilson interval and Tango's rectifier interval (normal quantile) combined by MOVER; the
    tuned weight: the rectifier's score interval at ``z sqrt((1 + g) (n - 1) / (n - 2))``."""
    from evalband.stats import diff_paired
    from evalband.stats._ppi import _score_mean, blaker_limits, tuned_lambda

    rng = np.random.default_rng(2)
    for p in (0.03, 0.1, 0.5, 0.9, 0.97):
        for _ in range(2):
            n, big_n = int(rng.integers(10, 80)), int(rng.integers(50, 800))
            y, yhat = labels(rng, p, float(rng.uniform(0.5, 1.0)), n + big_n)
            y_l, yh_l, yh_u = y[:n], yhat[:n], yhat[n:]
            zero = ppi_mean(y_l, yh_l, yh_u, method="mover", lam=0.0)
            b_low, b_high = blaker_limits(np.array([y_l.sum()]), np.array([float(n)]), 0.95)
            assert (zero.low, zero.high) == pytest.approx((b_low[0], b_high[0]), abs=1e-12)
            one = ppi_mean(y_l, yh_l, yh_u, method="mover", lam=1.0)
            a, b = int((y_l * yh_l).sum()), int((y_l * (1 - yh_l)).sum())
            c = int(((1 - y_l) * yh_l).sum())
            rect = diff_paired(a, b, c, n - a - b - c, method="tango", confidence=0.95)
            m = interval(int(yh_u.sum()), big_n)
            est = m.estimate + rect.estimate
            assert one.estimate == pytest.approx(est)
            assert one.low == pytest.approx(max(0.0, est - math.hypot(
                m.estimate - m.low, rect.estimate - rect.low)), abs=1e-9)
            assert one.high == pytest.approx(min(1.0, est + math.hypot(
                m.high - m.estimate, rect.high - rect.estimate)), abs=1e-9)
            lam = tuned_lambda(y_l, yh_l, yh_u)
            tuned = ppi_mean(y_l, yh_l, yh_u, method="mover")
            if lam == 0:
                assert (tuned.low, tuned.high) == pytest.approx((b_low[0], b_high[0]))
                continue
            h_bar, m_u = yh_l.mean(), yh_u.mean()
            z = 1.959963984540054 * math.sqrt(
                (1 + (m_u - h_bar) ** 2 / (h_bar * (1 - h_bar))) * (n - 1) / (n - 2))
            table = np.array([[a, b, c, n - a - b - c]], dtype=float)
            r, r_low, r_high = (float(v[0]) for v in _score_mean(
                table, np.array([[1 - lam, 1.0, -lam, 0.0]]), np.array([z])))
            est = lam * m_u + r
            assert tuned.low == pytest.approx(max(0.0, est - math.hypot(
                lam * (m.estimate - m.low), r - r_low)), abs=1e-9)
            assert tuned.high == pytest.approx(min(1.0, est + math.hypot(
                lam * (m.high - m.estimate), r_high - r)), abs=1e-9)


def _blaker_by_definition(k: int, n: int, grid: np.ndarray) -> tuple[float, float]:
    """The hull of ``{p: Blaker's p-value > 0.05}`` on ``grid``, straight from the definition
    (Blaker 2000: the probability of the outcomes whose smaller tail is at most the observed
    one's), at every grid point with scipy's binomial cdf and sf."""
    from scipy.stats import binom

    x = np.arange(n + 1)
    pmf = binom.pmf(x[None, :], n, grid[:, None])
    tails = np.minimum(binom.cdf(x[None, :], n, grid[:, None]),
                       binom.sf(x[None, :] - 1, n, grid[:, None]))
    pval = np.where(tails <= tails[:, k:k + 1] * (1 + 1e-7), pmf, 0.0).sum(axis=1)
    accepted = grid[pval > 0.05]
    return float(accepted.min()), float(accepted.max())


@pytest.mark.parametrize("n, ks", [(7, range(8)), (20, (0, 1, 3, 10, 17, 20)), (33, (2, 29))])
def test_blaker_limits_are_the_definition(n: int, ks: range | tuple[int, ...]) -> None:
    from evalband.stats._intervals import _clopper_pearson
    from evalband.stats._ppi import blaker_limits

    grid = np.linspace(0.0, 1.0, 20001)
    k = np.array(list(ks), dtype=float)
    low, high = blaker_limits(k, np.full(k.size, float(n)), 0.95)
    cp_low, cp_high = _clopper_pearson(k, np.full(k.size, float(n)), 0.95)
    for i, kk in enumerate(ks):
        ref_low, ref_high = _blaker_by_definition(int(kk), n, grid)
        assert ref_low - 5e-5 <= low[i] <= ref_low + 1e-12
        assert ref_high - 1e-12 <= high[i] <= ref_high + 5e-5
        assert cp_low[i] - 1e-12 <= low[i] and high[i] <= cp_high[i] + 1e-12


@pytest.mark.parametrize("n", [20, 30, 50])
def test_blaker_coverage_is_exact(n: int) -> None:
    """Coverage at least 95% at every rate (a fine grid), by summing over the outcomes."""
    from scipy.stats import binom

    from evalband.stats._ppi import blaker_limits

    k = np.arange(n + 1, dtype=float)
    low, high = blaker_limits(k, np.full(n + 1, float(n)), 0.95)
    rates = np.linspace(0.001, 0.999, 999)
    inside = (low[None, :] <= rates[:, None]) & (rates[:, None] <= high[None, :])
    coverage = (binom.pmf(k[None, :], n, rates[:, None]) * inside).sum(axis=1)
    assert coverage.min() >= 0.95, f"{coverage.min():.4f} at p {rates[coverage.argmin()]}"


def test_covers_is_the_limits() -> None:
    """:func:`mover_covers` (one score test per side) decides as the limits do."""
    from evalband.stats._ppi import mover_covers

    rng = np.random.default_rng(8)
    tables = rng.multinomial(20, rng.dirichlet([0.7] * 4), size=1500).astype(float)
    k_u = rng.binomial(300, 0.6, size=1500).astype(float)
    lam = tuned_lambda_counts(tables, k_u, 300)
    _, low, high, _ = mover_limits(tables, k_u, 300, lam, 0.95)
    for p in (0.2, 0.5, 0.75):
        inside = (low <= p) & (p <= high)
        assert (mover_covers(tables, k_u, 300, lam, 0.95, p) == inside).all()
        assert 0 < inside.mean() < 1


@pytest.mark.parametrize("p, agree, errors, n, big_n", [
    (0.5, 0.7, "one-sided", 20, 2000),   # the low-agreement designs are the tight ones
    (0.7, 0.85, "one-sided", 20, 2000),
    (0.9, 0.95, "one-sided", 20, 2000),  # a constant labelled cheap label a third of the time
    (0.5, 0.7, "symmetric", 20, 200),    # the tightest: 95.1% (95.0% with N = 2,000)
])
def test_exact_coverage_by_enumeration(p: float, agree: float, errors: str, n: int,
                                       big_n: int) -> None:
    """The tuned interval's coverage summed over every outcome: each labelled 2x2 table
    (multinomial) times each count of unlabelled cheap successes (binomial), leaving out
    outcomes under 1e-12 (their mass is bounded below). No Monte Carlo noise: >= 95%."""
    from scipy.stats import binom, multinomial

    from evalband.stats._ppi import mover_covers

    if errors == "symmetric":
        probs = [p * agree, p * (1 - agree), (1 - p) * (1 - agree), (1 - p) * agree]
    else:
        rate = (1 - agree) / (1 - p)
        probs = [p, 0.0, (1 - p) * rate, (1 - p) * (1 - rate)]
    tables = np.array([(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
                       for c in range(n + 1 - a - b)], dtype=float)
    p_table = multinomial.pmf(tables, n, probs)
    tables, p_table = tables[p_table > 1e-12], p_table[p_table > 1e-12]
    k_u = np.arange(big_n + 1.0)
    p_k = binom.pmf(k_u, big_n, probs[0] + probs[2])
    k_u, p_k = k_u[p_k > 1e-12], p_k[p_k > 1e-12]
    all_tables, all_k = np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables))
    weight = np.repeat(p_table, k_u.size) * np.tile(p_k, len(tables))
    lam = tuned_lambda_counts(all_tables, all_k, big_n)
    covered = float(weight[mover_covers(all_tables, all_k, big_n, lam, 0.95, p)].sum())
    assert 1 - weight.sum() < 1e-7
    assert covered >= 0.95, f"exact coverage {covered:.5f}"


@pytest.mark.parametrize("p, n, wilson_t", [(0.95, 30, 0.9392), (0.9, 100, 0.9364),
                                            (0.05, 30, 0.9392)])
def test_exact_coverage_where_the_cheap_scorer_calls_everything_a_success(
        p: float, n: int, wilson_t: float) -> None:
    """A lenient success rule that calls every episode a success (one-sided errors with
    ``1 - agree`` above the failure rate: bench cells p 0.9-0.95) says nothing: ``lam`` is 0
    and the interval is the trusted labels' alone. Its coverage, exactly, by enumerating the
    trusted successes: >= 95%. The interval before (Wilson at Student's quantile, ``wilson_t``
    here) covered 93.6-93.9% in these designs; so does the plain Wilson interval. Now it is
    Blaker's exact interval."""
    from scipy.stats import binom

    big_n = 2000
    k = np.arange(n + 1, dtype=float)
    tables = np.stack([k, 0 * k, n - k, 0 * k], axis=1)  # every cheap label a success
    k_u = np.full(n + 1, float(big_n))
    lam = tuned_lambda_counts(tables, k_u, big_n)
    assert (lam == 0).all()
    _, low, high, _ = mover_limits(tables, k_u, big_n, lam, 0.95)
    weights = binom.pmf(k, n, p)
    covered = float(weights[(low <= p) & (p <= high)].sum())
    assert covered >= 0.95, f"exact coverage {covered:.4f} (Wilson at t: {wilson_t})"
    y, yhat = np.repeat([1.0, 0.0], [n - 3, 3]), np.ones(n)
    r = ppi_mean(y, yhat, np.ones(big_n), method="mover")
    assert (r.low, r.high) == pytest.approx((low[n - 3], high[n - 3]), abs=1e-12)
