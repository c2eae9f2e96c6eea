"""``evalband compare``: slices first, aggregate last, one verdict carried by the exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from evalband.cli._common import (
    JSON_OPTION,
    SCORER_OPTION,
    STORE_OPTION,
    SUCCESS_AT_OPTION,
    check_scorer_options,
    console,
    emit_json,
    store_path,
)

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["register", "render_comparisons"]


def render_comparisons(results: list[Comparison]) -> None:
    """Print comparisons: rich tables on a terminal, plain text otherwise (regressions red)."""
    from evalband.report._terminal import comparison_renderables

    for c in results:
        for item in comparison_renderables(c, plain=not sys.stdout.isatty()):
            console.print(item)


def compare(
    baseline: str = typer.Argument(..., help="Baseline run id or artifact-bundle path."),
    candidates: list[str] = typer.Argument(..., help="Candidate run id(s) or bundle path(s)."),
    store: Path | None = STORE_OPTION,
    allow_panel_mismatch: bool = typer.Option(
        False, "--allow-panel-mismatch", help="Compare runs of different panels anyway."
    ),
    md: Path | None = typer.Option(None, "--md", help="Also write a Markdown summary here."),
    report: Path | None = typer.Option(
        None, "--report", help="Also write the report here: HTML (plots, no network), or "
        "Markdown for a .md file."),
    confidence: float | None = typer.Option(
        None, "--confidence", "-c", help="One minus the family-wise error (default 0.95; with "
        "--sequential, the design's)."),
    effect: float | None = typer.Option(
        None, "--effect", help="The drop in success rate (0.10 = 10 points, the default) that "
        "the power statements are computed for; never the observed difference. With "
        "--sequential it would change the design: refused unless --exploratory."),
    sequential: bool = typer.Option(
        False, "--sequential", help="The anytime-valid verdict (valid however often you look) "
        "under the design fixed before the data: the candidate's run --until-decided record, "
        "else the panel's design block, else the default (a 10-point drop; the exact power it "
        "has is printed). Exit 6 when it stopped for futility."),
    max_pairs: int | None = typer.Option(
        None, "--max-pairs", min=1, help="With --sequential --exploratory: a maximum of pairs per "
        "slice."),
    discordant: float | None = typer.Option(
        None, "--discordant", help="With --sequential --exploratory: the design's probability "
        "that a matched pair disagrees."),
    power: float | None = typer.Option(
        None, "--power", help="With --sequential --exploratory: the design's target power."),
    exploratory: bool = typer.Option(
        False, "--exploratory", help="With --sequential: accept a design chosen now, after the "
        "data (--effect, --discordant, --max-pairs, --power, --confidence); the output says "
        "first that its error rate does not hold."),
    scorer: str | None = SCORER_OPTION,
    success_at: float | None = SUCCESS_AT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare candidate run(s) against a baseline, slices first.

    Exit status: 0 improves, 3 no regression, 4 regression, 5 inconclusive or not
    comparable; with --sequential 6 when it stopped for futility (a drop could not be shown
    within the maximum); 2 is bad input.
    """
    from evalband import load_run
    from evalband.analysis import compare_many
    from evalband.analysis._compare import check_distinct_runs
    from evalband.analysis._models import DEFAULT_EFFECT
    from evalband.analysis._verdicts import VERDICT_EXIT_CODES
    from evalband.errors import PanelMismatchError
    from evalband.report._data import open_for

    at = _refuse_bad_options(effect=effect, sequential=sequential, exploratory=exploratory,
                             power=power, discordant=discordant, max_pairs=max_pairs,
                             scorer=scorer, success_at=success_at, report=report)
    explicit_confidence = confidence
    confidence = 0.95 if confidence is None else confidence
    from evalband.cli._progress import work

    designs: list[Any] = []
    try:
        with work(f"comparing {', '.join(candidates)} with {baseline}",
                  enabled=not as_json) as step:
            with open_for(store_path(store), [baseline, *candidates]) as st:
                base = load_run(baseline, st, step.stage(f"reading {baseline}"))
                cands = [load_run(c, st, step.stage(f"reading {c}")) for c in candidates]
                check_distinct_runs([base, *cands], "compare the baseline with different "
                                    "candidate runs, each given once")
                recorded = {c.run_id: (m.extra.get("sequential") or {}) if st is not None and (
                    m := st.get_run(c.run_id)) is not None else {} for c in cands}
                judged_by = None
                own = (base, cands)
                if scorer is not None:  # the same episodes, judged by the named scorer
                    from evalband._rescore import judge_runs

                    (base, *cands), judged_by = judge_runs([base, *cands], scorer,
                                                          success_at=at)
            if sequential:
                from evalband.analysis import compare_sequential
                from evalband.analysis._sequential_plan import design_for

                designs = [design_for(base, recorded=recorded[c.run_id], candidate=c,
                                      effect=effect, confidence=explicit_confidence,
                                      power=power, discordant=discordant, max_pairs=max_pairs,
                                      exploratory=exploratory) for c in cands]
                results = [compare_sequential(base, c, allow_panel_mismatch=allow_panel_mismatch,
                                              design=d) for c, d in zip(cands, designs,
                                                                        strict=True)]
            else:
                results = compare_many(base, cands, allow_panel_mismatch=allow_panel_mismatch,
                                       confidence=confidence,
                                       effect=DEFAULT_EFFECT if effect is None else effect)
    except PanelMismatchError as exc:
        from evalband.cli._errors import error_line

        sys.stderr.write(f"not comparable: {error_line(exc)}\n")
        raise typer.Exit(code=VERDICT_EXIT_CODES["inconclusive"]) from None
    if judged_by is not None:
        from evalband._rescore import judged_comparisons

        results = judged_comparisons(results, judged_by)
    notices = _exploratory_notices(designs)
    from evalband.recording import record_comparison

    done = record_comparison(store_path(store), *own, results=results, notices=notices,
                             confidence=confidence, allow_panel_mismatch=allow_panel_mismatch,
                             sequential=sequential, effect=effect, max_pairs=max_pairs,
                             discordant=discordant, scorer=scorer, success_at=at)
    results, peeking = list(done.comparisons), list(done.notes)
    _write_documents(results, peeking, md=md, report=report, runs=[baseline, *candidates],
                     store=store_path(store), as_json=as_json,
                     allow_panel_mismatch=allow_panel_mismatch, confidence=confidence,
                     sequential=sequential)
    code = _exit_code(results, sequential=sequential)
    if as_json:
        _emit_json(results, peeking, code)
        raise typer.Exit(code=code)
    render_comparisons(results)
    raise typer.Exit(code=code)



