"""One verdict vocabulary and one decision engine for compare, sessions, drift and the labs.

Every decided difference in evalband (a slice of ``compare``, a comparison of a hardware
session, a shared policy's change between two sessions, a lab's matched difference) is read
the same way and carries the same words:

* :class:`SliceVerdict`: one difference, ``A - B`` (candidate - baseline in ``compare``):
  :attr:`~SliceVerdict.IMPROVED` when the procedure rejects 0 with a positive estimate,
  :attr:`~SliceVerdict.REGRESSED` with a negative one, :attr:`~SliceVerdict.NON_INFERIOR`
  when a declared margin is excluded, :attr:`~SliceVerdict.NO_CHANGE` otherwise, and
  :attr:`~SliceVerdict.INCONCLUSIVE` when something (errors, interventions, latency) makes the
  difference unreadable;
* :class:`Verdict`: the overall verdict of a comparison of two runs;
* :class:`Standing`: whether a decided difference was planned before the data
  (:attr:`~Standing.CONFIRMATORY`) or not (:attr:`~Standing.EXPLORATORY`, "a hypothesis, not a
  finding");
* :class:`ControlStatus`: how a session's positive control behaved.

The enums are :class:`~enum.StrEnum`: they compare equal to their text, and JSON carries the
text. :func:`decide_holm` is the decision engine: Holm's procedure with the compatible
per-hypothesis levels (:func:`evalband.stats._procedure.holm_decisions`), each hypothesis's
interval at the level of the Holm step that decided it, and :func:`slice_verdict` on the
result, so that the verdict, the adjusted p-value and the interval always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from evalband.stats import SliceVerdict

if TYPE_CHECKING:
    from evalband.stats import Difference

__all__ = [
    "Verdict",
    "SliceVerdict",
    "Standing",
    "ControlStatus",
    "VERDICT_EXIT_CODES",
    "SEVERITY",
    "slice_verdict",
    "interval_verdict",
    "Hypothesis",
    "Decided",
    "decide_holm",
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


def slice_verdict(
    rejected: bool,
    estimate: float,
    *,
    unreadable: bool = False,
    margin: float | None = None,
    low: float | None = None,
) -> SliceVerdict:
    """The verdict of one difference from its decision.

    Args:
        rejected: whether the procedure rejected "no difference" (Holm-adjusted p <= alpha).
        estimate: the difference's estimate, ``A - B``.
        unreadable: something makes the difference unreadable (its reasons are reported).
        margin: a non-inferiority margin (a positive drop), when one is declared.
        low: the interval's lower bound (needed with ``margin``).

    >>> slice_verdict(True, -0.2), slice_verdict(False, -0.2)
    (<SliceVerdict.REGRESSED: 'regressed'>, <SliceVerdict.NO_CHANGE: 'no detectable change'>)
    >>> slice_verdict(False, 0.01, margin=0.1, low=-0.05)
    <SliceVerdict.NON_INFERIOR: 'non-inferior'>
    """
    if unreadable:
        return SliceVerdict.INCONCLUSIVE
    if rejected and estimate < 0:
        return SliceVerdict.REGRESSED
    if rejected and estimate > 0:
        return SliceVerdict.IMPROVED
    if margin is not None and low is not None and low > -margin:
        return SliceVerdict.NON_INFERIOR
    return SliceVerdict.NO_CHANGE


def interval_verdict(difference: Difference) -> SliceVerdict:
    """The verdict of an interval read alone (the labs): 0 excluded decides the direction.

    >>> from evalband.stats import Difference
    >>> interval_verdict(Difference(0.1, 0.02, 0.2, "newcombe", 0.95, True))
    <SliceVerdict.IMPROVED: 'improved'>
    """
    return difference.verdict


class Hypothesis(Protocol):
    """One difference to decide: its raw p-value and its interval at any confidence."""

    @property
    def p_value(self) -> float:
        """The test's raw two-sided p-value of "no difference"."""
        ...

    def interval_at(self, confidence: float) -> Difference:
        """The interval that inverts the same test at ``confidence``."""
        ...


@dataclass(frozen=True)
class Decided:
    """One hypothesis decided within its Holm family.

    Attributes:
        p_holm: the Holm-adjusted p-value.
        level: the per-hypothesis level Holm used (``p_value <= level`` exactly when rejected).
        rejected: ``p_holm <= alpha``.
        difference: the interval at confidence ``1 - level``: it excludes 0 exactly when
            ``rejected``.
        verdict: :func:`slice_verdict` of the decision.
    """

    p_holm: float
    level: float
    rejected: bool
    difference: Difference
    verdict: SliceVerdict


def decide_holm(hypotheses: Sequence[Hypothesis], alpha: float) -> list[Decided]:
    """Decide a family: Holm at ``alpha``, each interval at its Holm step's level.

    The same procedure as :func:`evalband.analysis._compare.decide_family` (which runs it in
    one batch over every slice of every candidate): Holm (1979) with the compatible
    per-hypothesis levels of :func:`evalband.stats._procedure.holm_decisions`.

    >>> from evalband.stats import Difference
    >>> class H:
    ...     def __init__(self, p, est): self.p_value, self.est = p, est
    ...     def interval_at(self, c):
    ...         half = 0.1 if c < 0.97 else 0.3
    ...         return Difference(self.est, self.est - half, self.est + half, "toy", c, True)
    >>> [d.verdict.value for d in decide_holm([H(0.001, 0.2), H(0.5, 0.05)], 0.05)]
    ['improved', 'no detectable change']
    """
    from evalband.stats import holm_decisions

    hyps = list(hypotheses)
    decision = holm_decisions([float(h.p_value) for h in hyps], alpha)
    out = []
    for h, p, level, rejected in zip(
        hyps, decision.p_adjusted.tolist(), decision.levels.tolist(),
        decision.rejected.tolist(), strict=True,
    ):
        difference = h.interval_at(1.0 - level)
        out.append(Decided(float(p), float(level), bool(rejected), difference,
                           slice_verdict(bool(rejected), difference.estimate)))
    return out
