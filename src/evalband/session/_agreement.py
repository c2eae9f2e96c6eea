"""The instrument's own record in a robot session: suggestion vs operator, rehearsal, faults.

Seed 004: "We tried auto-scoring from the measured gripper width ... it was not reliable
enough to trust — edge grips read as empty, so the machine's reading stayed a suggestion and
the human stayed the judge." A robot session stores both, the machine's suggestion and the
confirmed score, with who confirmed it (``play["operator"]``: ``"human"``, or
``"suggested"`` in a rehearsal that accepted every suggestion). :func:`instrument_summary`
reads them back:

* the suggestion's **agreement with the operator** over the trials a person scored:
  Cohen's kappa and quadratic-weighted kappa with their intervals
  (:func:`evalband.stats.cohen_kappa`), the table, the overrides: the evidence for or
  against ever trusting auto-scoring;
* where the robot is a simulator that knows the answer (``sim-arm``), the suggestion's
  agreement with the **simulator's truth** (the block between both fingers and lifted);
* how many scores are **rehearsal** scores (the machine's, accepted unread): the analysis says
  so whenever they are in it, never silently mixing them with human judgments;
* the plays that were **aborted, failed or interrupted** (kept; their trials were replayed)
  and the trials whose policy could not keep the control rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalband.session._plan import SessionPlan
from evalband.session._store import TrialRecord

__all__ = ["InstrumentSummary", "instrument_summary"]


@dataclass(frozen=True)
class InstrumentSummary:
    """What the instrument did in a session (see the module docstring).

    Attributes:
        played: confirmed trials played on a robot.
        human: of them, scored by a person; ``rehearsal``: accepted suggestions.
        overrides: trials a person scored differently from the suggestion.
        table: suggestion (rows) x operator score (columns), counts over ``levels``.
        levels: the rubric's levels.
        agreement: Cohen's kappa, suggestion vs operator (``None`` without human scores).
        weighted: quadratic-weighted kappa, suggestion vs operator.
        truth: Cohen's kappa, suggestion vs the simulator's truth (``None`` on hardware).
        truth_weighted: quadratic-weighted kappa, suggestion vs the simulator's truth.
        stopped: plays stopped, by status (``aborted``, ``failed``, ``interrupted``).
        slow: trials whose policy could not keep the control rate.
        notes: sentences the analysis prints.
    """

    played: int
    human: int
    rehearsal: int
    overrides: int
    table: list[list[int]]
    levels: list[int]
    agreement: Any
    weighted: Any
    truth: Any
    truth_weighted: Any
    stopped: dict[str, int]
    slow: int
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        def kappa(value: Any) -> Any:
            return None if value is None else value.as_dict()

        return {
            "played": self.played, "human": self.human, "rehearsal": self.rehearsal,
            "overrides": self.overrides, "levels": list(self.levels),
            "table": [list(r) for r in self.table], "agreement": kappa(self.agreement),
            "weighted": kappa(self.weighted), "truth": kappa(self.truth),
            "truth_weighted": kappa(self.truth_weighted), "stopped": dict(self.stopped),
            "slow": self.slow, "notes": list(self.notes),
        }


def _pairs(records: Sequence[TrialRecord], key: str,
           operator: str | None) -> tuple[list[int], list[int]]:
    first: list[int] = []
    second: list[int] = []
    for r in records:
        play = r.play or {}
        if r.status != "scored" or play.get("suggestion") is None:
            continue
        if operator is not None and play.get("operator") != operator:
            continue
        other = r.score if key == "score" else play.get(key)
        if other is None:
            continue
        first.append(int(play["suggestion"]))
        second.append(int(other))
    return first, second


def instrument_summary(plan: SessionPlan, records: Sequence[TrialRecord],
                       attempts: Sequence[Any] = (), *,
                       confidence: float = 0.95) -> InstrumentSummary | None:
    """The instrument's record of a session (``None`` when no trial was played on a robot).

    ``attempts``: the session's plays (:meth:`AttemptLog.attempts`), for the stopped ones.
    """
    from evalband.stats._kappa import cohen_kappa, kappa_table

    played = [r for r in records if r.play]
    if not played and not attempts:
        return None
    levels = sorted(plan.rubric.levels)
    human = [r for r in played if (r.play or {}).get("operator") == "human"]
    rehearsal = [r for r in played if (r.play or {}).get("operator") == "suggested"]
    sugg, op = _pairs(records, "score", "human")
    overrides = sum(1 for a, b in zip(sugg, op, strict=True) if a != b)
    table = kappa_table(sugg, op, levels) if sugg else kappa_table([], [], levels)

    def kappas(a: list[int], b: list[int]) -> tuple[Any, Any]:
        if not a:
            return None, None
        t = kappa_table(a, b, levels)
        return (cohen_kappa(t, confidence=confidence),
                cohen_kappa(t, weights="quadratic", confidence=confidence))

    agreement, weighted = kappas(sugg, op)
    truth, truth_weighted = kappas(*_pairs(records, "truth", None))
    stopped: dict[str, int] = {}
    for attempt in attempts:
        if attempt.status in ("aborted", "failed", "interrupted"):
            stopped[attempt.status] = stopped.get(attempt.status, 0) + 1
    slow = sum(1 for r in played if (r.play or {}).get("warning"))
    notes: list[str] = []
    if rehearsal:
        notes.append(
            f"{len(rehearsal)} of {len(played)} played trials were scored by accepting the "
            "machine's suggestion in a rehearsal (--operator suggested), not by a person: "
            "their rates are the machine's reading of the trials"
            + ("; the rest are human scores, mixed in these rates" if human else ""))
    if played and not human:
        notes.append("the suggestion's agreement with the operator is not measured: no person "
                     "scored a played trial")
    if stopped:
        notes.append("plays stopped and replayed: " + ", ".join(
            f"{n} {status}" for status, n in sorted(stopped.items())))
    if slow:
        notes.append(f"{slow} trial(s) ran a policy that could not keep the control rate "
                     "(timing stored with each trial)")
    return InstrumentSummary(
        played=len(played), human=len(human), rehearsal=len(rehearsal), overrides=overrides,
        table=table.tolist(), levels=levels, agreement=agreement, weighted=weighted,
        truth=truth, truth_weighted=truth_weighted, stopped=stopped, slow=slow,
        notes=tuple(notes))
