"""Candidate B for issue 29: the score interval of the trusted rate in the full model.

Each episode has the cell probabilities ``pi_ab = P(Y = a, Yhat = b)``; the ``n`` labelled
episodes show ``(Y, Yhat)``, the ``N`` others ``Yhat`` only (labelled ones chosen at random:
missing at random, monotone). Parametrised as ``q = P(Yhat = 1)``, ``r1 = P(Y = 1 | Yhat =
1)``, ``r0 = P(Y = 1 | Yhat = 0)`` the log-likelihood factorises (Little & Rubin 2002,
*Statistical Analysis with Missing Data*, 2nd ed., section 7.2, monotone bivariate data)::

    l = m1 log q + (M - m1) log(1 - q)                     (Yhat of all M = n + N episodes)
      + s1 log r1 + (n1 - s1) log(1 - r1)                  (Y | Yhat = 1, labelled)
      + s0 log r0 + (n0 - s0) log(1 - r0)                  (Y | Yhat = 0, labelled)

and ``theta = P(Y = 1) = q r1 + (1 - q) r0``. The interval inverts Rao's score test of
``theta = theta0``: the parameters at their maximum under the constraint, the score ``U``
there, the statistic ``U' I^-1 U`` against ``chi2_1``::

    S(theta0) = (m1 - M q)^2 / (M q (1 - q))
              + sum_j (s_j - n_j r_j)^2 / (D_j r_j (1 - r_j)),  j = 1, 0

with ``D_j = n q_j`` (expected information, ``q_1 = q``, ``q_0 = 1 - q``; "score") or ``D_j =
n_j`` (information given the strata's sizes; "score_cond"). The constrained maximum
(Lagrange, ``mu`` the multiplier): ``r_j`` solves ``s_j - n_j r_j = mu c_j r_j (1 - r_j)``
(``c_1 = q``, ``c_0 = 1 - q``), a quadratic with one root in ``[0, 1]``, decreasing in ``mu``,
so ``mu`` is a 1-D monotone root of ``q r1 + (1 - q) r0 = theta0`` (bisection); ``q`` solves
``m1 - M q = mu (r1 - r0) q (1 - q)``, the same quadratic, iterated to a fixed point (a
contraction: ``q`` carries ``M`` episodes, the ``r`` only ``n``). In the cell probabilities
the problem is concave with a linear constraint, so this stationary point is the maximum.
A stratum without labelled episodes (``n_j = 0``) leaves ``r_j`` free: the profile is flat
and ``S = 0`` over a stretch of width ``1 - q`` (or ``q``): the data say nothing there.

Also computed from the same fit: the likelihood-ratio statistic ``2 (l(hat) - l(fit))``
("lr"). A cheap scorer constant over all ``n + N`` episodes: the trusted labels' Blaker
interval (the existing rule). At ``Yhat`` constant the statistic is Wilson's.

Judged exactly: coverage at the design's rate summed over every outcome (each 2x2 table of
the labelled episodes times each count of cheap successes among the unlabelled ones, mass
below ``TOL`` dropped and reported); widths from ``REPS`` draws per design (the limits by
bisection of ``S``), paired with the trusted labels' Wilson interval on the same draws.

Kinds: ``score`` (expected information), ``score_cond`` (``D_j = n_j``), ``score_obs`` (observed
information ``s/r^2 + (n - s)/(1 - r)^2``: at an empty stratum's boundary fit ``r_j = 0`` its
term is ``n_j`` instead of 0, coverage collapses, kept only as a record), ``lr``; each also
with ``+b``: Blaker's interval where PPI++'s tuned weight is 0 (the current interval's rule).

Results (``bench/ppi_score_results.json``; 2-core VM shared with 4 engineers, 1-minute load
average 2.9-7.5 during the runs; ``python bench/ppi_score.py summary`` prints them):

* harness check (``validate``): the current interval's exact coverage sums to 95.002% at p
  0.5, 70% symmetric, 20 labels and 94.943% at p 0.1, 98% symmetric, 300 labels, as
  bench_ppi's audit (``mover_covers`` over the same enumeration);
* ``score+b``, 20 labels (exact, all 56 designs): at least 95% everywhere (lowest 95.069% at
  p 0.5, 70% symmetric); width below Wilson's in all 39 informative designs (max 0.954,
  median 0.870; the current interval: max 1.032, median 0.960, 2 over 1 on these draws);
* ``score+b``, 30 labels (exact): **94.836%** at p 0.3 and 0.7, 70% symmetric (two designs
  below 95%); width below Wilson's in all 39 (max 0.928, median 0.828; current 0.999/0.904);
* 100 labels (500 draws each): width max 0.893, median 0.702 (current 0.943/0.760); one
  exact check, p 0.5, 85% one-sided: 95.042%;
* 300 labels (500 draws): width max 0.919, median 0.667 (current 0.937/0.691); exact
  **94.877%** at p 0.1, 98% symmetric (current 94.94%; misses on both sides alike, 2.72%
  below and 2.41% above: not skewness) and **94.933%** at p 0.3, 98% symmetric;
* plain ``score`` (no Blaker at weight 0): 94.625% at p 0.05/0.95, 70% symmetric, 20 labels
  (Wilson's dip: the cheap scorer says little there); ``score_cond`` and ``lr`` lower still
  (``lr`` 92.0% at p 0.1, 70%, 20 labels);
* the PPI++ estimate (clipped to [0, 1]) falls outside ``score+b`` in up to 7% of draws with
  30 labels (p 0.05/0.95 at 95-98% agreement), 4.4% with 100 and 1.2% with 300 (8.3% at p
  0.05, 98% symmetric, 20 labels): the full model knows ``P(Y=1 | Yhat=0) >= 0`` where the
  additive PPI correction does not; the MLE (post-stratified estimate) differs from PPI++'s
  by 0.002-0.018 on average.

Verdict: narrower than Wilson in every informative design and than the current interval in
almost all, but coverage below 95% in 2 designs with 30 labels and at least 2 with 300: it
does not pass the issue's claim either.

Run: ``PYTHONPATH=src .venv/bin/python bench/ppi_score.py [validate|failing|grid N REPS|
summary]`` (grid 20: 10 min, grid 30: 26 min under load 4-5).
"""

