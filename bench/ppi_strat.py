"""Experiment (issue 29): PPI++ for success labels as double sampling for stratification.

Not adopted (see the verdict at the end). Run: ``PYTHONPATH=src .venv/bin/python
bench/ppi_strat.py validate`` (the harness on the interval of ``mdef``), ``... 20,30 RULE``
(exact coverage of every 20- and 30-label design of ``bench/bench_ppi.py``'s grid, RULE one
of ``mover_wilson``, ``score``, ``score_mn``, ``score_mn_skew``; ``PPI_STRAT_BARTLETT=1``
for Gart and Nam's original form of the skewness correction; rows to
``bench/ppi_strat_RULE_NS.json``), ``... widths`` (the SCAS interval's mean width beside the
trusted-only Wilson's, 2,000 draws per design, all 224 designs, same seeds as the bench).
``PPI_STRAT_TOL_TABLE`` / ``PPI_STRAT_TOL_K`` truncate the labelled tables / unlabelled counts
by mass (defaults 1e-13 / 1e-15; the n = 100 runs used 1e-11 / 1e-13); every row reports the
mass left out (``dropped_mass``, at most 1e-8), which bounds the truncation error.

**Identity** (checked exactly): with ``b = q1 - q0`` (the least-squares slope of ``Y`` on
``Yhat`` in the labelled set) the PPI estimate at ``lam = b N / (N + n)`` is the
post-stratified double-sampling estimate ``pi q1 + (1 - pi) q0`` (``pi`` the cheap-success
share of all ``n + N`` episodes; Cochran 1977, section 12.2). PPI++'s weight (``ppi_py``'s)
is ``lam_ppi = b N / (N + n) * h (1 - h) / s2`` -- ``h`` the labelled cheap rate, ``s2`` the
``1/(m - 1)`` variance of all cheap labels -- so the two estimates differ by ``(lam_ppi -
lam) (m_u - h)``: up to 0.017 with 30 labels in random cases, up to 0.23 with 20 labels at
70% agreement (``max_ppi_gap`` in the widths file). Centring a Wilson-MOVER on PPI++'s
estimate instead of the stratified one costs coverage (94.86% at p 0.5, 70% symmetric, 20),
and PPI++'s estimate falls outside the SCAS interval in up to 5.65% of draws (p 0.05-0.1 or
0.9-0.95, agreement 95-98%, 20-30 labels): the interval cannot be centred on the current
estimate; adopting it means printing the double-sampling estimate (the paper's point
estimate at ``lam = b N / (N + n)``, exactly unbiased given both strata non-empty).

**Candidates** (all: PPI++'s weight 0 -- a constant labelled cheap label or no positive
covariance -- gives the trusted labels' Blaker interval, as on ``mdef``; otherwise both strata
hold a labelled item):

* ``mover_wilson``: Zou, Huang & Zhang (2009) MOVER of per-stratum Wilson limits plus the
  share's Wilson term times ``|q1 - q0|``. Exact, 20/30 labels: 15 of 112 designs below 95%
  (lowest 93.55% at p 0.1 / 0.9, 70% symmetric, 20 labels; 93.80% at p 0.05, 85% symmetric,
  20), all symmetric errors at p <= 0.1 or >= 0.9 plus p 0.3-0.7 at 70% with 30 labels
  (94.80-94.97%). Jeffreys, Wilson with continuity correction at 0 or m successes, and
  Agresti-Coull limits were tried on those: each leaves some below 95% (Jeffreys 94.03% at
  0.5/70% sym/20; CC-edge 93.60% at 0.1/70% sym/20; Agresti-Coull 94.58% at 0.05/70%/20, and
  wider than Wilson's at 0.05/85%/20).
* ``score``: the score test of ``theta = pi q1 + (1 - pi) q0`` (restricted MLE of the two
  binomials, variance plus Cochran's share term). 94.80% at 0.5/70% sym/20, 94.51% at
  0.3/70% sym/30.
* ``score_mn``: with Miettinen & Nurminen's ``n / (n - 1)``. Exact, 20/30: all 112 >= 95%
  (lowest 95.04%, 0.3/70% sym/30); 100 labels: 94.96% at 0.1/70% sym.
* ``score_mn_skew`` (SCAS: MN plus the Gart & Nam 1988/1990, Laud 2017 skewness correction
  at the restricted MLE, put on the critical values: ``|S - g (z^2 - 1) / 6| <= z``).
  Exact, 20/30: all 112 >= 95% (lowest 95.09%, 0.3 and 0.7 / 70% sym / 30). Exact, 300
  labels: 96.31% at 0.1/98% sym (``mdef``: 94.94%), 95.07% at 0.1/70% one-sided. Exact, 100
  labels: see the table. Width (2,000 draws): narrower than the trusted-only Wilson in all
  156 informative designs (agreement >= 85%, scorer not constant), max ratio 0.943 (0.7/85%
  one-sided/20; ``mdef`` 1.035), median 0.772; ``mdef``'s three wide designs 0.943, 0.908,
  0.877.
* Gart & Nam's original form ``|S - g (S^2 - 1) / 6| <= z`` (``PPI_STRAT_BARTLETT=1``):
  exact, 20/30: all 112 >= 95.15%; 95.05% at 0.1/85% sym/100. But ``S - g (S^2 - 1) / 6``
  is not monotone in ``S``: it accepts rates far from the estimate wherever ``g`` is large,
  and the hull of the accepted rates (a grid of 401, 400 draws) is 2.4-2.9 times as wide as
  the trusted-only Wilson interval in five informative 20/30-label designs (the SCAS form's
  hull there: 0.80-0.94, equal to its bisection limits). Dead.
* Cochran's per-stratum ``n_h / (n_h - 1)`` instead of MN's ``n / (n - 1)``
  (``PPI_STRAT_STRATA_FACTOR=1``): 95.34% at 0.1/85% sym/100, but 1.010 times Wilson's width
  at 0.7/85% one-sided/20 (1,000 draws). Fails the width target.

**The four designs ``mdef`` fails, and the designs SCAS fails** (exact coverage by
enumeration, ``dropped_mass`` <= 2e-7; width = mean width / the trusted-only Wilson's, 2,000
draws, bench seeds):

=====================================  ===================  ===================
design (rate, agreement, errors, n)    ``mdef`` interval    SCAS (strata)
=====================================  ===================  ===================
0.1, 98%, symmetric, 300: coverage     94.94%               96.31%
0.7, 85%, one-sided, 20: width         1.035                0.943
0.9, 95%, one-sided, 20: width         1.015                0.908
0.9, 95%, one-sided, 30: width         1.005                0.877
0.1, 85%, symmetric, 100: coverage     96.16%               **94.97%**
0.9, 85%, symmetric, 100: coverage     not computed         **94.97%**
=====================================  ===================  ===================

SCAS, all exact: 112 designs with 20/30 labels >= 95.09%; 56 with 100 labels: 54 >= 95.02%,
two at 94.9716% (the pair above, mirror images); 300 labels (not the whole grid -- the
symmetric designs at mid rates hold ~10^8 outcomes), nine designs chosen as the lowest Monte
Carlo coverages and the one ``mdef`` fails, all >= 95%: 0.9/95% one-sided 95.12%, 0.3/85%
one-sided 95.05%, 0.1/98% symmetric 96.31%, 0.1/70% one-sided 95.07%, 0.1/85% symmetric
95.05%, 0.3/85% symmetric 95.08%, 0.5/70% symmetric 95.02%, 0.1/70% symmetric 95.03%,
0.05/85% symmetric 95.06% (``dropped_mass`` <= 2e-7 there).
Width: all 156 informative designs narrower than Wilson's (max 0.943, median 0.772).

**Verdict**: SCAS fixes all four ``mdef`` failures, and its coverage misses 95% in two
designs by 0.03 points (94.97% at rate 0.1 / 0.9, 85% symmetric agreement, 100 labels;
both tails 2.3-2.6%, no skew left: a plain discreteness shortfall). By the rule of the
brief it is not moved into ``src`` (the implementation, with tests, waits on branch
``ppi6-src``); the two published refinements that close the gap either break the width
target (Cochran's per-stratum factor) or the interval itself (Gart & Nam's original form).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ppi  # noqa: E402
from bench_ppi import AGREEMENT, ERRORS, RATES, _cells  # noqa: E402
from evalband.stats._intervals import _wilson  # noqa: E402
from evalband.stats._ppi import blaker_limits, mover_covers, tuned_lambda_counts  # noqa: E402

Array = npt.NDArray[np.float64]
BIG_N = 2000
Z = 1.959963984540054


TOL_TABLE = float(os.environ.get("PPI_STRAT_TOL_TABLE", "1e-13"))
TOL_K = float(os.environ.get("PPI_STRAT_TOL_K", "1e-15"))
BARTLETT = os.environ.get("PPI_STRAT_BARTLETT") == "1"  # Gart-Nam's S - g (S^2 - 1) / 6
STRATA_FACTOR = os.environ.get("PPI_STRAT_STRATA_FACTOR") == "1"  # n_h / (n_h - 1) each


def outcomes(p: float, agree: float, n: int, errors: str, big_n: int = BIG_N,
             tol_table: float = TOL_TABLE, tol_k: float = TOL_K
             ) -> tuple[Array, Array, Array, Array, float]:
    """``bench_ppi.outcomes`` at this experiment's tolerances."""
    return bench_ppi.outcomes(p, agree, n, errors, big_n, tol_table, tol_k)


