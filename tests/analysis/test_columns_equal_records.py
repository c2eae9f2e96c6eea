"""A stored run's columns give what its records give: compare, pairs, curves, noise, columns.

Random runs (missing episodes, errors, repeats, assistance, latencies, times) are stored, then
every column-wise consumer is checked against the record path on the same episodes, and the
comparison's pair counts against an independent brute-force count. Small read blocks make the
store cut each cell into several ``group_concat`` queries.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalband
from evalband.analysis import compare_many, noise_floor
from evalband.analysis._compare import RunData
from evalband.analysis._pairs import StoredRecords, records_where
from evalband.analysis._summary import paired_outcomes
from evalband.episode import EpisodeRecord, Outcome
from evalband.panel import load_panel
from evalband.report import comparison_json
from evalband.report._curves import cumulative_curve
from evalband.run import Recorder
from evalband.store import RunStore, _columns
from evalband.store._columns import OUTCOME_CODES

PANEL = load_panel({"name": "cols", "env": "evalband/Coin-v0", "episodes": 4, "seed": 0,
                    "budget": {"steps": 1}, "repeats": 2,
                    "factors": {"a": ["x", "y"], "b": ["1", "2"]}})

episode = st.tuples(
    st.sampled_from(["success", "success", "failure", "timeout", "error"]),
    st.booleans(),  # present in this run
    st.booleans(),  # assisted
    st.one_of(st.none(), st.floats(0.1, 50.0)),  # latency p95
    st.integers(0, 2),  # interventions
)


def _store(store: RunStore, run_id: str, draws: list[Any]) -> None:
    i = 0
    with Recorder(store, PANEL, f"policy-{run_id}", run_id=run_id) as rec:
        for cell in PANEL.cells():
            for ep in range(PANEL.episodes):
                for rep in range(PANEL.repeats):
                    outcome, present, assisted, lat, helps = draws[i % len(draws)]
                    i += 1
                    if present:
                        rec.log(cell=cell.key, episode=ep, repeat=rep, outcome=outcome,
                                steps=i, assisted=assisted, interventions=helps,
                                latency_ms_p95=lat,
                                time_to_success_s=i / 7 if outcome == "success" else None)


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_columns, "_BLOCK", 3)
    monkeypatch.setattr(_columns, "_ONE_QUERY", 0)  # block by block, as a large run is read
    yield


def _brute_force(base: list[EpisodeRecord], cand: list[EpisodeRecord], cell: str,
                 eaf: bool) -> dict[str, int]:
    """A cell's pair counts by dictionaries, independent of the numpy join."""
    def keep(r: EpisodeRecord) -> bool:
        return r.cell == cell and (eaf or r.outcome.value != "error")

    b = {r.key: r.success for r in base if keep(r)}
    c = {r.key: r.success for r in cand if keep(r)}
    both = Counter((c[k], b[k]) for k in b.keys() & c.keys())
    return {"both": both[True, True], "baseline_only": both[False, True],
            "candidate_only": both[True, False], "neither": both[False, False],
            "unmatched": len(b.keys() ^ c.keys())}


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(episode, min_size=1, max_size=24), st.lists(episode, min_size=1, max_size=24),
       st.booleans())
