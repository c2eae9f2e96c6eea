"""A preference session's analysis as text, Markdown, HTML and its ``--json``: pure renderers.

The pairs were decided by the one decision engine (``analysis._verdicts.decide``, through
``session._preference_analysis``); the session's sentence is built here from that typed
decision (its tiers and established orders), for every rendering and the JSON document.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from evalband.report import _format as fmt
from evalband.report._svg import NEUTRAL, PALETTE
from evalband.report._svgplot import Canvas, label_width, nice_ticks

if TYPE_CHECKING:
    from evalband.session._preference_analysis import PreferenceAnalysis

__all__ = ["preference_sentence", "preference_document", "preference_lines",
           "preference_markdown", "preference_html", "strength_plot"]


def _ranks(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low}-{high}"


def preference_sentence(a: PreferenceAnalysis) -> str:
    """The session's finding in one sentence: the established orders and the tiers.

    >>> from evalband.session._preference import plan_preference
    >>> from evalband.session._preference_analysis import (analyze_preferences,
    ...                                                    simulate_preferences)
    >>> plan = plan_preference(["a", "b"], 8, seed=0, session_id="p")
    >>> rows = simulate_preferences(plan, {"a": 0.0, "b": 0.0}, seed=1)
    >>> preference_sentence(analyze_preferences(plan, rows, progress_reps=50))
    'at joint 95%, no order among the 2 policies is established by 8 blocks: one tier'
    """
    if len(a.tiers) == 1:
        return (f"at joint {100 * a.confidence:g}%, no order among the {len(a.policies)} "
                f"policies is established by {a.blocks_done} blocks: one tier")
    return (f"at joint {100 * a.confidence:g}%, {a.established} of {len(a.pairs)} orders are "
            "established; " + "; ".join(f"tier {t + 1}: {', '.join(tier)}"
                                        for t, tier in enumerate(a.tiers)))


def preference_document(a: PreferenceAnalysis) -> dict[str, Any]:
    """The ``--json`` document: the typed fields with the sentence before the notes."""
    doc = a.as_dict()
    notes = doc.pop("notes")
    return {**doc, "sentence": preference_sentence(a), "notes": notes}


def preference_lines(a: PreferenceAnalysis) -> list[str]:
    """The analysis for a terminal."""
    width = max(len("policy"), *(len(p.policy) for p in a.policies))
    out = [f"preference session {a.session_id}: {a.blocks_done}/{a.blocks_planned} blocks, "
           f"{a.method}",
           f"  {'policy':<{width}}  ranks  tier  strength [{fmt.level(a.confidence)}]"
           "        W-L-T   progress"]
    for p in a.policies:
        progress = fmt.rate(p.progress) if p.progress is not None else "-"
        out.append(f"  {p.policy:<{width}}  {_ranks(p.rank_low, p.rank_high):>5}  {p.tier:>4}  "
                   f"{p.strength:+.2f} [{p.low:+.2f}, {p.high:+.2f}]  "
                   f"{p.wins:>3}-{p.losses}-{p.ties}   {progress}")
    for q in a.pairs:
        if q.established:
            out.append(f"  established: {q.better} > {q.worse} ({q.wins}-{q.losses}-{q.ties}, "
                       f"p {fmt.p_value(q.p_value)}, adjusted {fmt.p_value(q.adjusted_p)})")
    out.append("  " + preference_sentence(a))
    if a.task is not None:
        out.append("  tasks: " + a.task.sentence)
    out.extend(f"note: {n}" for n in a.notes)
    return out


def preference_markdown(a: PreferenceAnalysis) -> str:
    """The analysis as Markdown."""
    out = [f"## Preference session {a.session_id}", "",
           f"{a.blocks_done} of {a.blocks_planned} blocks; {a.method}.", "",
           "| policy | rank set | tier | strength | W-L-T | progress |",
           "|---|---|---|---|---|---|"]
    for p in a.policies:
        progress = fmt.rate(p.progress) if p.progress is not None else "-"
        out.append(f"| {p.policy} | {_ranks(p.rank_low, p.rank_high)} | {p.tier} | "
                   f"{p.strength:+.2f} [{p.low:+.2f}, {p.high:+.2f}] | "
                   f"{p.wins}-{p.losses}-{p.ties} | {progress} |")
    out += ["", preference_sentence(a) + "."]
    if a.task is not None:
        out += ["", "Tasks: " + a.task.sentence + "."]
    out += [f"- {n}" for n in a.notes]
    return "\n".join(out) + "\n"


def strength_plot(a: PreferenceAnalysis) -> str:
    """Each policy's Bradley-Terry strength with its interval, best first."""
    names = [p.policy for p in a.policies]
    k = len(names)
    lo = min(p.low for p in a.policies)
    hi = max(p.high for p in a.policies)
    fig = Canvas(7.5, max(2.0, 1.3 + 0.32 * k), "Bradley-Terry strengths",
                 f"{k} policies: centred log-strength with its {fmt.level(a.confidence)} "
                 "interval; colour: tier.")
    ax = fig.axes((lo - 0.1, hi + 0.1), (-k + 0.4, 0.6), left=12 + label_width(names))
    ax.frame(nice_ticks(lo, hi, 5), [-float(i) for i in range(k)], ylabels=names, grid="x")
    for i, p in enumerate(a.policies):
        colour = PALETTE[(p.tier - 1) % len(PALETTE)] if len(a.tiers) > 1 else NEUTRAL
        ax.interval(-i, p.strength, p.low, p.high, colour,
                    label=f"{p.policy}: {p.strength:+.2f} [{p.low:+.2f}, {p.high:+.2f}]")
    ax.vline(0.0, "#999999", dash="3 3")
    ax.xlabel("log-strength (0 = the average policy)")
    return fig.svg()


def preference_html(a: PreferenceAnalysis, title: str = "evalband preference session") -> str:
    """A self-contained page: the strengths plot, the table, the orders."""
    from evalband.report._page import html_page

    rows = "".join(
        f"<tr><td>{escape(p.policy)}</td><td>{_ranks(p.rank_low, p.rank_high)}</td>"
        f"<td>{p.tier}</td><td>{p.strength:+.2f} [{p.low:+.2f}, {p.high:+.2f}]</td>"
        f"<td>{p.wins}-{p.losses}-{p.ties}</td><td>"
        f"{escape(fmt.rate(p.progress)) if p.progress is not None else '-'}</td></tr>"
        for p in a.policies)
    body = (f"<h1>{escape(title)}</h1><p>{escape(preference_sentence(a))}.</p>"
            f'<figure class="plot">{strength_plot(a)}</figure>'
            '<table class="sortable"><thead><tr><th>policy</th><th>rank set</th><th>tier</th>'
            "<th>strength</th><th>W-L-T</th><th>progress</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            + (f"<p>Tasks: {escape(a.task.sentence)}.</p>" if a.task is not None else "")
            + "".join(f"<p><small>{escape(n)}</small></p>" for n in a.notes))
    return html_page(title, body)