# --- interval rules: (tables[T, 4], k_u[K]) -> (low[T, K], high[T, K]) --------------------

def current_covers(tables: Array, k_u: Array, big_n: int, p: float) -> npt.NDArray[np.bool_]:
    """The interval on ``mdef`` (``mover_covers``), as a T x K array."""
    t, k = np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables))
    lam = tuned_lambda_counts(t, k, big_n)
    covered: npt.NDArray[np.bool_] = mover_covers(t, k, big_n, lam, 0.95, p).reshape(
        len(tables), k_u.size)
    return covered


def _limits(kind: str, k: Array, m: Array) -> tuple[Array, Array]:
    """Per-proportion limits of ``k`` successes of ``m`` (``m`` > 0)."""
    from scipy.special import betaincinv

    if kind == "wilson":
        return _wilson(k, m, 0.95)
    if kind == "jeffreys":
        low = np.where(k > 0, betaincinv(k + 0.5, m - k + 0.5, 0.025), 0.0)
        high = np.where(k < m, betaincinv(k + 0.5, m - k + 0.5, 0.975), 1.0)
        return low, high
    if kind == "wilson_cc_edge":  # continuity-corrected Wilson only at 0 or m successes
        low, high = _wilson(k, m, 0.95)
        lc, hc = _wilson_cc(k, m)
        edge = (k == 0) | (k == m)
        return np.where(edge, lc, low), np.where(edge, hc, high)
    if kind == "wilson_cc":
        return _wilson_cc(k, m)
    if kind == "agresti_coull":
        mt = m + Z * Z
        pt = (k + Z * Z / 2) / mt
        h = Z * np.sqrt(pt * (1 - pt) / mt)
        return np.clip(pt - h, 0, 1), np.clip(pt + h, 0, 1)
    raise ValueError(kind)


