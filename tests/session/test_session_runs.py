"""A session's policies are runs and its trials episodes: compare, report and export read them."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.session import SessionStore, plan_session
from evalband.store import RunStore, load_bundle

SCORES = {"A": (2, 2, 0, 2, 2, 1, 2, 2), "B": (0, 2, 0, 0, 1, 0, 2, 0)}  # by (scene, attempt)


def _session(db: Path) -> dict[tuple[str, int, int], int]:
    """A fully scored 4-scene x 2-attempt session of A and B; the scores by (policy, scene,
    attempt)."""
    plan = plan_session(["A", "B"], scenes=4, attempts=2, seed=9, session_id="g")
    given = {}
    with SessionStore(db) as ss:
        ss.create(plan)
        for t in plan.trials:
            score = SCORES[t.policy][2 * (t.scene - 1) + t.attempt - 1]
            given[(t.policy, t.scene, t.attempt)] = score
            ss.record("g", t.index, score=score, assisted=(t.policy == "B" and t.scene == 4
                                                            and t.attempt == 2))
    return given


def test_each_trial_is_an_episode_of_its_policy_run(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    given = _session(db)
    with RunStore(db, read_only=True) as st:
        for policy in ("A", "B"):
            manifest = st.require_run(f"g:{policy}")
            assert manifest.status == "finished" and manifest.finished_at is not None
            episodes = st.episode_records(f"g:{policy}")
            assert len(episodes) == 8
            for e in episodes:
                scene, attempt = int(e.slices["scene"]), e.repeat + 1
                assert e.cell == f"scene={scene}" and e.episode == 0
                assert e.score == given[(policy, scene, attempt)]
                assert e.success == (e.score >= 2)  # the default rubric's success_at
                assert e.assisted == (policy == "B" and (scene, attempt) == (4, 2))
    with SessionStore(db) as ss:  # undo re-opens the run
        ss.undo_last("g")
        assert {ss.runs.require_run(r).status for r in ss.run_ids("g").values()} == {
            "finished", "running"}


def test_compare_pairs_the_trials_by_scene_and_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.sqlite"
    given = _session(db)
    capsys.readouterr()
    code = main(["compare", "g:B", "g:A", "--store", str(db), "--json"])
    assert code in (0, 3, 4, 5)
    out = json.loads(capsys.readouterr().out)
    for row in out["slices"]:
        if row["kind"] != "factor":
            continue
        scene = int(row["name"].split("=")[1])
        a = [given[("A", scene, k)] >= 2 for k in (1, 2)]
        b = [given[("B", scene, k)] >= 2 for k in (1, 2)]
        want = {"both": sum(x and y for x, y in zip(b, a, strict=True)),
                "baseline_only": sum(x and not y for x, y in zip(b, a, strict=True)),
                "candidate_only": sum(y and not x for x, y in zip(b, a, strict=True)),
                "neither": sum(not x and not y for x, y in zip(b, a, strict=True)),
                "unmatched": 0}
        assert row["pairs"] == want, scene
    md = tmp_path / "r.md"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", "g:B", "g:A", "--md", str(md), "--store", str(db)]) == 0
    assert "`g:A`" in md.read_text()


def test_export_and_a_taken_run_id(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    _session(db)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["export", "g:A", "-o", str(tmp_path / "b"), "--store", str(db)]) == 0
    manifest, records = load_bundle(tmp_path / "b")
    assert manifest.source == "session" and len(records) == 8
    with SessionStore(db) as ss:  # another session whose ids would collide gets new ones
        ss.runs.create_run(ss.runs.require_run("g:A").replace(run_id="h:A", extra={}))
        ss.create(plan_session(["A"], scenes=1, attempts=1, seed=0, session_id="h"))
        assert ss.run_ids("h") == {"A": "h:A.2"}
        ss.record("h", 0, score=2)
        assert [r.score for r in ss.records("h")] == [2]
