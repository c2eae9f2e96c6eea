"""GitHub-flavoured Markdown for a comparison: verdict, slice table, aggregate last."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalband.report import _format as fmt
from evalband.report._table import filled, headings, is_sequential, markdown_columns
from evalband.report._words import comparison_sentence, look

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.report._data import ReportData, RunView
    from evalband.store import RunStore

__all__ = [
    "comparison_markdown",
    "metric_markdown",
    "run_markdown",
    "run_verdict_text",
    "report_markdown",
    "render_markdown",
]


def comparison_markdown(comparisons: Sequence[Comparison],
                        columns: Sequence[str] | None = None) -> str:
    """Markdown for one or more comparisons against one baseline, slices first.

    ``columns`` keeps only the slice-table columns of these keys (see
    :data:`evalband.report._table.COLUMNS`); all by default.
    """
    shown = markdown_columns(filled(columns, comparisons))
    lines: list[str] = []
    for c in comparisons:
        for note in c.peeking:  # said first
            lines.append(f"> **{note}**\n")
        if c.panel_mismatch:
            lines.append("> **Panel mismatch**: these runs were made on different panels.\n")
        lines.append(f"## {md(c.candidate_policy)} vs {md(c.baseline_policy)}: "
                     f"**{look(c.verdict).word}**\n")
        lines.append(comparison_sentence(c) + "\n")
        lines.append(f"Panel {md_code(c.panel_name)} (`{c.panel_fingerprint[:12]}`); runs "
                     f"{md_code(c.baseline)} (baseline) and {md_code(c.candidate)} "
                     "(candidate).\n")
        words = vars(headings(c.confidence, is_sequential(c.slice_rows)))
        lines.append("| " + " | ".join(col.markdown.format_map(words) for col in shown
                                        if col.markdown) + " |")
        lines.append("|" + "---|" * len(shown))
        for row in c.slice_rows:
            lines.append("| " + " | ".join(md(col.text(row)) if col.kind == "name"
                                            else col.text(row) for col in shown) + " |")
        agg = c.aggregate
        lines.append("")
        lines.append(
            f"**Aggregate (last)**: ΔJ = {fmt.signed_points(agg.delta)} points "
            f"[{fmt.signed_points(agg.low)}, {fmt.signed_points(agg.high)}] ({agg.method}); "
            f"baseline {fmt.percent(agg.rate_baseline)}, candidate "
            f"{fmt.percent(agg.rate_candidate)}."
        )
        if c.hidden_regressions:
            lines.append(f"\n**Hidden regression**: {', '.join(map(md, c.hidden_regressions))} "
                         "regressed "
                         "while the aggregate does not show it.")
        if c.metrics:
            lines.extend(["", *metric_markdown(c)])
        for note in c.notes:
            lines.append(f"\n- {note}")
        lines.append("")
    return "\n".join(lines) + "\n"


def metric_markdown(c: Comparison) -> list[str]:
    """A comparison's metric table in Markdown lines (primary rows carry their verdict)."""
    from evalband.report._metrics import METRIC_HEADERS, metric_cells

    lines = ["**Metrics** (candidate - baseline; primary rows are decided with the slices, "
             "the others are descriptive):", "",
             "| " + " | ".join(METRIC_HEADERS) + " |", "|" + "---|" * len(METRIC_HEADERS)]
    for row in c.metrics:
        cells = metric_cells(row)  # names and reasons are text; the numbers are ours
        lines.append("| " + " | ".join(md(cell) if i in (0, 1, len(cells) - 1) else cell
                                        for i, cell in enumerate(cells)) + " |")
    from evalband.report._metrics import (
        LEVEL_DIFFERENCE_HEADERS,
        LEVEL_NOTE,
        level_difference_cells,
    )

    levels = [cells for row in c.metrics for cells in level_difference_cells(row)]
    if levels:
        lines += ["", "**Ordinal levels** (share at least at each level, candidate - baseline; "
                  "descriptive):", "", *_md_table(LEVEL_DIFFERENCE_HEADERS, levels),
                  "", f"_{md(LEVEL_NOTE)}_"]
    return lines


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines (the first two cells, a metric's and a slice's name, escaped)."""
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(md(cell) if i < 2 else cell for i, cell in enumerate(row))
              + " |" for row in rows)]


_MD_SPECIAL = str.maketrans({"\\": "\\\\", "|": "\\|", "*": "\\*", "`": "\\`",
                              "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;",
                              "\n": " ", "\r": " "})


def md(text: str) -> str:
    r"""A stored name as Markdown text: it shows as itself and cannot break a table or a line.

    A slice, policy or run name comes from the user (or an imported file): a ``|`` would
    end a table cell, a ``*`` start emphasis, ``<`` a tag. (``_`` inside a word is no markup.)

    >>> print(md("arm=a|b*<c>"))
    arm=a\|b\*&lt;c&gt;
    """
    return str(text).translate(_MD_SPECIAL)


def md_code(text: str) -> str:
    """A name as an inline code span, whatever backticks it holds (CommonMark's rule).

    >>> md_code("p"), md_code("a`b")
    ('`p`', '`` a`b ``')
    """
    text = str(text).replace("\n", " ")
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", text)) + 1)
    return f"{fence} {text} {fence}"


def _run_confidence(view: RunView) -> float:
    """The level of a run's bands (its summary's; 0.95 when it has no rate)."""
    return view.summary.rate.confidence if view.summary.rate else 0.95


def run_verdict_text(view: RunView) -> tuple[str, str, str]:
    """A single run's verdict: ``(css class, word, sentence)``."""
    s = view.summary
    c = s.counts
    if s.rate is None:
        return ("withheld", "no verdict", f"{view.run_id} has no counted episode "
                f"({s.n_attempted} attempted, {c.get('error', 0)} errors).")
    rate = s.rate
    sentence = (f"{view.run_id} ({view.data.policy}) succeeded in {s.successes} of {s.n} "
                f"counted episodes: {fmt.rate(rate)} "
                f"({int(round(100 * rate.confidence))}% Wilson band); "
                f"{c.get('failure', 0)} failures, {c.get('timeout', 0)} timeouts, "
                f"{c.get('error', 0)} errors. Mean time among successes: "
                f"{fmt.seconds(s.mean_time_to_success_s)}.")
    if s.verdict_withheld:
        return ("withheld", "verdict withheld",
                sentence + f" {c['error']} episode(s) errored: fix them, or count them as "
                "failures (--errors-as-failures), before reading this rate.")
    return ("run", f"{s.successes}/{s.n} = {fmt.percent(rate.estimate)}", sentence)


