"""The typed parts of a compared slice: its test, and its intervals as JSON.

A :class:`~evalband.analysis._compare.SliceComparison` carries its rates as
:class:`~evalband.stats.Interval`, its differences as :class:`~evalband.stats.Difference` and
its test as a :class:`SliceTest`: the fixed-n exact test (McNemar's or Fisher's) or the
anytime-valid sequential test of ``compare --sequential``. The functions here write them as
the ``--json`` output has always written them (``docs/schemas/comparison.schema.json``) and
read them back, so that a stored result round-trips exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from evalband.stats import Difference, Interval

if TYPE_CHECKING:
    from evalband.stats import SequentialTest

__all__ = [
    "SliceTest",
    "TWO_SIDED",
    "time_delta_as_dict",
    "time_delta_from_dict",
    "maybe_interval",
    "maybe_difference",
]

TWO_SIDED = "two-sided (twice the smaller tail)"
"""How the exact tests' p-values are two-sided."""


@dataclass(frozen=True)
class SliceTest:
    """The test behind one slice's verdict.

    Attributes:
        method: ``"mcnemar-exact"``, ``"fisher-exact"``, or the sequential test's name
            (``"sequential (...)"``).
        p_value: the exact test's two-sided p (``None`` for the sequential test: it reads
            e-values against a threshold instead).
        sidedness: how the exact test's p is two-sided (``None`` for the sequential test).
        details: the counts the exact test read (McNemar: the discordant pairs; Fisher: both
            arms' successes and episodes).
        sequential: the anytime-valid test at this look (``None`` for an exact test).
        pairs: the matched pairs the sequential test read (unpaired slices paired in order).
        max_pairs: a declared design's cap on pairs (a designed stop; else ``None``).
        futility: a declared design's futility factor (a designed stop).
        designed: whether the slice was stopped under a declared design.

    >>> t = SliceTest("mcnemar-exact", 0.03, TWO_SIDED, {"candidate_only": 1, "baseline_only": 9})
    >>> t.is_sequential, SliceTest.from_dict(t.as_dict()) == t
    (False, True)
    """

    method: str
    p_value: float | None
    sidedness: str | None = None
    details: dict[str, int] = field(default_factory=dict)
    sequential: SequentialTest | None = None
    pairs: dict[str, int] = field(default_factory=dict)
    max_pairs: int | None = None
    futility: float | None = None
    designed: bool = False

    @property
    def is_sequential(self) -> bool:
        """Whether this is the anytime-valid test."""
        return self.sequential is not None

    @property
    def e_regression(self) -> float | None:
        """The sequential test's likelihood ratio for "candidate worse" (None: exact test)."""
        return None if self.sequential is None else self.sequential.e_regression

    @property
    def e_improvement(self) -> float | None:
        """The sequential test's likelihood ratio for "candidate better" (None: exact test)."""
        return None if self.sequential is None else self.sequential.e_improvement

    @property
    def threshold(self) -> float | None:
        """The e-value the sequential test must reach per direction (None: exact test)."""
        return None if self.sequential is None else self.sequential.threshold

    def as_dict(self) -> dict[str, Any]:
        """The test as the ``--json`` output writes it (the keys of its kind only)."""
        out: dict[str, Any] = {"method": self.method, "p_value": self.p_value}
        if self.sequential is None:
            out["sidedness"] = self.sidedness
            out["details"] = dict(self.details)
            return out
        out.update(self.sequential.as_dict())
        out["pairs"] = dict(self.pairs)
        if self.designed:
            out["max_pairs"] = self.max_pairs
            out["futility"] = self.futility
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SliceTest:
        """The test back from :meth:`as_dict` (a stored result)."""
        if "e_regression" not in data:
            return cls(str(data["method"]), data.get("p_value"), data.get("sidedness"),
                       dict(data.get("details") or {}))
        from evalband.stats import SequentialTest

        names = [f.name for f in fields(SequentialTest)]
        return cls(str(data["method"]), data.get("p_value"),
                   sequential=SequentialTest(**{k: data[k] for k in names}),
                   pairs=dict(data.get("pairs") or {}), max_pairs=data.get("max_pairs"),
                   futility=data.get("futility"), designed="max_pairs" in data)


def time_delta_as_dict(iv: Interval | None) -> dict[str, Any] | None:
    """The paired time-to-success difference as ``--json`` writes it (``n`` pairs, no ``k``).

    >>> time_delta_as_dict(Interval(-0.4, -0.6, -0.2, "paired t", 0.95, n=12))["n"]
    12
    """
    if iv is None:
        return None
    return {"estimate": iv.estimate, "low": iv.low, "high": iv.high, "n": iv.n,
            "confidence": iv.confidence, "method": iv.method}


def time_delta_from_dict(data: Mapping[str, Any] | None) -> Interval | None:
    """:func:`time_delta_as_dict` read back."""
    return None if data is None else Interval.from_dict(data)


def maybe_interval(data: Mapping[str, Any] | None) -> Interval | None:
    """An :class:`~evalband.stats.Interval` from its dict, ``None`` for none."""
    return None if data is None else Interval.from_dict(data)


def maybe_difference(data: Mapping[str, Any] | None) -> Difference | None:
    """A :class:`~evalband.stats.Difference` from its dict, ``None`` for none."""
    return None if data is None else Difference.from_dict(data)
