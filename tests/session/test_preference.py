"""Pairwise preference sessions: the plan, the store, the operator loop, and the analysis's
error rates by simulation (identical policies are ordered no more often than alpha)."""

from __future__ import annotations

import io
import itertools
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError, StoreError
from evalband.session._preference import PreferenceSession, plan_preference
from evalband.session._preference_analysis import (
    PreferenceAnalysis,
    analyze_preferences,
    simulate_preferences,
)
from evalband.store import RunStore


def test_the_plan_is_balanced_shuffled_and_seeded() -> None:
    plan = plan_preference(list("abcd"), 60, seed=5, session_id="p")
    pairs = Counter(tuple(sorted((b.first, b.second))) for b in plan.blocks)
    assert len(pairs) == 6 and set(pairs.values()) == {10}  # every pair, equally often
    firsts = Counter(b.first for b in plan.blocks)
    assert all(15 - 8 <= v <= 15 + 8 for v in firsts.values())  # who plays first is drawn
    assert plan.blocks == plan_preference(list("abcd"), 60, seed=5, session_id="p").blocks
    assert plan.blocks != plan_preference(list("abcd"), 60, seed=6, session_id="p").blocks
    assert [b.scene for b in plan_preference(list("ab"), 5, 0, scenes=2).blocks] == [1, 2, 1, 2, 1]
    with pytest.raises(InvalidInputError, match="two or more distinct"):
        plan_preference(["a", "a"], 3, 0)


def test_blocks_are_stored_whole_and_read_as_runs(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    plan = plan_preference(["a", "b", "c"], 6, seed=2, session_id="pp", tasks=["pick", "place"])
    with RunStore(store) as st:
        session = PreferenceSession.create(st, plan)
        with pytest.raises(StoreError, match="exists already"):
            PreferenceSession.create(st, plan)
        for row in simulate_preferences(plan, {"a": 1.0, "b": 0.0, "c": -1.0}, seed=1)[:5]:
            session.record(row.block, row.preferred, row.progress_first, row.progress_second,
                           note="n")
        with pytest.raises(StoreError, match="recorded already"):
            session.record(0, "A", 1, 2)
        with pytest.raises(InvalidInputError, match="0 to 100"):
            session.record(5, "A", 101, 2)
        assert session.pending() is not None and session.pending().index == 5
        undone = session.undo_last()
        assert undone is not None and undone.block == 4 and session.pending().index == 4
        first = plan.blocks[0]
        recs = {r.run_id: r for rid in session.run_ids.values()
                for r in st.episode_records(rid) if r.episode == 0}
        assert set(recs) == {session.run_ids[first.first], session.run_ids[first.second]}
        a, b = recs[session.run_ids[first.first]], recs[session.run_ids[first.second]]
        assert a.key == b.key == (f"scene={first.scene}", 0, 0)  # the block pairs them
        assert a.extra["preference"]["position"] == "A" and a.slices["task"] == "pick"
    # the runs are runs: rank them by the progress score on the matched blocks
    runs = list(session.run_ids.values())
    assert main(["rank", *runs, "--metric", "score", "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["design"] == "paired"


def test_the_operator_loop_and_the_analysis_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = str(tmp_path / "s.sqlite")
    assert main(["prefer", "plan", "--policies", "alpha9,beta9", "--blocks", "3",
                 "--session-id", "op", "--store", store]) == 0
    capsys.readouterr()
    answers = "b\n10\n90\nslipped\nq\nt\n50\n50\n\n"  # "q" is refused and asked again
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    assert main(["prefer", "run", "op", "--store", store, "--command", "true {policy}"]) == 0
    out = capsys.readouterr().out
    assert "expected a/b/t" in out and "stopped; 2 block(s) kept" in out
    assert "alpha9" not in out and "beta9" not in out  # blinded: only A and B are shown
    assert main(["prefer", "analyze", "op", "--store", store, "--json",
                 "--html", str(tmp_path / "p.html")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["blocks_done"] == 2 and PreferenceAnalysis.from_dict(data).blocks_planned == 3
    assert (tmp_path / "p.html").read_text().count('class="interval"') == 2
    assert main(["prefer", "undo", "op", "--store", store]) == 0
    assert main(["prefer", "record", "op", "1", "--preferred", "A", "--progress-a", "100",
                 "--progress-b", "0", "--store", store]) == 0
    assert main(["prefer", "record", "op", "1", "--preferred", "X", "--progress-a", "1",
                 "--progress-b", "0", "--store", store]) == 2


@pytest.mark.parametrize(("k", "blocks", "scenes", "ties"), [
    (3, 30, None, 0.0), (5, 60, None, 0.2), (4, 48, 8, 0.1),
])
def test_identical_policies_are_ordered_no_more_often_than_alpha(
    k: int, blocks: int, scenes: int | None, ties: float,
) -> None:
    names = [f"p{i}" for i in range(k)]
    plan = plan_preference(names, blocks, seed=k, scenes=scenes, session_id="null")
    reps, ordered, covered, total = 120, 0, 0, 0
    for r in range(reps):
        rows = simulate_preferences(plan, dict.fromkeys(names, 0.0), tie_prob=ties, seed=r)
        result = analyze_preferences(plan, rows, progress_reps=100)
        ordered += result.established > 0
        if result.exists:
            covered += sum(p.low <= 0.0 <= p.high for p in result.policies)
            total += k
    # type I error: <= 5% (3 standard errors of Monte Carlo noise allowed)
    assert ordered / reps <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    assert covered / total >= 0.90  # the strengths' Wald intervals cover 0 (marginal 95%)


def test_clear_preferences_are_established_and_a_task_reversal_is_found() -> None:
    names = ["a", "b", "c"]
    plan = plan_preference(names, 90, seed=1, tasks=["pick", "wipe"], session_id="t")
    rows = simulate_preferences(plan, {"a": 1.5, "b": 0.0, "c": -1.5}, seed=2)
    result = analyze_preferences(plan, rows, progress_reps=100)
    assert [p.policy for p in result.policies] == names and result.established == 3
    flipped = simulate_preferences(plan, dict.fromkeys(names, 0.0), seed=3, task_shift={
        "pick": {"a": 1.5, "c": -1.5}, "wipe": {"a": -1.5, "c": 1.5}})
    task = analyze_preferences(plan, flipped, progress_reps=100).task
    assert task is not None and task.p_value < 0.01 and "differ" in task.sentence
    same = [analyze_preferences(plan, simulate_preferences(plan, dict.fromkeys(names, 0.0),
                                                           seed=s), progress_reps=100).task
            for s in range(60)]
    rejections = sum(t is not None and t.p_value <= 0.05 for t in same)
    assert rejections <= 9  # a 5% test: 3 expected of 60, 9 is beyond the Monte Carlo noise


def test_direct_comparisons_are_counted_as_played() -> None:
    plan = plan_preference(["a", "b", "c"], 9, seed=0, session_id="c")
    rows = simulate_preferences(plan, {"a": 0.5, "b": 0.0, "c": -0.5}, tie_prob=0.2, seed=4)
    result = analyze_preferences(plan, rows)
    for pair in result.pairs:
        met = [r for r in rows if {r.first, r.second} == {pair.better, pair.worse}]
        assert pair.wins + pair.losses + pair.ties == len(met)
    by_name = {p.policy: p for p in result.policies}
    for name, p in by_name.items():
        played = sum(name in (r.first, r.second) for r in rows)
        assert p.wins + p.losses + p.ties == played
    assert all(a != b for a, b in itertools.combinations([p.policy for p in result.policies], 2))
