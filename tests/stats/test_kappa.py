"""Cohen's kappa and weighted kappa against statsmodels, and the interval's coverage.

The oracle for the estimate and its standard error is statsmodels'
``statsmodels.stats.inter_rater.cohens_kappa`` (Fleiss, Cohen & Everitt 1969's variance, as SAS
documents it): an independent implementation. The interval is checked by simulation: tables
drawn from a known joint distribution of two raters' 3-level scores, its true kappa computed
from the distribution itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from evalband.errors import InvalidInputError
from evalband.stats._kappa import cohen_kappa, kappa_table


@pytest.mark.parametrize("weights,wt", [("none", None), ("linear", "linear"),
                                        ("quadratic", "quadratic")])
def test_estimate_and_standard_error_equal_statsmodels(weights: str, wt: str | None) -> None:
    rng = np.random.default_rng(11)
    for k in (2, 3, 4):
        for _ in range(5):
            table = rng.integers(0, 15, size=(k, k)) + np.eye(k, dtype=int) * rng.integers(
                0, 30)
            ours = cohen_kappa(table, weights=weights)
            theirs = sm_kappa(table) if wt is None else sm_kappa(table, wt=wt)
            assert ours.estimate == pytest.approx(theirs.kappa, abs=1e-12)
            assert ours.se == pytest.approx(theirs.std_kappa, rel=1e-9, abs=1e-12)


def test_a_two_by_two_by_hand() -> None:
    # 50 items: agree 20 + 15, P_o = 0.7; margins 0.5/0.5 and 0.6/0.4, P_e = 0.5
    k = cohen_kappa([[20, 5], [10, 15]])
    assert (k.observed, k.expected) == pytest.approx((0.7, 0.5))
    assert k.estimate == pytest.approx(0.4)
    assert k.low < 0.4 < k.high


def test_undefined_and_perfect_tables() -> None:
    one = cohen_kappa([[12, 0], [0, 0]])  # both raters used one category only
    assert np.isnan(one.estimate) and one.as_dict()["estimate"] is None
    perfect = cohen_kappa(kappa_table([0, 1, 2] * 8, [0, 1, 2] * 8, [0, 1, 2]))
    assert perfect.estimate == 1.0 and perfect.se == 0.0
    assert perfect.high == 1.0 and 0.5 < perfect.low < 0.95  # 24 agreements prove less than 1
    with pytest.raises(InvalidInputError, match="square"):
        cohen_kappa([[1, 2, 3]])
    with pytest.raises(InvalidInputError, match="weights"):
        cohen_kappa([[1, 0], [0, 1]], weights="cubic")
    with pytest.raises(InvalidInputError, match="categories"):
        kappa_table([0, 5], [0, 1], [0, 1])


DESIGNS = {
    # suggestion x operator joint probabilities over levels 0, 1, 2
    "good": [[.30, .03, .02], [.03, .20, .04], [.01, .03, .34]],
    "middling": [[.20, .08, .05], [.08, .12, .08], [.04, .08, .27]],
    "skewed": [[.60, .05, .00], [.05, .05, .05], [.00, .05, .15]],
}


@pytest.mark.parametrize("design", sorted(DESIGNS))
@pytest.mark.parametrize("weights", ["none", "quadratic"])
def test_the_interval_covers_the_true_kappa(design: str, weights: str) -> None:
    probs = np.asarray(DESIGNS[design], dtype=float)
    probs /= probs.sum()
    truth = cohen_kappa(probs * 1e9, weights=weights).estimate
    rng = np.random.default_rng([7, len(design), len(weights)])
    reps, n, hits, used = 1500, 24, 0, 0
    for _ in range(reps):
        table = rng.multinomial(n, probs.ravel()).reshape(probs.shape)
        k = cohen_kappa(table, weights=weights)
        if np.isnan(k.estimate):
            continue
        used += 1
        hits += k.low <= truth <= k.high
    coverage = hits / used
    # 95% nominal; the Wald interval gave 0.83-0.91 in these designs at n = 24
    assert coverage >= 0.92, (design, weights, coverage)
