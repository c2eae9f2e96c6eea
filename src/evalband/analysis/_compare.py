"""Compare runs on one panel: per-slice paired deltas first, the weighted aggregate last.

The algorithm is the slice-aware panel's evaluation, with an interval on every number and one
decision procedure behind every verdict (:mod:`evalband.stats._procedure`): for each factor
value and each cell, both runs' rates with Wilson bands; an exact test per slice (McNemar's
where episodes pair by ``(cell, episode, repeat)``, Fisher's where they cannot, both
two-sided as twice the smaller tail); Holm across every slice of every candidate at
``alpha = 1 - confidence``; and for each slice the score interval at the level Holm used for it,
made compatible with the exact test, so that a slice is "regressed" exactly when its adjusted p
is at most alpha and exactly when its interval lies below 0. Under identical policies the chance
of any false "regressed" slice (and so of a false "regression" or "hidden regression" verdict)
is at most alpha / 2, whatever the number of slices. Interventions, latency budgets and error
episodes make a slice inconclusive; the aggregate ``Delta J = sum_s w_s Delta_s`` comes last
with a stratified MOVER interval, and a slice that regressed while the aggregate does not show
it is a hidden regression, flagged by name. Power statements are prospective: the drop in a
slice that the printed test would catch with 80% power at the adjusted level, and the episodes
needed to catch a declared effect.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from operator import is_
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from evalband.analysis._pairs import (
    PairTable,
    RunColumns,
    StoredRecords,
    cell_table_counts,
    columns_from_arrays,
    pair_table,
    run_columns,
)
from evalband.analysis._slice_test import (
    TWO_SIDED,
    SliceTest,
    maybe_difference,
    maybe_interval,
    time_delta_as_dict,
    time_delta_from_dict,
)
from evalband.analysis._verdicts import (
    SEVERITY,
    VERDICT_EXIT_CODES,
    SliceVerdict,
    Verdict,
    slice_verdict,
)
from evalband.episode import EpisodeRecord
from evalband.errors import PanelMismatchError
from evalband.panel import Cell, Panel, as_factor_spec
from evalband.stats import (
    Difference,
    Interval,
    compatible_difference,
    detectable_drop,
    episodes_for_drop,
    holm_decisions,
    interval,
    paired_exact_p,
    stratified_difference,
    unpaired_exact_p,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Verdict",
    "SliceVerdict",
    "DEFAULT_EFFECT",
    "RunData",
    "PairTable",
    "pair_table",
    "aggregate_from_tables",
    "decide_family",
    "SliceComparison",
    "Aggregate",
    "Comparison",
    "compare_runs",
    "compare_many",
    "VERDICT_EXIT_CODES",
    "worst_verdict",
    "slice_definitions",
]



DEFAULT_EFFECT = 0.10
"""The drop in success rate (10 points) that power statements are computed for by default."""
POWER_TARGET = 0.8


@dataclass(frozen=True)
class RunData:
    """A run's identity, panel and episodes (from the store or an artifact bundle).

    A stored run's ``records`` are :class:`~evalband.analysis._pairs.StoredRecords`: they
    carry the episodes column-wise, which a comparison reads without building one object
    per episode, and are read as records only when something iterates them.
    """

    run_id: str
    policy: str
    panel_fingerprint: str
    panel: Panel
    records: Sequence[EpisodeRecord]
    errors_as_failures: bool = False
    source: str = "store"

    def compare_columns(self, cells: Sequence[str]) -> RunColumns:
        """The arrays a comparison reads, for the panel's ``cells`` (other cells left out).

        Records in memory are read into arrays once per run: the arrays are kept (read-only)
        with the records they came from and used again while ``records`` holds the very
        same record objects in the same order (records are immutable), so comparing one run
        again -- a sweep of candidates, a report after a comparison -- reads no record twice.
        """
        if isinstance(self.records, StoredRecords):
            return columns_from_arrays(self.records.columns, cells)
        kept = _KEPT_COLUMNS.get(id(self))
        if (kept is not None and kept[0] == tuple(cells) and len(kept[1]) == len(self.records)
                and all(map(is_, kept[1], self.records))):
            return kept[2]
        cols = run_columns(self.records, cells)
        for array in vars(cols).values():
            array.flags.writeable = False
        if kept is None:
            weakref.finalize(self, _KEPT_COLUMNS.pop, id(self), None)
        _KEPT_COLUMNS[id(self)] = (tuple(cells), tuple(self.records), cols)
        return cols


_KEPT_COLUMNS: dict[int, tuple[tuple[str, ...], tuple[EpisodeRecord, ...], RunColumns]] = {}
"""Per in-memory :class:`RunData` (by ``id``, dropped with it): its cells, records, arrays."""


@dataclass(frozen=True)
class SliceComparison:
    """One slice (a factor value or a cell) compared between baseline and candidate.

    ``p_value`` is the exact test's raw two-sided p, ``p_holm`` its Holm-adjusted p over the
    whole family, ``delta`` the interval at confidence ``level`` (the level Holm used for this
    slice, compatible with the decision: it excludes 0 exactly when ``p_holm <= alpha``) and
    ``delta_unadjusted`` the same construction at the nominal level (labelled as such).
    ``detectable_drop`` is the smallest drop this slice's design catches with 80% power at the
    strictest adjusted level; ``episodes_for_effect`` the episodes (pairs) it would need for the
    declared ``effect``. ``time_to_success_delta_s`` is the paired mean time-to-success
    difference, candidate - baseline in seconds, over the matched pairs where both succeeded
    (with recorded times), with its Student t interval at the nominal confidence (descriptive:
    not part of the verdict, not adjusted; ``n`` is its number of pairs); ``None`` with fewer
    than two such pairs. Rates are :class:`~evalband.stats.Interval` (Wilson),
    differences :class:`~evalband.stats.Difference`, the test a
    :class:`~evalband.analysis._slice_test.SliceTest`; :meth:`as_dict` writes them as the
    ``--json`` output does.
    """

    kind: str  # "factor", "cell" or "all"
    name: str  # e.g. "embodiment=franka_panda"
    n_baseline: int
    successes_baseline: int
    rate_baseline: Interval | None
    n_candidate: int
    successes_candidate: int
    rate_candidate: Interval | None
    pairing: str  # "paired" or "unpaired"
    pairs: dict[str, int]
    delta: Difference | None
    test: SliceTest | None
    p_value: float | None
    p_holm: float | None
    verdict: SliceVerdict
    reasons: list[str] = field(default_factory=list)
    primary: bool = False
    level: float | None = None
    delta_unadjusted: Difference | None = None
    detectable_drop: float | None = None
    episodes_for_effect: int | None = None
    effect: float | None = None
    possible_regression: bool = False
    unaided_rate_baseline: float | None = None
    unaided_rate_candidate: float | None = None
    intervention_rate_baseline: float | None = None
    intervention_rate_candidate: float | None = None
    inflated_baseline: float | None = None
    inflated_candidate: float | None = None
    latency_p95_candidate_ms: float | None = None
    latency_budget_ms: float | None = None
    excluded: bool = False
    margin: float | None = None
    mean_time_to_success_baseline_s: float | None = None
    mean_time_to_success_candidate_s: float | None = None
    time_to_success_delta_s: Interval | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the ``slices`` items of ``--json``)."""
        out = dict(self.__dict__)
        for name in ("rate_baseline", "rate_candidate", "delta", "delta_unadjusted", "test"):
            value = out[name]
            out[name] = None if value is None else value.as_dict()
        out["time_to_success_delta_s"] = time_delta_as_dict(self.time_to_success_delta_s)
        out["pairs"] = dict(self.pairs)
        out["reasons"] = list(self.reasons)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SliceComparison:
        """The row back from :meth:`as_dict` (a stored result); unknown keys are ignored."""
        test = data.get("test")
        return cls(**_known(
            cls, data, verdict=SliceVerdict(data["verdict"]),
            rate_baseline=maybe_interval(data.get("rate_baseline")),
            rate_candidate=maybe_interval(data.get("rate_candidate")),
            delta=maybe_difference(data.get("delta")),
            delta_unadjusted=maybe_difference(data.get("delta_unadjusted")),
            test=None if test is None else SliceTest.from_dict(test),
            time_to_success_delta_s=time_delta_from_dict(data.get("time_to_success_delta_s")),
        ))


