"""A session's terminal rendering: pure functions of the typed results, printed by the command.

``evalband session analyze`` prints exactly what
:func:`~evalband.report._session_terminal.session_analysis_renderables` returns for the stored
analysis (rendered here with the command's console settings); the functions themselves
write nothing.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from evalband.cli import main
from evalband.report._session_terminal import (
    HIDDEN,
    drift_renderables,
    session_analysis_renderables,
    session_show_renderables,
)
from evalband.session import (
    SessionStore,
    analyze_session,
    plan_session,
    session_drift,
    simulate_session,
)
from testkit import store_session


def _session(session_id: str, seed: int):
    plan = plan_session(["A", "B", "C"], scenes=6, attempts=2, seed=seed, session_id=session_id,
                        positive_control="A")
    trials = simulate_session(plan, success_prob={"A": 0.85, "B": 0.5, "C": 0.2},
                              flip_prob=0.2, skip_prob=0.05, seed=seed + 1)
    return plan, trials


def _text(items: list) -> str:
    out = io.StringIO()
    console = Console(file=out, highlight=False, soft_wrap=True, width=200)
    for item in items:
        console.print(item)
    return out.getvalue()


def test_the_command_prints_what_the_renderer_returns(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    plan, trials = _session("term", 5)
    db = tmp_path / "s.sqlite"
    store_session(db, plan, trials)
    assert main(["session", "analyze", "term", "--store", str(db)]) == 0
    printed = capsys.readouterr().out
    with SessionStore(db) as ss:
        result = analyze_session(plan, ss.trials("term"))
    items = session_analysis_renderables(result)
    assert capsys.readouterr().out == ""  # rendering printed nothing
    text = _text(items)
    assert printed.startswith(text)  # the instrument summary (if any) comes after
    order = [text.index(h) for h in ("1. flip floor", "2. positive control",
                                     "3. per-policy success", "4. comparisons",
                                     "6. power price list")]
    assert order == sorted(order)
    for c in result.comparisons:
        assert f"{c.label}: {c.sentence}" in text


def test_drift_says_its_verdict_before_any_cross_session_comparison() -> None:
    first, t1 = _session("one", 7)
    second, t2 = _session("two", 9)
    report = session_drift(first, t1, second, t2)
    items = drift_renderables(report)
    text = _text(items)
    assert text.startswith(report.sentence[:30])
    if report.cross:
        assert text.index(report.sentence[:30]) < text.index("cross-session model comparisons")
    for anchor in report.anchors:
        assert anchor.policy in text


def test_show_of_a_blinded_session_names_no_policy_until_unblinded() -> None:
    plan = plan_session(["alpha", "beta"], scenes=3, attempts=1, seed=2, session_id="b",
                        blind=True, positive_control="alpha")
    trials = simulate_session(plan, success_prob={"alpha": 0.9, "beta": 0.2}, seed=3)
    rows = [{**r, "note": None} for r in trials.to_dict("records")]
    counts = {"scored": len(rows), "skipped": 0, "pending": 0, "total": len(rows)}
    blind = _text(session_show_renderables(
        plan, counts, None, [{k: v for k, v in r.items() if k != "policy"} for r in rows],
        None, unblind=False))
    assert "alpha" not in blind and "beta" not in blind and HIDDEN in blind
    assert all(code in blind for code in plan.codes.values())
    rates = [{"policy": p, "scored": 3, "successes": 1, "rate": 1 / 3, "skipped": 0,
              "assisted": 0} for p in plan.policies]
    named = _text(session_show_renderables(plan, counts, None, rows, rates, unblind=True))
    assert "alpha" in named and "per policy" in named and "33.3%" in named
