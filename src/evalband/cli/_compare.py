"""``evalband compare``: slices first, aggregate last, one verdict carried by the exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["register", "render_comparisons"]


def render_comparisons(results: list[Comparison]) -> None:
    """Print comparisons: rich tables on a terminal, plain text otherwise (regressions red)."""
    from evalband.report import comparison_renderables

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
        None, "--report", help="Also write the HTML report (plots, no network) here."
    ),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    effect: float = typer.Option(
        0.10, "--effect", help="The drop in success rate (0.10 = 10 points) that the power "
        "statements are computed for; never the observed difference."),
    sequential: bool = typer.Option(
        False, "--sequential", help="The anytime-valid verdict (valid however often you look; "
        "tuned to --effect) instead of the fixed-n one."),
    max_pairs: int | None = typer.Option(
        None, "--max-pairs", help="With --sequential: the declared maximum of pairs per slice "
        "(default: the slice's planned pairs)."),
    discordant: float | None = typer.Option(
        None, "--discordant", help="With --sequential: the design's probability that a "
        "matched pair disagrees (default: the largest independent episodes can have at "
        "this effect)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare candidate run(s) against a baseline, slices first.

    Exit status: 0 improves, 3 no regression, 4 regression, 5 inconclusive or not
    comparable; 2 is bad input.
    """
    from evalband import load_run
    from evalband.analysis import VERDICT_EXIT_CODES, compare_many, worst_verdict
    from evalband.errors import InvalidInputError, PanelMismatchError
    from evalband.report import comparison_markdown
    from evalband.store import open_store

    if not 0 < effect < 1:
        raise InvalidInputError(f"--effect must be between 0 and 1 (a drop in rate); got {effect}")
    from evalband.cli._progress import work

    try:
        with work(f"comparing {', '.join(candidates)} with {baseline}",
                  enabled=not as_json) as step:
            with open_store(store_path(store), read_only=True) as st:
                base = load_run(baseline, st, step.stage(f"reading {baseline}"))
                cands = [load_run(c, st, step.stage(f"reading {c}")) for c in candidates]
                recorded = {c.run_id: (m.extra.get("sequential") or {}) if (
                    m := st.get_run(c.run_id)) is not None else {} for c in cands}
            if sequential:
                from evalband.analysis import compare_sequential, design_for

                results = [compare_sequential(
                    base, c, allow_panel_mismatch=allow_panel_mismatch, design=design_for(
                        base, recorded=recorded[c.run_id], effect=effect, confidence=confidence,
                        discordant=discordant, max_pairs=max_pairs))
                    for c in cands]
            else:
                results = compare_many(base, cands, allow_panel_mismatch=allow_panel_mismatch,
                                       confidence=confidence, effect=effect)
    except PanelMismatchError as exc:
        sys.stderr.write(f"not comparable: {exc}\n")
        raise typer.Exit(code=VERDICT_EXIT_CODES["inconclusive"]) from None
    peeking: list[str] = []
    if all(r.source == "store" for r in (base, *cands)):  # listed by `evalband view`
        from evalband.cli._peeking import check_and_record
        from evalband.errors import StoreError

        try:
            peeking = check_and_record(store_path(store), base, cands, confidence=confidence,
                                       allow_panel_mismatch=allow_panel_mismatch,
                                       sequential=sequential, results=results, effect=effect,
                                       max_pairs=max_pairs, discordant=discordant)
        except StoreError:
            peeking = []  # a store this user cannot write is still compared, just not listed
    if peeking:  # part of the result (stored with it): every renderer says it first
        from msgspec.structs import replace

        results = [replace(r, peeking=peeking) for r in results]
    if not as_json:
        for note in peeking:  # said first
            console.print(f"[bold yellow]{note}[/]", soft_wrap=True)
    if md is not None:
        md.write_text(comparison_markdown(results))
    if report is not None:
        from evalband.cli._report import write_html_report

        write_html_report([baseline, *candidates], store_path(store), report,
                          quiet=as_json, allow_panel_mismatch=allow_panel_mismatch,
                          confidence=confidence, sequential=sequential, comparisons=results)
    code = VERDICT_EXIT_CODES[worst_verdict(results)]
    if as_json:
        from evalband.report import comparison_document

        payload: dict[str, Any] = comparison_document(results[0]) if len(results) == 1 else {
            "schema": "evalband-comparisons/1",
            "comparisons": [comparison_document(c) for c in results],
            "verdict": worst_verdict(results),
            "exit_code": code,
        }
        payload["peeking"] = peeking
        emit_json(payload)
        raise typer.Exit(code=code)
    render_comparisons(results)
    raise typer.Exit(code=code)


def register(app: typer.Typer) -> None:
    """Attach the compare command to ``app``."""
    app.command("compare")(compare)
