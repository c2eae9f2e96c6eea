"""A checkpoint sweep as text, Markdown and HTML (success vs step with bands): pure renderers."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from evalband.report import _format as fmt
from evalband.report._ranking import rank_plot, value_text
from evalband.report._svg import IMPROVED, PALETTE
from evalband.report._svgplot import Canvas, nice_ticks

if TYPE_CHECKING:
    from evalband.analysis._sweep import Sweep

__all__ = ["sweep_lines", "sweep_markdown", "sweep_html", "sweep_plot"]


def _is_rate(s: Sweep) -> bool:
    return s.metric in ("success", "unaided")


def sweep_lines(s: Sweep) -> list[str]:
    """The sweep for a terminal: one line per checkpoint, then the best and the plan."""
    out = [f"sweep of {len(s.points)} checkpoints by {s.metric}, joint "
           f"{fmt.level(s.confidence)}"]
    width = max(len(f"{p.step:,}") for p in s.points)
    for p in s.points:
        ranks = f"{p.rank_low}" if p.rank_low == p.rank_high else f"{p.rank_low}-{p.rank_high}"
        mark = "  <- best" if p.step == s.best else ""
        out.append(f"  step {p.step:>{width},}  {value_text(p.value, s.metric):<22}  "
                   f"ranks {ranks:<5} tier {p.tier}{mark}")
    out.append("  " + s.sentence)
    out.append("  plan: " + s.confirmation.sentence)
    out.extend(f"    {c}" for c in s.confirmation.commands)
    if s.confirmed is not None:
        out.append("  confirmed: " + s.confirmed.sentence)
    return out


def sweep_markdown(s: Sweep) -> str:
    """The sweep as Markdown."""
    out = [f"## Checkpoint sweep by {s.metric} (joint {fmt.level(s.confidence)})", "",
           "| step | value | selection-aware band | rank set | tier |", "|---|---|---|---|---|"]
    for p in s.points:
        ranks = f"{p.rank_low}" if p.rank_low == p.rank_high else f"{p.rank_low}–{p.rank_high}"
        band = value_text(p.simultaneous, s.metric).partition(" ")[2]
        out.append(f"| {p.step:,}{' (best)' if p.step == s.best else ''} | "
                   f"{value_text(p.value, s.metric)} | {band} | {ranks} | {p.tier} |")
    out += ["", s.sentence + ".", "", "Plan: " + s.confirmation.sentence + ".", ""]
    out += [f"    {c}" for c in s.confirmation.commands]
    if s.confirmed is not None:
        out += ["", "Confirmed: " + s.confirmed.sentence + "."]
    return "\n".join(out) + "\n"


def sweep_plot(s: Sweep) -> str:
    """Value vs training step: marginal band (shaded), selection-aware band (whiskers)."""
    unit = 100.0 if _is_rate(s) else 1.0
    xs = [float(p.step) for p in s.points]
    est = [unit * p.value.estimate for p in s.points]
    lo = [unit * p.value.low for p in s.points]
    hi = [unit * p.value.high for p in s.points]
    slo = [unit * p.simultaneous.low for p in s.points]
    shi = [unit * p.simultaneous.high for p in s.points]
    fig = Canvas(7.5, 3.4, "Checkpoint sweep",
                 f"{len(xs)} checkpoints: {s.metric} vs training step with its "
                 f"{fmt.level(s.confidence)} band (shaded) and the selection-aware band "
                 "(whiskers); the best measured checkpoint in green.")
    fig.add_legend(f"{s.metric} ({fmt.level(s.confidence)} band)", PALETTE[0])
    fig.add_legend("selection-aware band", PALETTE[1], "dash")
    span = max(xs) - min(xs) or 1.0
    ylo, yhi = (min(slo), max(shi)) if not _is_rate(s) else (0.0, 100.0)
    pad = 0.05 * ((yhi - ylo) or 1.0)
    ax = fig.axes((min(xs) - 0.05 * span, max(xs) + 0.05 * span), (ylo - pad, yhi + pad),
                  top=40)
    ax.frame(nice_ticks(min(xs), max(xs)), nice_ticks(ylo, yhi))
    ax.band(xs, lo, hi, PALETTE[0])
    ax.line(xs, est, PALETTE[0])
    for x, a, b, p in zip(xs, slo, shi, s.points, strict=True):
        colour = IMPROVED if p.step == s.best else PALETTE[1]
        ax.line([x, x], [a, b], colour, width=1.0)
        ax.markers([x], [unit * p.value.estimate], colour)
    ax.xlabel("training step")
    return fig.svg(2)


def sweep_html(s: Sweep, title: str = "evalband checkpoint sweep") -> str:
    """A self-contained page: the sweep plot, the table, the rank sets, the plan."""
    from evalband.report._page import html_page

    rows = "".join(
        f"<tr><td>{p.step:,}{' (best)' if p.step == s.best else ''}</td>"
        f"<td>{escape(value_text(p.value, s.metric))}</td>"
        f"<td>{escape(value_text(p.simultaneous, s.metric))}</td>"
        f"<td>{p.rank_low}–{p.rank_high}</td><td>{p.tier}</td></tr>" for p in s.points)
    table = ('<table class="sortable"><thead><tr><th>step</th><th>value</th>'
             "<th>selection-aware</th><th>rank set</th><th>tier</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>")
    plan = "".join(f"<pre>{escape(c)}</pre>" for c in s.confirmation.commands)
    confirmed = (f"<p>Confirmed: {escape(s.confirmed.sentence)}.</p>"
                 if s.confirmed is not None else "")
    body = (f"<h1>{escape(title)}</h1><figure class=\"plot\">{sweep_plot(s)}</figure>{table}"
            f"<p>{escape(s.sentence)}.</p><p>Plan: {escape(s.confirmation.sentence)}.</p>{plan}"
            f"{confirmed}<h2>Rank sets</h2><figure class=\"plot\">"
            f"{rank_plot(s.ranking.overall, s.confidence)}</figure>")
    return html_page(title, body)
