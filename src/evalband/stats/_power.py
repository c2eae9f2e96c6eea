"""Power, sample size and minimum detectable difference for comparing two success rates.

Two designs:

- **unpaired** (independent episodes per policy): the two-sided two-proportion z test
  with the pooled variance under the null (equivalently Pearson's chi-square test on
  the 2x2 table), optionally with Yates' continuity correction. Sample sizes are
  *episodes per arm* (per policy).
- **paired** (every policy runs the same matched conditions, the panel's default):
  McNemar's test on the matched pairs. Only *discordant* pairs (one policy succeeds,
  the other fails) carry information, so the design needs the expected share of
  discordant pairs, ``discordant = p10 + p01``. Sample sizes are *matched pairs*,
  i.e. episodes per policy. Supply ``discordant`` explicitly (from a pilot, or from
  a previous run's paired counts), or derive it from an assumed correlation with
  :func:`discordant_from_correlation` (``correlation=0`` is independence).

Notation: ``p_a, p_b`` are the success rates of policies A and B, ``q = 1 - p``,
``d = p_a - p_b``; ``z_x`` is the standard-normal ``x`` quantile.
The seed's price list (seed 004, section 4: 60% vs 40% ~100 per model, 10-point gap
~390, 5-point gap ~1,550) comes out of :func:`sample_size` / :func:`price_list`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from evalband._util.validate import as_count, check_choice, check_probability
from evalband.errors import InvalidParameterError
from evalband.stats._normal import ndtr, ndtri

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy load inside the exact and search paths only: sample_size and the normal
# power need a few quantiles (evalband.stats._normal: scipy's values, without scipy at
# the common levels). norm.isf(q) is -ndtri(q), norm.ppf is ndtri, norm.cdf is ndtr.

__all__ = [
    "sample_size",
    "power",
    "minimum_detectable_difference",
    "price_list",
    "PriceRow",
    "discordant_from_correlation",
]

_EXACT_FISHER_TIE = 1e-7  # relative tolerance for equal hypergeometric probabilities (as R)
_NEGLIGIBLE = 1e-18  # binomial probabilities below this are dropped from enumerations


# --------------------------------------------------------------------------- validation


def _check_level(value: object, name: str) -> float:
    return check_probability(value, name, open_interval=True)


def _check_target(power_target: object, alpha: float) -> float:
    target = _check_level(power_target, "power")
    if target <= alpha:
        raise InvalidParameterError(
            f"`power` must exceed alpha (a test rejects with probability alpha even when "
            f"there is no difference), got power={target!r} <= alpha={alpha!r}; "
            "the usual target is power=0.8", parameters=("power",)
        )
    return target


def _check_ratio(ratio: object, paired: bool) -> float:
    if isinstance(ratio, bool) or not isinstance(ratio, numbers.Real):
        raise InvalidParameterError(f"ratio must be a positive number, got {ratio!r}")
    value = float(ratio)
    if not math.isfinite(value) or value <= 0.0:
        raise InvalidParameterError(
            f"ratio (episodes of B per episode of A) must be a finite number > 0, got {ratio!r}"
        )
    if paired and value != 1.0:
        raise InvalidParameterError(
            f"ratio must be 1 for a paired design (every pair has one episode of each "
            f"policy), got ratio={ratio!r}"
        )
    return value


def _check_discordant(p_a: float, p_b: float, discordant: object, paired: bool) -> float:
    """Validate the discordant share for a paired design and return it."""
    if not paired:
        if discordant is not None:
            raise InvalidParameterError(
                "discordant applies to paired designs only; pass paired=True, or drop "
                f"discordant={discordant!r} for independent episodes"
            )
        return math.nan
    if discordant is None:
        raise InvalidParameterError(
            "a paired design needs discordant=: the expected share of matched pairs on "
            "which the two policies disagree (one succeeds, the other fails), e.g. from a "
            "pilot run's paired counts, or discordant_from_correlation(p_a, p_b, rho) "
            "(rho=0 means independent outcomes)"
        )
    psi = check_probability(discordant, "discordant")
    gap = abs(p_a - p_b)
    upper = min(p_a + p_b, 2.0 - p_a - p_b)
    tol = 1e-12
    if psi < gap - tol:
        raise InvalidParameterError(
            f"`discordant` must be at least |p_a - p_b| = {gap:.6g} (the rates can only "
            f"differ through discordant pairs), got discordant={psi!r}",
            parameters=("discordant",),
        )
    if psi > upper + tol:
        raise InvalidParameterError(
            f"`discordant` must be at most min(p_a + p_b, 2 - p_a - p_b) = {upper:.6g} for "
            f"p_a={p_a!r}, p_b={p_b!r} (no joint distribution has more disagreement), "
            f"got discordant={psi!r}", parameters=("discordant",),
        )
    return min(max(psi, gap), upper)


class _Design(NamedTuple):
    """Standard deviations of the test statistic's numerator, per sqrt(n_a)."""

    sd_null: float  # s0: under H0 (pooled rate / discordant share)
    sd_alt: float  # s1: under the alternative
    gap: float  # |p_a - p_b|
    cc: float  # continuity shift on the difference scale, times n_a


