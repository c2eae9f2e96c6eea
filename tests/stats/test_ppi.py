"""Prediction-powered inference for a mean: the reference formulas, coverage and width.

The oracle for the estimate and interval is the authors' package, ``ppi_py`` (github.com/
aangelopoulos/ppi_py, ``ppi_py/ppi.py``: ``ppi_mean_pointestimate``, ``ppi_mean_ci``;
``ppi_py/utils/statistics_utils.py``: ``_calc_lam_glm``), transcribed below line by line with
numpy (the package itself pulls numba, sklearn and statsmodels' private helpers, so it is not
a dependency). Coverage and width are simulated here with a small seeded Monte Carlo (each
with its own interval); ``bench/bench_ppi.py`` runs the large one.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from evalband.errors import InvalidInputError
from evalband.stats import interval
from evalband.stats._ppi import ppi_mean


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


@pytest.mark.parametrize("p, agree, n, method", [
    (0.5, 0.85, 40, "mover"), (0.85, 0.9, 40, "mover"), (0.15, 0.95, 30, "mover"),
    (0.5, 0.85, 150, "clt"),
])
def test_coverage_reaches_95_percent(p: float, agree: float, n: int, method: str) -> None:
    rng = np.random.default_rng(int(p * 100) + n)
    reps, big_n, hits = 600, 10 * n, 0
    for _ in range(reps):
        y, yhat = labels(rng, p, agree, n + big_n)
        r = ppi_mean(y[:n], yhat[:n], yhat[n:], method=method)
        hits += r.low <= p <= r.high
    mc = interval(hits, reps, method="wilson", confidence=0.99)
    assert mc.high >= 0.95, f"coverage {hits / reps:.3f}, 99% MC [{mc.low:.3f}, {mc.high:.3f}]"


@pytest.mark.parametrize("p, agree", [(0.5, 0.85), (0.35, 0.9), (0.7, 0.95)])
def test_narrower_than_the_trusted_labels_alone_when_the_cheap_scorer_agrees(
        p: float, agree: float) -> None:
    rng = np.random.default_rng(3)
    reps, n, big_n = 300, 60, 1200
    narrower = []
    for _ in range(reps):
        y, yhat = labels(rng, p, agree, n + big_n)
        r = ppi_mean(y[:n], yhat[:n], yhat[n:], method="mover")
        trusted = interval(int(y[:n].sum()), n)
        assert (r.classical_low, r.classical_high) == pytest.approx((trusted.low, trusted.high))
        narrower.append((r.high - r.low) < (trusted.high - trusted.low))
    assert np.mean(narrower) > 0.9


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
    """PPI++'s lam against ``ppi_py.ppi._calc_lam_glm`` (clip=True, as ``ppi_mean_ci``), and
    the tuned mover's estimate against ``ppi_mean_pointestimate(lam=None)``."""
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
        r = ppi_mean(y_l, yh_l, yh_u, method="mover")
        if r.lam > 0:  # not fallen back to the trusted labels alone
            assert r.lam == pytest.approx(ref, abs=1e-12)
            assert r.estimate == pytest.approx(float(np.ravel(
                ppi_py.ppi_mean_pointestimate(y_l, yh_l, yh_u))[0]), abs=1e-12)


def test_tuned_mover_is_never_wider_than_the_trusted_labels_and_its_ends_are_references(
        ) -> None:
    """lam 1: the paper's MOVER (Wilson + Newcombe's paired interval); lam 0: Wilson alone;
    tuned: never wider than Wilson, near rates 0 and 1 too."""
    from evalband.stats import diff_paired

    rng = np.random.default_rng(2)
    for p in (0.03, 0.1, 0.5, 0.9, 0.97):
        for _ in range(30):
            n, big_n = int(rng.integers(10, 80)), int(rng.integers(50, 800))
            y, yhat = labels(rng, p, float(rng.uniform(0.5, 1.0)), n + big_n)
            y_l, yh_l, yh_u = y[:n], yhat[:n], yhat[n:]
            trusted = interval(int(y_l.sum()), n)
            tuned = ppi_mean(y_l, yh_l, yh_u, method="mover")
            assert tuned.high - tuned.low <= trusted.high - trusted.low + 1e-12
            zero = ppi_mean(y_l, yh_l, yh_u, method="mover", lam=0.0)
            assert (zero.low, zero.high) == pytest.approx((trusted.low, trusted.high))
            one = ppi_mean(y_l, yh_l, yh_u, method="mover", lam=1.0)
            a, b = int((y_l * yh_l).sum()), int((y_l * (1 - yh_l)).sum())
            c = int(((1 - y_l) * yh_l).sum())
            rect = diff_paired(a, b, c, n - a - b - c)
            m = interval(int(yh_u.sum()), big_n)
            est = m.estimate + rect.estimate
            assert one.estimate == pytest.approx(est)
            assert one.low == pytest.approx(max(0.0, est - math.hypot(
                m.estimate - m.low, rect.estimate - rect.low)))
            assert one.high == pytest.approx(min(1.0, est + math.hypot(
                m.high - m.estimate, rect.high - rect.estimate)))


@pytest.mark.parametrize("p, n", [(0.05, 30), (0.95, 30)])
def test_tuned_mover_covers_near_zero_and_one_with_few_trusted_labels(p: float,
                                                                       n: int) -> None:
    """600 draws, 85% agreement, N = 10 n: the 99% Wilson band of coverage reaches 95%."""
    rng = np.random.default_rng(int(p * 100) + 7)
    hits = 0
    for _ in range(600):
        y, yhat = labels(rng, p, 0.85, 11 * n)
        r = ppi_mean(y[:n], yhat[:n], yhat[n:], method="mover")
        hits += r.low <= p <= r.high
    mc = interval(hits, 600, method="wilson", confidence=0.99)
    assert mc.high >= 0.95, f"coverage {hits / 600:.3f}"