from __future__ import annotations

import json
import os
import sys
import time
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ppi  # noqa: E402
from bench_ppi import AGREEMENT, ERRORS, RATES, UNLABELLED  # noqa: E402
from bench_ppi import _cells as cells  # noqa: E402
from evalband.stats._ppi import (  # noqa: E402
    blaker_limits,
    mover_covers,
    mover_limits,
    tuned_lambda_counts,
)

Array = npt.NDArray[np.float64]
Z2 = 1.959963984540054 ** 2
TOL = 1e-15
KINDS = ("score", "score_cond", "score_obs", "lr")
VARIANTS = KINDS + tuple(k + "+b" for k in KINDS)
RESULTS = Path(__file__).with_name("ppi_score_results.json")


def _root(a: Array, s: Array, n: Array) -> Array:
    """The root in [0, 1] of ``s - n r = a r (1 - r)`` (the tilted binomial maximum)."""
    def plus(a: Array, s: Array) -> Array:  # a >= 0: the smaller root, stable form
        disc = np.sqrt(np.maximum((a + n) ** 2 - 4.0 * a * s, 0.0))
        den = (a + n) + disc
        return np.where(den > 0, 2.0 * s / np.where(den > 0, den, 1.0), 0.0)
    pos = a >= 0
    out: Array = np.where(pos, plus(np.abs(a), s), 1.0 - plus(np.abs(a), n - s))
    return out


def _slope(a: Array, r: Array, n: Array) -> Array:
    """``dr/da`` of :func:`_root` (0 where the stratum has no labelled episode)."""
    den = n + a * (1.0 - 2.0 * r)
    out: Array = np.where(den > 0, -r * (1.0 - r) / np.where(den > 0, den, 1.0), 0.0)
    return out