@dataclass(frozen=True)
class Aggregate:
    """The weighted aggregate, reported last."""

    weights: dict[str, float]
    rate_baseline: float
    rate_candidate: float
    delta: float
    low: float
    high: float
    method: str
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Aggregate:
        """The aggregate back from :meth:`as_dict`."""
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Comparison:
    """Baseline vs candidate on one panel: slices first, aggregate last, one verdict.

    ``peeking`` holds the notices that this fixed-n verdict was read off an unfinished run or
    re-read at a larger n (:func:`evalband.analysis._sequential.peeking_notes`; ``compare``
    sets them, and stores them with the result): every renderer says them first, and
    :meth:`as_dict` writes them under ``peeking`` and first in ``notes``.
    """

    baseline: str
    candidate: str
    baseline_policy: str
    candidate_policy: str
    panel_name: str
    panel_fingerprint: str
    panel_mismatch: bool
    slice_rows: list[SliceComparison]
    aggregate: Aggregate
    hidden_regressions: list[str]
    possible_regressions: list[str]
    verdict: Verdict
    sentence: str
    notes: list[str]
    confidence: float
    effect: float = DEFAULT_EFFECT
    family_size: int = 0
    peeking: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The documented exit status for this verdict."""
        return VERDICT_EXIT_CODES[self.verdict]

    @property
    def slices(self) -> pd.DataFrame:
        """The slice table as a DataFrame (one row per slice)."""
        import pandas as pd

        rows = []
        for row in self.slice_rows:
            data = row.as_dict()
            delta = row.delta
            data["delta"] = None if delta is None else delta.estimate
            data["delta_low"] = None if delta is None else delta.low
            data["delta_high"] = None if delta is None else delta.high
            for arm, rate in (("baseline", row.rate_baseline), ("candidate", row.rate_candidate)):
                data[f"rate_{arm}"] = None if rate is None else rate.estimate
            data.pop("test")
            data.pop("delta_unadjusted")
            rows.append(data)
        return pd.DataFrame(rows)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the ``--json`` output; see docs/schemas/)."""
        return {
            "schema": "evalband-comparison/2",
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_policy": self.baseline_policy,
            "candidate_policy": self.candidate_policy,
            "panel_name": self.panel_name,
            "panel_fingerprint": self.panel_fingerprint,
            "panel_mismatch": self.panel_mismatch,
            "confidence": self.confidence,
            "procedure": {
                "slice_test": "exact (McNemar when paired, Fisher otherwise), two-sided",
                "multiplicity": "holm",
                "family_size": self.family_size,
                # the declared level, not 1 - 0.95 in binary floating point (0.0500...044)
                "alpha": float(f"{1.0 - self.confidence:.12g}"),
                "interval": "score interval at the Holm level of each slice, compatible",
                "aggregate": self.aggregate.method,
                "effect": self.effect,
            },
            "slices": [row.as_dict() for row in self.slice_rows],
            "aggregate": self.aggregate.as_dict(),
            "hidden_regressions": self.hidden_regressions,
            "possible_regressions": self.possible_regressions,
            "verdict": self.verdict,
            "sentence": self.sentence,
            "exit_code": self.exit_code,
            "notes": [*self.peeking, *self.notes],
            "peeking": list(self.peeking),
        }

    def to_json(self) -> str:
        """The comparison as JSON text (NaN written as null)."""
        return json.dumps(_finite(self.as_dict()), indent=2)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """The comparison back from :meth:`as_dict` (what the run store keeps).

        ``Comparison.from_dict(c.as_dict()).as_dict() == c.as_dict()``, also after a JSON
        round trip (NaN kept: the store writes JSON with ``allow_nan``). The ``procedure``
        block and ``exit_code`` follow from the fields and are not read back.

        Raises:
            InvalidInputError: not an ``evalband-comparison/2`` dict.

        >>> from evalband.analysis._compare import _example_comparison
        >>> c = _example_comparison()
        >>> Comparison.from_dict(json.loads(json.dumps(c.as_dict()))) == c
        True
        """
        from evalband.errors import InvalidInputError

        if not isinstance(data, Mapping) or data.get("schema") != "evalband-comparison/2":
            got = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise InvalidInputError(
                f"a stored comparison must be an evalband-comparison/2 dict; got {got!r}: "
                "record it again with this evalband (evalband compare)"
            )
        procedure = data.get("procedure") or {}
        peeking = list(data.get("peeking") or [])
        notes = list(data.get("notes") or [])
        if notes[:len(peeking)] == peeking:  # said first in the notes too
            notes = notes[len(peeking):]
        return cls(**_known(
            cls, data,
            slice_rows=[SliceComparison.from_dict(r) for r in data["slices"]],
            aggregate=Aggregate.from_dict(data["aggregate"]),
            verdict=Verdict(data["verdict"]),
            effect=procedure.get("effect", DEFAULT_EFFECT),
            family_size=procedure.get("family_size", 0),
            notes=notes,
            peeking=peeking,
        ))


