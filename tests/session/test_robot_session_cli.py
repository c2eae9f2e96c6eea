"""The robot session from the command line: the issue's must-show session on sim-arm.

A blinded session of 3 policies x 4 scenes x 2 attempts (the grasp, weak and never controls)
with capture, re-placement, the settle trigger, the stress and suggestions, run unattended by
``evalband session run ID --robot sim-arm --operator suggested`` (on a virtual clock: the same
physics, faster than real time). The process is killed with SIGKILL in the middle of a trial
and run again: the session completes with 24 trials, none lost or duplicated, each with its
clip and step data; ``session analyze`` ranks the controls and reports the instrument.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from robotkit import clip_frames, media, steps

from evalband.cli import main
from evalband.session import SessionStore
from evalband.session._attempts import AttemptLog
from evalband.session._png import png_array
from evalband.store._media import media_file

pytestmark = pytest.mark.slow

SID = "grasp-rehearsal"


def evalband(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "evalband"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "evalband.cli"]
    return [*base, *args]


def env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def peek(store: Path) -> tuple[int, int]:
    """(confirmed trials, plays running) read with sqlite3 itself, read-only."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    try:
        (done,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
        (running,) = conn.execute(
            "SELECT COUNT(*) FROM session_attempts WHERE status = 'running'").fetchone()
        return int(done), int(running)
    except sqlite3.OperationalError:
        return 0, 0
    finally:
        conn.close()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("robot-cli") / "grasp.sqlite"
    subprocess.run(evalband(
        "session", "plan", "--policies", "sim-arm:grasp,sim-arm:weak,sim-arm:never",
        "--scenes", "4", "--attempts", "2", "--seed", "7", "--blind", "--positive-control",
        "sim-arm:grasp", "--instrument", "sim-arm", "--session-id", SID, "--store",
        str(store), "--json"), check=True, env=env(), capture_output=True)
    run = evalband("session", "run", SID, "--robot", "sim-arm", "--operator", "suggested",
                   "--clock", "virtual", "--store", str(store))
    first = subprocess.Popen(run, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    killed_at = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and first.poll() is None:
        done, running = peek(store)
        if done >= 9 and running == 1:  # a play in the middle of its trial
            os.kill(first.pid, signal.SIGKILL)
            killed_at = done
            break
        time.sleep(0.02)
    first.wait(timeout=60)
    assert killed_at is not None, "the first run ended before it could be killed mid-trial"
    second = subprocess.run(run, env=env(), capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    return {"store": store, "killed_at": killed_at, "out": second.stdout}


def test_the_killed_session_completes_with_every_trial_once(session: dict[str, Any]) -> None:
    store = session["store"]
    assert "resuming: " in session["out"] and "complete: 24 of 24" in session["out"]
    with SessionStore(store, read_only=True) as ss:
        records = ss.records(SID)
        attempts = AttemptLog(ss).attempts(SID)
        conn = ss.runs.conn
        (episodes,) = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()
    assert episodes == 24 and sorted(r.trial_index for r in records) == list(range(24))
    statuses = [a.status for a in attempts]
    assert statuses.count("interrupted") == 1 and statuses.count("played") == 24
    (killed,) = [a for a in attempts if a.status == "interrupted"]
    replays = [a for a in attempts if a.trial_index == killed.trial_index]
    assert [a.n for a in replays] == [1, 2]  # the killed trial was played again, once
    confirmed = {r.play["attempt_id"] for r in records}
    assert killed.attempt_id not in confirmed and len(confirmed) == 24
    for r in records:  # each with its clip and step data in the media area
        kinds = {m["kind"] for m in r.play["media"]}
        assert kinds == {"video", "steps"}
        assert all(media_file(store, m) is not None for m in r.play["media"])
        assert r.play["operator"] == "suggested" and r.score == r.play["suggestion"]


def test_every_play_is_stored_with_its_suggestion_and_truth(session: dict[str, Any]) -> None:
    with SessionStore(session["store"], read_only=True) as ss:
        plan = ss.plan(SID)
        records = ss.records(SID)
    for r in records:
        play = r.play
        assert play["warning"] is None  # the scripted policies keep 30 Hz easily
        assert play["truth"] is not None and play["robot"] == "sim-arm"
        if plan.trials[r.trial_index].policy == "sim-arm:never":
            assert (play["end"], r.score, play["at_trigger"]) == ("time limit", 0, None)
        else:
            assert play["end"] == "trigger" and play["at_trigger"] > 30
        assert play["timing"]["steps"] > 30 and play["timing"]["rate_hz"] == 30.0


def test_each_scene_is_captured_by_its_seeding_rollout_and_later_trials_re_placed(
        session: dict[str, Any]) -> None:
    store = session["store"]
    with SessionStore(store, read_only=True) as ss:
        plan = ss.plan(SID)
        records = {r.play["attempt_id"]: r for r in ss.records(SID)}
        log = AttemptLog(ss)
        attempts = log.attempts(SID)
        captures = {scene: log.capture(SID, scene) for scene in range(1, 5)}
    for scene, capture in captures.items():
        assert capture is not None and capture["how"] == "rule"
        assert len(capture["states"]) == 2 and len(capture["frames"]) == 2  # last two obs
        assert capture["sim_state"]["block"] and capture["pose"]["gripper.pos"] > 80
        (taker,) = [a for a in attempts if a.attempt_id == capture["attempt_id"]]
        assert plan.trials[taker.trial_index].scene == scene
        assert taker.result["start"] == "seeding" and taker.result["captured"]["how"] == "rule"
        reference = png_array(media(store, [capture["frames"][-1]["wrist"]], "reference"))
        assert reference.shape == (96, 128, 3)
        later = [r for r in records.values() if plan.trials[r.trial_index].scene == scene
                 and r.play["start"] == "replaced"]
        played = [a for a in attempts if plan.trials[a.trial_index].scene == scene
                  and a.status == "played"]
        assert all(a.started_at > taker.started_at for a in played
                   if records.get(a.attempt_id) in later)
        assert len(later) >= 6 - 3  # at most the never control seeds before a capture


def test_each_trial_has_a_clip_whose_frames_are_its_filmed_steps(
        session: dict[str, Any]) -> None:
    store = session["store"]
    with SessionStore(store, read_only=True) as ss:
        records = ss.records(SID)
    for r in records:
        refs = r.play["media"]
        table = steps(media(store, refs, "steps"))
        frames = clip_frames(media(store, refs, "video"))
        filmed = table["frame"] >= 0
        assert len(frames) == int(filmed.sum()) > 0 and frames[0].shape == (96, 128, 3)
        assert list(table["frame"][filmed]) == list(range(len(frames)))
        assert set(table["phase"][filmed]) <= {"policy", "stress"} and "home" in table["phase"]
        assert int((table["phase"] == "policy").sum()) == r.play["timing"]["steps"]
        assert {"obs.gripper.pos", "action.gripper.pos", "policy_ms", "late_ms",
                "missed"} <= set(table)


def test_analyze_ranks_the_controls_and_reports_the_instrument(
        session: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["session", "analyze", SID, "--store", str(session["store"]), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    rates = {p["policy"]: p["rate"]["estimate"] if isinstance(p["rate"], dict) else p["rate"]
             for p in data["policies"]}
    assert rates["sim-arm:grasp"] > rates["sim-arm:weak"] > rates["sim-arm:never"] == 0.0
    inst = data["instrument"]
    assert inst["played"] == inst["rehearsal"] == 24 and inst["human"] == 0
    assert inst["agreement"] is None  # no person scored: said, not computed
    truth = inst["truth"]
    assert truth["n"] == 24 and truth["estimate"] is not None and truth["low"] <= truth["high"]
    assert any("rehearsal" in note for note in data["notes"])
    code = main(["session", "analyze", SID, "--store", str(session["store"])])
    text = capsys.readouterr().out
    assert "suggestion vs the simulator's truth" in text and "rehearsal" in text


def test_robot_command_line_errors_are_one_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s.sqlite")
    assert main(["session", "plan", "--policies", "A,B", "--scenes", "1", "--seed", "1",
                 "--session-id", "plain", "--store", store]) == 0
    capsys.readouterr()
    cases = {
        ("--robot", "lerobot:so101_follower"): "lerobot",
        ("--robot", "nope"): "--robot must be one of",
        ("--robot", "sim-arm", "--operator", "suggested"): "suggest",
        ("--robot", "sim-arm", "--clock", "warp"): "--clock",
        ("--operator", "suggested"): "drive a robot",
    }
    for args, expected in cases.items():
        code = main(["session", "run", "plain", *args, "--store", store])
        err = capsys.readouterr().err
        assert code == 2, args
        assert expected in err and len(err.strip().splitlines()) == 1, (args, err)
    assert main(["session", "plan", "--policies", "A", "--scenes", "1", "--seed", "1",
                 "--instrument", str(tmp_path / "missing.yaml"), "--store", store]) == 2
    assert "cannot read the instrument file" in capsys.readouterr().err


def test_agreement_holds_the_suggestion_against_the_operator_and_the_truth(
        session: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """The session's scorers (issue 29): the operator's score, the suggestion, the truth."""
    conn = sqlite3.connect(f"file:{session['store']}?mode=ro", uri=True)
    try:
        (run_ids,) = conn.execute("SELECT run_ids FROM sessions WHERE session_id = ?",
                                  (SID,)).fetchone()
    finally:
        conn.close()
    run_id = sorted(json.loads(run_ids).values())[0]
    store = str(session["store"])
    assert main(["agreement", run_id, "--store", store, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["scorers"]
    assert {"score", "suggestion", "truth", "success"} <= set(found)
    assert found["suggestion"]["source"] == "machine" and found["truth"]["source"] == "simulator"
    assert main(["agreement", run_id, "--scorers", "truth,suggestion", "--store", store,
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n"] == 8 and sum(map(sum, doc["table"])) == 8  # 4 scenes x 2 attempts
    # a rehearsal accepted every suggestion: the operator's score is the suggestion
    assert main(["agreement", run_id, "--scorers", "score,suggestion", "--store", store,
                 "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["accuracy"]["estimate"] == 1.0
