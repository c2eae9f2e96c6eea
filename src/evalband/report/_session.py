"""The hardware-session report section: a pure function of a :class:`SessionAnalysis`.

:func:`session_section` renders a session analysis as an HTML fragment (sortable tables and
two inline SVG figures: the flip floor as scenes accumulated, and each policy's cumulative
success), in the seed's reading order: the flip floor and the positive control (the
instrument) before any policy rate, confirmatory comparisons before exploratory ones, prices
last. :func:`session_html` wraps it in the report page (:func:`evalband.report.html_page`:
no network, the page's own CSS and sort script). It reads the result only: it computes no
statistic, loads no run and imports no environment or policy.

The small text formatters (:func:`rate_text`, :func:`points_text`, :func:`p_text`) serve the
terminal rendering of ``evalband session analyze | drift`` too.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from evalband.analysis._verdicts import ControlStatus, Standing

if TYPE_CHECKING:
    from evalband.session import SessionAnalysis
    from evalband.stats import Difference, Interval

__all__ = [
    "session_section",
    "session_html",
    "policy_table",
    "flip_policy_table",
    "comparison_table",
    "TableText",
    "rate_text",
    "points_text",
    "p_text",
]


def rate_text(rate: Interval | None) -> str:
    """A rate with its band in percent, ``-`` without one.

    >>> from evalband.stats import Interval
    >>> rate_text(Interval(0.5, 0.3, 0.7, "wilson", 0.95, 5, 10))
    '50.0% [30.0, 70.0]'
    """
    if rate is None:
        return "-"
    return f"{100 * rate.estimate:.1f}% [{100 * rate.low:.1f}, {100 * rate.high:.1f}]"


def points_text(d: Difference) -> str:
    """A difference in points with its interval.

    >>> from evalband.stats import Difference
    >>> points_text(Difference(0.038, -0.148, 0.221, "toy", 0.95, True))
    '+3.8 [-14.8, +22.1]'
    """
    return f"{100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"


def p_text(value: float) -> str:
    """A p-value to three significant digits.

    >>> p_text(0.012345)
    '0.0123'
    """
    return f"{value:.3g}"


TableText = tuple[list[str], list[list[str]]]
"""A table as plain text: its headers and rows (each renderer escapes and styles them)."""


def policy_table(result: SessionAnalysis) -> TableText:
    """Per-policy success, skipped, assisted and pending trials, and the score distribution.

    The one definition of the table, for the terminal and the HTML section.
    """
    levels = result.rubric["levels"]
    headers = [
        "policy",
        "unaided",
        "successes",
        "rate (scene = cluster)",
        "skipped",
        "assisted",
        "pending",
        *(f"{k} {v}" for k, v in levels.items()),
        "mean score",
    ]
    rows = [
        [
            r.policy + (" (positive control)" if r.positive_control else ""),
            str(r.unaided),
            str(r.successes),
            rate_text(r.rate),
            str(r.skipped),
            str(r.assisted),
            str(r.pending),
            *(str(r.scores.get(int(k), 0)) for k in levels),
            "-" if r.mean_score is None else f"{r.mean_score:.2f}",
        ]
        for r in result.policies
    ]
    return headers, rows


def comparison_table(result: SessionAnalysis) -> TableText:
    """Every comparison: label, rates, A - B at its Holm step's level, p, Holm p, verdict, words.

    Column 1 is the label (each renderer styles confirmatory and exploratory apart); the last
    is the sentence (the terminal prints it under the table instead).
    """
    headers = [
        "comparison",
        "label",
        "pairing",
        "A",
        "B",
        "A - B points (Holm-step interval)",
        "p",
        "Holm p",
        "A against B",
        "reading",
    ]
    rows = [
        [
            c.name,
            c.label.value,
            c.pairing,
            rate_text(c.rate_a),
            rate_text(c.rate_b),
            points_text(c.difference),
            p_text(c.test.p_value),
            p_text(c.p_holm),
            c.verdict.value,
            c.sentence,
        ]
        for c in result.comparisons
    ]
    return headers, rows


def flip_policy_table(result: SessionAnalysis) -> TableText:
    """Each policy's own flip rate beside what independent attempts would give."""
    by_policy = result.flip.by_policy if result.flip is not None else ()
    return (
        ["policy", "pairs", "flips", "flip rate", "independent 2p(1-p)"],
        [
            [
                pf.policy,
                str(pf.flip.pairs),
                str(pf.flip.flips),
                rate_text(pf.flip.rate),
                f"{100 * pf.flip.independent_reference:.1f}%",
            ]
            for pf in by_policy
        ],
    )


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (
        f'<div class="table-wrap"><table class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _label_html(label: str) -> str:
    if label == Standing.CONFIRMATORY:
        return f"<strong>{html.escape(label)}</strong>"
    return f'<em class="exploratory">{html.escape(label)}</em>'


def _text_table(table: TableText) -> str:
    headers, rows = table
    return _table(headers, [[html.escape(cell) for cell in row] for row in rows])


def _cumulative_svg(result: SessionAnalysis) -> str:
    from matplotlib.ticker import MaxNLocator

    from evalband.report._svg import PALETTE, figure_svg, new_figure, styled

    @styled
    def draw() -> str:
        fig = new_figure(7.5, 3.4)
        ax = fig.add_subplot()
        for i, series in enumerate(result.cumulative):
            pts = [(p.scene, p.rate) for p in series.points if p.rate is not None]
            if not pts:
                continue
            x = [s for s, _ in pts]
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(
                x,
                [100 * r.estimate for _, r in pts],
                color=colour,
                lw=1.5,
                marker=".",
                label=series.policy,
            )
            ax.fill_between(
                x,
                [100 * r.low for _, r in pts],
                [100 * r.high for _, r in pts],
                color=colour,
                alpha=0.07,
                lw=0,
            )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("scenes so far")
        ax.set_ylabel("unaided success (%)")
        ax.set_ylim(0, 100)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, frameon=False, ncol=3)
        return figure_svg(fig)

    return draw()


