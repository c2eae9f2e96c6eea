"""A preference session's outputs are what the code before the one engine printed, byte for byte.

The preference pairs moved from their own directional Holm call and sentence to the one
decision engine (``analysis._verdicts.decide``, issue 32) and the sentence to ``report/``.
The code of :data:`BEFORE` (the commit before preferences went through the one engine) is
taken from git into a temporary folder and run in a subprocess on the same seeded sessions
as this checkout: one pair (plain blocks, ties, scenes shared so that the scene sign-flip
test runs, tasks, a one-sided session whose strengths are penalised, another level) and
several pairs. ``evalband prefer analyze``'s ``--json`` and terminal output, and its
``--md`` and ``--html`` files, must be equal byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit import source_at

BEFORE = "8f5f089ac40040177174db1b7fc274fb2d0d5c2b"
"""The reference commit: the preference code before it called ``decide``."""

ROOT = Path(__file__).resolve().parents[2]

WORKER = r'''
import contextlib, io, json, sys
from evalband.cli import main
from evalband.session._preference import PreferenceSession, plan_preference
from evalband.session._preference_analysis import simulate_preferences
from evalband.store import RunStore


def _out(args):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(args)
    assert code == 0, (args, code)
    return buffer.getvalue()


def session_case(case, folder):
    sid = f"s{case['index']}"
    store = f"{folder}/{sid}.sqlite"
    plan = plan_preference(case["policies"], case["blocks"], case["seed"],
                           scenes=case["scenes"], tasks=case["tasks"], session_id=sid)
    with RunStore(store) as st:
        session = PreferenceSession.create(st, plan)
        for row in simulate_preferences(plan, case["strengths"], tie_prob=case["ties"],
                                        seed=case["seed"] + 7):
            session.record(row.block, row.preferred, row.progress_first, row.progress_second)
    level = ["--confidence", str(case["confidence"])]
    md, html = f"{folder}/{sid}.md", f"{folder}/{sid}.html"
    return {"json": _out(["prefer", "analyze", sid, "--store", store, "--json", *level]),
            "terminal": _out(["prefer", "analyze", sid, "--store", store, *level,
                              "--md", md, "--html", html]),
            "md": open(md).read(), "html": open(html).read()}


if __name__ == "__main__":
    cases = json.loads(open(sys.argv[1]).read())
    print(json.dumps([session_case(c, sys.argv[2]) for c in cases]))
'''


def _case(index: int, strengths: dict[str, float], blocks: int, *, scenes: int | None = None,
          tasks: tuple[str, ...] = (), ties: float = 0.0,
          confidence: float = 0.95) -> dict[str, Any]:
    return {"index": index, "policies": list(strengths), "strengths": strengths,
            "blocks": blocks, "seed": 11 + index, "scenes": scenes, "tasks": list(tasks),
            "ties": ties, "confidence": confidence}


CASES = [
    # one pair
    _case(0, {"a": 0.0, "b": 0.0}, 20, ties=0.2),
    _case(1, {"a": 1.2, "b": 0.0}, 30),
    _case(2, {"a": 0.0, "b": 2.0}, 40, scenes=8, ties=0.1),  # scene sign-flip, b first
    _case(3, {"a": 0.5, "b": 0.0}, 24, tasks=("pick", "wipe"), confidence=0.9),
    _case(4, {"a": 6.0, "b": 0.0}, 10),  # b never wins: penalised strengths
    # several pairs (the multiplicity is the ranking's directional Holm, as before)
    _case(5, {"a": 1.5, "b": 0.0, "c": -1.5}, 45, ties=0.1),
    _case(6, {"a": 0.6, "b": 0.3, "c": 0.0, "d": -0.3}, 60, scenes=10, tasks=("x", "y")),
]


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE` with the worker (skipped where git or it is missing)."""
    return source_at(tmp_path_factory.mktemp("before"), BEFORE, WORKER)


def _start(src: Path, worker: Path, folder: Path) -> subprocess.Popen[str]:
    folder.mkdir()
    data = folder / "cases.json"
    data.write_text(json.dumps(CASES))
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.Popen([sys.executable, str(worker), str(data), str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _result(process: subprocess.Popen[str]) -> list[dict[str, str]]:
    stdout, stderr = process.communicate()
    assert process.returncode == 0, stderr[-3000:]
    out: list[dict[str, str]] = json.loads(stdout)
    return out


def test_preference_outputs_are_byte_identical_to_the_code_before(
    before: Path, tmp_path: Path,
) -> None:
    # both at once (the second core), each in its own folder
    started = (_start(before / "src", before / "worker.py", tmp_path / "old"),
               _start(ROOT / "src", before / "worker.py", tmp_path / "now"))
    old, now = (_result(p) for p in started)
    assert len(old) == len(now) == len(CASES)
    for case, a, b in zip(CASES, old, now, strict=True):
        for part in ("json", "terminal", "md", "html"):
            said = b[part]
            if part == "terminal":  # the files written are now said first ("wrote FILE")
                said = "".join(line for line in said.splitlines(keepends=True)
                               if not line.startswith("wrote "))
            assert a[part] == said, (case["index"], part)
    # the cases decide something: an order established in some, none in others
    established = [json.loads(o["json"])["established"] for o in now]
    assert established[0] == 0 and established[1] == 1 and established[5] == 2
    flipped = json.loads(now[2]["json"])["pairs"][0]  # the second policy preferred, on scenes
    assert (flipped["test"], flipped["better"], flipped["established"]) == (
        "scene sign-flip", "b", True)
