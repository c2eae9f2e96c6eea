"""Design a sequential comparison: the maxima, power and pairs to a decision, computed exactly.

For a baseline rate, a drop and the discordance ``psi`` (probability a matched pair disagrees),
:func:`sequential_design` compares the anytime-valid test of :mod:`evalband.stats._sequential`
with the fixed-n exact McNemar design of the same alpha and power
(:func:`~evalband.stats._procedure.episodes_for_drop`).

**The declared design** has two maxima: ``N`` pairs and ``D`` *discordant* pairs (only
discordant pairs carry evidence). The test's threshold is exact for ``D`` discordant pairs
(:func:`~evalband.stats._sequential.sequential_threshold`), so its level holds whatever the
discordance and however often one looks; the run stops at the first decision, at ``D``
discordant pairs or at ``N`` pairs. A non-binding futility stop (both likelihood ratios at
most ``1 / futility``) and the design share ``theta`` complete it.

**Exact operating characteristics, no simulation.** Given that a pair is discordant it is
"baseline only" with probability ``s`` independently of when it came, so the stopping rule
is a walk on the discordant pairs (a dynamic programme gives, per ``m``, the probability of
stopping at the ``m``-th discordant pair and of stopping there with "regressed"), and the pair
index ``T_m`` of the ``m``-th discordant pair is negative binomial, independent of the walk:
``P(decided "regressed") = sum_m r_m P(T_m <= N)`` and ``E[pairs] = sum_m s_m E[min(T_m, N)]``
(Wald 1947, ch. 3; the DP is the truncated-SPRT computation of Armitage 1957 / Jennison &
Turnbull 2000, ch. 19). The design searches ``N`` (a multiple of the fixed-n pairs), ``D`` (a
fraction of the discordant pairs expected in ``N``), the futility factor and ``theta`` (the
design share, or one moved further from 1/2) for the smallest expected pairs at the design
drop with exact power at least ``power`` -- a stopping rule built for a declared maximum, as
the RSS 2025 policy-comparison test STEP (Snyder et al.) builds its near-optimal one for
``N_max``. :func:`simulate_sequential` is the Monte
Carlo check of the same numbers.

Sources: Wald, A. (1947) *Sequential Analysis*; Armitage, P. (1957) *Biometrika* 44:9-26;
Jennison, C. & Turnbull, B. W. (2000) *Group Sequential Methods with Applications to Clinical
Trials*; Snyder, D., Hancock, A. J., Badithela, A., Dixon, E., Miller, P., Ambrus, R. A.,
Majumdar, A., Itkina, M. & Nishimura, H. (2025) "Is your imitation learning policy better than
mine? Policy comparison with near-optimal stopping", *Robotics: Science and Systems*
(arXiv:2503.10966).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.errors import InvalidParameterError

__all__ = [
    "RATIOS",
    "DISCORDANT_FRACTIONS",
    "FUTILITIES",
    "THETA_STRETCH",
    "SequentialDesign",
    "operating_characteristics",
    "simulate_sequential",
    "sequential_design",
    "best_power_at",
]

RATIOS = tuple(round(0.8 + 0.1 * i, 1) for i in range(18))
"""Candidate pair maxima ``N``, as multiples of the fixed-n design's pairs (0.8 .. 2.5)."""
DISCORDANT_FRACTIONS = (0.8, 0.9, 1.0, 1.1)
"""Candidate discordant maxima ``D``, as fractions of the discordant pairs expected in ``N``."""
FUTILITIES = (2.0, 3.0, 4.0)
"""Candidate futility factors."""
THETA_STRETCH = (1.0, 1.15)
"""Candidate test alternatives: the design share's distance from 1/2, times these."""


@dataclass(frozen=True)
class SequentialDesign:
    """A sequential design next to the fixed-n one (pairs per slice, one slice).

    ``power``, the pairs and the null figures are exact (see the module docstring);
    ``mc_power``, ``mc_expected_pairs`` and ``mc_null_false_regression`` are their Monte Carlo
    check over ``reps`` runs each (None when ``reps`` is 0).
    """

    p_base: float
    drop: float
    discordant: float
    alpha: float
    theta: float
    futility: float
    n_fixed: int
    max_pairs: int
    max_discordant: int
    power: float
    expected_pairs: float
    p90_pairs: float
    savings: float
    null_false_regression: float
    null_expected_pairs: float
    null_p90_pairs: float
    reps: int
    mc_power: float | None
    mc_expected_pairs: float | None
    mc_null_false_regression: float | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