def _known(cls: type, data: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """The dataclass's fields from ``data`` (missing ones take their defaults), ``given`` first."""
    out = dict(given)
    for f in fields(cls):
        if f.name not in out and f.name in data:
            out[f.name] = data[f.name]
    return out


def _example_comparison() -> Comparison:
    """A small two-slice comparison built in memory (for doctests)."""
    from evalband.episode import Outcome
    from evalband.panel import load_panel

    panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 6, "seed": 0,
                        "budget": {"steps": 1}, "factors": {"f": ["a", "b"]}})

    def records(run_id: str, wins: int) -> list[EpisodeRecord]:
        return [EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                              cell=s.cell, slices=dict(s.slices), episode=s.episode,
                              repeat=s.repeat, condition_seed=s.condition_seed,
                              outcome=Outcome.SUCCESS if s.episode < wins else Outcome.FAILURE,
                              terminated=True, truncated=False, steps=1)
                for s in panel.episode_specs()]

    base = RunData("base", "base", panel.fingerprint, panel, records("base", 5), source="memory")
    cand = RunData("cand", "cand", panel.fingerprint, panel, records("cand", 2), source="memory")
    return compare_runs(base, cand)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------- helpers


def _budget_for(slices: Mapping[str, str], budgets: Mapping[str, float]) -> float | None:
    """The tightest latency budget that applies to a slice's factor values."""
    found = [
        budgets[key]
        for factor, value in slices.items()
        for key in (f"{factor}={value}", value)
        if key in budgets
    ]
    return min(found) if found else None


def _margin_for(name: str, slices: Mapping[str, str], margin: Any) -> float | None:
    if margin is None:
        return None
    if isinstance(margin, int | float):
        return float(margin)
    for key in (name, *(f"{f}={v}" for f, v in slices.items()), *slices.values()):
        if key in margin:
            return float(margin[key])
    return margin.get("*")  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _PairedTimes:
    """Per cell: pairs where both succeeded with a recorded time, and their sums.

    ``total`` and ``squares`` sum ``d - shift`` and its square per cell, where ``d`` is
    candidate - baseline and ``shift`` the mean over every such pair (centred sums keep the
    variance exact to rounding).
    """

    count: NDArray[np.float64]
    total: NDArray[np.float64]
    squares: NDArray[np.float64]
    shift: float


