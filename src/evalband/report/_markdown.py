"""GitHub-flavoured Markdown for a comparison: verdict, slice table, aggregate last."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalband.analysis import Comparison, SliceComparison
    from evalband.report._data import ReportData, RunView
    from evalband.store import RunStore

__all__ = [
    "comparison_markdown",
    "run_markdown",
    "run_verdict_text",
    "report_markdown",
    "render_markdown",
    "fmt_rate",
    "fmt_delta",
    "fmt_seconds",
    "fmt_p",
    "verdict_text",
    "verdict_parts",
]


def fmt_rate(rate: dict[str, Any] | None) -> str:
    """``45.0% [38.1, 52.1]`` from an interval dict.

    >>> fmt_rate({"estimate": 0.45, "low": 0.381, "high": 0.521})
    '45.0% [38.1, 52.1]'
    """
    if not rate:
        return "-"
    return f"{100 * rate['estimate']:.1f}% [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}]"


def fmt_delta(delta: dict[str, Any] | None) -> str:
    """``+12.0 [+3.1, +20.2]`` points from a difference dict.

    >>> fmt_delta({"estimate": 0.12, "low": 0.031, "high": 0.202})
    '+12.0 [+3.1, +20.2]'
    """
    if not delta:
        return "-"
    return (
        f"{100 * delta['estimate']:+.1f} [{100 * delta['low']:+.1f}, {100 * delta['high']:+.1f}]"
    )


def verdict_parts(row: SliceComparison) -> tuple[str, str]:
    """A slice's verdict word and what backs it: its reasons, or what its n could resolve.

    The HTML table shows the word and the detail on a second line; :func:`verdict_text`
    joins them for the terminal and Markdown.
    """
    if row.reasons:
        return row.verdict, "; ".join(row.reasons)
    if row.verdict in ("regressed", "improved"):
        return row.verdict, "" if row.primary else "secondary slice: does not decide the verdict"
    if row.effect is None:
        return row.verdict, ""
    unit = "pairs" if row.pairing == "paired" else "episodes per arm"
    parts = []
    if row.detectable_drop is not None:
        parts.append(f"would catch a drop of >= {100 * row.detectable_drop:.0f} points")
    else:
        parts.append("too few episodes to catch any drop")
    if row.episodes_for_effect is not None:
        parts.append(f"~{row.episodes_for_effect} {unit} to catch a "
                     f"{100 * row.effect:.0f}-point drop")
    return row.verdict, "; ".join(parts)


def verdict_text(row: SliceComparison) -> str:
    """A slice's verdict in words, with its reason or what its n could resolve."""
    word, detail = verdict_parts(row)
    if not detail:
        return word
    return f"{word}: {detail}" if row.reasons else f"{word} ({detail})"


def fmt_seconds(seconds: float | None) -> str:
    """A time for reading: three significant figures at most, ``No successes`` for none.

    >>> fmt_seconds(2.238017), fmt_seconds(13.64), fmt_seconds(136.4), fmt_seconds(0.0042)
    ('2.24 s', '13.6 s', '136 s', '4.2 ms')
    >>> fmt_seconds(None)
    'No successes'
    """
    if seconds is None:
        return "No successes"
    if seconds >= 100:
        return f"{seconds:,.0f} s"
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 0.01 or seconds == 0:
        return f"{seconds:.2f} s"
    return f"{1000 * seconds:.2g} ms"


def _level(confidence: float) -> str:
    """``95%`` from ``0.95``; ``99.9%`` keeps its decimal.

    >>> _level(0.95), _level(0.999)
    ('95%', '99.9%')
    """
    return f"{100 * confidence:.4g}%"


def _run_confidence(view: RunView) -> float:
    """The level of a run's bands (its summary's; 0.95 when it has no rate)."""
    return view.summary.rate.confidence if view.summary.rate else 0.95


