"""The power price list: what resolving a gap costs on this rig, and what this session resolves.

Seed 004, section 4: at the session's pooled success rate, the episodes per policy that 20-,
15-, 10- and 5-point gaps take at 80% power (the two-proportion table), and the price of this
session's own scene-level test in matched scenes, at its observed discordance and at the flip
floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalband.analysis._verdicts import Standing
from evalband.errors import InvalidParameterError
from evalband.session._results import (
    PRICE_GAPS,
    ComparisonKind,
    FlipFloor,
    PolicyResult,
    PriceEntry,
    PriceList,
    SessionComparison,
)

if TYPE_CHECKING:
    from evalband.session._plan import SessionPlan

__all__ = ["price_list_of", "price_family"]

_PRICE_POWER = 0.8
_PRICE_ALPHA = 0.05


def _clip_discordant(psi: float, p_a: float, p_b: float) -> float:
    gap = abs(p_a - p_b)
    upper = min(p_a + p_b, 2.0 - p_a - p_b)
    return min(max(psi, gap), upper)


def price_list_of(
    results: Sequence[PolicyResult],
    comparisons: Sequence[SessionComparison],
    flip: FlipFloor | None,
    family: int,
) -> PriceList | None:
    """The price list at the session's pooled unaided rate (``None`` without unaided trials).

    ``family``: the comparisons the matched columns are corrected for (:func:`price_family`).
    """
    from evalband.stats import (
        clustered_paired_sample_size,
        minimum_detectable_difference,
        price_list,
    )

    k = sum(r.successes for r in results)
    n = sum(r.unaided for r in results)
    if n == 0:
        return None
    base = k / n
    signed = [g if base + g <= 1.0 else -g for g in PRICE_GAPS]
    rows = price_list(gaps=signed, baseline=base, power=_PRICE_POWER, alpha=_PRICE_ALPHA)
    paired = [c for c in comparisons if c.kind == ComparisonKind.POLICIES]
    pairs_n = sum(
        c.counts["both"] + c.counts["a_only"] + c.counts["b_only"] + c.counts["neither"]
        for c in paired
    )
    psi = (
        sum(c.counts["a_only"] + c.counts["b_only"] for c in paired) / pairs_n if pairs_n else None
    )
    floor = flip.pooled.rate.estimate if flip is not None else None
    entries = []
    for gap, row in zip(PRICE_GAPS, rows, strict=True):
        paired_n = at_floor = None
        psi_row = floor_row = None
        if psi is not None:
            psi_row = _clip_discordant(psi, row.p_a, row.p_b)
            paired_n = clustered_paired_sample_size(
                row.p_a, row.p_b, psi_row, _PRICE_POWER, _PRICE_ALPHA, comparisons=family
            )
        if floor is not None:
            floor_row = _clip_discordant(floor, row.p_a, row.p_b)
            at_floor = clustered_paired_sample_size(
                row.p_a, row.p_b, floor_row, _PRICE_POWER, _PRICE_ALPHA, comparisons=family
            )
        entries.append(
            PriceEntry(gap, row.p_a, row.p_b, row.n_a, paired_n, psi_row, at_floor, floor_row)
        )
    per_policy = min(r.unaided for r in results)
    resolvable: float | None = None
    if per_policy >= 1:
        for direction in ("either", "up", "down"):
            try:
                resolvable = minimum_detectable_difference(
                    per_policy, base, _PRICE_POWER, _PRICE_ALPHA, direction=direction
                )
                break
            except InvalidParameterError:
                continue
    first = entries[0]
    sentence = (
        f"at this session's {100 * base:.0f}% success rate, resolving a "
        f"{100 * first.gap:.0f}-point gap at 80% power takes ~{first.unpaired} episodes per "
        f"policy, a {100 * entries[-1].gap:.0f}-point gap ~{entries[-1].unpaired} (1/gap^2); "
        + (
            f"this session's {per_policy} per policy resolve gaps of >= "
            f"{100 * resolvable:.0f} points"
            if resolvable is not None
            else f"this session's {per_policy} per policy resolve no gap at 80% power"
        )
        + (
            f"; matched columns: scenes with one attempt per policy, the session's scene-level "
            f"test, exact power, alpha {_PRICE_ALPHA:g}/{family} for {family} comparison(s)"
        )
    )
    return PriceList(
        base,
        _PRICE_POWER,
        _PRICE_ALPHA,
        floor,
        psi,
        tuple(entries),
        per_policy,
        resolvable,
        sentence,
        comparisons=family,
        test="clustered-sign-flip (one matched pair per scene: exact McNemar, score-guarded)",
    )


def price_family(plan: SessionPlan, comparisons: Sequence[SessionComparison]) -> int:
    """Comparisons a future session's price is corrected for: the planned ones, else every pair."""
    planned = sum(c.label == Standing.CONFIRMATORY for c in comparisons)
    if planned:
        return planned
    return max(1, len(plan.policies) * (len(plan.policies) - 1) // 2)

