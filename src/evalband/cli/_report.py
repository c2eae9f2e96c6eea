"""``evalband report``: the HTML report (plots, no network) and the Markdown summary."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, emit_json, store_path

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["register", "default_report_path", "report_option", "write_report_option",
           "cli_command"]


def cli_command() -> str:
    """The command line as typed (recorded in the report's reproducibility block)."""
    return "evalband " + shlex.join(sys.argv[1:])


def default_report_path(sources: Sequence[str]) -> Path:
    """``report-<run>.html``, or ``report-<candidate>-vs-<baseline>.html``, in this folder.

    >>> default_report_path(["base", "cand"]).name
    'report-cand-vs-base.html'
    >>> default_report_path(["runs/my bundle/"]).name
    'report-my_bundle.html'
    """
    names = [re.sub(r"[^A-Za-z0-9._-]+", "_", Path(s).name or str(s)).strip("_") or "run"
             for s in sources]
    slug = names[0] if len(names) == 1 else f"{names[1]}-vs-{names[0]}"
    if len(names) > 2:
        slug += f"-and-{len(names) - 2}-more"
    return Path(f"report-{slug[:120]}.html")


def report_option(path: Path) -> dict[str, Path]:
    """Where a ``--report FILE`` goes: Markdown for a ``.md`` file, else the HTML page.

    >>> [list(report_option(Path(name))) for name in ("r.md", "r.html", "r")]
    [['md'], ['html'], ['html']]
    """
    return {"md" if path.suffix.lower() in (".md", ".markdown") else "html": path}


def write_report_option(
    sources: Sequence[str],
    store: Path,
    path: Path,
    *,
    quiet: bool = False,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    sequential: bool = False,
    comparisons: Sequence[Comparison] | None = None,
) -> None:
    """Write the report of ``--report FILE`` (``report --md``'s summary for a ``.md`` file).

    Said as every written file is (``write_outputs``; stderr when ``quiet``).
    ``comparisons``: the ones the command just computed (rendered, not computed again).
    """
    from evalband.cli._rank import write_outputs
    from evalband.report._write import render_report

    where = report_option(path)
    html_text, md_text = render_report(
        list(sources), store, html="html" in where, md="md" in where, command=cli_command(),
        allow_panel_mismatch=allow_panel_mismatch, confidence=confidence,
        sequential=sequential, comparisons=comparisons)
    write_outputs(md_text, html_text, where.get("md"), where.get("html"), quiet=quiet)


def report(
    sources: list[str] = typer.Argument(
        ..., help="Run id(s) or artifact-bundle path(s); with several, the first is the baseline."
    ),
    html: Path | None = typer.Option(None, "--html", help="Write the HTML report here."),
    md: Path | None = typer.Option(None, "--md", help="Write the Markdown summary here."),
    allow_panel_mismatch: bool = typer.Option(
        False, "--allow-panel-mismatch", help="Compare runs of different panels anyway."
    ),
    confidence: float = typer.Option(0.95, "--confidence", "-c", help="Interval level."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a self-contained HTML report (and/or Markdown) for a run or a comparison.

    With neither --html nor --md, the HTML goes to report-RUN.html (or
    report-CANDIDATE-vs-BASELINE.html) in the current directory.
    """
    from evalband.cli._rank import write_outputs
    from evalband.report._write import render_report

    if html is None and md is None:
        html = default_report_path(sources)
    from evalband.cli._progress import work

    with work(f"writing the report of {', '.join(sources)}", enabled=not as_json) as step:
        html_text, md_text = render_report(
            sources, store_path(store), html=html is not None, md=md is not None,
            command=cli_command(), allow_panel_mismatch=allow_panel_mismatch,
            confidence=confidence,
            progress=lambda label, done, total: step.update(done, total, label))
    write_outputs(md_text, html_text, md, html, quiet=as_json)
    if as_json:
        emit_json({"html": str(html) if html is not None else None,
                   "md": str(md) if md is not None else None})


def register(app: typer.Typer) -> None:
    """Attach the report command to ``app``."""
    app.command("report")(report)
