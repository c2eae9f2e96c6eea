"""The fast comparison path gives the same comparison (its JSON, every number) as before.

The reference below is the comparison as it was computed before the fast path: every band by
:func:`evalband.stats.interval`, every compatible interval, aggregate and power search
recomputed (no memo), each slice's row summed cell by cell with its own masks over the
episodes (its statistics and checks written out here, not read from the registry), and a
stored run's episodes read as records. The fast path (memoised bands, intervals, aggregates
and design power; every slice's counts in one product; the registered statistics sharing
per-run passes; a stored run's columns) must agree with it in every number
(:func:`~evalband.report.comparison_json` writes NaN as null, so equal text is equal
numbers), on random tables, on stored runs and on the reaching lab.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

import evalband
from evalband.analysis import _compare, _statistics, compare_many
from evalband.analysis._compare import RunData, SliceComparison, SliceVerdict
from evalband.analysis._models import PowerBasis
from evalband.analysis._pairs import PairTable, RunColumns, StoredRecords
from evalband.analysis._verdicts import Decided, check_slice
from evalband.episode import EpisodeRecord
from evalband.panel import Panel, load_panel
from evalband.report import comparison_json
from evalband.run import Recorder
from evalband.stats import Interval, interval
from evalband.stats._procedure import compatible_difference, stratified_difference

PANEL = load_panel({"name": "fast", "env": "evalband/Coin-v0", "episodes": 5, "seed": 0,
                    "budget": {"steps": 1}, "repeats": 2,
                    "factors": {"a": ["x", "y"], "b": ["1", "2", "3"]},
                    "latency_budget_ms": {"a=x": 30.0}, "non_inferiority_margin": 0.25})


def _reference_rate(k: int, n: int, confidence: float) -> Interval:
    return interval(k, n, confidence=confidence)


def _reference_with_decision(row: SliceComparison, h: Any, d: Decided,
                             alpha: float) -> SliceComparison:
    """The decided row as before: intervals recomputed, the verdict ladder written out."""
    p_adj, level = float(d.p_adjusted or 0.0), d.level
    counts = _compare._difference_counts(row)
    delta = compatible_difference(counts, paired=row.pairing == "paired",
                                  confidence=1.0 - level, p_value=float(row.p_value or 1.0))
    unadjusted = compatible_difference(counts, paired=row.pairing == "paired",
                                       confidence=1.0 - alpha, p_value=float(row.p_value or 1.0))
    rejected = p_adj <= alpha
    if row.reasons:
        verdict = SliceVerdict.INCONCLUSIVE
    elif rejected and delta.estimate < 0:
        verdict = SliceVerdict.REGRESSED
    elif rejected and delta.estimate > 0:
        verdict = SliceVerdict.IMPROVED
    elif row.margin is not None and delta.low > -row.margin:
        verdict = SliceVerdict.NON_INFERIOR
    else:
        verdict = SliceVerdict.NO_CHANGE
    return _decided(row, p_holm=p_adj, level=1.0 - level, delta=delta,
                    delta_unadjusted=unadjusted, verdict=verdict,
                    possible_regression=bool(delta.estimate < 0
                                             and verdict != SliceVerdict.REGRESSED))


def _decided(row: SliceComparison, **changes: Any) -> SliceComparison:
    return msgspec.structs.replace(
        row, decision=msgspec.structs.replace(row.decision, **changes))


def _reference_with_power(row: SliceComparison, alpha: float, effect: float) -> SliceComparison:
    from evalband.stats._power_statement import pair_correlation, power_statement

    paired = row.pairing == "paired"
    n = (sum(v for k, v in row.pairs.items() if k != "unmatched") if paired
         else min(row.n_baseline, row.n_candidate))
    if n < 2 or row.verdict in (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED):
        return _decided(row, effect=effect)
    if paired:  # the baseline's observed rate, the pair's observed correlation
        p = row.pairs
        st = power_statement(n, round((p["both"] + p["baseline_only"]) / n, 6), alpha, effect,
                             paired=True, correlation=round(pair_correlation(
                                 p["both"], p["candidate_only"], p["baseline_only"],
                                 p["neither"]), 3))
    else:
        st = power_statement(row.n_candidate, round(row.successes_baseline / row.n_baseline, 6),
                             alpha, effect, paired=False, n_baseline=row.n_baseline)
    return _decided(row, detectable_drop=st.detectable_drop,
                    episodes_for_effect=st.episodes_for_effect, effect=effect,
                    power_basis=PowerBasis(base_rate=st.base_rate, correlation=st.correlation,
                                           level=st.level, power=st.power, test=st.test))


def _reference_finished(row: SliceComparison, engine: tuple[Any, Decided] | None,
                        alpha: float, power_alpha: float | None,
                        effect: float) -> SliceComparison:
    """The decided row, then its power statements, each as before."""
    if engine is not None:
        row = _reference_with_decision(row, *engine, alpha)
    return row if power_alpha is None else _reference_with_power(row, power_alpha, effect)


def _reference_slice_row(kind: str, name: str, slices: dict[str, str],
                         members: NDArray[np.bool_], tables: list[PairTable],
                         base: RunColumns, cand: RunColumns, panel: Panel, eaf: bool,
                         confidence: float) -> SliceComparison:
    """One slice's row as before: its cells' tables added, masks over every episode.

    Every registered statistic and every check is recomputed on the slice's own episodes
    (nothing shared with another slice, no per-cell sums); the statistics that came before
    the registry are also written out here and must agree.
    """
    table = PairTable()
    for i in np.flatnonzero(members):
        table = table + tables[int(i)]
    use_b = members[base.cell] & base.counted(eaf)
    use_c = members[cand.cell] & cand.counted(eaf)

    def rates(cols: RunColumns, use: NDArray[np.bool_]) -> tuple[float | None, float | None]:
        n = int(use.sum())
        if not n:
            return None, None
        return int((use & cols.unaided).sum()) / n, int((use & cols.intervened).sum()) / n

    def mean_time(cols: RunColumns, use: NDArray[np.bool_]) -> float | None:
        times = cols.time_to_success[use & cols.success]
        times = times[~np.isnan(times)]
        return float(times.sum() / times.size) if times.size else None

    unaided_b, int_b = rates(base, use_b)
    unaided_c, int_c = rates(cand, use_c)
    budgets = panel.latency_budget_ms
    found = [budgets[key] for factor, value in slices.items()
             for key in (f"{factor}={value}", value) if key in budgets]
    budget = min(found) if found else None
    lat = cand.latency_p95[use_c]
    lat = lat[~np.isnan(lat)]
    p95 = float(np.percentile(lat, 95)) if lat.size else None
    k_b, n_b, k_c, n_c = table.k_baseline, table.n_baseline, table.k_candidate, table.n_candidate
    written_out = {
        "unaided_rate_baseline": unaided_b, "unaided_rate_candidate": unaided_c,
        "intervention_rate_baseline": int_b, "intervention_rate_candidate": int_c,
        "inflated_baseline": (k_b / n_b - unaided_b) if n_b and unaided_b is not None else None,
        "inflated_candidate": (k_c / n_c - unaided_c) if n_c and unaided_c is not None else None,
        "latency_p95_candidate_ms": p95, "latency_budget_ms": budget,
        "mean_time_to_success_baseline_s": mean_time(base, use_b),
        "mean_time_to_success_candidate_s": mean_time(cand, use_c),
        "time_to_success_delta_s": _reference_time_delta(
            _reference_paired_times(base, cand, members.size), members, confidence),
    }
    data = _own_slice_data(kind, name, slices, members, table, base, cand, panel, eaf,
                           confidence)
    extras = {**_statistics.compute_statistics(data), **written_out}
    row = _compare._row_from_table(kind, name, table, panel, confidence=confidence)
    row = msgspec.structs.replace(row, extras=extras)
    reasons, excluded = check_slice(row, data)
    return msgspec.structs.replace(row, decision=msgspec.structs.replace(
        row.decision, reasons=reasons, excluded=excluded,
        margin=_compare._margin_for(name, slices, panel.non_inferiority_margin)))


def _own_slice_data(kind: str, name: str, slices: dict[str, str], members: NDArray[np.bool_],
                    table: PairTable, base: RunColumns, cand: RunColumns, panel: Panel,
                    eaf: bool, confidence: float) -> _statistics.SliceData:
    """The slice's data built from its own episodes alone (each run's columns cut to it)."""

    def arm(cols: RunColumns, k: int, n: int) -> _statistics.ArmData:
        own = RunColumns(**{f.name: getattr(cols, f.name)[members[cols.cell]]
                              for f in fields(cols)})
        use = own.counted(eaf)
        side = _statistics.RunSide(own, members.size, eaf)
        return _statistics.ArmData(side, members, int(own.cell.size), int(use.sum()),
                                   int((use & own.unaided).sum()),
                                   int((use & own.intervened).sum()), k, n)

    return _statistics.SliceData(kind, name, slices, table,
                                 arm(base, table.k_baseline, table.n_baseline),
                                 arm(cand, table.k_candidate, table.n_candidate),
                                 panel, confidence)


def _reference_time_delta(times: Any, members: NDArray[np.bool_],
                          confidence: float) -> _statistics.PairedTimeDelta | None:
    """Student's t on the paired differences, from the per-cell sums (scipy's quantile)."""
    from scipy.special import stdtrit

    n = int(times.count[members].sum())
    if n < 2:
        return None
    total = float(times.total[members].sum())
    var = max(float(times.squares[members].sum()) - total * (total / n), 0.0) / (n - 1)
    mean = times.shift + total / n
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * math.sqrt(var / n)
    return _statistics.PairedTimeDelta(mean, mean - half, mean + half, n, confidence,
                                       "paired t, pairs where both succeeded")


def _reference_paired_times(base: RunColumns, cand: RunColumns,
                            n_cells: int) -> _statistics._PairedTimes:
    """The pairs where both succeeded with a time, joined on their keys (``intersect1d``)."""
    ok_b = base.success & ~np.isnan(base.time_to_success)
    ok_c = cand.success & ~np.isnan(cand.time_to_success)
    ep = max(int(base.episode.max(initial=0)), int(cand.episode.max(initial=0))) + 1
    rep = max(int(base.repeat.max(initial=0)), int(cand.repeat.max(initial=0))) + 1

    def keys(cols: RunColumns, ok: NDArray[np.bool_]) -> NDArray[np.int64]:
        return (cols.cell[ok] * ep + cols.episode[ok]) * rep + cols.repeat[ok]

    _, ib, ic = np.intersect1d(keys(base, ok_b), keys(cand, ok_c), assume_unique=True,
                               return_indices=True)
    cell = base.cell[ok_b][ib]
    d = cand.time_to_success[ok_c][ic] - base.time_to_success[ok_b][ib]
    shift = float(d.mean()) if d.size else 0.0
    d = d - shift
    return _statistics._PairedTimes(
        *(np.bincount(cell, weights=w, minlength=n_cells).astype(np.float64)
          for w in (None, d, d * d)), shift)


def _reference_slice_rows(definitions: list[tuple[str, str, dict[str, str]]],
                          members: NDArray[np.bool_], tables: NDArray[np.int64],
                          base: RunColumns, cand: RunColumns, panel: Panel, *,
                          errors_as_failures: bool, confidence: float,
                          slice_tables: object = None) -> list[SliceComparison]:
    # ``slice_tables`` (the fast path's one-cell slices' tables) is ignored: each slice's
    # table is summed here from its cells, so the fast path's shortcut is checked against it
    cell_tables = [PairTable(*row) for row in tables.tolist()]
    return [_reference_slice_row(kind, name, slices, inside, cell_tables, base, cand, panel,
                                 errors_as_failures, confidence)
            for (kind, name, slices), inside in zip(definitions, members, strict=True)]


def _reference_stratified(counts: tuple[tuple[tuple[str, int], ...], ...],
                          weights: tuple[float, ...],
                          confidence: float) -> tuple[float, float, float, str]:
    band = stratified_difference([dict(c) for c in counts], list(weights),
                                 confidence=confidence)
    return band.estimate, band.low, band.high, band.method


@contextmanager
def reference_path() -> Iterator[None]:
    """The comparison as computed before the fast path (monkeypatched in, then restored)."""
    names = ("wilson", "_finished", "_slice_rows", "_stratified")  # the rows' bands: wilson
    saved = [getattr(_compare, name) for name in names]
    for name, reference in zip(names, (_reference_rate, _reference_finished,
                                       _reference_slice_rows, _reference_stratified),
                               strict=True):
        setattr(_compare, name, reference)
    try:
        yield
    finally:
        for name, fast in zip(names, saved, strict=True):
            setattr(_compare, name, fast)


def as_records(run: RunData) -> RunData:
    """The same run with its episodes as a plain list of records (the record path)."""
    return replace(run, records=list(run.records))


episode = st.tuples(
    st.sampled_from(["success", "success", "failure", "timeout", "error"]),
    st.booleans(),  # present in this run
    st.booleans(),  # assisted
    st.one_of(st.none(), st.floats(0.1, 50.0)),  # latency p95
)


def build(run_id: str, draws: list[tuple[str, bool, bool, float | None]]) -> RunData:
    recs = []
    i = 0
    for cell in PANEL.cells():
        for ep in range(PANEL.episodes):
            for rep in range(PANEL.repeats):
                outcome, present, assisted, lat = draws[i % len(draws)]
                i += 1
                if present:
                    recs.append(EpisodeRecord(
                        run_id=run_id, policy=run_id, panel_fingerprint=PANEL.fingerprint,
                        cell=cell.key, slices=dict(cell.slices), episode=ep, repeat=rep,
                        condition_seed=ep, outcome=outcome, terminated=True, truncated=False,
                        steps=1, assisted=assisted and i % 3 == 0, latency_ms_p95=lat,
                        time_to_success_s=0.1 * (ep + 1) + i / 7 if outcome == "success"
                        else None))
    return RunData(run_id, run_id, PANEL.fingerprint, PANEL, recs)


def shuffled(run: RunData, seed: int | None) -> RunData:
    """The run with its records in another order (``None``: as built)."""
    if seed is None:
        return run
    order = np.random.default_rng(seed).permutation(len(run.records))
    return replace(run, records=[run.records[int(i)] for i in order])


@settings(max_examples=25, deadline=None)
@example([("success", True, False, 1.0)], [("failure", True, False, None),
         ("success", True, True, None)], [("success", True, False, None)], False, None)
@given(st.lists(episode, min_size=1, max_size=30), st.lists(episode, min_size=1, max_size=30),
       st.lists(episode, min_size=1, max_size=30), st.booleans(),
       st.one_of(st.none(), st.integers(0, 2**16)))
def test_fast_path_equals_the_reference_on_random_tables(b_draws, c_draws, d_draws,
                                                         eaf, order) -> None:
    base = replace(build("b", b_draws), errors_as_failures=eaf)
    cands = [shuffled(build("c", c_draws), order), build("d", d_draws)]
    with reference_path():
        expected = [comparison_json(c) for c in compare_many(base, cands)]
    for _ in range(2):  # first and memoised
        assert [comparison_json(c) for c in compare_many(base, cands)] == expected


@settings(max_examples=10, deadline=None)
@given(st.lists(episode, min_size=1, max_size=30), st.lists(episode, min_size=1, max_size=30),
       st.integers(0, 2**16))
def test_fast_path_equals_the_reference_with_both_runs_in_one_other_order(b_draws, c_draws,
                                                                         order) -> None:
    """Both runs hold the same episodes in one order that is not the pairing keys' order."""
    every = [(outcome, True, assisted, lat) for outcome, _, assisted, lat in b_draws]
    base = shuffled(build("b", every), order)
    cand = build("c", [(o, True, a, lat) for o, _, a, lat in c_draws])
    slower = np.random.default_rng(order).random(len(cand.records))  # times that differ
    cand = shuffled(replace(cand, records=[
        r if r.time_to_success_s is None else replace(r, time_to_success_s=r.time_to_success_s
                                                      + float(extra))
        for r, extra in zip(cand.records, slower, strict=True)]), order)
    with reference_path():
        expected = comparison_json(compare_many(base, [cand])[0])
    assert comparison_json(compare_many(base, [cand])[0]) == expected


