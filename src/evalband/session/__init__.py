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

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.session._agreement import InstrumentSummary, instrument_summary
    from evalband.session._analyze import analyze_session
    from evalband.session._attempts import AttemptLog, AttemptRecord
    from evalband.session._clock import Clock, RealClock, VirtualClock, make_clock
    from evalband.session._drift import DriftReport, session_drift
    from evalband.session._export_lerobot import ExportedDataset, export_lerobot
    from evalband.session._instrument_spec import InstrumentSpec, load_instrument
    from evalband.session._machine import MachineState, Phase, SessionMachine
    from evalband.session._plan import (
        DEFAULT_LEVELS,
        Rubric,
        SessionPlan,
        Trial,
        blind_codes,
        plan_session,
        split_specs,
    )
    from evalband.session._preference import (
        PREFERENCES,
        PreferenceBlock,
        PreferencePlan,
        PreferenceResult,
        PreferenceSession,
        plan_preference,
        preference_session_ids,
    )
    from evalband.session._preference_analysis import (
        PreferenceAnalysis,
        PreferencePair,
        PreferencePolicy,
        TaskDependence,
        analyze_preferences,
        simulate_preferences,
    )
    from evalband.session._prereg import (
        Grouping,
        Preregistration,
        PreregistrationError,
        get_prereg,
        list_preregs,
        lock_prereg,
        parse_prereg,
        prereg_for_session,
    )
    from evalband.session._results import CONFIRMATORY, EXPLORATORY, SessionAnalysis
    from evalband.session._robot import Robot, connect_robot, resolve_robot
    from evalband.session._robot_tui import run_robot_session
    from evalband.session._sequential import session_look, stopped_early
    from evalband.session._simulate import expected_flip_rate, simulate_session
    from evalband.session._store import (
        TRIAL_COLUMNS,
        TRIAL_STATUSES,
        SessionStore,
        TrialRecord,
        load_session,
    )
    from evalband.session._stored import (
        StoredAnalysis,
        StoredLook,
        analysis_options,
        find_analysis,
        latest_analysis,
        store_analysis,
        store_look,
        stored_looks,
        trials_state,
    )
    from evalband.session._tui import CommandResult, SessionRunOutcome, run_session

__all__ = [
    # pairwise preference sessions (RoboArena's protocol)
    "PreferenceBlock",
    "PreferencePlan",
    "PreferenceResult",
    "PreferenceSession",
    "plan_preference",
    "PREFERENCES",
    "preference_session_ids",
    "PreferencePolicy",
    "PreferencePair",
    "TaskDependence",
    "PreferenceAnalysis",
    "analyze_preferences",
    "simulate_preferences",
    # plan (S1)
    "DEFAULT_LEVELS",
    "Rubric",
    "Trial",
    "SessionPlan",
    "plan_session",
    "blind_codes",
    # store (S1)
    "SessionStore",
    "TrialRecord",
    "TRIAL_COLUMNS",
    "TRIAL_STATUSES",
    "load_session",
    # operator terminal (S1)
    "run_session",
    "CommandResult",
    "SessionRunOutcome",
    # analysis, pre-registration, drift (S2)
    "analyze_session",
    "SessionAnalysis",
    "EXPLORATORY",
    "CONFIRMATORY",
    "simulate_session",
    "expected_flip_rate",
    "session_drift",
    "DriftReport",
    "Preregistration",
    "PreregistrationError",
    "Grouping",
    "parse_prereg",
    "lock_prereg",
    "list_preregs",
    "get_prereg",
    "prereg_for_session",
    "session_look",
    "stopped_early",
    # stored results and looks
    "StoredAnalysis",
    "StoredLook",
    "analysis_options",
    "trials_state",
    "store_analysis",
    "find_analysis",
    "latest_analysis",
    "store_look",
    "stored_looks",
    # robot sessions: the robot interface, the instrument, the trial state machine
    "split_specs",
    "AttemptLog",
    "AttemptRecord",
    "Clock",
    "RealClock",
    "VirtualClock",
    "make_clock",
    "InstrumentSpec",
    "load_instrument",
    "MachineState",
    "Phase",
    "SessionMachine",
    "Robot",
    "resolve_robot",
    "connect_robot",
    "run_robot_session",
    "export_lerobot",
    "ExportedDataset",
    "InstrumentSummary",
    "instrument_summary",
]

