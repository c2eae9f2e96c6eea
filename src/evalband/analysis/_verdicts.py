"""The one decision engine: every verdict evalband prints is decided here, by ordered rule tables.

Every decided difference (a slice of ``compare`` at fixed n or sequentially, a comparison of a
hardware session, a shared policy's change between two sessions, a lab's matched difference) goes
through :func:`decide`: a multiplicity :class:`Procedure` turns the family's tests into
per-hypothesis decisions (:data:`HOLM`: Holm's step-down with the compatible per-step levels,
:func:`evalband.stats.holm_decisions`; :class:`SequentialBonferroni`: the anytime-valid tests'
own decisions at ``alpha / m``), each hypothesis's interval is taken at the level that decided
it (so it excludes 0 exactly when the hypothesis is rejected), and the first matching row of
:data:`VERDICT_RULES` names the verdict. Three tables, in this one module, are the rules:

* :data:`SLICE_CHECKS`: what makes a compared slice unreadable (error episodes, a rise in
  interventions, a latency budget exceeded, nothing to compare); each adds its reason, and any
  reason makes the slice inconclusive;
* :data:`VERDICT_RULES`: the ladder from a decision to a :class:`SliceVerdict`;
* :data:`COMPARISON_RULES`: the ladder from a comparison's slices and aggregate to its overall
  :class:`Verdict` (and :func:`hidden_regressions`, the slices the aggregate hides).

A rule is one row: changing what evalband decides is changing (or adding) a row here, and
every caller -- compare, ``--sequential``, sessions, drift, calibrate -- follows. The words and
styles the renderers give each verdict are one table too (``evalband.report._words``).

The enums are :class:`~enum.StrEnum`: they compare equal to their text, and JSON carries the
text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

import msgspec

from evalband.errors import InvalidParameterError
from evalband.stats._types import SliceVerdict

if TYPE_CHECKING:
    from evalband.analysis._models import SliceComparison
    from evalband.analysis._statistics import SliceData
    from evalband.stats import Difference

__all__ = [
    "Verdict",
    "SliceVerdict",
    "Standing",
    "ControlStatus",
    "VERDICT_EXIT_CODES",
    "SEVERITY",
    "Evidence",
    "VerdictRule",
    "VERDICT_RULES",
    "apply_rules",
    "slice_verdict",
    "interval_verdict",
    "SliceCheck",
    "SLICE_CHECKS",
    "check_slice",
    "FamilyFacts",
    "ComparisonRule",
    "COMPARISON_RULES",
    "overall_verdict",
    "hidden_regressions",
    "Hypothesis",
    "Step",
    "Procedure",
    "Holm",
    "HOLM",
    "DirectionalHolm",
    "DIRECTIONAL_HOLM",
    "DiscreteNull",
    "DiscreteHolm",
    "DISCRETE_HOLM",
    "SequentialBonferroni",
    "Decided",
    "decide",
]


class Verdict(StrEnum):
    """The overall verdict of a comparison (compares equal to its text)."""

    IMPROVES = "improves"
    NO_REGRESSION = "no regression"
    INCONCLUSIVE = "inconclusive"
    REGRESSION = "regression"


class Standing(StrEnum):
    """Whether a decided difference was planned before the data (seed 004, section 5)."""

    CONFIRMATORY = "confirmatory"
    EXPLORATORY = "exploratory — a hypothesis, not a finding"


class ControlStatus(StrEnum):
    """How a positive control behaved: the instrument's own test."""

    OK = "ok"
    UNCLEAR = "unclear"
    MISBEHAVING = "misbehaving"
    NO_DATA = "no data"


VERDICT_EXIT_CODES: dict[str, int] = {
    Verdict.IMPROVES: 0,
    Verdict.NO_REGRESSION: 3,
    Verdict.REGRESSION: 4,
    Verdict.INCONCLUSIVE: 5,
}
"""Exit status of ``evalband compare`` per overall verdict (2 is reserved for bad input)."""

