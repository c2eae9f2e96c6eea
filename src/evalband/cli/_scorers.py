"""``evalband label`` and ``evalband agreement``: more than one scorer per episode."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = ["register"]


def agreement(
    run_id: str = typer.Argument(..., help="The run whose episodes the scorers judged."),
    scorers: str | None = typer.Option(
        None, "--scorers", help="TRUSTED,CHEAP: two scorer names (success, unaided, score, "
        "suggestion, truth, or a stored one). Without it: the scorers the run has."),
    confidence: float | None = typer.Option(
        None, "--confidence", "-c", help="Interval level, with --scorers (default 0.95)."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Agreement of two scorers on one run's episodes (accuracy, Cohen's kappa, the table) and PPI.

    Where the first (trusted) scorer judged only some of the episodes the second (cheap) one
    judged, the trusted scorer's rate over all of them is estimated by prediction-powered
    inference (Angelopoulos et al. 2023), beside the trusted labels' own interval.
    """
    from evalband import load_run
    from evalband.analysis._scorers import scorer_agreement, scorers_of
    from evalband.cli._common import read_store
    from evalband.cli._out import refuse_ignored
    from evalband.errors import InvalidInputError
    from evalband.report._scorers import scorer_agreement_lines, scorers_lines

    refuse_ignored(["--confidence"] if confidence is not None and scorers is None else [],
                   "--scorers TRUSTED,CHEAP", "without it the run's scorers are listed")
    names = None
    if scorers is not None:
        names = [s.strip() for s in scorers.split(",")]
        if len(names) != 2 or not all(names):
            raise InvalidInputError(f"--scorers takes two names, TRUSTED,CHEAP (e.g. "
                                    f"human,success); got {scorers!r}", parameters=("scorers",))
    with read_store(store) as st:
        run = load_run(run_id, st)
        records = list(run.records)
    if names is None:
        found = scorers_of(records)
        if as_json:
            emit_json({"run_id": run_id, "scorers": found})
            return
        lines = scorers_lines(run_id, found)
    else:
        result = scorer_agreement(records, names[0], names[1], run_id=run_id,
                                  confidence=0.95 if confidence is None else confidence)
        if as_json:
            emit_json(result.as_dict())
            return
        lines = scorer_agreement_lines(result)
    for line in lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def label(
    run_id: str = typer.Argument(..., help="The run to label."),
    labels: Path = typer.Argument(..., help="CSV or JSON lines: episode, optional cell and "
                                  "repeat, and a value column (a number or success/failure)."),
    scorer: str = typer.Option(..., "--scorer", help="The scorer's name (e.g. human, judge)."),
    source: str = typer.Option(..., "--source", help="Who or what judged (e.g. operator, "
                               "gpt-4o-judge, imported)."),
    column: str | None = typer.Option(None, "--column", help="The value column (default: the "
                                      "scorer's name, else 'value')."),
    replace: bool = typer.Option(False, "--replace", help="Overwrite labels of this scorer "
                                 "already stored."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Add a named scorer's labels (a human, a model judge, an import) to a run."""
    from evalband.store._scores import add_scores, read_labels

    values = read_labels(labels, column, scorer=scorer)
    with _existing_store(store) as st:
        n = add_scores(st, run_id, scorer, source, values, replace=replace)
    if as_json:
        emit_json({"run_id": run_id, "scorer": scorer, "source": source, "episodes": n})
        return
    console.print(f"run {run_id}: scorer {scorer!r} ({source}) stored on {n} episode(s)",
                  markup=False, highlight=False)


def rescore(
    run_id: str = typer.Argument(..., help="The run whose episodes a scorer judged."),
    scorer: str = typer.Option(..., "--scorer", help="The scorer whose verdict becomes the "
                               "outcome (e.g. human, judge, score)."),
    new_run_id: str = typer.Option(..., "--run-id", help="Id of the new run."),
    success_at: float = typer.Option(1.0, "--success-at", help="A value at least this is a "
                                     "success (an ordinal score: the rubric level)."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Store a run judged by another scorer (its verdict as the outcome), for compare and rank."""
    from evalband import rescore_run
    from evalband.cli._common import check_scorer_options

    check_scorer_options(scorer, success_at)
    with _existing_store(store) as st:
        done = rescore_run(st, run_id, scorer, new_run_id, success_at=success_at)
    if as_json:
        emit_json(dict(done.__dict__))
        return
    console.print(
        f"stored run {done.run_id}: {done.episodes} episodes of {done.rescored_from} judged by "
        f"{done.scorer} ({done.source}), {done.changed} outcome(s) changed"
        + (f"; {done.left_out} episode(s) it did not judge left out" if done.left_out else ""),
        markup=False, highlight=False)


def _existing_store(store: Path | None) -> RunStore:
    """The store for a command that changes stored runs: it must exist (never created)."""
    from evalband.cli._common import existing_store
    from evalband.store import open_store

    return open_store(existing_store(store))


def register(app: typer.Typer) -> None:
    """Attach the agreement, label and rescore commands to ``app``."""
    app.command("agreement")(agreement)
    app.command("label")(label)
    app.command("rescore")(rescore)
