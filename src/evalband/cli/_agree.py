"""``evalband agree``: a cheap ranking (offline metrics, simulation) against behaviour."""

from __future__ import annotations

from pathlib import Path

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

__all__ = ["register"]


def agree(
    refs: list[str] = typer.Argument(
        ..., help="The behavioural runs (one per checkpoint) or one session id."),
    store: Path | None = STORE_OPTION,
    metrics_csv: Path | None = typer.Option(
        None, "--csv", help="Cheap metrics per checkpoint: a 'checkpoint' column (run id, "
        "policy or step) and one column per metric (evalband offline --csv writes one)."),
    sim: list[str] | None = typer.Option(
        None, "--sim", help="A simulation run per behavioural run, in the same order "
        "(repeat the option)."),
    higher: list[str] | None = typer.Option(
        None, "--higher-is-better", help="A metric column whose higher values are better."),
    lower: list[str] | None = typer.Option(
        None, "--lower-is-better", help="A metric column whose lower values are better "
        "(default for names with loss or error)."),
    confidence: float = typer.Option(0.95, "--confidence", "-c", help="Joint level."),
    reps: int = typer.Option(2000, "--reps", min=100, help="Bootstrap replicates."),
    md: Path | None = typer.Option(None, "--md", help="Also write Markdown here."),
    html: Path | None = typer.Option(None, "--html", help="Also write an HTML page here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Whether a cheap ranking agrees with the behavioural one, with its noise on both sides."""
    from evalband import load_run
    from evalband.analysis import agree_runs
    from evalband.analysis._agree import read_metric_csv
    from evalband.cli._progress import work
    from evalband.cli._rank import load_ranked, write_outputs
    from evalband.errors import InvalidInputError
    from evalband.report._agree import agreement_html, agreement_lines, agreement_markdown
    from evalband.store import open_store

    if (metrics_csv is None) == (not sim):
        raise InvalidInputError("give the cheap side once: --csv FILE or --sim RUN (one per "
                                "behavioural run)", parameters=("csv",))
    if sim:  # the cheap side is the simulation's success rate: higher is better, no columns
        from evalband.cli._out import refuse_ignored

        refuse_ignored([flag for flag, given in (("--higher-is-better", higher),
                                                 ("--lower-is-better", lower)) if given],
                       "--csv", "they name columns of the metrics CSV; --sim ranks by "
                       "simulation success")
    both = sorted(set(higher or []) & set(lower or []))
    if both:
        raise InvalidInputError(f"{', '.join(both)} is given to both --higher-is-better and "
                                "--lower-is-better; give each column one direction")
    directions = {**dict.fromkeys(higher or [], True), **dict.fromkeys(lower or [], False)}
    cheap = read_metric_csv(metrics_csv) if metrics_csv is not None else None
    unknown = sorted(set(directions) - set(cheap or {})) if cheap is not None else []
    if unknown:
        raise InvalidInputError(f"no metric column {', '.join(unknown)} in {metrics_csv}; "
                                f"columns: {', '.join(sorted(cheap or {}))}")
    with work("agreement", enabled=not as_json) as step, \
            open_store(store_path(store), read_only=True) as st:
        runs, steps, session_id = load_ranked(refs, st, step)
        sims = [load_run(s, st) for s in sim] if sim else None
        result = agree_runs(runs, cheap=cheap, cheap_runs=sims, steps=steps,
                            higher_is_better=directions, confidence=confidence,
                            metric="unaided" if session_id else "success",
                            cluster="cell" if session_id else None, session_id=session_id,
                            reps=reps)
    write_outputs(agreement_markdown(result) if md else None,
                  agreement_html(result) if html else None, md, html, quiet=as_json)
    if as_json:
        emit_json(result.as_dict())
        return
    for line in agreement_lines(result):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the agree command to ``app``."""
    app.command("agree")(agree)