def _wilson_cc(k: Array, m: Array) -> tuple[Array, Array]:
    """Wilson's interval with continuity correction (Newcombe 1998, method 4)."""
    z2 = Z * Z
    p = k / m
    den = 2 * (m + z2)
    with np.errstate(invalid="ignore"):
        low = (2 * m * p + z2 - 1 - Z * np.sqrt(np.maximum(
            z2 - 2 - 1 / m + 4 * p * (m * (1 - p) + 1), 0))) / den
        high = (2 * m * p + z2 + 1 + Z * np.sqrt(np.maximum(
            z2 + 2 - 1 / m + 4 * p * (m * (1 - p) - 1), 0))) / den
    return np.where(k == 0, 0.0, np.maximum(low, 0)), np.where(k == m, 1.0, np.minimum(high, 1))


def strat_limits(tables: Array, k_u: Array, big_n: int, *, kind: str = "wilson",
                 centre: str = "strat", pi_kind: str = "wilson") -> tuple[Array, ...]:
    """The candidate: MOVER of the per-stratum limits, T x K arrays ``(est, low, high)``.

    theta = pi q1 + (1 - pi) q0; q1 = P(Y=1 | Yhat=1), q0 = P(Y=1 | Yhat=0) from the labelled
    strata (binomial given the stratum sizes), pi the cheap-success share of all n + N items.
    lam = 0 (PPI++'s weight; cheap labels constant on the labelled items, or no positive
    covariance): Blaker's interval of the trusted labels, as on mdef.
    """
    a, b, c, d = (tables[:, i:i + 1] for i in range(4))
    n = a + b + c + d
    n1, n0 = a + c, b + d
    kk = k_u[None, :]
    lam = tuned_lambda_counts(np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables)),
                              big_n).reshape(len(tables), k_u.size)
    s1, s0 = np.maximum(n1, 1), np.maximum(n0, 1)
    q1, q0 = a / s1, b / s0
    l1, u1 = _limits(kind, a, s1)
    l0, u0 = _limits(kind, b, s0)
    pi = (n1 + kk) / (n + big_n)
    lp, up = _limits(pi_kind, n1 + kk, n + big_n + 0 * kk)
    dd = q1 - q0
    theta = pi * q1 + (1 - pi) * q0
    ppi = (a + b) / n + lam * (kk / big_n - n1 / n)
    centre_value = theta if centre == "strat" else ppi
    pi_low = np.where(dd >= 0, dd * (pi - lp), -dd * (up - pi))
    pi_high = np.where(dd >= 0, dd * (up - pi), -dd * (pi - lp))
    low = centre_value - np.sqrt((pi * (q1 - l1)) ** 2 + ((1 - pi) * (q0 - l0)) ** 2
                                 + pi_low ** 2)
    high = centre_value + np.sqrt((pi * (u1 - q1)) ** 2 + ((1 - pi) * (u0 - q0)) ** 2
                                  + pi_high ** 2)
    el, eh = blaker_limits((a + b)[:, 0], n[:, 0], 0.95)
    zero = lam == 0.0
    low = np.where(zero, el[:, None], np.clip(low, 0, 1))
    high = np.where(zero, eh[:, None], np.clip(high, 0, 1))
    return np.where(zero, (a + b) / n, ppi), low, high, theta


