"""An agreement result as text, Markdown and HTML (one scatter per metric): pure renderers."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from evalband.report import _format as fmt
from evalband.report._ranking import rank_plot
from evalband.report._svg import PALETTE
from evalband.report._svgplot import Canvas, nice_ticks

if TYPE_CHECKING:
    from evalband.analysis import Agreement
    from evalband.analysis._agree import Correlation, MetricAgreement

__all__ = ["agreement_lines", "agreement_markdown", "agreement_html", "correlation_text"]


def correlation_text(c: Correlation) -> str:
    """``+0.83 [-0.10, +1.00] (rank-set bound)``.

    >>> from evalband.analysis._agree import Correlation
    >>> correlation_text(Correlation("spearman", 0.5, -0.2, 1.0, "rank-set bound", 0, 1))
    'spearman +0.50 [-0.20, +1.00] (rank-set bound)'
    """
    if c.low is None or c.high is None:
        return f"{c.name} {c.estimate:+.2f} (no interval)"
    return f"{c.name} {c.estimate:+.2f} [{c.low:+.2f}, {c.high:+.2f}] ({c.interval})"


def _metric_lines(m: MetricAgreement) -> list[str]:
    direction = "higher is better" if m.higher_is_better else "lower is better"
    out = [f"  {m.metric} ({direction}, {m.direction}):"]
    out += [f"    {correlation_text(c)}" for c in (m.spearman, m.kendall, m.pearson, m.mmrv)]
    if m.established:
        out.append(f"    established behavioural orders right: {m.agreeing} of {m.established}")
    return out


def agreement_lines(a: Agreement) -> list[str]:
    """The agreement for a terminal: the behavioural rates, each metric, the verdict."""
    width = max(len("checkpoint"), *(len(p) for p in a.policies))
    head = "".join(f"  {m.metric[:14]:>14}" for m in a.metrics)
    out = [f"agreement with the behavioural ranking (joint {fmt.level(a.confidence)})",
           f"  {'checkpoint':<{width}}  {'behaviour':>9}  ranks{head}"]
    ranks = {p.policy: p for p in a.behaviour.overall.policies}
    for p, rate in zip(a.policies, a.rates, strict=True):
        r = ranks[p]
        cells = "".join(f"  {m.values[p]:>14.4g}" for m in a.metrics)
        out.append(f"  {p:<{width}}  {fmt.percent(rate):>9}  {r.rank_low}-{r.rank_high:<3}{cells}")
    for m in a.metrics:
        out.extend(_metric_lines(m))
    out.append("  " + a.sentence)
    out.extend(f"note: {n}" for n in a.notes)
    return out


def agreement_markdown(a: Agreement) -> str:
    """The agreement as Markdown."""
    out = [f"## Agreement with the behavioural ranking (joint {fmt.level(a.confidence)})", "",
           "| checkpoint | behaviour | rank set | " + " | ".join(m.metric for m in a.metrics)
           + " |", "|---|---|---|" + "---|" * len(a.metrics)]
    ranks = {p.policy: p for p in a.behaviour.overall.policies}
    for p, rate in zip(a.policies, a.rates, strict=True):
        r = ranks[p]
        out.append(f"| {p} | {fmt.percent(rate)} | {r.rank_low}–{r.rank_high} | "
                   + " | ".join(f"{m.values[p]:.4g}" for m in a.metrics) + " |")
    out.append("")
    for m in a.metrics:
        out += [f"- **{m.metric}**: " + "; ".join(
            correlation_text(c) for c in (m.spearman, m.kendall, m.pearson, m.mmrv))]
    out += ["", a.sentence + "."]
    out += [f"- {n}" for n in a.notes]
    return "\n".join(out) + "\n"


def _scatter(a: Agreement, m: MetricAgreement) -> str:
    xs = [m.values[p] for p in a.policies]
    bands = {p.policy: p.value for p in a.behaviour.overall.policies}
    fig = Canvas(5.5, 3.4, f"{m.metric} against behaviour",
                 f"{len(xs)} checkpoints: {m.metric} (x) against the behavioural rate (y, "
                 f"with its {fmt.level(a.confidence)} band).")
    lo, hi = min(xs), max(xs)
    pad = 0.08 * ((hi - lo) or 1.0)
    ax = fig.axes((lo - pad, hi + pad), (-2.0, 102.0))
    ax.frame(nice_ticks(lo, hi, 5), nice_ticks(0, 100, 5))
    for x, p in zip(xs, a.policies, strict=True):
        band = bands[p]
        ax.line([x, x], [100 * band.low, 100 * band.high], PALETTE[0], width=1.0,
                cls="interval", label=f"{p}: {m.metric} {x:.4g}, {fmt.rate(band)}")
        ax.markers([x], [100 * band.estimate], PALETTE[0])
    ax.xlabel(f"{m.metric} ({'higher' if m.higher_is_better else 'lower'} is better)")
    return fig.svg()


def agreement_html(a: Agreement, title: str = "evalband agreement") -> str:
    """A self-contained page: the behavioural rank sets, a scatter and the table per metric."""
    from evalband.report._page import html_page

    parts = [f"<h1>{escape(title)}</h1>", f"<p>{escape(a.sentence)}.</p>",
             '<figure class="plot">' + rank_plot(a.behaviour.overall, a.confidence)
             + "</figure>"]
    for m in a.metrics:
        rows = "".join(
            f"<tr><td>{escape(c.name)}</td><td>{c.estimate:+.3f}</td><td>"
            + ("-" if c.low is None or c.high is None else f"[{c.low:+.3f}, {c.high:+.3f}]")
            + f"</td><td>{escape(c.interval)}</td></tr>"
            for c in (m.spearman, m.kendall, m.pearson, m.mmrv))
        parts.append(f"<section><h2>{escape(m.metric)}</h2><figure class=\"plot\">"
                     f"{_scatter(a, m)}</figure><table class=\"sortable\"><thead><tr>"
                     "<th>statistic</th><th>estimate</th><th>interval</th><th>how</th></tr>"
                     f"</thead><tbody>{rows}</tbody></table><p>{escape(m.sentence)}.</p>"
                     "</section>")
    if a.notes:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in a.notes) + "</ul>")
    return html_page(title, "".join(parts))