SEVERITY: tuple[Verdict, ...] = (
    Verdict.IMPROVES,
    Verdict.NO_REGRESSION,
    Verdict.INCONCLUSIVE,
    Verdict.REGRESSION,
)
"""Overall verdicts from the mildest to the most severe."""


# ---------------------------------------------------------------------------- the ladder


class Evidence(msgspec.Struct, frozen=True):
    """What a verdict rule reads about one decided difference ``A - B`` (a frozen struct).

    Attributes:
        rejected: the procedure rejected "no difference".
        direction: the direction it rejected towards: ``-1`` (A below B), ``+1`` (A above B),
            ``0`` (not rejected, or rejected at an estimate of exactly 0).
        estimate: the difference's estimate.
        low: the lower bound of its interval at the deciding level (``None``: none).
        unreadable: something makes the difference unreadable (its reasons are reported).
        margin: a declared non-inferiority margin (a positive drop), or ``None``.
        final: the test has finished (always at fixed n; an anytime-valid test may continue).
    """

    rejected: bool
    direction: int
    estimate: float
    low: float | None
    unreadable: bool = False
    margin: float | None = None
    final: bool = True


@dataclass(frozen=True)
class VerdictRule:
    """One row of the ladder: the verdict, when it applies, and the reason it adds.

    Attributes:
        verdict: the verdict this row gives.
        when: whether the row applies to the evidence.
        reason: a reason the row adds to a difference that has none (``None``: none).
        doc: what the row means, in words (docs and tests read it).
    """

    verdict: SliceVerdict
    when: Callable[[Evidence], bool]
    doc: str
    reason: str | None = None


VERDICT_RULES: tuple[VerdictRule, ...] = (
    VerdictRule(SliceVerdict.INCONCLUSIVE, lambda e: e.unreadable,
                "something makes the difference unreadable: its reasons are reported"),
    VerdictRule(SliceVerdict.REGRESSED, lambda e: e.direction < 0,
                "the procedure rejected 'no difference' below 0"),
    VerdictRule(SliceVerdict.IMPROVED, lambda e: e.direction > 0,
                "the procedure rejected 'no difference' above 0"),
    VerdictRule(SliceVerdict.NON_INFERIOR,
                lambda e: e.margin is not None and e.low is not None and e.low > -e.margin,
                "a declared margin lies below the interval's lower bound"),
    VerdictRule(SliceVerdict.NO_CHANGE, lambda e: e.final,
                "the test has finished without a decision"),
    VerdictRule(SliceVerdict.INCONCLUSIVE, lambda e: True,
                "an anytime-valid test that has not decided yet",
                reason="undecided so far (the anytime-valid test may continue)"),
)
"""The ladder from a decision to a :class:`SliceVerdict`: the first row that applies wins."""


def apply_rules(
    evidence: Evidence, rules: Sequence[VerdictRule] = VERDICT_RULES
) -> tuple[SliceVerdict, str | None]:
    """The verdict of the first rule that applies, and the reason it adds (if any).

    >>> apply_rules(Evidence(True, -1, -0.2, -0.3))
    (<SliceVerdict.REGRESSED: 'regressed'>, None)
    >>> apply_rules(Evidence(False, 0, 0.01, -0.2, final=False))[1]
    'undecided so far (the anytime-valid test may continue)'
    """
    for rule in rules:
        if rule.when(evidence):
            return rule.verdict, (None if evidence.unreadable else rule.reason)
    raise AssertionError("the last verdict rule applies to everything")  # pragma: no cover


def _direction(rejected: bool, estimate: float) -> int:
    if not rejected or estimate == 0:
        return 0
    return -1 if estimate < 0 else 1