def _store_random(store: Any, run_id: str, draws: list[tuple[str, bool, bool, float | None]]
                  ) -> None:
    with Recorder(store, PANEL, f"policy-{run_id}", run_id=run_id) as rec:
        for r in build(run_id, draws).records:
            rec.log(cell=r.cell, episode=r.episode, repeat=r.repeat, outcome=r.outcome,
                    steps=1, assisted=r.assisted, latency_ms_p95=r.latency_ms_p95,
                    time_to_success_s=r.time_to_success_s)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(episode, min_size=1, max_size=30), st.lists(episode, min_size=1, max_size=30))
def test_stored_runs_compare_from_columns_as_from_records(store, b_draws, c_draws) -> None:
    tag = f"{abs(hash((tuple(b_draws), tuple(c_draws)))) % 10**12}"
    _store_random(store, f"b{tag}", b_draws)
    _store_random(store, f"c{tag}", c_draws)
    base, cand = evalband.load_run(f"b{tag}", store), evalband.load_run(f"c{tag}", store)
    assert isinstance(base.records, StoredRecords)
    fast = comparison_json(compare_many(base, [cand])[0])
    assert base.records._records is None and cand.records._records is None  # no records made
    with reference_path():
        assert comparison_json(compare_many(as_records(base), [as_records(cand)])[0]) == fast


