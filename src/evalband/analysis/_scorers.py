"""Several scorers per episode: named judgements, their agreement, and PPI from a trusted few.

Every episode answers these scorers from its own record:

========== ============== ===========================================================
name       source         value
========== ============== ===========================================================
success    outcome        1 success, 0 failure or timeout (an ``error`` has none)
unaided    outcome        1 success without human help, else 0 (no ``error``)
score      score          the ordinal ``score`` (a robot session: the operator's)
suggestion machine        a robot session's machine suggestion (the gripper reading)
truth      simulator      a simulated robot's ground truth (``sim-arm``)
========== ============== ===========================================================

and any scorer stored with it (``extra["scorers"]``: a human's labels, a model judge's, an
imported label; :func:`evalband.store.add_scores`), each with its source.

:func:`scorer_agreement` holds two scorers against each other on the episodes both judged:
accuracy (exact agreement, Wilson interval), Cohen's kappa with its interval
(:func:`evalband.stats.cohen_kappa`; quadratic-weighted kappa beside it for more than two
levels) and the confusion table. When the first (trusted) scorer judged only some of the
episodes the second (cheap) one judged, the trusted scorer's mean over all of them is
estimated by prediction-powered inference (:func:`evalband.stats.ppi_mean`): unbiased, with
an interval that uses both scorers, beside the trusted labels' own. That needs the trusted
episodes to be a random sample of the run's (the result says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError

__all__ = ["BUILTIN_SCORERS", "ScorerAgreement", "scorer_agreement", "scorer_values",
           "scorers_of"]

BUILTIN_SCORERS: dict[str, str] = {
    "success": "outcome", "unaided": "outcome", "score": "score",
    "suggestion": "machine", "truth": "simulator",
}
"""Scorers every record answers from its own fields: name -> source."""

Key = tuple[str, int, int]


def _play(record: EpisodeRecord) -> dict[str, Any]:
    session = record.extra.get("session")
    play = session.get("play") if isinstance(session, dict) else None
    return play if isinstance(play, dict) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return float(value)
    return None


def _value(record: EpisodeRecord, name: str) -> float | None:
    if name in ("success", "unaided"):
        if record.outcome is Outcome.ERROR:
            return None
        return float(record.success if name == "success" else record.unaided_success)
    if name == "score":
        return None if record.score is None else float(record.score)
    if name in ("suggestion", "truth"):
        return _number(_play(record).get(name))
    stored = record.extra.get("scorers")
    entry = stored.get(name) if isinstance(stored, dict) else None
    return _number(entry.get("value")) if isinstance(entry, dict) else None


def scorer_values(records: Iterable[EpisodeRecord], name: str) -> dict[Key, float]:
    """``(cell, episode, repeat)`` -> the scorer's value, for the episodes it judged.

    >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "success", True, False, 5,
    ...                   extra={"scorers": {"human": {"value": 0, "source": "operator"}}})
    >>> scorer_values([r], "success"), scorer_values([r], "human")
    ({('', 0, 0): 1.0}, {('', 0, 0): 0.0})
    """
    out: dict[Key, float] = {}
    for record in records:
        value = _value(record, name)
        if value is not None:
            out[record.key] = value
    return out


def scorers_of(records: Iterable[EpisodeRecord]) -> dict[str, dict[str, Any]]:
    """The scorers the records carry: name -> ``{"source": ..., "episodes": n}``.

    A built-in scorer is listed when at least one episode has it; a stored scorer's source is
    the one its episodes name (several joined by ``+`` if they differ).

    >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "failure", True, False, 5,
    ...                   extra={"scorers": {"judge": {"value": 1, "source": "vlm"}}})
    >>> scorers_of([r])["judge"], sorted(scorers_of([r]))
    ({'source': 'vlm', 'episodes': 1}, ['judge', 'success', 'unaided'])
    """
    counts: dict[str, int] = {}
    sources: dict[str, set[str]] = {}
    for record in records:
        for name in BUILTIN_SCORERS:
            if _value(record, name) is not None:
                counts[name] = counts.get(name, 0) + 1
        stored = record.extra.get("scorers")
        if not isinstance(stored, dict):
            continue
        for name, entry in stored.items():
            if isinstance(entry, dict) and _number(entry.get("value")) is not None:
                counts[name] = counts.get(name, 0) + 1
                sources.setdefault(name, set()).add(str(entry.get("source", "?")))
    return {name: {"source": BUILTIN_SCORERS.get(name) or "+".join(sorted(sources[name])),
                   "episodes": n} for name, n in sorted(counts.items())}


@dataclass(frozen=True)
class ScorerAgreement:
    """Two scorers on the same episodes (see the module docstring).

    Attributes:
        run_id: the run.
        scorers: the two names, trusted first; ``sources``: their sources.
        n: episodes both judged; ``only_first``/``only_second``: judged by one of them.
        levels: the values seen (the confusion table's rows and columns, in order).
        table: counts, rows the first scorer's value, columns the second's.
        accuracy: exact agreement ``{estimate, low, high}`` (Wilson).
        kappa: Cohen's kappa (:class:`evalband.stats.Kappa`); ``weighted``: quadratic-
            weighted kappa when there are more than two levels, else ``None``.
        ppi: the trusted scorer's mean over every episode the cheap one judged
            (:class:`evalband.stats.PPIMean`), or ``None`` when the trusted one judged them
            all or none beyond the shared ones.
        notes: sentences the report prints.
        confidence: the intervals' level.
    """

    run_id: str
    scorers: tuple[str, str]
    sources: tuple[str, str]
    n: int
    only_first: int
    only_second: int
    levels: list[float]
    table: list[list[int]]
    accuracy: dict[str, float]
    kappa: Any
    weighted: Any
    ppi: Any
    notes: tuple[str, ...]
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "run_id": self.run_id, "scorers": list(self.scorers), "sources": list(self.sources),
            "n": self.n, "only_first": self.only_first, "only_second": self.only_second,
            "levels": [_plain(v) for v in self.levels], "table": [list(r) for r in self.table],
            "accuracy": dict(self.accuracy), "kappa": self.kappa.as_dict(),
            "weighted": None if self.weighted is None else self.weighted.as_dict(),
            "ppi": None if self.ppi is None else self.ppi.as_dict(),
            "notes": list(self.notes), "confidence": self.confidence,
        }


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def scorer_agreement(records: Sequence[EpisodeRecord], first: str, second: str, *,
                     run_id: str = "", confidence: float = 0.95) -> ScorerAgreement:
    """Agreement of ``first`` (trusted) and ``second`` (cheap) on the same episodes, and PPI.

    Raises:
        InvalidInputError: the same scorer twice, a scorer no episode has (the message lists
            those there are), no episode judged by both, or values that are not labels
            (whole numbers) where kappa needs categories.

    >>> rs = [EpisodeRecord("r", "p", "f", "", i, 0, i, "success" if i % 3 else "failure",
    ...                     True, False, 5, extra={"scorers": {"human": {
    ...                         "value": int(i % 3 > 0 or i == 3), "source": "operator"}}})
    ...       for i in range(12)]
    >>> a = scorer_agreement(rs, "human", "success")
    >>> a.n, a.table, round(a.accuracy["estimate"], 3)
    (12, [[3, 0], [1, 8]], 0.917)
    """
    from evalband.stats import interval
    from evalband.stats._kappa import cohen_kappa, kappa_table
    from evalband.stats._ppi import ppi_mean

    if first == second:
        raise InvalidInputError(f"agreement needs two different scorers; got {first!r} twice")
    available = scorers_of(records)
    for name in (first, second):
        if name not in available:
            raise InvalidInputError(f"no episode of run {run_id or '?'} has scorer {name!r}; "
                                    f"scorers: {', '.join(available) or 'none'}")
    a, b = scorer_values(records, first), scorer_values(records, second)
    shared = sorted(set(a) & set(b))
    if not shared:
        raise InvalidInputError(f"no episode was judged by both {first!r} and {second!r}")
    levels = sorted({a[k] for k in shared} | {b[k] for k in shared})
    if not all(v.is_integer() for v in levels):
        raise InvalidInputError(f"kappa needs labels (whole numbers); {first!r} or {second!r} "
                                f"holds {next(v for v in levels if not v.is_integer())}")
    cats = [int(v) for v in levels]
    table = kappa_table([int(a[k]) for k in shared], [int(b[k]) for k in shared], cats)
    agree = int(sum(table[i, i] for i in range(len(cats))))
    acc = interval(agree, len(shared), confidence=confidence)
    kappa = cohen_kappa(table, confidence=confidence)
    weighted = (cohen_kappa(table, weights="quadratic", confidence=confidence)
                if len(cats) > 2 else None)
    notes: list[str] = []
    if len(cats) == 1:
        notes.append(f"both scorers gave one value ({_plain(levels[0])}) to every shared "
                     "episode: kappa is undefined")
    if any(key[2] > 0 for key in shared):
        notes.append("some episodes repeat a condition (repeat > 0): these intervals treat "
                     "every episode as independent, so they are too narrow if repeats of one "
                     "condition tend to agree")
    cheap_only = sorted(set(b) - set(a))
    ppi = None
    if cheap_only:
        binary = set(levels) <= {0.0, 1.0} and {b[k] for k in cheap_only} <= {0.0, 1.0}
        ppi = ppi_mean([a[k] for k in shared], [b[k] for k in shared],
                       [b[k] for k in cheap_only], confidence=confidence,
                       method="mover" if binary else "clt")
        notes.append(
            f"{first!r} judged {len(shared)} of the {len(shared) + len(cheap_only)} episodes "
            f"{second!r} judged: the prediction-powered estimate of the mean of {first!r} "
            f"is unbiased only if those {len(shared)} were chosen at random")
    return ScorerAgreement(
        run_id=run_id, scorers=(first, second),
        sources=(available[first]["source"], available[second]["source"]), n=len(shared),
        only_first=len(set(a) - set(b)), only_second=len(cheap_only), levels=levels,
        table=table.tolist(),
        accuracy={"estimate": agree / len(shared), "low": acc.low, "high": acc.high},
        kappa=kappa, weighted=weighted, ppi=ppi, notes=tuple(notes), confidence=confidence)