def slice_verdict(
    rejected: bool,
    estimate: float,
    *,
    unreadable: bool = False,
    margin: float | None = None,
    low: float | None = None,
) -> SliceVerdict:
    """The verdict of one difference from its fixed-n decision (:data:`VERDICT_RULES`).

    Args:
        rejected: whether the procedure rejected "no difference" (adjusted p <= alpha).
        estimate: the difference's estimate, ``A - B``.
        unreadable: something makes the difference unreadable (its reasons are reported).
        margin: a non-inferiority margin (a positive drop), when one is declared.
        low: the interval's lower bound (needed with ``margin``).

    >>> slice_verdict(True, -0.2), slice_verdict(False, -0.2)
    (<SliceVerdict.REGRESSED: 'regressed'>, <SliceVerdict.NO_CHANGE: 'no detectable change'>)
    >>> slice_verdict(False, 0.01, margin=0.1, low=-0.05)
    <SliceVerdict.NON_INFERIOR: 'non-inferior'>
    """
    evidence = Evidence(rejected, _direction(rejected, estimate), estimate, low, unreadable,
                        margin)
    return apply_rules(evidence)[0]


def interval_verdict(difference: Difference) -> SliceVerdict:
    """The verdict of an interval read alone (the labs): 0 excluded decides the direction.

    >>> from evalband.stats import Difference
    >>> interval_verdict(Difference(0.1, 0.02, 0.2, "newcombe", 0.95, True))
    <SliceVerdict.IMPROVED: 'improved'>
    """
    return difference.verdict


# ---------------------------------------------------------------------------- slice checks


@dataclass(frozen=True)
class SliceCheck:
    """One row of :data:`SLICE_CHECKS`: what makes a compared slice unreadable.

    Attributes:
        name: a stable name.
        reason: the slice's reason, or ``None`` when the check passes. It reads the slice's
            row before the decision (its counts, test and registered statistics) and the
            slice's data (:class:`~evalband.analysis._statistics.SliceData`: both runs'
            episode counts, the panel; ``None`` for a simulated table).
        excludes: a failed check also excludes the slice from the positive-delta count.
        doc: what the check means, in words.
    """

    name: str
    reason: Callable[[SliceComparison, SliceData | None], str | None]
    doc: str
    excludes: bool = False


def _errors(row: SliceComparison, data: SliceData | None) -> str | None:
    errors = 0 if data is None else data.baseline.errors + data.candidate.errors
    if not errors:
        return None
    return f"{errors} error episode(s) present (fix them, or count errors as failures)"


def _interventions(row: SliceComparison, data: SliceData | None) -> str | None:
    before = row.extras.get("intervention_rate_baseline")
    after = row.extras.get("intervention_rate_candidate")
    if before is None or after is None or not after > before:
        return None
    return f"intervention rate rose from {before:.0%} to {after:.0%}"


def _latency(row: SliceComparison, data: SliceData | None) -> str | None:
    budget = row.extras.get("latency_budget_ms")
    p95 = row.extras.get("latency_p95_candidate_ms")
    if budget is None or p95 is None or not p95 > budget:
        return None
    return (f"candidate p95 policy latency {p95:.1f} ms exceeds the {budget:g} ms budget; "
            "excluded from the positive-delta count")


def _budget_unchecked(row: SliceComparison, data: SliceData | None) -> str | None:
    budget = row.extras.get("latency_budget_ms")
    recorded = row.extras.get("latency_p95_candidate_ms") is not None
    if budget is None or not row.counts.n_candidate or recorded:
        return None
    return (f"the panel sets a {budget:g} ms latency budget but the candidate recorded no "
            "policy latency here: the budget cannot be checked; excluded from the "
            "positive-delta count")


def _untested(row: SliceComparison, data: SliceData | None) -> str | None:
    return "no episodes to compare" if row.test is None or row.test.p_value is None else None


SLICE_CHECKS: tuple[SliceCheck, ...] = (
    SliceCheck("errors", _errors, "error episodes are present (unless counted as failures)"),
    SliceCheck("interventions", _interventions,
               "the candidate's intervention rate is above the baseline's"),
    SliceCheck("latency", _latency,
               "the candidate's p95 policy latency is over the slice's budget", excludes=True),
    SliceCheck("latency unchecked", _budget_unchecked,
               "the slice has a latency budget but the candidate recorded no latency in it",
               excludes=True),
    SliceCheck("untested", _untested, "neither run has episodes to compare in the slice"),
)
"""What makes a slice unreadable, in the order its reasons are said (any one: inconclusive)."""