def _constrained(k1: Array, n1: Array, k0: Array, n0: Array, w: Array, theta: Array
                 ) -> tuple[Array, Array]:
    """``(q1, q0)`` maximising the two binomial likelihoods under ``w q1 + (1 - w) q0 =
    theta`` (the restricted MLE of the score test; concave in ``q1``: bisection on the
    derivative over the feasible range)."""
    lo = np.maximum(0.0, (theta - (1 - w)) / w)
    hi = np.minimum(1.0, theta / w)
    eps = 1e-12

    def slope(q1: Array) -> Array:
        q0 = np.clip((theta - w * q1) / (1 - w), eps, 1 - eps)
        q1c = np.clip(q1, eps, 1 - eps)
        return ((k1 - n1 * q1c) / (q1c * (1 - q1c))
                - w / (1 - w) * (k0 - n0 * q0) / (q0 * (1 - q0)))

    a, b = lo + 0 * theta, hi + 0 * theta
    for _ in range(60):
        mid = 0.5 * (a + b)
        up = slope(mid) > 0
        a, b = np.where(up, mid, a), np.where(up, b, mid)
    q1 = 0.5 * (a + b)
    return q1, np.clip((theta - w * q1) / (1 - w), 0.0, 1.0)


def score_accepts(tables: Array, k_u: Array, big_n: int, theta: Array,
                  z: float = Z, mn: bool = False, rows: bool = False, skew: bool = False
                  ) -> npt.NDArray[np.bool_]:
    """Score test of ``pi q1 + (1 - pi) q0 = theta`` (T x K; ``theta`` broadcastable):
    ``(theta_hat - theta)^2 <= z^2 V``, ``V = pi^2 q1 (1 - q1) / n1 + (1 - pi)^2 q0 (1 - q0)
    / n0 + (q1 - q0)^2 pi (1 - pi) / (n + N)`` at the restricted MLE ``(q1, q0)``."""
    a, b, c, d = (tables[:, i:i + 1] for i in range(4))
    n = a + b + c + d
    n1, n0 = a + c, b + d
    kk = k_u[:, None] if rows else k_u[None, :]
    pi = (n1 + kk) / (n + big_n)
    s1, s0 = np.maximum(n1, 1), np.maximum(n0, 1)
    est = pi * a / s1 + (1 - pi) * b / s0
    q1, q0 = _constrained(a + 0 * pi, s1 + 0 * pi, b + 0 * pi, s0 + 0 * pi, pi,
                          theta + 0 * pi)
    var = (pi ** 2 * q1 * (1 - q1) / s1 + (1 - pi) ** 2 * q0 * (1 - q0) / s0
           + (q1 - q0) ** 2 * pi * (1 - pi) / (n + big_n))
    if mn and STRATA_FACTOR:  # Cochran's s_h^2: n_h / (n_h - 1) in each stratum
        f1 = s1 / np.maximum(s1 - 1.0, 1e-9)
        f0 = s0 / np.maximum(s0 - 1.0, 1e-9)
        var = (f1 * pi ** 2 * q1 * (1 - q1) / s1 + f0 * (1 - pi) ** 2 * q0 * (1 - q0) / s0
               + (q1 - q0) ** 2 * pi * (1 - pi) / (n + big_n))
    elif mn:  # Miettinen & Nurminen's (1985) variance factor n / (n - 1), n the labelled items
        var = var * n / (n - 1.0)
    if not skew:
        accepted: npt.NDArray[np.bool_] = (est - theta) ** 2 <= z * z * var
        return accepted
    # Gart & Nam (1988, 1990) / Laud (2017) skewness correction: the third central moment
    # of the estimate at the restricted MLE; accept where |S - g (z^2 - 1) / 6| <= z (the
    # correction on the critical values, first-order equal to |S - g (S^2 - 1) / 6| <= z
    # and monotone in S)
    mu3 = (pi ** 3 * q1 * (1 - q1) * (1 - 2 * q1) / s1 ** 2
           + (1 - pi) ** 3 * q0 * (1 - q0) * (1 - 2 * q0) / s0 ** 2
           + (q1 - q0) ** 3 * pi * (1 - pi) * (1 - 2 * pi) / (n + big_n) ** 2)
    safe = np.where(var > 0, var, 1.0)
    stat = np.where(var > 0, (est - theta) / np.sqrt(safe), np.where(est == theta, 0.0, np.inf))
    gamma = np.where(var > 0, mu3 / safe ** 1.5, 0.0)
    corrected = stat - gamma * ((stat * stat if BARTLETT else z * z) - 1.0) / 6.0
    accepted = np.abs(np.nan_to_num(corrected, nan=np.inf)) <= z
    return accepted


