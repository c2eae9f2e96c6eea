"""Session analyses and sequential looks are stored results: typed back, rendered, not redone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sessionkit import store_session

from evalband.cli import main
from evalband.session import (
    SessionAnalysis,
    SessionStore,
    analyze_session,
    plan_session,
    simulate_session,
)
from evalband.session._stored import latest_analysis, stored_looks
from evalband.stats import Difference, Interval
from evalband.stats._types import TestResult

RATES = {"A": 0.85, "B": 0.5, "C": 0.2}


def _session(db: Path, sid: str = "g", scenes: int = 8) -> None:
    plan = plan_session(list(RATES), scenes=scenes, attempts=2, seed=5, session_id=sid,
                        positive_control="A")
    trials = simulate_session(plan, success_prob=RATES, flip_prob=0.2, skip_prob=0.05,
                              assist_prob=0.05, seed=6)
    store_session(db, plan, trials)


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert main(list(args)) in (0, None)
    return json.loads(capsys.readouterr().out)


def test_the_analysis_round_trips_typed_through_json(tmp_path: Path) -> None:
    plan = plan_session(list(RATES), scenes=8, attempts=2, seed=5, session_id="g",
                        positive_control="A")
    trials = simulate_session(plan, success_prob=RATES, flip_prob=0.2, skip_prob=0.1,
                              assist_prob=0.1, seed=7)
    result = analyze_session(plan, trials, control_floor=0.6)
    text = json.dumps(result.as_dict())
    back = SessionAnalysis.from_dict(json.loads(text))
    assert json.dumps(back.as_dict()) == text  # every number, every word
    assert back.comparisons == result.comparisons and back.control == result.control
    assert back.policies == result.policies and back.prices == result.prices
    c = back.comparisons[0]
    assert isinstance(c.difference, Difference) and isinstance(c.test, TestResult)
    assert isinstance(c.rate_a, Interval) and type(c.verdict) is type(result.comparisons[0].verdict)
    assert back.policies[0].scores == result.policies[0].scores  # int keys again
    assert back.rubric == result.rubric


def test_analyze_stores_its_result_and_renders_the_stored_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.sqlite"
    _session(db)
    s = ("--store", str(db))
    first = _json(capsys, "session", "analyze", "g", *s, "--json")
    with SessionStore(db) as ss:
        stored = latest_analysis(ss, "g")
        assert stored is not None and stored.current and stored.options["confidence"] == 0.95
        assert json.loads(json.dumps(stored.analysis.as_dict())) == {
            k: v for k, v in first.items() if k not in ("stopped_early", "instrument")}

    import evalband.session as session_pkg

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a current stored analysis was computed again")

    monkeypatch.setattr(session_pkg, "analyze_session", refuse)
    assert _json(capsys, "session", "analyze", "g", *s, "--json") == first
    html = tmp_path / "g.html"
    assert main(["session", "analyze", "g", *s, "--html", str(html)]) in (0, None)
    assert "Session g" in html.read_text()
    with pytest.raises(AssertionError, match="computed again"):  # other options: computed
        main(["session", "analyze", "g", *s, "--confidence", "0.9", "--json"])
    monkeypatch.undo()
    with SessionStore(db) as ss:  # a trial undone: the stored result is no longer current
        ss.undo_last("g")
        assert latest_analysis(ss, "g").current is False
    again = _json(capsys, "session", "analyze", "g", *s, "--json", "--unblind")
    assert again["progress"]["pending"] == first["progress"]["pending"] + 1


def test_each_look_of_until_decided_is_stored(tmp_path: Path) -> None:
    from evalband.cli._session import _stop_rule
    from evalband.session._sequential import session_look

    db = tmp_path / "s.sqlite"
    (tmp_path / "plan.yaml").write_text("session: s\ncomparisons: [[A, B]]\n")
    assert main(["prereg", "lock", str(tmp_path / "plan.yaml"), "--store", str(db)]) == 0
    plan = plan_session(["A", "B"], scenes=12, attempts=2, seed=1, session_id="s")
    per_block = len(plan.block(1))
    with SessionStore(db) as ss:
        ss.create(plan)
        stop = _stop_rule(ss, plan, db, 0.05)
        for trial in plan.trials:
            if trial.position == 0:
                if stop(ss.records("s")) is not None:
                    break
            ss.record("s", trial.index, score=2 if trial.policy == "A" else 0)
        looks = stored_looks(ss, "s")
        records = ss.records("s")
    assert [x.look.scenes_done for x in looks] == list(range(1, len(records) // per_block + 1))
    assert looks[-1].look.decided and not any(x.look.decided for x in looks[:-1])
    assert looks[-1].options == {"alpha": 0.05, "effect": 0.1, "discordant": None,
                                 "design_source": "default", "comparisons": [["A", "B"]]}
    assert looks[-1].look == session_look(plan, records, [("A", "B")])  # the look, typed back