def _inner(q: Array, s1: Array, n1: Array, s0: Array, n0: Array, theta: Array, mu: Array,
           steps: int) -> tuple[Array, Array, Array]:
    """``(mu, r1, r0)``: the root of ``q r1 + (1 - q) r0 = theta`` in ``mu`` at fixed ``q``.

    Newton's method from ``mu`` (a warm start), kept inside the bracket the signs have shown
    so far (``h`` falls with ``mu``); a step that leaves it bisects the bracket in ``u =
    mu / (scale + |mu|)``, which maps the whole line onto ``(-1, 1)``.
    """
    scale = n1 + n0 + 1.0  # mu = scale u / (1 - |u|), u in (-1, 1): the bracket's scale
    lo = np.full_like(mu, -1.0)
    hi = np.full_like(mu, 1.0)
    for _ in range(steps):
        r1, r0 = _root(mu * q, s1, n1), _root(mu * (1 - q), s0, n0)
        h = q * r1 + (1 - q) * r0 - theta
        dh = q * q * _slope(mu * q, r1, n1) + (1 - q) ** 2 * _slope(mu * (1 - q), r0, n0)
        u = mu / (scale + np.abs(mu))
        lo, hi = np.where(h > 0, u, lo), np.where(h > 0, hi, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = np.where(dh < 0, mu - h / np.where(dh < 0, dh, -1.0), np.nan)
        u_cand = cand / (scale + np.abs(cand))
        ok = (u_cand > lo) & (u_cand < hi)
        mid = 0.5 * (lo + hi)
        mu = np.where(h == 0, mu, np.where(ok, cand, scale * mid / (1.0 - np.abs(mid))))
    return mu, _root(mu * q, s1, n1), _root(mu * (1 - q), s0, n0)


def fit(s1: Array, n1: Array, s0: Array, n0: Array, m1: Array, big_m: float,
        theta: Array, rounds: int = 10, steps: int = 12) -> tuple[Array, Array, Array]:
    """``(q, r1, r0)`` maximising the likelihood under ``q r1 + (1 - q) r0 = theta``.

    The profile log-likelihood in ``q`` is concave (a jointly concave function of the cell
    probabilities maximised over a convex set that moves linearly with ``q``), its slope
    ``D(q) = (m1 - M q) / (q (1 - q)) - mu(q) (r1 - r0)`` (envelope theorem) falls with
    ``q``: its root by regula falsi (Illinois) inside ``q_hat -+ 5 sd``. Outside that
    stretch the ``q`` term alone puts either statistic above 25, so a root there is
    reported at the bracket's end (still rejected).
    """
    q_hat = m1 / big_m
    sd = np.sqrt(q_hat * (1 - q_hat) / big_m)
    qa = np.clip(q_hat - 5 * sd, 1e-12, 1.0)
    qb = np.clip(q_hat + 5 * sd, 0.0, 1.0 - 1e-12)
    qa, qb = np.minimum(qa, q_hat), np.maximum(qb, q_hat)
    mu = np.zeros_like(theta)

    def slope(q: Array, mu: Array) -> tuple[Array, Array, Array, Array]:
        mu, r1, r0 = _inner(q, s1, n1, s0, n0, theta, mu, steps)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (m1 - big_m * q) / (q * (1 - q)) - mu * (r1 - r0)
        return np.nan_to_num(d), mu, r1, r0

    fa, mu, _, _ = slope(qa, mu)
    fb, mu, _, _ = slope(qb, mu)
    side = np.zeros_like(theta)
    q = q_hat.copy()
    for _ in range(rounds):
        live = (fa > 0) & (fb < 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(live, (qa * fb - qb * fa) / (fb - fa), q)
        q = np.where(live, c, np.where(fa <= 0, qa, qb))
        fc, mu, _, _ = slope(q, mu)
        left = live & (fc > 0)
        right = live & (fc <= 0)
        fb = np.where(left & (side > 0), 0.5 * fb, fb)  # Illinois: halve the stale end
        fa = np.where(right & (side < 0), 0.5 * fa, fa)
        qa, fa = np.where(left, q, qa), np.where(left, fc, fa)
        qb, fb = np.where(right, q, qb), np.where(right, fc, fb)
        side = np.where(left, 1.0, np.where(right, -1.0, side))
    _, mu, r1, r0 = slope(q, mu)
    return q, r1, r0


def _xlogy(x: Array, y: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: Array = np.where(x > 0, x * np.log(np.where(y > 0, y, 1.0)), 0.0)
        return np.where((x > 0) & (y <= 0), -np.inf, out)


def _loglik(s1: Array, n1: Array, s0: Array, n0: Array, m1: Array, big_m: float,
            q: Array, r1: Array, r0: Array) -> Array:
    out: Array = (_xlogy(m1, q) + _xlogy(big_m - m1, 1 - q) + _xlogy(s1, r1)
                  + _xlogy(n1 - s1, 1 - r1) + _xlogy(s0, r0) + _xlogy(n0 - s0, 1 - r0))
    return out


def _term(s: Array, n: Array, r: Array, d: Array) -> Array:
    """``(s - n r)^2 / (d r (1 - r))``, its limit 0 at ``r = 0`` with ``s = 0`` (and at 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = (s - n * r) ** 2 / (d * r * (1 - r))
        none = n * n * r / (d * (1 - r))  # s = 0: (n r)^2 / (d r (1 - r))
        every = n * n * (1 - r) / (d * r)  # s = n
        out: Array = np.where(n == 0, 0.0, np.where(s == 0, none, np.where(s == n, every,
                                                                              inner)))
    return np.where(np.isnan(out), np.inf, out)


def statistics(table: Array, k_u: Array, big_n: int, theta: Array) -> dict[str, Array]:
    """The three test statistics of ``theta`` for each run (rows of ``table``)."""
    a, b, c, d = table.T
    n = table.sum(axis=1)
    s1, n1, s0, n0 = a, a + c, b, b + d
    m1 = a + c + k_u
    big_m = float(big_n) + n[0]
    q, r1, r0 = fit(s1, n1, s0, n0, m1, big_m, theta)
    full = np.full_like(q, big_m)
    base = _term(m1, full, q, full)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = 2.0 * (_loglik(s1, n1, s0, n0, m1, big_m, m1 / big_m,
                            np.where(n1 > 0, s1 / np.maximum(n1, 1), 0.5),
                            np.where(n0 > 0, s0 / np.maximum(n0, 1), 0.5))
                    - _loglik(s1, n1, s0, n0, m1, big_m, q, r1, r0))
    return {"score": base + _term(s1, n1, r1, n * q) + _term(s0, n0, r0, n * (1 - q)),
            "score_cond": base + _term(s1, n1, r1, n1) + _term(s0, n0, r0, n0),
            "score_obs": _observed(m1, full, q) + _observed(s1, n1, r1) + _observed(s0, n0, r0),
            "lr": np.maximum(lr, 0.0)}


def _observed(s: Array, n: Array, r: Array) -> Array:
    """``U^2 / J``: the score over the observed information, ``s/r^2 + (n - s)/(1 - r)^2``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(s > 0, s / r, 0.0) - np.where(n > s, (n - s) / (1 - r), 0.0)
        j = np.where(s > 0, s / r**2, 0.0) + np.where(n > s, (n - s) / (1 - r) ** 2, 0.0)
        out: Array = np.where(n == 0, 0.0, u * u / j)
    return np.where(np.isnan(out), np.inf, out)


def covers(table: Array, k_u: Array, big_n: int, p: float) -> dict[str, npt.NDArray[np.bool_]]:
    """Whether each kind's interval holds ``p`` (Blaker where the cheap scorer is constant)."""
    stats = statistics(table, k_u, big_n, np.full(len(table), p))
    m1 = table[:, 0] + table[:, 2] + k_u
    constant = (m1 == 0) | (m1 == big_n + table.sum(axis=1))
    low, high = blaker_limits(table[:, 0] + table[:, 1], table.sum(axis=1), 0.95)
    blaker = (low <= p) & (p <= high)
    out = {k: np.where(constant, blaker, v <= Z2) for k, v in stats.items()}
    zero = tuned_lambda_counts(table, k_u, big_n) == 0  # the current rule: lam 0 -> Blaker
    return out | {k + "+b": np.where(zero, blaker, v) for k, v in out.items()}


def limits(table: Array, k_u: Array, big_n: int, kind: str,
           steps: int = 30) -> tuple[Array, Array, Array]:
    """``(mle, low, high)`` of one kind's interval (bisection from the MLE outwards)."""
    a, b, c, d = table.T
    m1 = a + c + k_u
    big_m = float(big_n) + table.sum(axis=1)
    q = m1 / big_m
    n1, n0 = a + c, b + d
    r1 = np.where(n1 > 0, a / np.maximum(n1, 1), 0.5)
    r0 = np.where(n0 > 0, b / np.maximum(n0, 1), 0.5)
    mle = q * r1 + (1 - q) * r0
    ends = []
    for edge in (0.0, 1.0):
        inner, outer = mle.copy(), np.full_like(mle, edge)
        for _ in range(steps):
            mid = 0.5 * (inner + outer)
            ok = statistics(table, k_u, big_n, mid)[kind] <= Z2
            inner, outer = np.where(ok, mid, inner), np.where(ok, outer, mid)
        ok = statistics(table, k_u, big_n, np.full_like(mle, edge))[kind] <= Z2
        ends.append(np.where(ok, edge, 0.5 * (inner + outer)))
    constant = (m1 == 0) | (m1 == big_m)
    low, high = blaker_limits(a + b, table.sum(axis=1), 0.95)
    return mle, np.where(constant, low, ends[0]), np.where(constant, high, ends[1])


def outcomes(p: float, agree: float, n: int, errors: str
             ) -> tuple[Array, Array, Array, Array, float]:
    """Every (table, k_u) with its probability, and the mass left out (``bench_ppi``'s)."""
    return bench_ppi.outcomes(p, agree, n, errors, UNLABELLED, TOL, TOL)


def exact(p: float, agree: float, n: int, errors: str, current: bool = False) -> dict[str, Any]:
    """Exact coverage of each kind (and of the current ``mover`` interval if asked)."""
    tables, p_table, k_u, p_k, dropped = outcomes(p, agree, n, errors)
    covered = dict.fromkeys((*VARIANTS, "current"), 0.0)
    step = max(1, 100_000 // k_u.size)
    for i in range(0, len(tables), step):
        part = tables[i:i + step]
        all_t = np.repeat(part, k_u.size, axis=0)
        all_k = np.tile(k_u, len(part))
        weight = np.repeat(p_table[i:i + step], k_u.size) * np.tile(p_k, len(part))
        for kind, hit in covers(all_t, all_k, UNLABELLED, p).items():
            covered[kind] += float(weight[hit].sum())
        if current:
            lam = tuned_lambda_counts(all_t, all_k, UNLABELLED)
            hit = mover_covers(all_t, all_k, UNLABELLED, lam, 0.95, p)
            covered["current"] += float(weight[hit].sum())
    return {"p": p, "agree": agree, "errors": errors, "n": n,
            "coverage": {k: round(v, 5) for k, v in covered.items()
                         if current or k != "current"},
            "dropped_mass": dropped, "outcomes": len(tables) * k_u.size}


def widths(p: float, agree: float, n: int, errors: str, reps: int, seed: int,
           kinds: tuple[str, ...] = ("score",)) -> dict[str, Any]:
    """Mean widths on ``reps`` draws, beside Wilson's and the current interval's."""
    from evalband.stats._intervals import _wilson

    rng = np.random.default_rng(seed)
    probs = cells(p, agree, errors)
    table = rng.multinomial(n, probs, size=reps).astype(float)
    k_u = rng.binomial(UNLABELLED, probs[0] + probs[2], size=reps).astype(float)
    lam = tuned_lambda_counts(table, k_u, UNLABELLED)
    est, low, high, _ = mover_limits(table, k_u, UNLABELLED, lam, 0.95)
    w_low, w_high = _wilson(table[:, 0] + table[:, 1], np.full(reps, float(n)), 0.95)
    wilson = float(np.mean(w_high - w_low))
    out: dict[str, Any] = {"p": p, "agree": agree, "errors": errors, "n": n, "reps": reps,
                           "wilson": round(wilson, 5),
                           "current": round(float(np.mean(high - low)) / wilson, 4)}
    q = probs[0] + probs[2]
    out["constant"] = not 0 < q < 1
    est = np.clip(est, 0.0, 1.0)  # the printed PPI++ estimate, outside [0, 1] clipped
    out["current_misses_ppi"] = round(float(np.mean((est < low - 1e-9) | (est > high + 1e-9))),
                                      4)
    zero = lam == 0.0
    b_low, b_high = blaker_limits(table[:, 0] + table[:, 1], np.full(reps, float(n)), 0.95)
    for kind in kinds:
        mle, lo, hi = limits(table, k_u, UNLABELLED, kind)
        for name, (lo_, hi_) in ((kind, (lo, hi)), (kind + "+b", (np.where(zero, b_low, lo),
                                                                   np.where(zero, b_high, hi)))):
            out[name] = round(float(np.mean(hi_ - lo_)) / wilson, 4)
            out[name + "_misses_ppi"] = round(float(np.mean((est < lo_ - 1e-9)
                                                            | (est > hi_ + 1e-9))), 4)
            out[name + "_mc_coverage"] = round(float(np.mean((lo_ <= p) & (p <= hi_))), 4)
    out["mle_minus_ppi_mean_abs"] = round(float(np.mean(np.abs(mle - est))), 5)
    return out


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """Per grid: lowest exact coverage and designs below 95% per kind; width ratios."""
    out: dict[str, Any] = {}
    for name, block in report.items():
        rows = [r for r in block.get("rows", []) if "width" in r]
        if not name.startswith("grid") or not rows:
            continue
        entry: dict[str, Any] = {}
        if "coverage" in rows[0]:
            for kind in (*VARIANTS,):
                cov = [(r["coverage"][kind], r["p"], r["agree"], r["errors"]) for r in rows]
                entry[kind] = {"min": min(cov), "below_95": [c for c in cov if c[0] < 0.95]}
        informative = [r["width"] for r in rows if r["agree"] >= 0.85
                       and not r["width"]["constant"]]
        for kind in ("current", "score", "score+b"):
            ratios = sorted(w[kind] for w in informative)
            entry["width_" + kind] = {
                "designs": len(ratios), "max": ratios[-1], "median": ratios[len(ratios) // 2],
                "not_narrower": [(w["p"], w["agree"], w["errors"], w[kind])
                                 for w in informative if w[kind] >= 1]}
        entry["score+b_misses_ppi_max"] = max(r["width"]["score+b_misses_ppi"] for r in rows)
        out[name] = entry
    return out


def main(argv: list[str]) -> None:
    what = argv[1] if len(argv) > 1 else "failing"
    if what == "summary":
        print(json.dumps(summary(json.loads(RESULTS.read_text())), indent=1))
        return
    t0 = time.perf_counter()
    load = os.getloadavg()
    if what == "validate":  # the current interval, two known figures
        rows = [exact(0.5, 0.7, 20, "symmetric", True), exact(0.1, 0.98, 300, "symmetric", True)]
    elif what == "failing":
        designs = [(0.1, 0.98, 300, "symmetric"), (0.5, 0.7, 20, "symmetric"),
                   (0.7, 0.85, 20, "one-sided"), (0.9, 0.95, 20, "one-sided"),
                   (0.9, 0.95, 30, "one-sided")]
        rows = [exact(*d_) | {"width": widths(*d_, 2000, 7 + i)} for i, d_ in enumerate(designs)]
    else:  # grid: exact coverage for the n given, widths from draws
        n = int(argv[2])
        reps = int(argv[3]) if len(argv) > 3 else 2000
        rows = []
        for i, (p, a, e) in enumerate(product(RATES, AGREEMENT, ERRORS)):
            row = exact(p, a, n, e) if n <= 30 else {"p": p, "agree": a, "errors": e, "n": n}
            rows.append(row | {"width": widths(p, a, n, e, reps, 1000 + i)})
            print(json.dumps(rows[-1]), flush=True)
        what = f"grid_n{n}"
    report: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    report[what] = {"rows": rows, "seconds": round(time.perf_counter() - t0, 1),
                    "load_average_start": [round(x, 2) for x in load],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()]}
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report[what], indent=1))


if __name__ == "__main__":
    main(sys.argv)