def check_slice(
    row: SliceComparison, data: SliceData | None, checks: Sequence[SliceCheck] = SLICE_CHECKS
) -> tuple[list[str], bool]:
    """The reasons the checks give a slice (in order), and whether one excludes it.

    ``data``: the slice's episodes (``None`` for a simulated table, which has counts only).
    """
    reasons: list[str] = []
    excluded = False
    for check in checks:
        said = check.reason(row, data)
        if said is not None:
            reasons.append(said)
            excluded = excluded or check.excludes
    return reasons, excluded


# ---------------------------------------------------------------------------- overall


class FamilyFacts(msgspec.Struct, frozen=True):
    """What the overall rules read of one candidate's decided slices and aggregate.

    (A frozen struct, as :class:`Evidence`: a comparison makes one per candidate.)

    Attributes:
        blocking: required (primary) slices that regressed.
        unsure: slices that are inconclusive or excluded.
        aggregate_low: the lower bound of the aggregate's interval (NaN: no aggregate).
    """

    blocking: tuple[str, ...]
    unsure: tuple[str, ...]
    aggregate_low: float


@dataclass(frozen=True)
class ComparisonRule:
    """One row of :data:`COMPARISON_RULES`: the overall verdict and when it applies."""

    verdict: Verdict
    when: Callable[[FamilyFacts], bool]
    doc: str


COMPARISON_RULES: tuple[ComparisonRule, ...] = (
    ComparisonRule(Verdict.REGRESSION, lambda f: bool(f.blocking), "a required slice regressed"),
    ComparisonRule(Verdict.INCONCLUSIVE, lambda f: bool(f.unsure),
                   "a slice is inconclusive or excluded"),
    ComparisonRule(Verdict.IMPROVES, lambda f: f.aggregate_low > 0,
                   "the aggregate's interval lies above 0"),
    ComparisonRule(Verdict.NO_REGRESSION, lambda f: True,
                   "nothing required regressed, improvement not established"),
)
"""The ladder from a comparison's decided slices to its :class:`Verdict` (first match wins)."""


def overall_verdict(facts: FamilyFacts,
                    rules: Sequence[ComparisonRule] = COMPARISON_RULES) -> Verdict:
    """The overall verdict: the first of :data:`COMPARISON_RULES` that applies.

    >>> overall_verdict(FamilyFacts(("a",), (), 0.1))
    <Verdict.REGRESSION: 'regression'>
    >>> overall_verdict(FamilyFacts((), (), 0.01))
    <Verdict.IMPROVES: 'improves'>
    """
    for rule in rules:
        if rule.when(facts):
            return rule.verdict
    raise AssertionError("the last comparison rule applies to everything")  # pragma: no cover


def hidden_regressions(regressed: Sequence[str], delta: float, low: float,
                       high: float) -> list[str]:
    """Regressed slices the aggregate hides: it moved up, or its interval contains 0.

    >>> hidden_regressions(["a"], 0.02, -0.01, 0.05), hidden_regressions(["a"], -0.1, -0.2, -0.05)
    (['a'], [])
    """
    hides = delta >= 0 or (low <= 0 <= high)
    return list(regressed) if hides else []


# ---------------------------------------------------------------------------- the engine


class Hypothesis(Protocol):
    """One difference to decide: its raw p-value, its interval at any level, its standing.

    ``reasons`` (why it cannot be read; any makes it inconclusive) and ``margin`` (a declared
    non-inferiority margin) are read by :data:`VERDICT_RULES`; a plain test has none.
    """

    @property
    def p_value(self) -> float:
        """The test's raw two-sided p-value of "no difference"."""
        ...

    def interval_at(self, confidence: float) -> Difference:
        """The interval that inverts the same test at ``confidence``."""
        ...


class Step(msgspec.Struct, frozen=True):
    """What a multiplicity procedure decided for one hypothesis (a frozen struct, as the rows).

    Attributes:
        p_adjusted: the adjusted p-value (NaN for tests that read e-values instead).
        level: the per-hypothesis level it was decided at (``p_value <= level`` exactly when
            rejected, for a procedure on p-values); the interval is taken at ``1 - level``.
        rejected: whether "no difference" was rejected.
        direction: the direction the test itself decided (``None``: the interval's sign).
        final: whether the test has finished.
    """

    p_adjusted: float
    level: float
    rejected: bool
    direction: int | None = None
    final: bool = True


