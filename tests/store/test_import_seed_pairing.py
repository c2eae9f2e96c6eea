"""A tabular import with condition seeds and no episode column pairs by seed, not by row
order, and says so; a ``seed`` column is the condition, not a metric (issue 33, item 12)."""

from __future__ import annotations

from pathlib import Path

import evalband
from evalband.store import RunStore, import_results


def _csv(path: Path, header: str, rows: list[tuple[int, int]]) -> Path:
    path.write_text(header + "\n" + "".join(f"{a},{b}\n" for a, b in rows))
    return path


def test_rows_pair_by_condition_seed(store: RunStore, tmp_path: Path) -> None:
    base = import_results(store, _csv(tmp_path / "a.csv", "condition_seed,success",
                                      [(11, 1), (12, 0), (13, 1)]))
    cand = import_results(store, _csv(tmp_path / "b.csv", "seed,success",  # another order
                                      [(13, 0), (11, 1), (12, 0)]))
    for run in (base, cand):
        by_seed = {r.condition_seed: r.episode for r in store.episode_records(run)}
        assert by_seed == {11: 0, 12: 1, 13: 2}
        assert "condition seed" in store.require_run(run).extra["pairing"]
    assert all("metrics" not in r.extra for r in store.episode_records(cand))
    overall = next(row for row in evalband.compare(base, cand, store=store).slice_rows
                   if row.kind == "all")
    # seed 11: both succeed; 12: neither; 13: only the baseline
    assert overall.pairing == "paired"
    assert {k: v for k, v in overall.pairs.items() if v} == {
        "both": 1, "baseline_only": 1, "neither": 1}


def test_a_seed_seen_again_is_a_repeat(store: RunStore, tmp_path: Path) -> None:
    run = import_results(store, _csv(tmp_path / "c.csv", "seed,success",
                                     [(5, 1), (7, 0), (5, 0), (9, 1)]))
    keys = sorted((r.condition_seed, r.episode, r.repeat) for r in store.episode_records(run))
    assert keys == [(5, 0, 0), (5, 0, 1), (7, 1, 0), (9, 2, 0)]