def _design(p_a: float, p_b: float, psi: float, ratio: float, paired: bool) -> _Design:
    gap = abs(p_a - p_b)
    if paired:
        return _Design(math.sqrt(psi), math.sqrt(max(psi - gap * gap, 0.0)), gap, 0.0)
    pbar = (p_a + ratio * p_b) / (1.0 + ratio)
    s0 = math.sqrt(max(pbar * (1.0 - pbar) * (1.0 + 1.0 / ratio), 0.0))
    s1 = math.sqrt(max(p_a * (1.0 - p_a) + p_b * (1.0 - p_b) / ratio, 0.0))
    return _Design(s0, s1, gap, (1.0 + 1.0 / ratio) / 2.0)


def _normal_power(n: float, design: _Design, alpha: float, continuity: bool) -> float:
    """Two-sided normal-approximation power at ``n`` (both rejection tails)."""
    s0, s1, gap, cc = design
    if s0 == 0.0:  # no variation under H0 is possible: the test never rejects
        return 0.0
    z = -ndtri(alpha / 2.0)
    shift = cc / n if continuity else 0.0
    root = math.sqrt(n)
    if s1 == 0.0:  # the observed difference is deterministic
        return 1.0 if (gap - shift) * root > z * s0 else 0.0
    upper = ((gap - shift) * root - z * s0) / s1
    lower = (-(gap + shift) * root - z * s0) / s1
    return ndtr(upper) + ndtr(lower)


# --------------------------------------------------------------------------- exact power


def _mcnemar_exact_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """Exact power of the two-sided exact (conditional binomial) McNemar test."""
    import numpy as np
    from scipy import stats

    psi = p10 + p01
    if psi <= 0.0:
        return 0.0
    m = np.arange(n + 1)
    weight_m = stats.binom.pmf(m, n, min(psi, 1.0))
    # c_m = largest b with 2 * F(b; m, 1/2) <= alpha (-1 when none); reject b <= c_m or
    # b >= m - c_m. ppf gives a first guess; one step either way fixes rounding.
    c = stats.binom.ppf(alpha / 2.0, m, 0.5).astype(np.int64)
    c = np.where(2.0 * stats.binom.cdf(c, m, 0.5) > alpha, c - 1, c)
    c = np.where(2.0 * stats.binom.cdf(c + 1, m, 0.5) <= alpha, c + 1, c)
    share = min(max(p10 / psi, 0.0), 1.0)
    reject = stats.binom.cdf(c, m, share) + stats.binom.sf(m - c - 1, m, share)
    return float(np.clip(np.sum(weight_m * reject), 0.0, 1.0))


