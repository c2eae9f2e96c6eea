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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any, Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from evalband.analysis._metrics import (
    MetricRow,
    MetricValues,
    PendingMetric,
    decided_row,
    metric_notes,
    metric_rows,
    metric_values,
)
from evalband.analysis._models import (
    DEFAULT_EFFECT,
    POWER_TARGET,
    Aggregate,
    Comparison,
    PowerBasis,
    SliceComparison,
    SliceCounts,
    SliceDecision,
    SliceRates,
)
from evalband.analysis._pairs import (
    PairTable,
    RunColumns,
    StoredRecords,
    cell_table_counts,
    columns_from_arrays,
    pair_table,
    run_columns,
)
from evalband.analysis._slice_test import TWO_SIDED, SliceTest
from evalband.analysis._statistics import (
    ArmData,
    RunSide,
    SliceData,
    compute_statistics,
    wilson,
)
from evalband.analysis._verdicts import (
    DISCRETE_HOLM,
    SEVERITY,
    VERDICT_EXIT_CODES,
    Decided,
    FamilyFacts,
    Procedure,
    SliceVerdict,
    Verdict,
    check_slice,
    decide,
    hidden_regressions,
    overall_verdict,
)
from evalband.episode import EpisodeRecord
from evalband.errors import InvalidInputError, PanelMismatchError
from evalband.panel import Cell, Panel, as_factor_spec
from evalband.stats import Difference
from evalband.stats._discrete import FisherNull, McNemarNull
from evalband.stats._power_statement import pair_correlation, power_statement
from evalband.stats._procedure import compatible_difference, paired_exact_ps, unpaired_exact_p
from evalband.stats._stratified import stratified_difference

__all__ = [
    "Verdict",
    "SliceVerdict",
    "DEFAULT_EFFECT",
    "POWER_TARGET",
    "RunData",
    "check_distinct_runs",
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
    "comparison_notes",
    "comparison_of",
]


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
        with the records they came from and used again while ``records`` holds the same
        (equal) records in the same order (records are immutable), so comparing one run
        again -- a sweep of candidates, a report after a comparison -- reads no record twice.
        """
        if isinstance(self.records, StoredRecords):
            return columns_from_arrays(self.records.columns, cells)
        kept = self._kept(cells)
        if kept.columns is None:
            cols = run_columns(self.records, cells)
            for column in fields(cols):
                getattr(cols, column.name).flags.writeable = False
            kept.columns = cols
        return kept.columns

    def metric_values(self, cells: Sequence[str]) -> MetricValues:
        """Every metric's values on the panel's ``cells``, kept as :meth:`compare_columns`'s."""
        if isinstance(self.records, StoredRecords):
            return metric_values(self.records, cells)
        kept = self._kept(cells)
        if kept.metrics is None:
            kept.metrics = metric_values(self.records, cells)
        return kept.metrics

    def _arrays(self, cells: Sequence[str]) -> tuple[RunColumns, MetricValues]:
        """:meth:`compare_columns` and :meth:`metric_values` with one check of the records."""
        if isinstance(self.records, StoredRecords):
            return self.compare_columns(cells), self.metric_values(cells)
        kept = self._kept(cells)
        if kept.columns is None or kept.metrics is None:
            return self.compare_columns(cells), self.metric_values(cells)
        return kept.columns, kept.metrics

    @cached_property
    def _memo(self) -> dict[str, Any]:
        """What comparisons derived from this run, kept with it.

        The records' arrays (``"kept"``, a :class:`_Kept`) and its panel's :class:`_Layout`
        (``"layout"``).
        """
        return {}

    def __getstate__(self) -> dict[str, Any]:
        """The run without what comparisons kept (a copy reads its records again)."""
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def _kept(self, cells: Sequence[str]) -> _Kept:
        """What was read from these records for these cells (empty when they changed).

        The records are the same when they are equal, in order (a list's comparison, which
        takes the very same record objects as equal without reading them; records are
        immutable, and equal records give equal arrays).
        """
        kept: _Kept | None = self._memo.get("kept")
        records = self.records if isinstance(self.records, list) else list(self.records)
        if kept is not None and kept.cells == tuple(cells) and kept.records == records:
            return kept
        kept = self._memo["kept"] = _Kept(tuple(cells), list(records))
        return kept