def _paired_times(base: RunColumns, cand: RunColumns, n_cells: int) -> _PairedTimes:
    """The time-to-success differences of every pair where both episodes succeeded.

    Episodes pair by ``(cell, episode, repeat)``, as in :func:`cell_tables`.
    """
    ok_b = base.success & ~np.isnan(base.time_to_success)
    ok_c = cand.success & ~np.isnan(cand.time_to_success)
    ep = max(int(base.episode.max(initial=0)), int(cand.episode.max(initial=0))) + 1
    rep = max(int(base.repeat.max(initial=0)), int(cand.repeat.max(initial=0))) + 1

    def keys(cols: RunColumns, ok: Any) -> NDArray[np.int64]:
        out: NDArray[np.int64] = (cols.cell[ok] * ep + cols.episode[ok]) * rep + cols.repeat[ok]
        return out

    same = (base.cell.size == cand.cell.size and np.array_equal(base.cell, cand.cell)
            and np.array_equal(base.episode, cand.episode)
            and np.array_equal(base.repeat, cand.repeat))
    if same:  # the same episodes: in key order, the pairs are where both have a time
        full = keys(base, slice(None))
        same = bool(np.all(full[1:] > full[:-1]))
    if same:
        both = ok_b & ok_c
        cell = base.cell[both]
        d = cand.time_to_success[both] - base.time_to_success[both]
    else:
        _, ib, ic = np.intersect1d(keys(base, ok_b), keys(cand, ok_c), assume_unique=True,
                                   return_indices=True)
        cell = base.cell[ok_b][ib]
        d = cand.time_to_success[ok_c][ic] - base.time_to_success[ok_b][ib]
    shift = float(d.mean()) if d.size else 0.0
    d = d - shift
    def per_cell(weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
        return np.bincount(cell, weights=weights, minlength=n_cells).astype(np.float64)

    return _PairedTimes(per_cell(None), per_cell(d), per_cell(d * d), shift)


@lru_cache(maxsize=4096)
def _t_quantile(df: int, confidence: float) -> float:
    """Student's t two-sided critical value (``scipy.special.stdtrit``, memoised: it iterates)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2))


def _paired_time_delta(times: _PairedTimes, members: NDArray[np.bool_],
                       confidence: float) -> Interval | None:
    """Mean time-to-success difference (candidate - baseline) over a slice's pairs.

    ``members`` are the slice's cells; the pairs are those where both succeeded. The interval
    is Student's t on the paired differences, ``mean ± t(n-1) · sd / sqrt(n)`` (as
    ``scipy.stats.ttest_rel(...).confidence_interval``); ``None`` under two pairs.
    """
    n = int(times.count[members].sum())
    if n < 2:
        return None
    total = float(times.total[members].sum())
    centred = total / n
    var = max(float(times.squares[members].sum()) - total * centred, 0.0) / (n - 1)
    mean = times.shift + centred
    half = _t_quantile(n - 1, confidence) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half, "paired t, pairs where both succeeded",
                    confidence, n=n)


@lru_cache(maxsize=8192)
def _rate(k: int, n: int, confidence: float) -> Interval:
    """The Wilson band of ``k`` of ``n`` (memoised: the same counts recur; it is frozen)."""
    return interval(k, n, confidence=confidence)


def _fast_replace(row: SliceComparison, **changes: Any) -> SliceComparison:
    """``dataclasses.replace`` without its per-field machinery (no ``__post_init__`` here)."""
    new = object.__new__(SliceComparison)
    new.__dict__.update(row.__dict__)
    new.__dict__.update(changes)
    return new


def _row_from_table(
    kind: str,
    name: str,
    table: PairTable,
    panel: Panel,
    *,
    confidence: float,
    reasons: list[str] | None = None,
    **extras: Any,
) -> SliceComparison:
    """A slice row's counts, rates and the exact test's raw p (verdict comes from Holm)."""
    t = table
    reasons = list(reasons or [])
    pairs: dict[str, int] = {}
    p_value: float | None = None
    test: SliceTest | None = None
    if t.paired:
        pairs = {"both": t.both, "baseline_only": t.baseline_only,
                 "candidate_only": t.candidate_only, "neither": t.neither,
                 "unmatched": t.unmatched}
        p_value = paired_exact_p(t.candidate_only, t.baseline_only)
        test = SliceTest("mcnemar-exact", p_value, TWO_SIDED,
                         {"candidate_only": t.candidate_only, "baseline_only": t.baseline_only})
    elif t.n_baseline and t.n_candidate:
        p_value = unpaired_exact_p(t.k_candidate, t.n_candidate, t.k_baseline, t.n_baseline)
        test = SliceTest("fisher-exact", p_value, TWO_SIDED,
                         {"k_candidate": t.k_candidate, "n_candidate": t.n_candidate,
                          "k_baseline": t.k_baseline, "n_baseline": t.n_baseline})
    if p_value is None:
        reasons.append("no episodes to compare")
    return SliceComparison(
        kind=kind,
        name=name,
        n_baseline=t.n_baseline,
        successes_baseline=t.k_baseline,
        rate_baseline=_rate(t.k_baseline, t.n_baseline, confidence) if t.n_baseline else None,
        n_candidate=t.n_candidate,
        successes_candidate=t.k_candidate,
        rate_candidate=(_rate(t.k_candidate, t.n_candidate, confidence)
                        if t.n_candidate else None),
        pairing="paired" if t.paired else "unpaired",
        pairs=pairs,
        delta=None,
        test=test,
        p_value=p_value,
        p_holm=None,
        verdict=SliceVerdict.INCONCLUSIVE,
        reasons=reasons,
        primary=not panel.required_slices or name in panel.required_slices,
        **extras,
    )


@dataclass(frozen=True)
class _CellSums:
    """One run's per-cell counts and counted figures, which every slice row reads.

    ``counts`` (4 x cells): episodes, counted episodes (errors left out unless failures),
    counted episodes that succeeded unaided, counted episodes that were helped. ``times`` /
    ``time_cells``: the times of counted successes that have one, and their cells;
    ``latency`` / ``latency_cells``: the p95 latencies of counted episodes that have one, and
    their cells (both in record order, so a slice's selection sums as its episodes would).
    """

    counts: NDArray[np.int64]
    times: NDArray[np.float64]
    time_cells: NDArray[np.int64]
    latency: NDArray[np.float64]
    latency_cells: NDArray[np.int64]

    @classmethod
    def of(cls, cols: RunColumns, n_cells: int, errors_as_failures: bool) -> _CellSums:
        use = cols.counted(errors_as_failures)
        timed = use & cols.success & ~np.isnan(cols.time_to_success)
        measured = use & ~np.isnan(cols.latency_p95)
        return cls(
            counts=np.stack([np.bincount(cols.cell[mask], minlength=n_cells)
                             for mask in (slice(None), use, use & cols.unaided,
                                          use & cols.intervened)]).astype(np.int64),
            times=cols.time_to_success[timed],
            time_cells=cols.cell[timed],
            latency=cols.latency_p95[measured],
            latency_cells=cols.cell[measured],
        )

    def mean_time(self, members: NDArray[np.bool_]) -> float | None:
        """Mean time to success of the slice's timed successes; None with none."""
        times = self.times[members[self.time_cells]]
        return float(times.sum() / times.size) if times.size else None

    def p95_latency(self, members: NDArray[np.bool_]) -> float | None:
        """The 95th percentile of the slice's p95 latencies; None with none."""
        lat = self.latency[members[self.latency_cells]]
        return float(np.percentile(lat, 95)) if lat.size else None


def _rates(counts: list[int]) -> tuple[float | None, float | None]:
    """Unaided success and intervention rates from a slice's ``_CellSums.counts`` column."""
    _, used, unaided, helped = counts
    return (unaided / used, helped / used) if used else (None, None)


def _slice_rows(
    definitions: Sequence[tuple[str, str, dict[str, str]]],
    members: NDArray[np.bool_],
    tables: NDArray[np.int64],
    base: RunColumns,
    cand: RunColumns,
    panel: Panel,
    *,
    errors_as_failures: bool,
    confidence: float,
) -> list[SliceComparison]:
    """Every slice's row at once: counts summed over its cells for all slices in one product.

    ``members``: slices x cells, whether the cell is in the slice; ``tables``: cells x
    :class:`PairTable` fields (:func:`cell_table_counts`). What only episodes carry (errors,
    interventions, latency, time to success) comes from each run's :class:`_CellSums` and
    :func:`_paired_times`, computed once for every slice.
    """
    n_cells = members.shape[1]
    sb = _CellSums.of(base, n_cells, errors_as_failures)
    sc = _CellSums.of(cand, n_cells, errors_as_failures)
    times = _paired_times(base, cand, n_cells)
    weights = members.astype(np.int64)
    slice_tables = (weights @ tables).tolist()
    counts_b = (sb.counts @ weights.T).T.tolist()
    counts_c = (sc.counts @ weights.T).T.tolist()
    rows = []
    for s, (kind, name, slices) in enumerate(definitions):
        inside = members[s]
        table = PairTable(*slice_tables[s])
        reasons: list[str] = []
        errors = counts_b[s][0] - counts_b[s][1] + counts_c[s][0] - counts_c[s][1]
        if errors:
            reasons.append(f"{errors} error episode(s) present (fix them, or count errors as "
                           "failures)")
        unaided_b, int_b = _rates(counts_b[s])
        unaided_c, int_c = _rates(counts_c[s])
        if int_b is not None and int_c is not None and int_c > int_b:
            reasons.append(f"intervention rate rose from {int_b:.0%} to {int_c:.0%}")
        budget = _budget_for(slices, panel.latency_budget_ms)
        p95 = sc.p95_latency(inside) if sc.latency.size else None
        excluded = budget is not None and p95 is not None and p95 > budget
        if excluded:
            reasons.append(
                f"candidate p95 policy latency {p95:.1f} ms exceeds the {budget:g} ms budget; "
                "excluded from the positive-delta count"
            )
        k_b, n_b = table.k_baseline, table.n_baseline
        k_c, n_c = table.k_candidate, table.n_candidate
        rows.append(_row_from_table(
            kind, name, table, panel, confidence=confidence, reasons=reasons,
            unaided_rate_baseline=unaided_b,
            unaided_rate_candidate=unaided_c,
            intervention_rate_baseline=int_b,
            intervention_rate_candidate=int_c,
            inflated_baseline=(k_b / n_b - unaided_b) if n_b and unaided_b is not None else None,
            inflated_candidate=(k_c / n_c - unaided_c) if n_c and unaided_c is not None else None,
            latency_p95_candidate_ms=p95,
            latency_budget_ms=budget,
            excluded=excluded,
            margin=_margin_for(name, slices, panel.non_inferiority_margin),
            mean_time_to_success_baseline_s=sb.mean_time(inside),
            mean_time_to_success_candidate_s=sc.mean_time(inside),
            time_to_success_delta_s=_paired_time_delta(times, inside, confidence),
        ))
    return rows


# ---------------------------------------------------------------------------- comparison


def _cell_weights(panel: Panel, cells: Sequence[tuple[str, Mapping[str, str]]]) -> dict[str, float]:
    """Normalised cell weights from the panel's ``slice_weights``.

    A weight keyed by the cell key wins; otherwise the product of the weights of its
    factor values (keyed ``factor=value`` or ``value``; 1 when absent).
    """
    raw: dict[str, float] = {}
    for key, slices in cells:
        if key in panel.slice_weights:
            raw[key] = panel.slice_weights[key]
            continue
        weight = 1.0
        for factor, value in slices.items():
            weight *= panel.slice_weights.get(f"{factor}={value}",
                                              panel.slice_weights.get(value, 1.0))
        raw[key] = weight
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()} if total > 0 else raw


