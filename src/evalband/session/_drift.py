"""Rig drift between two sessions, read on the policies they share, before any model comparison.

Seed 004, level 4 of the noise hierarchy: "the rig drifts. Transport-drop failures appeared in
all sessions of one week and none of the earlier ones — across different models. Block edges
wear, gripper pads polish, screws loosen." Its protocol: "never compare across sessions without
a bridge arm" and a positive control in every session. :func:`session_drift` compares two
sessions on every policy both ran (the positive control of either, and any other *bridge*
policy): its unaided success in the second session minus the first. A significant change
(Holm across the shared policies) flags rig drift, and the report says so before it shows any
cross-session comparison of the models that ran in only one of the sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evalband._util.validate import check_choice, check_confidence
from evalband.analysis import SliceVerdict, decide
from evalband.analysis._verdicts import Decided, Standing
from evalband.errors import InvalidInputError
from evalband.session._results import EXPLORATORY, PolicyResult
from evalband.session._trials import Row, policy_results, scene_counts, trial_rows
from evalband.stats import Difference, Interval
from evalband.stats._types import TestResult

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session._plan import SessionPlan

__all__ = ["DRIFT_TESTS", "AnchorDrift", "CrossComparison", "DriftReport", "session_drift"]

#: Tests of a change in a shared policy's rate (independent sessions, so unpaired).
DRIFT_TESTS: tuple[str, ...] = ("fisher", "boschloo")


@dataclass(frozen=True)
class AnchorDrift:
    """One shared policy's rate in both sessions: the rig's drift, read on it.

    Attributes:
        policy: the shared policy.
        role: ``"positive control"`` (of either session) or ``"bridge"``.
        before: its unaided rate in the first session.
        after: its unaided rate in the second session.
        change: ``after - before`` with the interval that inverts ``test`` at the level of
            the Holm step that decided it (excludes 0 exactly when ``drifted``).
        test: the clustered score test (scenes as clusters, Rao-Scott design effects)
            joined at 0 with Fisher's exact or Boschloo's test on the raw counts: the larger
            p-value.
        p_holm: Holm-adjusted across the shared policies.
        drifted: ``p_holm <= 1 - confidence``.
        sentence: the check in words.
        verdict: the decided change ``after - before`` in the words of ``compare``
            (:class:`~evalband.analysis.SliceVerdict`): ``regressed`` when the shared policy
            fell significantly, ``improved`` when it rose, ``no detectable change`` otherwise;
            either direction is drift.
    """

    policy: str
    role: str
    before: Interval
    after: Interval
    change: Difference
    test: TestResult
    p_holm: float
    drifted: bool
    sentence: str
    verdict: SliceVerdict


@dataclass(frozen=True)
class CrossComparison:
    """A model of the first session against a model of the second (unmatched scenes).

    Attributes:
        a: a policy only the first session ran.
        b: a policy only the second session ran.
        rate_a: its rate in the first session.
        rate_b: its rate in the second session.
        difference: ``a - b``, the interval of ``test`` at its Holm step's level.
        test: the same test as the drift check.
        p_holm: Holm-adjusted across the cross-session comparisons.
        label: :attr:`~evalband.analysis.Standing.EXPLORATORY` (never pre-registered across
            sessions).
        caveat: what the difference carries besides the models (drift, other scenes).
        sentence: the comparison in words.
        verdict: the decided difference ``a - b`` (:class:`~evalband.analysis.SliceVerdict`).
    """

    a: str
    b: str
    rate_a: Interval
    rate_b: Interval
    difference: Difference
    test: TestResult
    p_holm: float
    label: Standing
    caveat: str
    sentence: str
    verdict: SliceVerdict


@dataclass(frozen=True)
class DriftReport:
    """Drift between two sessions, then (only then) their cross-session comparisons.

    Attributes:
        first: the first session's id (the reference).
        second: the second session's id.
        confidence: the level of every band; the drift family level is ``1 - confidence``.
        test: ``"fisher"`` or ``"boschloo"``.
        anchors: one check per shared policy with trials in both sessions.
        drifted: whether any shared policy changed significantly (the decision; each
            anchor's ``verdict`` says which way).
        sentence: the drift reading in words (read it before ``cross``).
        cross: cross-session comparisons of the policies each session ran alone.
        notes: rubric differences, shared policies without data.
    """

    first: str
    second: str
    confidence: float
    test: str
    anchors: tuple[AnchorDrift, ...]
    drifted: bool
    sentence: str
    cross: tuple[CrossComparison, ...]
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary: the drift verdict comes before the cross comparisons."""
        data: dict[str, Any] = asdict(self)
        ordered = {
            k: data[k]
            for k in (
                "first",
                "second",
                "confidence",
                "test",
                "drifted",
                "sentence",
                "anchors",
                "notes",
                "cross",
            )
        }
        for item, anchor in zip(ordered["anchors"], self.anchors, strict=True):
            item["change"] = anchor.change.as_dict()
        for item, cross in zip(ordered["cross"], self.cross, strict=True):
            item["difference"] = cross.difference.as_dict()
        return ordered


def _pct(rate: Interval) -> str:
    return f"{100 * rate.estimate:.1f}% [{100 * rate.low:.1f}, {100 * rate.high:.1f}] of {rate.n}"


def _band(d: Difference) -> str:
    return (
        f"{100 * d.estimate:+.1f} points [{100 * d.low:+.1f}, {100 * d.high:+.1f}] "
        f"({100 * d.confidence:.4g}% Holm-step interval)"
    )


def _test(name: str, k_a: int, n_a: int, k_b: int, n_b: int) -> TestResult:
    from evalband.stats import boschloo_test, fisher_exact_test

    if name == "boschloo":
        return boschloo_test(k_a, n_a, k_b, n_b)
    return fisher_exact_test(k_a, n_a, k_b, n_b)


def _by_name(results: Sequence[PolicyResult]) -> dict[str, PolicyResult]:
    return {r.policy: r for r in results}


def _shared_policies(plan_a: SessionPlan, plan_b: SessionPlan,
                     on: Sequence[str] | None) -> list[str]:
    """The policies both (different) sessions ran, narrowed to ``on`` when given."""
    if plan_a.session_id == plan_b.session_id:
        raise InvalidInputError(
            f"drift compares two different sessions; got {plan_a.session_id!r} twice"
        )
    shared = [p for p in plan_a.policies if p in plan_b.policies]
    if not shared:
        raise InvalidInputError(
            f"sessions {plan_a.session_id!r} ({', '.join(plan_a.policies)}) and "
            f"{plan_b.session_id!r} ({', '.join(plan_b.policies)}) share no policy: drift is "
            "read on a bridge arm or positive control run in both; plan the next session with "
            "one as its positive control"
        )
    if on is not None:
        chosen = [str(p) for p in on]
        missing = [p for p in chosen if p not in shared]
        if missing or not chosen:
            raise InvalidInputError(
                f"`on` must name policies both sessions ran ({', '.join(shared)}); got "
                f"{', '.join(missing) or 'none'}",
                parameters=("on",),
            )
        shared = [p for p in shared if p in chosen]
    return shared


def _anchor(id_a: str, id_b: str, policy: str, role: str, before: Interval, after: Interval,
            family: _Family, decided: Decided) -> AnchorDrift:
    """One shared policy's drift, as the Holm step decided it, with its line."""
    change, result = decided.difference, family.test_at(1.0 - decided.level)
    head = (
        f"{role} {policy}: {_pct(before)} in {id_a} -> {_pct(after)} in "
        f"{id_b}, change {_band(change)}, {result.method} Holm p = "
        f"{decided.p_adjusted:.3g}"
    )
    tail = (
        "RIG DRIFT: the same policy behaved differently"
        if decided.rejected
        else "no significant change (the band is how much drift could hide)"
    )
    return AnchorDrift(policy, role, before, after, change, result, decided.p_adjusted,
                       decided.rejected, f"{head}: {tail}", decided.verdict)


def _drift_sentence(id_a: str, id_b: str, anchors: Sequence[AnchorDrift],
                    drifted_on: Sequence[str], alpha: float) -> str:
    """The drift report's headline: which shared policies drifted, or that none did."""
    if drifted_on:
        return (
            f"RIG DRIFT between {id_a} and {id_b}: "
            f"{', '.join(drifted_on)} changed significantly (Holm, family level {alpha:.2g}). "
            "Suspect the rig (worn block edges, polished gripper pads, loose screws) or the "
            "protocol before comparing models across these sessions"
        )
    return (
        f"no significant drift between {id_a} and {id_b} on "
        f"{', '.join(a.policy for a in anchors)}; a drift inside the bands above could "
        "still hide at these n"
    )


def session_drift(
    plan_a: SessionPlan,
    trials_a: pd.DataFrame,
    plan_b: SessionPlan,
    trials_b: pd.DataFrame,
    *,
    on: Sequence[str] | None = None,
    confidence: float = 0.95,
    test: str = "fisher",
) -> DriftReport:
    """Compare two sessions on their shared policies; flag rig drift; then compare models.

    For every policy both sessions ran (or those in ``on``), its unaided success rate in
    session B minus session A is tested with the scene as the unit of dependence: each
    session's counts are divided by its design effect over scenes (Rao & Scott 1992,
    *Biometrics* 48:577-585) and the Miettinen-Nurminen (1985) score test is referred to
    Student's t (:func:`evalband.stats.clustered_diff_unpaired`). Its p-value at 0 is joined
    with that of an exact test on the raw counts, Fisher's (default,
    :func:`evalband.stats.fisher_exact_test`) or Boschloo's unconditional test
    (``test="boschloo"``, :func:`evalband.stats.boschloo_test`; more powerful, slow beyond
    ~100 trials a side): the larger of the two is reported. Holm
    (:func:`evalband.stats.holm_levels`) adjusts across the shared policies; a shared policy
    whose adjusted p-value is ``<= 1 - confidence`` flags **rig drift**: the same weights
    behaved differently, so the rig (or the protocol) changed between the sessions. Each
    change's interval inverts the same test at the level of the Holm step that decided it,
    so it excludes 0 exactly when the policy is flagged.

    Only then come the cross-session comparisons of the policies each session ran alone
    (session A's model minus session B's, unpaired, Holm across them), always labelled
    exploratory, and each carrying the measured drift as a caveat.

    Args:
        plan_a: the first (reference) session's plan.
        trials_a: its trials table.
        plan_b: the second session's plan.
        trials_b: its trials table.
        on: the shared policies to read drift on (default: every shared policy).
        confidence: two-sided level of every band.
        test: ``"fisher"`` or ``"boschloo"``.

    Returns:
        A :class:`DriftReport`.

    Raises:
        InvalidInputError: the sessions share no policy (no bridge arm, no common positive
            control), a policy in ``on`` that is not in both, no shared policy with unaided
            trials in both sessions, the same session twice, or trials that do not belong
            to their plan.
        InvalidParameterError: an unknown ``test`` or a ``confidence`` outside (0, 1).

    >>> from evalband.session import plan_session
    >>> from evalband.session._simulate import simulate_session
    >>> week1 = plan_session(["ctrl", "A"], scenes=30, attempts=2, seed=1, session_id="w1",
    ...                      positive_control="ctrl")
    >>> week2 = plan_session(["ctrl", "B"], scenes=30, attempts=2, seed=2, session_id="w2",
    ...                      positive_control="ctrl")
    >>> t1 = simulate_session(week1, success_prob={"ctrl": 0.8, "A": 0.5}, seed=1)
    >>> t2 = simulate_session(week2, success_prob={"ctrl": 0.3, "B": 0.5}, seed=2)
    >>> report = session_drift(week1, t1, week2, t2)
    >>> report.drifted, report.anchors[0].role, report.anchors[0].verdict.value
    (True, 'positive control', 'regressed')
    >>> report.cross[0].label.value
    'exploratory — a hypothesis, not a finding'
    """
    level = check_confidence(confidence)
    how = check_choice(test, "test", DRIFT_TESTS)
    shared = _shared_policies(plan_a, plan_b, on)
    rows_a, rows_b = trial_rows(plan_a, trials_a), trial_rows(plan_b, trials_b)
    res_a = _by_name(policy_results(plan_a, rows_a, level))
    res_b = _by_name(policy_results(plan_b, rows_b, level))
    controls = {plan_a.positive_control, plan_b.positive_control} - {None}
    notes: list[str] = []
    if plan_a.rubric != plan_b.rubric:
        notes.append(
            f"the sessions score on different rubrics ({plan_a.rubric.describe()} vs "
            f"{plan_b.rubric.describe()}): a change may be the rubric, not the rig"
        )
    raw = []
    for policy in shared:
        ra, rb = res_a[policy], res_b[policy]
        if ra.rate is None or rb.rate is None:
            notes.append(
                f"{policy} has no unaided trial in "
                f"{plan_a.session_id if ra.rate is None else plan_b.session_id}"
            )
            continue
        exact = _test(how, rb.successes, rb.unaided, ra.successes, ra.unaided)
        family = _Family(_by_scene(rows_b, policy), _by_scene(rows_a, policy), exact, level)
        role = "positive control" if policy in controls else "bridge"
        raw.append((policy, role, ra.rate, rb.rate, family))
    if not raw:
        raise InvalidInputError(
            f"no shared policy ({', '.join(shared)}) has unaided trials in both sessions; "
            "score the bridge arm in both before reading drift"
        )
    alpha = 1.0 - level
    anchors = []
    decisions = decide([r[4] for r in raw], alpha)
    for (policy, role, before, after, family), decided in zip(raw, decisions, strict=True):
        anchors.append(_anchor(plan_a.session_id, plan_b.session_id, policy, role, before,
                               after, family, decided))
    drifted_on = [a.policy for a in anchors if a.drifted]
    sentence = _drift_sentence(plan_a.session_id, plan_b.session_id, anchors, drifted_on, alpha)
    cross = _cross(plan_a, plan_b, (rows_a, rows_b), res_a, res_b, level, how, drifted_on)
    return DriftReport(
        plan_a.session_id,
        plan_b.session_id,
        level,
        how,
        tuple(anchors),
        bool(drifted_on),
        sentence,
        cross,
        tuple(notes),
    )


def _cross(
    plan_a: SessionPlan,
    plan_b: SessionPlan,
    rows: tuple[Sequence[Row], Sequence[Row]],
    res_a: dict[str, PolicyResult],
    res_b: dict[str, PolicyResult],
    level: float,
    how: str,
    drifted_on: Sequence[str],
) -> tuple[CrossComparison, ...]:
    only_a = [
        (p, res_a[p], rate)
        for p in plan_a.policies
        if p not in plan_b.policies and (rate := res_a[p].rate) is not None
    ]
    only_b = [
        (p, res_b[p], rate)
        for p in plan_b.policies
        if p not in plan_a.policies and (rate := res_b[p].rate) is not None
    ]
    raw = []
    for a, ra, rate_a in only_a:
        for b, rb, rate_b in only_b:
            exact = _test(how, ra.successes, ra.unaided, rb.successes, rb.unaided)
            family = _Family(_by_scene(rows[0], a), _by_scene(rows[1], b), exact, level)
            raw.append((a, b, rate_a, rate_b, family))
    if not raw:
        return ()
    decisions = decide([r[4] for r in raw], 1.0 - level)
    caveat = (
        f"carries the rig drift measured on {', '.join(drifted_on)}"
        if drifted_on
        else "different sessions and scenes: unpaired, and drift below detection may remain"
    )
    out = []
    for (a, b, rate_a, rate_b, family), decided in zip(raw, decisions, strict=True):
        diff, result = decided.difference, family.test_at(1.0 - decided.level)
        sentence = (
            f"{a} ({plan_a.session_id}) vs {b} ({plan_b.session_id}): {_band(diff)}, "
            f"Holm p = {decided.p_adjusted:.3g}; {caveat}"
        )
        out.append(
            CrossComparison(a, b, rate_a, rate_b, diff, result, decided.p_adjusted, EXPLORATORY,
                            caveat, sentence, decided.verdict)
        )
    return tuple(out)


def _by_scene(rows: Sequence[Row], policy: str) -> tuple[list[int], list[int]]:
    """A policy's unaided successes and trials per scene (scenes with trials only)."""
    scenes = sorted({r.scene for r in rows if r.unaided and r.policy == policy})
    return scene_counts(rows, (policy,), scenes)


@dataclass(frozen=True)
class _Family:
    """One rate change: the clustered score test, with an exact test joined at 0.

    A :class:`~evalband.analysis._verdicts.Hypothesis` (its p-value at the nominal
    ``confidence``), decided by :func:`~evalband.analysis._verdicts.decide`.
    """

    first: tuple[list[int], list[int]]
    second: tuple[list[int], list[int]]
    exact: TestResult
    confidence: float

    @cached_property
    def p_value(self) -> float:
        """The joined test's p-value at 0."""
        return self.test_at(self.confidence).p_value

    def interval_at(self, confidence: float) -> Difference:
        """The change's interval that inverts the joined test at ``confidence``."""
        return self.at(confidence)[0]

    def test_at(self, confidence: float) -> TestResult:
        """The joined test as reported with the interval at ``confidence``."""
        return self.at(confidence)[1]

    def at(self, level: float) -> tuple[Difference, TestResult]:
        from evalband.stats import clustered_diff_unpaired

        (k1, n1), (k2, n2) = self.first, self.second
        diff, test = clustered_diff_unpaired(
            k1, n1, k2, n2, confidence=level, equality_p=self.exact.p_value
        )
        details = dict(test.details)
        details["exact_test"] = self.exact.method
        details["exact_p"] = self.exact.p_value
        name = f"clustered-score+{self.exact.method}"
        return diff, TestResult(test.statistic, test.p_value, name, details)