def test_reach_lab_identical_and_records_readable_after_close(tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    panel = load_panel("reach1d")
    with evalband.open_store(path) as store:
        for policy in ("reach1d:baseline", "reach1d:damped"):
            evalband.run_panel(panel, policy, store, run_id=policy.split(":")[1])
        base, cand = evalband.load_run("baseline", store), evalband.load_run("damped", store)
    fast = comparison_json(evalband.compare("baseline", "damped", store=path))
    assert comparison_json(compare_many(base, [cand])[0]) == fast
    # The store is closed: records are read from the same file, opened read-only.
    records = list(base.records)
    assert len(records) == len(base.records) == 64 and records[0].run_id == "baseline"
    with reference_path():
        assert comparison_json(compare_many(as_records(base), [as_records(cand)])[0]) == fast


def test_stored_records_are_immutable_and_compare_equal() -> None:
    made = []

    def read() -> list[EpisodeRecord]:
        made.append(1)
        return build("r", [("success", True, False, None)]).records  # type: ignore[return-value]

    recs = StoredRecords({"cell": np.array(["x"] * 60, dtype=object)}, read)
    assert len(recs) == 60 and not made
    assert recs == list(recs) and recs[0].run_id == "r" and made == [1]
    with pytest.raises(TypeError):
        recs[0] = recs[1]  # type: ignore[index]


def test_kept_columns_follow_the_records_in_memory() -> None:
    """A run's arrays are used again only while it holds the very same records, in order."""
    base = build("b", [("success", True, False, 2.0), ("failure", True, True, None)])
    cand = build("c", [("failure", True, False, None), ("success", True, False, 5.0)])
    first = comparison_json(compare_many(base, [cand])[0])
    assert comparison_json(compare_many(base, [cand])[0]) == first  # kept arrays, same result
    records = cand.records
    assert isinstance(records, list)
    changed = build("x", [("success", True, False, None)]).records[0]
    for edit in (lambda: records.__setitem__(0, replace(changed, run_id="c")),
                 lambda: records.append(replace(records[-1], repeat=1, episode=99)),
                 lambda: records.reverse()):
        edit()
        fresh = RunData(cand.run_id, cand.policy, cand.panel_fingerprint, PANEL,
                        list(records))
        assert (comparison_json(compare_many(base, [cand])[0])
                == comparison_json(compare_many(base, [fresh])[0]))
    assert comparison_json(compare_many(base, [cand])[0]) != first
    cols = cand.compare_columns([c.key for c in PANEL.cells()])
    with pytest.raises(ValueError, match="read-only"):
        cols.success[0] = True


@pytest.mark.parametrize("blocks", [False, True])
def test_stored_metrics_read_only_where_an_episode_may_hold_them(
        tmp_path, monkeypatch: pytest.MonkeyPatch, blocks: bool) -> None:
    """Only the ``extra`` texts that may hold metrics are read; the rows equal the records'.

    Some episodes carry metrics, one under an escaped key (``metr\\u0069cs``), others another
    ``extra`` or none; a run without any metric reads no ``extra`` text at all.
    """
    from evalband.analysis._metrics import metric_values
    from evalband.analysis._pairs import HAS_METRICS
    from evalband.store import RunStore, _columns

    if blocks:
        monkeypatch.setattr(_columns, "_ONE_QUERY", 0)
        monkeypatch.setattr(_columns, "_BLOCK", 4)
    path = tmp_path / "s.sqlite"
    specs = PANEL.episode_specs()
    with evalband.open_store(path) as st:
        for run_id, shift in (("b", 0.0), ("c", 0.5), ("plain", 0.0)):
            with Recorder(st, PANEL, run_id, run_id=run_id) as rec:
                for i, s in enumerate(specs):
                    extra: dict[str, Any] = {"note": "x"} if i % 3 == 1 else {}
                    if run_id != "plain" and i % 3 == 0:
                        extra = {"metrics": {"return": shift + i / 7, "steps_left": i % 4}}
                    rec.log(cell=s.cell, episode=s.episode, repeat=s.repeat, steps=1,
                            outcome="success" if i % 2 else "failure", extra=extra)
        st.conn.execute('UPDATE episodes SET "extra" = \'{"metr\\u0069cs": {"return": 9.5}}\' '
                        "WHERE run_id = 'c' AND \"episode\" = 1")
        st.conn.commit()
        base, cand, plain = (evalband.load_run(r, st) for r in ("b", "c", "plain"))
        read: list[str | None] = []
        real = RunStore.episode_columns
        monkeypatch.setattr(RunStore, "episode_columns",
                            lambda self, *a, **k: read.append(k.get("where"))  # type: ignore[func-returns-value]
                            or real(self, *a, **k))
        fast = compare_many(base, [cand, plain])
        assert read == [HAS_METRICS, HAS_METRICS]  # the plain run read no extra text
        cells = [c.key for c in PANEL.cells()]
        assert metric_values(plain.records, cells).values == {}
        assert len(metric_values(cand.records, cells).values["return"]) == len(
            [s for i, s in enumerate(specs) if i % 3 == 0 or s.episode == 1])
        slow = compare_many(as_records(base), [as_records(cand), as_records(plain)])
    assert [comparison_json(c) for c in fast] == [comparison_json(c) for c in slow]
    assert fast[0].metrics and not any(m.metric == "note" for m in fast[0].metrics)


def test_what_a_comparison_kept_stays_with_the_run_and_out_of_its_copies() -> None:
    """The arrays and layout a comparison derived are kept on the run object (no table keyed
    by ``id``): compared again, the same arrays; pickled, the copy carries none of them and
    compares the same."""
    import pickle

    base = build("b", [("success", True, False, 2.0), ("failure", True, True, None)])
    cand = build("c", [("failure", True, False, None), ("success", True, False, 5.0)])
    first = comparison_json(compare_many(base, [cand])[0])
    kept = base._memo["kept"].columns
    assert comparison_json(compare_many(base, [cand])[0]) == first
    assert base._memo["kept"].columns is kept and "layout" in base._memo
    copy = pickle.loads(pickle.dumps(base))
    assert "_memo" not in vars(copy)
    assert comparison_json(compare_many(copy, [cand])[0]) == first