_LAZY = {
    "PreferenceBlock": "evalband.session._preference",
    "PreferencePlan": "evalband.session._preference",
    "PreferenceResult": "evalband.session._preference",
    "PreferenceSession": "evalband.session._preference",
    "plan_preference": "evalband.session._preference",
    "PREFERENCES": "evalband.session._preference",
    "preference_session_ids": "evalband.session._preference",
    "PreferencePolicy": "evalband.session._preference_analysis",
    "PreferencePair": "evalband.session._preference_analysis",
    "TaskDependence": "evalband.session._preference_analysis",
    "PreferenceAnalysis": "evalband.session._preference_analysis",
    "analyze_preferences": "evalband.session._preference_analysis",
    "simulate_preferences": "evalband.session._preference_analysis",
    "DEFAULT_LEVELS": "evalband.session._plan",
    "Rubric": "evalband.session._plan",
    "Trial": "evalband.session._plan",
    "SessionPlan": "evalband.session._plan",
    "plan_session": "evalband.session._plan",
    "blind_codes": "evalband.session._plan",
    "SessionStore": "evalband.session._store",
    "TrialRecord": "evalband.session._store",
    "TRIAL_COLUMNS": "evalband.session._store",
    "TRIAL_STATUSES": "evalband.session._store",
    "load_session": "evalband.session._store",
    "run_session": "evalband.session._tui",
    "CommandResult": "evalband.session._tui",
    "SessionRunOutcome": "evalband.session._tui",
    # analysis, pre-registration, drift (S2)
    "analyze_session": "evalband.session._analyze",
    "SessionAnalysis": "evalband.session._results",
    "EXPLORATORY": "evalband.session._results",
    "CONFIRMATORY": "evalband.session._results",
    "simulate_session": "evalband.session._simulate",
    "expected_flip_rate": "evalband.session._simulate",
    "session_drift": "evalband.session._drift",
    "DriftReport": "evalband.session._drift",
    "Preregistration": "evalband.session._prereg",
    "PreregistrationError": "evalband.session._prereg",
    "Grouping": "evalband.session._prereg",
    "parse_prereg": "evalband.session._prereg",
    "lock_prereg": "evalband.session._prereg",
    "list_preregs": "evalband.session._prereg",
    "get_prereg": "evalband.session._prereg",
    "prereg_for_session": "evalband.session._prereg",
    "session_look": "evalband.session._sequential",
    "stopped_early": "evalband.session._sequential",
    "StoredAnalysis": "evalband.session._stored",
    "StoredLook": "evalband.session._stored",
    "analysis_options": "evalband.session._stored",
    "trials_state": "evalband.session._stored",
    "store_analysis": "evalband.session._stored",
    "find_analysis": "evalband.session._stored",
    "latest_analysis": "evalband.session._stored",
    "store_look": "evalband.session._stored",
    "stored_looks": "evalband.session._stored",
    "split_specs": "evalband.session._plan",
    "AttemptLog": "evalband.session._attempts",
    "AttemptRecord": "evalband.session._attempts",
    "Clock": "evalband.session._clock",
    "RealClock": "evalband.session._clock",
    "VirtualClock": "evalband.session._clock",
    "make_clock": "evalband.session._clock",
    "InstrumentSpec": "evalband.session._instrument_spec",
    "load_instrument": "evalband.session._instrument_spec",
    "MachineState": "evalband.session._machine",
    "Phase": "evalband.session._machine",
    "SessionMachine": "evalband.session._machine",
    "Robot": "evalband.session._robot",
    "resolve_robot": "evalband.session._robot",
    "connect_robot": "evalband.session._robot",
    "run_robot_session": "evalband.session._robot_tui",
    "export_lerobot": "evalband.session._export_lerobot",
    "ExportedDataset": "evalband.session._export_lerobot",
    "InstrumentSummary": "evalband.session._agreement",
    "instrument_summary": "evalband.session._agreement",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