def _fisher_exact_power(n_a: int, n_b: int, p_a: float, p_b: float, alpha: float) -> float:
    """Exact power of the two-sided Fisher exact test by enumeration of both binomials."""
    import numpy as np
    from scipy import special, stats

    fa = stats.binom.pmf(np.arange(n_a + 1), n_a, p_a)
    fb = stats.binom.pmf(np.arange(n_b + 1), n_b, p_b)
    lo_a, hi_a = _support(fa)
    lo_b, hi_b = _support(fb)
    log_ca = (
        special.gammaln(n_a + 1)
        - special.gammaln(np.arange(n_a + 1) + 1)
        - special.gammaln(n_a - np.arange(n_a + 1) + 1)
    )
    log_cb = (
        special.gammaln(n_b + 1)
        - special.gammaln(np.arange(n_b + 1) + 1)
        - special.gammaln(n_b - np.arange(n_b + 1) + 1)
    )
    total_power = 0.0
    # One iteration per margin total t (not per replicate): the conditional null
    # distribution of x_a given t is hypergeometric; the p-value of x sums the null
    # probabilities that are no larger than that of x.
    for t in range(lo_a + lo_b, hi_a + hi_b + 1):
        x_lo, x_hi = max(0, t - n_b), min(n_a, t)
        x = np.arange(x_lo, x_hi + 1)
        log_h = log_ca[x] + log_cb[t - x]
        h = np.exp(log_h - log_h.max())
        h /= h.sum()
        ordered = np.sort(h)
        cumulative = np.cumsum(ordered)
        idx = np.searchsorted(ordered, h * (1.0 + _EXACT_FISHER_TIE), side="right")
        p_values = cumulative[idx - 1]
        # tables with t fixed: x_a = x, x_b = t - x, both inside their supports
        keep = (x >= lo_a) & (x <= hi_a) & (t - x >= lo_b) & (t - x <= hi_b) & (p_values <= alpha)
        xs = x[keep]
        total_power += float(np.sum(fa[xs] * fb[t - xs]))
    return min(max(total_power, 0.0), 1.0)


def _support(pmf: np.ndarray) -> tuple[int, int]:
    """Smallest index range holding every probability above the negligible level."""
    import numpy as np

    idx = np.flatnonzero(pmf > _NEGLIGIBLE)
    if idx.size == 0:  # pragma: no cover - a pmf always has mass somewhere
        top = int(np.argmax(pmf))
        return top, top
    return int(idx[0]), int(idx[-1])


# --------------------------------------------------------------------------- public API


def discordant_from_correlation(p_a: float, p_b: float, correlation: float) -> float:
    """Share of discordant pairs implied by two success rates and their correlation.

    For matched episodes with success indicators ``A`` and ``B``, their (Pearson)
    correlation is the phi coefficient ``rho = (p11 - p_a p_b) / sqrt(p_a q_a p_b q_b)``
    (Yule, G. U. (1912), "On the methods of measuring association between two
    attributes", *Journal of the Royal Statistical Society* 75(6):579-652), so
    ``p11 = p_a p_b + rho sqrt(p_a q_a p_b q_b)`` and::

        discordant = p10 + p01 = p_a + p_b - 2 p11
                   = p_a q_b + p_b q_a - 2 rho sqrt(p_a q_a p_b q_b)

    ``correlation=0`` (independent outcomes) gives ``p_a q_b + p_b q_a``; a positive
    correlation (shared hard conditions) gives fewer discordant pairs and so a cheaper
    paired design.

    Args:
        p_a: success rate of policy A.
        p_b: success rate of policy B.
        correlation: phi correlation of the two outcomes on the same condition, in
            [-1, 1] and within the range the two rates allow.

    Returns:
        The discordant share ``p10 + p01`` for :func:`sample_size` and friends.

    Raises:
        InvalidParameterError: if a rate is outside [0, 1], the correlation is outside
            [-1, 1], or no joint distribution with these margins has that correlation.

    >>> round(discordant_from_correlation(0.4, 0.5, 0.0), 12)
    0.5
    """
    pa = check_probability(p_a, "p_a")
    pb = check_probability(p_b, "p_b")
    if isinstance(correlation, bool) or not isinstance(correlation, numbers.Real):
        raise InvalidParameterError(
            f"`correlation` must be a number in [-1, 1], got {correlation!r}",
            parameters=("correlation",))
    rho = float(correlation)
    if math.isnan(rho) or not -1.0 <= rho <= 1.0:
        raise InvalidParameterError(f"`correlation` must be in [-1, 1], got {correlation!r}",
                                    parameters=("correlation",))
    scale = math.sqrt(pa * (1.0 - pa) * pb * (1.0 - pb))
    psi = pa * (1.0 - pb) + pb * (1.0 - pa) - 2.0 * rho * scale
    gap = abs(pa - pb)
    upper = min(pa + pb, 2.0 - pa - pb)
    if psi < gap - 1e-12 or psi > upper + 1e-12:
        if scale > 0.0:
            rho_max = (pa * (1.0 - pb) + pb * (1.0 - pa) - gap) / (2.0 * scale)
            rho_min = (pa * (1.0 - pb) + pb * (1.0 - pa) - upper) / (2.0 * scale)
            allowed = f"[{rho_min:.4g}, {rho_max:.4g}]"
        else:
            allowed = "{0}"
        raise InvalidParameterError(
            f"correlation {rho!r} is impossible for p_a={pa!r}, p_b={pb!r}: two binary "
            f"outcomes with these rates can only have correlation in {allowed}"
        )
    return min(max(psi, gap), upper)


