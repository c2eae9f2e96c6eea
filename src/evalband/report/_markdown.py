"""GitHub-flavoured Markdown for a comparison: verdict, slice table, aggregate last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalband.analysis import Comparison, SliceComparison

__all__ = ["comparison_markdown", "fmt_rate", "fmt_delta", "verdict_text"]


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


def verdict_text(row: SliceComparison) -> str:
    """A slice's verdict in words, with its reason or what its n could resolve."""
    text = row.verdict
    if row.reasons:
        return f"{text}: {'; '.join(row.reasons)}"
    if row.possible_regression and row.episodes_to_resolve:
        return (f"{text} (possible regression, not established; ~{row.episodes_to_resolve} "
                "episodes per arm would resolve it)")
    if row.minimum_detectable_difference is not None and text != "improved":
        return f"{text} (could detect >= {100 * row.minimum_detectable_difference:.0f} points)"
    return text


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def comparison_markdown(comparisons: Sequence[Comparison]) -> str:
    """Markdown for one or more comparisons against one baseline, slices first."""
    lines: list[str] = []
    for c in comparisons:
        if c.panel_mismatch:
            lines.append("> **Panel mismatch**: these runs were made on different panels.\n")
        lines.append(f"## {c.candidate_policy} vs {c.baseline_policy}: **{c.verdict}**\n")
        lines.append(c.sentence + "\n")
        lines.append(f"Panel `{c.panel_name}` (`{c.panel_fingerprint[:12]}`); runs "
                     f"`{c.baseline}` (baseline) and `{c.candidate}` (candidate).\n")
        lines.append("| slice | n | baseline | candidate | Δ points (95%) | p | Holm p | verdict |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for row in c.slice_rows:
            verdict = verdict_text(row)
            lines.append(
                f"| {row.name} | {row.n_baseline}/{row.n_candidate} | "
                f"{fmt_rate(row.rate_baseline)} | {fmt_rate(row.rate_candidate)} | "
                f"{fmt_delta(row.delta)} | {_p(row.p_value)} | {_p(row.p_holm)} | {verdict} |"
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
            lines.append(f"\n- {note}")
        lines.append("")
    return "\n".join(lines) + "\n"
