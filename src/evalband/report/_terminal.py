"""Terminal output: rich tables with the HTML report's content and colours, or plain text.

``plain=True`` (stdout is not a terminal) draws tables without borders; colours are markup,
which rich drops when it does not write to a terminal. Regressions are red everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalband.report._markdown import fmt_delta, fmt_p, fmt_rate, verdict_text

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from evalband.analysis import Comparison
    from evalband.report._data import SliceSummary

__all__ = ["VERDICT_STYLES", "comparison_renderables", "slice_summary_table", "new_table"]

VERDICT_STYLES = {
    "improved": "green",
    "regressed": "bold red",
    "inconclusive": "yellow",
    "non-inferior": "cyan",
    "improves": "bold green",
    "regression": "bold red",
    "no regression": "bold",
}
"""Rich style per slice verdict and per overall verdict."""
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


def _log_e(test: dict[str, Any], key: str) -> str:
    """``log E`` of a sequential test (regression / improvement), 2 decimals."""
    value = test.get(key)
    return "-" if value is None else f"{math.log(max(float(value), 1e-300)):.2f}"


def comparison_renderables(c: Comparison, *, plain: bool = False) -> list[RenderableType]:
    """A comparison for the terminal: slice table first, pairs, aggregate last, the verdict."""
    from rich.markup import escape

    out: list[RenderableType] = []
    if c.panel_mismatch:
        out.append("[bold red]PANEL MISMATCH[/]: these runs were made on different panels")
    sequential = any(str((r.test or {}).get("method", "")).startswith("sequential")
                     for r in c.slice_rows)
    cols = (["delta points (confidence sequence)", "log E", "boundary"] if sequential
            else ["delta points (Holm-adjusted)", "p", "Holm p"])
    table = new_table(
        f"{c.candidate} ({c.candidate_policy}) vs {c.baseline} ({c.baseline_policy}) - "
        "slices first",
        ["slice", "n", "baseline", "candidate", *cols, "verdict"],
        plain=plain, right=["n", "baseline", "candidate", *cols],
        keep=max((len(r.name) for r in c.slice_rows), default=0))
    for row in c.slice_rows:
        style = VERDICT_STYLES.get(row.verdict, "")
        t = row.test or {}
        stats = ((f"{_log_e(t, 'e_regression')}/{_log_e(t, 'e_improvement')}",
                  f"{math.log(t['threshold']):.2f}" if "threshold" in t else "-")
                 if sequential else (fmt_p(row.p_value), fmt_p(row.p_holm)))
        table.add_row(
            escape(row.name), f"{row.n_baseline}/{row.n_candidate}", fmt_rate(row.rate_baseline),
            fmt_rate(row.rate_candidate), fmt_delta(row.delta), *stats,
            _styled(verdict_text(row), style),
            style="red" if row.verdict == "regressed" else None,
        )
    out.append(table)
    for row in c.slice_rows:
        if row.pairing == "paired" and row.kind in ("all", "factor"):
            p = row.pairs
            out.append(f"{escape(row.name)}: both {p['both']}, baseline-only "
                       f"{p['baseline_only']}, candidate-only {p['candidate_only']}, "
                       f"neither {p['neither']}")
    agg = c.aggregate
    out.append(f"aggregate (last): delta J = {100 * agg.delta:+.1f} points "
               f"[{100 * agg.low:+.1f}, {100 * agg.high:+.1f}], {escape(agg.method)}")
    if c.hidden_regressions:
        out.append(f"[bold red]hidden regression[/]: {escape(', '.join(c.hidden_regressions))} "
                   "regressed while the aggregate does not show it")
    for note in c.notes:
        out.append(f"note: {escape(note)}")
    word = VERDICT_STYLES.get(c.verdict, "")
    out.append(f"verdict: {_styled(c.sentence, word)}")
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
            f"{100 * rate.estimate:.1f}%" if rate else "-",
            f"[{100 * rate.low:.1f}%, {100 * rate.high:.1f}%]" if rate else "-",
            s.summary.time_text,
            style="bold" if s.kind == "all" else None,
        )
    return table
