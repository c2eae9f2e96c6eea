r"""Prediction-powered inference for a mean: a few trusted labels and many cheap ones.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference",
*Science* 382(6671): 669-674 (arXiv:2301.09633), section "Mean estimation". ``n`` items carry
both the trusted label ``Y`` (an operator's judgement) and the cheap one ``Yhat`` (the env's
success rule, a model judge); ``N`` further items carry only ``Yhat``. The labelled items
must be a uniform random sample of all of them (chosen before anyone saw the cheap labels):
the estimate is then unbiased for the mean of ``Y`` whatever the cheap scorer does::

    theta = lam * mean(Yhat_unlabelled) + mean(Y - lam * Yhat)
    se    = sqrt(var(lam * Yhat_unlabelled) / N + var(Y - lam * Yhat) / n)
    interval = theta -+ z_{1 - alpha/2} se

(``var`` the plain ``1/m`` variance, as the reference code's ``std(0)``). ``lam = 1`` is the
paper's estimator; ``lam = 0`` the classical mean of the trusted labels alone. Power tuning
(PPI++: Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453) picks the ``lam`` that minimises the variance,
``lam = cov(Y, Yhat) / ((1 + n / N) var(Yhat over all n + N items))`` clipped to ``[0, 1]``
(``cov`` with ``1/n``, ``var`` with ``1/(m - 1)``), so a useless cheap scorer costs nothing.
These are the formulas of the authors' package, ``ppi_py/ppi.py`` (``ppi_mean_pointestimate``,
``ppi_mean_ci``) and ``ppi_py/utils/statistics_utils.py`` (``_calc_lam_glm``), in
github.com/aangelopoulos/ppi_py; ``tests/stats/test_ppi.py`` checks them term by term and
simulates coverage and width, ``bench/bench_ppi.py`` at scale.

``method="clt"`` is that normal interval: valid as ``n`` and ``N`` grow, as the classical
interval of a mean is, but in simulation it covered 92-95% of 95% at a 50% rate with 30-150
trusted labels and 59-80% at rates of 0.95-0.97 with 30 (the earlier ``bench/bench_ppi.py``).
For success labels (0 or 1 on both sides) ``method=
"mover"`` keeps the paper's estimate (PPI++'s weight, unbiased for every fixed ``lam``) and
builds the interval from the two independent parts it adds up: ``lam * mean(Yhat_u)``, a
binomial proportion (``lam`` times its Wilson interval), and the rectifier ``mean(Y - lam *
Yhat)``, the mean of a variable with four values -- ``1 - lam`` (both scorers say success), ``1``
(only the trusted one), ``-lam`` (only the cheap one), ``0`` (neither) -- whose interval is the
**score interval of a multinomial mean**::

    {theta: (rectifier - theta)^2 <= t^2 V(theta) / n},  V(theta) = sum pi_j (w_j - theta)^2

with ``pi`` the maximum-likelihood cell probabilities under the constraint ``sum pi_j w_j =
theta`` (the variance at the hypothesised value, as Wilson's interval takes ``p(1 - p)`` at
the hypothesised ``p``). At a weight fixed beforehand ``t`` is the normal quantile ``z``: at
``lam = 0`` the interval is then exactly Wilson's interval of the trusted labels (values 1, 1,
0, 0), at ``lam = 1`` exactly Tango's (1998) score interval of a paired difference of
proportions ("Equivalence test and confidence interval for the difference in proportions for
the paired-sample design", *Statistics in Medicine* 17: 891-908) -- both checked in the tests
-- so it bridges the two score intervals that are known to keep their coverage.

PPI++'s weight is fitted on the same labels, and then the estimate is the **regression
estimator** of survey sampling: ``theta = mean(Y) + lam (mean(Yhat_u) - mean(Yhat))``, the
line through the labelled items read off at the unlabelled items' mean (Cochran, W. G.
(1977), *Sampling Techniques*, 3rd ed., Wiley: chapter 7, the regression estimate, and
section 12.6, double sampling for it). Its variance carries what fitting the slope costs, in
two factors that the fixed-weight score interval lacks:

* the slope's own error, read off at a distance from the labelled mean: the variance of a
  fitted line at ``x0`` is ``s^2 (1/n + (x0 - x_bar)^2 / S_xx)`` (e.g. Draper, N. R. & Smith,
  H. (1998), *Applied Regression Analysis*, 3rd ed., Wiley, section 3.1; Cochran's
  conditional variance of the regression estimate), here ``1 + g`` times the fixed-weight
  variance with ``g = (mean(Yhat_u) - mean(Yhat))^2 / (mean(Yhat) (1 - mean(Yhat)))``;
* the residual spread estimated after fitting a slope beside the mean: ``n - 2`` degrees of
  freedom instead of ``n - 1``, the factor ``(n - 1) / (n - 2)`` (Cochran's ``s_{y.x}^2``).

So ``t = z sqrt((1 + g) (n - 1) / (n - 2))`` (the whole interval ``[0, 1]`` when ``n = 2``: no
degree of freedom is left). Both factors are the textbook normal-theory ones, not fitted to
any simulation; ``g`` is data-driven, large exactly where the slope's error moves the
estimate most (the labelled items' cheap rate far from the unlabelled ones'). The two parts'
limits combine as in Zou & Donner (2008), "Construction of confidence limits about effect
measures: a general approach", *Statistics in Medicine* 27: 1693-1702 (MOVER, for a sum of
independent estimates)::

    low  = theta - sqrt((lam (m - l_m))^2 + (r - l_r)^2)
    high = theta + sqrt((lam (u_m - m))^2 + (u_r - r)^2)

Where ``lam`` is 0 (the cheap labels get no weight: a cheap scorer that is constant on the
labelled items -- a lenient success rule that calls every episode a success -- or one that
does not correlate with the trusted labels) the interval is the trusted labels' alone, by
Blaker's exact interval (Blaker, H. (2000), "Confidence curves and improved exact confidence
intervals for discrete distributions", *Canadian Journal of Statistics* 28: 783-798; see
:func:`blaker_limits`): Wilson's coverage dips below 95% at some rates (exactly 92.5% at a
95% rate with 20 labels, 93.9% with 30, 93.6% at 90% with 100), Blaker's never does, and it
lies inside Clopper & Pearson's (1934) exact interval (2-9% narrower at 20 labels). The rule
looks at ``lam``, never at widths. Both limits are kept in ``[0, 1]``, where a success rate
lies (the estimate itself is not clipped: unbiased for a fixed ``lam``; the tuned ``lam``,
estimated from the same labels, leaves a bias of order ``1/n``, -0.0017 at a 10% rate with
300 labels in simulation). The default ``lam`` is PPI++'s (the formula above, ``ppi_py``'s),
used as it comes: no switch to another interval on seeing the widths.

Coverage is checked exactly, not only simulated: :func:`mover_covers` decides whether an
interval holds a rate with one score test per side, fast enough to sum the coverage over
every 2x2 table of the labelled items and every count of the unlabelled cheap successes
(``bench/bench_ppi.py``'s exact audit, all designs with 20 trusted labels, 2,000 cheap ones).

Why not the earlier choices: Newcombe's paired interval (method 10) for the rectifier
missed on one side when the cheap scorer errs one way only (it calls failures successes,
never the reverse): 93.7% at a 50% rate even with 150 trusted labels and ``lam = 1``, where
Tango's score interval keeps 95%; falling back to the trusted labels' Wilson interval
whenever the tuned one came out wider chose between two intervals after seeing them (93.6%
at a 50% rate with 30 labels). Student's quantile with ``n - 1`` degrees of freedom for the
rectifier covered (97.5-99.95% with 20-30 labels where the cheap scorer agrees 85% or more)
but was wider than the trusted labels' Wilson interval in ten such designs; the plain normal
quantile with the tuned weight covers exactly 93.8% at a 50% rate, 70% agreement, 20 labels
(symmetric errors, 2,000 cheap labels), the slope factor ``1 + g`` alone 94.5%, both factors
95.0%.
A skewness correction of the rectifier's score test (Cornish-Fisher: accept ``theta`` where
``|S - c| <= t``, ``S = (r - theta) / sqrt(V(theta) / n)``, ``c = gamma (t^2 - 1) / (6
sqrt(n))``, ``gamma`` the labelled items' skewness of ``Y - lam Yhat``; Johnson, N. J. (1978),
"Modified t tests and confidence intervals for asymmetrical populations", *JASA* 73:
536-544; Hall, P. (1992), *The Bootstrap and Edgeworth Expansion*, Springer, section 2.5)
was tried for the one exact shortfall (94.94% at a 10% rate, 98% symmetric agreement, 300
labels, where the interval lies below the rate 3.7% of the time and above it 1.3%): it
lifts that design to 95.09% exactly but, its ``gamma`` noisy with 20-30 labels, leaves 8
designs below 95% (93.2% at a 50% rate, 85% one-sided agreement, 30 labels; 94.8% at 50%,
70%, 20); taking it only where it widens (the union with the plain test) covers 95.30%
there and at least 95.33% in all 56 designs with 20 labels, but is wider than Wilson's in
30 of the 156 informative designs (up to 10%). The skewness at the constrained MLE instead
of the sample's made the shortfall worse (94.73%): the MLE gives the empty rare cell no mass.
Half a count in each empty cell for the variance only (Haldane's and Anscombe's zero-cell
correction) covers 95.91% there and 95.69% at a 50% rate, 70%, 20 labels, but widens the
one-sided designs with 20-30 labels, where the "only the trusted scorer says success" cell
is always empty, to 4.6-8.9% wider than Wilson's (in simulation, 2,000 draws).
Clopper-Pearson where ``lam`` is 0 made the interval wider than Wilson's where 20-30 labels
often show a constant cheap label although the scorer is informative.
Beside it the classical interval of the trusted labels alone: Wilson for ``mover``, the CLT
interval (``lam = 0``) for ``clt``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalband._util.validate import check_choice, check_confidence
from evalband.errors import InvalidInputError

__all__ = ["PPIMean", "PPI_METHODS", "blaker_limits", "mover_covers", "mover_limits", "ppi_mean",
           "tuned_lambda", "tuned_lambda_counts"]

PPI_METHODS = ("mover", "clt")
"""The interval's construction: ``mover`` (success labels), ``clt`` (the paper's)."""


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered estimate of a mean (see the module docstring).

    Attributes:
        estimate: the estimate (unbiased for the trusted scorer's mean).
        low: lower end of the interval; ``high``: upper end.
        se: its standard error.
        lam: the weight on the cheap labels (1: the paper's PPI; tuned: PPI++).
        n: items with both labels; ``n_unlabelled``: items with the cheap label only.
        rectifier: ``mean(Y - lam * Yhat)`` over the ``n`` items, the cheap scorer's bias.
        classical: the trusted labels' mean alone; ``classical_low``/``classical_high`` its
            interval (Wilson for ``mover``, CLT for ``clt``), the interval PPI is to beat.
        method: ``"mover"`` or ``"clt"``.
        confidence: the intervals' level.
    """

    estimate: float
    low: float
    high: float
    se: float
    lam: float
    n: int
    n_unlabelled: int
    rectifier: float
    classical: float
    classical_low: float
    classical_high: float
    method: str
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (``nan`` as ``None``)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in self.__dict__.items()}


