"""`evalband session run` driven through a real pseudo-terminal (pexpect), like an operator.

The must-show test scores a dozen trials (one assisted, one with a note, one undone and
re-scored, one cancelled confirmation), kills the process with SIGKILL while a score waits for
its confirmation, restarts it, and checks the store: every confirmed trial kept exactly once,
nothing else, and the next trial shown is the first unscored one.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pexpect  # the dev extra; a missing pexpect fails here rather than skipping
import pytest

from evalband.session import SessionPlan, SessionStore, plan_session

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIMEOUT = 30


def _evalband() -> list[str]:
    script = Path(sys.executable).parent / "evalband"
    return [str(script)] if script.exists() else [sys.executable, "-m", "evalband.cli"]


def _create(db: Path, plan: SessionPlan) -> SessionPlan:
    with SessionStore(db) as ss:
        ss.create(plan)
    return plan


class Operator:
    """One `evalband session run` process on a pseudo-terminal."""

    def __init__(self, session_id: str, db: Path, *extra: str) -> None:
        cmd = _evalband()
        self.log = io.StringIO()
        self.child = pexpect.spawn(
            cmd[0], [*cmd[1:], "session", "run", session_id, "--store", str(db), *extra],
            encoding="utf-8", codec_errors="replace", timeout=TIMEOUT, dimensions=(50, 250),
            cwd=str(db.parent),
        )
        self.child.logfile_read = self.log

    def expect(self, pattern: str) -> re.Match[str]:
        self.child.expect(pattern)
        return self.child.match

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def header(self, n: int, total: int) -> tuple[int, int, str]:
        """Wait for trial n's header; its scene, attempt and the policy label shown."""
        m = self.expect(rf"── trial {n} of {total} · scene (\d+) of \d+ · attempt (\d+) of \d+ ──")
        scene, attempt = int(m.group(1)), int(m.group(2))
        label = self.expect(r"policy: ([^\x1b\r\n]+)").group(1).strip()
        self.expect("press a digit")
        return scene, attempt, label

    def score(self, n: int, digit: int, confirm: str = "y") -> None:
        self.send(str(digit))
        self.expect(rf"for trial {n}\? y/Enter confirm")
        self.send(confirm)
        self.expect(rf"saved trial {n} ")

    def screen(self) -> str:
        return ANSI.sub("", self.log.getvalue())

    def finish(self) -> int:
        self.child.expect(pexpect.EOF)
        self.child.close()
        return int(self.child.exitstatus)


def _rows(db: Path, session_id: str) -> list[tuple[int, int]]:
    """(trial index, episodes) of the session's trials, read with sqlite3 itself."""
    with sqlite3.connect(db) as con:
        return [
            (int(i), int(n))
            for i, n in con.execute(
                "SELECT json_extract(extra, '$.session.trial_index') AS t, COUNT(*) "
                "FROM episodes WHERE json_extract(extra, '$.session.session_id') = ? "
                "GROUP BY t ORDER BY t", (session_id,))
        ]


def _check_shown(shown: tuple[int, int, str], plan: SessionPlan, index: int) -> None:
    trial = plan.trials[index]
    assert shown == (trial.scene, trial.attempt, plan.label(trial.policy))