def score_covers(tables: Array, k_u: Array, big_n: int, p: float, mn: bool = False,
                 skew: bool = False) -> tuple[Array, ...]:
    """Coverage-only rule (no limits): the score test at ``p``; Blaker where lam is 0.
    Returns ``(est, low, high)``, the limits stand-ins: ``p`` when covered, else +-inf."""
    a, b, c, d = (tables[:, i:i + 1] for i in range(4))
    n = a + b + c + d
    lam = tuned_lambda_counts(np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables)),
                              big_n).reshape(len(tables), k_u.size)
    ok = score_accepts(tables, k_u, big_n, np.full((1, 1), p), mn=mn, skew=skew)
    el, eh = blaker_limits((a + b)[:, 0], n[:, 0], 0.95)
    ok = np.where(lam == 0.0, (el[:, None] <= p) & (p <= eh[:, None]), ok)
    pi = (a + c + k_u[None, :]) / (n + big_n)
    est = np.where(lam == 0.0, (a + b) / n,
                   pi * a / np.maximum(a + c, 1) + (1 - pi) * b / np.maximum(b + d, 1))
    side = np.where(est > p, np.inf, -np.inf)  # a miss: the interval lies beyond p there
    low = np.where(ok, p, side)
    return est, low, low


def score_limits(tables: Array, k_u: Array, big_n: int, mn: bool = True,
                 rows: bool = False, skew: bool = True) -> tuple[Array, ...]:
    """The score interval's limits (T x K), by bisection on ``theta`` from the estimate to
    0 (1): ``(est, low, high)``; Blaker's interval where PPI++'s lam is 0."""
    a, b, c, d = (tables[:, i:i + 1] for i in range(4))
    n = a + b + c + d
    kk = k_u[:, None] if rows else k_u[None, :]
    pi = (a + c + kk) / (n + big_n)
    est = pi * a / np.maximum(a + c, 1) + (1 - pi) * b / np.maximum(b + d, 1)
    ends = []
    for edge in (0.0, 1.0):
        inner, outer = est.copy(), np.full_like(est, edge)
        for _ in range(40):
            mid = 0.5 * (inner + outer)
            ok = score_accepts(tables, k_u, big_n, mid, mn=mn, rows=rows, skew=skew)
            inner, outer = np.where(ok, mid, inner), np.where(ok, outer, mid)
        at_edge = score_accepts(tables, k_u, big_n, np.full_like(est, edge), mn=mn,
                                rows=rows, skew=skew)
        ends.append(np.where(at_edge, edge, 0.5 * (inner + outer)))
    lam = (tuned_lambda_counts(tables, k_u, big_n)[:, None] if rows else tuned_lambda_counts(
        np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables)), big_n).reshape(
        len(tables), k_u.size))
    el, eh = blaker_limits((a + b)[:, 0], n[:, 0], 0.95)
    zero = lam == 0.0
    ppi = (a + b) / n + lam * (kk / big_n - (a + c) / n)
    return (np.where(zero, (a + b) / n, est), np.where(zero, el[:, None], ends[0]),
            np.where(zero, eh[:, None], ends[1]), ppi)


