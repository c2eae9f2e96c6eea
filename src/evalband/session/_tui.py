"""The operator's terminal: show each trial, run its command, take the score by keypress.

Line-oriented, so it works over SSH in any plain terminal: on a TTY single keypresses are read
in cbreak mode (``termios``; Ctrl-C still interrupts), otherwise one command per input line.
Every confirmed trial is committed to the store before the next one is shown, so a session
killed at any moment resumes (``evalband session run`` again) at the first unscored trial.
While a session is blinded the screen shows blind codes and progress, never policy names or
per-policy rates, and the trial command's output is kept but not shown (it may name the policy).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from evalband.errors import InvalidInputError, StoreError
from evalband.session._plan import SessionPlan, Trial

if TYPE_CHECKING:
    from rich.console import Console

    from evalband.session._store import SessionStore, TrialRecord

__all__ = [
    "CommandResult",
    "SessionRunOutcome",
    "KeySource",
    "TerminalKeys",
    "LineKeys",
    "run_session",
    "run_trial_command",
    "substitute_command",
    "PLACEHOLDERS",
    "TAIL_LINES",
]

TAIL_LINES = 20
"""How many of the trial command's last output lines are kept."""

PLACEHOLDERS = ("policy", "scene", "attempt", "trial", "session", "code")
"""``{name}`` fields a trial command may use (other braces are left alone)."""

_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_MAX_LINE = 1000  # characters kept per output line
_ENTER = "\n"
_QUIT_KEYS = ("q", "Q", "\x04", "")  # q, Ctrl-D, end of input
_ASCII = str.maketrans({"─": "-", "│": "|", "·": "|", "…": "...", "—": "-"})


@dataclass(frozen=True)
class CommandResult:
    """What a trial command left: exit status, wall time and the last lines of its output.

    >>> CommandResult(exit_code=0, duration_s=1.25, output_tail="done").describe()
    'exit 0 in 1.2 s'
    """

    exit_code: int
    duration_s: float
    output_tail: str

    def describe(self) -> str:
        """``exit N in T s``."""
        return f"exit {self.exit_code} in {self.duration_s:.1f} s"


@dataclass
class SessionRunOutcome:
    """How one ``session run`` ended.

    Attributes:
        session_id: the session.
        confirmed: trials confirmed (scored or skipped) during this run.
        undone: trials undone during this run.
        finished: every planned trial is recorded.
        counts: trials per status at the end (``pending``, ``scored``, ``skipped``, ``total``).
        decided: with a stop rule, the sentence of the decision that stopped the session.

    >>> SessionRunOutcome("s", 3, 0, False, {"pending": 1}).finished
    False
    """

    session_id: str
    confirmed: int
    undone: int
    finished: bool
    counts: dict[str, int] = field(default_factory=dict)
    decided: str | None = None


# -- keys --------------------------------------------------------------------------------


class KeySource(Protocol):
    """Where keys come from: one key at a time, and a line of text for notes."""

    def key(self) -> str:
        r"""The next key (``"\n"`` for Enter, ``""`` at end of input)."""

    def line(self, prompt: str) -> str | None:
        """A line of text typed after ``prompt`` (``None`` at end of input)."""

    def flush(self) -> None:
        """Discard keys typed ahead (after a trial command ran)."""