def run_markdown(view: RunView) -> str:
    """Markdown for one run: the rate in words, the slice table, the whole run last."""
    _, word, sentence = run_verdict_text(view)
    m = view.manifest
    causes = view.summary.error_lines()
    if causes:
        sentence += "\n\nError episodes, by cause:\n\n" + "\n".join(
            f"- `{line}`" for line in causes)
    lines = [f"## {md(view.run_id)} ({md(view.data.policy)}): **{word}**\n", sentence + "\n",
             f"Panel {md_code(m.panel_name)} (`{m.panel_fingerprint[:12]}`).\n",
             "| slice | n | success | failure | timeout | error | success rate "
             f"({fmt.level(_run_confidence(view))}) |",
             "|---|---|---|---|---|---|---|"]
    for s in view.slices:
        c = s.summary.counts
        rate = s.summary.rate.as_dict() if s.summary.rate else None
        name = f"**{md(s.name)}**" if s.kind == "all" else md(s.name)
        lines.append(f"| {name} | {s.summary.n} | {c.get('success', 0)} | "
                     f"{c.get('failure', 0)} | {c.get('timeout', 0)} | {c.get('error', 0)} | "
                     f"{fmt.rate(rate)} |")
    if view.metrics:
        from evalband.report._metrics import SUMMARY_HEADERS, summary_cells

        lines += ["", "**Metrics** (mean or median; interval chosen by the metric's type):", "",
                  "| " + " | ".join(SUMMARY_HEADERS) + " |",
                  "|" + "---|" * len(SUMMARY_HEADERS)]
        lines += ["| " + " | ".join(md(cell) for cell in summary_cells(m)) + " |"
                  for m in view.metrics]
        from evalband.report._metrics import LEVEL_HEADERS, LEVEL_NOTE, level_cells

        levels = [cells for m in view.metrics for cells in level_cells(m)]
        if levels:
            lines += ["", "**Ordinal levels** (share of episodes at each level and at least at "
                      "it):", "", *_md_table(LEVEL_HEADERS, levels), "", f"_{md(LEVEL_NOTE)}_"]
    return "\n".join(lines) + "\n"


def report_markdown(data: ReportData, columns: Sequence[str] | None = None) -> str:
    """Markdown for collected report data: the comparisons, or the one run.

    ``columns`` selects slice-table columns by key (all by default).
    """
    if data.comparisons:
        return comparison_markdown(data.comparisons, columns)
    return run_markdown(data.runs[0])


def render_markdown(
    sources: Sequence[str],
    store: RunStore | str | Path | None = None,
    *,
    confidence: float = 0.95,
    allow_panel_mismatch: bool = False,
) -> str:
    """GitHub-flavoured Markdown to paste into a pull request: verdict, slices, aggregate.

    Args:
        sources: run ids (in ``store``) or bundle directories; two or more compare the rest
            against the first, as ``evalband compare``.
        store: a run store, a path to one, or ``None`` (bundles only).
        confidence: level of every band (as ``evalband compare --confidence``).
        allow_panel_mismatch: compare runs of different panels anyway (the summary says so).

    Raises:
        PanelMismatchError: runs of different panels without ``allow_panel_mismatch``.

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> panel = evalband.load_panel("reach1d")
    >>> for p in ("reach1d:baseline", "reach1d:damped"):
    ...     _ = evalband.run_panel(panel, p, store, run_id=p.split(":")[1])
    >>> print(render_markdown(["baseline", "damped"], store).splitlines()[0])
    ## reach1d:damped vs reach1d:baseline: **improves**
    """
    from evalband.report._data import collect

    return report_markdown(collect(sources, store, confidence=confidence,
                                   allow_panel_mismatch=allow_panel_mismatch))
