"""What separating two policies of a ranking costs: exact power of the pair's test in the family.

A ranking of ``K`` policies tests ``M = K(K-1)/2`` pairs; Holm's first step tests each at
the two-sided level ``alpha / M`` (one-sided ``alpha / 2M``, :func:`evalband.stats._ranks.
directional_holm`). The power of the pair's own test at that level is a lower bound on the
chance that the stepdown establishes the pair's order (Holm rejects at least what its first
step rejects), so a size computed here delivers at least the power it states.

The tests are the ranking's: exact McNemar on matched episodes
(:func:`evalband.stats.exact_power`), Fisher's central exact test for independent arms, and the
scene-level sign-flip test with one matched attempt per scene
(:func:`evalband.stats.clustered_paired_power`). All sizes are exact (enumeration), never
the normal approximation.
"""

from __future__ import annotations

from evalband.errors import InvalidParameterError
from evalband.stats._ranks import pair_level

__all__ = ["DESIGNS", "clip_discordant", "separation_power", "separation_size", "resolvable_gap"]

DESIGNS = ("paired", "unpaired", "clustered")
"""``paired``: matched episodes; ``unpaired``: independent arms; ``clustered``: matched
scenes, one attempt per policy each (the unit is then a scene)."""

_LIMIT = 200_000


def clip_discordant(discordant: float, p_a: float, p_b: float) -> float:
    """A matched pair's discordance kept possible for the rates ``p_a``, ``p_b``.

    >>> round(clip_discordant(0.05, 0.6, 0.4), 6), round(clip_discordant(0.9, 0.9, 0.8), 6)
    (0.2, 0.3)
    """
    gap = abs(p_a - p_b)
    upper = min(p_a + p_b, 2.0 - p_a - p_b)
    return min(max(float(discordant), gap), upper)


def _check(design: str, discordant: float | None) -> None:
    if design not in DESIGNS:
        raise InvalidParameterError(f"design must be one of {', '.join(DESIGNS)}; got {design!r}")
    if design != "unpaired" and discordant is None:
        raise InvalidParameterError(f"a {design} design needs the discordance of its pairs")


def separation_power(
    n: int,
    p_better: float,
    p_worse: float,
    *,
    policies: int,
    alpha: float = 0.05,
    design: str = "paired",
    discordant: float | None = None,
) -> float:
    """Exact power of the pair's test at Holm's first-step level, ``n`` per policy.

    Args:
        n: episodes per policy (scenes for ``clustered``).
        p_better: the better policy's success rate.
        p_worse: the worse policy's success rate.
        policies: policies ranked (the family is every pair of them).
        alpha: the ranking's joint error rate.
        design: one of :data:`DESIGNS`.
        discordant: P(a matched pair disagrees) for the matched designs (clipped to what
            the rates allow).

    Returns:
        The probability that the pair's order is established (a lower bound under Holm).

    >>> round(separation_power(100, 0.6, 0.4, policies=3, design="unpaired"), 3)
    0.642
    """
    _check(design, discordant)
    level = pair_level(policies, alpha)
    gap = p_better - p_worse
    if gap <= 0:
        raise InvalidParameterError(f"p_better must exceed p_worse; got {p_better!r}, {p_worse!r}")
    if design == "clustered":
        from evalband.stats._clustered_power import clustered_paired_power

        psi = clip_discordant(float(discordant or 0.0), p_better, p_worse)
        return clustered_paired_power(int(n), p_better, p_worse, psi, level)
    from evalband.stats._procedure import exact_power

    psi = 0.0 if design == "unpaired" else clip_discordant(float(discordant or 0.0),
                                                            p_better, p_worse)
    return exact_power(int(n), p_better, gap, level, paired=design == "paired", discordant=psi)


def separation_size(
    p_better: float,
    p_worse: float,
    *,
    policies: int,
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    discordant: float | None = None,
) -> int | None:
    """Fewest per policy at which :func:`separation_power` reaches ``power``.

    Returns ``None`` beyond 200,000 per policy.

    >>> separation_size(0.6, 0.4, policies=2, design="unpaired")  # seed 004: "~100 trials"
    102
    """
    _check(design, discordant)
    level = pair_level(policies, alpha)
    gap = p_better - p_worse
    if gap <= 0:
        raise InvalidParameterError(f"p_better must exceed p_worse; got {p_better!r}, {p_worse!r}")
    if design == "clustered":
        from evalband.stats._clustered_power import clustered_paired_sample_size

        psi = clip_discordant(float(discordant or 0.0), p_better, p_worse)
        try:
            return clustered_paired_sample_size(p_better, p_worse, psi, power, level)
        except InvalidParameterError:
            return None
    from evalband.stats._procedure import episodes_for_drop

    psi = 0.0 if design == "unpaired" else clip_discordant(float(discordant or 0.0),
                                                            p_better, p_worse)
    return episodes_for_drop(p_better, gap, level, paired=design == "paired", discordant=psi,
                             power=power, limit=_LIMIT)


def resolvable_gap(
    n: int,
    p_base: float,
    *,
    policies: int,
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    discordant: float | None = None,
) -> float | None:
    """The smallest gap below ``p_base`` that ``n`` per policy separate with ``power``.

    Seed 004: "46 trials per model across six models -- enough to resolve only ~29-point
    gaps". Bisection on :func:`separation_power` (``None`` when even a drop to 0 is not
    resolved). For matched designs the discordance is at least the gap.

    >>> round(resolvable_gap(46, 0.45, policies=6, design="unpaired"), 2)
    0.35
    """
    _check(design, discordant)
    if n < 1 or not 0.0 < p_base <= 1.0:
        return None

    def ok(gap: float) -> bool:
        return separation_power(n, p_base, p_base - gap, policies=policies, alpha=alpha,
                                design=design, discordant=discordant) >= power

    if not ok(p_base):
        return None
    lo, hi = 0.0, p_base
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo < 5e-4:
            break
    return hi