class LineKeys:
    r"""Keys from a text stream that is not a terminal: one command per line.

    The first non-blank character of a line is the key; an empty line is Enter. A note is
    the next whole line.

    >>> import io
    >>> keys = LineKeys(io.StringIO("2\n\nn\nslipped at lift\n"))
    >>> keys.key(), keys.key(), keys.key(), keys.line("note: ")
    ('2', '\n', 'n', 'slipped at lift')
    >>> keys.key()
    ''
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def key(self) -> str:
        """The first character of the next line; Enter for an empty line, ``""`` at EOF."""
        text = self.stream.readline()
        if not text:
            return ""
        text = text.strip()
        return text[0] if text else _ENTER

    def line(self, prompt: str) -> str | None:
        """The next line, without its newline (``None`` at end of input)."""
        text = self.stream.readline()
        return None if not text else text.rstrip("\r\n")

    def flush(self) -> None:
        """Nothing to discard: scripted input is meant to be read in order."""


class TerminalKeys:
    """Single keypresses from a terminal in cbreak mode (no echo, no Enter needed).

    Use as a context manager: the terminal's settings are restored on exit. Signals stay
    enabled (Ctrl-C raises ``KeyboardInterrupt``). Escape sequences (arrow keys) are ignored.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None
        self._pending = ""
        self._old_term: Any = None

    def __enter__(self) -> TerminalKeys:
        import signal
        import termios
        import tty

        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        # SIGTERM ends the session like Ctrl-C: the terminal's settings are restored.
        self._old_term = signal.signal(signal.SIGTERM, _interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        self._restore()
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)

    def _restore(self) -> None:
        import termios

        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def _fill(self) -> bool:
        data = os.read(self.fd, 64)
        if not data:
            return False
        self._pending += data.decode("utf-8", errors="replace")
        return True

    def key(self) -> str:
        r"""The next key (Enter as ``"\n"``, ``""`` at end of input)."""
        while True:
            if not self._pending and not self._fill():
                return ""
            ch, self._pending = self._pending[0], self._pending[1:]
            if ch == "\x1b":  # ESC [ ... letter/~ : a cursor or function key
                match = re.match(r"[\[O][0-9;]*[A-Za-z~]?", self._pending)
                if match:
                    self._pending = self._pending[match.end():]
                continue
            return _ENTER if ch in ("\r", "\n") else ch

    def line(self, prompt: str) -> str | None:
        """A line read with the terminal's normal editing and echo."""
        import termios
        import tty

        typed, self._pending = self._pending, ""
        self._restore()
        sys.stdout.write(prompt + typed)
        sys.stdout.flush()
        try:
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = os.read(self.fd, 1024)
                if not chunk:
                    if not buf and not typed:
                        return None
                    break
                buf += chunk
        finally:
            if self._saved is not None:
                tty.setcbreak(self.fd, termios.TCSADRAIN)
        return (typed + buf.decode("utf-8", errors="replace")).rstrip("\r\n")

    def flush(self) -> None:
        """Discard keys typed while a trial command ran."""
        import termios

        self._pending = ""
        termios.tcflush(self.fd, termios.TCIFLUSH)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def _default_keys() -> Iterator[KeySource]:
    if sys.stdin.isatty():
        with TerminalKeys(sys.stdin.fileno()) as keys:
            yield keys
    else:
        yield LineKeys(sys.stdin)


# -- the trial command -------------------------------------------------------------------


def substitute_command(template: str, trial: Trial, plan: SessionPlan) -> str:
    """The trial command with ``{policy}``, ``{scene}``, ``{attempt}``, ... filled in.

    Values are shell-quoted; the command gets the REAL policy name even when the session is
    blinded (``{code}`` is the blind code). Braces that are not one of :data:`PLACEHOLDERS`
    are left as they are.

    >>> from evalband.session._plan import plan_session
    >>> plan = plan_session(["my policy"], scenes=1, attempts=1, seed=0, session_id="s")
    >>> substitute_command("run {policy} --scene {scene} -a {attempt} {x}", plan.trials[0], plan)
    "run 'my policy' --scene 1 -a 1 {x}"
    """
    import shlex

    values = {
        "policy": trial.policy,
        "scene": str(trial.scene),
        "attempt": str(trial.attempt),
        "trial": str(trial.index + 1),
        "session": plan.session_id,
        "code": trial.code,
    }
    return _PLACEHOLDER.sub(lambda m: shlex.quote(values[m.group(1)]), template)


