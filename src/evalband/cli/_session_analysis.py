"""``evalband session analyze | drift`` and ``evalband prereg lock | show``.

Thin commands: load the session(s) from the store, call :mod:`evalband.session`, print what
:mod:`evalband.report._session_terminal` renders (the HTML report section:
:mod:`evalband.report._session`). The
terminal reading order is the seed's: the flip floor and the positive control (the instrument)
before any policy rate, confirmatory comparisons before exploratory ones, the drift verdict
before any cross-session comparison. Every exploratory comparison carries the words
"exploratory — a hypothesis, not a finding" in the terminal, the JSON and the HTML.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from evalband.cli._common import (
    JSON_OPTION,
    STORE_OPTION,
    console,
    emit_json,
    escape,
    store_path,
)
from evalband.errors import InvalidInputError

if TYPE_CHECKING:

    from evalband.session import SessionAnalysis, SessionPlan, SessionStore
    from evalband.session._drift import DriftReport
    from evalband.session._prereg import Grouping, Preregistration
    from evalband.session._store import TrialRecord

__all__ = [
    "register",
    "register_prereg",
    "prereg_app",
    "render_analysis",
    "render_drift",
    "parse_group",
]

prereg_app = typer.Typer(
    name="prereg",
    help="Pre-registration: lock the planned comparisons and groupings before the data.",
    no_args_is_help=True,
)


# --------------------------------------------------------------------------- parsing


def parse_group(text: str, index: int = 1) -> Grouping:
    """A post-hoc grouping from ``"A,B vs C,D"`` (optionally ``"label=A,B vs label=C,D"``).

    Raises:
        InvalidInputError: when the text is not two comma-separated lists joined by ``vs``.

    >>> parse_group("pre=PT1,PT2 vs GN,BN").labels
    ('pre', 'GN+BN')
    """
    from evalband.session._prereg import Grouping

    parts = [p.strip() for p in text.split(" vs ")]
    if len(parts) != 2 or not all(parts):
        raise InvalidInputError(
            f"--group must be two lists of policies joined by ' vs ', e.g. "
            f"'pretrained=PT_a,PT_b vs scratch=GN_a,BN_a'; got {text!r}"
        )
    labels: list[str] = []
    members: list[tuple[str, ...]] = []
    for part in parts:
        label, _, names = part.rpartition("=")
        policies = tuple(n.strip() for n in names.split(",") if n.strip())
        if not policies:
            raise InvalidInputError(f"--group side {part!r} names no policy")
        labels.append(label.strip() or "+".join(policies))
        members.append(policies)
    if set(members[0]) & set(members[1]):
        raise InvalidInputError(f"--group {text!r}: a policy cannot be on both sides")
    return Grouping(f"post-hoc {index}", (labels[0], labels[1]), (members[0], members[1]))


# --------------------------------------------------------------------------- terminal


def render_analysis(result: SessionAnalysis) -> None:
    """Print a session analysis (:mod:`evalband.report._session_terminal` renders it)."""
    from evalband.report._session_terminal import session_analysis_renderables

    for item in session_analysis_renderables(result):
        console.print(item)


def render_drift(report: DriftReport) -> None:
    """Print a drift report (:mod:`evalband.report._session_terminal` renders it)."""
    from evalband.report._session_terminal import drift_renderables

    for item in drift_renderables(report):
        console.print(item)


# --------------------------------------------------------------------------- commands


def analyze(
    session_id: str = typer.Argument(..., help="Session id."),
    store: Path | None = STORE_OPTION,
    html_out: Path | None = typer.Option(None, "--html", help="Also write an HTML report."),
    prereg: str | None = typer.Option(
        None, "--prereg", help="Pre-registration name (default: the one naming the session)."
    ),
    group: list[str] = typer.Option(
        [], "--group", help="Post-hoc grouping 'A,B vs C,D' (always exploratory); repeatable."
    ),
    control_floor: float | None = typer.Option(
        None, "--control-floor", help="The success rate the positive control must reach."
    ),
    unblind: bool = typer.Option(
        False, "--unblind", help="Analyze a blinded session before its last trial."
    ),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Analyze a session: flip floor, positive control, rates, comparisons, prices.

    The result is stored (``session_results``) under its options and the trials it read; a
    stored result that is still current is rendered instead of computed again.
    """
    from evalband.cli._rank import write_outputs
    from evalband.report._session import session_html
    from evalband.session import analyze_session, prereg_for_session
    from evalband.session._prereg import get_prereg
    from evalband.session._stored import analysis_options, find_analysis, store_analysis
    from evalband.session._stored import trials_state as state_of

    path = store_path(store)
    groupings = [parse_group(text, i + 1) for i, text in enumerate(group)]
    with _session_store(path) as ss:
        plan = ss.plan(session_id)
        records = ss.records(session_id)
        pending = plan.n_trials - len(records)
        chosen: Preregistration | None = (
            get_prereg(prereg, path) if prereg is not None
            else prereg_for_session(session_id, path)
        )
        early = _stopped_early(plan, records, chosen)
        if plan.blind and pending and not unblind and early is None:
            raise InvalidInputError(
                f"session {session_id!r} is blinded and {pending} trials are pending: the "
                "analysis shows per-policy rates; finish the session first, or pass --unblind"
            )
        options = analysis_options(
            confidence=confidence,
            prereg=None if chosen is None else (chosen.name, chosen.sha256),
            groupings=group, control_floor=control_floor,
        )
        state = state_of(records)
        stored = find_analysis(ss, session_id, options, state)
        if stored is None:
            computed = analyze_session(
                plan,
                ss.trials(session_id),
                prereg=chosen,
                confidence=confidence,
                groupings=groupings,
                control_floor=control_floor,
            )
            if not ss.read_only:
                store_analysis(ss, session_id, options, state, computed, stopped_early=early)
                stored = find_analysis(ss, session_id, options, state)
        instrument = _instrument(ss, plan, records, confidence)
        if stored is not None:  # rendered from the stored result
            result, early = stored.analysis, stored.stopped_early
        else:  # a store this user cannot write: the same typed result, not stored
            from evalband.session import SessionAnalysis

            result = SessionAnalysis.from_dict(_json_round_trip(computed.as_dict()))
    if html_out is not None:
        try:
            write_outputs(None, session_html(result), None, html_out, quiet=as_json)
        except OSError as exc:
            raise InvalidInputError(f"cannot write the HTML report {html_out}: {exc}") from None
    if early is not None:
        from dataclasses import replace

        result = replace(result, notes=(early, *result.notes))
    if instrument is not None and instrument.rehearsal:
        from dataclasses import replace

        result = replace(result, notes=(instrument.notes[0], *result.notes))
    if as_json:
        emit_json({**result.as_dict(), "stopped_early": early,
                   "instrument": None if instrument is None else instrument.as_dict()})
        return
    render_analysis(result)
    if instrument is not None:
        from evalband.report._session_terminal import instrument_renderables

        for item in instrument_renderables(instrument):
            console.print(item)