def _as_vector(values: npt.ArrayLike, name: str) -> npt.NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(array).all():
        raise InvalidInputError(f"{name} must hold finite numbers")
    return array


def ppi_mean(labelled: npt.ArrayLike, predicted: npt.ArrayLike,
             unlabelled: npt.ArrayLike, *, confidence: float = 0.95,
             lam: float | None = None, method: str = "clt") -> PPIMean:
    """The prediction-powered estimate and interval of a mean (see the module docstring).

    Args:
        labelled: ``Y``, the trusted labels of the ``n`` labelled items.
        predicted: ``Yhat``, the cheap labels of the same items, in the same order.
        unlabelled: the cheap labels of the ``N`` items without a trusted label.
        confidence: the interval's level.
        lam: the weight on the cheap labels; ``1.0`` the paper's PPI, ``0.0`` the trusted
            labels alone, ``None`` (the default, as ``ppi_py``'s) tuned (PPI++).
        method: ``"clt"`` (the paper's normal interval) or ``"mover"`` (0/1 labels only).

    Raises:
        InvalidInputError: fewer than two labelled or one unlabelled item, lengths that
            differ, values that are not finite numbers, ``lam`` outside ``[0, 1]``, or
            ``mover`` with labels other than 0 and 1.

    >>> r = ppi_mean([1, 1, 0, 1], [1, 1, 0, 0], [1, 0, 1, 1, 1, 0, 1, 1], lam=1.0)
    >>> round(r.estimate, 4), round(r.rectifier, 4), r.n, r.n_unlabelled
    (1.0, 0.25, 4, 8)
    >>> r = ppi_mean([1, 1, 0, 1], [1, 1, 0, 0], [1, 0, 1, 1, 1, 0, 1, 1], method="mover",
    ...              lam=1.0)
    >>> round(r.estimate, 4), r.high, r.low < r.estimate
    (1.0, 1.0, True)
    """
    confidence = check_confidence(confidence)
    method = check_choice(method, "method", PPI_METHODS)
    y = _as_vector(labelled, "the trusted labels")
    yhat = _as_vector(predicted, "the cheap labels of the labelled items")
    yhat_u = _as_vector(unlabelled, "the cheap labels of the unlabelled items")
    n, big_n = y.size, yhat_u.size
    if yhat.size != n:
        raise InvalidInputError(f"{n} trusted labels but {yhat.size} cheap labels for them; "
                                "PPI needs both labels of every labelled item")
    if n < 2 or big_n < 1:
        raise InvalidInputError("prediction-powered inference needs at least 2 items with "
                                f"both labels and 1 with the cheap label only; got {n} and "
                                f"{big_n}")
    tuned = lam is None
    if lam is None:
        lam = tuned_lambda(y, yhat, yhat_u)
    elif not 0.0 <= lam <= 1.0:
        raise InvalidInputError(f"lam must be in [0, 1]; got {lam!r}")
    if method == "mover":
        return _mover(y, yhat, yhat_u, lam, confidence, tuned)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    residual = y - lam * yhat
    rectifier = float(residual.mean())
    estimate = float(lam * yhat_u.mean()) + rectifier
    se = math.sqrt(float(np.var(lam * yhat_u)) / big_n + float(np.var(residual)) / n)
    classical = float(y.mean())
    classical_se = math.sqrt(float(np.var(y)) / n)
    return PPIMean(
        estimate=estimate, low=estimate - z * se, high=estimate + z * se, se=se,
        lam=float(lam), n=n, n_unlabelled=big_n, rectifier=rectifier, classical=classical,
        classical_low=classical - z * classical_se, classical_high=classical + z * classical_se,
        method="clt", confidence=confidence)