class Procedure(Protocol):
    """A multiplicity procedure: one :class:`Step` per hypothesis of a family."""

    @property
    def name(self) -> str:
        """The procedure's name."""
        ...

    def steps(self, hypotheses: Sequence[Hypothesis], alpha: float) -> list[Step]:
        """Decide every hypothesis of the family at family-wise level ``alpha``."""
        ...


@dataclass(frozen=True)
class Holm:
    """Holm's (1979) step-down procedure with the compatible per-step levels.

    :func:`evalband.stats.holm_decisions`: a hypothesis rejected at step ``r`` is decided at
    ``alpha / (m - r + 1)``; one not rejected at the level of the step that stopped.
    """

    name: str = "holm"

    def steps(self, hypotheses: Sequence[Hypothesis], alpha: float) -> list[Step]:
        """Holm over the hypotheses' raw p-values."""
        from evalband.stats._procedure import holm_decisions

        decision = holm_decisions([float(h.p_value) for h in hypotheses], alpha)
        return [Step(float(p), float(level), bool(rejected)) for p, level, rejected in zip(
            decision.p_adjusted.tolist(), decision.levels.tolist(),
            decision.rejected.tolist(), strict=True)]


HOLM = Holm()
"""Holm's procedure (the sessions' and drift's families: their tests have no null table)."""


@dataclass(frozen=True)
class DirectionalHolm:
    """Holm over both one-sided hypotheses of every pair: a ranking's established orders.

    :func:`evalband.stats.directional_holm`: each of the ``M`` pairs contributes two
    one-sided hypotheses (the reverse side's p taken as 1), step ``r`` over the ``2M`` at
    ``alpha / (2M - r + 1)``, so that no established order is wrong with probability above
    ``alpha`` under any dependence. A pair is decided at the two-sided level
    ``2 alpha / (2M - r + 1)`` of its step (not established: of the step that stopped).

    >>> class H:
    ...     def __init__(self, p): self.p_value = p
    >>> [(s.rejected, round(s.p_adjusted, 4), round(s.level, 4))
    ...  for s in DIRECTIONAL_HOLM.steps([H(0.001), H(0.024), H(0.6)], 0.05)]
    [(True, 0.003, 0.0167), (False, 0.06, 0.02), (False, 1.0, 0.02)]
    """

    name: str = "directional holm"

    def steps(self, hypotheses: Sequence[Hypothesis], alpha: float) -> list[Step]:
        """The directional step-down over the pairs' two-sided p-values."""
        from evalband.stats._ranks import directional_holm

        established, adjusted, levels = directional_holm(
            [float(h.p_value) for h in hypotheses], alpha)
        # 1 - level is exact for a level in [0.5, 1], so decide's 1 - step.level gives it back
        return [Step(float(p), 1.0 - float(level), bool(done)) for done, p, level in zip(
            established.tolist(), adjusted.tolist(), levels.tolist(), strict=True)]


DIRECTIONAL_HOLM = DirectionalHolm()
"""The ranking's procedure (``evalband rank``, sweeps, agreement): see :class:`DirectionalHolm`."""


class DiscreteNull(Protocol):
    """What a discrete test can attain under its null (:mod:`evalband.stats._discrete`)."""

    def at_most(self, t: float) -> float:
        """The largest p-value the test can return that is ``<= t`` (0.0 when none)."""
        ...


