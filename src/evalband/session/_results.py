"""What :func:`~evalband.session._analyze.analyze_session` returns: the result types.

Frozen dataclasses, in the order a reader meets them (policy results, comparisons, the flip
floor, cumulative success, the positive-control check, the price list, progress, the
pre-registration's standing) and :class:`SessionAnalysis`, which holds them all. Pure data: the
computations live in :mod:`evalband.session._analyze`, the HTML section in
:mod:`evalband.report._session`. Verdicts and labels are the enums of
:mod:`evalband.analysis._verdicts`, shared with ``compare`` and drift.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from evalband._util.typed import typed_from_dict
from evalband.analysis import SliceVerdict
from evalband.analysis._noise import FlipRate
from evalband.analysis._verdicts import ControlStatus, Standing
from evalband.stats import Difference, Interval
from evalband.stats._types import TestResult

__all__ = [
    "EXPLORATORY",
    "CONFIRMATORY",
    "PRICE_GAPS",
    "ComparisonKind",
    "ComparisonSpec",
    "PolicyResult",
    "SessionComparison",
    "ScenePoint",
    "PolicyFlip",
    "FlipFloor",
    "CumulativePoint",
    "CumulativeSeries",
    "ControlCheck",
    "PriceEntry",
    "PriceList",
    "Progress",
    "PreregUse",
    "SessionAnalysis",
    "typed_from_dict",
]

#: The label of every comparison not planned in a pre-registration locked before the data
#: (seed 004, section 5: "anything discovered post-hoc buys a hypothesis, not a finding").
EXPLORATORY = Standing.EXPLORATORY
#: The label of a comparison planned in a pre-registration locked before the first scored trial.
CONFIRMATORY = Standing.CONFIRMATORY
#: The gaps of the price list (seed 004, section 4: 20, 15, 10 and 5 points).
PRICE_GAPS: tuple[float, ...] = (0.20, 0.15, 0.10, 0.05)


class ComparisonKind(StrEnum):
    """What a session comparison compares (compares equal to its text)."""

    POLICIES = "policies"
    GROUPING = "grouping"


@dataclass(frozen=True)
class PolicyResult:
    """One policy's trials and its unaided success rate.

    Attributes:
        policy: the policy's name.
        code: its blind code (the name when the session was not blinded).
        positive_control: whether it is the session's positive control.
        planned: trials planned.
        scored: trials scored (assisted ones included).
        skipped: trials skipped (recorded, never counted as failures).
        pending: trials not yet recorded.
        assisted: scored trials the operator helped with (left out of unaided success).
        unaided: scored, unassisted trials: the denominator of ``rate``.
        successes: unaided trials scored at or above the rubric's ``success_at``.
        rate: ``successes / unaided`` with its band over scenes
            (:func:`evalband.stats.cluster_proportion_interval`, the scene as the cluster);
            ``None`` without unaided trials.
        scores: how many unaided trials got each rubric level (every level listed).
        mean_score: mean ordinal score of the unaided trials.
    """

    policy: str
    code: str
    positive_control: bool
    planned: int
    scored: int
    skipped: int
    pending: int
    assisted: int
    unaided: int
    successes: int
    rate: Interval | None
    scores: dict[int, int]
    mean_score: float | None


@dataclass(frozen=True)
class ComparisonSpec:
    """What a session comparison compares and on which trials, before it is decided.

    The fields :class:`SessionComparison` starts with (see it for their meaning).
    """

    name: str
    kind: ComparisonKind
    grouping: str | None
    a: str
    b: str
    members_a: tuple[str, ...]
    members_b: tuple[str, ...]
    planned: bool
    label: Standing
    pairing: str
    rate_a: Interval
    rate_b: Interval
    counts: dict[str, int]


@dataclass(frozen=True)
class SessionComparison(ComparisonSpec):
    """One comparison: two policies paired by scene, or two pooled groups of policies.

    Attributes:
        name: ``"A vs B"``.
        kind: two policies, or two pooled groups of policies.
        grouping: the grouping's name (``kind == "grouping"``).
        a: policy A or the first group's label; the difference is A - B.
        b: policy B or the second group's label.
        members_a: the policies behind ``a``.
        members_b: the policies behind ``b``.
        planned: named in the pre-registration used (whether or not it counts).
        label: :attr:`Standing.CONFIRMATORY` or :attr:`Standing.EXPLORATORY`.
        pairing: how trials were matched.
        rate_a: A's rate over the trials used.
        rate_b: B's rate over the trials used.
        counts: the 2x2 counts (paired) or successes and trials of each side (pooled).
        difference: A - B with its interval (Newcombe paired, or Newcombe hybrid unpaired).
        test: exact McNemar (paired) or Fisher's exact test (pooled groups).
        p_holm: Holm-adjusted p-value within the comparison's family (its label).
        family_size: comparisons in that family.
        significant: ``p_holm <= 1 - confidence``.
        sentence: the comparison in words.
        verdict: the decision on ``A - B`` in the words of ``compare``
            (:class:`~evalband.analysis.SliceVerdict`): ``improved`` when A is significantly
            above B, ``regressed`` when below, ``no detectable change`` otherwise.
    """

    difference: Difference
    test: TestResult
    p_holm: float
    family_size: int
    significant: bool
    sentence: str
    verdict: SliceVerdict

    @property
    def exploratory(self) -> bool:
        """Whether the comparison is exploratory (a hypothesis, not a finding)."""
        return self.label == EXPLORATORY


@dataclass(frozen=True)
class ScenePoint:
    """The pooled flip rate after the scenes up to ``scene``.

    Attributes:
        scene: the last scene included.
        pairs: same-policy, same-scene pairs so far.
        flips: flipped pairs so far.
        rate: ``flips / pairs`` with its Wilson band.
    """

    scene: int
    pairs: int
    flips: int
    rate: Interval


@dataclass(frozen=True)
class PolicyFlip:
    """One policy's own flip rate.

    Attributes:
        policy: the policy.
        flip: its flip rate (``running`` per scene).
    """

    policy: str
    flip: FlipRate


@dataclass(frozen=True)
class FlipFloor:
    """How often two attempts of the same policy in the same scene disagree.

    Attributes:
        pooled: every policy's pairs together
            (:func:`~evalband.analysis._noise.flip_rate_of_groups`; ``running`` per
            ``(scene, policy)`` condition in scene order).
        by_scene: the pooled rate as scenes accumulated.
        by_policy: each policy's own rate.
        independent_reference: the flip rate if every attempt were an independent coin of its
            policy's rate: the pairs-weighted mean of :math:`2p_i(1-p_i)`.
        sentence: the flip floor in words.
    """

    pooled: FlipRate
    by_scene: tuple[ScenePoint, ...]
    by_policy: tuple[PolicyFlip, ...]
    independent_reference: float
    sentence: str


@dataclass(frozen=True)
class CumulativePoint:
    """A policy's unaided success over scenes ``1..scene``.

    Attributes:
        scene: the last scene included.
        successes: unaided successes so far.
        n: unaided trials so far.
        rate: their rate with its Wilson band (``None`` while ``n == 0``).
    """

    scene: int
    successes: int
    n: int
    rate: Interval | None


@dataclass(frozen=True)
class CumulativeSeries:
    """One policy's cumulative success as scenes accumulated.

    Attributes:
        policy: the policy.
        points: one point per scene with recorded trials.
    """

    policy: str
    points: tuple[CumulativePoint, ...]


@dataclass(frozen=True)
class ControlCheck:
    """The positive control's behaviour: the instrument's own test.

    Attributes:
        policy: the positive control.
        rate: its unaided success rate.
        floor: the rate it must reach, when one was stated.
        floor_source: where the floor came from.
        status: ``ok``, ``misbehaving``, ``unclear`` or ``no data``
            (:class:`~evalband.analysis.ControlStatus`).
        beaten_by: policies whose comparison with the control shows them significantly
            better (Holm).
        reasons: why the status is what it is.
        sentence: the check in words.
    """

    policy: str
    rate: Interval | None
    floor: float | None
    floor_source: str | None
    status: ControlStatus
    beaten_by: tuple[str, ...]
    reasons: tuple[str, ...]
    sentence: str


@dataclass(frozen=True)
class PriceEntry:
    """Episodes per policy to resolve one gap at 80% power, two-sided alpha 0.05.

    Attributes:
        gap: the gap ``|p_a - p_b|``.
        p_a: the better rate of the scenario (or the worse one when above 1).
        p_b: the session's pooled rate (the baseline).
        unpaired: two-proportion z test (:func:`evalband.stats.sample_size`): the seed's
            price list, episodes per policy.
        paired: scenes (one attempt per policy each) for the session's own scene-level test
            (:func:`evalband.stats.clustered_paired_sample_size`, exact power, level
            ``alpha / comparisons``) at this session's observed discordant share between
            policies (``None`` when the session has no matched pairs).
        paired_discordant: the discordant share used (clipped to what the gap allows).
        at_flip_floor: the same at a discordant share equal to the flip floor: the cheapest a
            matched design on this rig could be (two equal policies disagree that often).
        floor_discordant: the discordant share used for ``at_flip_floor``.
    """

    gap: float
    p_a: float
    p_b: float
    unpaired: int
    paired: int | None
    paired_discordant: float | None
    at_flip_floor: int | None
    floor_discordant: float | None


@dataclass(frozen=True)
class PriceList:
    """What resolving a gap costs on this rig, and what this session could resolve.

    Attributes:
        baseline: the session's pooled unaided success rate.
        power: target power (0.8).
        alpha: two-sided level (0.05).
        flip_floor: the session's flip rate, when measured.
        discordant: the observed share of matched pairs on which two policies disagree.
        entries: one row per gap of :data:`PRICE_GAPS`.
        episodes_per_policy: the fewest unaided trials any policy has.
        resolvable_gap: the smallest gap that many episodes resolve (unpaired, 80% power).
        sentence: the price list in words.
        comparisons: comparisons the matched columns are corrected for (the planned ones,
            else every pair of policies): their level is ``alpha / comparisons``.
        test: the test the matched columns price.
    """

    baseline: float
    power: float
    alpha: float
    flip_floor: float | None
    discordant: float | None
    entries: tuple[PriceEntry, ...]
    episodes_per_policy: int
    resolvable_gap: float | None
    sentence: str
    comparisons: int = 1
    test: str = ""


@dataclass(frozen=True)
class Progress:
    """Where the session stands.

    Attributes:
        planned: trials planned.
        scored: trials scored (assisted ones included).
        skipped: trials skipped.
        pending: trials not recorded yet.
        assisted: scored trials marked assisted.
        scenes: scenes planned.
        scenes_complete: scenes whose every trial is scored.
        first_scored_at: time of the first scored trial (ISO), if any.
        last_scored_at: time of the last scored trial (ISO), if any.
    """

    planned: int
    scored: int
    skipped: int
    pending: int
    assisted: int
    scenes: int
    scenes_complete: int
    first_scored_at: str | None
    last_scored_at: str | None


@dataclass(frozen=True)
class PreregUse:
    """The pre-registration the analysis read, and whether it counts.

    Attributes:
        name: its name.
        sha256: the locked text's hash.
        locked_at: when it was locked (``None``: never locked).
        counts: True when it was locked before the session's first scored trial: its
            comparisons are confirmatory.
        reason: why it counts or not.
        planned: the names of the comparisons it plans.
    """

    name: str
    sha256: str
    locked_at: str | None
    counts: bool
    reason: str
    planned: tuple[str, ...]


@dataclass(frozen=True)
class SessionAnalysis:
    """Everything :func:`analyze_session` found, in the order to read it.

    Attributes:
        session_id: the session.
        confidence: the level of every band.
        rubric: the rubric's levels and threshold.
        blind: whether the session was blinded.
        positive_control: the positive control's name, if any.
        progress: trial counts and times.
        flip: the flip floor (``None`` without two unaided attempts of a policy in a scene).
        control: the positive-control check (``None`` without a positive control).
        policies: per-policy success and score distribution, in plan order.
        comparisons: confirmatory comparisons first, then exploratory ones.
        cumulative: cumulative success per policy vs scenes.
        prices: the power price list (``None`` without unaided trials).
        prereg: the pre-registration read, if any.
        notes: what a reader must know (progress, blinding, skipped and assisted trials,
            the pre-registration's standing).
        exploratory_label: :data:`EXPLORATORY`.
    """

    session_id: str
    confidence: float
    rubric: dict[str, Any]
    blind: bool
    positive_control: str | None
    progress: Progress
    flip: FlipFloor | None
    control: ControlCheck | None
    policies: tuple[PolicyResult, ...]
    comparisons: tuple[SessionComparison, ...]
    cumulative: tuple[CumulativeSeries, ...]
    prices: PriceList | None
    prereg: PreregUse | None
    notes: tuple[str, ...]
    exploratory_label: Standing = EXPLORATORY

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (nested results as dictionaries)."""
        out: dict[str, Any] = asdict(self)
        for item, comparison in zip(out["comparisons"], self.comparisons, strict=True):
            item["difference"] = comparison.difference.as_dict()
            item["exploratory"] = comparison.exploratory
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionAnalysis:
        """The typed analysis back from :meth:`as_dict` (a stored result, after JSON).

        Every nested result is rebuilt as its type (intervals, differences, tests, enums);
        keys :meth:`as_dict` derives (``exploratory``, a difference's extras) are dropped;
        the rubric's levels get their whole-number keys back (JSON keys are text).

        >>> import json
        >>> from evalband.session import analyze_session, plan_session, simulate_session
        >>> plan = plan_session(["A", "B"], scenes=3, attempts=2, seed=1, session_id="x")
        >>> trials = simulate_session(plan, success_prob={"A": .8, "B": .4}, seed=2)
        >>> result = analyze_session(plan, trials)
        >>> back = SessionAnalysis.from_dict(json.loads(json.dumps(result.as_dict())))
        >>> back.comparisons == result.comparisons and back.policies == result.policies
        True
        """
        result = typed_from_dict(cls, data)
        levels = result.rubric.get("levels")
        if isinstance(levels, dict):
            rubric = {**result.rubric, "levels": {int(k): v for k, v in levels.items()}}
            result = dataclasses.replace(result, rubric=rubric)
        return result