def sample_size(
    p_a: float,
    p_b: float,
    power: float = 0.8,
    alpha: float = 0.05,
    *,
    paired: bool = False,
    discordant: float | None = None,
    ratio: float = 1.0,
    continuity: bool = False,
) -> int:
    """Episodes per arm (unpaired) or matched pairs (paired) to detect ``p_a != p_b``.

    Two-sided test at level ``alpha`` with the given ``power``; the result is rounded up.

    **Unpaired** (independent episodes; two-proportion z test with pooled null
    variance). Fleiss, J. L., Levin, B. & Paik, M. C. (2003), *Statistical Methods for
    Rates and Proportions*, 3rd ed., Wiley, chapter 4 (equal and unequal group sizes);
    the same normal-approximation family as Chow, S.-C., Shao, J. & Wang, H. (2008),
    *Sample Size Calculations in Clinical Research*, 2nd ed., Chapman & Hall, chapter 4
    (whose section 4.2 uses the unpooled variance in both terms).
    With ``r = ratio = n_b / n_a`` and
    ``pbar = (p_a + r p_b) / (1 + r)``::

        n_a = [z_{1-a/2} sqrt(pbar qbar (1 + 1/r)) + z_{1-b} sqrt(p_a q_a + p_b q_b / r)]^2
              / (p_a - p_b)^2

    which for ``r = 1`` is ``[z_{1-a/2} sqrt(2 pbar qbar) + z_{1-b} sqrt(p_a q_a + p_b q_b)]^2
    / (p_a - p_b)^2``. With ``continuity=True`` (for Yates' corrected chi-square test,
    closer to Fisher's exact test), Fleiss, Tytun & Ury (1980), *Biometrics* 36:343-346::

        n_cc = n/4 * [1 + sqrt(1 + 2 (r + 1) / (n r |p_a - p_b|))]^2

    **Paired** (matched episodes; McNemar's test). Connor, R. J. (1987), "Sample size
    for testing differences in proportions for the paired-sample design", *Biometrics*
    43:207-211, p. 209. With ``psi = discordant = p10 + p01`` and
    ``delta = p10 - p01 = p_a - p_b``::

        n_pairs = [z_{1-a/2} sqrt(psi) + z_{1-b} sqrt(psi - delta^2)]^2 / delta^2

    Args:
        p_a: expected success rate of policy A.
        p_b: expected success rate of policy B (must differ from ``p_a``).
        power: target power, in (alpha, 1).
        alpha: two-sided significance level, in (0, 1).
        paired: matched design (McNemar) instead of independent episodes.
        discordant: paired only, required: expected share of pairs where exactly one
            policy succeeds, ``|p_a - p_b| <= discordant <= min(p_a+p_b, 2-p_a-p_b)``.
        ratio: unpaired only: episodes of B per episode of A (``n_b = ceil(ratio * n_a)``).
        continuity: unpaired only: apply the Fleiss-Tytun-Ury continuity correction.

    Returns:
        ``n_a``, episodes for policy A (per arm when ``ratio == 1``), or the number of
        matched pairs for a paired design.

    Raises:
        InvalidParameterError: rates outside [0, 1], ``p_a == p_b`` (no finite sample
            detects a zero difference), power/alpha outside (0, 1) or power <= alpha,
            a missing or impossible ``discordant``, or options that do not apply.

    >>> sample_size(0.6, 0.4)  # seed 004: "~100 trials per model"
    97
    >>> sample_size(0.5, 0.4)  # a 10-point gap: "~390"
    388
    >>> sample_size(0.5, 0.4, paired=True, discordant=0.3)  # matched, correlated outcomes
    234
    """
    pa = check_probability(p_a, "p_a")
    pb = check_probability(p_b, "p_b")
    a = _check_level(alpha, "alpha")
    target = _check_target(power, a)
    r = _check_ratio(ratio, paired)
    psi = _check_discordant(pa, pb, discordant, paired)
    if paired and continuity:
        raise InvalidParameterError(
            "continuity=True applies to the unpaired design only; for small paired studies "
            "check power(..., paired=True, method='exact') of the exact McNemar test"
        )
    if pa == pb:
        raise InvalidParameterError(
            f"`p_a` and `p_b` are equal ({pa!r}): no finite number of episodes detects a "
            "zero difference; give the rates a gap worth detecting apart (e.g. `p_a` 0.1 "
            "above `p_b`)", parameters=("p_a", "p_b"),
        )
    design = _design(pa, pb, psi, r, paired)
    z_a = -ndtri(a / 2.0)
    z_b = ndtri(target)
    root_n = (z_a * design.sd_null + z_b * design.sd_alt) / design.gap
    n = root_n * root_n if root_n > 0.0 else 0.0
    if continuity and n > 0.0:
        n = n / 4.0 * (1.0 + math.sqrt(1.0 + 4.0 * design.cc / (n * design.gap))) ** 2
    return max(1, math.ceil(n - 1e-9))


