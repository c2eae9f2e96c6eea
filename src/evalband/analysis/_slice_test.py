"""The test behind a compared slice's verdict: the exact test or the anytime-valid one.

A :class:`~evalband.analysis._models.SliceComparison` carries its test as a :class:`SliceTest`:
the fixed-n exact test (McNemar's or Fisher's) or the anytime-valid sequential test of
``compare --sequential``. Its JSON is generated (:mod:`evalband.analysis._models`): the keys of
its kind only (fields at their defaults are left out; the sequential test's fields are written
inline), as ``--json`` has always written them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from evalband.stats._sequential import SequentialTest

__all__ = ["SliceTest", "TWO_SIDED"]

TWO_SIDED = "two-sided (twice the smaller tail)"
"""How the exact tests' p-values are two-sided."""


class SliceTest(msgspec.Struct, frozen=True, omit_defaults=True):
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

    >>> from evalband.analysis._models import from_wire, to_wire
    >>> t = SliceTest("mcnemar-exact", 0.03, TWO_SIDED, {"candidate_only": 1, "baseline_only": 9})
    >>> t.is_sequential, from_wire(SliceTest, to_wire(t)) == t
    (False, True)
    """

    __wire_flatten__: ClassVar[tuple[str, ...]] = ("sequential",)

    method: str
    p_value: float | None
    sidedness: str | None = None
    details: dict[str, int] = {}
    sequential: SequentialTest | None = None
    pairs: dict[str, int] = {}
    max_pairs: int | None = None
    futility: float | None = None

    @property
    def designed(self) -> bool:
        """Whether the slice was stopped under a declared design."""
        return self.max_pairs is not None

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
        from evalband.analysis._models import to_wire

        out: dict[str, Any] = to_wire(self)
        return out
