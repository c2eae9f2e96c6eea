"""A ranking as text, Markdown and HTML: pure functions of the stored, typed result.

Nothing here computes a statistic: every number comes from a
:class:`~evalband.analysis.Ranking` and goes through :mod:`evalband.report._format`. The HTML
page carries the rank-interval plot (inline SVG, :mod:`evalband.report._svgplot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from evalband.report import _format as fmt
from evalband.report._svg import IMPROVED, NEUTRAL, PALETTE
from evalband.report._svgplot import Canvas, integer_ticks, label_width

if TYPE_CHECKING:
    from evalband.analysis import Ranking
    from evalband.analysis._rank_results import RankPair, SliceRanking

__all__ = ["ranking_lines", "ranking_markdown", "ranking_html", "rank_plot", "value_text"]


def value_text(band: object, metric: str) -> str:
    """A policy's value: a rate in percent, a metric as a number, with its band.

    >>> from evalband.stats import Interval
    >>> value_text(Interval(0.5, 0.4, 0.6, "wilson", 0.95, 5, 10), "success")
    '50.0% [40.0, 60.0]'
    >>> value_text(Interval(1.25, 1.0, 1.5, "bootstrap", 0.95), "score")
    '1.25 [1, 1.5]'
    """
    if metric in ("success", "unaided"):
        return fmt.rate(band)
    est, low, high = (float(getattr(band, k)) for k in ("estimate", "low", "high"))
    return f"{est:.3g} [{low:.3g}, {high:.3g}]"


def _pair_text(p: RankPair, metric: str) -> str:
    if p.difference is not None:
        diff = fmt.points(p.difference)
        level = f" ({fmt.level(p.difference.confidence)})"
    else:
        diff, level = (f"{100 * p.estimate:+.1f}" if metric in ("success", "unaided")
                       else f"{p.estimate:+.3g}"), ""
    return (f"{p.better} > {p.worse}: {diff}{level}, p {fmt.p_value(p.p_value)}, "
            f"adjusted {fmt.p_value(p.adjusted_p)}")


def _slice_lines(s: SliceRanking, r: Ranking) -> list[str]:
    width = max(len("policy"), *(len(p.policy) for p in s.policies))
    out = [f"  {'policy':<{width}}  {'ranks':>7}  tier  {r.metric}"]
    for p in s.policies:
        ranks = (f"{p.rank_low}" if p.rank_low == p.rank_high
                 else f"{p.rank_low}-{p.rank_high}")
        step = f"  (step {p.step:,})" if p.step is not None else ""
        out.append(f"  {p.policy:<{width}}  {ranks:>7}  {p.tier:>4}  "
                   f"{value_text(p.value, r.metric)}{step}")
    established = [p for p in s.pairs if p.established]
    out.append(f"  established ({len(established)} of {len(s.pairs)}):"
               + ("" if established else " none"))
    out.extend(f"    {_pair_text(p, r.metric)}" for p in established)
    out.append("  " + s.sentence)
    if s.separation is not None:
        out.append("  cost: " + s.separation.sentence)
    return out


def ranking_lines(r: Ranking) -> list[str]:
    r"""The ranking for a terminal: per slice a table of rank sets, then the sentences.

    >>> from evalband.analysis import Ranking
    >>> from evalband.analysis._rank_results import SliceRanking, RankedPolicy
    >>> from evalband.stats import Interval
    >>> band = Interval(0.5, 0.4, 0.6, "wilson", 0.95, 5, 10)
    >>> s = SliceRanking("all", (RankedPolicy("a", "a", None, band, 1, 2, 1),
    ...     RankedPolicy("b", "b", None, band, 1, 2, 1)), (), (("a", "b"),), 0, None, None, "x")
    >>> print("\n".join(ranking_lines(Ranking("success", True, 0.95, "paired", "p", None,
    ...                                         ("a", "b"), (s,), ()))[1:4]))
    all:
      policy    ranks  tier  success
      a           1-2     1  50.0% [40.0, 60.0]
    """
    head = (f"rank of {len(r.runs)} policies by {r.metric}"
            + ("" if r.higher_is_better else " (lower is better)")
            + f", joint {fmt.level(r.confidence)}, {r.design}"
            + (f", session {r.session_id}" if r.session_id else ""))
    out = [head]
    for s in r.slices:
        out.append(f"{s.slice}:")
        out.extend(_slice_lines(s, r))
    out.extend(f"note: {n}" for n in r.notes)
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def ranking_markdown(r: Ranking) -> str:
    """The ranking as Markdown (a pull request, a lab notebook).

    >>> from evalband.analysis import Ranking
    >>> ranking_markdown(Ranking("success", True, 0.95, "paired", "p", None, (), (), ()))[:9]
    '## Rankin'
    """
    out = [f"## Ranking by {r.metric} (joint {fmt.level(r.confidence)}, {r.design})", ""]
    for s in r.slices:
        out += [f"### {s.slice}", "", "| policy | rank set | tier | value | step |",
                "|---|---|---|---|---|"]
        for p in s.policies:
            ranks = f"{p.rank_low}" if p.rank_low == p.rank_high else f"{p.rank_low}–{p.rank_high}"
            out.append(f"| {_md_cell(p.policy)} | {ranks} | {p.tier} | "
                       f"{value_text(p.value, r.metric)} | "
                       f"{'' if p.step is None else p.step} |")
        established = [p for p in s.pairs if p.established]
        out += ["", f"Established orders: {len(established)} of {len(s.pairs)}."]
        out += [f"- {_md_cell(_pair_text(p, r.metric))}" for p in established]
        out += ["", s.sentence + "."]
        if s.separation is not None:
            out += ["", f"Cost: {s.separation.sentence}."]
        out.append("")
    if r.notes:
        out += [f"- {n}" for n in r.notes] + [""]
    out.append(f"Procedure: {r.procedure}.")
    return "\n".join(out) + "\n"


def rank_plot(s: SliceRanking, confidence: float) -> str:
    """Each policy's rank set as an interval on the rank axis (1 = best), tiers coloured.

    >>> from evalband.analysis._rank_results import SliceRanking, RankedPolicy
    >>> from evalband.stats import Interval
    >>> band = Interval(0.5, 0.4, 0.6, "wilson", 0.95, 5, 10)
    >>> s = SliceRanking("all", (RankedPolicy("a", "a", None, band, 1, 1, 1),
    ...     RankedPolicy("b", "b", None, band, 2, 2, 2)), (), (("a",), ("b",)), 1, None, None, "")
    >>> rank_plot(s, 0.95).count('class="interval"')
    2
    """
    names = [p.policy for p in s.policies]
    k = len(names)
    fig = Canvas(7.5, max(2.0, 1.3 + 0.32 * k), "Rank sets",
                 f"{k} policies, each with its rank set (1 = best), jointly at "
                 f"{fmt.level(confidence)}; colour: tier.")
    left = 12 + label_width(names)
    ax = fig.axes((0.5, k + 0.5), (-k + 0.4, 0.6), left=left)
    ax.frame(integer_ticks(1, k), [-float(i) for i in range(k)], ylabels=names, grid="x")
    for i, p in enumerate(s.policies):
        colour = PALETTE[(p.tier - 1) % len(PALETTE)] if len(s.tiers) > 1 else NEUTRAL
        if p.rank_low == p.rank_high:
            colour = IMPROVED if len(s.tiers) > 1 else colour
        ax.interval(-i, float(i + 1), float(p.rank_low), float(p.rank_high), colour,
                    label=f"{p.policy}: ranks {p.rank_low} to {p.rank_high}, tier {p.tier}")
    ax.xlabel("rank (1 = best); marker: the rank of its estimate")
    return fig.svg()


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def ranking_html(r: Ranking, title: str = "evalband ranking") -> str:
    """A self-contained HTML page: per slice the rank-interval plot, the table, the orders.

    >>> from evalband.analysis import Ranking
    >>> ranking_html(Ranking("success", True, 0.95, "paired", "p", None, (), (), ()))[:15]
    '<!DOCTYPE html>'
    """
    from evalband.report._page import html_page

    parts = [f"<h1>{escape(title)}</h1>",
             f"<p>By {escape(r.metric)}{'' if r.higher_is_better else ' (lower is better)'}; "
             f"rank sets hold jointly at {fmt.level(r.confidence)}; design: "
             f"{escape(r.design)}.</p>"]
    for s in r.slices:
        parts.append(f"<section><h2>{escape(s.slice)}</h2>")
        parts.append(f'<figure class="plot">{rank_plot(s, r.confidence)}</figure>')
        rows = [[p.policy, f"{p.rank_low}" if p.rank_low == p.rank_high
                 else f"{p.rank_low}–{p.rank_high}", str(p.tier),
                 value_text(p.value, r.metric), "" if p.step is None else f"{p.step}"]
                for p in s.policies]
        parts.append(_table(["policy", "rank set", "tier", r.metric, "step"], rows))
        pair_rows = [[p.better, p.worse,
                      fmt.points(p.difference) if p.difference is not None
                      else f"{p.estimate:+.3g}",
                      fmt.level(p.difference.confidence) if p.difference is not None else "-",
                      fmt.p_value(p.p_value), fmt.p_value(p.adjusted_p),
                      "established" if p.established else "not established", p.test]
                     for p in s.pairs]
        parts.append("<h3>Pairs</h3>")
        parts.append(_table(["ahead", "behind", "difference", "level", "p", "adjusted p",
                             "order", "test"], pair_rows))
        parts.append(f"<p>{escape(s.sentence)}.</p>")
        if s.separation is not None:
            parts.append(f"<p>Cost: {escape(s.separation.sentence)}.</p>")
        parts.append("</section>")
    if r.notes:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in r.notes) + "</ul>")
    parts.append(f"<p><small>Procedure: {escape(r.procedure)}.</small></p>")
    return html_page(title, "".join(parts))