def test_columns_give_what_records_give(store: RunStore, b_draws: list[Any],
                                        c_draws: list[Any], eaf: bool) -> None:
    tag = f"{abs(hash((tuple(b_draws), tuple(c_draws), eaf))) % 10**12}"
    _store(store, f"b{tag}", b_draws)
    _store(store, f"c{tag}", c_draws)
    store.update_run(f"b{tag}", errors_as_failures=eaf)
    base, cand = evalband.load_run(f"b{tag}", store), evalband.load_run(f"c{tag}", store)
    assert isinstance(base.records, StoredRecords) and isinstance(cand.records, StoredRecords)
    b_list, c_list = store.episode_records(f"b{tag}"), store.episode_records(f"c{tag}")

    # every number of compare --json: columns == records, and pairs == a brute-force count
    fast = compare_many(base, [cand])[0]
    slow = compare_many(RunData(
        base.run_id, base.policy, base.panel_fingerprint, base.panel, b_list, eaf),
        [RunData(cand.run_id, cand.policy, cand.panel_fingerprint,
                                   cand.panel, c_list)])[0]
    assert comparison_json(fast) == comparison_json(slow)
    for row in json.loads(comparison_json(fast))["slices"]:
        if row["kind"] == "cell" and row["pairing"] == "paired":
            assert row["pairs"] == _brute_force(b_list, c_list, row["name"], eaf)

    # pairs, curves and the noise floor from columns (no record read) == from records
    fast_pairs = paired_outcomes(base.records, cand.records, errors_as_failures=eaf)
    slow_pairs = paired_outcomes(b_list, c_list, errors_as_failures=eaf)
    assert fast_pairs.keys == slow_pairs.keys
    assert fast_pairs.a.tolist() == slow_pairs.a.tolist()
    assert fast_pairs.b.tolist() == slow_pairs.b.tolist()
    assert (fast_pairs.unmatched, fast_pairs.excluded_errors) == (
        slow_pairs.unmatched, slow_pairs.excluded_errors)
    for fast_c, slow_c in ((cumulative_curve(base.records, errors_as_failures=eaf),
                            cumulative_curve(b_list, errors_as_failures=eaf)),):
        assert (fast_c is None) == (slow_c is None)
        if fast_c is not None and slow_c is not None:
            assert fast_c.k.tolist() == slow_c.k.tolist()
            assert fast_c.n.tolist() == slow_c.n.tolist()
    try:
        slow_noise = noise_floor(b_list, 3, errors_as_failures=eaf).as_dict()
    except evalband.errors.InvalidInputError:
        slow_noise = None
    if slow_noise is not None:
        assert noise_floor(base.records, 3, errors_as_failures=eaf).as_dict() == slow_noise
    errors = records_where(base.records, "\"outcome\" = 'error'",
                           lambda r: r.outcome.value == "error")
    assert errors == [r for r in b_list if r.outcome.value == "error"]
    assert base.records._records is None and cand.records._records is None  # never read

    # the store's columns, read in small blocks, equal the records' fields
    names = ["cell", "episode", "repeat", "outcome", "terminated", "truncated", "assisted",
             "steps", "interventions", "attempts", "score", "condition_seed",
             "latency_ms_p95", "time_to_success_s", "policy", "extra"]
    cols = store.episode_columns(f"b{tag}", names)
    for name in names:
        if name == "outcome":
            want: Any = [OUTCOME_CODES.index(r.outcome.value) for r in b_list]
        elif name == "score":
            want = [-1 if r.score is None else r.score for r in b_list]
        elif name == "extra":
            want = [json.dumps(r.extra) for r in b_list]
        else:
            want = [getattr(r, name) for r in b_list]
        got = cols[name].tolist()
        if name in ("latency_ms_p95", "time_to_success_s"):
            want = [np.nan if v is None else v for v in want]
            assert np.array_equal(np.array(got, float), np.array(want, float), equal_nan=True)
        else:
            assert got == want, name


def test_seeds_past_int64_are_read_exactly(store: RunStore) -> None:
    """A seed stored as text goes row by row; the result is still exact."""
    seeds = [2**70 + 1, 5, 7]
    store.create_run(evalband.store._manifest._example().replace(run_id="big"))
    store.add_episodes(EpisodeRecord("big", "p", "f", "c", i, 0, seeds[i], Outcome.SUCCESS, True,
                                     False, 1) for i in range(3))
    cols = store.episode_columns("big", ["episode", "condition_seed", "outcome"])
    assert cols["condition_seed"].tolist() == seeds
    assert cols["episode"].tolist() == [0, 1, 2]