def _instrument(ss: SessionStore, plan: SessionPlan, records: list[TrialRecord],
                confidence: float) -> Any:
    """The robot instrument's record (suggestion agreement, rehearsal), or None."""
    from evalband.session._agreement import instrument_summary
    from evalband.session._attempts import AttemptLog

    return instrument_summary(plan, records, AttemptLog(ss).attempts(plan.session_id),
                              confidence=confidence)


def _json_round_trip(data: dict[str, object]) -> dict[str, object]:
    import json

    return dict(json.loads(json.dumps(data)))


def _session_store(path: Path) -> SessionStore:
    """The session store, writable when this user may write it (else read-only).

    A missing store is opened read-only, so the error names it (nothing is created).
    """
    from evalband.errors import StoreError
    from evalband.session import SessionStore

    if not path.exists():
        return SessionStore(path, read_only=True)
    try:
        return SessionStore(path)
    except StoreError:
        return SessionStore(path, read_only=True)


def _stopped_early(
    plan: SessionPlan, records: list[TrialRecord], prereg: Preregistration | None
) -> str | None:
    """The early-stop sentence of a session ``session run --until-decided`` stopped, or None.

    Under the stop rule's design: the pre-registration's ``design:`` block, else the default.
    """
    from evalband.session._sequential import stopped_early

    if prereg is None or not prereg.comparisons:
        return None
    return stopped_early(plan, records, prereg.comparisons, **(prereg.design or {}))