def mc_width(p: float, agree: float, n: int, errors: str, reps: int = 2000,
             seed: int = 0, mn: bool = True, skew: bool = True) -> dict[str, Any]:
    """Monte Carlo mean width of the score interval beside the trusted-only Wilson's (same
    draws), and how often PPI++'s estimate falls outside the interval."""
    rng = np.random.default_rng(seed)
    probs = _cells(p, agree, errors)
    tables = rng.multinomial(n, probs, size=reps).astype(float)
    k_u = rng.binomial(BIG_N, probs[0] + probs[2], size=reps).astype(float)
    est, low, high, ppi = (v[:, 0] for v in score_limits(tables, k_u, BIG_N, mn, rows=True,
                                                                  skew=skew))
    wl, wh = _wilson(tables[:, 0] + tables[:, 1], np.full(reps, float(n)), 0.95)
    return {"p": p, "agree": agree, "errors": errors, "n": n, "reps": reps,
            "width_ratio": round(float(np.mean(high - low) / np.mean(wh - wl)), 4),
            "mc_coverage": float(np.mean((low <= p) & (p <= high))),
            "ppi_outside": float(np.mean((ppi < low) | (ppi > high))),
            "max_ppi_gap": float(np.max(np.abs(ppi - est)))}


def audit(p: float, agree: float, n: int, errors: str,
          rule: Callable[[Array, Array, int], tuple[Array, ...]] | None = None,
          chunk: int = 2_000_000) -> dict[str, Any]:
    """Exact coverage and expected width of ``rule`` (None: the current interval)."""
    from scipy.stats import binom

    tables, p_table, k_u, p_k, dropped = outcomes(p, agree, n, errors)
    covered = width = 0.0
    step = max(1, chunk // k_u.size)
    below = above = outside = 0.0
    for i in range(0, len(tables), step):
        part = tables[i:i + step]
        w = p_table[i:i + step, None] * p_k[None, :]
        if rule is None:
            covered += float(w[current_covers(part, k_u, BIG_N, p)].sum())
            continue
        est, low, high, *_ = rule(part, k_u, BIG_N)
        outside += float(w[(est < low - 1e-12) | (est > high + 1e-12)].sum())
        covered += float(w[(low <= p) & (p <= high)].sum())
        below += float(w[high < p].sum())
        above += float(w[low > p].sum())
        width += float((w * (high - low)).sum())
    k = np.arange(n + 1.0)
    wl, wh = _wilson(k, np.full_like(k, float(n)), 0.95)
    pk = binom.pmf(k, n, p)
    wilson_width = float((pk * (wh - wl)).sum())
    out: dict[str, Any] = {"p": p, "agree": agree, "errors": errors, "n": n,
                           "coverage": round(covered, 6), "dropped_mass": dropped}
    if rule is not None:
        q = _cells(p, agree, errors)
        out |= {"width": round(width, 5), "wilson_width": round(wilson_width, 5),
                "width_ratio": round(width / wilson_width, 4),
                "miss_low": round(below, 5), "miss_high": round(above, 5),
                "estimate_outside": outside,
                "constant": not 0 < q[0] + q[2] < 1}
    return out


def grid(ns: tuple[int, ...], rule: Callable[..., tuple[Array, ...]]) -> list[dict[str, Any]]:
    """Audit every design of the bench grid with these trusted-label counts."""
    return [audit(p, a, n, e, rule) for n, p, a, e in product(ns, RATES, AGREEMENT, ERRORS)]


def failing(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Designs that miss 95% coverage (with the dropped mass added) or the width target."""
    return [r for r in rows if r["coverage"] + r["dropped_mass"] < 0.95
            or (r["agree"] >= 0.85 and not r["constant"] and r["width_ratio"] >= 1)]


if __name__ == "__main__":
    t0 = time.perf_counter()
    which = sys.argv[1] if len(sys.argv) > 1 else "validate"
    print("load", os.getloadavg())
    if which == "validate":
        for design in [(0.5, 0.7, 20, "symmetric"), (0.7, 0.85, 20, "one-sided")]:
            print(audit(*design), flush=True)
    elif which == "widths":  # SCAS: Monte Carlo widths over the bench grid, 2,000 draws
        from bench_ppi import TRUSTED

        rows = []
        start_load = os.getloadavg()
        for i, (p, a, n, e) in enumerate(product(RATES, AGREEMENT, TRUSTED, ERRORS)):
            rows.append(mc_width(p, a, n, e, reps=2000, seed=1000 + i))
            print(rows[-1], flush=True)
            Path(__file__).with_name("ppi_strat_scas_widths.json").write_text(json.dumps(
                {"load_at_start": start_load, "rows": rows}, indent=1) + "\n")
    else:  # N1,N2 RULE: exact coverage of RULE over the bench grid, rows to bench/NAME.json
        ns = tuple(int(x) for x in which.split(","))
        rule_name = sys.argv[2] if len(sys.argv) > 2 else "mover_wilson"
        name = (f"ppi_strat_{rule_name}{'_bartlett' if BARTLETT else ''}_"
                + "_".join(map(str, ns)))
        rows = []
        start_load = os.getloadavg()
        for n, p, a, e in product(ns, RATES, AGREEMENT, ERRORS):
            rule = (strat_limits if rule_name == "mover_wilson" else functools.partial(
                score_covers, p=p, mn="mn" in rule_name, skew="skew" in rule_name))
            rows.append(audit(p, a, n, e, rule))
            print(rows[-1], flush=True)
            Path(__file__).with_name(name + ".json").write_text(json.dumps(
                {"load_at_start": start_load, "rows": rows}, indent=1) + "\n")
    print(json.dumps({"seconds": time.perf_counter() - t0}))
