"""``evalband compare``: slices first, aggregate last, one verdict carried by the exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["register", "render_comparisons"]

_STYLE = {"improved": "green", "regressed": "bold red", "inconclusive": "yellow",
          "non-inferior": "cyan"}


def render_comparisons(results: list[Comparison]) -> None:
    """Print comparisons as rich tables: slices first, aggregate last, the verdict."""
    from evalband.report._markdown import fmt_delta, fmt_rate, verdict_text

    for c in results:
        if c.panel_mismatch:
            console.print("[bold red]PANEL MISMATCH[/]: these runs were made on different panels")
        table = Table(title=f"{c.candidate} ({c.candidate_policy}) vs {c.baseline} "
                      f"({c.baseline_policy}) - slices first")
        for col in ("slice", "n", "baseline", "candidate", "delta points", "p", "Holm p",
                    "verdict"):
            table.add_column(col)
        for row in c.slice_rows:
            style = _STYLE.get(row.verdict, "")
            verdict = verdict_text(row)
            table.add_row(
                row.name, f"{row.n_baseline}/{row.n_candidate}", fmt_rate(row.rate_baseline),
                fmt_rate(row.rate_candidate), fmt_delta(row.delta),
                "-" if row.p_value is None else f"{row.p_value:.3g}",
                "-" if row.p_holm is None else f"{row.p_holm:.3g}",
                f"[{style}]{verdict}[/]" if style else verdict,
            )
        console.print(table)
        for row in c.slice_rows:
            if row.pairing == "paired" and row.kind in ("all", "factor"):
                p = row.pairs
                console.print(f"{row.name}: both {p['both']}, baseline-only "
                              f"{p['baseline_only']}, candidate-only {p['candidate_only']}, "
                              f"neither {p['neither']}")
        agg = c.aggregate
        console.print(
            f"aggregate (last): delta J = {100 * agg.delta:+.1f} points "
            f"[{100 * agg.low:+.1f}, {100 * agg.high:+.1f}], {agg.method}"
        )
        if c.hidden_regressions:
            console.print(f"[bold red]hidden regression[/]: {', '.join(c.hidden_regressions)} "
                          "regressed while the aggregate does not show it")
        for note in c.notes:
            console.print(f"note: {note}")
        console.print(f"verdict: {c.sentence}")


def compare(
    baseline: str = typer.Argument(..., help="Baseline run id or artifact-bundle path."),
    candidates: list[str] = typer.Argument(..., help="Candidate run id(s) or bundle path(s)."),
    store: Path | None = STORE_OPTION,
    allow_panel_mismatch: bool = typer.Option(
        False, "--allow-panel-mismatch", help="Compare runs of different panels anyway."
    ),
    md: Path | None = typer.Option(None, "--md", help="Also write a Markdown summary here."),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare candidate run(s) against a baseline, slices first.

    Exit status: 0 improves, 3 no regression, 4 regression, 5 inconclusive or not
    comparable; 2 is bad input.
    """
    from evalband._api import load_run
    from evalband.analysis import VERDICT_EXIT_CODES, compare_many, worst_verdict
    from evalband.errors import PanelMismatchError
    from evalband.report import comparison_markdown
    from evalband.store import open_store

    with open_store(store_path(store)) as st:
        base = load_run(baseline, st)
        cands = [load_run(c, st) for c in candidates]
    try:
        results = compare_many(base, cands, allow_panel_mismatch=allow_panel_mismatch,
                               confidence=confidence)
    except PanelMismatchError as exc:
        sys.stderr.write(f"not comparable: {exc}\n")
        raise typer.Exit(code=VERDICT_EXIT_CODES["inconclusive"]) from None
    if md is not None:
        md.write_text(comparison_markdown(results))
    code = VERDICT_EXIT_CODES[worst_verdict(results)]
    if as_json:
        payload = results[0].as_dict() if len(results) == 1 else {
            "schema": "evalband-comparisons/1",
            "comparisons": [c.as_dict() for c in results],
            "verdict": worst_verdict(results),
            "exit_code": code,
        }
        emit_json(payload)
        raise typer.Exit(code=code)
    render_comparisons(results)
    raise typer.Exit(code=code)


def register(app: typer.Typer) -> None:
    """Attach the compare command to ``app``."""
    app.command("compare")(compare)