def aggregate_from_tables(
    panel: Panel,
    tables: Mapping[str, PairTable],
    confidence: float = 0.95,
    *,
    panel_cells: Sequence[Cell] | None = None,
) -> Aggregate:
    """The weighted aggregate with a stratified MOVER interval (paired where cells pair).

    ``panel_cells``: ``panel.cells()`` when the caller has them already.
    """
    cells = [(c.key, dict(c.slices)) for c in (panel_cells or panel.cells())]
    weights = _cell_weights(panel, cells)
    used: dict[str, float] = {}
    counts: list[dict[str, int]] = []
    rate_b = rate_c = 0.0
    for key, _ in cells:
        t = tables.get(key)
        if t is None or not t.n_baseline or not t.n_candidate:
            continue
        used[key] = weights[key]
        rate_b += weights[key] * t.k_baseline / t.n_baseline
        rate_c += weights[key] * t.k_candidate / t.n_candidate
        counts.append(t.difference_counts())
    total = sum(used.values())
    norm = {k: w / total for k, w in used.items()} if total > 0 else used
    if not counts:
        nan = float("nan")
        return Aggregate(weights=norm, rate_baseline=nan, rate_candidate=nan, delta=nan,
                         low=nan, high=nan, method="no cell has episodes in both runs",
                         confidence=confidence)
    paired = all("both" in c for c in counts)
    estimate, low, high, method = _stratified(tuple(tuple(c.items()) for c in counts),
                                              tuple(norm.values()), confidence)
    return Aggregate(
        weights=norm,
        rate_baseline=rate_b / total,
        rate_candidate=rate_c / total,
        delta=estimate if paired else (rate_c - rate_b) / total,
        low=low,
        high=high,
        method=method,
        confidence=confidence,
    )


