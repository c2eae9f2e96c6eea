r"""Bradley-Terry strengths from pairwise preferences, with intervals.

RoboArena ranks policies from blinded A/B comparisons with the Bradley-Terry model
(Bradley & Terry 1952, *Biometrika* 39:324-345): policy :math:`i` is preferred to :math:`j`
with probability :math:`\sigma(\theta_i - \theta_j)`, :math:`\sigma` the logistic function.
A tie counts half a preference each way (the usual reading when ties are few; Davidson 1970,
*JASA* 65:317-328, models them separately).

* :func:`bt_fit`: the maximum-likelihood strengths by Newton's method on the win matrix,
  centred (:math:`\sum_i \theta_i = 0`); with ``alpha > 0`` the penalised estimate
  minimising :math:`-\ell(\theta) + \alpha \lVert\theta\rVert^2` (choix's ``opt_pairwise``
  convention, against which the tests check it). The ML estimate exists when the comparison
  graph, a win (or half-win) as an edge from winner to loser, is strongly connected
  (Zermelo 1929; Ford 1957, *Amer. Math. Monthly* 64:28-33); otherwise the fit says so.
* Intervals: Wald, from the observed Fisher information
  :math:`H = \sum_{i<j} n_{ij} p_{ij}(1-p_{ij}) (e_i - e_j)(e_i - e_j)^\top` (its
  Moore-Penrose inverse is the covariance of the centred strengths); with ``clusters`` (a
  scene per comparison), the cluster-robust sandwich :math:`H^+ (\sum_s g_s g_s^\top) H^+`
  with :math:`g_s` the scene's score contribution (Liang & Zeger 1986, *Biometrika*
  73:13-22), so comparisons that share a start state are not counted as independent.
* :func:`bt_heterogeneity`: the task-aware variant: one fit per task against one pooled fit,
  the likelihood-ratio statistic :math:`G = 2(\sum_t \ell_t - \ell_\text{pooled})` on
  :math:`(T-1)(K-1)` degrees of freedom: does the ranking depend on the task?
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from evalband.errors import InvalidInputError

__all__ = ["BTFit", "bt_fit", "bt_wins", "bt_heterogeneity", "strongly_connected"]

FloatArray = npt.NDArray[np.float64]


class BTFit(NamedTuple):
    """A Bradley-Terry fit.

    ``strengths`` centred log-strengths; ``covariance`` of them (model-based, or the
    scene-clustered sandwich); ``loglik`` the log-likelihood of the win matrix at the
    estimate; ``exists``: the ML estimate exists (the comparison graph is strongly connected;
    with ``alpha > 0`` the penalised estimate always does); ``method``.
    """

    strengths: FloatArray
    covariance: FloatArray
    loglik: float
    exists: bool
    method: str


def bt_wins(k: int, first: Sequence[int], second: Sequence[int],
            outcome: Sequence[float]) -> FloatArray:
    """The win matrix: ``W[i, j]`` preferences of ``i`` over ``j`` (a tie: half each way).

    ``outcome`` per comparison: 1 the first is preferred, 0 the second, 0.5 a tie.

    >>> bt_wins(2, [0, 0, 1], [1, 1, 0], [1, 0.5, 1]).tolist()
    [[0.0, 1.5], [1.5, 0.0]]
    """
    w = np.zeros((k, k))
    for a, b, o in zip(first, second, outcome, strict=True):
        if a == b:
            raise InvalidInputError(f"a comparison needs two different policies; got {a} twice")
        if o not in (0, 0.5, 1):
            raise InvalidInputError(f"an outcome is 1, 0 or 0.5 (a tie); got {o!r}")
        w[a, b] += o
        w[b, a] += 1.0 - o
    return w


def strongly_connected(wins: FloatArray) -> bool:
    """Whether every policy reaches every other along ``i beat j`` edges (the MLE exists).

    >>> strongly_connected(np.array([[0, 1.0], [1.0, 0]])), strongly_connected(
    ...     np.array([[0, 2.0], [0, 0]]))
    (True, False)
    """
    k = wins.shape[0]
    edge = wins > 0
    for start in (edge, edge.T):
        seen = np.zeros(k, dtype=bool)
        seen[0] = True
        frontier = [0]
        while frontier:
            i = frontier.pop()
            for j in np.flatnonzero(start[i] & ~seen):
                seen[j] = True
                frontier.append(int(j))
        if not seen.all():
            return False
    return True


def _loglik(theta: FloatArray, wins: FloatArray) -> float:
    d = theta[:, None] - theta[None, :]
    return float(-np.sum(wins * np.logaddexp(0.0, -d)))


def bt_fit(
    wins: npt.ArrayLike,
    *,
    alpha: float = 0.0,
    clusters: Sequence[FloatArray] | None = None,
    tol: float = 1e-12,
    max_iter: int = 200,
) -> BTFit:
    r"""Bradley-Terry strengths (centred) with their covariance.

    Args:
        wins: ``K x K`` win matrix (:func:`bt_wins`).
        alpha: penalty :math:`\alpha \lVert\theta\rVert^2` (0: maximum likelihood).
        clusters: per scene, its own win matrix (summing to ``wins``): the sandwich
            covariance over scenes.
        tol: convergence tolerance on the Newton step.
        max_iter: Newton iterations at most.

    Returns:
        A :class:`BTFit`.

    >>> w = np.array([[0, 7, 9], [3, 0, 6], [1, 4, 0]], float)
    >>> fit = bt_fit(w)
    >>> fit.exists, np.round(fit.strengths, 3).tolist()
    (True, [0.944, -0.16, -0.783])
    """
    w = np.asarray(wins, dtype=np.float64)
    k = w.shape[0]
    if w.ndim != 2 or w.shape != (k, k) or k < 2 or np.any(w < 0):
        raise InvalidInputError("wins must be a square matrix of counts >= 0, 2 x 2 or larger")
    n = w + w.T
    exists = alpha > 0 or strongly_connected(w)
    theta = np.zeros(k)
    for _ in range(max_iter):
        d = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = (w - n * p).sum(axis=1) - 2.0 * alpha * theta
        info = n * p * (1.0 - p)
        hess = np.diag(info.sum(axis=1)) - info + 2.0 * alpha * np.eye(k)
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        theta = theta + step
        theta -= theta.mean()
        if not exists and np.abs(theta).max() > 30:  # diverging: no finite MLE
            break
        if np.abs(step).max() < tol:
            break
    d = theta[:, None] - theta[None, :]
    p = 1.0 / (1.0 + np.exp(-d))
    info = n * p * (1.0 - p)
    hess = np.diag(info.sum(axis=1)) - info + 2.0 * alpha * np.eye(k)
    inv = np.linalg.pinv(hess)
    method = "bradley-terry ML" if alpha == 0 else f"bradley-terry penalised (alpha {alpha:g})"
    if clusters is not None:
        meat = np.zeros((k, k))
        for wc in clusters:
            wc = np.asarray(wc, dtype=np.float64)
            g = (wc - (wc + wc.T) * p).sum(axis=1)
            meat += np.outer(g, g)
        scenes = len(clusters)
        scale = scenes / (scenes - 1) if scenes > 1 else 1.0
        inv = scale * inv @ meat @ inv
        method += ", scene-clustered sandwich"
    return BTFit(theta, np.asarray(inv, dtype=np.float64), _loglik(theta, w), bool(exists),
                 method)


def bt_heterogeneity(tables: Sequence[npt.ArrayLike]) -> tuple[float, int, float]:
    r"""Likelihood-ratio test that one set of strengths fits every task (stratum).

    Args:
        tables: one win matrix per task, over the same policies.

    Returns:
        ``(G, degrees of freedom, p)``: :math:`G = 2(\sum_t \ell_t - \ell_\text{pooled})`
        against :math:`\\chi^2_{(T-1)(K-1)}` (Agresti 2013, *Categorical Data Analysis*,
        section 11.6, for Bradley-Terry as a logit model; asymptotic).

    >>> same = np.array([[0, 6, 8], [4, 0, 6], [2, 4, 0]], float)
    >>> g, df, p = bt_heterogeneity([same, same])
    >>> round(g, 6), df, round(p, 3)
    (0.0, 2, 1.0)
    """
    from scipy.stats import chi2

    ws = [np.asarray(t, dtype=np.float64) for t in tables]
    if len(ws) < 2:
        raise InvalidInputError("heterogeneity needs two or more tasks")
    k = ws[0].shape[0]
    pooled = bt_fit(sum(ws[1:], ws[0]))
    separate = sum(bt_fit(w).loglik for w in ws)
    g = max(0.0, 2.0 * (separate - pooled.loglik))
    df = (len(ws) - 1) * (k - 1)
    return g, df, float(chi2.sf(g, df)) if df > 0 else math.nan