def fmt_p(value: float | None) -> str:
    """A p value: three significant figures, ``< 0.001`` below that (``-`` for none).

    >>> fmt_p(0.0496), fmt_p(1.0), fmt_p(7.3e-12), fmt_p(None)
    ('0.0496', '1', '< 0.001', '-')
    """
    if value is None:
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def comparison_markdown(comparisons: Sequence[Comparison]) -> str:
    """Markdown for one or more comparisons against one baseline, slices first."""
    lines: list[str] = []
    for c in comparisons:
        for note in c.notes:  # the peeking notice comes first (compare adds it to the notes)
            if note.startswith("PEEKING:"):
                lines.append(f"> **{note}**\n")
        if c.panel_mismatch:
            lines.append("> **Panel mismatch**: these runs were made on different panels.\n")
        lines.append(f"## {c.candidate_policy} vs {c.baseline_policy}: **{c.verdict}**\n")
        lines.append(c.sentence + "\n")
        lines.append(f"Panel `{c.panel_name}` (`{c.panel_fingerprint[:12]}`); runs "
                     f"`{c.baseline}` (baseline) and `{c.candidate}` (candidate).\n")
        level = _level(c.confidence)
        lines.append(f"| slice | n | baseline | candidate | Δ points ({level}, Holm-adjusted) "
                     "| p | Holm p | verdict |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for row in c.slice_rows:
            verdict = verdict_text(row)
            lines.append(
                f"| {row.name} | {row.n_baseline}/{row.n_candidate} | "
                f"{fmt_rate(row.rate_baseline)} | {fmt_rate(row.rate_candidate)} | "
                f"{fmt_delta(row.delta)} | {fmt_p(row.p_value)} | {fmt_p(row.p_holm)} | {verdict} |"
            )
        agg = c.aggregate
        lines.append("")
        lines.append(
            f"**Aggregate (last)**: ΔJ = {100 * agg.delta:+.1f} points "
            f"[{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] ({agg.method}); baseline "
            f"{100 * agg.rate_baseline:.1f}%, candidate {100 * agg.rate_candidate:.1f}%."
        )
        if c.hidden_regressions:
            lines.append(f"\n**Hidden regression**: {', '.join(c.hidden_regressions)} regressed "
                         "while the aggregate does not show it.")
        for note in c.notes:
            if not note.startswith("PEEKING:"):
                lines.append(f"\n- {note}")
        lines.append("")
    return "\n".join(lines) + "\n"


def run_verdict_text(view: RunView) -> tuple[str, str, str]:
    """A single run's verdict: ``(css class, word, sentence)``."""
    s = view.summary
    c = s.counts
    if s.rate is None:
        return ("withheld", "no verdict", f"{view.run_id} has no counted episode "
                f"({s.n_attempted} attempted, {c.get('error', 0)} errors).")
    rate = s.rate
    sentence = (f"{view.run_id} ({view.data.policy}) succeeded in {s.successes} of {s.n} "
                f"counted episodes: {fmt_rate(rate.as_dict())} "
                f"({int(round(100 * rate.confidence))}% Wilson band); "
                f"{c.get('failure', 0)} failures, {c.get('timeout', 0)} timeouts, "
                f"{c.get('error', 0)} errors. Mean time among successes: "
                f"{fmt_seconds(s.mean_time_to_success_s)}.")
    if s.verdict_withheld:
        return ("withheld", "verdict withheld",
                sentence + f" {c['error']} episode(s) errored: fix them, or count them as "
                "failures (--errors-as-failures), before reading this rate.")
    return ("run", f"{s.successes}/{s.n} = {100 * rate.estimate:.1f}%", sentence)


def run_markdown(view: RunView) -> str:
    """Markdown for one run: the rate in words, the slice table, the whole run last."""
    _, word, sentence = run_verdict_text(view)
    m = view.manifest
    causes = view.summary.error_lines()
    if causes:
        sentence += "\n\nError episodes, by cause:\n\n" + "\n".join(
            f"- `{line}`" for line in causes)
    lines = [f"## {view.run_id} ({view.data.policy}): **{word}**\n", sentence + "\n",
             f"Panel `{m.panel_name}` (`{m.panel_fingerprint[:12]}`).\n",
             "| slice | n | success | failure | timeout | error | success rate "
             f"({_level(_run_confidence(view))}) |",
             "|---|---|---|---|---|---|---|"]
    for s in view.slices:
        c = s.summary.counts
        rate = s.summary.rate.as_dict() if s.summary.rate else None
        name = f"**{s.name}**" if s.kind == "all" else s.name
        lines.append(f"| {name} | {s.summary.n} | {c.get('success', 0)} | "
                     f"{c.get('failure', 0)} | {c.get('timeout', 0)} | {c.get('error', 0)} | "
                     f"{fmt_rate(rate)} |")
    return "\n".join(lines) + "\n"


def report_markdown(data: ReportData) -> str:
    """Markdown for collected report data: the comparisons, or the one run."""
    if data.comparisons:
        return comparison_markdown(data.comparisons)
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
