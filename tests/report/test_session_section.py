"""The session report section: a pure function of the typed session analysis."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.report._session import session_html
from evalband.session import (
    analyze_session,
    load_session,
    plan_session,
    simulate_session,
)
from testkit import store_session


def _session(session_id: str = "sec"):
    plan = plan_session(["A", "B", "C"], scenes=5, attempts=2, seed=3, session_id=session_id,
                        positive_control="A")
    trials = simulate_session(plan, success_prob={"A": 0.8, "B": 0.5, "C": 0.3},
                              flip_prob=0.2, skip_prob=0.05, seed=4)
    return plan, trials


def test_the_cli_writes_the_section_of_the_stored_result(tmp_path: Path, capsys) -> None:
    plan, trials = _session()
    db = tmp_path / "s.sqlite"
    store_session(db, plan, trials)
    out = tmp_path / "r.html"
    assert main(["session", "analyze", "sec", "--store", str(db), "--html", str(out)]) == 0
    capsys.readouterr()
    plan_back, trials_back = load_session(db, "sec")
    page = session_html(analyze_session(plan_back, trials_back))
    assert out.read_text(encoding="utf-8") == page  # the CLI renders nothing of its own
    assert "positive control" in page and page.count("<svg") == 2


@pytest.mark.slow
def test_rendering_imports_no_run_env_policy_or_store_code() -> None:
    code = """
import sys
from evalband.session import analyze_session, plan_session, simulate_session
plan = plan_session(["A", "B"], scenes=4, attempts=2, seed=1, session_id="g")
result = analyze_session(plan, simulate_session(plan, success_prob={"A": .6, "B": .4}, seed=2))
before = set(sys.modules)
from evalband.report._session import session_html
page = session_html(result)
new = sorted(m for m in set(sys.modules) - before if m.startswith("evalband."))
print("\\n".join(new))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    new = done.stdout.split()
    assert "evalband.report._session" in new
    assert all(m.startswith("evalband.report") for m in new), new


def test_the_template_writes_what_the_python_renderer_wrote() -> None:
    """``golden/session-sections.json`` was written by the section before its template
    (``golden/make_session_golden.py``); the template gives the same markup, numbers and
    figures (whitespace between tags aside)."""
    import importlib.util
    import json
    import re

    golden = Path(__file__).parent / "golden"
    spec = importlib.util.spec_from_file_location("make_session_golden",
                                                  golden / "make_session_golden.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    before = json.loads((golden / "session-sections.json").read_text(encoding="utf-8"))

    def norm(text: str) -> str:
        return re.sub(r"\s*(<[^>]+>)\s*", r"\1", text).strip()

    now = maker.sections()
    assert len(now) == len(before) == 3
    for new, old in zip(now, before, strict=True):
        assert norm(new) == norm(old)
