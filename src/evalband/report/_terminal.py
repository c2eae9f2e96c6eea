"""Terminal output: rich tables with the HTML report's content and colours, or plain text.

``plain=True`` (stdout is not a terminal) draws tables without borders; colours are markup,
which rich drops when it does not write to a terminal. Regressions are red everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalband.report import _format as fmt
from evalband.report._table import filled, headings, is_sequential, terminal_columns
from evalband.report._words import comparison_sentence, look

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from evalband.analysis import Comparison
    from evalband.analysis._metrics import MetricSummary
    from evalband.report._data import SliceSummary

__all__ = ["comparison_renderables", "slice_summary_table", "new_table", "metric_table",
           "metric_summary_table", "level_table", "level_difference_table"]
_OUTCOME_STYLES = {"failure": "red", "timeout": "yellow", "error": "magenta"}


def new_table(title: str, columns: Sequence[str], *, plain: bool,
              right: Sequence[str] = (), keep: int = 0) -> Table:
    """A rich table: bordered on a terminal, bare columns when ``plain``.

    The first column is never squeezed below ``keep`` characters (slice names stay whole
    on a narrow terminal; the last column wraps instead).

    >>> new_table("t", ["a", "b"], plain=True).box is None
    True
    """
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=None if plain else box.SIMPLE_HEAVY,
                  title_justify="left", pad_edge=not plain, show_edge=not plain)
    for i, col in enumerate(columns):
        table.add_column(col, justify="right" if col in right else "left",
                         min_width=min(keep, 40) if i == 0 and keep else None,
                         no_wrap=i == 0, overflow="fold")
    return table


def _styled(text: str, style: str) -> str:
    from rich.markup import escape

    return f"[{style}]{escape(text)}[/]" if style else escape(text)


def comparison_renderables(c: Comparison, *, plain: bool = False,
                           columns: Sequence[str] | None = None) -> list[RenderableType]:
    """A comparison for the terminal: slice table first, pairs, aggregate last, the verdict.

    ``columns`` keeps only the slice-table columns of these keys (see
    :data:`evalband.report._table.COLUMNS`); all by default.
    """
    from rich.markup import escape

    out: list[RenderableType] = []
    if c.panel_mismatch:
        out.append("[bold red]PANEL MISMATCH[/]: these runs were made on different panels")
    sequential = is_sequential(c.slice_rows)
    shown = terminal_columns(sequential, filled(columns, [c]))
    words = headings(c.confidence, sequential)
    headers = [col.terminal.format_map(vars(words)) for col in shown if col.terminal]
    table = new_table(
        f"{c.candidate} ({c.candidate_policy}) vs {c.baseline} ({c.baseline_policy}) - "
        "slices first", headers, plain=plain,
        right=[h for h, col in zip(headers, shown, strict=True) if col.kind == "number"],
        keep=max((len(r.name) for r in c.slice_rows), default=0))
    for row in c.slice_rows:
        shown_as = look(row.verdict)
        cells = [_styled(col.text(row), shown_as.rich) if col.kind == "verdict"
                 else escape(col.text(row)) for col in shown]
        table.add_row(*cells, style=shown_as.row)
    out.append(table)
    for row in c.slice_rows:
        if row.pairing == "paired" and row.kind in ("all", "factor"):
            p = row.pairs
            out.append(f"{escape(row.name)}: both {p['both']}, baseline-only "
                       f"{p['baseline_only']}, candidate-only {p['candidate_only']}, "
                       f"neither {p['neither']}")
    agg = c.aggregate
    out.append(f"aggregate (last): delta J = {fmt.signed_points(agg.delta)} points "
               f"[{fmt.signed_points(agg.low)}, {fmt.signed_points(agg.high)}], "
               f"{escape(agg.method)}")
    if c.hidden_regressions:
        out.append(f"[bold red]hidden regression[/]: {escape(', '.join(c.hidden_regressions))} "
                   "regressed while the aggregate does not show it")
    if c.metrics:
        out.append(metric_table(c, plain=plain))
        if any(m.levels for m in c.metrics):
            from evalband.report._metrics import LEVEL_NOTE

            out.append(level_difference_table(c, plain=plain))
            out.append(f"note: {escape(LEVEL_NOTE)}")
    for note in (*c.peeking, *c.notes):
        out.append(f"note: {escape(note)}")
    out.append(f"verdict: {_styled(comparison_sentence(c), look(c.verdict).rich)}")
    return out


def slice_summary_table(slices: Sequence[SliceSummary], *, plain: bool = False,
                        title: str = "per slice") -> Table:
    """A run's per-slice table: outcomes, the rate with its Wilson band, time among successes."""
    from rich.markup import escape

    table = new_table(title, ["slice", "n", "success", "failure", "timeout", "error",
                              "rate", "Wilson 95%", "mean time among successes"],
                      plain=plain, right=["n", "success", "failure", "timeout", "error",
                                          "rate", "Wilson 95%"],
                      keep=max((len(s.name) for s in slices), default=0))
    for s in slices:
        c = s.summary.counts
        rate = s.summary.rate
        counts = [_styled(str(c.get(o, 0)), _OUTCOME_STYLES.get(o, "") if c.get(o, 0) else "")
                  for o in ("success", "failure", "timeout", "error")]
        table.add_row(
            escape(s.name), str(s.summary.n), *counts,
            fmt.percent(rate.estimate) if rate else "-",
            f"[{fmt.percent(rate.low)}, {fmt.percent(rate.high)}]" if rate else "-",
            s.summary.time_text,
            style="bold" if s.kind == "all" else None,
        )
    return table