def power(
    p_a: float,
    p_b: float,
    n: int,
    alpha: float = 0.05,
    *,
    paired: bool = False,
    discordant: float | None = None,
    ratio: float = 1.0,
    continuity: bool = False,
    method: str = "normal",
) -> float:
    """Power of the two-sided test of ``p_a == p_b`` with ``n`` episodes per arm / pairs.

    ``method="normal"`` inverts the sample-size formulas of :func:`sample_size`
    (Fleiss, Levin & Paik 2003, chapter 4; Connor 1987, *Biometrics* 43:207-211), counting
    both rejection tails, with ``s0`` the null and ``s1`` the alternative standard deviation
    per sqrt(n) and ``c`` the continuity shift (0 unless ``continuity``; ``(1 + 1/r)/(2n)``)::

        power = Phi((|d| sqrt(n) - c sqrt(n) - z_{1-a/2} s0) / s1)
              + Phi((-|d| sqrt(n) - c sqrt(n) - z_{1-a/2} s0) / s1)

    unpaired: ``s0 = sqrt(pbar qbar (1 + 1/r))``, ``s1 = sqrt(p_a q_a + p_b q_b / r)``;
    paired: ``s0 = sqrt(psi)``, ``s1 = sqrt(psi - delta^2)`` (as in
    ``statsmodels.stats.proportion.power_proportions_2indep`` for the unpaired case).

    ``method="exact"`` enumerates the outcome distribution and sums the probability of
    the outcomes an *exact* test rejects (no approximation):

    - paired: the exact (conditional binomial) McNemar test, p-value
      ``min(1, 2 P(Bin(m, 1/2) <= min(b, m - b)))`` given ``m`` discordant pairs;
      power ``= sum_m P(M = m) P(reject | m)`` with ``M ~ Bin(n, psi)`` and
      ``b | m ~ Bin(m, p10 / psi)`` (Lachin, J. M. (1992), "Power and sample size
      evaluation for the McNemar test with application to matched case-control studies",
      *Statistics in Medicine* 11:1239-1251). Vectorized over ``m``: O(n).
    - unpaired: Fisher's exact test (two-sided p-value: the null hypergeometric
      probabilities no larger than the observed one, ties within a relative 1e-7),
      summed over both binomials ``x_a ~ Bin(n_a, p_a)``, ``x_b ~ Bin(n_b, p_b)``
      (negligible tails below 1e-18 dropped); one vectorized step per margin total.

    Args:
        p_a: success rate of policy A.
        p_b: success rate of policy B (``p_a == p_b`` gives the type I error rate).
        n: episodes of policy A (per arm when ``ratio == 1``) or matched pairs.
        alpha: two-sided significance level, in (0, 1).
        paired: matched design (McNemar) instead of independent episodes.
        discordant: paired only, required: expected share of discordant pairs.
        ratio: unpaired only: ``n_b = ratio * n`` (a whole number for ``method="exact"``).
        continuity: unpaired normal method only: Yates-corrected test.
        method: ``"normal"`` or ``"exact"``.

    Returns:
        The probability that the test rejects at level ``alpha``.

    Raises:
        InvalidParameterError: bad rates, levels, ``discordant``, ``ratio`` or method.
        InvalidCountsError: ``n`` not a whole number >= 1.

    >>> round(power(0.6, 0.4, 97), 4)  # normal approximation, z test
    0.8003
    >>> round(power(0.6, 0.4, 97, method="exact"), 3)  # Fisher's exact test
    0.764
    >>> round(power(0.6, 0.4, 97, paired=True, discordant=0.4, method="exact"), 3)
    0.866
    """
    pa = check_probability(p_a, "p_a")
    pb = check_probability(p_b, "p_b")
    a = _check_level(alpha, "alpha")
    n_a = as_count(n, "n (episodes per arm)")
    if n_a < 1:
        raise InvalidParameterError(f"n (episodes per arm) must be >= 1, got {n_a}")
    r = _check_ratio(ratio, paired)
    psi = _check_discordant(pa, pb, discordant, paired)
    how = check_choice(method, "method", ["normal", "exact"])
    if continuity and (paired or how == "exact"):
        raise InvalidParameterError(
            "continuity=True applies to the unpaired normal method only, got "
            f"paired={paired!r}, method={how!r}"
        )
    if how == "normal":
        return _normal_power(float(n_a), _design(pa, pb, psi, r, paired), a, continuity)
    if paired:
        p10 = (psi + (pa - pb)) / 2.0
        p01 = (psi - (pa - pb)) / 2.0
        return _mcnemar_exact_power(n_a, max(p10, 0.0), max(p01, 0.0), a)
    n_b_float = r * n_a
    n_b = round(n_b_float)
    if abs(n_b - n_b_float) > 1e-9 or n_b < 1:
        raise InvalidParameterError(
            f"method='exact' needs a whole number of episodes for B, got ratio * n = "
            f"{n_b_float!r}; choose ratio so that ratio * n is a whole number >= 1"
        )
    return _fisher_exact_power(n_a, int(n_b), pa, pb, a)


