"""The instrument before the science: the flip floor and the positive-control check.

Seed 004 measured its rig before its models: how often two attempts of one policy in one
scene disagree (:func:`flip_floor`, the one statistic that "behaved like a measurement"),
and whether the positive control reached its floor and was not beaten
(:func:`control_check`); if it misbehaves, suspect the instrument and the rig before
inventing science.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalband.analysis import SliceVerdict
from evalband.analysis._noise import flip_rate_of_groups
from evalband.analysis._verdicts import ControlStatus
from evalband.session._results import (
    ComparisonKind,
    ControlCheck,
    FlipFloor,
    PolicyFlip,
    PolicyResult,
    ScenePoint,
    SessionComparison,
)
from evalband.session._trials import Row

if TYPE_CHECKING:
    from evalband.session._plan import SessionPlan

__all__ = ["flip_floor", "control_check"]


def flip_floor(plan: SessionPlan, rows: Sequence[Row], confidence: float) -> FlipFloor | None:
    """How often two unaided attempts of one policy in one scene disagree, scene = cluster.

    ``None`` without a policy that has two unaided attempts in one scene.
    """
    from evalband.analysis._noise import flip_band

    order = {p: i for i, p in enumerate(plan.policies)}
    groups: dict[tuple[int, int], list[bool]] = {}
    for r in sorted(rows, key=lambda r: (r.scene, order[r.policy], r.attempt)):
        if r.unaided:
            groups.setdefault((r.scene, order[r.policy]), []).append(bool(r.success))
    kept = [(key, outcomes) for key, outcomes in groups.items() if len(outcomes) >= 2]
    # the scene is the unit: every policy's pairs on one scene share that scene
    scenes = [scene for (scene, _), _ in kept]
    pooled = flip_rate_of_groups([o for _, o in kept], confidence=confidence, clusters=scenes)
    if pooled is None:
        return None
    sizes = [len(o) for _, o in kept]
    pair_counts = [r * (r - 1) // 2 for r in sizes]
    flip_counts = [sum(o) * (len(o) - sum(o)) for _, o in kept]
    by_scene: list[ScenePoint] = []
    for i, ((scene, _), _) in enumerate(kept):
        if i + 1 == len(kept) or kept[i + 1][0][0] != scene:
            point = pooled.running[i]
            band = flip_band(
                flip_counts[: i + 1], pair_counts[: i + 1], scenes[: i + 1], confidence
            )
            by_scene.append(ScenePoint(scene, point.pairs, point.flips, band))
    by_policy = []
    weighted = 0.0
    for policy in plan.policies:
        mine = [o for (_, p), o in kept if p == order[policy]]
        flip = flip_rate_of_groups(mine, confidence=confidence)
        if flip is not None:
            by_policy.append(PolicyFlip(policy, flip))
            weighted += flip.pairs * flip.independent_reference
    reference = weighted / pooled.pairs
    rate = pooled.rate
    sentence = (
        f"{100 * rate.estimate:.1f}% of {pooled.pairs} same-policy, same-scene attempt pairs "
        f"flipped [{100 * rate.low:.1f}, {100 * rate.high:.1f}] (independent attempts would "
        f"flip {100 * reference:.1f}%): each attempt is a draw with some success probability; "
        "a comparison is an estimate of probabilities, never a reading of a few attempts"
    )
    return FlipFloor(pooled, tuple(by_scene), tuple(by_policy), reference, sentence)


def control_check(
    plan: SessionPlan,
    results: Sequence[PolicyResult],
    comparisons: Sequence[SessionComparison],
    floor: float | None,
    floor_source: str | None,
) -> ControlCheck | None:
    """The positive control's check (``None`` when the plan names none).

    It misbehaves when a comparison decided it below another policy (Holm) or its whole band
    lies below the stated floor; it is ``unclear`` when its band straddles the floor (or,
    without a floor, when another policy scored higher, not significantly).
    """
    control = plan.positive_control
    if control is None:
        return None
    mine = next(r for r in results if r.policy == control)
    rate = mine.rate
    if rate is None:
        return ControlCheck(
            control,
            None,
            floor,
            floor_source,
            ControlStatus.NO_DATA,
            (),
            (),
            f"positive control {control} has no unaided trial yet",
        )
    beaten = []
    for c in comparisons:
        if c.kind != ComparisonKind.POLICIES or control not in (c.a, c.b):
            continue
        # the verdict reads A - B: the control is beaten when it is the lower side, decided
        lost = SliceVerdict.REGRESSED if c.a == control else SliceVerdict.IMPROVED
        if c.verdict == lost:
            beaten.append(c.b if c.a == control else c.a)
    reasons: list[str] = []
    statuses: list[ControlStatus] = []
    if floor is not None:
        where = f"the floor {100 * floor:.0f}% ({floor_source})"
        if rate.high < floor:
            statuses.append(ControlStatus.MISBEHAVING)
            reasons.append(
                f"its whole band [{100 * rate.low:.1f}, {100 * rate.high:.1f}] lies below {where}"
            )
        elif rate.low >= floor:
            statuses.append(ControlStatus.OK)
            reasons.append(f"its band lies at or above {where}")
        else:
            statuses.append(ControlStatus.UNCLEAR)
            reasons.append(
                f"its band [{100 * rate.low:.1f}, {100 * rate.high:.1f}] straddles {where}"
            )
    if beaten:
        statuses.append(ControlStatus.MISBEHAVING)
        reasons.append(f"significantly below {', '.join(beaten)} (Holm)")
    else:
        best = max((r.rate.estimate for r in results if r.rate is not None), default=0.0)
        if rate.estimate >= best:
            statuses.append(ControlStatus.OK)
            reasons.append("it has the highest rate of the session")
        else:
            above = [
                r.policy for r in results if r.rate is not None and r.rate.estimate > rate.estimate
            ]
            # with a stated floor the floor decides; without one the control should lead
            if floor is None:
                statuses.append(ControlStatus.UNCLEAR)
            reasons.append(f"{', '.join(above)} scored higher, not significantly")
    status = next(
        (s for s in (ControlStatus.MISBEHAVING, ControlStatus.UNCLEAR) if s in statuses),
        ControlStatus.OK,
    )
    head = (
        f"positive control {control}: {100 * rate.estimate:.1f}% "
        f"[{100 * rate.low:.1f}, {100 * rate.high:.1f}] of {mine.unaided}"
    )
    if status == ControlStatus.MISBEHAVING:
        sentence = (
            f"{head} MISBEHAVES: {'; '.join(reasons)}. Suspect the instrument and the "
            "rig before inventing science (seed 004)"
        )
    elif status == ControlStatus.UNCLEAR:
        sentence = f"{head}: unclear: {'; '.join(reasons)}"
    else:
        sentence = f"{head}: behaves as expected: {'; '.join(reasons)}"
    return ControlCheck(
        control, rate, floor, floor_source, status, tuple(beaten), tuple(reasons), sentence
    )

