"""How every renderer shows a verdict: one table of words and styles, and the sentences.

The decision engine (:mod:`evalband.analysis._verdicts`) decides; this module says. Each
verdict word of :class:`~evalband.analysis.SliceVerdict`, :class:`~evalband.analysis.Verdict`,
:class:`~evalband.analysis.Standing` and :class:`~evalband.analysis.ControlStatus` has one
:class:`Look` in :data:`LOOKS`: the word printed, its terminal (rich) style, its CSS class in the
HTML report, and its colour in the SVG plots; the terminal, Markdown, HTML (templates and
``page.css``) and plots read it from here. :func:`comparison_sentence` builds a comparison's
one-sentence verdict from the typed result (its verdict, decided slices and aggregate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalband.report._svg import IMPROVED, NEUTRAL, REGRESSED

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["Look", "LOOKS", "look", "comparison_sentence"]


@dataclass(frozen=True)
class Look:
    """How one verdict word is shown.

    Attributes:
        word: the text printed (the enum's value).
        rich: its terminal style (rich markup; ``""``: plain).
        css: its CSS class in the HTML report (``page.css`` styles it).
        colour: its colour in the SVG plots.
        row: the terminal style of a whole table row with this verdict (``None``: plain).
    """

    word: str
    rich: str
    css: str
    colour: str = NEUTRAL
    row: str | None = None


def _look(word: str, rich: str = "", colour: str = NEUTRAL, row: str | None = None) -> Look:
    return Look(word, rich, word.replace(" ", "-"), colour, row)


LOOKS: dict[str, Look] = {
    look.word: look for look in (
        # a slice's verdict (SliceVerdict)
        _look("improved", "green", IMPROVED),
        _look("regressed", "bold red", REGRESSED, row="red"),
        _look("non-inferior", "cyan"),
        _look("no detectable change"),
        _look("inconclusive", "yellow"),
        # a comparison's verdict (Verdict); "inconclusive" is shared
        _look("improves", "bold green", IMPROVED),
        _look("no regression", "bold"),
        _look("regression", "bold red", REGRESSED),
        # whether a decided difference was planned (Standing)
        _look("confirmatory", "green"),
        _look("exploratory — a hypothesis, not a finding", "yellow"),
        # how a positive control behaved (ControlStatus)
        _look("ok", "green"),
        _look("unclear", "yellow"),
        _look("misbehaving", "bold red", REGRESSED),
        _look("no data"),
    )
}
"""Every verdict word's look, by word (the enums compare equal to their words)."""


def look(verdict: str) -> Look:
    """The look of a verdict word (a plain look for a word not in :data:`LOOKS`).

    >>> look("regressed").rich, look("no regression").css
    ('bold red', 'no-regression')
    """
    found = LOOKS.get(str(verdict))
    return found if found is not None else _look(str(verdict))


def comparison_sentence(c: Comparison) -> str:
    """The comparison's verdict in one sentence, from its decided slices and aggregate.

    Which slices regressed (and whether the aggregate hides them), which cannot be judged and
    why, the aggregate's interval, and -- when undecided slices could miss the declared drop --
    how many pairs (episodes) would catch it.
    """
    from evalband.analysis import SliceVerdict, Verdict
    from evalband.analysis._models import POWER_TARGET

    if c.stopped is not None:  # a sequential design's futility stop says so, not "no change"
        return c.stopped
    agg = c.aggregate
    rows = c.slice_rows
    regressed = c.regressed
    if c.verdict == Verdict.REGRESSION:
        sentence = (
            f"{c.candidate_policy} regresses against {c.baseline_policy}: "
            f"{', '.join(c.blocking)} regressed"
            + (f" while the aggregate moved {100 * agg.delta:+.1f} points (hidden regression)"
               if c.hidden_regressions else "")
            + "."
        )
    elif c.verdict == Verdict.INCONCLUSIVE:
        unsure = c.unsure
        sentence = (
            f"inconclusive: {', '.join(unsure)} cannot be judged "
            f"({'; '.join(c.reasons_of(name)[0] for name in unsure if c.reasons_of(name))})."
        )
    elif c.verdict == Verdict.IMPROVES:
        sentence = (
            f"{c.candidate_policy} improves on {c.baseline_policy}: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            + ("with no slice regressed." if not regressed else
               f"with no primary slice regressed (secondary slice(s) regressed: "
               f"{', '.join(regressed)}).")
        )
    else:
        sentence = (
            f"no regression established, and no improvement: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            "contains 0."
        )
        if regressed:  # regressions outside the primary (required) set
            sentence += f" (secondary slice(s) regressed: {', '.join(regressed)})"
    decided = [m for m in c.metrics if m.role == "primary" and m.verdict in (
        SliceVerdict.REGRESSED, SliceVerdict.IMPROVED) and m.label not in c.blocking]
    if decided:  # the primary metrics' decided slices, said with the success slices
        sentence += " Primary metric(s): " + "; ".join(
            f"{m.metric} {m.verdict} in {m.slice}" for m in decided) + "."
    weak = [r for r in rows if r.episodes_for_effect is not None
            and r.verdict not in (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED)]
    if weak:
        most = max(r.episodes_for_effect or 0 for r in weak)
        sentence += (
            f" {len(weak)} slice(s) could miss a {100 * c.effect:.0f}-point drop at this n: "
            f"up to {most} {'pairs' if weak[0].pairing == 'paired' else 'episodes per arm'} "
            f"per slice would catch it with {100 * POWER_TARGET:.0f}% power."
        )
    return sentence
