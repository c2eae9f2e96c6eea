"""A session's trials table as validated rows, and the rates read from them.

:func:`trial_rows` checks the trials table (``SessionStore.trials``) against the plan and
gives one :class:`Row` per planned trial; the per-policy results, the progress and the
cumulative success of :func:`~evalband.session.analyze_session` (and the rates that
:func:`~evalband.session.session_drift` compares) are read from these rows. A success rate
takes the scene as its cluster (the attempts of one scene share it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidInputError
from evalband.session._results import (
    CumulativePoint,
    CumulativeSeries,
    PolicyResult,
    Progress,
)
from evalband.stats import Interval

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session._plan import SessionPlan

__all__ = [
    "Row",
    "trial_rows",
    "parse_scored_at",
    "cluster_rate",
    "rate_by_scene",
    "scene_counts",
    "progress_of",
    "policy_results",
    "cumulative_success",
]

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
class Row:
    """One planned trial as recorded: who, where, and how it was scored (if it was)."""

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


def trial_rows(plan: SessionPlan, trials: pd.DataFrame) -> list[Row]:
    """Validate the trials table against the plan; one :class:`Row` per trial, in order.

    Raises:
        InvalidInputError: a table that is not this session's trials table.

    >>> from evalband.session import plan_session, simulate_session
    >>> plan = plan_session(["A", "B"], scenes=2, attempts=1, seed=1, session_id="d")
    >>> rows = trial_rows(plan, simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=1))
    >>> len(rows), rows[0].status
    (4, 'scored')
    """
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
    rows: list[Row] = []
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
            Row(
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


def cluster_rate(k: Sequence[int], n: Sequence[int], confidence: float) -> Interval:
    """A success rate over scenes (clusters): :func:`evalband.stats.cluster_proportion_interval`."""
    from evalband.stats import cluster_proportion_interval

    return cluster_proportion_interval(list(k), list(n), confidence=confidence)


def rate_by_scene(rows: Sequence[Row], confidence: float) -> Interval | None:
    """The unaided success rate of ``rows`` with the scene as the cluster (None without any)."""
    k: dict[int, int] = {}
    n: dict[int, int] = {}
    for r in rows:
        if r.unaided:
            n[r.scene] = n.get(r.scene, 0) + 1
            k[r.scene] = k.get(r.scene, 0) + bool(r.success)
    if not n:
        return None
    return cluster_rate([k[s] for s in sorted(n)], [n[s] for s in sorted(n)], confidence)




def scene_counts(
    rows: Sequence[Row], members: Sequence[str], scenes: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Unaided successes and trials of ``members`` in each of ``scenes``."""
    k = dict.fromkeys(scenes, 0)
    n = dict.fromkeys(scenes, 0)
    for r in rows:
        if r.unaided and r.policy in members and r.scene in n:
            n[r.scene] += 1
            k[r.scene] += bool(r.success)
    return [k[s] for s in scenes], [n[s] for s in scenes]



def progress_of(plan: SessionPlan, rows: Sequence[Row]) -> Progress:
    """Where the session stands: trial counts, complete scenes, first and last score times."""
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


def policy_results(
    plan: SessionPlan, rows: Sequence[Row], confidence: float
) -> tuple[PolicyResult, ...]:
    """Each policy's trials, unaided success with its band over scenes, and its scores."""
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
                rate=rate_by_scene(unaided, confidence),
                scores=scores,
                mean_score=(sum(with_score) / len(with_score)) if with_score else None,
            )
        )
    return tuple(out)



def cumulative_success(
    plan: SessionPlan, rows: Sequence[Row], confidence: float
) -> tuple[CumulativeSeries, ...]:
    """Each policy's unaided success over scenes ``1..s``, for every recorded scene ``s``."""
    last = max((r.scene for r in rows if r.status != "pending"), default=0)
    out = []
    for policy in plan.policies:
        mine = [r for r in rows if r.policy == policy and r.unaided]
        points = []
        for scene in range(1, last + 1):
            upto = [r for r in mine if r.scene <= scene]
            k = sum(bool(r.success) for r in upto)
            points.append(CumulativePoint(scene, k, len(upto), rate_by_scene(upto, confidence)))
        out.append(CumulativeSeries(policy, tuple(points)))
    return tuple(out)