@lru_cache(maxsize=8)
def _binomial_cdf(psi: float, size: int) -> NDArray[np.float64]:
    """``P(Bin(t, psi) <= k)`` for ``t, k = 0..size`` (rows ``t``), by the pmf recurrence."""
    pmf = np.zeros((size + 1, size + 1))
    pmf[0, 0] = 1.0
    for t in range(1, size + 1):
        pmf[t] = pmf[t - 1] * (1.0 - psi)
        pmf[t, 1:] += pmf[t - 1, :-1] * psi
    return np.minimum(np.cumsum(pmf, axis=1), 1.0)


@lru_cache(maxsize=1024)
def _walk(horizon: int, theta: float, log_t: float, futility: float | None,
          share: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per ``m = 0..horizon``: P(stop at the m-th discordant pair "regressed"), P(stop there)."""
    a, b = math.log(2.0 * theta), math.log(2.0 * (1.0 - theta))
    alive = np.zeros(horizon + 2)
    alive[0] = 1.0
    reg_at = np.zeros(horizon + 1)
    stop_at = np.zeros(horizon + 1)
    ks = np.arange(horizon + 1, dtype=np.float64)
    fut = -math.log(futility) if futility else -math.inf
    for m in range(1, horizon + 1):
        nxt = np.zeros(horizon + 2)
        nxt[: m + 1] = alive[: m + 1] * (1.0 - share)
        nxt[1 : m + 1] += alive[:m] * share
        k = ks[: m + 1]
        log_reg = k * a + (m - k) * b
        log_imp = (m - k) * a + k * b
        reg = log_reg >= log_t - 1e-12
        stop = reg | (log_imp >= log_t - 1e-12) | (np.maximum(log_reg, log_imp) <= fut)
        if m == horizon:
            stop[:] = True
        here = nxt[: m + 1]
        reg_at[m] = float(here[reg].sum())
        stop_at[m] = float(here[stop].sum())
        here[stop] = 0.0
        alive = nxt
    return reg_at, stop_at


def operating_characteristics(
    max_pairs: int, max_discordant: int, theta: float, alpha_side: float,
    futility: float | None, probs: tuple[float, float, float],
) -> tuple[float, float, float]:
    """Exact (P(decided "regressed"), E[pairs], 90th percentile of pairs) of a design.

    ``probs``: per pair, P(concordant), P(baseline only), P(candidate only).

    >>> rate, mean, p90 = operating_characteristics(60, 20, 0.8, 0.025, 4.0, (0.7, 0.25, 0.05))
    >>> 0.5 < rate < 1.0 and mean < p90 <= 60
    True
    """
    from evalband.stats._sequential import sequential_threshold

    c, bo, co = (float(x) for x in probs)
    psi = bo + co
    if psi <= 0:
        return 0.0, float(max_pairs), float(max_pairs)
    horizon = max(1, min(int(max_discordant), int(max_pairs)))
    log_t = math.log(sequential_threshold(alpha_side, horizon, theta))
    reg_at, stop_at = _walk(horizon, float(theta), log_t, futility, bo / psi)
    size = 1 << max(6, int(max_pairs).bit_length())  # a few table sizes serve every design
    cdf = _binomial_cdf(round(psi, 12), size)
    later = np.zeros((max_pairs + 1, horizon + 1))  # P(T_m > t) = P(Bin(t, psi) <= m - 1)
    later[:, 1:] = cdf[: max_pairs + 1, :horizon]
    reached = 1.0 - later[max_pairs]  # P(T_m <= N)
    rate = float((reg_at * reached).sum())
    later = later[:max_pairs]
    mean = float((stop_at * later.sum(axis=0)).sum())
    done_by = 1.0 - later @ stop_at  # P(stopped by pair t), t < N
    over = np.nonzero(done_by[1:] >= 0.9 - 1e-12)[0]
    p90 = float(over[0] + 1) if over.size else float(max_pairs)
    return min(1.0, rate), mean, p90


def simulate_sequential(
    probs: tuple[float, float, float], horizon: int, theta: float, alpha_side: float,
    reps: int, rng: np.random.Generator, *, max_discordant: int | None = None,
    futility: float | None = 4.0,
) -> tuple[float, float, float]:
    """Monte Carlo (share decided "regressed", mean pairs, 90th percentile pairs).

    The check of :func:`operating_characteristics`: each run looks after every pair and stops
    at the first decision of :func:`~evalband.stats._sequential.sequential_paired_test`
    (threshold exact for ``max_discordant``, default ``horizon``), at ``max_discordant``
    discordant pairs, or at ``horizon`` pairs.

    >>> rate, mean, p90 = simulate_sequential((0.7, 0.25, 0.05), 60, 0.8, 0.025, 200,
    ...                                       np.random.default_rng(0))
    >>> rate > 0.5 and mean < 60
    True
    """
    from evalband.stats._sequential import log_likelihood_ratio, sequential_threshold

    p = np.asarray(probs, dtype=np.float64)
    cap = horizon if max_discordant is None else max(1, min(int(max_discordant), horizon))
    log_t = math.log(sequential_threshold(alpha_side, cap, theta)) - 1e-12
    fut = -math.log(futility) if futility else -math.inf
    regressed = np.zeros(reps, dtype=bool)
    pairs = np.empty(reps, dtype=np.int64)
    chunk = max(1, min(reps, 2_000_000 // max(horizon, 1)))
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        draws = rng.choice(3, p=p / p.sum(), size=(size, horizon))
        b = np.cumsum(draws == 1, axis=1)
        c = np.cumsum(draws == 2, axis=1)
        m = b + c
        log_reg = log_likelihood_ratio(b, m, theta)
        log_imp = log_likelihood_ratio(c, m, theta)
        reg = (log_reg >= log_t) & (m > 0)
        stop = reg | ((log_imp >= log_t) & (m > 0)) | (m >= cap) | (
            (np.maximum(log_reg, log_imp) <= fut) & (m > 0))
        any_stop = stop.any(axis=1)
        first = np.where(any_stop, stop.argmax(axis=1), horizon - 1)
        rows = np.arange(size)
        regressed[start : start + size] = reg[rows, first] & any_stop
        pairs[start : start + size] = first + 1
    return float(regressed.mean()), float(pairs.mean()), float(np.percentile(pairs, 90))


def _smallest_n(psi: float, theta: float, alpha_side: float,
                futility: float, fraction: float, alt: tuple[float, float, float],
                power: float, sizes: list[int]) -> tuple[float, int, int] | None:
    """(E[pairs], N, D) at the smallest maximum ``N`` of ``sizes`` reaching ``power`` (exactly)."""
    for n in sizes:
        d = max(1, min(n, int(math.ceil(fraction * psi * n))))
        pw, mean, _ = operating_characteristics(n, d, theta, alpha_side, futility, alt)
        if pw >= power:
            return mean, n, d
    return None


def _most_powerful(n: int, psi: float, side: float, base_theta: float,
                   alt: tuple[float, float, float]) -> tuple[float, int, int, float, float]:
    """(E[pairs], N, D, theta, futility) of the most powerful design with ``N = n``."""
    scored = []
    for stretch in THETA_STRETCH:
        theta = min(0.95, 0.5 + stretch * (base_theta - 0.5))
        for futility in FUTILITIES:
            for fraction in DISCORDANT_FRACTIONS:
                d = max(1, min(n, int(math.ceil(fraction * psi * n))))
                pw, mean, _ = operating_characteristics(n, d, theta, side, futility, alt)
                scored.append((-pw, mean, d, theta, futility))
    _, mean, d, theta, futility = min(scored)
    return mean, n, d, theta, futility


@lru_cache(maxsize=4096)
def best_power_at(max_pairs: int, drop: float, discordant: float, alpha: float) -> float:
    """Exact power at ``drop`` of the most powerful design with at most ``max_pairs`` pairs.

    The designs searched are :func:`sequential_design`'s at ``N = max_pairs`` (its discordant
    maxima, futility factors and tested shares); ``alpha`` is two-sided, ``discordant`` the
    probability a pair disagrees (at least ``drop``).

    >>> 0.5 < best_power_at(60, 0.3, 0.5, 0.05) < 1.0
    True
    """
    from evalband.stats._sequential import design_theta

    psi = max(float(discordant), float(drop))
    alt = (1.0 - psi, (psi + drop) / 2.0, (psi - drop) / 2.0)
    n = int(max_pairs)
    best = 0.0
    for stretch in THETA_STRETCH:
        theta = min(0.95, 0.5 + stretch * (design_theta(drop, psi) - 0.5))
        for futility in FUTILITIES:
            for fraction in DISCORDANT_FRACTIONS:
                d = max(1, min(n, int(math.ceil(fraction * psi * n))))
                best = max(best, operating_characteristics(n, d, theta, alpha / 2.0, futility,
                                                           alt)[0])
    return best


def _sizes(n_fixed: int | None, ratios: tuple[float, ...], cap: int | None) -> list[int]:
    """Candidate maxima ``N``: multiples of the fixed-n pairs, below ``cap`` (then ``cap``).

    >>> _sizes(100, (0.8, 1.0, 1.5), None), _sizes(100, (0.8, 1.0, 1.5), 120)
    ([80, 100, 150], [80, 100, 120])
    """
    sizes = sorted({max(1, int(math.ceil(r * n_fixed))) for r in ratios}) if n_fixed else []
    if cap is not None:
        sizes = [n for n in sizes if n < cap] + [int(cap)]
    return sizes


def sequential_design(
    p_base: float,
    drop: float,
    *,
    discordant: float,
    alpha: float = 0.05,
    power: float = 0.8,
    reps: int = 0,
    seed: int = 0,
    ratios: tuple[float, ...] = RATIOS,
    max_pairs: int | None = None,
) -> SequentialDesign:
    """The sequential design for catching ``drop`` from ``p_base``, beside the fixed-n one.

    Args:
        p_base: the baseline's success rate.
        drop: the design drop (the candidate's rate is ``p_base - drop``).
        discordant: the probability a matched pair disagrees (at least ``drop``).
        alpha: two-sided level (each direction gets half).
        power: the target power at ``drop``.
        reps: simulated runs for the Monte Carlo check (0: none).
        seed: the seed of the Monte Carlo check.
        ratios: candidate pair maxima as multiples of the fixed-n pairs.
        max_pairs: the most pairs a run can give (e.g. a slice's planned pairs): the design's
            maximum is at most this; when no maximum up to it reaches ``power``, the design is
            the most powerful one at ``max_pairs`` (its ``power`` says what it reaches).

    Raises:
        InvalidParameterError: a drop outside ``(0, p_base]``, a discordance below it or a
            ``max_pairs`` below 1.

    >>> d = sequential_design(0.8, 0.2, discordant=0.3)
    >>> d.n_fixed, d.power >= 0.8, d.expected_pairs < d.n_fixed, d.null_false_regression <= 0.025
    (61, True, True, True)
    """
    from evalband.stats._procedure import episodes_for_drop
    from evalband.stats._sequential import design_theta

    if not 0.0 < drop <= p_base <= 1.0:
        raise InvalidParameterError(f"the drop must be in (0, p_base]; got {drop} from {p_base}")
    psi = float(discordant)
    if not drop <= psi <= min(1.0, 2.0 - 2.0 * p_base + drop, 2.0 * p_base - drop):
        raise InvalidParameterError(
            f"the discordance must be between the drop ({drop}) and what the rates allow; "
            f"got {discordant}")
    if max_pairs is not None and int(max_pairs) < 1:
        raise InvalidParameterError(
            f"`max_pairs` must be at least 1; got {max_pairs}", parameters=("max_pairs",))
    n_fixed = episodes_for_drop(p_base, drop, alpha, paired=True, discordant=psi, power=power)
    if n_fixed is None and max_pairs is None:
        raise InvalidParameterError(f"no fixed-n design reaches {power:.0%} power for this drop")
    sizes = _sizes(n_fixed, ratios, max_pairs)
    alt = (1.0 - psi, (psi + drop) / 2.0, (psi - drop) / 2.0)
    null = (1.0 - psi, psi / 2.0, psi / 2.0)
    side = alpha / 2.0
    base_theta = design_theta(drop, psi)
    best: tuple[float, int, int, float, float] | None = None
    for stretch in THETA_STRETCH:
        theta = min(0.95, 0.5 + stretch * (base_theta - 0.5))
        for futility in FUTILITIES:
            for fraction in DISCORDANT_FRACTIONS:
                found = _smallest_n(psi, theta, side, futility, fraction, alt, power, sizes)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (*found, theta, futility)
    if best is None and max_pairs is not None:  # the cap is too small: its most powerful design
        best = _most_powerful(int(max_pairs), psi, side, base_theta, alt)
    if best is None:  # the largest maximum, the design share: report what it reaches
        n = sizes[-1]
        best = (0.0, n, n, base_theta, FUTILITIES[-1])
    _, n_max, d_max, theta, futility = best
    pw, mean, p90 = operating_characteristics(n_max, d_max, theta, side, futility, alt)
    false, null_mean, null_p90 = operating_characteristics(n_max, d_max, theta, side, futility,
                                                           null)
    mc_power = mc_mean = mc_false = None
    if reps > 0:
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 29]))
        mc_power, mc_mean, _ = simulate_sequential(alt, n_max, theta, side, int(reps), rng,
                                                   max_discordant=d_max, futility=futility)
        mc_false, _, _ = simulate_sequential(null, n_max, theta, side, int(reps), rng,
                                             max_discordant=d_max, futility=futility)
    return SequentialDesign(
        p_base=float(p_base), drop=float(drop), discordant=psi, alpha=float(alpha),
        theta=float(theta), futility=float(futility), n_fixed=int(n_fixed or 0), max_pairs=n_max,
        max_discordant=d_max, power=pw, expected_pairs=mean, p90_pairs=p90,
        savings=1.0 - mean / n_fixed if n_fixed else 0.0, null_false_regression=false,
        null_expected_pairs=null_mean, null_p90_pairs=null_p90, reps=int(reps),
        mc_power=mc_power, mc_expected_pairs=mc_mean, mc_null_false_regression=mc_false,
    )