def _flip_svg(result: SessionAnalysis) -> str:
    from matplotlib.ticker import MaxNLocator

    from evalband.report._svg import NEUTRAL, PALETTE, figure_svg, new_figure, styled

    flip = result.flip
    if flip is None:
        return ""

    @styled
    def draw() -> str:
        fig = new_figure(7.5, 3.0)
        ax = fig.add_subplot()
        x = [p.scene for p in flip.by_scene]
        ax.plot(
            x,
            [100 * p.rate.estimate for p in flip.by_scene],
            color=PALETTE[0],
            lw=1.6,
            marker=".",
            label="flip rate so far",
        )
        ax.fill_between(
            x,
            [100 * p.rate.low for p in flip.by_scene],
            [100 * p.rate.high for p in flip.by_scene],
            color=PALETTE[0],
            alpha=0.15,
            lw=0,
            label="band (scene = cluster)",
        )
        ax.axhline(
            100 * flip.independent_reference,
            color=NEUTRAL,
            ls="--",
            lw=1,
            label="independent attempts, 2p(1-p)",
        )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("scenes so far")
        ax.set_ylabel("flipped pairs (%)")
        ax.set_ylim(0, 100)
        ax.legend(fontsize=8, frameon=False)
        return figure_svg(fig)

    return draw()


