"""``session run --until-decided``: stop scheduling blocks once the planned comparisons are decided.

A look is taken only at a block boundary (every trial of every earlier scene recorded), so a
stopped session holds complete blocks. Each pre-registered comparison ``A vs B`` pairs A's
and B's trials by (scene, attempt); a pair counts when both trials were scored (a success is
an unaided one). The pairs go through the anytime-valid paired test of
:mod:`evalband.stats._sequential` (the likelihood ratio of a design drop on the discordant
pairs, threshold exact for the session's planned pairs ``scenes x attempts``), each direction
of each of the ``m`` planned comparisons at ``alpha / (2 m)`` (e-value Bonferroni). Under the
sharp null -- on every scene A and B succeed with the same probability, trials independent
given the scene -- a discordant pair is a fair coin whatever came before, so the family-wise
error holds however many blocks are looked at. The session stops when every planned comparison
is decided: one policy better, or futile (the evidence cannot reach the boundary in time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalband.session._plan import SessionPlan
    from evalband.session._store import TrialRecord

__all__ = ["SessionLook", "blocks_complete", "session_look", "stopped_early"]


@dataclass(frozen=True)
class SessionLook:
    """One look at a session's planned comparisons.

    Attributes:
        scenes_done: complete blocks looked at.
        decided: every planned comparison is decided (stop scheduling blocks).
        comparisons: per comparison ``{"a", "b", "pairs", "decision", "statistic",
            "boundary"}`` (``decision``: ``"A better"``-style text, ``"futile"`` or
            ``"continue"``; the statistic and boundary are log e-values).
    """

    scenes_done: int
    decided: bool
    comparisons: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)

    def sentence(self, plan: SessionPlan) -> str:
        """What the operator is told; no policy names while the session is blinded."""
        head = f"decided after {self.scenes_done} of {plan.scenes} scenes"
        if plan.blind:
            return head + ": the pre-registered comparisons are settled (see session analyze)"
        return head + ": " + "; ".join(c["decision"] for c in self.comparisons)


def blocks_complete(plan: SessionPlan, records: Sequence[TrialRecord]) -> int:
    """How many scenes, from the first, have every trial recorded.

    >>> from evalband.session._plan import plan_session
    >>> blocks_complete(plan_session(["A", "B"], scenes=2, attempts=1, seed=0,
    ...                              session_id="s"), [])
    0
    """
    done = {r.trial_index for r in records}
    scenes = 0
    for scene in range(1, plan.scenes + 1):
        if not all(t.index in done for t in plan.block(scene)):
            break
        scenes = scene
    return scenes


def session_look(
    plan: SessionPlan, records: Sequence[TrialRecord], comparisons: Sequence[tuple[str, str]],
    *, alpha: float = 0.05, effect: float = 0.10, discordant: float | None = None,
) -> SessionLook:
    """The planned comparisons on the complete blocks so far.

    Args:
        plan: the session's plan.
        records: its confirmed trials.
        comparisons: the pre-registered ``(A, B)`` pairs.
        alpha: the family-wise error over the comparisons (two-sided).
        effect: the design difference the test is tuned to.
        discordant: the assumed share of pairs that disagree (None: the test's default).

    >>> from evalband.session._plan import plan_session
    >>> plan = plan_session(["A", "B"], scenes=4, attempts=1, seed=0, session_id="s")
    >>> session_look(plan, [], [("A", "B")]).decided
    False
    """
    import math

    from evalband.stats import sequential_paired_test
    from evalband.stats._sequential import design_theta

    scenes = blocks_complete(plan, records)
    outcome = {r.trial_index: (bool(r.success) and not r.assisted) for r in records
               if r.status == "scored"}
    by_key = {(t.policy, t.scene, t.attempt): t.index for t in plan.trials}
    m = max(1, len(comparisons))
    rows = []
    for a, b in comparisons:
        a_only = b_only = pairs = 0
        for scene in range(1, scenes + 1):
            for attempt in range(1, plan.attempts + 1):
                ia, ib = by_key.get((a, scene, attempt)), by_key.get((b, scene, attempt))
                if ia not in outcome or ib not in outcome:
                    continue
                pairs += 1
                a_only += outcome[ia] and not outcome[ib]
                b_only += outcome[ib] and not outcome[ia]
        test = sequential_paired_test(b_only, a_only, alpha_side=alpha / (2 * m),
                                      theta=design_theta(effect, discordant),
                                      horizon=plan.scenes * plan.attempts)
        decision = {"regressed": f"{b} better than {a}", "improved": f"{a} better than {b}",
                    "futile": f"{a} vs {b}: futile"}.get(test.decision, "continue")
        rows.append({"a": a, "b": b, "pairs": pairs, "decision": decision,
                     "statistic": math.log(max(test.e_regression, test.e_improvement, 1e-300)),
                     "boundary": math.log(test.threshold)})
    decided = bool(rows) and all(r["decision"] != "continue" for r in rows)
    return SessionLook(scenes, decided, rows)


def stopped_early(
    plan: SessionPlan, records: Sequence[TrialRecord], comparisons: Sequence[tuple[str, str]],
    *, alpha: float = 0.05, effect: float = 0.10, discordant: float | None = None,
) -> str | None:
    """The sentence for a session that ended where the stop rule decided, else None.

    A session stopped by ``session run --until-decided`` holds exactly its first complete
    blocks, fewer than planned, and the stop rule (:func:`session_look`) decides on them and
    not on one block fewer. (The store does not say who stopped the session; the sentence says
    what holds either way: it ended when its pre-registered comparisons were decided.)

    >>> from evalband.session._plan import plan_session
    >>> plan = plan_session(["A", "B"], scenes=4, attempts=1, seed=0, session_id="s")
    >>> stopped_early(plan, [], [("A", "B")]) is None
    True
    """
    if not comparisons:
        return None
    scenes = blocks_complete(plan, records)
    per_block = len(plan.block(1)) if plan.scenes else 0
    if not 0 < scenes < plan.scenes or len({r.trial_index for r in records}) != scenes * per_block:
        return None
    look = session_look(plan, records, comparisons, alpha=alpha, effect=effect,
                        discordant=discordant)
    if not look.decided:
        return None
    keep = {t.index for scene in range(1, scenes) for t in plan.block(scene)}
    if session_look(plan, [r for r in records if r.trial_index in keep], comparisons,
                    alpha=alpha, effect=effect, discordant=discordant).decided:
        return None  # decided a block earlier: the rule would have stopped there
    return (f"stopped early: {look.sentence(plan)} (the stop rule of session run "
            f"--until-decided at alpha {alpha:g}, tuned to a {100 * effect:g}-point "
            f"difference); the {plan.scenes - scenes} scene(s) left "
            "were never run, so the comparisons below read the complete blocks only")
