"""Run summaries and paired counts: the first reading of a run's episodes."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband.episode import EpisodeRecord, Outcome, record_key
from evalband.stats import Interval, interval

__all__ = [
    "RunSummary",
    "PairedCounts",
    "PairedOutcomes",
    "summarize",
    "counted",
    "paired_outcomes",
    "paired_counts",
    "error_causes",
    "rank_error_causes",
    "summary_from_tallies",
    "MAX_ERROR_CAUSES",
]


@dataclass(frozen=True)
class RunSummary:
    """Counts by outcome, the success rate with its band, and time among successes.

    Attributes:
        n_attempted: every recorded episode, errors included.
        n: the denominator of the rate (errors excluded unless counted as failures).
        counts: episodes per outcome (success, failure, timeout, error).
        rate: success rate with its Wilson band (``None`` when ``n == 0``).
        mean_time_to_success_s: mean time among successes; ``None`` when there are none.
        errors_as_failures: whether errors were counted as failures.
        verdict_withheld: errors exist and were not counted: no verdict until the user decides.
        assisted: episodes with human assistance.
        unaided_successes: successes without assistance.
        error_causes: the distinct error messages (first line) of the ``error`` episodes with
            their counts, most frequent first (at most :data:`MAX_ERROR_CAUSES`; the rest
            are counted under ``"(other messages)"``).
    """

    n_attempted: int
    n: int
    counts: dict[str, int]
    rate: Interval | None
    mean_time_to_success_s: float | None
    errors_as_failures: bool
    verdict_withheld: bool
    assisted: int = 0
    unaided_successes: int = 0
    per_cell: dict[str, dict[str, Any]] = field(default_factory=dict)
    error_causes: tuple[tuple[str, int], ...] = ()

    @property
    def successes(self) -> int:
        """Number of successes."""
        return self.counts.get(Outcome.SUCCESS.value, 0)

    @property
    def time_text(self) -> str:
        """Mean time among successes in words ("No successes" when there are none)."""
        if self.mean_time_to_success_s is None:
            if self.successes:  # successes whose times were not recorded (an import)
                return "not recorded"
            return "No successes"
        return f"{self.mean_time_to_success_s:.6f} s"

    def error_lines(self) -> list[str]:
        """The error causes as lines, e.g. ``"64 x ValueError: boom"`` (none: ``[]``)."""
        return [f"{k} x {message}" for message, k in self.error_causes]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["successes"] = self.successes
        out["rate"] = self.rate.as_dict() if self.rate else None
        out["error_causes"] = [{"message": m, "count": k} for m, k in self.error_causes]
        return out


MAX_ERROR_CAUSES = 5
"""How many distinct error messages a summary lists."""


def error_causes(records: Iterable[EpisodeRecord]) -> tuple[tuple[str, int], ...]:
    r"""The distinct first lines of the error episodes' messages, with counts, commonest first.

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, msg: EpisodeRecord("r", "p", "f", "", i, 0, i, "error", False, False,
    ...                                    0, error=msg)
    >>> error_causes([rec(0, "ValueError: boom\n  at x"), rec(1, "ValueError: boom"),
    ...               rec(2, None)])
    (('ValueError: boom', 2), ('(no message)', 1))
    """
    return rank_error_causes(Counter(r.error for r in records if r.outcome is Outcome.ERROR))


def rank_error_causes(messages: Mapping[str | None, int]) -> tuple[tuple[str, int], ...]:
    r"""Error messages with counts -> the summary's causes (first lines, commonest first).

    >>> rank_error_causes({"A: x\ny": 1, "A: x": 2, None: 1})
    (('A: x', 3), ('(no message)', 1))
    """
    counts: Counter[str] = Counter()
    for message, k in messages.items():
        counts[((message or "").strip().splitlines() or ["(no message)"])[0][:300]] += k
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if len(ranked) <= MAX_ERROR_CAUSES:
        return tuple(ranked)
    rest = sum(k for _, k in ranked[MAX_ERROR_CAUSES - 1:])
    return (*ranked[: MAX_ERROR_CAUSES - 1], ("(other messages)", rest))


_OUTCOME = operator.attrgetter("outcome")


def _count(records: Sequence[EpisodeRecord], errors_as_failures: bool) -> dict[str, Any]:
    # One C-level pass per quantity (a report summarises 100,000 episodes several times).
    counts = {o.value: 0 for o in Outcome}
    for outcome, k in Counter(map(_OUTCOME, records)).items():
        counts[Outcome(outcome).value] += k
    wins = [r for r in records if r.outcome is Outcome.SUCCESS]
    times = [r.time_to_success_s for r in wins if r.time_to_success_s is not None]
    assisted = sum(1 for r in records if r.assisted)
    unaided = sum(1 for r in wins if not r.assisted)
    errors = counts[Outcome.ERROR.value]
    n = len(records) if errors_as_failures else len(records) - errors
    return {
        "counts": counts,
        "n": n,
        "times": times,
        "assisted": assisted,
        "unaided": unaided,
        "errors": errors,
    }


def summarize(
    records: Iterable[EpisodeRecord],
    *,
    errors_as_failures: bool = False,
    confidence: float = 0.95,
) -> RunSummary:
    """Summarize a run's episodes.

    A timeout stays in the denominator. Errors are counted and, unless
    ``errors_as_failures``, left out of the rate's denominator with the verdict withheld.

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, o: EpisodeRecord("r", "p", "f", "", i, 0, i, o, o == "success",
    ...                                  o == "timeout", 3, 0.3, 0.3 if o == "success" else None)
    >>> s = summarize([rec(0, "success"), rec(1, "timeout"), rec(2, "failure")])
    >>> s.n, s.successes, round(s.rate.low, 4), s.time_text
    (3, 1, 0.0615, '0.300000 s')
    """
    rows = list(records)
    total = _count(rows, errors_as_failures)
    per_cell: dict[str, dict[str, Any]] = {}
    cells: dict[str, list[EpisodeRecord]] = {}
    for record in rows:
        cells.setdefault(record.cell, []).append(record)
    for cell, cell_rows in cells.items():
        c = _count(cell_rows, errors_as_failures)
        successes = c["counts"][Outcome.SUCCESS.value]
        per_cell[cell] = {
            "slices": dict(cell_rows[0].slices),
            "n": c["n"],
            "counts": c["counts"],
            "rate": (
                interval(successes, c["n"], confidence=confidence).as_dict() if c["n"] else None
            ),
        }
    successes = total["counts"][Outcome.SUCCESS.value]
    times = total["times"]
    return RunSummary(
        n_attempted=len(rows),
        n=total["n"],
        counts=total["counts"],
        rate=interval(successes, total["n"], confidence=confidence) if total["n"] else None,
        mean_time_to_success_s=(sum(times) / len(times)) if times else None,
        errors_as_failures=errors_as_failures,
        verdict_withheld=bool(total["errors"]) and not errors_as_failures,
        assisted=total["assisted"],
        unaided_successes=total["unaided"],
        per_cell=per_cell,
        error_causes=error_causes(rows) if total["errors"] else (),
    )


@dataclass(frozen=True)
class PairedCounts:
    """Matched-episode counts for runs A and B on one panel.

    Attributes:
        both: pairs where both succeed.
        a_only: only A succeeds.
        b_only: only B succeeds.
        neither: neither succeeds.
        unmatched: episodes present in only one run.
        excluded_errors: pairs left out because one side is an error.
    """

    both: int
    a_only: int
    b_only: int
    neither: int
    unmatched: int = 0
    excluded_errors: int = 0

    @property
    def n(self) -> int:
        """Number of matched pairs used."""
        return self.both + self.a_only + self.b_only + self.neither

    def as_dict(self) -> dict[str, int]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["n"] = self.n
        return out


def counted(
    records: Iterable[EpisodeRecord], errors_as_failures: bool = False
) -> list[EpisodeRecord]:
    """The records a rate counts: every one with ``errors_as_failures``, else the non-errors.

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, o: EpisodeRecord("r", "p", "f", "", i, 0, i, o, True, False, 3)
    >>> [r.outcome.value for r in counted([rec(0, "error"), rec(1, "failure")])]
    ['failure']
    >>> len(counted([rec(0, "error"), rec(1, "failure")], errors_as_failures=True))
    2
    """
    return [r for r in records if errors_as_failures or r.outcome is not Outcome.ERROR]


@dataclass(frozen=True)
class PairedOutcomes:
    """Matched episodes of runs A and B, aligned: ``a[i]``, ``b[i]`` are ``keys[i]``'s successes.

    Attributes:
        keys: the pairing keys ``(cell, episode, repeat)`` of the pairs used, in
            accumulation order (episode, then repeat, then cell).
        a: whether A succeeded, per pair (``bool`` array).
        b: whether B succeeded, per pair (``bool`` array).
        unmatched: episodes present in only one run.
        excluded_errors: pairs left out because one side is an error.
        make_keys: how :attr:`keys` are made (they are read only on demand: a million
            tuples cost a report more than its curves).
    """

    a: NDArray[np.bool_]
    b: NDArray[np.bool_]
    unmatched: int
    excluded_errors: int
    make_keys: Callable[[], list[tuple[str, int, int]]] = field(repr=False, compare=False)

    @cached_property
    def keys(self) -> list[tuple[str, int, int]]:
        """The pairing keys ``(cell, episode, repeat)`` of the pairs used, in order."""
        return self.make_keys()


def paired_outcomes(
    a: Iterable[EpisodeRecord],
    b: Iterable[EpisodeRecord],
    *,
    errors_as_failures: bool = False,
) -> PairedOutcomes:
    """Pair episodes by ``(cell, episode, repeat)``; drop pairs with an error unless counted.

    The one pairing rule behind :func:`paired_counts` and the report's running verdicts
    (which take cumulative sums of ``a`` and ``b``).

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, o: EpisodeRecord("r", "p", "f", "", i, 0, i, o, True, False, 3)
    >>> p = paired_outcomes([rec(1, "success"), rec(0, "error")],
    ...                     [rec(0, "success"), rec(1, "failure"), rec(2, "success")])
    >>> p.keys, p.a.tolist(), p.b.tolist(), p.unmatched, p.excluded_errors
    ([('', 1, 0)], [True], [False], 1, 1)
    """
    from evalband.analysis._pairs import stored_columns

    if isinstance(a, Sequence) and isinstance(b, Sequence):
        ca, cb = stored_columns(a), stored_columns(b)
        if ca is not None and cb is not None:
            return _paired_columns(ca, cb, errors_as_failures)
    a_by_key = {record_key(r): r for r in a}
    b_by_key = {record_key(r): r for r in b}
    common = a_by_key.keys() & b_by_key.keys()
    error = Outcome.ERROR
    keys = sorted(
        (k for k in common if errors_as_failures
         or (a_by_key[k].outcome is not error and b_by_key[k].outcome is not error)),
        key=operator.itemgetter(1, 2, 0),
    )
    n = len(keys)
    return PairedOutcomes(
        a=np.fromiter((a_by_key[k].outcome is Outcome.SUCCESS for k in keys), dtype=bool, count=n),
        b=np.fromiter((b_by_key[k].outcome is Outcome.SUCCESS for k in keys), dtype=bool, count=n),
        unmatched=len(a_by_key.keys() ^ b_by_key.keys()),
        excluded_errors=len(common) - n,
        make_keys=lambda: keys,
    )


def _paired_columns(
    a: Mapping[str, NDArray[Any]], b: Mapping[str, NDArray[Any]], errors_as_failures: bool
) -> PairedOutcomes:
    """:func:`paired_outcomes` of two stored runs' columns (the same result, no records)."""
    from evalband.analysis._pairs import cell_ranks
    from evalband.store._columns import OUTCOME_CODES

    cells, (code_a, code_b) = cell_ranks(a["cell"], b["cell"])
    span_e = int(max(a["episode"].max(initial=0), b["episode"].max(initial=0))) + 1
    span_r = int(max(a["repeat"].max(initial=0), b["repeat"].max(initial=0))) + 1
    key_a = (code_a * span_e + a["episode"]) * span_r + a["repeat"]
    key_b = (code_b * span_e + b["episode"]) * span_r + b["repeat"]
    if key_a.size == key_b.size and np.array_equal(key_a, key_b):  # the same episodes
        ia = ib = np.arange(key_a.size)
    else:
        _, ia, ib = np.intersect1d(key_a, key_b, assume_unique=True, return_indices=True)
    out_a, out_b = a["outcome"][ia], b["outcome"][ib]
    common = int(ia.size)
    if not errors_as_failures:
        error = OUTCOME_CODES.index(Outcome.ERROR.value)
        keep = (out_a != error) & (out_b != error)
        ia, ib, out_a, out_b = ia[keep], ib[keep], out_a[keep], out_b[keep]
    order = np.lexsort((code_a[ia], a["repeat"][ia], a["episode"][ia]))
    ia, out_a, out_b = ia[order], out_a[order], out_b[order]
    success = OUTCOME_CODES.index(Outcome.SUCCESS.value)

    def keys() -> list[tuple[str, int, int]]:
        return list(zip([cells[c] for c in code_a[ia].tolist()], a["episode"][ia].tolist(),
                        a["repeat"][ia].tolist(), strict=True))

    return PairedOutcomes(
        a=out_a == success,
        b=out_b == success,
        unmatched=int(key_a.size + key_b.size - 2 * common),
        excluded_errors=common - int(ia.size),
        make_keys=keys,
    )