def minimum_detectable_difference(
    n: int,
    p: float,
    power: float = 0.8,
    alpha: float = 0.05,
    *,
    paired: bool = False,
    discordant: float | None = None,
    ratio: float = 1.0,
    continuity: bool = False,
    direction: str = "either",
) -> float:
    """Smallest gap ``|p_a - p_b|`` around a baseline rate that ``n`` per arm resolves.

    Solves the normal-approximation power equation of :func:`power` (Fleiss, Levin &
    Paik 2003, chapter 4, unpaired; Connor 1987, *Biometrics* 43:207-211 paired) for the
    gap ``d`` with Brent's method (:func:`evalband.stats._roots.brentq`, which returns
    ``scipy.optimize.brentq``'s root without importing scipy.optimize)::

        power(p_a = p + s d, p_b = p, n) = target,    s = +1 ("up") or -1 ("down")

    ``direction="either"`` returns the larger of the two: the smallest gap resolvable
    whichever way the difference goes. For a paired design the power depends on the gap
    and the (fixed) discordant share only; the baseline must admit a joint distribution
    with that share and gap.

    Args:
        n: episodes per arm (unpaired) or matched pairs (paired), >= 1.
        p: baseline success rate (policy B's rate).
        power: target power, in (alpha, 1).
        alpha: two-sided significance level, in (0, 1).
        paired: matched design (McNemar) instead of independent episodes.
        discordant: paired only, required: expected share of discordant pairs, in (0, 1].
        ratio: unpaired only: ``n_b = ratio * n``.
        continuity: unpaired only: Yates-corrected test.
        direction: ``"up"`` (A better), ``"down"`` (A worse) or ``"either"``.

    Returns:
        The minimum detectable difference, a gap in (0, 1].

    Raises:
        InvalidParameterError: bad inputs, or no gap inside [0, 1] reaches the target
            power in the requested direction (the message says which).
        InvalidCountsError: ``n`` not a whole number >= 1.

    >>> round(minimum_detectable_difference(46, 0.4), 3)  # seed 004: "only ~29-point gaps"
    0.287
    """
    n_a = as_count(n, "n (episodes per arm)")
    if n_a < 1:
        raise InvalidParameterError(f"n (episodes per arm) must be >= 1, got {n_a}")
    base = check_probability(p, "p (baseline rate)")
    a = _check_level(alpha, "alpha")
    target = _check_target(power, a)
    r = _check_ratio(ratio, paired)
    way = check_choice(direction, "direction", ["up", "down", "either"])
    if paired and continuity:
        raise InvalidParameterError("continuity=True applies to the unpaired design only")
    if not paired and discordant is not None:
        raise InvalidParameterError(
            "discordant applies to paired designs only; pass paired=True, or drop "
            f"discordant={discordant!r}"
        )
    if paired:
        if discordant is None:
            _check_discordant(base, base, None, True)  # raises the explanatory message
        psi = check_probability(discordant, "discordant")
        if psi == 0.0:
            raise InvalidParameterError(
                "discordant=0 means the policies never disagree: no gap is detectable"
            )
    signs = {"up": [1.0], "down": [-1.0], "either": [1.0, -1.0]}[way]
    gaps = []
    for sign in signs:
        name = "up" if sign > 0 else "down"
        room = 1.0 - base if sign > 0 else base
        if paired:
            room = min(room, psi)

        def shortfall(gap: float, sign: float = sign) -> float:
            pa = min(max(base + sign * gap, 0.0), 1.0)
            design = _design(pa, base, psi if paired else math.nan, r, paired)
            return _normal_power(float(n_a), design, a, continuity) - target

        if room <= 0.0 or shortfall(room) < 0.0:
            raise InvalidParameterError(
                f"no gap {name} from baseline p={base!r} (at most {room:.4g}) reaches "
                f"power {target!r} at n={n_a}; choose direction="
                f"{'down' if sign > 0 else 'up'!r}, more episodes, or a lower target"
            )
        from evalband.stats._roots import brentq

        gap = brentq(shortfall, 0.0, room, xtol=1e-12)
        if paired:
            try:
                _check_discordant(base + sign * gap, base, psi, True)
            except InvalidParameterError as err:
                raise InvalidParameterError(
                    f"the gap {gap:.4g} {name} from baseline p={base!r} that n={n_a} pairs "
                    f"would resolve is impossible with discordant={psi!r}: {err}"
                ) from None
        gaps.append(gap)
    return max(gaps)


