"""Hardware-session commands: ``evalband session plan | show | run | list``.

The analysis commands (``analyze``, ``drift``) are added to the same ``session`` group by
:mod:`evalband.cli._session_analysis` when it is present.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from evalband.cli._common import (
    JSON_OPTION,
    STORE_OPTION,
    console,
    emit_json,
    existing_store,
    store_path,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from evalband.session import SessionPlan, SessionStore

__all__ = ["session_app", "register"]

session_app = typer.Typer(
    name="session",
    help="Hardware evaluation sessions: matched, shuffled, optionally blinded blocks scored "
    "by an operator at the keyboard.",
    no_args_is_help=True,
)



def _store_hint(store: Path | None) -> str:
    return "" if store is None else f" --store {shlex.quote(str(store))}"


@session_app.command("plan")
def plan(
    policies: str = typer.Option(
        ..., "--policies",
        help="Comma-separated policies: NAME, or NAME=SPEC for a robot session (SPEC: "
        "lerobot:PATH, module:attr, ws://HOST:PORT or a built-in such as sim-arm:grasp).",
    ),
    scenes: int = typer.Option(..., "--scenes", help="Scenes (blocks); every policy on each."),
    attempts: int = typer.Option(2, "--attempts", help="Attempts per policy per scene."),
    seed: int = typer.Option(..., "--seed", help="Seed of the order and the blind codes."),
    blind: bool = typer.Option(False, "--blind", help="Show blind codes, not policy names."),
    positive_control: str | None = typer.Option(
        None, "--positive-control", help="The policy (one of --policies) that checks the rig."
    ),
    rubric: Path | None = typer.Option(
        None, "--rubric", help="Rubric YAML: levels {0: text, ...} and success_at."
    ),
    session_id: str | None = typer.Option(None, "--session-id", help="Name the session."),
    instrument: Path | None = typer.Option(
        None, "--instrument",
        help="A robot session's instrument YAML: rate, time limit, capture, re-placement, "
        "settle trigger, stress, score suggestion (docs/sessions.md).",
    ),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Plan a session and store it: every policy x attempt once per scene, order shuffled."""
    from evalband.cli._progress import busy
    from evalband.session import Rubric, SessionStore, plan_session
    from evalband.session._instrument_spec import load_instrument
    from evalband.session._plan import split_specs

    names, specs = split_specs(policies.split(","))
    with busy(f"planning {scenes} scenes", enabled=not as_json):
        plan_obj = plan_session(
            names,
            scenes,
            attempts,
            seed,
            blind=blind,
            positive_control=positive_control,
            rubric=None if rubric is None else Rubric.from_yaml(rubric),
            session_id=session_id,
            specs=specs,
            instrument=None if instrument is None else load_instrument(instrument).as_dict(),
        )
        with SessionStore(store_path(store)) as ss:
            ss.create(plan_obj)
    if as_json:
        emit_json({"store": str(store_path(store)), **_plan_view(plan_obj, unblind=False)})
        return
    console.print(f"session {plan_obj.session_id} created in {store_path(store)}")
    from evalband.report._session_terminal import plan_lines

    for line in plan_lines(plan_obj, unblind=False):
        console.print("  " + line)
    if plan_obj.instrument is not None:
        console.print(f"next: evalband session run {plan_obj.session_id} --robot sim-arm "
                      f"--operator suggested{_store_hint(store)}  (a rehearsal), then on the "
                      "arm: --robot lerobot:TYPE --robot-config robot.yaml")
        return
    console.print(f"next: evalband session run {plan_obj.session_id}{_store_hint(store)}")