@pytest.mark.slow
def test_kill_mid_session_then_resume_keeps_every_confirmed_trial_once(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    plan = _create(db, plan_session(["alpha", "beta", "gamma"], scenes=3, attempts=2, seed=11,
                                    session_id="pty"))
    total = plan.n_trials  # 18
    scores = {1: 2, 2: 0, 3: 1, 4: 2, 5: 2, 6: 0, 7: 1, 8: 2, 9: 2, 10: 1, 11: 0, 12: 2}
    op = Operator("pty", db)
    for n in range(1, 13):
        _check_shown(op.header(n, total), plan, n - 1)
        if n == 4:
            op.send("a")
            op.expect("assisted: yes")
        if n == 6:
            op.send("n")
            op.expect(r"note \(Enter to keep it\): ")
            op.child.sendline("slipped at lift")
            op.expect("note set: slipped at lift")
        if n == 9:  # undo trial 8 (scored 2): it is shown again and re-scored 1
            op.send("u")
            op.expect("undone: trial 8 ")
            _check_shown(op.header(8, total), plan, 7)
            op.score(8, 1)
            scores[8] = 1
            _check_shown(op.header(9, total), plan, 8)
        if n == 10:  # a cancelled confirmation stores nothing
            op.send("2")
            op.expect(r"for trial 10\?")
            op.send("n")
            op.expect("not saved")
        if n == 11:
            op.send("7")
            op.expect("7 is not a level of this rubric")
        op.score(n, scores[n], confirm="\r" if n % 3 == 0 else "y")
    op.header(13, total)
    op.send("2")  # scored but not confirmed when the process dies
    op.expect(r"for trial 13\?")
    os.kill(op.child.pid, signal.SIGKILL)
    op.child.expect(pexpect.EOF)
    op.child.close()
    assert op.child.signalstatus == signal.SIGKILL

    assert _rows(db, "pty") == [(i, 1) for i in range(12)]
    with SessionStore(db) as ss:
        recs = {r.trial_index: r for r in ss.records("pty")}
    assert {i + 1: r.score for i, r in recs.items()} == scores
    assert [i for i, r in recs.items() if r.assisted] == [3]
    assert {i: r.note for i, r in recs.items() if r.note} == {5: "slipped at lift"}
    assert all(r.success == (r.score == 2) for r in recs.values())

    op = Operator("pty", db)
    op.expect("resuming: 12 of 18 trials already recorded")
    _check_shown(op.header(13, total), plan, 12)  # the first unscored trial
    op.send("u")  # undo reaches the last trial confirmed before the kill
    op.expect("undone: trial 12 ")
    _check_shown(op.header(12, total), plan, 11)
    op.score(12, 0)
    _check_shown(op.header(13, total), plan, 12)
    op.score(13, 1)
    op.header(14, total)
    op.send("q")
    op.expect("stopped: 13 of 18 trials recorded")
    op.expect("resume: evalband session run pty")
    assert op.finish() == 0
    assert _rows(db, "pty") == [(i, 1) for i in range(13)]
    with SessionStore(db) as ss:
        recs = {r.trial_index: r for r in ss.records("pty")}
        assert ss.next_pending("pty") == 13
    assert recs[11].score == 0 and recs[12].score == 1 and recs[7].score == 1


def test_trial_command_exit_code_duration_and_output_tail(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    plan = _create(db, plan_session(["alpha", "beta"], scenes=1, attempts=1, seed=2,
                                    session_id="cmd"))
    script = "import sys; [print('line', i, *sys.argv[1:]) for i in range(30)]; sys.exit(3)"
    trial_cmd = f'{sys.executable} -c "{script}" {{policy}} {{scene}} {{attempt}}'
    op = Operator("cmd", db, "--trial-cmd", trial_cmd)
    op.header(1, 2)
    op.send("\r")
    op.expect("trial command: exit 3 in")
    op.expect("press a digit")
    op.score(1, 1)
    op.header(2, 2)
    op.send(" ")
    op.expect("trial command: exit 3 in")
    op.expect("press a digit")
    op.send("\r")  # already ran: Enter does not run it twice
    op.expect("already ran")
    op.send("r")  # r runs it again on purpose
    op.expect("trial command: exit 3 in")
    op.expect("press a digit")
    op.send("s")
    op.expect(r"skip trial 2\?")
    op.send("y")
    op.expect("saved trial 2 ")
    op.expect("session cmd complete: 2 of 2 trials recorded")
    op.expect("next: evalband session analyze cmd")
    assert op.finish() == 0
    screen = op.screen()
    first = plan.trials[0].policy
    assert f"│ line 29 {first} 1 1" in screen  # output streamed live when not blinded
    assert screen.count("line 29") == 3  # trial 1 once, trial 2 twice
    with SessionStore(db) as ss:
        recs = ss.records("cmd")
    for rec in recs:
        trial = plan.trials[rec.trial_index]
        expected = "\n".join(f"line {i} {trial.policy} 1 1" for i in range(10, 30))
        assert rec.exit_code == 3 and rec.output_tail == expected
        assert rec.duration_s is not None and 0 < rec.duration_s < TIMEOUT
    assert [r.status for r in recs] == ["scored", "skipped"]


def test_blinded_screen_never_shows_policy_names(tmp_path: Path) -> None:
    names = ["GN_s1000", "PT_fullLR", "BN_scratch"]
    db = tmp_path / "store.sqlite"
    plan = _create(db, plan_session(names, scenes=2, attempts=1, seed=5, blind=True,
                                    positive_control="GN_s1000", session_id="blind"))
    got = tmp_path / "names.txt"
    trial_cmd = (f"echo {{policy}} >> {got}; "
                 "echo loading checkpoint {policy} for scene {scene}; echo done")
    op = Operator("blind", db, "--trial-cmd", trial_cmd)
    for n in range(1, 7):
        _check_shown(op.header(n, 6), plan, n - 1)
        op.send("\r")
        op.expect("trial command: exit 0 in")
        op.expect("press a digit")
        if n == 2:
            op.send("a")
            op.expect("assisted: yes")
        op.score(n, n % 3)
        if n == 3:  # undo and re-score: the undo line shows the code too
            op.header(4, 6)
            op.send("u")
            op.expect("undone: trial 3 ")
            op.header(3, 6)
            op.expect("kept from before: trial command ran: exit 0")
            op.score(3, 2)
    op.expect("session blind complete")
    assert op.finish() == 0
    screen = op.screen()
    for name in names:
        assert name not in screen
    assert all(code in screen for code in plan.codes.values())
    assert "success so far" not in screen and "hidden while blinded" in screen
    with SessionStore(db) as ss:
        recs = ss.records("blind")
    assert len(recs) == 6
    # the command itself got the real policy name (once per trial); its output is stored
    # with the name replaced by the code (the session's runs never name a blinded policy)
    assert got.read_text().split() == [t.policy for t in plan.trials]
    for rec in recs:
        trial = plan.trials[rec.trial_index]
        assert rec.output_tail == f"loading checkpoint {trial.code} for scene {trial.scene}\ndone"


def test_stdin_not_a_tty_falls_back_to_line_input(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    plan = _create(db, plan_session(["alpha", "beta"], scenes=2, attempts=1, seed=1,
                                    session_id="lines"))
    keys = "2\ny\na\n1\n\nn\nslow approach\n0\nn\n0\ny\nq\n"
    done = subprocess.run(
        [*_evalband(), "session", "run", "lines", "--store", str(db)],
        input=keys, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout  # plain text when not a terminal
    assert "stopped: 3 of 4 trials recorded" in done.stdout
    with SessionStore(db) as ss:
        recs = ss.records("lines")
    got = [(r.trial_index, r.score, r.assisted, r.note) for r in recs]
    assert got == [(0, 2, False, None), (1, 1, True, None), (2, 0, False, "slow approach")]
    assert plan.n_trials == 4


# -- the same loop in-process, with scripted keys (fast) ------------------------------------


def _run_keys(ss: SessionStore, sid: str, keys: str, out: io.TextIOBase | None = None,
              **kwargs: str) -> tuple[str, object]:
    from evalband.session import run_session
    from evalband.session._tui import LineKeys

    out = out if out is not None else io.StringIO()
    outcome = run_session(ss, sid, keys=LineKeys(io.StringIO(keys)), out=out, **kwargs)
    return (out.getvalue() if isinstance(out, io.StringIO) else ""), outcome


def test_complete_session_says_so_and_points_to_analyze(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(plan_session(["a"], scenes=1, attempts=2, seed=0, session_id="done"))
        text, outcome = _run_keys(ss, "done", "2\ny\n0\ny\n")
        assert outcome.finished and outcome.confirmed == 2
        text, outcome = _run_keys(ss, "done", "")  # nothing left: no trial shown
        assert "── trial" not in text and outcome.confirmed == 0
    assert "session done complete: 2 of 2 trials recorded (2 scored, 0 skipped; 1 successes" \
        in text
    assert f"next: evalband session analyze done --store {tmp_path / 's.sqlite'}" in text


def test_unblinded_screen_shows_rates_so_far(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.sqlite") as ss:
        plan = _create(ss.path, plan_session(["a", "b"], scenes=2, attempts=1, seed=3,
                                            session_id="r"))
        text, _ = _run_keys(ss, "r", "2\ny\n0\ny\nq\n")
    wins = {"a": 0, "b": 0}
    scored = {"a": 0, "b": 0}
    for trial, score in zip(plan.trials[:2], (2, 0), strict=True):
        scored[trial.policy] += 1
        wins[trial.policy] += score == 2
    assert f"success so far: a {wins['a']}/{scored['a']} · b {wins['b']}/{scored['b']}" in text
    assert "stopped: 2 of 4 trials recorded" in text


def test_non_utf8_terminal_gets_ascii(tmp_path: Path) -> None:
    out = io.TextIOWrapper(io.BytesIO(), encoding="latin-1", write_through=True)
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(plan_session(["a"], scenes=1, attempts=1, seed=0, session_id="x"))
        _run_keys(ss, "x", "1\ny\n", out=out)
    text = out.buffer.getvalue().decode("latin-1")  # type: ignore[attr-defined]
    assert "-- trial 1 of 1 | scene 1 of 1 | attempt 1 of 1 --" in text


def test_empty_trial_command_is_refused(tmp_path: Path) -> None:
    from evalband.errors import InvalidInputError

    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(plan_session(["a"], scenes=1, attempts=1, seed=0, session_id="x"))
        with pytest.raises(InvalidInputError, match="`trial_cmd` is empty"):
            _run_keys(ss, "x", "", trial_cmd="  ")


@pytest.mark.slow
def test_until_decided_stops_scheduling_blocks_once_the_planned_comparison_is_decided(
        tmp_path: Path) -> None:
    """A always succeeds, B never: the pre-registered A vs B comparison is decided after a few
    blocks; the session stops at a block boundary (complete blocks only), says so, and a rerun
    schedules nothing more."""
    from evalband.session._prereg import lock_prereg

    db = tmp_path / "store.sqlite"
    plan = _create(db, plan_session(["A", "B"], scenes=10, attempts=2, seed=4,
                                    session_id="seq"))
    prereg = tmp_path / "plan.yaml"
    prereg.write_text("session: seq\ncomparisons: [[A, B]]\n")
    lock_prereg(prereg, store=db)
    op = Operator("seq", db, "--until-decided")
    n = 1
    while True:
        m = op.expect(r"── trial (\d+) of 40 · scene \d+ of \d+ · attempt \d+ of \d+ ──|"
                      r"decided after (\d+) of 10 scenes: ([^;\r\n]+)")
        if m.group(2) is not None:
            scenes, text = int(m.group(2)), m.group(3)
            break
        assert int(m.group(1)) == n
        label = op.expect(r"policy: ([^\x1b\r\n]+)").group(1).strip()
        op.expect("press a digit")
        op.score(n, 2 if label == "A" else 0)
        n += 1
    assert "A better than B" in text
    assert 1 < scenes < 10
    op.expect("no more blocks scheduled")
    assert op.finish() == 0
    recorded = [i for i, _ in _rows(db, "seq")]
    assert recorded == list(range(4 * scenes))  # whole blocks, nothing of the next one
    assert all(plan.trials[i].scene <= scenes for i in recorded)
    again = Operator("seq", db, "--until-decided")  # resume: decided, nothing scheduled
    again.expect(rf"decided after {scenes} of 10 scenes")
    assert again.finish() == 0
    assert len(_rows(db, "seq")) == 4 * scenes
    assert "── trial" not in again.screen()


def test_until_decided_needs_a_preregistration(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    _create(db, plan_session(["A", "B"], scenes=2, attempts=1, seed=4, session_id="np"))
    done = subprocess.run([*_evalband(), "session", "run", "np", "--store", str(db),
                           "--until-decided"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "prereg lock" in done.stderr and "Traceback" not in done.stderr