class PriceRow(NamedTuple):
    """One row of a power price list: what a comparison costs in episodes.

    Attributes:
        p_a: success rate of policy A.
        p_b: success rate of policy B.
        gap: ``p_a - p_b``.
        n_a: episodes of policy A (matched pairs when paired).
        n_b: episodes of policy B (equal to ``n_a`` when paired or ``ratio == 1``).
        total: episodes of both policies together.
        paired: whether the row assumes matched episodes.

    >>> PriceRow(0.6, 0.4, 0.2, 97, 97, 194, False).total
    194
    """

    p_a: float
    p_b: float
    gap: float
    n_a: int
    n_b: int
    total: int
    paired: bool


def price_list(
    pairs: Iterable[tuple[float, float]] | None = None,
    *,
    gaps: Iterable[float] | None = None,
    baseline: float = 0.5,
    power: float = 0.8,
    alpha: float = 0.05,
    paired: bool = False,
    discordant: float | None = None,
    ratio: float = 1.0,
    continuity: bool = False,
) -> list[PriceRow]:
    """A power "price list": episodes needed per comparison, one row per scenario.

    Each row is :func:`sample_size` (Fleiss, Levin & Paik 2003, chapter 4, unpaired;
    Connor 1987, *Biometrics* 43:207-211 paired) for one ``(p_a, p_b)``. Give either
    explicit ``pairs`` of rates or ``gaps`` around a ``baseline`` (``p_b = baseline``,
    ``p_a = baseline + gap``; a negative gap is a regression). Seed 004 (section 4):
    "60% vs 40% ~100 trials per model; a 15-point gap ~170; 10-point ~390; 5-point
    ~1,550; required trials grow as 1/gap^2".

    Args:
        pairs: ``(p_a, p_b)`` tuples.
        gaps: differences ``p_a - p_b`` around ``baseline`` (instead of ``pairs``).
        baseline: ``p_b`` for ``gaps``.
        power: target power, in (alpha, 1).
        alpha: two-sided significance level.
        paired: matched design (McNemar); then ``discordant`` is required and the same
            discordant share is assumed for every row.
        discordant: paired only: expected share of discordant pairs.
        ratio: unpaired only: episodes of B per episode of A.
        continuity: unpaired only: Fleiss-Tytun-Ury continuity correction.

    Returns:
        One :class:`PriceRow` per scenario, in the order given.

    Raises:
        InvalidParameterError: both or neither of ``pairs`` and ``gaps``, a malformed
            pair, or any input :func:`sample_size` rejects.

    >>> [row.n_a for row in price_list(gaps=[0.2, 0.1, 0.05], baseline=0.4)]
    [97, 388, 1534]
    """
    if (pairs is None) == (gaps is None):
        raise InvalidParameterError(
            "give exactly one of pairs=[(p_a, p_b), ...] or gaps=[...] (with baseline=)"
        )
    scenarios: list[tuple[float, float]] = []
    if pairs is not None:
        for item in pairs:
            try:
                first, second = item
            except (TypeError, ValueError):
                raise InvalidParameterError(
                    f"each entry of pairs must be a (p_a, p_b) pair, got {item!r}"
                ) from None
            scenarios.append((first, second))
    else:
        base = check_probability(baseline, "baseline")
        for gap in gaps if gaps is not None else ():
            if isinstance(gap, bool) or not isinstance(gap, numbers.Real):
                raise InvalidParameterError(f"each gap must be a number, got {gap!r}")
            p_a = base + float(gap)
            if not 0.0 <= p_a <= 1.0:
                raise InvalidParameterError(
                    f"gap {gap!r} from baseline {base!r} gives p_a={p_a!r}, outside [0, 1]"
                )
            scenarios.append((p_a, base))
    rows = []
    r = _check_ratio(ratio, paired)
    for first, second in scenarios:
        n_a = sample_size(
            first,
            second,
            power,
            alpha,
            paired=paired,
            discordant=discordant,
            ratio=r,
            continuity=continuity,
        )
        n_b = n_a if paired else max(1, math.ceil(r * n_a - 1e-9))
        pa, pb = float(first), float(second)
        rows.append(PriceRow(pa, pb, pa - pb, n_a, n_b, n_a + n_b, paired))
    return rows
