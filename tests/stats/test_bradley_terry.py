"""Bradley-Terry strengths against choix and statsmodels (independent implementations)."""

from __future__ import annotations

import choix
import numpy as np
import pytest
import statsmodels.api as sm

from evalband.stats._bradley_terry import bt_fit, bt_heterogeneity, bt_wins, strongly_connected

WINS = np.array([[0, 7, 9, 5], [3, 0, 6, 4], [1, 4, 0, 6], [5, 6, 4, 0]], float)


def test_ml_strengths_equal_chois_ilsr_with_ties_as_half_wins() -> None:
    rng = np.random.default_rng(1)
    first = rng.integers(0, 5, 300)
    second = (first + rng.integers(1, 5, 300)) % 5
    outcome = rng.choice([0.0, 0.5, 1.0], 300, p=[0.4, 0.1, 0.5])
    wins = bt_wins(5, first, second, outcome)
    fit = bt_fit(wins)
    assert fit.exists
    ref = choix.ilsr_pairwise_dense(wins)  # comp_mat[i, j]: times i beat j
    np.testing.assert_allclose(fit.strengths, ref - ref.mean(), atol=1e-7)
    np.testing.assert_allclose(bt_fit(WINS).strengths,
                               choix.ilsr_pairwise_dense(WINS), atol=1e-7)


def test_penalised_strengths_equal_chois_opt_pairwise() -> None:
    data = [(i, j) for i in range(4) for j in range(4) for _ in range(int(WINS[i, j]))]
    for alpha in (0.05, 0.5):
        ref = choix.opt_pairwise(4, data, alpha=alpha, tol=1e-12)
        np.testing.assert_allclose(bt_fit(WINS, alpha=alpha).strengths, ref, atol=1e-5)


def logistic(wins: np.ndarray) -> sm.GLM:
    """Bradley-Terry as a logistic regression: one row per preference, x = e_winner - e_loser."""
    rows, ys = [], []
    for i in range(4):
        for j in range(4):
            for _ in range(int(wins[i, j])):
                x = np.zeros(4)
                x[i], x[j] = 1.0, -1.0
                rows.append(x[1:])  # policy 0 is the reference (strength 0)
                ys.append(1.0)
    return sm.GLM(np.array(ys), np.array(rows), family=sm.families.Binomial()).fit()


def test_the_intervals_equal_a_logistic_regression_with_statsmodels() -> None:
    glm = logistic(WINS)
    fit = bt_fit(WINS)
    theta, cov = fit.strengths, fit.covariance
    for i in range(1, 4):  # theta_i - theta_0 and its standard error
        assert theta[i] - theta[0] == pytest.approx(glm.params[i - 1], abs=1e-7)
        var = cov[i, i] + cov[0, 0] - 2 * cov[i, 0]
        assert np.sqrt(var) == pytest.approx(glm.bse[i - 1], rel=1e-6)


def test_no_maximum_likelihood_when_a_policy_never_loses() -> None:
    w = np.array([[0, 3, 2], [0, 0, 1], [0, 1, 0]], float)
    assert not strongly_connected(w) and not bt_fit(w).exists
    assert bt_fit(w, alpha=0.01).exists


def test_heterogeneity_is_zero_for_identical_tasks_and_large_for_reversed_ones() -> None:
    g, df, p = bt_heterogeneity([WINS, WINS])
    assert g == pytest.approx(0.0, abs=1e-8) and df == 3 and p == pytest.approx(1.0)
    g, df, p = bt_heterogeneity([WINS, WINS.T])
    oracle = 2 * (logistic(WINS).llf + logistic(WINS.T).llf
                  - logistic(WINS + WINS.T).llf)  # per-task fits against the pooled one
    assert g == pytest.approx(oracle, rel=1e-6) and p < 0.01
