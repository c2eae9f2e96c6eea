"""Analysis of a hardware session: flip floor first, then rates, comparisons and prices.

Seed 004's grasp benchmark measured its instrument before its models: the same-state flip
rate (27% of same-model, same-scene pairs), the positive control, and the power price list
that says what a comparison costs. :func:`analyze_session` computes, from a session's plan and
its trials table, in that order of reading:

1. the **flip floor**: how often two attempts of one policy in one scene disagree, with a
   band that takes the scene as the unit, per policy, and as the scenes accumulated (the one
   statistic that "behaved like a measurement");
2. the **positive-control check**: the control must reach its stated floor and must not be
   beaten by another policy; if it misbehaves, suspect the instrument and the rig before
   inventing science;
3. **per-policy success** at the rubric's threshold with scene-clustered bands and the ordinal score
   distribution; skipped trials are counted apart (never as failures), assisted trials are
   reported and left out of unaided success;
4. **comparisons** with the scene as the unit (exact sign-flip test over scenes, intervals
   that invert it at each Holm step's level), Holm-corrected within their family; with a
   pre-registration locked before the first scored trial, the planned ones are
   *confirmatory* and everything else is *exploratory — a hypothesis, not a finding*;
5. the **cumulative success** per policy as scenes accumulated (where the seed's three wrong
   stories were told);
6. the **power price list** for this session's rates and flip floor.

Pure: no I/O. The terminal, JSON and HTML renderings live in the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalband.analysis._noise import flip_rate_of_groups
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.session._prereg import Grouping, Preregistration
from evalband.session._results import (
    CONFIRMATORY,
    EXPLORATORY,
    PRICE_GAPS,
    ControlCheck,
    CumulativePoint,
    CumulativeSeries,
    FlipFloor,
    PolicyFlip,
    PolicyResult,
    PreregUse,
    PriceEntry,
    PriceList,
    Progress,
    ScenePoint,
    SessionAnalysis,
    SessionComparison,
)
from evalband.stats import Difference, Interval, TestResult
from evalband.stats._validate import check_confidence

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session._plan import SessionPlan

__all__ = ["analyze_session", "parse_scored_at"]


_REQUIRED = (
    "trial_index",
    "scene",
    "attempt",
    "policy",
    "status",
    "score",
    "success",
    "assisted",
    "scored_at",
)
_STATUSES = ("pending", "scored", "skipped")
_PRICE_POWER = 0.8
_PRICE_ALPHA = 0.05


# --------------------------------------------------------------------------- helpers


def parse_scored_at(text: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime (a time without a zone is read as UTC).

    Raises:
        InvalidInputError: when the text is not an ISO 8601 time.

    >>> parse_scored_at("2025-01-06T18:00:30Z").isoformat()
    '2025-01-06T18:00:30+00:00'
    """
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidInputError(
            f"a trial's scored_at must be an ISO 8601 time such as 2025-01-06T18:00:30+00:00; "
            f"got {text!r}"
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


@dataclass(frozen=True)
class _Row:
    index: int
    scene: int
    attempt: int
    policy: str
    status: str
    score: int | None
    success: bool | None
    assisted: bool
    scored_at: str | None

    @property
    def unaided(self) -> bool:
        return self.status == "scored" and not self.assisted and self.success is not None


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or bool(pd.isna(value))


def _rows(plan: SessionPlan, trials: pd.DataFrame) -> list[_Row]:
    """Validate the trials table against the plan; one :class:`_Row` per trial."""
    import pandas as pd

    if not isinstance(trials, pd.DataFrame):
        raise InvalidInputError(
            "trials must be the session's trials DataFrame (SessionStore.trials); got "
            f"{type(trials).__name__}"
        )
    absent = [c for c in _REQUIRED if c not in trials.columns]
    if absent:
        raise InvalidInputError(
            f"the trials table lacks column(s) {', '.join(absent)}; expected the columns of "
            "SessionStore.trials"
        )
    planned = {t.index: t for t in plan.trials}
    rows: list[_Row] = []
    seen: set[int] = set()
    records: list[dict[str, Any]] = [
        {str(k): v for k, v in rec.items()} for rec in trials[list(_REQUIRED)].to_dict("records")
    ]
    for rec in records:
        index = int(rec["trial_index"])
        if index in seen:
            raise InvalidInputError(f"trial {index} appears twice in the trials table")
        seen.add(index)
        trial = planned.get(index)
        if trial is None or (trial.policy, trial.scene, trial.attempt) != (
            str(rec["policy"]),
            int(rec["scene"]),
            int(rec["attempt"]),
        ):
            raise InvalidInputError(
                f"trial {index} ({rec['policy']}, scene {rec['scene']}, attempt "
                f"{rec['attempt']}) is not "
                f"trial {index} of session {plan.session_id!r}'s plan; pass the trials of this "
                "session"
            )
        status = str(rec["status"])
        if status not in _STATUSES:
            raise InvalidInputError(
                f"trial {index} has status {status!r}; expected one of {', '.join(_STATUSES)}"
            )
        score = None if _missing(rec["score"]) else int(rec["score"])
        success: bool | None = None
        if status == "scored":
            if score is not None:
                success = plan.rubric.is_success(score)  # the rubric's threshold decides
            elif not _missing(rec["success"]):
                success = bool(rec["success"])
        rows.append(
            _Row(
                index=index,
                scene=trial.scene,
                attempt=trial.attempt,
                policy=trial.policy,
                status=status,
                score=score if status == "scored" else None,
                success=success,
                assisted=bool(rec["assisted"]) and status == "scored",
                scored_at=None if _missing(rec["scored_at"]) else str(rec["scored_at"]),
            )
        )
    absent_trials = sorted(set(planned) - seen)
    if absent_trials:
        raise InvalidInputError(
            f"the trials table lacks {len(absent_trials)} planned trial(s) (first: "
            f"{absent_trials[0]}); pass one row per planned trial (SessionStore.trials)"
        )
    return sorted(rows, key=lambda r: r.index)


def _cluster_rate(k: Sequence[int], n: Sequence[int], confidence: float) -> Interval:
    """A success rate over scenes (clusters): :func:`evalband.stats.cluster_proportion_interval`."""
    from evalband.stats import cluster_proportion_interval

    return cluster_proportion_interval(list(k), list(n), confidence=confidence)


def _rate_by_scene(rows: Sequence[_Row], confidence: float) -> Interval | None:
    """The unaided success rate of ``rows`` with the scene as the cluster (None without any)."""
    k: dict[int, int] = {}
    n: dict[int, int] = {}
    for r in rows:
        if r.unaided:
            n[r.scene] = n.get(r.scene, 0) + 1
            k[r.scene] = k.get(r.scene, 0) + bool(r.success)
    if not n:
        return None
    return _cluster_rate([k[s] for s in sorted(n)], [n[s] for s in sorted(n)], confidence)


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


# --------------------------------------------------------------------------- pieces


def _progress(plan: SessionPlan, rows: Sequence[_Row]) -> Progress:
    scored = [r for r in rows if r.status == "scored"]
    times = sorted((parse_scored_at(r.scored_at), r.scored_at) for r in scored if r.scored_at)
    complete = sum(
        1
        for s in range(1, plan.scenes + 1)
        if all(r.status == "scored" for r in rows if r.scene == s)
    )
    return Progress(
        planned=len(rows),
        scored=len(scored),
        skipped=sum(r.status == "skipped" for r in rows),
        pending=sum(r.status == "pending" for r in rows),
        assisted=sum(r.assisted for r in rows),
        scenes=plan.scenes,
        scenes_complete=complete,
        first_scored_at=times[0][1] if times else None,
        last_scored_at=times[-1][1] if times else None,
    )


def _policy_results(
    plan: SessionPlan, rows: Sequence[_Row], confidence: float
) -> tuple[PolicyResult, ...]:
    out = []
    for policy in plan.policies:
        mine = [r for r in rows if r.policy == policy]
        unaided = [r for r in mine if r.unaided]
        wins = sum(bool(r.success) for r in unaided)
        scores = {level: 0 for level in plan.rubric.levels}
        with_score = [r.score for r in unaided if r.score is not None]
        for s in with_score:
            scores[s] = scores.get(s, 0) + 1
        out.append(
            PolicyResult(
                policy=policy,
                code=plan.codes.get(policy, policy),
                positive_control=policy == plan.positive_control,
                planned=len(mine),
                scored=sum(r.status == "scored" for r in mine),
                skipped=sum(r.status == "skipped" for r in mine),
                pending=sum(r.status == "pending" for r in mine),
                assisted=sum(r.assisted for r in mine),
                unaided=len(unaided),
                successes=wins,
                rate=_rate_by_scene(unaided, confidence),
                scores=scores,
                mean_score=(sum(with_score) / len(with_score)) if with_score else None,
            )
        )
    return tuple(out)


def _flip_floor(plan: SessionPlan, rows: Sequence[_Row], confidence: float) -> FlipFloor | None:
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


def _cumulative(
    plan: SessionPlan, rows: Sequence[_Row], confidence: float
) -> tuple[CumulativeSeries, ...]:
    last = max((r.scene for r in rows if r.status != "pending"), default=0)
    out = []
    for policy in plan.policies:
        mine = [r for r in rows if r.policy == policy and r.unaided]
        points = []
        for scene in range(1, last + 1):
            upto = [r for r in mine if r.scene <= scene]
            k = sum(bool(r.success) for r in upto)
            points.append(CumulativePoint(scene, k, len(upto), _rate_by_scene(upto, confidence)))
        out.append(CumulativeSeries(policy, tuple(points)))
    return tuple(out)


@dataclass(frozen=True)
class _Raw:
    """A comparison before multiplicity correction: its test, and its interval at any level."""

    name: str
    kind: str
    grouping: str | None
    a: str
    b: str
    members_a: tuple[str, ...]
    members_b: tuple[str, ...]
    planned: bool
    family: str
    pairing: str
    rate_a: Interval
    rate_b: Interval
    counts: dict[str, int]
    test: TestResult
    interval_at: Callable[[float], Difference]


def _scene_counts(
    rows: Sequence[_Row], members: Sequence[str], scenes: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Unaided successes and trials of ``members`` in each of ``scenes``."""
    k = dict.fromkeys(scenes, 0)
    n = dict.fromkeys(scenes, 0)
    for r in rows:
        if r.unaided and r.policy in members and r.scene in n:
            n[r.scene] += 1
            k[r.scene] += bool(r.success)
    return [k[s] for s in scenes], [n[s] for s in scenes]


_Compared = tuple[dict[str, int], TestResult, Callable[[float], Difference], Interval, Interval]


def _paired(a: str, b: str, rows: Sequence[_Row], confidence: float) -> _Compared | None:
    """Attempt k of A against attempt k of B in the same scene (both unaided), by scene."""
    from evalband.stats import clustered_paired_interval, clustered_paired_test

    outcome = {(r.policy, r.scene, r.attempt): bool(r.success) for r in rows if r.unaided}
    per_scene: dict[int, list[int]] = {}
    for (policy, scene, attempt), sa in outcome.items():
        if policy != a or (b, scene, attempt) not in outcome:
            continue
        sb = outcome[(b, scene, attempt)]
        cell = per_scene.setdefault(scene, [0, 0, 0, 0])  # both, a_only, b_only, neither
        cell[0 if sa and sb else 1 if sa else 2 if sb else 3] += 1
    if not per_scene:
        return None
    cells = [per_scene[s] for s in sorted(per_scene)]
    both, a_only, b_only, neither = (sum(c[i] for c in cells) for i in range(4))
    counts = {"both": both, "a_only": a_only, "b_only": b_only, "neither": neither,
              "scenes": len(cells)}
    b_s = [c[1] for c in cells]
    c_s = [c[2] for c in cells]
    n_s = [sum(c) for c in cells]
    test = clustered_paired_test(b_s, c_s, n_s)

    def interval_at(level: float) -> Difference:
        return clustered_paired_interval(b_s, c_s, n_s, confidence=level)

    return (
        counts,
        test,
        interval_at,
        _cluster_rate([c[0] + c[1] for c in cells], n_s, confidence),
        _cluster_rate([c[0] + c[2] for c in cells], n_s, confidence),
    )


def _pooled(grouping: Grouping, rows: Sequence[_Row], confidence: float) -> _Compared | None:
    """Two groups of policies per scene: the scene is the unit (sign-flip over scenes)."""
    from evalband.stats import clustered_grouped_interval, clustered_grouped_test

    scenes = sorted({r.scene for r in rows if r.unaided})
    ka, na = _scene_counts(rows, grouping.members[0], scenes)
    kb, nb = _scene_counts(rows, grouping.members[1], scenes)
    both = [i for i, (x, y) in enumerate(zip(na, nb, strict=True)) if x and y]
    if not both:
        return None
    ka, na, kb, nb = ([v[i] for i in both] for v in (ka, na, kb, nb))
    counts = {"k_a": sum(ka), "n_a": sum(na), "k_b": sum(kb), "n_b": sum(nb),
              "scenes": len(both)}
    test = clustered_grouped_test(ka, na, kb, nb)

    def interval_at(level: float) -> Difference:
        return clustered_grouped_interval(ka, na, kb, nb, confidence=level)

    return (
        counts,
        test,
        interval_at,
        _cluster_rate(ka, na, confidence),
        _cluster_rate(kb, nb, confidence),
    )


def _check_policies(plan: SessionPlan, named: set[str], what: str) -> None:
    unknown = sorted(named - set(plan.policies))
    if unknown:
        raise InvalidInputError(
            f"{what} names {', '.join(unknown)}, not among the policies of session "
            f"{plan.session_id!r} ({', '.join(plan.policies)})"
        )


def _prereg_use(plan: SessionPlan, prereg: Preregistration, progress: Progress) -> PreregUse:
    planned = tuple(f"{a} vs {b}" for a, b in prereg.comparisons) + tuple(
        g.title for g in prereg.groupings
    )
    if prereg.locked_at is None:
        return PreregUse(
            prereg.name,
            prereg.sha256,
            None,
            False,
            "it was never locked (evalband prereg lock)",
            planned,
        )
    locked = parse_scored_at(prereg.locked_at)
    first = progress.first_scored_at
    if first is None:
        return PreregUse(
            prereg.name,
            prereg.sha256,
            prereg.locked_at,
            True,
            f"locked at {prereg.locked_at}, before any scored trial",
            planned,
        )
    if locked < parse_scored_at(first):
        return PreregUse(
            prereg.name,
            prereg.sha256,
            prereg.locked_at,
            True,
            f"locked at {prereg.locked_at}, before the first scored trial ({first})",
            planned,
        )
    return PreregUse(
        prereg.name,
        prereg.sha256,
        prereg.locked_at,
        False,
        f"locked at {prereg.locked_at}, AFTER the first scored trial ({first}): a plan "
        "written after seeing data is not a pre-registration, so its comparisons are "
        "exploratory too",
        planned,
    )


def _comparisons(
    plan: SessionPlan,
    rows: Sequence[_Row],
    prereg: Preregistration | None,
    counts: bool,
    extra: Sequence[Grouping],
    confidence: float,
) -> tuple[SessionComparison, ...]:
    from evalband.stats import holm_levels

    planned_pairs = list(prereg.comparisons) if prereg else []
    planned_keys = {frozenset(p) for p in planned_pairs}
    pairs: list[tuple[str, str, bool]] = [(a, b, True) for a, b in planned_pairs]
    for i, a in enumerate(plan.policies):
        for b in plan.policies[i + 1 :]:
            if frozenset((a, b)) not in planned_keys:
                pairs.append((a, b, False))
    planned_groups = list(prereg.groupings) if prereg else []
    groups = [(g, True) for g in planned_groups] + [(g, False) for g in extra]
    raws: list[_Raw] = []
    for a, b, is_planned in pairs:
        got = _paired(a, b, rows, confidence)
        if got is None:
            continue
        cnt, test, interval_at, ra, rb = got
        raws.append(
            _Raw(
                f"{a} vs {b}",
                "policies",
                None,
                a,
                b,
                (a,),
                (b,),
                is_planned,
                CONFIRMATORY if is_planned and counts else EXPLORATORY,
                "paired by scene and attempt; the scene is the unit (sign-flip over scenes)",
                ra,
                rb,
                cnt,
                test,
                interval_at,
            )
        )
    for g, is_planned in groups:
        got_g = _pooled(g, rows, confidence)
        if got_g is None:
            continue
        cnt, test, interval_at, ra, rb = got_g
        raws.append(
            _Raw(
                g.title,
                "grouping",
                g.name,
                g.labels[0],
                g.labels[1],
                g.members[0],
                g.members[1],
                is_planned,
                CONFIRMATORY if is_planned and counts else EXPLORATORY,
                "pooled within each group, scene by scene (sign-flip over scenes)",
                ra,
                rb,
                cnt,
                test,
                interval_at,
            )
        )
    alpha = 1.0 - confidence
    adjusted: dict[int, float] = {}
    levels: dict[int, float] = {}
    rejected: dict[int, bool] = {}
    sizes: dict[str, int] = {}
    for family in (CONFIRMATORY, EXPLORATORY):
        idx = [i for i, r in enumerate(raws) if r.family == family]
        sizes[family] = len(idx)
        if idx:
            adj, rej, lev = holm_levels([raws[i].test.p_value for i in idx], alpha)
            for k, i in enumerate(idx):
                adjusted[i], rejected[i], levels[i] = float(adj[k]), bool(rej[k]), float(lev[k])
    out = []
    for i, r in enumerate(raws):
        p = adjusted[i]
        significant = rejected[i]
        # the interval inverts the printed test at the level of the Holm step that decided it:
        # it excludes 0 exactly when the comparison is significant
        d = r.interval_at(1.0 - levels[i])
        band = (
            f"{_points(d.estimate)} points [{_points(d.low)}, {_points(d.high)}] "
            f"({100 * d.confidence:.4g}% Holm-step interval)"
        )
        if significant and d.estimate > 0:
            words = f"{r.a} above {r.b} by {band}, Holm p = {p:.3g}"
        elif significant:
            flipped = (
                f"{_points(-d.estimate)} points [{_points(-d.high)}, {_points(-d.low)}] "
                f"({100 * d.confidence:.4g}% Holm-step interval)"
            )
            words = f"{r.b} above {r.a} by {flipped}, Holm p = {p:.3g}"
        else:
            words = f"{r.name}: {band}, Holm p = {p:.3g}: not established at this n"
        out.append(
            SessionComparison(
                name=r.name,
                kind=r.kind,
                grouping=r.grouping,
                a=r.a,
                b=r.b,
                members_a=r.members_a,
                members_b=r.members_b,
                planned=r.planned,
                label=r.family,
                pairing=r.pairing,
                rate_a=r.rate_a,
                rate_b=r.rate_b,
                counts=r.counts,
                difference=d,
                test=r.test,
                p_holm=p,
                family_size=sizes[r.family],
                significant=significant,
                sentence=words,
            )
        )
    out.sort(key=lambda c: c.label != CONFIRMATORY)  # stable: confirmatory first
    return tuple(out)


def _control(
    plan: SessionPlan,
    results: Sequence[PolicyResult],
    comparisons: Sequence[SessionComparison],
    floor: float | None,
    floor_source: str | None,
) -> ControlCheck | None:
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
            "no data",
            (),
            (),
            f"positive control {control} has no unaided trial yet",
        )
    beaten = []
    for c in comparisons:
        if c.kind != "policies" or control not in (c.a, c.b) or not c.significant:
            continue
        other = c.b if c.a == control else c.a
        control_ahead = c.difference.estimate > 0 if c.a == control else c.difference.estimate < 0
        if not control_ahead:
            beaten.append(other)
    reasons: list[str] = []
    statuses: list[str] = []
    if floor is not None:
        where = f"the floor {100 * floor:.0f}% ({floor_source})"
        if rate.high < floor:
            statuses.append("misbehaving")
            reasons.append(
                f"its whole band [{100 * rate.low:.1f}, {100 * rate.high:.1f}] lies below {where}"
            )
        elif rate.low >= floor:
            statuses.append("ok")
            reasons.append(f"its band lies at or above {where}")
        else:
            statuses.append("unclear")
            reasons.append(
                f"its band [{100 * rate.low:.1f}, {100 * rate.high:.1f}] straddles {where}"
            )
    if beaten:
        statuses.append("misbehaving")
        reasons.append(f"significantly below {', '.join(beaten)} (Holm)")
    else:
        best = max((r.rate.estimate for r in results if r.rate is not None), default=0.0)
        if rate.estimate >= best:
            statuses.append("ok")
            reasons.append("it has the highest rate of the session")
        else:
            above = [
                r.policy for r in results if r.rate is not None and r.rate.estimate > rate.estimate
            ]
            # with a stated floor the floor decides; without one the control should lead
            if floor is None:
                statuses.append("unclear")
            reasons.append(f"{', '.join(above)} scored higher, not significantly")
    status = (
        "misbehaving" if "misbehaving" in statuses else "unclear" if "unclear" in statuses else "ok"
    )
    head = (
        f"positive control {control}: {100 * rate.estimate:.1f}% "
        f"[{100 * rate.low:.1f}, {100 * rate.high:.1f}] of {mine.unaided}"
    )
    if status == "misbehaving":
        sentence = (
            f"{head} MISBEHAVES: {'; '.join(reasons)}. Suspect the instrument and the "
            "rig before inventing science (seed 004)"
        )
    elif status == "unclear":
        sentence = f"{head}: unclear: {'; '.join(reasons)}"
    else:
        sentence = f"{head}: behaves as expected: {'; '.join(reasons)}"
    return ControlCheck(
        control, rate, floor, floor_source, status, tuple(beaten), tuple(reasons), sentence
    )


def _clip_discordant(psi: float, p_a: float, p_b: float) -> float:
    gap = abs(p_a - p_b)
    upper = min(p_a + p_b, 2.0 - p_a - p_b)
    return min(max(psi, gap), upper)


def _prices(
    results: Sequence[PolicyResult],
    comparisons: Sequence[SessionComparison],
    flip: FlipFloor | None,
    family: int,
) -> PriceList | None:
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
    paired = [c for c in comparisons if c.kind == "policies"]
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


def _price_family(plan: SessionPlan, comparisons: Sequence[SessionComparison]) -> int:
    """Comparisons a future session's price is corrected for: the planned ones, else every pair."""
    planned = sum(c.label == CONFIRMATORY for c in comparisons)
    if planned:
        return planned
    return max(1, len(plan.policies) * (len(plan.policies) - 1) // 2)


def _notes(
    plan: SessionPlan,
    progress: Progress,
    results: Sequence[PolicyResult],
    prereg: PreregUse | None,
) -> tuple[str, ...]:
    notes = []
    if progress.pending:
        notes.append(
            f"session in progress: {progress.pending} of {progress.planned} trials pending; "
            f"{progress.scenes_complete} of {progress.scenes} scenes complete"
        )
        if plan.blind:
            notes.append(
                "the session is blinded and unfinished: these per-policy rates unblind whoever "
                "reads them; the operator should not"
            )
    if progress.skipped:
        notes.append(f"{progress.skipped} skipped trial(s) are counted apart, never as failures")
    if progress.assisted:
        notes.append(
            f"{progress.assisted} assisted trial(s) are reported and left out of unaided success"
        )
    ns = {r.unaided for r in results}
    if len(ns) > 1:
        notes.append(
            "policies have different numbers of unaided trials "
            f"({min(ns)}-{max(ns)}); comparisons use matched pairs only"
        )
    if prereg is None:
        notes.append(
            f"no pre-registration: every comparison is {EXPLORATORY}; lock the next plan before "
            "the data with evalband prereg lock PLAN.yaml"
        )
    elif prereg.counts:
        notes.append(
            f"pre-registration {prereg.name} ({prereg.sha256[:12]}) {prereg.reason}: "
            f"its comparisons are {CONFIRMATORY}, every other one is {EXPLORATORY}"
        )
    else:
        notes.append(
            f"pre-registration {prereg.name} does not count: {prereg.reason}; every "
            f"comparison is {EXPLORATORY}"
        )
    return tuple(notes)


# --------------------------------------------------------------------------- entry point


def analyze_session(
    plan: SessionPlan,
    trials: pd.DataFrame,
    *,
    prereg: Preregistration | None = None,
    confidence: float = 0.95,
    groupings: Sequence[Grouping] = (),
    control_floor: float | None = None,
) -> SessionAnalysis:
    r"""Analyse one session: flip floor, control, rates, comparisons, cumulative, prices.

    **Success.** A scored trial succeeds when its score is at least the rubric's
    ``success_at``. Skipped trials are counted apart and never as failures; assisted trials
    are counted and left out of *unaided* success, the rate every statistic uses. Attempts
    on one scene share it, so rates get bands with the scene as the cluster
    (:func:`evalband.stats.cluster_proportion_interval`: Wilson at the Korn-Graubard
    effective sample size, Student's t on scenes - 1 degrees of freedom).

    **Flip floor.** Every pair of unaided attempts of one policy in one scene is a
    same-state pair; the share that disagree is the flip rate, its band with the scene as the
    cluster (every policy's pairs on a scene share it), computed by
    :func:`evalband.analysis._noise.flip_rate_of_groups` (the same code as
    :func:`~evalband.analysis.noise_floor`), also after each scene (``by_scene``) and per
    policy. ``independent_reference`` is what independent attempts would give,
    :math:`\sum_i w_i 2p_i(1-p_i)` weighted by each policy's pairs: a flip rate well below it
    means attempts in a scene share a fate (the scene matters), one near it means each attempt
    is a fresh coin.

    **Comparisons: the scene is the unit.** Two policies are matched attempt :math:`k`
    against attempt :math:`k` in the same scene (both unaided); the :math:`K` pairs of a
    scene share it, so the test counts scenes: the net discordance per scene
    :math:`x_s = b_s - c_s` goes to the exact sign-flip test over scenes
    (:func:`evalband.stats.clustered_paired_test`: the labels of equal policies are
    exchangeable inside a shuffled block, so every :math:`x_s` is symmetric about 0 whatever
    the attempts share; Durkalski et al. 2003's clustered McNemar test in exact form), whose
    p-value is guarded by McNemar's asymptotic test (the larger is printed). Groupings
    (pooled policies) compare the per-scene difference of the two groups' rates the same way
    (:func:`evalband.stats.clustered_grouped_test`). Each interval inverts the printed test
    (:func:`evalband.stats.clustered_paired_interval`,
    :func:`evalband.stats.clustered_grouped_interval`) at the level of the Holm step that
    decided the comparison (:func:`evalband.stats.holm_levels`), so it excludes 0 exactly
    when the Holm-adjusted p-value is at most ``1 - confidence``.

    **Confirmatory vs exploratory.** With a pre-registration locked *before* the session's
    first scored trial, its comparisons and groupings are :data:`CONFIRMATORY`; every other
    comparison (every pair, when there is none) is :data:`EXPLORATORY` ("exploratory — a
    hypothesis, not a finding", seed 004). Holm (1979, *Scand. J. Statist.* 6:65-70;
    :func:`evalband.stats.holm`) adjusts the p-values within each family separately, so
    exploring never dilutes the planned tests and the planned tests never launder the
    explored ones.

    **Positive control.** When the plan names one, it must not be significantly below any
    other policy (Holm, from the comparisons above) and, when a floor is stated
    (``control_floor``, else the pre-registration's ``positive_control_floor``), its
    band must not lie wholly below the floor; otherwise it *misbehaves* and the reading is:
    suspect the instrument and the rig first. Its status is ``"ok"`` when its band lies at or
    above the floor (or, without a floor, when it has the session's highest rate), and
    ``"unclear"`` when the band straddles the floor (or, without a floor, when another policy
    scored higher but not significantly).

    **Price list.** :func:`evalband.stats.price_list` at the session's pooled unaided rate for
    20-, 15-, 10- and 5-point gaps (80% power, two-sided 0.05; the seed's two-proportion
    table), plus the price of this session's own test in scenes with one attempt per policy
    (:func:`evalband.stats.clustered_paired_sample_size`: exact power by enumeration, at
    ``alpha / m`` for the ``m`` planned comparisons, else every pair) at this session's
    observed discordant share between policies and at the flip floor (two equal policies
    disagree that often on matched scenes: the cheapest a matched design on this rig can
    be); and :func:`evalband.stats.minimum_detectable_difference` at the fewest unaided
    trials per policy.

    Args:
        plan: the session's plan.
        trials: its trials table (``SessionStore.trials``), one row per planned trial.
        prereg: the pre-registration to read (see ``evalband.session.prereg_for_session``).
        confidence: two-sided level of every band; Holm's family level is ``1 - confidence``.
        groupings: post-hoc groupings to compare (always exploratory).
        control_floor: the rate the positive control must reach (overrides the
            pre-registration's).

    Returns:
        A :class:`SessionAnalysis`.

    Raises:
        InvalidInputError: a trials table that does not belong to the plan, or a
            pre-registration or grouping naming policies the session does not have, or a
            pre-registration for another session.
        InvalidParameterError: ``confidence`` or ``control_floor`` out of range.

    >>> from evalband.session import plan_session
    >>> from evalband.session._simulate import simulate_session
    >>> plan = plan_session(["A", "B"], scenes=20, attempts=2, seed=4, session_id="demo")
    >>> trials = simulate_session(plan, success_prob={"A": 0.6, "B": 0.4}, flip_prob=0.3,
    ...                           seed=2)
    >>> result = analyze_session(plan, trials)
    >>> result.flip.pooled.pairs, result.comparisons[0].label
    (40, 'exploratory — a hypothesis, not a finding')
    >>> [row.gap for row in result.prices.entries]
    [0.2, 0.15, 0.1, 0.05]
    """
    level = check_confidence(confidence)
    if control_floor is not None and not (
        isinstance(control_floor, int | float)
        and not isinstance(control_floor, bool)
        and 0.0 < float(control_floor) <= 1.0
        and math.isfinite(float(control_floor))
    ):
        raise InvalidParameterError(
            f"control_floor must be a success rate in (0, 1]; got {control_floor!r}"
        )
    rows = _rows(plan, trials)
    extra = tuple(groupings)
    for g in extra:
        if not isinstance(g, Grouping):
            raise InvalidInputError(f"groupings must be Grouping objects; got {g!r}")
        _check_policies(plan, set(g.members[0]) | set(g.members[1]), f"grouping {g.title!r}")
    progress = _progress(plan, rows)
    use: PreregUse | None = None
    if prereg is not None:
        if prereg.session_id is not None and prereg.session_id != plan.session_id:
            raise InvalidInputError(
                f"pre-registration {prereg.name!r} is for session {prereg.session_id!r}, not "
                f"{plan.session_id!r}; a plan counts for the session it names"
            )
        _check_policies(plan, prereg.policies(), f"pre-registration {prereg.name!r}")
        use = _prereg_use(plan, prereg, progress)
    results = _policy_results(plan, rows, level)
    flip = _flip_floor(plan, rows, level)
    comparisons = _comparisons(plan, rows, prereg, bool(use and use.counts), extra, level)
    floor, source = None, None
    if control_floor is not None:
        floor, source = float(control_floor), "given"
    elif prereg is not None and prereg.positive_control_floor is not None:
        floor, source = prereg.positive_control_floor, f"pre-registration {prereg.name}"
    return SessionAnalysis(
        session_id=plan.session_id,
        confidence=level,
        rubric=plan.rubric.as_dict(),
        blind=plan.blind,
        positive_control=plan.positive_control,
        progress=progress,
        flip=flip,
        control=_control(plan, results, comparisons, floor, source),
        policies=results,
        comparisons=comparisons,
        cumulative=_cumulative(plan, rows, level),
        prices=_prices(results, comparisons, flip, _price_family(plan, comparisons)),
        prereg=use,
        notes=_notes(plan, progress, results, use),
    )
