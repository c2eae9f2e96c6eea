"""Result types shared by the statistics functions: frozen, plain, serialisable."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Interval", "Difference", "TestResult"]


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
    >>> d.excludes_zero
    False
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
    def verdict(self) -> str:
        """The interval's verdict in words."""
        if self.low > 0.0:
            return "A is better: the interval excludes 0"
        if self.high < 0.0:
            return "B is better: the interval excludes 0"
        return "the interval contains 0: the ranking is not established at this n"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (with the verdict)."""
        out = _shallow(self)
        out["excludes_zero"] = self.excludes_zero
        out["verdict"] = self.verdict
        return out


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