@dataclass
class _Kept:
    """An in-memory run's cells and records, and what a comparison read from them."""

    cells: tuple[str, ...]
    records: list[EpisodeRecord]  # a copy: the run's list may change in place
    columns: RunColumns | None = None
    metrics: MetricValues | None = None




def check_distinct_runs(runs: Sequence[RunData], advice: str) -> None:
    """Refuse a run given more than once (by run id: a bundle of a stored run is that run).

    Its episodes would be matched with themselves: a comparison of nothing, reported as no
    change. ``advice`` says what to give instead (one line, as the caller's command puts it).

    >>> from evalband.panel import load_panel
    >>> run = RunData("a", "p", "f", load_panel("reach1d"), [])
    >>> try:
    ...     check_distinct_runs([run, run], "compare two different runs")
    ... except InvalidInputError as exc:
    ...     print(exc)
    run a is given more than once; compare two different runs
    """
    ids = [run.run_id for run in runs]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InvalidInputError(f"run {', '.join(twice)} {'is' if len(twice) == 1 else 'are'} "
                                f"given more than once; {advice}")


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



# ---------------------------------------------------------------------------- helpers


def _margin_for(name: str, slices: Mapping[str, str], margin: Any) -> float | None:
    if margin is None:
        return None
    if isinstance(margin, int | float):
        return float(margin)
    for key in (name, *(f"{f}={v}" for f, v in slices.items()), *slices.values()):
        if key in margin:
            return float(margin[key])
    return margin.get("*")  # type: ignore[no-any-return]


_REGRESSED, _IMPROVED, _INCONCLUSIVE = (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED,
                                        SliceVerdict.INCONCLUSIVE)
"""The verdicts the hot path reads, bound once (an enum member read off its class goes
through the enum type's ``__getattr__`` hook: ~1 k instructions each time)."""
_DECIDED = (_REGRESSED, _IMPROVED)
_UNDECIDED = SliceDecision(_INCONCLUSIVE, [])


class _Untested(Enum):
    """``_row_from_table``'s ``test`` when the caller did not make it."""

    UNTESTED = 0


def _exact_tests(tables: Sequence[PairTable]) -> list[SliceTest | None]:
    """Each table's exact test: McNemar's where episodes pair, else Fisher's (None: no arm).

    Both two-sided as twice the smaller tail; the paired tables' p-values in one array call
    (:func:`~evalband.stats._procedure.paired_exact_ps`, elementwise: the same bits).
    """
    paired: list[bool] = []
    a_only: list[int] = []
    b_only: list[int] = []
    for t in tables:  # PairTable.paired, read once per table
        is_paired = t.both + t.baseline_only + t.candidate_only + t.neither > 0
        paired.append(is_paired)
        if is_paired:
            a_only.append(t.candidate_only)
            b_only.append(t.baseline_only)
    p_paired = iter(paired_exact_ps(a_only, b_only))
    tests: list[SliceTest | None] = []
    for i, t in enumerate(tables):
        if paired[i]:
            tests.append(SliceTest(
                "mcnemar-exact", next(p_paired), TWO_SIDED,
                {"candidate_only": t.candidate_only, "baseline_only": t.baseline_only}))
        elif t.n_baseline and t.n_candidate:
            tests.append(SliceTest(
                "fisher-exact", unpaired_exact_p(t.k_candidate, t.n_candidate, t.k_baseline,
                                                 t.n_baseline), TWO_SIDED,
                {"k_candidate": t.k_candidate, "n_candidate": t.n_candidate,
                 "k_baseline": t.k_baseline, "n_baseline": t.n_baseline}))
        else:
            tests.append(None)
    return tests


