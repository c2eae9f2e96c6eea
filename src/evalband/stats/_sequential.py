"""Anytime-valid paired comparisons: look after every pair, stop when decided, keep alpha.

The fixed-n procedure (:mod:`evalband.stats._procedure`) keeps its error rate only when the
data are looked at once. This module gives a test and a confidence sequence whose error rates
hold under continuous monitoring and optional stopping (any looks, any stopping rule).

**The test (per slice, per direction).** Given that a matched pair is discordant, under
``H0: p_candidate = p_baseline`` it is "baseline only" with probability 1/2, independently of
the past. After ``m`` discordant pairs, ``k`` of them "baseline only", the likelihood ratio of
the design alternative ``theta`` (the share of "baseline only" among discordant pairs when the
candidate is ``effect`` worse) against 1/2,

    ``E = (2 theta)^k (2 (1 - theta))^(m - k)``,

is a nonnegative martingale with mean 1 under H0 (Wald's 1945 SPRT statistic; an e-process in
the sense of Shafer & Vovk 2019 and Ramdas et al. 2023). By Ville's inequality
``P(sup_m E_m >= 1 / a) <= a``, so rejecting when ``E >= 1 / a`` has level ``a`` under any
monitoring. When a maximum ``N`` of discordant pairs is declared (a maximum of pairs is one:
no more pairs than that can disagree), the threshold is instead computed *exactly* for that
horizon: the smallest boundary whose crossing probability by ``N`` discordant pairs under
``Bin(m, 1/2)`` is at most ``a`` (a dynamic programme over the discordant walk; the
truncated-SPRT / group-sequential idea of Armitage 1957 and Jennison & Turnbull 2000, ch. 3,
with looks after every pair), and the test stops ("futile") at the ``N``-th discordant pair.
Looking less often, or stopping earlier, can only lower the crossing probability, so the level
holds for any looks up to ``N`` whatever the discordance. A design with fewer discordant than
matched pairs (:mod:`evalband.stats._sequential_design`) spends its error on the pairs that
carry evidence.

The improvement direction mirrors it (``theta -> 1 - theta``). Each direction of each of ``m``
slices gets ``alpha / (2 m)`` (e-value Bonferroni; Vovk & Wang 2021), so the family-wise chance
of a false "regressed" slice, like the fixed-n procedure's, is at most ``alpha / 2``.
A non-binding futility stop (both likelihood ratios at most ``1 / futility``) only lowers the
rejection probability.

**The confidence sequence** for the difference ``Delta = p_c - p_b`` uses each pair's
``D = X_c - X_b`` in {-1, 0, 1}: for every candidate ``delta`` the capital of a fixed set of
bets, ``prod_i (1 + lambda (D_i - delta))``, averaged over a grid of bets ``lambda`` of both
signs, is a test martingale when ``E[D] = delta`` (betting confidence sequences, Waudby-Smith &
Ramdas 2024, JRSS-B 86:1-27, with a fixed mixture over bets in place of a predictable plug-in,
so it depends only on the counts). The sequence at level ``1 - a`` is the set of ``delta``
whose capital stays below ``1 / a``; it covers ``Delta`` at all times at once with probability
at least ``1 - a`` (Howard et al. 2021, AoS 49:1055-1080). Non-inferiority margins use it:
a slice is non-inferior when its lower limit is above ``-margin``.

**The interval printed beside the test's decision** (:func:`decided_sequence`) is the set of
differences ``delta`` that a family of sequential tests, one per ``delta``, has not rejected,
each test at the slice's level ``2 a`` (``a`` the test's level per direction): at ``delta = 0``
the sequential test itself (both directions, ``a`` each); at ``delta > 0`` the regression
direction of that test *or* the betting sequence at ``a`` (under ``Delta = delta > 0`` the
discordant pairs lean to the candidate, so the regression direction crosses with probability
at most ``a``: the crossing probability rises with the share); at ``delta < 0`` the mirror.
Every test keeps level ``2 a``, so the set covers ``Delta`` at all times with probability at
least ``1 - 2 a``, and it excludes 0 exactly when the test decided: after "regressed" it is the
betting sequence at ``1 - a`` below 0, after "improved" above 0, otherwise that sequence with 0
added. Where the sequence at ``1 - a`` still reaches 0, the bound at 0 is open (the test, not
the sequence, excludes 0): it is stored as :data:`OPEN_BOUND` from 0 and printed ``<0`` / ``>0``.

Independent (unpaired) episodes are paired in their order (:func:`pair_in_order`): under H0
with i.i.d. episodes each such pair is exchangeable, so the discordant-pair test stays valid.

Sources: Wald, A. (1945) *Ann. Math. Statist.* 16:117-186; Ville, J. (1939) *Etude critique de
la notion de collectif*; Armitage, P. (1957) *Biometrika* 44:9-26; Jennison, C. & Turnbull,
B. W. (2000) *Group Sequential Methods*; Shafer, G. & Vovk, V. (2019) *Game-Theoretic
Foundations for Probability and Finance*; Vovk, V. & Wang, R. (2021) *Ann. Statist.*
49:1736-1754; Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021) *Ann. Statist.*
49:1055-1080; Waudby-Smith, I. & Ramdas, A. (2024) *JRSS-B* 86:1-27.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.errors import InvalidParameterError
from evalband.stats._types import Difference

__all__ = [
    "DEFAULT_THETA",
    "DEFAULT_FUTILITY",
    "design_theta",
    "log_likelihood_ratio",
    "sequential_threshold",
    "crossing_probability",
    "SequentialTest",
    "sequential_paired_test",
    "confidence_sequence",
    "decided_sequence",
    "OPEN_BOUND",
    "pair_in_order",
]

DEFAULT_THETA = 0.75
"""Share of "baseline only" among discordant pairs the test is tuned to when no design is given."""
DEFAULT_FUTILITY = 4.0
"""Stop for futility (with a declared maximum) when both likelihood ratios are at most 1/5."""
_THETA_MAX = 0.95


def design_theta(effect: float, discordant: float | None) -> float:
    """The alternative share of "baseline only" pairs for a drop of ``effect``.

    With discordance ``psi`` (probability a pair disagrees) a drop ``effect`` means
    ``theta = (psi + effect) / (2 psi)``; clipped to ``[0.55, 0.95]``. Without a discordance
    the default 0.75 (``psi = 2 effect``) is used.

    >>> round(design_theta(0.1, 0.3), 4)
    0.6667
    >>> design_theta(0.1, None)
    0.75
    """
    if discordant is None or discordant <= 0:
        return DEFAULT_THETA
    psi = max(float(discordant), float(effect))
    return float(min(_THETA_MAX, max(0.55, (psi + effect) / (2.0 * psi))))


def log_likelihood_ratio(k: Any, m: Any, theta: float) -> Any:
    """``log E`` for ``k`` of ``m`` discordant pairs in the tested direction.

    >>> bool(np.isclose(log_likelihood_ratio(8, 10, 0.75), 8 * math.log(1.5) + 2 * math.log(0.5)))
    True
    """
    return (np.asarray(k) * math.log(2.0 * theta)
            + (np.asarray(m) - np.asarray(k)) * math.log(2.0 * (1.0 - theta)))


def _critical(log_c: float, horizon: int, theta: float) -> NDArray[np.int64]:
    """Per ``m = 0..horizon``: the smallest ``k`` with ``log E(k, m) >= log_c`` (else m + 1)."""
    m = np.arange(horizon + 1, dtype=np.float64)
    a, b = math.log(2.0 * theta), math.log(2.0 * (1.0 - theta))
    c = np.ceil((log_c - m * b) / (a - b) - 1e-9)
    c = np.clip(c, 0, m + 1).astype(np.int64)
    c[0] = 1  # nothing to decide before the first discordant pair
    return c


def crossing_probability(critical: NDArray[np.int64], share: float) -> float:
    """P(the walk of "baseline only" counts reaches ``critical[m]`` for some ``m``).

    Exact, by a dynamic programme over ``m = 1..len(critical) - 1`` discordant pairs, each
    "baseline only" with probability ``share``.

    >>> crossing_probability(np.array([1, 1, 2]), 0.5)
    0.5
    """
    horizon = len(critical) - 1
    alive = np.zeros(horizon + 2)
    alive[0] = 1.0
    total = 0.0
    for m in range(1, horizon + 1):
        nxt = np.zeros(horizon + 2)
        nxt[: m + 1] = alive[: m + 1] * (1.0 - share)
        nxt[1 : m + 1] += alive[:m] * share
        c = int(critical[m])
        if c <= m:
            total += float(nxt[c : m + 1].sum())
            nxt[c:] = 0.0
        alive = nxt
    return min(1.0, total)


@lru_cache(maxsize=256)
def sequential_threshold(alpha_side: float, horizon: int | None, theta: float) -> float:
    """The e-value threshold of one direction at level ``alpha_side``.

    ``1 / alpha_side`` (Ville) without a horizon; with one, the smallest threshold whose exact
    crossing probability within ``horizon`` discordant pairs is at most ``alpha_side``.

    >>> sequential_threshold(0.025, None, 0.75)
    40.0
    >>> 1.0 < sequential_threshold(0.025, 50, 0.75) < 40.0
    True
    """
    if not 0.0 < alpha_side < 1.0:
        raise InvalidParameterError(f"alpha per direction must be in (0, 1); got {alpha_side!r}")
    if not 0.5 < theta < 1.0:
        raise InvalidParameterError(f"theta must be in (0.5, 1); got {theta!r}")
    ville = math.log(1.0 / alpha_side)
    if horizon is None:
        return 1.0 / alpha_side
    horizon = int(horizon)
    if horizon < 1:
        raise InvalidParameterError(f"the maximum number of pairs must be >= 1; got {horizon}")
    lo, hi = 0.0, ville
    if crossing_probability(_critical(lo, horizon, theta), 0.5) <= alpha_side:
        return 1.0
    for _ in range(40):
        mid = (lo + hi) / 2.0
        if crossing_probability(_critical(mid, horizon, theta), 0.5) <= alpha_side:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-6:
            break
    return math.exp(hi)


@dataclass(frozen=True)
class SequentialTest:
    """One slice's anytime-valid test at one look.

    Attributes:
        baseline_only: discordant pairs only the baseline succeeded on (regression evidence).
        candidate_only: discordant pairs only the candidate succeeded on.
        e_regression: likelihood ratio for "candidate worse".
        e_improvement: likelihood ratio for "candidate better".
        threshold: the e-value each must reach (per direction).
        decision: "regressed", "improved", "futile" (only with a horizon) or "continue".
        theta: the design share of "baseline only" among discordant pairs.
        horizon: the declared maximum of discordant pairs (None: unbounded, Ville's threshold).
        alpha_side: the level of each direction.
    """

    baseline_only: int
    candidate_only: int
    e_regression: float
    e_improvement: float
    threshold: float
    decision: str
    theta: float
    horizon: int | None
    alpha_side: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


def sequential_paired_test(
    baseline_only: int,
    candidate_only: int,
    *,
    alpha_side: float,
    theta: float = DEFAULT_THETA,
    horizon: int | None = None,
    futility: float | None = DEFAULT_FUTILITY,
) -> SequentialTest:
    """The anytime-valid paired test at the current counts (see the module docstring).

    Args:
        baseline_only: discordant pairs won by the baseline.
        candidate_only: discordant pairs won by the candidate.
        alpha_side: level of each direction (``alpha / (2 m)`` for ``m`` slices).
        theta: the design alternative (:func:`design_theta`).
        horizon: declared maximum number of discordant pairs (or of pairs; the threshold is
            then exact for it, and reaching it undecided stops as futile).
        futility: with a horizon, stop as futile when both ratios are at most ``1/futility``.

    >>> t = sequential_paired_test(14, 1, alpha_side=0.025)
    >>> t.decision, round(t.e_regression, 1) >= t.threshold
    ('regressed', True)
    >>> sequential_paired_test(3, 2, alpha_side=0.025).decision
    'continue'
    """
    b, c = int(baseline_only), int(candidate_only)
    if b < 0 or c < 0:
        raise InvalidParameterError(f"pair counts must be >= 0; got {b}, {c}")
    threshold = sequential_threshold(float(alpha_side), horizon, float(theta))
    m = b + c
    log_reg = float(log_likelihood_ratio(b, m, theta))
    log_imp = float(log_likelihood_ratio(c, m, theta))
    log_t = math.log(threshold) - 1e-12
    if m and log_reg >= log_t:
        decision = "regressed"
    elif m and log_imp >= log_t:
        decision = "improved"
    elif horizon is not None and m and (m >= horizon or (
            futility is not None and max(log_reg, log_imp) <= -math.log(futility))):
        decision = "futile"
    else:
        decision = "continue"
    return SequentialTest(b, c, math.exp(min(log_reg, 700.0)), math.exp(min(log_imp, 700.0)),
                          float(threshold), decision, float(theta), horizon, float(alpha_side))


_BETS = np.geomspace(0.02, 0.9, 16)


def _log_capital(b: Any, c: Any, n: Any, delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log of the mixture capital over the bet grid, per ``delta`` (counts only).

    ``b``, ``c``, ``n`` broadcast together (shape ``S``); the result has shape ``S + (D,)``
    for ``D`` values of ``delta``.
    """
    from scipy.special import logsumexp

    b_, c_, n_ = (np.asarray(x, dtype=np.float64)[..., None, None] for x in (b, c, n))
    d = np.asarray(delta, dtype=np.float64)[:, None]
    rest = n_ - b_ - c_
    caps = []
    for sign, room in ((1.0, 1.0 + d), (-1.0, 1.0 - d)):
        lam = sign * _BETS[None, :] / np.maximum(room, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_k = (c_ * np.log1p(lam * (1.0 - d)) + b_ * np.log1p(lam * (-1.0 - d))
                     + rest * np.log1p(-lam * d))
        caps.append(np.where(np.isfinite(log_k), log_k, -np.inf))
    both = np.concatenate(caps, axis=-1)
    return np.asarray(logsumexp(both, axis=-1) - math.log(both.shape[-1]), dtype=np.float64)


def confidence_sequence(
    both: int, baseline_only: int, candidate_only: int, neither: int, *, level: float = 0.95,
    grid: int = 801,
) -> Difference:
    """A confidence sequence for ``p_candidate - p_baseline`` from matched-pair counts.

    Valid at every ``n`` at once (see the module docstring): with probability at least
    ``level`` it covers the true difference at all times, so it may be read after every pair.
    The limits are found on a grid of ``grid`` points over [-1, 1] (outward-rounded).

    >>> d = confidence_sequence(400, 200, 50, 350, level=0.95)
    >>> d.low < d.estimate < d.high < 0
    True
    """
    if not 0.0 < level < 1.0:
        raise InvalidParameterError(f"level must be in (0, 1); got {level!r}")
    n = int(both) + int(baseline_only) + int(candidate_only) + int(neither)
    est = (candidate_only - baseline_only) / n if n else 0.0
    if n == 0:
        return Difference(0.0, -1.0, 1.0, "betting confidence sequence", float(level), True, {})
    deltas = np.linspace(-1.0, 1.0, int(grid))
    inside = _log_capital(int(baseline_only), int(candidate_only), n, deltas) < math.log(
        1.0 / (1.0 - level))
    step = deltas[1] - deltas[0]
    if inside.any():
        idx = np.nonzero(inside)[0]
        low = max(-1.0, float(deltas[idx[0]] - step))
        high = min(1.0, float(deltas[idx[-1]] + step))
    else:  # cannot happen for a valid grid; be conservative
        low, high = -1.0, 1.0
    low, high = min(low, est), max(high, est)
    return Difference(
        estimate=float(est), low=low, high=high,
        method="betting confidence sequence (mixture over bets; anytime-valid)",
        confidence=float(level), paired=True,
        counts={"both": int(both), "a_only": int(candidate_only), "b_only": int(baseline_only),
                "neither": int(neither)},
    )


OPEN_BOUND = 1e-9
"""How far from 0 an open bound at 0 is stored (the test excludes 0; the sequence does not)."""


def decided_sequence(
    both: int, baseline_only: int, candidate_only: int, neither: int, *, decision: str,
    level: float,
) -> Difference:
    """The confidence sequence at ``level`` that agrees with the test's ``decision``.

    See the module docstring: the betting sequence at ``1 - (1 - level) / 2`` limited to the
    side the test decided ("regressed": below 0, "improved": above 0), or with 0 added when it
    decided neither. Valid at ``level`` at every ``n`` when the test's level per direction is
    ``(1 - level) / 2``; it contains 0 exactly when the decision is neither.

    >>> d = decided_sequence(76, 38, 0, 86, decision="regressed", level=0.9833)
    >>> d.low <= d.estimate < d.high < 0
    True
    >>> u = decided_sequence(5, 2, 1, 5, decision="continue", level=0.95)
    >>> u.low <= 0 <= u.high
    True
    """
    if not 0.0 < level < 1.0:
        raise InvalidParameterError(f"level must be in (0, 1); got {level!r}")
    side = (1.0 - float(level)) / 2.0
    cs = confidence_sequence(both, baseline_only, candidate_only, neither, level=1.0 - side)
    low, high = cs.low, cs.high
    if decision == "regressed":
        high = min(high, -OPEN_BOUND)
        low = min(low, high)
    elif decision == "improved":
        low = max(low, OPEN_BOUND)
        high = max(high, low)
    else:
        low, high = min(low, 0.0), max(high, 0.0)
    return Difference(
        estimate=cs.estimate, low=low, high=high,
        method=f"betting confidence sequence at {1.0 - side:.6g} on the side the sequential "
               f"test decided (valid at {float(level):.6g} with it)",
        confidence=float(level), paired=True, counts=cs.counts)


def pair_in_order(baseline: Sequence[bool], candidate: Sequence[bool]) -> dict[str, int]:
    """Pair two independent arms' outcomes in their order (the unpaired fallback).

    Returns the pair counts of the first ``min(len)`` outcomes of each arm. Under equal rates
    and independent episodes each pair is exchangeable, so discordant pairs are fair coins.

    >>> pair_in_order([True, False, True], [False, False])
    {'both': 0, 'baseline_only': 1, 'candidate_only': 0, 'neither': 1}
    """
    out = {"both": 0, "baseline_only": 0, "candidate_only": 0, "neither": 0}
    for b, c in zip(baseline, candidate, strict=False):
        key = ("both" if b and c else "baseline_only" if b else "candidate_only" if c
               else "neither")
        out[key] += 1
    return out