@lru_cache(maxsize=4096)
def _stratified(counts: tuple[tuple[tuple[str, int], ...], ...], weights: tuple[float, ...],
                confidence: float) -> tuple[float, float, float, str]:
    """:func:`stratified_difference` as (estimate, low, high, method), memoised.

    The aggregate's band is a function of the cells' counts and weights alone.
    """
    band = stratified_difference([dict(c) for c in counts], list(weights), confidence=confidence)
    return band.estimate, band.low, band.high, band.method


def slice_definitions(
    panel: Panel, cells: Sequence[Cell] | None = None
) -> list[tuple[str, str, dict[str, str]]]:
    """(kind, name, slices) for every factor value, then every cell (when they differ).

    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 1, "seed": 0,
    ...                 "budget": {"steps": 2}, "factors": {"p": [0.2, 0.8]}})
    >>> slice_definitions(p)
    [('factor', 'p=0.2', {'p': '0.2'}), ('factor', 'p=0.8', {'p': '0.8'})]
    """
    if cells is None:
        cells = panel.cells()
    if not panel.factors:
        return [("all", "all", {})]
    out: list[tuple[str, str, dict[str, str]]] = []
    for factor, levels in panel.factors.items():
        labels = as_factor_spec(levels).labels()  # a list, a label mapping or a spec
        out.extend(("factor", f"{factor}={label}", {factor: str(label)}) for label in labels)
    if len(panel.factors) > 1:
        out.extend(("cell", cell.key, dict(cell.slices)) for cell in cells)
    return out