def drift(
    first: str = typer.Argument(..., help="The reference session."),
    second: str = typer.Argument(..., help="The later session."),
    store: Path | None = STORE_OPTION,
    on: list[str] = typer.Option(
        [], "--on", help="Read drift on this shared policy only; repeatable."
    ),
    test: str = typer.Option("fisher", "--test", help="fisher or boschloo (slow at large n)."),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Rig drift between two sessions on their shared (bridge / control) policies."""
    from evalband.session import load_session, session_drift

    path = store_path(store)
    plan_a, trials_a = load_session(path, first)
    plan_b, trials_b = load_session(path, second)
    report = session_drift(
        plan_a, trials_a, plan_b, trials_b, on=on or None, confidence=confidence, test=test
    )
    if as_json:
        emit_json(report.as_dict())
        return
    render_drift(report)


@prereg_app.command("lock")
def lock(
    plan_file: Path = typer.Argument(..., help="The pre-registration YAML."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Lock a pre-registration: its exact text, sha256 and the time, before the data."""
    from evalband.session._prereg import lock_prereg

    prereg, created = lock_prereg(plan_file, store=store_path(store))
    if as_json:
        emit_json({"created": created, **prereg.as_dict()})
        return
    state = "locked" if created else "already locked (same content)"
    console.print(f"pre-registration {escape(prereg.name)} {state} at {prereg.locked_at}")
    console.print(f"  sha256 {prereg.sha256}")
    _prereg_lines(prereg)


def _prereg_lines(prereg: Preregistration) -> None:
    if prereg.session_id:
        console.print(f"  session: {escape(prereg.session_id)}")
    console.print(f"  primary metric: {prereg.primary_metric}")
    for a, b in prereg.comparisons:
        console.print(f"  planned: {escape(a)} vs {escape(b)}")
    for g in prereg.groupings:
        sides = [f"{g.labels[i]} ({', '.join(g.members[i])})" for i in (0, 1)]
        console.print(f"  grouping {escape(g.name)}: {escape(sides[0])} vs {escape(sides[1])}")
    if prereg.positive_control_floor is not None:
        console.print(f"  positive control floor: {100 * prereg.positive_control_floor:.0f}%")


@prereg_app.command("show")
def show(
    name: str | None = typer.Argument(None, help="One pre-registration (default: all)."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Show the locked pre-registrations (or one of them)."""
    from evalband.session._prereg import get_prereg, list_preregs

    path = store_path(store)
    found = [get_prereg(name, path)] if name is not None else list_preregs(path)
    if as_json:
        emit_json([p.as_dict() for p in found])
        return
    if not found:
        console.print(
            f"no pre-registration in {escape(str(path))} (lock one: evalband prereg lock PLAN.yaml)"
        )
        return
    for prereg in found:
        console.print(
            f"{escape(prereg.name)}: locked {prereg.locked_at}, sha256 {prereg.sha256[:16]}"
        )
        _prereg_lines(prereg)


def register(session_app: typer.Typer) -> None:
    """Add ``analyze`` and ``drift`` to the ``session`` group."""
    session_app.command("analyze")(analyze)
    session_app.command("drift")(drift)


def register_prereg(app: typer.Typer) -> None:
    """Add the ``prereg`` group (``lock``, ``show``) to the top-level app."""
    app.add_typer(prereg_app, name="prereg")