def tuned_lambda(y: npt.NDArray[np.float64], yhat: npt.NDArray[np.float64],
                 yhat_u: npt.NDArray[np.float64]) -> float:
    """PPI++'s power-tuned weight for a mean, clipped to ``[0, 1]`` (``ppi_py``'s).

    ``cov(Y, Yhat) / ((1 + n / N) var(Yhat over all n + N items))`` (``cov`` with ``1/n``,
    ``var`` with ``1/(m - 1)``): the ``lam`` that minimises the estimate's variance
    (Angelopoulos, Duchi & Zrnic 2023, example 6.1); 0 when the cheap labels do not vary.

    >>> tuned_lambda(np.array([1., 0, 1, 0]), np.array([1., 0, 1, 1]),
    ...              np.array([1., 0, 0, 1, 1, 0]))  # 0.125 / ((1 + 4/6) * 0.2667)
    0.28125
    """
    n, big_n = y.size, yhat_u.size
    cov = float(((y - y.mean()) * (yhat - yhat.mean())).mean())
    var_all = float(np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    return 0.0 if var_all <= 0 else min(max(cov / ((1.0 + n / big_n) * var_all), 0.0), 1.0)


def _mover(y: npt.NDArray[np.float64], yhat: npt.NDArray[np.float64],
           yhat_u: npt.NDArray[np.float64], lam: float, confidence: float,
           tuned: bool) -> PPIMean:
    from evalband.stats._intervals import interval

    for values in (y, yhat, yhat_u):
        if not np.isin(values, (0.0, 1.0)).all():
            raise InvalidInputError("the mover interval needs success labels (0 or 1); use "
                                    "method='clt' for scores")
    n, big_n = y.size, yhat_u.size
    both = float((y * yhat).sum())
    y_only = float((y * (1.0 - yhat)).sum())
    yhat_only = float(((1.0 - y) * yhat).sum())
    table = np.array([[both, y_only, yhat_only, n - both - y_only - yhat_only]])
    estimate, low, high, r = (float(v[0]) for v in mover_limits(
        table, np.array([float(yhat_u.sum())]), big_n, np.array([lam]), confidence,
        tuned=tuned))
    trusted = interval(int(y.sum()), n, confidence=confidence)
    m = float(yhat_u.mean())
    se = math.sqrt(lam * lam * m * (1.0 - m) / big_n + float(np.var(y - lam * yhat)) / n)
    return PPIMean(
        estimate=estimate, low=low, high=high, se=se, lam=float(lam), n=n,
        n_unlabelled=big_n, rectifier=r, classical=float(y.mean()),
        classical_low=trusted.low, classical_high=trusted.high, method="mover",
        confidence=confidence)


def tuned_lambda_counts(table: npt.NDArray[np.float64], k_u: npt.NDArray[np.float64],
                        big_n: int) -> npt.NDArray[np.float64]:
    """:func:`tuned_lambda` from the counts of success labels, for many runs at once.

    ``table`` holds one row ``(both, trusted only, cheap only, neither)`` per run (successes
    of the trusted and the cheap scorer on the ``n`` labelled items), ``k_u`` the cheap
    scorer's successes among the ``big_n`` unlabelled items.
    """
    n = table.sum(axis=1)
    y_bar, h_bar = (table[:, 0] + table[:, 1]) / n, (table[:, 0] + table[:, 2]) / n
    cov = table[:, 0] / n - y_bar * h_bar
    share = (table[:, 0] + table[:, 2] + k_u) / (n + big_n)
    var_all = share * (1.0 - share) * (n + big_n) / (n + big_n - 1.0)
    safe = np.where(var_all > 0, var_all, 1.0)
    lam: npt.NDArray[np.float64] = np.where(
        var_all > 0, np.clip(cov / ((1.0 + n / big_n) * safe), 0.0, 1.0), 0.0)
    return lam


def mover_limits(table: npt.NDArray[np.float64], k_u: npt.NDArray[np.float64], big_n: int,
                 lam: npt.NDArray[np.float64], confidence: float, *, tuned: bool = True
                 ) -> tuple[npt.NDArray[np.float64], ...]:
    """The ``mover`` estimate, limits and rectifier of many runs at once (module docstring).

    ``table`` and ``k_u`` as in :func:`tuned_lambda_counts`, ``lam`` one weight per run,
    ``tuned`` whether it was estimated from these labels (PPI++'s weight: the rectifier's
    score interval then carries the weight's own error, the factor ``1 + g``; a weight fixed
    beforehand has none). Returns ``(estimate, low, high, rectifier)``, one entry per run.
    """
    n, values, z_rect, m, imp_low, imp_high = _mover_parts(table, k_u, big_n, lam, confidence,
                                                           tuned)
    r, rect_low, rect_high = _score_mean(table, values, z_rect)
    estimate = lam * m + r
    low = np.maximum(0.0, estimate - np.hypot(lam * (m - imp_low), r - rect_low))
    high = np.minimum(1.0, estimate + np.hypot(lam * (imp_high - m), rect_high - r))
    # lam 0 (the cheap labels get no weight, e.g. a constant cheap scorer): the trusted
    # labels alone, by Blaker's exact interval (Wilson's dips to 92.5-93.9% at p 0.9-0.95)
    if tuned:  # two labels and a fitted weight leave no degree of freedom for the spread
        low, high = np.where(n > 2, low, 0.0), np.where(n > 2, high, 1.0)
    exact_low, exact_high = blaker_limits(table[:, 0] + table[:, 1], n, confidence)
    zero = lam == 0.0
    return (estimate, np.where(zero, exact_low, low), np.where(zero, exact_high, high), r)


def _mover_parts(table: npt.NDArray[np.float64], k_u: npt.NDArray[np.float64], big_n: int,
                 lam: npt.NDArray[np.float64], confidence: float, tuned: bool
                 ) -> tuple[npt.NDArray[np.float64], ...]:
    """``(n, values, z_rect, m, imp_low, imp_high)`` of :func:`mover_limits`."""
    from evalband.stats._intervals import _wilson

    n = table.sum(axis=1)
    values = np.stack([1.0 - lam, np.ones_like(lam), -lam, np.zeros_like(lam)], axis=1)
    m = k_u / big_n
    z_rect = np.full_like(n, _normal_quantile(confidence))
    if tuned:  # the weight fitted on these labels: the regression estimator's variance
        h_bar = (table[:, 0] + table[:, 2]) / n
        spread = h_bar * (1.0 - h_bar)
        gap = np.where(spread > 0, (m - h_bar) ** 2 / np.where(spread > 0, spread, 1.0), 0.0)
        fitted = (n - 1.0) / np.maximum(n - 2.0, 1.0)  # a slope fitted beside the mean
        z_rect = z_rect * np.sqrt((1.0 + gap) * fitted)
    imp_low, imp_high = _wilson(k_u, np.full_like(k_u, float(big_n)), confidence)
    return n, values, z_rect, m, imp_low, imp_high


def mover_covers(table: npt.NDArray[np.float64], k_u: npt.NDArray[np.float64], big_n: int,
                 lam: npt.NDArray[np.float64], confidence: float, p: float, *,
                 tuned: bool = True) -> npt.NDArray[np.bool_]:
    """Whether each run's :func:`mover_limits` interval holds ``p``, without its limits.

    The lower limit is at most ``p`` exactly when the estimate is, or when the rectifier's
    score test accepts ``r - sqrt((estimate - p)^2 - (lam (m - l_m))^2)`` (the MOVER
    equation solved for the rectifier's limit; the upper side alike): one evaluation of the
    score test per side instead of a bisection for the limit, so that coverage can be summed
    over every outcome of a design (``bench/bench_ppi.py``'s exact audit). The tests hold it
    equal to the limits.
    """
    n, values, z_rect, m, imp_low, imp_high = _mover_parts(table, k_u, big_n, lam, confidence,
                                                           tuned)
    r = np.sum(table * values, axis=1) / n
    estimate = lam * m + r
    covered = np.ones(r.shape, dtype=bool)
    for side, imp, edge in ((1.0, lam * (m - imp_low), values.min(axis=1)),
                            (-1.0, lam * (imp_high - m), values.max(axis=1))):
        gap = side * (estimate - p)  # how far the estimate lies beyond p on this side
        need = gap * gap - imp * imp
        theta = r - side * np.sqrt(np.maximum(need, 0.0))
        within = side * (theta - edge) >= 0
        safe = np.where(within, theta, r)
        accept = (r - safe) ** 2 <= z_rect * z_rect * _constrained_variance(
            table, values, safe) / n
        covered &= (gap <= 0) | (need <= 0) | (within & accept)
    if tuned:
        covered |= n <= 2
    exact_low, exact_high = blaker_limits(table[:, 0] + table[:, 1], n, confidence)
    zero = lam == 0.0
    result: npt.NDArray[np.bool_] = np.where(zero, (exact_low <= p) & (p <= exact_high),
                                             covered)
    return result


def _normal_quantile(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def blaker_limits(k: npt.NDArray[np.float64], n: npt.NDArray[np.float64], confidence: float
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Blaker's (2000) exact interval of a binomial proportion, ``k`` successes of ``n``.

    The ``p`` whose two-sided Blaker p-value -- the probability, under ``p``, of an outcome
    whose smaller tail is no larger than the observed one's -- exceeds ``1 - confidence``
    (Blaker, H. (2000), "Confidence curves and improved exact confidence intervals for
    discrete distributions", *Canadian Journal of Statistics* 28: 783-798). Its coverage is
    at least the level at every ``p`` (an exact test inverted), as Clopper-Pearson's, and it
    lies inside Clopper-Pearson's interval. Each limit: the first ``p`` accepted on a grid of
    400 steps from Clopper-Pearson's limit to ``k / n``, refined by four grids of 64 steps
    inside the step where it first accepts (to ~1e-9).

    >>> low, high = blaker_limits(np.array([3.0]), np.array([20.0]), 0.95)
    >>> round(float(low[0]), 4), round(float(high[0]), 4)  # Clopper-Pearson: 0.0321, 0.3789
    (0.0422, 0.3694)
    """
    pairs = [(int(a), int(b)) for a, b in zip(np.asarray(k).ravel(), np.asarray(n).ravel(),
                                              strict=True)]
    limits = {pair: _blaker(pair[0], pair[1], float(confidence)) for pair in set(pairs)}
    low = np.array([limits[pair][0] for pair in pairs], dtype=np.float64)
    high = np.array([limits[pair][1] for pair in pairs], dtype=np.float64)
    return low.reshape(np.shape(k)), high.reshape(np.shape(k))


@functools.lru_cache(maxsize=4096)
def _blaker(k: int, n: int, confidence: float) -> tuple[float, float]:
    return _blaker_lower(k, n, confidence), 1.0 - _blaker_lower(n - k, n, confidence)


def _blaker_lower(k: int, n: int, confidence: float) -> float:
    from scipy.special import betaincinv
    from scipy.stats import binom

    if k == 0:
        return 0.0
    alpha = 1.0 - confidence
    x = np.arange(n + 1)

    def accepted(p: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        pmf = binom.pmf(x[None, :], n, p[:, None])
        cdf = np.cumsum(pmf, axis=1)
        upper = 1.0 - cdf + pmf  # P(X >= x)
        tail = np.minimum(cdf, upper)
        observed = tail[:, k:k + 1] * (1.0 + 1e-7)  # ties, as Blaker's own code
        return np.asarray(np.sum(np.where(tail <= observed, pmf, 0.0), axis=1) > alpha)

    out = float(betaincinv(k, n - k + 1, alpha / 2.0))  # Clopper-Pearson's lower limit
    inn, points = k / n, 401
    for _ in range(5):  # a grid, then four finer ones inside the cell where it first accepts
        grid = np.linspace(out, inn, points)
        first = int(np.argmax(accepted(grid)))
        if first == 0:
            return float(grid[0])
        out, inn, points = float(grid[first - 1]), float(grid[first]), 65
    return inn


def _constrained_variance(counts: npt.NDArray[np.float64], values: npt.NDArray[np.float64],
                          theta: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``sum pi_j (w_j - theta)^2`` at the multinomial MLE ``pi`` under ``sum pi_j w_j = theta``.

    One row per run (``counts`` ``x_j`` and ``values`` ``w_j``, ``theta`` one per row). The
    maximum of ``sum x_j log pi_j`` on the simplex with that linear constraint is ``pi_j =
    p_j / (1 + t (w_j - theta))`` (``p_j = x_j / n``), ``t`` the root of ``sum p_j (w_j -
    theta) / (1 + t (w_j - theta)) = 0`` (the Lagrange form of the constrained MLE, as in
    Owen's empirical likelihood for a mean), found by bisection where every ``1 + t (w_j -
    theta)`` of a seen cell is positive; where that would need a negative multiplier for a
    cell nobody fell in, ``t`` stops where that cell's ``1 + t (w_k - theta)`` reaches 0 and the
    cell takes the mass the others leave (the boundary solution: Tango's closed form likewise
    puts mass on an empty discordant cell).
    """
    n = counts.sum(axis=1)
    share = counts / n[:, None]
    dv = values - theta[:, None]
    seen = counts > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        pole = np.where(dv != 0, -1.0 / dv, np.nan)
    t_low = np.max(np.where(seen & (dv > 0), pole, -1e12), axis=1)
    t_high = np.min(np.where(seen & (dv < 0), pole, 1e12), axis=1)
    a = t_low + 1e-13 * (1.0 + np.abs(t_low))
    b = t_high - 1e-13 * (1.0 + np.abs(t_high))
    for _ in range(64):  # the slope falls from +inf to -inf between the poles
        mid = 0.5 * (a + b)
        slope = np.sum(np.where(seen, share * dv / (1.0 + mid[:, None] * dv), 0.0), axis=1)
        a, b = np.where(slope > 0, mid, a), np.where(slope > 0, b, mid)
    t = 0.5 * (a + b)
    z_low = np.max(np.where(~seen & (dv > 0), pole, -np.inf), axis=1)
    z_high = np.min(np.where(~seen & (dv < 0), pole, np.inf), axis=1)
    bound = (t < z_low) | (t > z_high)
    t = np.clip(t, z_low, z_high)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(seen, share / (1.0 + t[:, None] * dv), 0.0)
        at_bound = ~seen & np.isclose(1.0 + t[:, None] * dv, 0.0, atol=1e-9)
    rest = np.clip(1.0 - pi.sum(axis=1), 0.0, 1.0)
    first = at_bound & (np.cumsum(at_bound, axis=1) == 1)
    pi = pi + np.where(bound[:, None] & first, rest[:, None], 0.0)
    variance: npt.NDArray[np.float64] = np.sum(pi * dv * dv, axis=1) / pi.sum(axis=1)
    return variance


def _score_mean(counts: npt.NDArray[np.float64], values: npt.NDArray[np.float64],
                z: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
    """Score interval of ``sum pi_j w_j``, the mean of a variable taking the values ``w_j``.

    ``{theta: (mean - theta)^2 <= z^2 V(theta) / n}`` with ``V`` the variance at the
    constrained MLE (:func:`_constrained_variance`), its ends found by bisection between the
    mean and the lowest (highest) value: Wilson's interval when the values are 1, 1, 0, 0,
    Tango's (1998) paired-difference interval when they are 0, 1, -1, 0. Returns
    ``(mean, low, high)``.
    """
    n = counts.sum(axis=1)
    mean = np.sum(counts * values, axis=1) / n

    def inside(theta: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        gap = (mean - theta) ** 2 - z * z * _constrained_variance(counts, values, theta) / n
        return np.asarray(gap <= 0.0)

    ends = []
    for edge in (values.min(axis=1), values.max(axis=1)):
        inner, outer = mean.copy(), edge.copy()
        for _ in range(48):
            mid = 0.5 * (inner + outer)
            ok = inside(mid)
            inner, outer = np.where(ok, mid, inner), np.where(ok, outer, mid)
        # at the lowest (highest) value the only law left has no spread: inside iff equal
        ends.append(np.where(mean == edge, edge, 0.5 * (inner + outer)))
    return mean, ends[0], ends[1]
