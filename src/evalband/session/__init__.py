"""Hardware evaluation sessions (seed 004): plan, operator scoring, resume, analysis.

A session runs every policy on every scene in matched blocks whose order is shuffled by the
seed, optionally blinded; the operator scores each trial on an ordinal rubric in a terminal
(``evalband session run``), every confirmed trial is committed to the run store before the next
is shown, and a killed session resumes at the first unscored trial. With a robot
(``session run --robot sim-arm`` or ``--robot lerobot:TYPE``) evalband plays each trial itself:
:class:`SessionMachine` is the trial state machine the terminal (and a browser) drive.

Names load on first use (the terminal UI starts without pandas or scipy).

>>> from evalband.session import plan_session
>>> plan = plan_session(["A", "B"], scenes=3, attempts=2, seed=7, blind=True, session_id="s1")
>>> plan.n_trials, sorted(plan.codes) == ["A", "B"]
(12, True)
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "analyze_session": "evalband.session._analyze",
    "make_clock": "evalband.session._clock",
    "session_drift": "evalband.session._drift",
    "SessionMachine": "evalband.session._machine",
    "MachineState": "evalband.session._machine",
    "Rubric": "evalband.session._plan",
    "plan_session": "evalband.session._plan",
    "Trial": "evalband.session._plan",
    "SessionPlan": "evalband.session._plan",
    "prereg_for_session": "evalband.session._prereg",
    "SessionAnalysis": "evalband.session._results",
    "Robot": "evalband.session._robot",
    "resolve_robot": "evalband.session._robot",
    "connect_robot": "evalband.session._robot",
    "simulate_session": "evalband.session._simulate",
    "expected_flip_rate": "evalband.session._simulate",
    "SessionStore": "evalband.session._store",
    "load_session": "evalband.session._store",
    "stored_looks": "evalband.session._stored",
    "run_session": "evalband.session._tui",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