@session_app.command("show")
def show(
    session_id: str = typer.Argument(..., help="Session id."),
    unblind: bool = typer.Option(
        False, "--unblind", help="Reveal policy names and per-policy rates of a blinded session."
    ),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """A session's schedule and progress (blinded sessions: codes, no per-policy rates)."""
    from evalband.session import SessionStore

    with SessionStore(store_path(store), read_only=True) as ss:
        plan_obj = ss.plan(session_id)
        frame = ss.trials(session_id)
        counts = ss.counts(session_id)
        next_index = ss.next_pending(session_id)
    named = not plan_obj.blind or unblind
    rates = _policy_rates(plan_obj, frame) if named else None
    if as_json:
        emit_json(
            {
                **_plan_view(plan_obj, unblind=unblind),
                "progress": counts,
                "next_trial": next_index,
                "trials": _trial_rows(frame, named=named),
                **({"per_policy": rates} if rates is not None else {}),
            }
        )
        return
    from evalband.report._session_terminal import session_show_renderables

    for item in session_show_renderables(plan_obj, counts, next_index,
                                         _trial_rows(frame, named=named), rates,
                                         unblind=unblind):
        console.print(item)


@session_app.command("run")
def run(
    session_id: str = typer.Argument(..., help="Session id."),
    trial_cmd: str | None = typer.Option(
        None,
        "--trial-cmd",
        help='Shell command per trial, e.g. "python go.py {policy} {scene} {attempt}" '
        "(also {trial} {session} {code}); it gets the real policy name even when blinded.",
    ),
    until_decided: bool = typer.Option(
        False, "--until-decided",
        help="Stop scheduling blocks once the pre-registered comparisons are decided "
        "(anytime-valid test, looked at after each complete block).",
    ),
    alpha: float | None = typer.Option(
        None, "--alpha", help="With --until-decided: family-wise error (default: the "
        "pre-registration's design block, else 0.05; one that differs from the block is "
        "refused)."),
    robot: str | None = typer.Option(
        None, "--robot",
        help="Drive a robot: sim-arm, or lerobot:TYPE (e.g. lerobot:so101_follower) with "
        "--robot-config; the plan's policies are loaded from their specs.",
    ),
    robot_config: Path | None = typer.Option(
        None, "--robot-config", help="lerobot robot config YAML (port, id, cameras, ...)."
    ),
    operator: str | None = typer.Option(
        None, "--operator",
        help="With --robot: human (score by keypress; the default) or suggested (a "
        "rehearsal: accept every machine suggestion, stored as such).",
    ),
    clock: str | None = typer.Option(
        None, "--clock",
        help="With --robot: real (the default), or virtual (a simulated robot faster than "
        "real time: rehearsals, tests).",
    ),
    console: bool = typer.Option(
        False, "--console",
        help="Drive the session from a web page (a phone or tablet at the robot): live "
        "camera, ghost overlay, score buttons. Prints its URL (with a per-session token) "
        "and a QR code. Needs --robot.",
    ),
    host: str | None = typer.Option(
        None, "--host",
        help="With --console: the address to listen on (default 127.0.0.1; 0.0.0.0: a phone "
        "on the lab's network).",
    ),
    port: int | None = typer.Option(
        None, "--port", min=0, max=65535,
        help="With --console: TCP port (default 8766; 0 picks a free one).",
    ),
    no_token: bool = typer.Option(
        False, "--no-token", help="With --console on a loopback address only: no token."
    ),
    store: Path | None = STORE_OPTION,
) -> None:
    """The operator's terminal: score each trial by keypress; re-run to resume."""
    from evalband.cli._out import refuse_ignored
    from evalband.errors import InvalidInputError
    from evalband.session import SessionStore, run_session

    refuse_ignored(["--alpha"] if alpha is not None and not until_decided else [],
                   "--until-decided", "the error rate of its stop rule")
    path = store_path(store)
    # given at all, not compared with a default: a default's value given is still given
    refuse_ignored([flag for flag, value in (("--host", host), ("--port", port),
                                             ("--no-token", no_token or None))
                    if value is not None and not console], "--console",
                   "the console's web server")
    address = "127.0.0.1" if host is None else host
    web = {"host": address, "port": 8766 if port is None else port,
           "no_token": no_token} if console else None
    if console:
        from evalband.cli._console import check_console_address

        check_console_address(address, no_token)  # before anything starts
        if robot is None:
            raise InvalidInputError("--console drives a robot session's machine: give --robot "
                                    "sim-arm or --robot lerobot:TYPE")
    existing_store(path)  # a mistyped --store is one line, not a new empty store
    if robot is not None:
        _run_robot(session_id, path, robot, robot_config, operator or "human", clock or "real",
                   trial_cmd, until_decided, web)
        return
    refuse_ignored([flag for flag, value in (("--robot-config", robot_config),
                                             ("--operator", operator), ("--clock", clock))
                    if value is not None], "--robot",
                   "to drive a robot: --robot sim-arm or --robot lerobot:TYPE")
    with SessionStore(path) as ss:
        stop_when = _stop_rule(ss, ss.plan(session_id), path, alpha) if until_decided else None
        run_session(ss, session_id, trial_cmd=trial_cmd, stop_when=stop_when)


def _run_robot(session_id: str, path: Path, robot: str, robot_config: Path | None,
               operator: str, clock: str, trial_cmd: str | None, until_decided: bool,
               web: dict[str, Any] | None = None) -> None:
    """``session run --robot``: the session machine on a robot, from the terminal or a page.

    With ``web`` (``--console``: host, port, no_token) the console's page drives it.
    """
    from evalband.errors import InvalidInputError
    from evalband.session import SessionMachine, SessionStore, make_clock, resolve_robot
    from evalband.session._robot_tui import run_robot_session

    if trial_cmd is not None or until_decided:
        raise InvalidInputError("--robot plays the trials itself: drop --trial-cmd and "
                                "--until-decided")
    if clock not in ("real", "virtual"):
        raise InvalidInputError(f"--clock must be real or virtual; got {clock!r}")
    with SessionStore(path) as ss:
        ss.plan(session_id)
        chosen = make_clock(clock)
        made = resolve_robot(robot, None if robot_config is None else str(robot_config),
                             clock=chosen.now)
        machine = SessionMachine(ss, session_id, made, robot_spec=robot, clock=chosen,
                                 operator=operator)
        if web is not None:
            from evalband.cli._console import serve_console

            serve_console(machine, **web)
            return
        run_robot_session(machine)


def _stop_rule(
    ss: SessionStore, plan_obj: SessionPlan, path: Path, alpha: float | None
) -> Callable[..., str | None]:
    """The --until-decided stop rule: the pre-registered comparisons, decided at a block end.

    Its design (effect, alpha, discordance) is the pre-registration's ``design:`` block, fixed
    with the plan's lock before the data; without one, a 10-point drop at ``--alpha`` (0.05).
    Each look at a newly completed block is stored (``session_results``, kind ``look``) with
    the design it used.
    """
    from evalband.errors import InvalidInputError
    from evalband.session import prereg_for_session
    from evalband.session._sequential import session_look
    from evalband.session._stored import store_look

    if alpha is not None and not 0 < alpha < 1:
        raise InvalidInputError(f"--alpha must be between 0 and 1; got {alpha}")
    prereg = prereg_for_session(plan_obj.session_id, path)
    if prereg is None or not prereg.comparisons:
        raise InvalidInputError(
            f"--until-decided stops when the pre-registered comparisons of session "
            f"{plan_obj.session_id!r} are decided, and none names them; lock a plan first: "
            "evalband prereg lock PLAN.yaml (with session: and comparisons:)")
    design = dict(prereg.design or {"effect": 0.10, "alpha": 0.05, "discordant": None})
    if prereg.design is not None and alpha is not None and abs(alpha - design["alpha"]) > 1e-12:
        raise InvalidInputError(
            f"--alpha {alpha:g} would change the design pre-registration {prereg.name!r} "
            f"fixed before the data (alpha {design['alpha']:g}); drop --alpha, or lock a new "
            "plan before the session's first trial")
    if prereg.design is None and alpha is not None:
        design["alpha"] = alpha
    options = {**design, "design_source": "pre-registration" if prereg.design else "default",
               "comparisons": [list(c) for c in prereg.comparisons]}
    looked: set[int] = set()

    def stop(records: list[Any]) -> str | None:
        look = session_look(plan_obj, records, prereg.comparisons, **design)
        if look.scenes_done and look.scenes_done not in looked:
            store_look(ss, plan_obj.session_id, options, look)
            looked.add(look.scenes_done)
        return look.sentence(plan_obj) if look.decided else None
    return stop


@session_app.command("list")
def list_sessions(store: Path | None = STORE_OPTION, as_json: bool = JSON_OPTION) -> None:
    """List the sessions in the store, newest first, with their progress."""
    from evalband.session import SessionStore

    with SessionStore(store_path(store), read_only=True) as ss:
        rows = [(p, ss.counts(p.session_id), ss.run_ids(p.session_id)) for p in ss.sessions()]
    if as_json:
        emit_json(
            [
                {"session_id": p.session_id, "created_at": p.created_at, "blind": p.blind,
                 "trials": c["total"], "scored": c["scored"], "skipped": c["skipped"],
                 "pending": c["pending"],
                 # a blinded session in progress names no policy: its runs by code
                 "runs": {p.codes[k]: v for k, v in sorted(
                     runs.items(), key=lambda kv: p.codes[kv[0]])}
                 if p.blind and c["pending"] else runs}
                for p, c, runs in rows
            ]
        )
        return
    if not rows:
        console.print(f"no sessions in {store_path(store)}")
        return
    from evalband.report._session_terminal import sessions_table

    console.print(sessions_table([(p, c) for p, c, _ in rows],
                                 title=f"sessions in {store_path(store)}"))


# -- views -------------------------------------------------------------------------------


def _plan_view(plan_obj: SessionPlan, *, unblind: bool) -> dict[str, Any]:
    """The plan as JSON; a blinded plan shows codes only unless ``unblind``."""
    from evalband.report._session_terminal import HIDDEN

    named = not plan_obj.blind or unblind
    view: dict[str, Any] = {
        "session_id": plan_obj.session_id,
        "blind": plan_obj.blind,
        "policies": list(plan_obj.policies) if named else sorted(plan_obj.codes.values()),
        "scenes": plan_obj.scenes,
        "attempts": plan_obj.attempts,
        "n_trials": plan_obj.n_trials,
        "seed": plan_obj.seed,
        "positive_control": (
            plan_obj.positive_control if named or plan_obj.positive_control is None else HIDDEN
        ),
        "rubric": plan_obj.rubric.as_dict(),
        "created_at": plan_obj.created_at,
    }
    if plan_obj.blind and unblind:
        view["codes"] = dict(plan_obj.codes)
    if plan_obj.instrument is not None:
        view["instrument"] = dict(plan_obj.instrument)
    if plan_obj.specs and named:
        view["specs"] = dict(plan_obj.specs)
    return view


def _none(value: Any) -> Any:
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and value != value:
        return None
    return value.item() if hasattr(value, "item") else value


def _trial_rows(frame: pd.DataFrame, *, named: bool) -> list[dict[str, Any]]:
    rows = []
    for rec in frame.to_dict("records"):
        row = {str(k): _none(v) for k, v in rec.items()}
        if not named:
            row.pop("policy")
        rows.append(row)
    return rows


def _policy_rates(plan_obj: SessionPlan, frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for policy in plan_obj.policies:
        mine = frame[frame["policy"] == policy]
        scored = mine[mine["status"] == "scored"]
        # Unaided success, as `session analyze` reports it (seed 003): the mean over scored
        # trials the operator did not assist; assisted trials are counted apart.
        unaided = scored[~scored["assisted"].astype(bool)]
        n = len(unaided)
        wins = int(unaided["success"].sum()) if n else 0
        rows.append(
            {
                "policy": policy,
                "planned": len(mine),
                "scored": len(scored),
                "successes": wins,
                "rate": wins / n if n else None,
                "skipped": int((mine["status"] == "skipped").sum()),
                "assisted": int(mine["assisted"].sum()),
            }
        )
    return rows


def register(app: typer.Typer) -> None:
    """Add the ``session`` group (and the analysis commands, when present) to ``app``."""
    import importlib

    try:
        analysis = importlib.import_module("evalband.cli._session_analysis")
    except ModuleNotFoundError as exc:
        if exc.name != "evalband.cli._session_analysis":
            raise
    else:
        analysis.register(session_app)
    app.add_typer(session_app, name="session")
