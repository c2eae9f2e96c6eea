"""Error episodes show their cause: run, show, show --json, the HTML and Markdown reports.

Reproduces the report: a policy that raises gave "64 error" and the stored exception text
was shown nowhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalband.analysis import summarize
from evalband.cli import main
from evalband.episode import EpisodeRecord

RAISER = '''
calls = [0]


def policy(obs):
    calls[0] += 1
    if calls[0] % 4 == 0:
        raise RuntimeError("camera frame dropped")
    raise ValueError("gripper offline")
'''


@pytest.fixture
def errored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[str, str]:
    (tmp_path / "raiser_policy.py").write_text(RAISER)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("raiser_policy", None)
    db = str(tmp_path / "s.sqlite")
    code = main(["run", "reach1d", "-p", "raiser_policy:policy", "--run-id", "e", "--store", db])
    out = capsys.readouterr().out
    assert code == 1  # error episodes withhold the verdict
    return db, out


def test_run_and_show_list_the_causes(errored: tuple[str, str], capsys) -> None:
    db, run_out = errored
    assert "48 x ValueError: gripper offline" in run_out
    assert "16 x RuntimeError: camera frame dropped" in run_out
    assert main(["show", "e", "--store", db]) == 0
    assert "48 x ValueError: gripper offline" in capsys.readouterr().out
    assert main(["show", "e", "--store", db, "--json"]) == 0
    causes = json.loads(capsys.readouterr().out)["summary"]["error_causes"]
    assert causes == [{"message": "ValueError: gripper offline", "count": 48},
                      {"message": "RuntimeError: camera frame dropped", "count": 16}]


def test_reports_list_the_causes(errored: tuple[str, str], tmp_path: Path) -> None:
    db, _ = errored
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", "e", "--store", db, "--html", str(html), "--md", str(md)]) == 0
    page = html.read_text()
    assert "error-causes" in page and "48 x ValueError: gripper offline" in page
    assert "16 x RuntimeError: camera frame dropped" in md.read_text()


def _record(i: int, outcome: str, error: str | None = None, time: float | None = None):
    return EpisodeRecord("r", "p", "f", "", i, 0, i, outcome, outcome == "success", False, 3,
                         time_to_success_s=time, error=error)


def test_many_causes_are_capped_and_counted() -> None:
    records = [_record(i, "error", f"E{i % 7}: x") for i in range(70)]
    causes = summarize(records).error_causes
    assert len(causes) == 5 and causes[-1] == ("(other messages)", 30)
    assert sum(k for _, k in causes) == 70


def test_time_text_says_when_successes_have_no_times() -> None:
    assert summarize([_record(0, "success")]).time_text.startswith("not recorded")
    assert summarize([_record(0, "failure")]).time_text == "No successes"
    assert summarize([_record(0, "success", time=0.5)]).time_text == "0.500000 s"
