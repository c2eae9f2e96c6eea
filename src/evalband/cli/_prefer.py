"""``evalband prefer``: pairwise preference sessions (RoboArena's protocol), plan to analysis."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

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
    from evalband.session._preference import PreferenceBlock

__all__ = ["prefer_app", "register"]

prefer_app = typer.Typer(
    help="Pairwise preference sessions: two blinded policies per block from one start state; "
         "the operator prefers A, B or tie and scores each one's progress (0-100).",
    no_args_is_help=True, rich_markup_mode=None)


@prefer_app.command("plan")
def plan(
    policies: str = typer.Option(..., "--policies", help="Comma-separated policy names."),
    blocks: int = typer.Option(..., "--blocks", min=1, help="Blocks (comparisons) to play."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the schedule."),
    scenes: int | None = typer.Option(
        None, "--scenes", min=1, help="Start states to cycle through (default: one per block)."),
    tasks: str | None = typer.Option(None, "--tasks", help="Comma-separated tasks to cycle."),
    session_id: str | None = typer.Option(None, "--session-id", help="The session's id."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Plan a preference session: balanced, shuffled pairs; which plays first drawn per block."""
    from evalband.session._preference import PreferenceSession, plan_preference
    from evalband.store import open_store

    plan_obj = plan_preference([p.strip() for p in policies.split(",") if p.strip()], blocks,
                               seed, scenes=scenes,
                               tasks=[t.strip() for t in tasks.split(",")] if tasks else (),
                               session_id=session_id)
    with open_store(store_path(store)) as st:
        PreferenceSession.create(st, plan_obj)
    if as_json:
        emit_json(plan_obj.as_dict())
        return
    console.print(f"planned {plan_obj.session_id}: {len(plan_obj.blocks)} blocks over "
                  f"{len(plan_obj.policies)} policies; play it with: evalband prefer run "
                  f"{plan_obj.session_id}", markup=False)


def _ask(prompt: str, valid: tuple[str, ...] | None = None, number: bool = False) -> str:
    while True:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        text = line.strip()
        if valid is not None and text.lower() in valid:
            return text.lower()
        if number and text.isdigit() and 0 <= int(text) <= 100:
            return text
        if valid is None and not number:
            return text
        sys.stdout.write(f"  expected {'/'.join(valid) if valid else 'a whole number 0-100'}\n")


def _play(command: str | None, block: PreferenceBlock, policy: str, label: str) -> None:
    if command is None:
        return
    args = [a.format(policy=policy, scene=block.scene, block=block.index, task=block.task or "")
            for a in shlex.split(command)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    sys.stdout.write(f"  {label} finished (exit {done.returncode})\n")


@prefer_app.command("run")
def run(
    session_id: str = typer.Argument(..., help="The preference session."),
    store: Path | None = STORE_OPTION,
    command: str | None = typer.Option(
        None, "--command", help="Run this for each policy of a block (placeholders {policy}, "
        "{scene}, {block}, {task}; the operator sees only A and B)."),
) -> None:
    """Play the pending blocks: A then B from one start state; prefer, score, note."""
    from evalband.session._preference import PreferenceSession
    from evalband.store import open_store

    with open_store(existing_store(store)) as st:
        session = PreferenceSession(st, session_id)
        total = len(session.plan.blocks)
        while (block := session.pending()) is not None:
            where = f"scene {block.scene}" + (f", task {block.task}" if block.task else "")
            sys.stdout.write(f"block {block.index + 1}/{total} ({where}): play A, reset to the "
                             "same start state, play B\n")
            try:
                _play(command, block, block.first, "A")
                _play(command, block, block.second, "B")
                preferred = _ask("preferred [a/b/t]: ", ("a", "b", "t"))
                progress_a = int(_ask("progress of A [0-100]: ", number=True))
                progress_b = int(_ask("progress of B [0-100]: ", number=True))
                note = _ask("note (optional): ")
            except (EOFError, KeyboardInterrupt):
                kept = len(session.results())
                sys.stdout.write(f"\nstopped; {kept} block(s) kept. Resume with: evalband "
                                 f"prefer run {session_id}\n")
                return
            session.record(block.index, preferred, progress_a, progress_b, note=note or None)
        sys.stdout.write(f"all {total} blocks recorded; analyze with: evalband prefer analyze "
                         f"{session_id}\n")


@prefer_app.command("record")
def record(
    session_id: str = typer.Argument(..., help="The preference session."),
    block: int = typer.Argument(..., help="The block (0-based)."),
    preferred: str = typer.Option(..., "--preferred", help="A, B or tie."),
    progress_a: int = typer.Option(..., "--progress-a", help="A's progress, 0-100."),
    progress_b: int = typer.Option(..., "--progress-b", help="B's progress, 0-100."),
    note: str | None = typer.Option(None, "--note", help="A note."),
    store: Path | None = STORE_OPTION,
) -> None:
    """Record one block without the prompt (scripts, a console)."""
    from evalband.session._preference import PreferenceSession
    from evalband.store import open_store

    with open_store(existing_store(store)) as st:
        PreferenceSession(st, session_id).record(block, preferred, progress_a, progress_b,
                                                 note=note)


@prefer_app.command("undo")
def undo(session_id: str = typer.Argument(..., help="The preference session."),
         store: Path | None = STORE_OPTION) -> None:
    """Take back the block recorded last."""
    from evalband.session._preference import PreferenceSession
    from evalband.store import open_store

    with open_store(existing_store(store)) as st:
        last = PreferenceSession(st, session_id).undo_last()
    console.print("nothing to undo" if last is None else f"block {last.block} taken back",
                  markup=False)


@prefer_app.command("analyze")
def analyze(
    session_id: str = typer.Argument(..., help="The preference session."),
    store: Path | None = STORE_OPTION,
    confidence: float = typer.Option(0.95, "--confidence", "-c", help="Joint level."),
    md: Path | None = typer.Option(None, "--md", help="Also write Markdown here."),
    html: Path | None = typer.Option(None, "--html", help="Also write an HTML page here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Bradley-Terry strengths with intervals, rank sets and tiers, the task check."""
    from evalband.cli._rank import write_outputs
    from evalband.report._preference import (
        preference_document,
        preference_html,
        preference_lines,
        preference_markdown,
    )
    from evalband.session._preference import PreferenceSession
    from evalband.session._preference_analysis import analyze_preferences
    from evalband.store import open_store

    with open_store(store_path(store), read_only=True) as st:
        session = PreferenceSession(st, session_id)
        result = analyze_preferences(session.plan, session.results(), confidence=confidence)
    write_outputs(preference_markdown(result) if md else None,
                  preference_html(result) if html else None, md, html, quiet=as_json)
    if as_json:
        emit_json(preference_document(result))
        return
    for line in preference_lines(result):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``prefer`` group to ``app``."""
    app.add_typer(prefer_app, name="prefer")