def compare_runs(
    baseline: RunData,
    candidate: RunData,
    *,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    seed: int = 0,
    effect: float = DEFAULT_EFFECT,
    power_statements: bool = True,
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` (see :func:`compare_many`)."""
    return compare_many(
        baseline, [candidate], allow_panel_mismatch=allow_panel_mismatch,
        confidence=confidence, seed=seed, effect=effect, power_statements=power_statements,
    )[0]


def compare_many(
    baseline: RunData,
    candidates: Sequence[RunData],
    *,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    seed: int = 0,
    effect: float = DEFAULT_EFFECT,
    power_statements: bool = True,
) -> list[Comparison]:
    """Compare each candidate against the baseline under one decision procedure.

    Every slice of every candidate is one hypothesis in one Holm family at
    ``alpha = 1 - confidence``; each slice's verdict, adjusted p and interval agree (see the
    module docstring and docs/statistics.md).

    Args:
        baseline: the baseline of record (a stored run or an artifact bundle).
        candidates: one or more candidate runs.
        allow_panel_mismatch: compare runs of different panels anyway (said first).
        confidence: one minus the family-wise error rate (two-sided; each direction gets half).
        seed: kept for compatibility (the procedure draws no random numbers).
        effect: the drop in success rate the power statements are computed for.
        power_statements: compute the prospective power statements (skip them in
            simulations that only need the verdicts).

    Raises:
        PanelMismatchError: a candidate's panel fingerprint differs from the baseline's and
            ``allow_panel_mismatch`` is not set.
    """
    del seed
    panel = baseline.panel
    cells = _panel_cells(panel)
    cell_keys = [c.key for c in cells]
    definitions = slice_definitions(panel, cells)
    members = np.array([[all(c.slices.get(f) == v for f, v in sl.items()) for c in cells]
                        for _, _, sl in definitions], dtype=np.bool_).reshape(-1, len(cells))
    base_cols = baseline.compare_columns(cell_keys)
    prepared = []
    for cand in candidates:
        mismatch = cand.panel_fingerprint != baseline.panel_fingerprint
        if mismatch and not allow_panel_mismatch:
            raise PanelMismatchError(
                f"runs {baseline.run_id} and {cand.run_id} were made on different panels "
                f"({baseline.panel_fingerprint[:12]} vs {cand.panel_fingerprint[:12]}); "
                "their episodes do not pair. Re-run on one panel, or allow a panel mismatch "
                "explicitly to compare them anyway"
            )
        eaf = baseline.errors_as_failures or cand.errors_as_failures
        cand_cols = cand.compare_columns(cell_keys)
        counts = cell_table_counts(base_cols, cand_cols, len(cell_keys), eaf)
        rows = _slice_rows(definitions, members, counts, base_cols, cand_cols, panel,
                           errors_as_failures=eaf, confidence=confidence)
        tables = [PairTable(*row) for row in counts.tolist()]
        agg = aggregate_from_tables(panel, dict(zip(cell_keys, tables, strict=True)),
                                    confidence, panel_cells=cells)
        prepared.append((cand, mismatch, rows, agg))
    return decide_family(baseline, prepared, confidence=confidence, effect=effect,
                         power_statements=power_statements)


def _panel_cells(panel: Panel) -> list[Cell]:
    """``panel.cells()``, kept per panel object (a panel is immutable) while it lives."""
    kept = _KEPT_CELLS.get(id(panel))
    if kept is not None and kept[0]() is panel:
        return kept[1]
    cells = panel.cells()
    weakref.finalize(panel, _KEPT_CELLS.pop, id(panel), None)
    _KEPT_CELLS[id(panel)] = (weakref.ref(panel), cells)
    return cells


_KEPT_CELLS: dict[int, tuple[weakref.ref[Panel], list[Cell]]] = {}


def decide_family(
    baseline: RunData,
    prepared: Sequence[tuple[RunData, bool, list[SliceComparison], Aggregate]],
    *,
    confidence: float = 0.95,
    effect: float = DEFAULT_EFFECT,
    power_statements: bool = True,
) -> list[Comparison]:
    """Holm over every slice of every candidate, each slice's verdict, the overall verdicts.

    ``prepared``: per candidate, (run, panel mismatch, slice rows with raw p, aggregate). The
    one place verdicts are made, for stored runs and for simulated designs alike.
    """
    panel = baseline.panel
    alpha = 1.0 - confidence
    flat = [(i, j) for i, (_, _, rows, _) in enumerate(prepared)
            for j, row in enumerate(rows) if row.p_value is not None]
    decision = holm_decisions([float(prepared[i][2][j].p_value or 1.0) for i, j in flat], alpha)
    family = len(flat)
    out = []
    for i, (cand, mismatch, rows, agg) in enumerate(prepared):
        new_rows = list(rows)
        for (ci, j), p_adj, level in zip(flat, decision.p_adjusted, decision.levels, strict=True):
            if ci == i:
                new_rows[j] = _decide(new_rows[j], float(p_adj), float(level), alpha)
        if power_statements:
            new_rows = [_with_power(r, alpha / max(family, 1), effect) for r in new_rows]
        out.append(_verdict(baseline, cand, panel, mismatch, new_rows, agg, confidence,
                            family, effect))
    return out


def _decide(row: SliceComparison, p_adj: float, level: float, alpha: float) -> SliceComparison:
    """The slice's verdict, adjusted p and compatible interval from Holm's decision."""
    counts = _difference_counts(row)
    paired = row.pairing == "paired"
    p_raw = float(row.p_value or 1.0)
    delta, estimate, low = _compatible(tuple(counts.items()), paired, 1.0 - level, p_raw)
    unadjusted, _, _ = _compatible(tuple(counts.items()), paired, 1.0 - alpha, p_raw)
    verdict = slice_verdict(p_adj <= alpha, estimate, unreadable=bool(row.reasons),
                            margin=row.margin, low=low)
    return _fast_replace(
        row,
        p_holm=p_adj,
        level=1.0 - level,
        delta=delta,
        delta_unadjusted=unadjusted,
        verdict=verdict,
        possible_regression=bool(estimate < 0 and verdict != SliceVerdict.REGRESSED),
    )


@lru_cache(maxsize=8192)
def _compatible(
    counts: tuple[tuple[str, int], ...], paired: bool, confidence: float, p_value: float
) -> tuple[Difference, float, float]:
    """:func:`compatible_difference` as (difference, estimate, low), memoised (it is frozen)."""
    d = compatible_difference(dict(counts), paired=paired, confidence=confidence,
                              p_value=p_value)
    return d, d.estimate, d.low


def _difference_counts(row: SliceComparison) -> dict[str, int]:
    if row.pairing == "paired":
        return {"both": row.pairs["both"], "a_only": row.pairs["candidate_only"],
                "b_only": row.pairs["baseline_only"], "neither": row.pairs["neither"]}
    return {"k_a": row.successes_candidate, "n_a": row.n_candidate,
            "k_b": row.successes_baseline, "n_b": row.n_baseline}


@lru_cache(maxsize=4096)
def _power_figures(n: int, p_base: float, discordant: float, alpha: float, paired: bool,
                   effect: float) -> tuple[float | None, int | None]:
    drop = detectable_drop(n, p_base, alpha, paired=paired, discordant=discordant,
                           power=POWER_TARGET)
    needed = None
    if (drop is None or drop > effect) and 0 < effect <= p_base:
        needed = episodes_for_drop(p_base, effect, alpha, paired=paired, discordant=discordant,
                                   power=POWER_TARGET)
    return drop, needed


def _with_power(row: SliceComparison, alpha: float, effect: float) -> SliceComparison:
    """Prospective power statements for the design of this slice (never the observed gap).

    The design: the test that is printed, at the Bonferroni level ``alpha / m`` (Holm's
    strictest step), this slice's episodes, a baseline rate and (matched pairs) a discordance
    taken at the least favourable end of their Wilson bands, and the declared ``effect``.
    """
    paired = row.pairing == "paired"
    n = (sum(v for k, v in row.pairs.items() if k != "unmatched") if paired
         else min(row.n_baseline, row.n_candidate))
    if n < 2 or row.verdict in (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED):
        return _fast_replace(row, effect=effect)
    k_b = row.pairs["both"] + row.pairs["baseline_only"] if paired else row.successes_baseline
    n_b = n if paired else row.n_baseline
    d = row.pairs["baseline_only"] + row.pairs["candidate_only"] if paired else 0
    drop, needed = _design_power(int(n), int(k_b), int(n_b), int(d), paired, alpha, effect)
    return _fast_replace(row, detectable_drop=drop, episodes_for_effect=needed, effect=effect)


@lru_cache(maxsize=8192)
def _design_power(n: int, k_b: int, n_b: int, d: int, paired: bool, alpha: float,
                  effect: float) -> tuple[float | None, int | None]:
    """The power figures of one slice design (memoised: a function of counts alone)."""
    from evalband.stats import interval_bounds

    lows, highs = interval_bounds(np.asarray([k_b], dtype=np.int64), n_b, "wilson", 0.95)
    # The baseline rate in its band that makes a drop hardest to see: variance is largest
    # when the two rates straddle one half.
    p_base = float(min(max(0.5 + effect / 2.0, float(lows[0])), float(highs[0])))
    discordant = 0.0
    if paired:
        _, hi = interval_bounds(np.asarray([d], dtype=np.int64), n, "wilson", 0.95)
        discordant = float(hi[0])
    return _power_figures(n, round(p_base, 3), round(discordant, 3), alpha, paired, effect)


def _verdict(
    baseline: RunData,
    cand: RunData,
    panel: Panel,
    mismatch: bool,
    rows: list[SliceComparison],
    agg: Aggregate,
    confidence: float,
    family: int,
    effect: float,
) -> Comparison:
    required = set(panel.required_slices)
    regressed = [r.name for r in rows if r.verdict == SliceVerdict.REGRESSED]
    blocking = [
        r for r in rows
        if r.verdict == SliceVerdict.REGRESSED and (not required or r.name in required)
    ]
    unsure = [r.name for r in rows if r.verdict == SliceVerdict.INCONCLUSIVE or r.excluded]
    aggregate_hides = agg.delta >= 0 or (agg.low <= 0 <= agg.high)
    hidden = [name for name in regressed if aggregate_hides]
    possible = [r.name for r in rows if r.possible_regression]
    alpha = 1.0 - confidence
    notes: list[str] = []
    if mismatch:
        notes.append(
            f"PANEL MISMATCH: {baseline.run_id} and {cand.run_id} were run on different panels "
            "(compared anyway, as asked); episodes pair only where keys coincide"
        )
    for r in rows:
        unmatched = r.pairs.get("unmatched", 0)
        if unmatched:
            notes.append(f"{r.name}: {unmatched} unmatched episode(s) left out of the pairing")
        if r.pairing == "unpaired" and r.delta is not None:
            notes.append(f"{r.name}: no episodes pair; Fisher's exact test and the unpaired "
                         "Miettinen-Nurminen interval were used")
    notes.append(
        f"procedure: exact {'McNemar' if any(r.pairing == 'paired' for r in rows) else 'Fisher'} "
        f"test per slice, Holm across {family} slice test(s) at family-wise "
        f"{100 * alpha:g}% ({100 * alpha / 2:g}% per direction); each slice's interval is "
        "at the level Holm used for it, so it excludes 0 exactly when the slice is decided"
    )
    if blocking:
        verdict = Verdict.REGRESSION
        sentence = (
            f"{cand.policy} regresses against {baseline.policy}: "
            f"{', '.join(r.name for r in blocking)} regressed"
            + (f" while the aggregate moved {100 * agg.delta:+.1f} points (hidden regression)"
               if hidden else "")
            + "."
        )
    elif unsure:
        verdict = Verdict.INCONCLUSIVE
        sentence = (
            f"inconclusive: {', '.join(unsure)} cannot be judged "
            f"({'; '.join(r for row in rows if row.name in unsure for r in row.reasons[:1])})."
        )
    elif agg.low > 0:
        verdict = Verdict.IMPROVES
        sentence = (
            f"{cand.policy} improves on {baseline.policy}: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            + ("with no slice regressed." if not regressed else
               f"with no primary slice regressed (secondary slice(s) regressed: "
               f"{', '.join(regressed)}).")
        )
    else:
        verdict = Verdict.NO_REGRESSION
        sentence = (
            f"no regression established, and no improvement: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            "contains 0."
        )
        if regressed:  # regressions outside the primary (required) set
            sentence += f" (secondary slice(s) regressed: {', '.join(regressed)})"
    weak = [r for r in rows if r.episodes_for_effect is not None
            and r.verdict not in (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED)]
    if weak:
        most = max(r.episodes_for_effect or 0 for r in weak)
        sentence += (
            f" {len(weak)} slice(s) could miss a {100 * effect:.0f}-point drop at this n: "
            f"up to {most} {'pairs' if weak[0].pairing == 'paired' else 'episodes per arm'} "
            f"per slice would catch it with {100 * POWER_TARGET:.0f}% power."
        )
    return Comparison(
        baseline=baseline.run_id,
        candidate=cand.run_id,
        baseline_policy=baseline.policy,
        candidate_policy=cand.policy,
        panel_name=panel.name,
        panel_fingerprint=baseline.panel_fingerprint,
        panel_mismatch=mismatch,
        slice_rows=rows,
        aggregate=agg,
        hidden_regressions=hidden,
        possible_regressions=possible,
        verdict=verdict,
        sentence=sentence,
        notes=notes,
        confidence=confidence,
        effect=effect,
        family_size=family,
    )



def worst_verdict(comparisons: Sequence[Comparison]) -> str:
    """The most severe verdict (regression > inconclusive > no regression > improves)."""
    return max((c.verdict for c in comparisons), key=SEVERITY.index)
