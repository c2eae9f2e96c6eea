"""``evalband rank``: many policies ranked with simultaneous rank sets (runs or a session)."""

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
    from evalband.analysis._compare import RunData
    from evalband.store import RunStore

__all__ = ["register", "load_ranked", "write_outputs"]


def load_ranked(
    refs: list[str], st: RunStore | None, progress: Any = None,
) -> tuple[list[RunData], list[int | None], str | None]:
    """The runs named (run ids or bundles), or one session's runs; their steps; the session.

    A single reference that is a session id (and no run id) stands for the session's
    policies, one run each. ``st`` is ``None`` when every reference is a bundle and no store
    exists.
    """
    from evalband import load_run
    from evalband.session import SessionStore

    session_id = None
    if st is not None and len(refs) == 1 and st.get_run(refs[0]) is None:
        ss = SessionStore(st)
        if refs[0] in ss.session_ids():
            session_id = refs[0]
            refs = list(ss.run_ids(session_id).values())
    runs = [load_run(ref, st, None if progress is None else progress.stage(f"reading {ref}"))
            for ref in refs]
    steps = []
    for run in runs:
        manifest = st.get_run(run.run_id) if st is not None and run.source == "store" else None
        steps.append(None if manifest is None else manifest.step)
    return runs, steps, session_id


def write_outputs(md_text: str | None, html_text: str | None, md: Path | None,
                  html: Path | None, *, quiet: bool) -> None:
    """Write the HTML and Markdown renderings where asked (folders created); say each.

    Every file a command writes where asked (``--md``, ``--html``, ``--report``, ``--csv``)
    goes through here, is written whole or not at all (``write_text_whole``: Ctrl-C leaves
    no half page), and is announced as ``wrote PATH``: on stdout, or on stderr when
    ``quiet`` (``--json``: stdout holds the JSON alone).
    """
    from evalband._util.files import write_text_whole

    for path, text in ((html, html_text), (md, md_text)):
        if path is not None and text is not None:
            write_text_whole(path, text)
            (sys.stderr if quiet else sys.stdout).write(f"wrote {path}\n")


def rank(
    refs: list[str] = typer.Argument(
        ..., help="Run ids or bundle paths (two or more), or one session id."),
    store: Path | None = STORE_OPTION,
    metric: str = typer.Option(
        "success", "--metric", "-m",
        help="success, unaided, score or metrics.NAME (default for a session: unaided)."),
    lower_is_better: bool = typer.Option(
        False, "--lower-is-better", help="The metric is a loss or a time."),
    confidence: float = typer.Option(
        0.95, "--confidence", "-c", help="Joint level of the rank sets of all policies."),
    unpaired: bool = typer.Option(
        False, "--unpaired", help="Ignore the pairing of matched episodes (Fisher's test)."),
    cluster: str | None = typer.Option(
        None, "--cluster", help="cell or condition: matched episodes sharing it are one unit "
        "(a session's scenes are clustered by default)."),
    slices: str | None = typer.Option(
        None, "--slices", help="Also rank within each value of this panel factor."),
    effect: float | None = typer.Option(
        None, "--effect", help="The gap, in (0, 1) (0.10 = 10 points), the separation cost is "
        "planned for (default: the observed gap, a planning guess)."),
    by: str | None = typer.Option(
        None, "--by", help="step: the runs are checkpoints of one training run (a sweep)."),
    allow_panel_mismatch: bool = typer.Option(
        False, "--allow-panel-mismatch", help="Rank runs of different panels (unpaired)."),
    md: Path | None = typer.Option(None, "--md", help="Also write Markdown here."),
    html: Path | None = typer.Option(
        None, "--html", help="Also write an HTML page (rank-interval plot) here."),
    scorer: str | None = SCORER_OPTION,
    success_at: float | None = SUCCESS_AT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Rank policies by success rate (or a metric) with simultaneous rank sets and tiers."""
    from evalband.errors import InvalidInputError

    at = check_scorer_options(scorer, success_at)
    if effect is not None:
        from evalband._util.validate import check_probability

        check_probability(effect, "--effect", open_interval=True)
    if scorer is not None and by is not None:
        raise InvalidInputError("--scorer ranks stored runs by a scorer; --by step reads a "
                                "sweep's own outcomes: drop one of them")

    if by is not None:
        if by != "step":
            raise InvalidInputError(f"--by takes step (a checkpoint sweep); got {by!r}",
                                    parameters=("by",))
        from evalband.cli._sweep import sweep_command

        sweep_command(refs, store=store, metric=metric, confidence=confidence, md=md,
                      html=html, as_json=as_json)
        return
    from evalband.analysis import rank_runs
    from evalband.cli._progress import work
    from evalband.report._data import open_for
    from evalband.report._ranking import ranking_html, ranking_lines, ranking_markdown

    with work("ranking", enabled=not as_json) as step, \
            open_for(store_path(store), refs) as st:
        runs, steps, session_id = load_ranked(refs, st, step)
        if session_id is None and len(runs) < 2:
            raise InvalidInputError(f"rank ranks two or more runs: give two or more run ids "
                                    f"(or bundle paths), or one session id; got one: {refs[0]}")
        judged_by = None
        if scorer is not None:  # the same episodes, judged by the named scorer
            from evalband._rescore import judge_runs

            runs, judged_by = judge_runs(runs, scorer, success_at=at)
        if session_id is not None:
            metric = "unaided" if metric == "success" else metric
            cluster = "cell" if cluster is None else cluster
        result = rank_runs(runs, metric=metric, higher_is_better=not lower_is_better,
                           confidence=confidence, paired=False if unpaired else None,
                           cluster=None if cluster == "none" else cluster, slices=slices,
                           effect=effect, allow_panel_mismatch=allow_panel_mismatch,
                           steps=steps, session_id=session_id)
    write_outputs(ranking_markdown(result) if md else None,
                  ranking_html(result) if html else None, md, html, quiet=as_json)
    if as_json:
        from evalband.analysis._models import to_wire

        emit_json({**result.as_dict(),
                   **({"scorer": to_wire(judged_by)} if judged_by is not None else {})})
        return
    if judged_by is not None:
        from evalband._rescore import judged_note

        console.print(f"note: {judged_note(judged_by)}", soft_wrap=True, markup=False,
                      highlight=False)
    for line in ranking_lines(result):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the rank command to ``app``."""
    app.command("rank")(rank)
