"""The session stop rule: complete blocks only, the planned comparisons, blinding kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband.session._plan import SessionPlan, plan_session
from evalband.session._sequential import blocks_complete, session_look
from evalband.session._store import TrialRecord


def _records(plan: SessionPlan, upto: int, wins: dict[str, bool]) -> list[TrialRecord]:
    return [TrialRecord(plan.session_id, t.index, "scored", 2 if wins[t.policy] else 0,
                        wins[t.policy], False, None, None, None, None, "t")
            for t in plan.trials[:upto]]


def test_looks_use_complete_blocks_and_decide_the_planned_comparison() -> None:
    plan = plan_session(["A", "B", "C"], scenes=12, attempts=2, seed=1, session_id="s")
    wins = {"A": True, "B": False, "C": True}
    per_block = len(plan.block(1))
    partial = _records(plan, 5 * per_block + 3, wins)
    assert blocks_complete(plan, partial) == 5
    look = session_look(plan, partial, [("A", "B")])
    assert look.scenes_done == 5 and look.comparisons[0]["pairs"] == 10
    decided = next(k for k in range(1, 13)
                   if session_look(plan, _records(plan, k * per_block, wins), [("A", "B")]).decided)
    look = session_look(plan, _records(plan, decided * per_block, wins), [("A", "B")])
    assert look.comparisons[0]["decision"] == "A better than B"
    assert look.comparisons[0]["statistic"] >= look.comparisons[0]["boundary"]
    # A vs C never differs: with both planned the session goes on until that one is futile
    both = session_look(plan, _records(plan, decided * per_block, wins), [("A", "B"), ("A", "C")])
    assert not both.decided
    assert "decided after" in look.sentence(plan) and "A better" in look.sentence(plan)


def test_blinded_sentence_names_no_policy() -> None:
    plan = plan_session(["A", "B"], scenes=10, attempts=2, seed=1, session_id="s", blind=True)
    look = session_look(plan, _records(plan, len(plan.trials), {"A": True, "B": False}),
                        [("A", "B")])
    assert look.decided
    text = look.sentence(plan)
    assert "A" not in text.replace("after", "") and "B" not in text


def test_analyze_says_when_the_stop_rule_ended_the_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A session holding exactly the blocks at which the stop rule decided is reported as stopped
    early (terminal and --json); one block fewer, or a block cut short, is not."""
    from evalband.cli import main
    from evalband.session import SessionStore
    from evalband.session._sequential import stopped_early

    plan = plan_session(["A", "B"], scenes=12, attempts=2, seed=1, session_id="s")
    wins = {"A": True, "B": False}
    per_block = len(plan.block(1))
    decided = next(k for k in range(1, 13)
                   if session_look(plan, _records(plan, k * per_block, wins), [("A", "B")]).decided)
    assert 1 < decided < 12
    ab = [("A", "B")]
    assert stopped_early(plan, _records(plan, (decided - 1) * per_block, wins), ab) is None
    assert stopped_early(plan, _records(plan, decided * per_block + 1, wins), ab) is None
    assert stopped_early(plan, _records(plan, decided * per_block, wins), []) is None
    db = tmp_path / "s.sqlite"
    (tmp_path / "plan.yaml").write_text("session: s\ncomparisons: [[A, B]]\n")
    assert main(["prereg", "lock", str(tmp_path / "plan.yaml"), "--store", str(db)]) == 0
    with SessionStore(db) as ss:
        ss.create(plan)
        for r in _records(plan, decided * per_block, wins):
            ss.record("s", r.trial_index, status="scored", score=r.score, assisted=False)
    capsys.readouterr()
    assert main(["session", "analyze", "s", "--store", str(db), "--json"]) in (0, None)
    data = json.loads(capsys.readouterr().out)
    assert data["stopped_early"].startswith(f"stopped early: decided after {decided} of 12")
    assert data["notes"][0] == data["stopped_early"]
    assert main(["session", "analyze", "s", "--store", str(db)]) in (0, None)
    assert "note: stopped early: decided after" in capsys.readouterr().out
