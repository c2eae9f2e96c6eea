"""Result types shared by the statistics functions: frozen, plain, serialisable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

__all__ = ["Interval", "Difference", "TestResult", "SliceVerdict"]


class SliceVerdict(StrEnum):
    """The verdict of one decided difference ``A - B`` (compares equal to its text).

    The one vocabulary of every difference evalband reads (compare's slices, sessions,
    drift, the labs; see :mod:`evalband.analysis._verdicts`, which decides them). It lives
    here, with :class:`Difference`, so that an interval read alone speaks the same words.

    >>> SliceVerdict.REGRESSED == "regressed"
    True
    """

    REGRESSED = "regressed"
    IMPROVED = "improved"
    NON_INFERIOR = "non-inferior"
    NO_CHANGE = "no detectable change"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Interval:
    """A confidence interval for one proportion or metric.

    Attributes:
        estimate: point estimate (k/n for a proportion).
        low: lower bound.
        high: upper bound.
        method: the method's name, e.g. ``"wilson"``.
        confidence: nominal two-sided confidence level.
        k: successes, when the interval is for a count.
        n: trials (or observations), when known.

    >>> Interval(0.5, 0.3, 0.7, "wilson", 0.95, 5, 10).contains(0.6)
    True
    """

    estimate: float
    low: float
    high: float
    method: str
    confidence: float
    k: int | None = None
    n: int | None = None

    @property
    def width(self) -> float:
        """High minus low."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the closed interval."""
        return self.low <= value <= self.high

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return _shallow(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interval:
        """The interval back from :meth:`as_dict` (keys it does not know are ignored).

        >>> i = Interval(0.5, 0.3, 0.7, "wilson", 0.95, 5, 10)
        >>> Interval.from_dict(i.as_dict()) == i
        True
        """
        return cls(**_known(cls, data))


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of dataclass ``cls`` found in ``data``."""
    return {f.name: data[f.name] for f in fields(cls) if f.name in data}


def _shallow(obj: Any) -> dict[str, Any]:
    """Fields to a dict, copying dict-valued fields (cheaper than ``dataclasses.asdict``)."""
    out = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        out[f.name] = dict(value) if isinstance(value, dict) else value
    return out


@dataclass(frozen=True)
class Difference:
    """A confidence interval for a difference of two success rates, ``p_a - p_b``.

    Attributes:
        estimate: observed difference.
        low: lower bound.
        high: upper bound.
        method: e.g. ``"newcombe-hybrid-score"`` or ``"newcombe-paired"``.
        confidence: nominal two-sided confidence level.
        paired: whether the interval used matched episodes.
        counts: the counts the interval was computed from.

    >>> d = Difference(0.1, -0.05, 0.25, "newcombe", 0.95, False)
    >>> d.excludes_zero, d.verdict
    (False, <SliceVerdict.NO_CHANGE: 'no detectable change'>)
    """

    estimate: float
    low: float
    high: float
    method: str
    confidence: float
    paired: bool
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely above or below 0."""
        return self.low > 0.0 or self.high < 0.0

    @property
    def verdict(self) -> SliceVerdict:
        """The interval read alone: improved (above 0), regressed (below 0), or no change."""
        if self.low > 0.0:
            return SliceVerdict.IMPROVED
        if self.high < 0.0:
            return SliceVerdict.REGRESSED
        return SliceVerdict.NO_CHANGE

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (with the verdict)."""
        out = _shallow(self)
        out["excludes_zero"] = self.excludes_zero
        out["verdict"] = self.verdict
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Difference:
        """The difference back from :meth:`as_dict`.

        ``excludes_zero`` and ``verdict`` follow from the bounds and are not read back,
        whatever words an older evalband wrote.

        >>> d = Difference(-0.2, -0.3, -0.1, "newcombe", 0.95, True, {"both": 3})
        >>> back = Difference.from_dict({**d.as_dict(), "verdict": "B is better"})
        >>> back == d, back.verdict.value
        (True, 'regressed')
        """
        out = _known(cls, data)
        out["counts"] = dict(out.get("counts") or {})
        return cls(**out)


@dataclass(frozen=True)
class TestResult:
    """The result of a hypothesis test.

    Attributes:
        statistic: the test statistic (NaN when the test has none, e.g. exact tests).
        p_value: two-sided p-value in [0, 1].
        method: the test's name.
        details: extra numbers worth reporting (degrees of freedom, counts...).

    >>> TestResult(1.0, 0.5, "mcnemar-exact").p_value
    0.5
    """

    __test__ = False  # not a pytest test class

    statistic: float
    p_value: float
    method: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return _shallow(self)