def metric_table(c: Comparison, *, plain: bool = False) -> Table:
    """A comparison's metrics: per metric, each slice's difference, then overall.

    A primary metric's rows carry their verdict (decided with the slices); the others say
    ``descriptive``.
    """
    from rich.markup import escape

    from evalband.report._metrics import METRIC_HEADERS, metric_cells

    table = new_table("metrics (candidate - baseline; primary rows decided with the slices)",
                      METRIC_HEADERS, plain=plain,
                      right=("n", "baseline", "candidate", "p", "p adj"),
                      keep=max((len(m.metric) for m in c.metrics), default=0))
    for row in c.metrics:
        style = look(row.verdict).row if row.verdict is not None else ""
        table.add_row(*(escape(cell) for cell in metric_cells(row)), style=style)
    return table


def metric_summary_table(summaries: Sequence[MetricSummary], *, plain: bool = False) -> Table:
    """One run's metrics: mean and interval, its type and direction (per slice when sliced)."""
    from rich.markup import escape

    from evalband.report._metrics import SLICED_SUMMARY_HEADERS, SUMMARY_HEADERS, summary_cells

    sliced = any(s.kind != "overall" for s in summaries)
    table = new_table("metrics (mean or median, interval chosen by the metric's type)"
                      + (", per slice, overall last" if sliced else ""),
                      SLICED_SUMMARY_HEADERS if sliced else SUMMARY_HEADERS,
                      plain=plain, right=("n", "mean"),
                      keep=max((len(s.metric) for s in summaries), default=0))
    for s in summaries:
        table.add_row(*(escape(cell) for cell in summary_cells(s, sliced=sliced)))
    return table


def level_table(summaries: Sequence[MetricSummary], *, plain: bool = False) -> Table | None:
    """One run's ordinal metrics: each level's share and the share at it or above.

    ``None`` when no metric is ordinal with levels.
    """
    from rich.markup import escape

    from evalband.report._metrics import LEVEL_HEADERS, level_cells

    rows = [row for s in summaries for row in level_cells(s)]
    if not rows:
        return None
    table = new_table("ordinal levels (share of episodes, Wilson intervals)", LEVEL_HEADERS,
                      plain=plain, right=("n", "level"),
                      keep=max(len(row[0]) for row in rows))
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def level_difference_table(c: Comparison, *, plain: bool = False) -> Table:
    """A comparison's ordinal metrics: the share at least at each level (descriptive).

    Both runs' shares and the difference with its Newcombe interval, per slice and level.
    """
    from rich.markup import escape

    from evalband.report._metrics import LEVEL_DIFFERENCE_HEADERS, level_difference_cells

    rows = [row for m in c.metrics for row in level_difference_cells(m)]
    table = new_table("ordinal levels (share at least at each level, candidate - baseline; "
                      "descriptive)", LEVEL_DIFFERENCE_HEADERS, plain=plain,
                      right=("n", "baseline", "candidate"),
                      keep=max((len(row[0]) for row in rows), default=0))
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table