def paired_counts(
    a: Iterable[EpisodeRecord],
    b: Iterable[EpisodeRecord],
    *,
    errors_as_failures: bool = False,
) -> PairedCounts:
    """Pair episodes by ``(cell, episode, repeat)`` and count the 2x2 table.

    Pairing is :func:`paired_outcomes`.

    >>> from evalband.episode import EpisodeRecord
    >>> rec = lambda i, o: EpisodeRecord("r", "p", "f", "", i, 0, i, o, True, False, 3)
    >>> a = [rec(0, "success"), rec(1, "failure")]
    >>> b = [rec(0, "success"), rec(1, "success")]
    >>> paired_counts(a, b)
    PairedCounts(both=1, a_only=0, b_only=1, neither=0, unmatched=0, excluded_errors=0)
    """
    p = paired_outcomes(a, b, errors_as_failures=errors_as_failures)
    return PairedCounts(
        both=int(np.count_nonzero(p.a & p.b)),
        a_only=int(np.count_nonzero(p.a & ~p.b)),
        b_only=int(np.count_nonzero(p.b & ~p.a)),
        neither=int(np.count_nonzero(~p.a & ~p.b)),
        unmatched=p.unmatched,
        excluded_errors=p.excluded_errors,
    )


def summary_from_tallies(
    tallies: Mapping[str, Mapping[str, Any]],
    *,
    errors_as_failures: bool = False,
    confidence: float = 0.95,
    causes: tuple[tuple[str, int], ...] = (),
) -> RunSummary:
    """The :class:`RunSummary` of cells given by their tallies (counted by SQLite).

    Each tally is as :func:`evalband.store._columns.cell_tallies` gives it: ``slices``
    (a dict or its JSON text), ``counts`` per outcome, ``time_sum`` and ``time_n`` over
    successes with a time, ``assisted`` and ``unaided_successes``. The result equals
    :func:`summarize` on the same episodes (``error_causes`` as given in ``causes``).

    >>> t = {"c": {"slices": {}, "counts": {"success": 2, "failure": 1, "timeout": 0,
    ...            "error": 1}, "time_sum": 3.0, "time_n": 2, "assisted": 0,
    ...            "unaided_successes": 2}}
    >>> s = summary_from_tallies(t)
    >>> s.n, s.successes, s.time_text, s.verdict_withheld
    (3, 2, '1.500000 s', True)
    """
    import json

    counts = {o.value: 0 for o in Outcome}
    per_cell: dict[str, dict[str, Any]] = {}
    time_sum, time_n, assisted, unaided = 0.0, 0, 0, 0
    for cell, t in tallies.items():
        c = {o.value: int(t["counts"].get(o.value, 0)) for o in Outcome}
        for key, k in c.items():
            counts[key] += k
        n_cell = sum(c.values()) - (0 if errors_as_failures else c[Outcome.ERROR.value])
        slices = t["slices"]
        per_cell[cell] = {
            "slices": dict(json.loads(slices) if isinstance(slices, str) else slices),
            "n": n_cell,
            "counts": c,
            "rate": (interval(c[Outcome.SUCCESS.value], n_cell, confidence=confidence)
                     .as_dict() if n_cell else None),
        }
        time_sum += float(t["time_sum"])
        time_n += int(t["time_n"])
        assisted += int(t["assisted"])
        unaided += int(t["unaided_successes"])
    attempted = sum(counts.values())
    errors = counts[Outcome.ERROR.value]
    n = attempted if errors_as_failures else attempted - errors
    successes = counts[Outcome.SUCCESS.value]
    return RunSummary(
        n_attempted=attempted,
        n=n,
        counts=counts,
        rate=interval(successes, n, confidence=confidence) if n else None,
        mean_time_to_success_s=time_sum / time_n if time_n else None,
        errors_as_failures=errors_as_failures,
        verdict_withheld=bool(errors) and not errors_as_failures,
        assisted=assisted,
        unaided_successes=unaided,
        per_cell=per_cell,
        error_causes=causes if errors else (),
    )
