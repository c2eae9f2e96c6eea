"""A session's policies are runs and its trials episodes: compare, report and export read them."""

from __future__ import annotations

import contextlib
import io
import json
import urllib.request
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.session import SessionStore, plan_session
from evalband.store import RunStore
from evalband.store._bundle import load_bundle

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


NAMES = ("GN_s1000", "PT_fullLR")


def _blinded_in_progress(db: Path) -> tuple[dict[str, str], str]:
    """A blinded 4-scene x 2-attempt session of NAMES, one trial pending: policy -> code, and
    the pending trial's policy.

    Each trial command's output tail names its policy (the command gets the real name).
    """
    plan = plan_session(list(NAMES), scenes=4, attempts=2, seed=5, blind=True, session_id="g",
                        positive_control="GN_s1000")
    with SessionStore(db) as ss:
        ss.create(plan)
        for t in plan.trials[:-1]:
            ss.record("g", t.index, score=(t.index * 5) % 3, exit_code=0, duration_s=2.0,
                      output_tail=f"loading checkpoint {t.policy}.pt\nok")
    return dict(plan.codes), plan.trials[-1].policy


def test_a_blinded_session_in_progress_names_no_policy_outside_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalband.view import serve_in_background

    db = tmp_path / "s.sqlite"
    codes, pending = _blinded_in_progress(db)
    a, b = (f"g:{codes[n]}" for n in NAMES)
    s = str(db)
    shown: dict[str, bytes] = {}
    capsys.readouterr()
    for args in (["runs", "--json"], ["runs"], ["show", a, "--json"], ["show", b]):
        assert main([*args, "--store", s]) == 0, args
        shown[" ".join(args)] = capsys.readouterr().out.encode()
    assert {r["run_id"]: r["policy"] for r in json.loads(shown["runs --json"])} == {
        a: codes[NAMES[0]], b: codes[NAMES[1]]}
    code = main(["compare", a, b, "--store", s, "--json"])  # the coded runs still compare
    out = capsys.readouterr().out
    assert code in (0, 3, 4, 5) and json.loads(out)["baseline"] == a
    shown["compare"] = out.encode()
    pairs = sum(sum(row["pairs"].values()) for row in json.loads(out)["slices"]
                if row["kind"] == "factor")
    assert pairs == 8  # every (scene, attempt) of the two runs, the pending one unmatched
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", a, b, "--md", str(tmp_path / "r.md"), "--store", s]) == 0
        assert main(["export", b, "-o", str(tmp_path / "bundle"), "--store", s]) == 0
    shown["report.md"] = (tmp_path / "r.md").read_bytes()
    shown["manifest.json"] = (tmp_path / "bundle" / "manifest.json").read_bytes()
    manifest, records = load_bundle(tmp_path / "bundle")
    assert manifest.policy == codes[NAMES[1]] and len(records) == 8 - (pending == NAMES[1])
    shown["bundle records"] = repr(records).encode()
    with serve_in_background(db) as server:
        for page in ("", "api/runs", f"run/g%3A{codes[NAMES[0]]}/episodes"):
            with urllib.request.urlopen(server.url + page, timeout=120) as response:
                shown[f"view /{page}"] = response.read()
    assert a.encode() in shown["view /"]  # the index lists the coded runs
    for what, data in shown.items():
        for name in NAMES:
            assert name.encode() not in data, (what, name)
    with SessionStore(db, read_only=True) as ss:  # the session layer keeps the mapping
        assert ss.run_ids("g") == {n: f"g:{codes[n]}" for n in NAMES}
        assert {r.output_tail for r in ss.records("g")} == {
            f"loading checkpoint {c}.pt\nok" for c in codes.values()}
    assert main(["session", "show", "g", "--unblind", "--store", s, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["codes"] == codes