def run_trial_command(
    command: str,
    *,
    on_line: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
    tail_lines: int = TAIL_LINES,
) -> CommandResult:
    r"""Run a shell command, stdout and stderr merged; keep its exit status and last lines.

    The command's stdin is ``/dev/null`` (the operator's keys stay with the session). On
    ``KeyboardInterrupt`` the command is terminated and the interrupt re-raised.

    Args:
        command: a shell command line.
        on_line: called with each output line as it comes (for showing it live).
        env: extra environment variables.
        tail_lines: how many last lines to keep.

    >>> r = run_trial_command("echo one; echo two; exit 3")
    >>> r.exit_code, r.output_tail
    (3, 'one\ntwo')
    """
    tail: deque[str] = deque(maxlen=tail_lines)
    start = time.monotonic()
    # The command runs in a process group of its own under a small keeper (_KEEPER) that
    # holds a pipe from this process: when the session ends in any way (kill -9 included)
    # the pipe closes and the keeper ends the whole group: no trial command outlives it.
    proc = subprocess.Popen(
        [sys.executable, "-c", _KEEPER, command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            text = raw.rstrip("\r\n")[:_MAX_LINE]
            tail.append(text)
            if on_line is not None:
                on_line(text)
        code = proc.wait()
    except BaseException:
        _end_group(proc)
        raise
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
    return CommandResult(
        exit_code=int(code), duration_s=time.monotonic() - start, output_tail="\n".join(tail)
    )


_KEEPER = """
import os, signal, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1], shell=True, stdin=subprocess.DEVNULL)
def watch():
    sys.stdin.read()  # EOF: the session is gone (or done with this trial)
    if child.poll() is None:
        os.killpg(0, signal.SIGTERM)
threading.Thread(target=watch, daemon=True).start()
signal.signal(signal.SIGTERM, signal.SIG_DFL)
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
"""
"""Runs a trial command in the keeper's process group and ends the group when the pipe from
the session closes (:func:`run_trial_command`)."""


def _end_group(proc: subprocess.Popen[str]) -> None:
    """End a trial command's whole process group: SIGTERM, then SIGKILL after 5 s."""
    import signal

    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


# -- the screen --------------------------------------------------------------------------


class _Screen:
    """Everything the operator sees; the only place that knows about blinding on screen."""

    def __init__(self, plan: SessionPlan, out: IO[str] | None) -> None:
        from rich.console import Console

        self.plan = plan
        stream = out if out is not None else sys.stdout
        self.console: Console = Console(file=stream, highlight=False, soft_wrap=True)
        encoding = getattr(stream, "encoding", None) or "utf-8"
        self.encoding = None if "utf" in encoding.lower() else encoding

    def _safe(self, text: str) -> str:
        """Text the terminal can print: plain ASCII look-alikes on a non-UTF-8 terminal."""
        if self.encoding is None:
            return text
        text = text.translate(_ASCII)
        return text.encode(self.encoding, errors="replace").decode(self.encoding)

    def say(self, text: str, style: str | None = None) -> None:
        self.console.print(self._safe(text), style=style, markup=False)

    def raw(self, text: str) -> None:
        self.console.print(self._safe(text), markup=False, style="dim")

    def trial_name(self, trial: Trial) -> str:
        return self.plan.label(trial.policy)

    def describe_score(self, score: int) -> str:
        ok = "success" if self.plan.rubric.is_success(score) else "not a success"
        return f"{score} {self.plan.rubric.levels[score]} ({ok})"

    def start(self, counts: dict[str, int], trial_cmd: str | None) -> None:
        plan = self.plan
        blind = "blinded (codes, not names)" if plan.blind else "not blinded"
        self.say(
            f"session {plan.session_id}: {len(plan.policies)} policies x {plan.scenes} scenes x "
            f"{plan.attempts} attempts = {plan.n_trials} trials, {blind}",
            style="bold",
        )
        self.say(f"rubric: {plan.rubric.describe()}")
        if trial_cmd is not None:
            self.say(f"trial command: {trial_cmd}")
        done = counts["scored"] + counts["skipped"]
        if done:
            self.say(f"resuming: {done} of {plan.n_trials} trials already recorded")
        self.say(self.keys_help(trial_cmd is not None))

    def keys_help(self, with_cmd: bool) -> str:
        levels = list(self.plan.rubric.levels)
        run = "Enter/space run the trial · r run again · " if with_cmd else ""
        return (
            f"keys: {run}{levels[0]}-{levels[-1]} score · a assisted · n note · u undo · "
            "s skip · q quit · ? help"
        )

    def trial(
        self, trial: Trial, counts: dict[str, int], rates: str | None, command: str | None
    ) -> None:
        plan = self.plan
        self.say("")
        self.say(
            f"── trial {trial.index + 1} of {plan.n_trials} · scene {trial.scene} of "
            f"{plan.scenes} · attempt {trial.attempt} of {plan.attempts} ──",
            style="bold cyan",
        )
        self.say(f"policy: {self.trial_name(trial)}", style="bold")
        done = counts["scored"] + counts["skipped"]
        self.say(
            f"progress: {done} of {plan.n_trials} done ({counts['scored']} scored, "
            f"{counts['skipped']} skipped)"
        )
        if rates is not None:
            self.say(f"success so far: {rates}")
        if command is not None:
            shown = command if not plan.blind else "(hidden while blinded)"
            self.say(f"press Enter to run the trial: {shown}")
        self.say(f"score {plan.rubric.describe()} — press a digit")

    def record_line(self, trial: Trial, record: TrialRecord) -> str:
        what = (
            f"score {self.describe_score(record.score)}"
            if record.score is not None
            else "skipped"
        )
        extra = (" · assisted" if record.assisted else "") + (" · note" if record.note else "")
        return (
            f"trial {trial.index + 1} (scene {trial.scene}, attempt {trial.attempt}, "
            f"{self.trial_name(trial)}): {what}{extra}"
        )


def _rates(plan: SessionPlan, records: list[TrialRecord]) -> str | None:
    """Per-policy successes so far, or ``None`` while blinded (no operator bias)."""
    if plan.blind:
        return None
    policy_of = {t.index: t.policy for t in plan.trials}
    wins = dict.fromkeys(plan.policies, 0)
    scored = dict.fromkeys(plan.policies, 0)
    for r in records:
        if r.status == "scored":
            scored[policy_of[r.trial_index]] += 1
            wins[policy_of[r.trial_index]] += int(bool(r.success))
    if not any(scored.values()):
        return None
    return " · ".join(f"{p} {wins[p]}/{scored[p]}" for p in plan.policies)


@dataclass
class _TrialState:
    assisted: bool = False
    note: str | None = None
    result: CommandResult | None = None


def _hint_store(store: SessionStore) -> str:
    from evalband.store._sqlite import DEFAULT_STORE_PATH

    if Path(store.path) == DEFAULT_STORE_PATH:
        return ""
    import shlex

    return f" --store {shlex.quote(str(store.path))}"


def run_session(
    store: SessionStore,
    session_id: str,
    *,
    trial_cmd: str | None = None,
    keys: KeySource | None = None,
    out: IO[str] | None = None,
    stop_when: Callable[[list[TrialRecord]], str | None] | None = None,
) -> SessionRunOutcome:
    r"""Run the operator's loop until every trial is recorded or the operator quits.

    Per trial: show scene, attempt, policy (its blind code when blinded) and progress;
    optionally run ``trial_cmd`` (Enter); then a digit scores (it must be a rubric level) and
    ``y``/Enter confirms (``n`` cancels), ``a`` toggles assisted, ``n`` takes a note, ``u``
    undoes the last confirmed trial and shows it again, ``s`` skips (confirmed, recorded),
    ``q`` quits. Each confirmed trial is committed before the next is shown; calling this
    again resumes at the first trial with no record.

    Args:
        store: an open, writable :class:`~evalband.session.SessionStore`.
        session_id: the session to run.
        trial_cmd: a shell command per trial with ``{policy} {scene} {attempt}`` (and
            ``{trial} {session} {code}``) placeholders; it gets the real policy name.
        keys: where keys come from; the terminal (cbreak) or stdin lines when ``None``.
        out: where the screen goes (stdout when ``None``).
        stop_when: asked with the confirmed trials before each block's first trial; a
            sentence stops the session there (blocks stay complete), ``None`` goes on
            (``session run --until-decided``).

    Returns:
        A :class:`SessionRunOutcome`.

    Raises:
        SessionNotFoundError: unknown session.

    >>> import io, tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> d = tempfile.mkdtemp()
    >>> with SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A", "B"], scenes=1, attempts=1, seed=0, session_id="s"))
    ...     outcome = run_session(ss, "s", keys=LineKeys(io.StringIO("2\ny\ns\ny\n")),
    ...                           out=io.StringIO())
    ...     print(outcome.finished, ss.trials("s")["status"].tolist())
    True ['scored', 'skipped']
    """
    plan = store.plan(session_id)
    if trial_cmd is not None and not trial_cmd.strip():
        raise InvalidInputError("`trial_cmd` is empty; give a shell command or leave it out",
                                parameters=("trial_cmd",))
    screen = _Screen(plan, out)
    outcome = SessionRunOutcome(session_id, 0, 0, False)
    screen.start(store.counts(session_id), trial_cmd)
    with _default_keys() if keys is None else _given(keys) as source:
        try:
            _loop(store, plan, screen, source, trial_cmd, outcome, stop_when)
        except KeyboardInterrupt:
            screen.say("")
            screen.say("interrupted")
    outcome.counts = store.counts(session_id)
    outcome.finished = outcome.counts["pending"] == 0
    _farewell(store, plan, screen, outcome)
    return outcome


@contextmanager
def _given(keys: KeySource) -> Iterator[KeySource]:
    yield keys


def _farewell(
    store: SessionStore, plan: SessionPlan, screen: _Screen, outcome: SessionRunOutcome
) -> None:
    counts = outcome.counts
    done = counts["scored"] + counts["skipped"]
    records = store.records(plan.session_id)
    wins = sum(1 for r in records if r.success)
    assisted = sum(1 for r in records if r.assisted)
    store_opt = _hint_store(store)
    screen.say("")
    if outcome.decided is not None:
        screen.say(
            f"{outcome.decided}; no more blocks scheduled: {done} of {plan.n_trials} trials "
            f"recorded ({counts['scored']} scored, {counts['skipped']} skipped)",
            style="bold green",
        )
        screen.say(f"next: evalband session analyze {plan.session_id}{store_opt}")
    elif outcome.finished:
        screen.say(
            f"session {plan.session_id} complete: {done} of {plan.n_trials} trials recorded "
            f"({counts['scored']} scored, {counts['skipped']} skipped; {wins} successes, "
            f"{assisted} assisted)",
            style="bold green",
        )
        screen.say(f"next: evalband session analyze {plan.session_id}{store_opt}")
    else:
        screen.say(
            f"stopped: {done} of {plan.n_trials} trials recorded ({counts['scored']} scored, "
            f"{counts['skipped']} skipped), every confirmed trial saved",
            style="bold",
        )
        screen.say(f"resume: evalband session run {plan.session_id}{store_opt}")
        screen.say(f"when done: evalband session analyze {plan.session_id}{store_opt}")


def _loop(
    store: SessionStore,
    plan: SessionPlan,
    screen: _Screen,
    keys: KeySource,
    trial_cmd: str | None,
    outcome: SessionRunOutcome,
    stop_when: Callable[[list[TrialRecord]], str | None] | None = None,
) -> None:
    restored: dict[int, _TrialState] = {}
    focus: int | None = None
    while True:
        index = focus if focus is not None else store.next_pending(plan.session_id)
        focus = None
        if index is None:
            return
        trial = plan.trials[index]
        if stop_when is not None and trial.position == 0:  # a block boundary
            outcome.decided = stop_when(store.records(plan.session_id))
            if outcome.decided is not None:
                return
        state = restored.pop(index, None) or _TrialState()
        command = None if trial_cmd is None else substitute_command(trial_cmd, trial, plan)
        records = store.records(plan.session_id)
        screen.trial(trial, store.counts(plan.session_id), _rates(plan, records), command)
        if state.assisted or state.note or state.result is not None:
            _show_state(screen, state)
        action = _one_trial(store, plan, screen, keys, trial, state, command)
        if action == "quit":
            return
        if action == "confirmed":
            outcome.confirmed += 1
        elif isinstance(action, tuple):  # ("undone", record)
            undone = action[1]
            outcome.undone += 1
            restored[undone.trial_index] = _TrialState(
                assisted=undone.assisted,
                note=undone.note,
                result=(
                    None
                    if undone.exit_code is None
                    else CommandResult(
                        undone.exit_code, undone.duration_s or 0.0, undone.output_tail or ""
                    )
                ),
            )
            focus = undone.trial_index


def _show_state(screen: _Screen, state: _TrialState) -> None:
    parts = []
    if state.result is not None:
        parts.append(f"trial command ran: {state.result.describe()}")
    if state.assisted:
        parts.append("assisted")
    if state.note:
        parts.append(f"note: {state.note}")
    screen.say("kept from before: " + " · ".join(parts), style="yellow")


def _one_trial(
    store: SessionStore,
    plan: SessionPlan,
    screen: _Screen,
    keys: KeySource,
    trial: Trial,
    state: _TrialState,
    command: str | None,
) -> str | tuple[str, TrialRecord]:
    """Keys for one trial until it is confirmed, undone or the operator quits."""
    rubric = plan.rubric
    while True:
        key = keys.key()
        if key in _QUIT_KEYS:
            return "quit"
        if key.isdigit():
            score = int(key)
            if score not in rubric.levels:
                screen.say(
                    f"{score} is not a level of this rubric; press one of "
                    f"{', '.join(map(str, rubric.levels))}",
                    style="red",
                )
                continue
            extra = (" · assisted" if state.assisted else "") + (" · note" if state.note else "")
            screen.say(
                f"score {screen.describe_score(score)}{extra} for trial {trial.index + 1}? "
                "y/Enter confirm · n cancel",
                style="bold yellow",
            )
            if _confirmed(keys):
                return _commit(store, plan, screen, trial, state, "scored", score)
            screen.say("not saved; press a digit to score")
        elif key == "s":
            screen.say(
                f"skip trial {trial.index + 1}? it is recorded as skipped (not scored). "
                "y/Enter confirm · n cancel",
                style="bold yellow",
            )
            if _confirmed(keys):
                return _commit(store, plan, screen, trial, state, "skipped", None)
            screen.say("not skipped")
        elif key == "a":
            state.assisted = not state.assisted
            screen.say(f"assisted: {'yes' if state.assisted else 'no'} (for this trial)")
        elif key == "n":
            text = keys.line("note (Enter to keep it): ")
            if text is None:
                return "quit"
            if text.strip():
                state.note = text.strip()
                screen.say(f"note set: {state.note}")
            else:
                screen.say("note unchanged")
        elif key == "u":
            undone = store.undo_last(plan.session_id)
            if undone is None:
                screen.say("nothing to undo")
                continue
            what = plan.trials[undone.trial_index]
            screen.say(f"undone: {screen.record_line(what, undone)}; showing it again",
                       style="yellow")
            return ("undone", undone)
        elif key in (_ENTER, " ", "r") and command is not None:
            if state.result is not None and key != "r":
                screen.say(f"the trial command already ran ({state.result.describe()}); "
                           "press r to run it again, or score")
                continue
            state.result = _run(screen, plan, trial, command)
            keys.flush()
            screen.say(f"score {rubric.describe()} — press a digit")
        elif key in ("?", "h"):
            screen.say(screen.keys_help(command is not None))
        elif key in (_ENTER, " "):
            continue
        else:
            screen.say(f"unknown key {key!r}; press ? for help")


def _confirmed(keys: KeySource) -> bool:
    return keys.key() in ("y", "Y", _ENTER)


def _run(screen: _Screen, plan: SessionPlan, trial: Trial, command: str) -> CommandResult:
    screen.say("running the trial command…" + (" (output hidden while blinded)"
                                               if plan.blind else ""))
    env = {
        "EVALBAND_SESSION": plan.session_id,
        "EVALBAND_TRIAL": str(trial.index + 1),
        "EVALBAND_SCENE": str(trial.scene),
        "EVALBAND_ATTEMPT": str(trial.attempt),
        "EVALBAND_POLICY": trial.policy,
    }
    on_line = None if plan.blind else (lambda text: screen.raw("  │ " + text))
    result = run_trial_command(command, on_line=on_line, env=env)
    style = "green" if result.exit_code == 0 else "red"
    screen.say(f"trial command: {result.describe()}", style=style)
    if result.exit_code != 0:
        screen.say("the command failed: score the trial, skip it (s), or run it again (r)",
                   style="red")
    return result


def _commit(
    store: SessionStore,
    plan: SessionPlan,
    screen: _Screen,
    trial: Trial,
    state: _TrialState,
    status: str,
    score: int | None,
) -> str:
    """Record the trial; ``"confirmed"``, or ``"lost"`` when it was recorded elsewhere."""
    result = state.result
    try:
        record = store.record(
            plan.session_id,
            trial.index,
            status=status,
            score=score,
            assisted=state.assisted,
            note=state.note,
            exit_code=None if result is None else result.exit_code,
            duration_s=None if result is None else result.duration_s,
            output_tail=None if result is None else result.output_tail,
        )
    except StoreError as exc:
        screen.say(f"not saved: {exc}; moving to the next unrecorded trial", style="red")
        return "lost"
    screen.say(f"saved {screen.record_line(trial, record)}", style="green")
    return "confirmed"