@dataclass(frozen=True)
class DiscreteHolm:
    """Holm's step-down procedure that spends only what each exact test can attain.

    A slice's exact test (McNemar's, Fisher's) returns one of finitely many p-values: under
    its null, ``P(P_j <= t)`` is the largest attainable p-value ``<= t`` (``G_j(t) <= t``;
    Westfall & Wolfinger 1997). Holm charges every remaining hypothesis ``t`` at each step
    (``(m - r + 1) p_(r)``); this procedure charges each what it can attain::

        p_adj(r) = min(1, max_{s <= r} sum_{j in R_s} G_j(p_(s)))

    over the hypotheses ``R_s`` not yet rejected at step ``s`` (the step-down form of Tarone's
    1990 idea, Hommel & Krummenauer 1998). A hypothesis is rejected exactly when its adjusted
    p is at most ``alpha``. The family-wise error stays at most ``alpha`` under any dependence
    between the slices (at the first true null rejected, the true nulls' summed ``G`` is at
    most ``alpha``, and ``P(min_j P_j <= c) <= sum_j G_j(c)``), and at most ``alpha / 2`` per
    direction (each test rejects downwards with probability ``G_j(c) / 2`` at most). Since
    ``G_j(t) <= t`` it rejects whatever Holm rejects, and more when some slices cannot reach
    a small p (few discordant pairs) and so stop costing the others. A hypothesis without a
    null distribution (``null()`` absent or ``None``) is charged ``t``, as by Holm.

    Levels (for the compatible intervals) follow Holm's convention: a hypothesis rejected at
    step ``r`` is decided at ``max(alpha / (m - r + 1), p)``; one not rejected at the level of
    the step that stopped, just below its own p. So ``p <= level`` exactly when rejected.

    Sources: Westfall, P. H. & Wolfinger, R. D. (1997) *Am. Stat.* 51:3-8; Tarone, R. E.
    (1990) *Biometrics* 46:515-522; Hommel, G. & Krummenauer, F. (1998) *Biometrical J.*
    40:3-15; Holm, S. (1979) *Scand. J. Statist.* 6:65-70.
    """

    name: str = "discrete holm"

    def steps(self, hypotheses: Sequence[Hypothesis], alpha: float) -> list[Step]:
        """The discrete step-down over the hypotheses' raw p-values and null distributions."""
        a = float(alpha)
        if not 0.0 < a < 1.0:
            raise InvalidParameterError(f"alpha must be in (0, 1); got {alpha!r}")
        raw: list[float] = []
        nulls: list[DiscreteNull | None] = []
        continuous = 0  # hypotheses without a null, among those not yet rejected
        for h in hypotheses:  # one pass; min/max below written out (the same floats)
            raw.append(float(h.p_value))
            null = getattr(h, "null", None)
            null = None if null is None else null()
            nulls.append(null)
            continuous += null is None
        m = len(raw)
        order = sorted(range(m), key=raw.__getitem__)  # stable, as Holm's mergesort
        adjusted = [0.0] * m
        running = 0.0
        for rank, i in enumerate(order):
            t = raw[i]
            total = continuous * t
            for j in order[rank:]:
                null = nulls[j]
                if null is not None and total < 1.0:
                    total += null.at_most(t)
            total = total if total < 1.0 else 1.0  # min(1.0, total)
            running = total if total > running else running  # max(running, total)
            adjusted[i] = running
            continuous -= nulls[i] is None
        out: list[Step] = [_NO_STEP] * m
        stop: float | None = None
        for rank, i in enumerate(order):
            step = a / (m - rank)
            p = raw[i]
            rejected = adjusted[i] <= a
            if rejected and stop is None:
                level = p if p > step else step  # max(step, p)
            else:
                stop = step if stop is None else stop
                below = math.nextafter(p, -math.inf)
                level = below if below < stop else stop  # min(stop, below)
            out[i] = Step(adjusted[i], _agreeing(level, p, rejected), rejected)
        return out


_NO_STEP = Step(math.nan, math.nan, False)
"""A placeholder in :meth:`DiscreteHolm.steps`' list before each hypothesis' step is set."""


def _agreeing(level: float, p: float, rejected: bool) -> float:
    """``level`` moved by ulps until an interval at ``1 - level`` reads ``p`` as decided.

    The compatible interval asks ``p <= 1 - (1 - level)``; a level equal to a p-value can
    lose that by one rounding of ``1 - level``.
    """
    toward = math.inf if rejected else -math.inf
    while (p <= 1.0 - (1.0 - level)) != rejected and 0.0 < level < 1.0:
        level = math.nextafter(level, toward)
    return level