def _row_from_table(
    kind: str,
    name: str,
    table: PairTable,
    panel: Panel,
    *,
    confidence: float,
    data: SliceData | None = None,
    margin: float | None = None,
    test: SliceTest | None | Literal[_Untested.UNTESTED] = _Untested.UNTESTED,
) -> SliceComparison:
    """A slice row before the decision: counts, rates, the exact test's raw p, statistics.

    With ``data`` (the slice's episodes, :class:`~evalband.analysis._statistics.SliceData`)
    the registered statistics are computed and every check of
    :data:`~evalband.analysis._verdicts.SLICE_CHECKS` gives its reason; simulated tables
    (``calibrate``) have their counts only. ``test``: the table's test when the caller made
    it already (:func:`_exact_tests` of every slice at once).
    """
    t = table
    pairs: dict[str, int] = {}
    paired = t.paired
    if paired:
        pairs = {"both": t.both, "baseline_only": t.baseline_only,
                 "candidate_only": t.candidate_only, "neither": t.neither,
                 "unmatched": t.unmatched}
    required = panel.required_slices
    row = SliceComparison(
        kind=kind,  # type: ignore[arg-type]  # slice_definitions names one of the three
        name=name,
        primary=not required or name in required,
        counts=SliceCounts(t.n_baseline, t.k_baseline, t.n_candidate, t.k_candidate,
                           "paired" if paired else "unpaired", pairs),
        rates=SliceRates(  # the Wilson bands (memoised)
            wilson(t.k_baseline, t.n_baseline, confidence) if t.n_baseline else None,
            wilson(t.k_candidate, t.n_candidate, confidence) if t.n_candidate else None),
        test=_exact_tests([t])[0] if test is _Untested.UNTESTED else test,
        decision=_UNDECIDED,
        extras={} if data is None else compute_statistics(data),
    )
    reasons, excluded = check_slice(row, data)
    return msgspec.structs.replace(row, decision=SliceDecision(
        _INCONCLUSIVE, reasons, excluded=excluded, margin=margin))


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
    slice_tables: Sequence[PairTable] | None = None,
) -> list[SliceComparison]:
    """Every slice's row at once: counts summed over its cells for all slices in one product.

    ``members``: slices x cells, whether the cell is in the slice; ``tables``: cells x
    :class:`PairTable` fields (:func:`cell_table_counts`). Each run's per-cell counts are
    computed once (:class:`~evalband.analysis._statistics.RunSide`), and what a statistic
    derives from a whole run is shared by every slice; the slices' exact tests are made
    together (:func:`_exact_tests`). ``slice_tables``: the slices' tables when the caller
    has them (each slice one cell: its cell's table, the product's row to the integer).
    """
    n_cells = members.shape[1]
    sb = RunSide.of(base, n_cells, errors_as_failures)
    sc = RunSide.of(cand, n_cells, errors_as_failures)
    if slice_tables is None:
        slice_tables = [PairTable(*row) for row in (members @ tables).tolist()]
    tests = _exact_tests(slice_tables)
    counts_b, counts_c = sb.slice_counts(members), sc.slice_counts(members)
    shared: dict[str, Any] = {}
    rows = []
    for s, (kind, name, slices) in enumerate(definitions):
        inside = members[s]
        key = inside.tobytes()  # the slice's cells, as both arms' kept statistics read them
        table = slice_tables[s]
        data = SliceData(
            kind, name, slices, table,
            ArmData(sb, inside, *counts_b[s], table.k_baseline, table.n_baseline, key),
            ArmData(sc, inside, *counts_c[s], table.k_candidate, table.n_candidate, key),
            panel, confidence, shared)
        rows.append(_row_from_table(
            kind, name, table, panel, confidence=confidence, data=data,
            margin=_margin_for(name, slices, panel.non_inferiority_margin), test=tests[s]))
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
    cell_weights: Mapping[str, float] | None = None,
) -> Aggregate:
    """The weighted aggregate with a stratified MOVER interval (paired where cells pair).

    ``panel_cells``: ``panel.cells()`` when the caller has them already; ``cell_weights``:
    their normalised weights (:func:`_cell_weights`) likewise.
    """
    cells = panel_cells or panel.cells()
    weights = (_cell_weights(panel, [(c.key, c.slices) for c in cells]) if cell_weights is None
               else cell_weights)
    used: dict[str, float] = {}
    counts: list[tuple[tuple[str, int], ...]] = []
    paired = True
    rate_b = rate_c = 0.0
    for cell in cells:
        key = cell.key
        t = tables.get(key)
        if t is None or not t.n_baseline or not t.n_candidate:
            continue
        w = used[key] = weights[key]
        rate_b += w * t.k_baseline / t.n_baseline
        rate_c += w * t.k_candidate / t.n_candidate
        found = t.difference_counts()
        paired = paired and "both" in found
        counts.append(tuple(found.items()))
    total = sum(used.values())
    norm = {k: w / total for k, w in used.items()} if total > 0 else used
    if not counts:
        nan = float("nan")
        return Aggregate(weights=norm, rate_baseline=nan, rate_candidate=nan, delta=nan,
                         low=nan, high=nan, method="no cell has episodes in both runs",
                         confidence=confidence)
    estimate, low, high, method = _stratified(tuple(counts), tuple(norm.values()), confidence)
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
    procedure: Procedure = DISCRETE_HOLM,
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` (see :func:`compare_many`)."""
    return compare_many(
        baseline, [candidate], allow_panel_mismatch=allow_panel_mismatch,
        confidence=confidence, seed=seed, effect=effect, power_statements=power_statements,
        procedure=procedure,
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
    procedure: Procedure = DISCRETE_HOLM,
) -> list[Comparison]:
    """Compare each candidate against the baseline under one decision procedure.

    Every slice of every candidate is one hypothesis in one family at
    ``alpha = 1 - confidence``, decided by the discrete Holm procedure
    (:class:`~evalband.analysis._verdicts.DiscreteHolm`; ``procedure=HOLM`` for Holm's);
    each slice's verdict, adjusted p and interval agree (see the module docstring and
    docs/statistics.md).

    Args:
        baseline: the baseline of record (a stored run or an artifact bundle).
        candidates: one or more candidate runs.
        allow_panel_mismatch: compare runs of different panels anyway (said first).
        confidence: one minus the family-wise error rate (two-sided; each direction gets half).
        seed: the seed of the metrics' bootstrap intervals (each metric's row a child stream
            of it); the success slices draw no random numbers.
        effect: the drop in success rate the power statements are computed for.
        power_statements: compute the prospective power statements (skip them in
            simulations that only need the verdicts).
        procedure: the multiplicity procedure over the family.

    Raises:
        PanelMismatchError: a candidate's panel fingerprint differs from the baseline's and
            ``allow_panel_mismatch`` is not set.
    """
    panel = baseline.panel
    layout = _layout(baseline)
    cells, cell_keys, definitions, members = (layout.cells, layout.cell_keys,
                                              layout.definitions, layout.members)
    base_cols, base_metrics = baseline._arrays(cell_keys)
    prepared = []
    metrics: list[MetricValues] = []
    for cand in candidates:
        mismatch = cand.panel_fingerprint != baseline.panel_fingerprint
        if mismatch and not allow_panel_mismatch:
            raise PanelMismatchError(
                f"runs {baseline.run_id} and {cand.run_id} were made on different panels "
                f"({baseline.panel_fingerprint[:12]} vs {cand.panel_fingerprint[:12]}); "
                "their episodes do not pair. Re-run on one panel, or pass "
                "`allow_panel_mismatch=True` to compare them anyway (unpaired)",
                parameters=("allow_panel_mismatch",),
            )
        eaf = baseline.errors_as_failures or cand.errors_as_failures
        cand_cols, cand_metrics = cand._arrays(cell_keys)
        metrics.append(cand_metrics)
        counts = cell_table_counts(base_cols, cand_cols, len(cell_keys), eaf)
        tables = [PairTable(*row) for row in counts.tolist()]
        single = layout.single_cells  # a one-cell slice's table is its cell's
        rows = _slice_rows(definitions, members, counts, base_cols, cand_cols, panel,
                           errors_as_failures=eaf, confidence=confidence,
                           slice_tables=None if single is None else [tables[c] for c in single])
        agg = aggregate_from_tables(panel, dict(zip(cell_keys, tables, strict=True)),
                                    confidence, panel_cells=cells, cell_weights=layout.weights)
        prepared.append((cand, mismatch, rows, agg))
    pending = [metric_rows(base_metrics, cand_metrics, panel, definitions, members,
                           confidence=confidence, seed=seed) for cand_metrics in metrics]
    return decide_family(baseline, prepared, confidence=confidence, effect=effect,
                         power_statements=power_statements, procedure=procedure,
                         metrics=pending, seed=seed)


@dataclass(frozen=True)
class _Layout:
    """A panel's cells and slices as a comparison reads them (kept with the run)."""

    cells: list[Cell]
    cell_keys: list[str]
    definitions: list[tuple[str, str, dict[str, str]]]
    members: NDArray[np.bool_]  # slices x cells: whether the cell is in the slice
    weights: Mapping[str, float]  # the cells' normalised weights (the aggregate's)
    single_cells: tuple[int, ...] | None  # each slice's one cell, when every slice has one


def _layout(run: RunData) -> _Layout:
    """The :class:`_Layout` of ``run``'s panel, kept with the run (its panel never changes)."""
    layout: _Layout | None = run._memo.get("layout")
    if layout is None:
        layout = run._memo["layout"] = _panel_layout(run.panel)
    return layout


def _panel_layout(panel: Panel) -> _Layout:
    """The panel's cells and slices as a comparison reads them (:class:`_Layout`)."""
    cells = panel.cells()
    definitions = slice_definitions(panel, cells)
    members = np.array([[all(c.slices.get(f) == v for f, v in sl.items()) for c in cells]
                        for _, _, sl in definitions], dtype=np.bool_).reshape(-1, len(cells))
    members.flags.writeable = False
    inside: list[list[bool]] = members.tolist()
    single = (tuple(row.index(True) for row in inside)
              if all(row.count(True) == 1 for row in inside) else None)
    return _Layout(cells, [c.key for c in cells], definitions, members,
                   MappingProxyType(_cell_weights(panel, [(c.key, c.slices) for c in cells])),
                   single)



def decide_family(
    baseline: RunData,
    prepared: Sequence[tuple[RunData, bool, list[SliceComparison], Aggregate]],
    *,
    confidence: float = 0.95,
    effect: float = DEFAULT_EFFECT,
    power_statements: bool = True,
    procedure: Procedure = DISCRETE_HOLM,
    metrics: Sequence[Sequence[PendingMetric]] | None = None,
    seed: int = 0,
) -> list[Comparison]:
    """Every slice of every candidate in one family of :func:`~evalband.analysis._verdicts.decide`.

    ``prepared``: per candidate, (run, panel mismatch, slice rows with raw p, aggregate). The
    engine decides each slice (the procedure, the compatible interval at the level that
    decided it, the verdict rules); the overall verdicts follow the comparison rules. Used
    for stored runs and for simulated designs (``calibrate``) alike. ``metrics``: per
    candidate, its metric rows (:func:`~evalband.analysis._metrics.metric_rows`); those of
    primary metrics are hypotheses of the same family, decided in the same call.
    """
    alpha = 1.0 - confidence
    flat: list[tuple[int, int]] = []  # (candidate, row) of each slice hypothesis
    hypotheses: list[Any] = []
    for i, prep in enumerate(prepared):
        for j, row in enumerate(prep[2]):
            if row.p_value is not None:
                flat.append((i, j))
                hypotheses.append(_SliceHypothesis(row))
    pending = list(metrics) if metrics is not None else [[] for _ in prepared]
    flat_metrics: list[tuple[int, int]] = []
    for i, metric_rows_i in enumerate(pending):
        for j, m in enumerate(metric_rows_i):
            if m.hypothesis is not None:
                flat_metrics.append((i, j))
                hypotheses.append(m.hypothesis)
    decided_all = decide(hypotheses, alpha, procedure=procedure)  # one family
    decided_metrics = decided_all[len(flat):]
    family = len(flat) + len(flat_metrics)
    engine: list[dict[int, tuple[_SliceHypothesis, Decided]]] = [{} for _ in prepared]
    for k, (ci, j) in enumerate(flat):
        engine[ci][j] = (hypotheses[k], decided_all[k])
    power_alpha = alpha / max(family, 1) if power_statements else None
    out = []
    for i, (cand, mismatch, rows, agg) in enumerate(prepared):
        found = engine[i]
        new_rows = [_finished(row, found.get(j), alpha, power_alpha, effect)
                    for j, row in enumerate(rows)]
        metric_out = [m.row for m in pending[i]]
        for (ci, j), d in zip(flat_metrics, decided_metrics, strict=True):
            if ci == i:
                metric_out[j] = decided_row(pending[i][j], d)
        notes = comparison_notes(baseline, cand, mismatch, new_rows, family, alpha,
                                 procedure.name)
        notes.extend(metric_notes(metric_out, alpha, seed))
        out.append(comparison_of(baseline, cand, mismatch, new_rows, agg, confidence,
                                 family, effect, notes=notes, multiplicity=procedure.name,
                                 metrics=metric_out))
    return out


class _SliceHypothesis:
    """A slice row as a hypothesis of the engine.

    Its exact test's raw p, its compatible interval at any level, and what the test can
    attain under its null.
    """

    __slots__ = ("counts", "margin", "p_value", "paired", "reasons")

    def __init__(self, row: SliceComparison) -> None:
        p = row.p_value
        self.p_value = 1.0 if p is None else float(p)
        c = row.counts
        self.paired = paired = c.pairing == "paired"
        # the counts of _difference_counts, in its order, as plain integers (_COUNT_NAMES)
        if paired:
            pairs = c.pairs
            self.counts = (pairs["both"], pairs["candidate_only"], pairs["baseline_only"],
                           pairs["neither"])
        else:
            self.counts = (c.successes_candidate, c.n_candidate, c.successes_baseline,
                           c.n_baseline)
        decision = row.decision
        self.reasons = decision.reasons
        self.margin = decision.margin

    def null(self) -> McNemarNull | FisherNull:
        """The exact test's attainable p-values (its discordant pairs, or both margins)."""
        return _null(self.counts, self.paired)

    def interval_at(self, confidence: float) -> Difference:
        """The score interval at ``confidence`` made compatible with the exact test."""
        return _compatible(self.counts, self.paired, confidence, self.p_value)


def _finished(row: SliceComparison, engine: tuple[_SliceHypothesis, Decided] | None,
              alpha: float, power_alpha: float | None, effect: float) -> SliceComparison:
    """The row with its decision finished, in one replacement.

    ``engine``: the engine's hypothesis and decision of the row (None: a row without a test);
    ``power_alpha``: the level of the power statements (None: none asked).
    """
    decision = row.decision
    if engine is None:
        fields: dict[str, Any] = {}
        verdict = decision.verdict
    else:
        fields = _decision(*engine, alpha)
        verdict = fields["verdict"]
    if power_alpha is not None:
        fields.update(_power(row, verdict, power_alpha, effect))
    return msgspec.structs.replace(row, decision=msgspec.structs.replace(decision, **fields))


def _decision(h: _SliceHypothesis, d: Decided, alpha: float) -> dict[str, Any]:
    """The engine's decision of a row: adjusted p, level, intervals, verdict."""
    return {
        "p_holm": d.p_adjusted,
        "level": 1.0 - d.level,
        "delta": d.difference,
        "delta_unadjusted": h.interval_at(1.0 - alpha),
        "verdict": d.verdict,
        "possible_regression": bool(d.difference.estimate < 0
                                    and d.verdict != _REGRESSED),
    }


_COUNT_NAMES = {True: ("both", "a_only", "b_only", "neither"),
                False: ("k_a", "n_a", "k_b", "n_b")}
"""The names of :func:`_difference_counts`' counts, matched pairs (True) or not."""


@lru_cache(maxsize=8192)
def _null(counts: tuple[int, ...], paired: bool) -> McNemarNull | FisherNull:
    """A slice's exact null distribution from its counts (memoised: it is frozen).

    ``counts``: :func:`_difference_counts`' values in its order (:data:`_COUNT_NAMES`).
    """
    c = dict(zip(_COUNT_NAMES[paired], counts, strict=True))
    if paired:
        return McNemarNull(c["a_only"] + c["b_only"])
    return FisherNull(c["n_a"], c["n_b"], c["k_a"] + c["k_b"])


@lru_cache(maxsize=8192)
def _compatible(
    counts: tuple[int, ...], paired: bool, confidence: float, p_value: float
) -> Difference:
    """:func:`compatible_difference`, memoised (it is frozen; ``counts`` as :func:`_null`'s)."""
    return compatible_difference(dict(zip(_COUNT_NAMES[paired], counts, strict=True)),
                                 paired=paired, confidence=confidence, p_value=p_value)


def _difference_counts(row: SliceComparison) -> dict[str, int]:
    c = row.counts
    if c.pairing == "paired":
        return {"both": c.pairs["both"], "a_only": c.pairs["candidate_only"],
                "b_only": c.pairs["baseline_only"], "neither": c.pairs["neither"]}
    return {"k_a": c.successes_candidate, "n_a": c.n_candidate,
            "k_b": c.successes_baseline, "n_b": c.n_baseline}


def _power(row: SliceComparison, verdict: SliceVerdict, alpha: float,
           effect: float) -> Mapping[str, Any]:
    """Prospective power statements for the design of this slice (never the observed gap).

    The design: the test that is printed, at the Bonferroni level ``alpha / m`` (Holm's
    strictest step), this slice's episodes, the baseline's observed rate and (matched pairs)
    the observed correlation of a pair, and the declared ``effect``
    (:func:`evalband.stats.power_statement`, exact under these stated assumptions). The
    decision's fields they fill; ``verdict``: the row's.
    """
    c = row.counts
    paired = c.pairing == "paired"
    design: tuple[int, ...]
    if paired:
        pr = c.pairs
        design = (pr["both"], pr["baseline_only"], pr["candidate_only"], pr["neither"])
        n = design[0] + design[1] + design[2] + design[3]
    else:
        design = (c.n_candidate, c.successes_baseline, c.n_baseline)
        n = min(c.n_baseline, c.n_candidate)
    if n < 2 or verdict in _DECIDED:
        return {"effect": effect}
    return _statement(design, paired, alpha, effect)  # read-only (kept)


@lru_cache(maxsize=8192)
def _statement(design: tuple[int, ...], paired: bool, alpha: float,
               effect: float) -> Mapping[str, Any]:
    """The power statement's fields of one slice design (memoised: a read-only mapping).

    ``design``: matched pairs (both, baseline only, candidate only, neither), or the
    candidate's episodes, the baseline's successes and episodes
    (:func:`evalband.stats.power_statement`).
    """
    if paired:
        both, b_only, a_only, neither = design
        n = both + b_only + a_only + neither
        rate = (both + b_only) / n
        phi = pair_correlation(both, a_only, b_only, neither)
        st = power_statement(n, round(rate, 6), alpha, effect, paired=True,
                             correlation=round(phi, 3))
    else:
        n_c, k_b, n_b = design
        st = power_statement(int(n_c), round(k_b / n_b, 6), alpha, effect, paired=False,
                             n_baseline=int(n_b))
    return MappingProxyType({
        "detectable_drop": st.detectable_drop, "episodes_for_effect": st.episodes_for_effect,
        "effect": effect, "power_basis": PowerBasis(
            base_rate=st.base_rate, correlation=st.correlation, level=st.level,
            power=st.power, test=st.test)})


def comparison_notes(baseline: RunData, cand: RunData, mismatch: bool,
                     rows: Sequence[SliceComparison], family: int, alpha: float,
                     multiplicity: str = DISCRETE_HOLM.name) -> list[str]:
    """What a reader of a fixed-n comparison must know: mismatch, pairing, the procedure."""
    notes: list[str] = []
    if mismatch:
        notes.append(
            f"PANEL MISMATCH: {baseline.run_id} and {cand.run_id} were run on different panels "
            "(compared anyway, as asked); episodes pair only where keys coincide"
        )
    any_paired = False
    for r in rows:
        counts = r.counts
        unmatched = counts.pairs.get("unmatched", 0)
        if unmatched:
            notes.append(f"{r.name}: {unmatched} unmatched episode(s) left out of the pairing")
        if counts.pairing == "unpaired" and r.decision.delta is not None:
            notes.append(f"{r.name}: no episodes pair; Fisher's exact test and the unpaired "
                         "Miettinen-Nurminen interval were used")
        any_paired = any_paired or counts.pairing == "paired"
    notes.append(_procedure_note(any_paired, family, alpha,
                                 multiplicity == DISCRETE_HOLM.name))
    return notes


@lru_cache(maxsize=256)
def _procedure_note(paired: bool, family: int, alpha: float, discrete: bool) -> str:
    """The note that says the procedure (the same words for the same family)."""
    return (
        f"procedure: exact {'McNemar' if paired else 'Fisher'} "
        f"test per slice, {'discrete ' if discrete else ''}Holm across {family} slice test(s) "
        f"at family-wise {100 * alpha:g}% ({100 * alpha / 2:g}% per direction)"
        + ("; each exact test is charged only the p-values it can attain, so a slice too "
           "small to reach a small p costs the others nothing" if discrete else "")
        + "; each slice's interval is at the level Holm used for it, so it excludes 0 exactly "
        "when the slice is decided"
    )


def comparison_of(
    baseline: RunData,
    cand: RunData,
    mismatch: bool,
    rows: list[SliceComparison],
    agg: Aggregate,
    confidence: float,
    family: int,
    effect: float,
    *,
    notes: list[str],
    multiplicity: str = DISCRETE_HOLM.name,
    metrics: Sequence[MetricRow] = (),
) -> Comparison:
    """The comparison of decided slices: the overall verdict of the comparison rules.

    A primary metric's slice counts as a slice: regressed in a required slice, it blocks;
    inconclusive, it leaves the comparison unsure.
    """
    regressed: list[str] = []
    blocking: list[str] = []
    unsure: list[str] = []
    possible: list[str] = []
    for r in rows:  # one pass over the rows, each list in row order
        decision = r.decision
        verdict = decision.verdict
        if verdict == _REGRESSED:
            regressed.append(r.name)
            if r.primary:
                blocking.append(r.name)
        if verdict == _INCONCLUSIVE or decision.excluded:
            unsure.append(r.name)
        if decision.possible_regression:
            possible.append(r.name)
    for m in metrics:
        if m.role == "primary":
            if m.verdict == _REGRESSED and m.required:
                blocking.append(m.label)
            elif m.verdict == _INCONCLUSIVE:
                unsure.append(m.label)
    return Comparison(
        baseline=baseline.run_id,
        candidate=cand.run_id,
        baseline_policy=baseline.policy,
        candidate_policy=cand.policy,
        panel_name=baseline.panel.name,
        panel_fingerprint=baseline.panel_fingerprint,
        panel_mismatch=mismatch,
        slice_rows=rows,
        aggregate=agg,
        hidden_regressions=hidden_regressions(regressed, agg.delta, agg.low, agg.high),
        possible_regressions=possible,
        verdict=overall_verdict(FamilyFacts(tuple(blocking), tuple(unsure), agg.low)),
        notes=notes,
        confidence=confidence,
        effect=effect,
        family_size=family,
        multiplicity=multiplicity,
        metrics=list(metrics),
    )


def worst_verdict(comparisons: Sequence[Comparison]) -> str:
    """The most severe verdict (regression > inconclusive > no regression > improves)."""
    return max((c.verdict for c in comparisons), key=SEVERITY.index)
