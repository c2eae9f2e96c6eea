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
interval of a mean is, but it covered only 93-94% of 95% with 40 trusted labels in simulation
(``bench/bench_ppi.py``). For success labels (0 or 1 on both sides) ``method="mover"`` keeps
the paper's estimate and builds the interval from the two independent parts it adds up:
``mean(Yhat_unlabelled)`` is a binomial proportion (Wilson interval) and ``mean(Y - Yhat)`` a
difference of two proportions on the same items (Newcombe's paired score interval, method 10,
:func:`evalband.stats.diff_paired`); the sum's limits are recovered from the parts' as in
Zou & Donner (2008), "Construction of confidence limits about effect measures: a general
approach", *Statistics in Medicine* 27: 1693-1702 (MOVER, for a sum of independent
estimates)::

    low  = theta - sqrt((m - l_m)^2 + (r - l_r)^2)
    high = theta + sqrt((u_m - m)^2 + (u_r - r)^2)

Both limits are kept in ``[0, 1]``, where a success rate lies (the estimate itself is not
clipped: it stays unbiased).

**Power tuning inside MOVER** (the default, ``lam=None``): with a weight ``lam`` the estimate
is ``lam * mean(Yhat_unlabelled) + mean(Y - lam * Yhat)``; the first part's limits are
``lam`` times its Wilson limits, the second's Newcombe's method 10 with ``Yhat``'s Wilson
limits scaled by ``lam`` (MOVER for a weighted difference of correlated proportions, Zou &
Donner 2008), and the two combine as above. ``lam = 1`` is the paper's interval, ``lam = 0``
exactly the trusted labels' Wilson interval. The default takes PPI++'s ``lam`` (the formula
above, ``ppi_py``'s) and, where that interval would be wider than the trusted labels' Wilson
interval, that Wilson interval (``lam = 0``): never wider than the trusted labels alone,
narrower wherever the cheap scorer carries information. Near a rate of 0 or 1 an
85%-agreeing scorer carries little (its correlation with the trusted one is small) and the
default is then the Wilson interval itself, with Wilson's coverage (94.0% at ``p = 0.97``,
``n = 30``: the known dip of a score interval at a few failures). Its coverage is simulated
in the tests and the bench (at least 95% from 30 trusted labels in the designs there, or the
trusted Wilson interval's own where that is below). Beside it the classical interval of the
trusted labels alone: Wilson for ``mover``, the CLT interval (``lam = 0``) for ``clt``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalband._util.validate import check_choice, check_confidence
from evalband.errors import InvalidInputError

__all__ = ["PPIMean", "PPI_METHODS", "ppi_mean"]

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
            labels alone, ``None`` (the default, as ``ppi_py``'s) tuned (PPI++); with
            ``mover`` a tuned interval that would be wider than the trusted labels' Wilson
            interval is that Wilson interval (``lam`` 0).
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
    from evalband.stats._difference import _newcombe_paired
    from evalband.stats._intervals import interval

    for values in (y, yhat, yhat_u):
        if not np.isin(values, (0.0, 1.0)).all():
            raise InvalidInputError("the mover interval needs success labels (0 or 1); use "
                                    "method='clt' for scores")
    n, big_n = y.size, yhat_u.size
    both = int((y * yhat).sum())
    y_only = int((y * (1.0 - yhat)).sum())
    yhat_only = int(((1.0 - y) * yhat).sum())
    trusted = interval(int(y.sum()), n, confidence=confidence)
    k_u = int(yhat_u.sum())
    imputed = interval(k_u, big_n, confidence=confidence)
    m = k_u / big_n

    def limits(weight: float) -> tuple[float, float, float, float]:
        rect_low, rect_high = _newcombe_paired(
            both, y_only, yhat_only, n - both - y_only - yhat_only,
            confidence, weight)
        r = float(y.mean()) - weight * float(yhat.mean())
        estimate = weight * m + r
        low = max(0.0, estimate - math.hypot(weight * (m - imputed.low), r - rect_low))
        high = min(1.0, estimate + math.hypot(weight * (imputed.high - m), rect_high - r))
        return estimate, low, high, r

    estimate, low, high, r = limits(lam)
    if tuned and high - low > trusted.high - trusted.low:  # never wider than trusted alone
        lam = 0.0
        estimate, low, high, r = limits(0.0)
    se = math.sqrt(lam * lam * m * (1.0 - m) / big_n + float(np.var(y - lam * yhat)) / n)
    return PPIMean(
        estimate=estimate, low=low, high=high, se=se, lam=float(lam), n=n,
        n_unlabelled=big_n, rectifier=r, classical=float(y.mean()),
        classical_low=trusted.low, classical_high=trusted.high, method="mover",
        confidence=confidence)