def session_section(result: SessionAnalysis) -> str:
    """The session analysis as an HTML fragment (headings, tables, inline SVG figures).

    >>> from evalband.session import analyze_session, plan_session, simulate_session
    >>> plan = plan_session(["A", "B"], scenes=1, attempts=1, seed=1, session_id="d")
    >>> trials = simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=1)
    >>> section = session_section(analyze_session(plan, trials))
    >>> section.startswith("<h1>Session d</h1>"), "<svg" in section
    (True, True)
    """
    e = html.escape
    prog = result.progress
    parts = [
        f"<h1>Session {e(result.session_id)}</h1>",
        f'<p class="subtitle">{prog.scored} scored, {prog.skipped} skipped, {prog.pending} '
        f"pending of {prog.planned} trials; {prog.scenes_complete} of {prog.scenes} scenes "
        f"complete; success = score &ge; {result.rubric['success_at']}; bands at "
        f"{100 * result.confidence:.0f}%</p>",
        "<ul>" + "".join(f'<li class="note">{e(n)}</li>' for n in result.notes) + "</ul>",
        "<h2>1. Flip floor</h2>",
    ]
    if result.flip is None:
        parts.append("<p>No policy has two unaided attempts in one scene yet.</p>")
    else:
        flip = result.flip
        parts.append(f"<p>{e(flip.sentence)}</p>")
        parts.append(
            f"<figure>{_flip_svg(result)}<figcaption>The pooled flip rate of "
            "same-policy, same-scene attempt pairs as scenes accumulated, with its "
            "band with the scene as the unit; dashed: what independent attempts would give."
            "</figcaption></figure>"
        )
        parts.append(_text_table(flip_policy_table(result)))
    parts.append("<h2>2. Positive control</h2>")
    if result.control is None:
        parts.append("<p>No positive control in this session.</p>")
    else:
        cls = ' class="alert"' if result.control.status == ControlStatus.MISBEHAVING else ""
        parts.append(f"<p{cls}>{e(result.control.sentence)}</p>")
    parts.append("<h2>3. Per-policy success</h2>")
    parts.append(_text_table(policy_table(result)))
    parts.append("<h2>4. Comparisons</h2>")
    headers, rows = comparison_table(result)
    parts.append(
        _table(headers, [[e(row[0]), _label_html(row[1]), *(e(cell) for cell in row[2:])]
                         for row in rows])
        if rows
        else "<p>No comparison has matched trials yet.</p>"
    )
    parts.append("<h2>5. Cumulative success per policy</h2>")
    parts.append(
        f"<figure>{_cumulative_svg(result)}<figcaption>Unaided success over the "
        "scenes so far, with bands that take the scene as the unit: where seed 004's three "
        "wrong stories were "
        "told.</figcaption></figure>"
    )
    parts.append("<h2>6. Power price list</h2>")
    if result.prices is not None:
        pr = result.prices
        parts.append(
            _table(
                [
                    "gap",
                    "rates",
                    "unpaired (z test)",
                    f"scenes, session discordance (alpha 0.05/{pr.comparisons})",
                    f"scenes, at the flip floor (alpha 0.05/{pr.comparisons})",
                ],
                [
                    [
                        f"{100 * x.gap:.0f} points",
                        f"{100 * x.p_a:.0f}% vs {100 * x.p_b:.0f}%",
                        str(x.unpaired),
                        "-" if x.paired is None else str(x.paired),
                        "-" if x.at_flip_floor is None else str(x.at_flip_floor),
                    ]
                    for x in pr.entries
                ],
            )
        )
        parts.append(f"<p>{e(pr.sentence)}</p>")
    return "\n".join(parts)


def session_html(result: SessionAnalysis) -> str:
    """A self-contained HTML page of a session analysis (:func:`session_section` in the page).

    >>> from evalband.session import analyze_session, plan_session, simulate_session
    >>> plan = plan_session(["A", "B"], scenes=2, attempts=2, seed=1, session_id="d")
    >>> trials = simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=1)
    >>> page = session_html(analyze_session(plan, trials))
    >>> page.startswith("<!DOCTYPE html>"), "<script src" in page
    (True, False)
    """
    from evalband.report._page import html_page

    return html_page(f"evalband session {result.session_id}", session_section(result))