def _refuse_bad_options(*, effect: float | None, sequential: bool, exploratory: bool,
                        power: float | None, discordant: float | None, max_pairs: int | None,
                        scorer: str | None, success_at: float | None,
                        report: Path | None) -> float:
    """Options that do not go together, refused in one line each (exit 2).

    Returns the ``--success-at`` to use (1 when not given).
    """
    from evalband.errors import InvalidInputError

    if effect is not None and not 0 < effect < 1:
        raise InvalidInputError(f"--effect must be between 0 and 1 (a drop in rate); got {effect}")
    if not sequential and (exploratory or power is not None or discordant is not None
                           or max_pairs is not None):
        raise InvalidInputError("--exploratory, --power, --discordant and --max-pairs go with "
                                "--sequential; add it, or drop them")
    at = check_scorer_options(scorer, success_at)
    if scorer is not None and report is not None:
        raise InvalidInputError("--report renders the runs' own outcomes; for a report judged "
                                "by a scorer, store the runs with `evalband rescore RUN "
                                "--scorer NAME --run-id NEW` and report those")
    return at


def _write_documents(results: list[Any], peeking: list[str], *, md: Path | None,
                     report: Path | None, runs: list[str], store: Path, as_json: bool,
                     allow_panel_mismatch: bool, confidence: float, sequential: bool) -> None:
    """The peeking notes (said first), then the Markdown and HTML documents asked for."""
    if not as_json:
        for note in peeking:  # said first
            console.print(f"[bold yellow]{note}[/]", soft_wrap=True)
    if md is not None:
        from evalband.cli._rank import write_outputs
        from evalband.report import comparison_markdown

        write_outputs(comparison_markdown(results), None, md, None, quiet=as_json)
    if report is not None:
        from evalband.cli._report import write_report_option

        write_report_option(runs, store, report,
                            quiet=as_json, allow_panel_mismatch=allow_panel_mismatch,
                            confidence=confidence, sequential=sequential, comparisons=results)


def _exploratory_notices(designs: list[Any]) -> list[str]:
    """The one notice that a sequential design was chosen after the data, if one was."""
    if not designs:
        return []
    from evalband.analysis._sequential_outcome import exploratory_notice

    return [exploratory_notice(d) for d in designs if d.source == "exploratory"][:1]


def _exit_code(results: list[Any], *, sequential: bool) -> int:
    """The verdict's exit status (a sequential comparison's: its stopping decision's)."""
    from evalband.analysis._compare import worst_verdict
    from evalband.analysis._verdicts import VERDICT_EXIT_CODES

    if sequential:
        from evalband.analysis._sequential_outcome import overall_decision, sequential_exit_code

        return sequential_exit_code([overall_decision(r) for r in results])
    return VERDICT_EXIT_CODES[worst_verdict(results)]


def register(app: typer.Typer) -> None:
    """Attach the compare command to ``app``."""
    app.command("compare")(compare)


def _emit_json(results: list[Any], peeking: list[str], code: int) -> None:
    """Print the comparison(s) as JSON (one document, or a list with the worst verdict)."""
    from evalband.analysis._compare import worst_verdict
    from evalband.report import comparison_document

    payload: dict[str, Any] = comparison_document(results[0]) if len(results) == 1 else {
        "schema": "evalband-comparisons/1",
        "comparisons": [comparison_document(c) for c in results],
        "verdict": worst_verdict(results),
        "exit_code": code,
    }
    payload["peeking"] = peeking
    emit_json(payload)
