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


def test_the_preregistered_design_is_the_stop_rules_design(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ``design:`` block locked with the plan fixes the stop rule's effect, alpha and
    discordance (stored with each look, used by analyze); ``--alpha`` cannot change it."""
    from evalband.cli import main
    from evalband.cli._session import _stop_rule
    from evalband.errors import InvalidInputError
    from evalband.session import SessionStore, stored_looks
    from evalband.stats import sequential_paired_test
    from evalband.stats._sequential import design_theta

    db = tmp_path / "s.sqlite"
    (tmp_path / "plan.yaml").write_text(
        "session: s\ncomparisons: [[A, B]]\ndesign: {effect: 0.3, alpha: 0.1, discordant: 0.4}\n")
    assert main(["prereg", "lock", str(tmp_path / "plan.yaml"), "--store", str(db)]) == 0
    plan = plan_session(["A", "B"], scenes=12, attempts=2, seed=1, session_id="s")
    wins = {"A": True, "B": False}

    def first_decided(theta: float, alpha: float) -> int:  # each block: 2 pairs, A only
        return next(k for k in range(1, 13) if sequential_paired_test(
            0, 2 * k, alpha_side=alpha / 2, theta=theta, horizon=24).decision != "continue")

    declared = first_decided(design_theta(0.3, 0.4), 0.1)
    default = first_decided(design_theta(0.1, None), 0.05)
    assert declared < default  # the design decides when the session stops
    with SessionStore(db) as ss:
        ss.create(plan)
        with pytest.raises(InvalidInputError, match="fixed before the data"):
            _stop_rule(ss, plan, db, 0.05)
        stop = _stop_rule(ss, plan, db, None)
        for trial in plan.trials:
            if trial.position == 0 and stop(ss.records("s")) is not None:
                break
            ss.record("s", trial.index, score=2 if wins[trial.policy] else 0)
        looks = stored_looks(ss, "s")
    assert looks[-1].look.decided and looks[-1].look.scenes_done == declared
    assert {k: looks[-1].options[k] for k in ("effect", "alpha", "discordant",
                                              "design_source")} == {
        "effect": 0.3, "alpha": 0.1, "discordant": 0.4, "design_source": "pre-registration"}
    capsys.readouterr()
    assert main(["session", "analyze", "s", "--store", str(db), "--json"]) in (0, None)
    early = json.loads(capsys.readouterr().out)["stopped_early"]
    assert early.startswith(f"stopped early: decided after {declared} of 12")
    assert "at alpha 0.1, tuned to a 30-point difference" in early
    # a design block's fields the stop rule does not use are refused, in one line
    (tmp_path / "bad.yaml").write_text("session: s\ncomparisons: [[A, B]]\n"
                                       "design: {effect: 0.3, power: 0.9}\n")
    assert main(["prereg", "lock", str(tmp_path / "bad.yaml"), "--store", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "power" in err and "panel" in err