DISCRETE_HOLM = DiscreteHolm()
"""The fixed-n procedure of ``compare`` (and ``calibrate``): Holm spending what exact tests can
attain."""


class SequentialHypothesis(Protocol):
    """A hypothesis whose anytime-valid test has decided it already (at ``alpha / m``)."""

    @property
    def decision(self) -> str | None:
        """``"regressed"``, ``"improved"``, ``"futile"`` or ``"continue"`` (not yet)."""
        ...


@dataclass(frozen=True)
class SequentialBonferroni:
    """The anytime-valid procedure: each test decided at ``alpha / m`` (e-value Bonferroni).

    The hypotheses carry their sequential test's decision (each direction of each of the
    ``m`` slices at ``alpha / (2 m)``); the intervals are taken at ``1 - alpha / m``.
    """

    m: int
    name: str = "e-value bonferroni"

    def steps(self, hypotheses: Sequence[Hypothesis], alpha: float) -> list[Step]:
        """The tests' own decisions, each at ``alpha / m``."""
        out = []
        for h in hypotheses:
            decision = getattr(h, "decision", None)
            direction = {"regressed": -1, "improved": 1}.get(str(decision), 0)
            out.append(Step(math.nan, alpha / self.m, direction != 0, direction,
                            final=decision in ("regressed", "improved", "futile")))
        return out


class Decided(msgspec.Struct, frozen=True):
    """One hypothesis decided within its family (a frozen struct, as the rows).

    Attributes:
        p_adjusted: the adjusted p-value (NaN for an anytime-valid test).
        level: the per-hypothesis level it was decided at.
        rejected: whether "no difference" was rejected.
        difference: the interval at confidence ``1 - level``: it excludes 0 exactly when
            ``rejected``.
        verdict: the verdict of :data:`VERDICT_RULES`.
        reason: the reason the deciding rule adds (``None``: none).
    """

    p_adjusted: float
    level: float
    rejected: bool
    difference: Difference
    verdict: SliceVerdict
    reason: str | None = None


def decide(
    hypotheses: Sequence[Hypothesis],
    alpha: float,
    rules: Sequence[VerdictRule] = VERDICT_RULES,
    *,
    procedure: Procedure = HOLM,
) -> list[Decided]:
    """Decide a family: the procedure, each interval at its deciding level, the rules.

    Every verdict in evalband comes from here: ``compare`` (every slice of every candidate in
    one family), ``compare --sequential`` (:class:`SequentialBonferroni`), a session's
    comparisons and drift (one family each), ``calibrate``'s simulations, and a ranking's
    pairs and a preference session's pairs (:class:`DirectionalHolm`).

    >>> from evalband.stats import Difference
    >>> class H:
    ...     reasons, margin = (), None
    ...     def __init__(self, p, est): self.p_value, self.est = p, est
    ...     def interval_at(self, c):
    ...         half = 0.1 if c < 0.97 else 0.3
    ...         return Difference(self.est, self.est - half, self.est + half, "toy", c, True)
    >>> [d.verdict.value for d in decide([H(0.001, 0.2), H(0.5, 0.05)], 0.05)]
    ['improved', 'no detectable change']
    """
    hyps = list(hypotheses)
    out = []
    for h, step in zip(hyps, procedure.steps(hyps, alpha), strict=True):
        difference = h.interval_at(1.0 - step.level)
        estimate = difference.estimate
        rejected = step.rejected
        direction = step.direction
        if direction is None:  # _direction, written out
            direction = 0 if not rejected or estimate == 0 else (-1 if estimate < 0 else 1)
        evidence = Evidence(rejected, direction, estimate, difference.low,
                            bool(getattr(h, "reasons", ())), getattr(h, "margin", None),
                            step.final)
        verdict, reason = apply_rules(evidence, rules)
        out.append(Decided(step.p_adjusted, step.level, rejected, difference, verdict, reason))
    return out

