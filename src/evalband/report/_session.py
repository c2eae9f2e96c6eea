"""The hardware-session report section: a pure function of a :class:`SessionAnalysis`.

:func:`session_section` renders a session analysis as an HTML fragment with the Jinja2
template ``templates/session.html.j2`` (sortable tables and two inline SVG figures drawn here:
the flip floor as scenes accumulated, and each policy's cumulative success), in the seed's
reading order: the flip floor and the positive control (the
instrument) before any policy rate, confirmatory comparisons before exploratory ones, prices
last. :func:`session_html` wraps it in the report page (:func:`evalband.report.html_page`:
no network, the page's own CSS and sort script). It reads the result only: it computes no
statistic, loads no run and imports no environment or policy.

The small text formatters (:func:`rate_text`, :func:`points_text`, :func:`p_text`) serve the
terminal rendering of ``evalband session analyze | drift`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalband.analysis._verdicts import ControlStatus, Standing
from evalband.report._words import look

if TYPE_CHECKING:
    from evalband.report._svgplot import Axes, Canvas
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
            look(c.verdict).word,
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


def _scene_axes(fig: Canvas, scenes: Sequence[float], columns: int) -> Axes:
    """A panel of scenes (whole numbers) against a percentage, under the legend."""
    from evalband.report._svgplot import integer_ticks, nice_ticks

    lo, hi = (min(scenes), max(scenes)) if scenes else (0.0, 1.0)
    pad = 0.05 * ((hi - lo) or 1.0)
    xlim = (lo - pad, hi + pad)
    ax = fig.axes(xlim, (0, 100), top=14 + 17 * fig.legend_rows(columns), left=56)
    ax.frame([v for v in integer_ticks(*xlim) if xlim[0] <= v <= xlim[1]], nice_ticks(0, 100))
    ax.xlabel("scenes so far")
    return ax


def _cumulative_svg(result: SessionAnalysis) -> str:
    from evalband.report._svg import PALETTE
    from evalband.report._svgplot import Canvas

    fig = Canvas(7.5, 3.4, "Unaided success as scenes accumulated",
                 f"Unaided success rate (%) of {len(result.cumulative)} policies after each "
                 "scene, with its band.")
    drawn = []
    for i, series in enumerate(result.cumulative):
        pts = [(p.scene, p.rate) for p in series.points if p.rate is not None]
        if pts:
            drawn.append((PALETTE[i % len(PALETTE)], series.policy, pts))
            fig.add_legend(series.policy, PALETTE[i % len(PALETTE)])
    scenes = [float(s) for _, _, pts in drawn for s, _ in pts]
    ax = _scene_axes(fig, scenes, 3)
    for colour, policy, pts in drawn:
        x = [float(s) for s, _ in pts]
        ax.band(x, [100 * r.low for _, r in pts], [100 * r.high for _, r in pts], colour, 0.07)
        ax.line(x, [100 * r.estimate for _, r in pts], colour, 1.5, label=policy)
        ax.markers(x, [100 * r.estimate for _, r in pts], colour, 2.5)
    ax.ylabel("unaided success (%)", ax.left - 14)
    return fig.svg(3)


def _flip_svg(result: SessionAnalysis) -> str:
    from evalband.report._svg import NEUTRAL, PALETTE
    from evalband.report._svgplot import Canvas

    flip = result.flip
    if flip is None:
        return ""
    fig = Canvas(7.5, 3.0, "Flip rate as scenes accumulated",
                 "Pooled flip rate (%) of same-policy, same-scene attempt pairs after each "
                 "scene, with its band, against independent attempts.")
    fig.add_legend("flip rate so far", PALETTE[0])
    fig.add_legend("band (scene = cluster)", PALETTE[0], "box")
    fig.add_legend("independent attempts, 2p(1-p)", NEUTRAL, "dash")
    x = [float(p.scene) for p in flip.by_scene]
    ax = _scene_axes(fig, x, 3)
    ax.band(x, [100 * p.rate.low for p in flip.by_scene],
            [100 * p.rate.high for p in flip.by_scene], PALETTE[0], 0.15)
    ax.line(x, [100 * p.rate.estimate for p in flip.by_scene], PALETTE[0], 1.6,
            label="flip rate so far")
    ax.markers(x, [100 * p.rate.estimate for p in flip.by_scene], PALETTE[0], 2.5)
    ax.hline(100 * flip.independent_reference, NEUTRAL, 1.0, dash="5 3")
    ax.ylabel("flipped pairs (%)", ax.left - 14)
    return fig.svg(3)


def session_section(result: SessionAnalysis) -> str:
    """The session analysis as an HTML fragment (headings, tables, inline SVG figures).

    >>> from evalband.session import analyze_session, plan_session, simulate_session
    >>> plan = plan_session(["A", "B"], scenes=1, attempts=1, seed=1, session_id="d")
    >>> trials = simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=1)
    >>> section = session_section(analyze_session(plan, trials))
    >>> section.startswith("<h1>Session d</h1>"), "<svg" in section
    (True, True)
    """
    from markupsafe import Markup

    from evalband.report._templates import render

    prices = result.prices
    price_rows = [] if prices is None else [
        [
            f"{100 * x.gap:.0f} points",
            f"{100 * x.p_a:.0f}% vs {100 * x.p_b:.0f}%",
            str(x.unpaired),
            "-" if x.paired is None else str(x.paired),
            "-" if x.at_flip_floor is None else str(x.at_flip_floor),
        ]
        for x in prices.entries
    ]
    return render(
        "session.html.j2",
        r=result,
        flip_svg=Markup(_flip_svg(result)),
        cumulative_svg=Markup(_cumulative_svg(result)),
        flip_table=flip_policy_table(result) if result.flip is not None else ([], []),
        policy_rows=policy_table(result),
        comparisons=comparison_table(result),
        price_rows=price_rows,
        CONFIRMATORY=Standing.CONFIRMATORY,
        MISBEHAVING=ControlStatus.MISBEHAVING,
    ).strip("\n")


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


