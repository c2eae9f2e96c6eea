"""What a sequential comparison says: its decision, exit code, and the design's figures in words.

Every figure printed here is the stored design's exact one (:class:`~evalband.analysis.
_sequential_plan.ComparisonDesign`, computed by :func:`evalband.stats.sequential_design` at the
discordance the design assumes): its power at the declared drop -- the power it *has*, which is
below the target when a slice's maximum is too small, and then the drop it does catch with the
target power -- and the pairs a slice takes to a decision at that drop and under no difference.

A **futility** stop (every slice stopped without a regression, at least one without a decision
in either direction: both likelihood ratios small, or the maximum reached) is not "no change":
it says "stopped: a drop of X could not be shown within the maximum", with the power the design
had to show it, and exits with its own code (6), not the 3 of a fixed-n "no regression" or of a
declared non-inferiority margin met.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis._compare import Comparison
    from evalband.analysis._sequential_plan import ComparisonDesign

__all__ = ["SEQUENTIAL_EXIT_CODES", "FUTILITY_EXIT_CODE", "overall_decision",
           "sequential_exit_code", "design_lines", "procedure_note", "futility_sentence",
           "exploratory_notice"]

FUTILITY_EXIT_CODE = 6
"""Exit status of a futility stop (``run --until-decided``, ``compare --sequential``)."""
SEQUENTIAL_EXIT_CODES = {"regression": 4, "improvement": 0, "non-inferior": 3,
                         "futility": FUTILITY_EXIT_CODE}
"""Exit status per sequential decision; undecided is 5 (as an inconclusive comparison)."""
_SEVERITY = ("improvement", "non-inferior", "futility", None, "regression")
_DECIDED = {"regressed", "improved", "non-inferior", "no detectable change"}


def overall_decision(c: Comparison, *, at_maximum: bool = False) -> str | None:
    """The sequential decision of a comparison, or None while undecided.

    "regression" when the verdict is a regression; otherwise decided only once every slice
    with episodes is decided: "improvement" / "non-inferior" when every slice improved or was
    shown non-inferior (at least one improved for "improvement"), else "futility"; "futility"
    too when the maximum is reached.
    """
    if str(c.verdict) == "regression":
        return "regression"
    verdicts = [str(r.verdict) for r in c.slice_rows]
    if verdicts and all(v in _DECIDED for v in verdicts):
        if all(v in ("improved", "non-inferior") for v in verdicts):
            return "improvement" if "improved" in verdicts else "non-inferior"
        return "futility"
    return "futility" if at_maximum else None


def sequential_exit_code(decisions: Sequence[str | None]) -> int:
    """The exit status of the most severe of several sequential decisions.

    >>> sequential_exit_code(["improvement", "futility"])
    6
    >>> sequential_exit_code([None, "futility"])
    5
    """
    worst = max(decisions, key=_SEVERITY.index, default=None)
    return 5 if worst is None else SEQUENTIAL_EXIT_CODES[worst]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def design_lines(design: ComparisonDesign) -> list[str]:
    """The design's exact figures, one sentence per group of slices with the same maximum.

    >>> from evalband.analysis._sequential_plan import comparison_design
    >>> lines = design_lines(comparison_design({"a": 150}, effect=0.1))
    >>> "34% power" in lines[0] and "could miss" in lines[0]
    True
    """
    groups: dict[tuple[int, int], list[str]] = {}
    for name, s in design.slices.items():
        groups.setdefault((s.max_pairs, s.max_discordant), []).append(name)
    m = len(design.slices)
    out = []
    for (n_max, d_max), names in sorted(groups.items()):
        s = design.slices[names[0]]
        who = "each slice" if len(groups) == 1 else f"{len(names)} slice(s) ({', '.join(names)})"
        text = (
            f"{who}: at most {n_max} pairs or {d_max} discordant; a {100 * design.effect:g}-point "
            f"drop is shown with {_pct(s.power)} power (exact, at discordance "
            f"{design.discordant:.3g}, {design.discordant_source}; alpha {design.alpha:g} over "
            f"{m} slice(s))")
        if s.least_power is not None and s.least_power < s.power - 0.005:
            text += (f", as low as {_pct(s.least_power)} if pairs disagree less (strongly "
                     f"correlated pairs, discordance down to {design.effect:g})")
        if s.power < design.power - 1e-9:
            text += (f" -- it could miss it: {_pct(design.power)} power needs a drop of "
                     f">= {100 * s.drop_at_power:.1f} points at this maximum"
                     if s.drop_at_power is not None else
                     f" -- it could miss it: no drop reaches {_pct(design.power)} power at this "
                     "maximum")
        text += f"; expected pairs to a decision at that drop {s.expected_pairs:.0f}"
        if s.null_expected_pairs is not None:
            text += (f", with no difference {s.null_expected_pairs:.0f} (90th percentile "
                     f"{s.null_p90_pairs:.0f}) of {n_max}")
        if s.n_fixed:
            text += (f"; the fixed-n exact test needs {s.n_fixed} pairs for "
                     f"{_pct(design.power)} power")
        out.append(text)
    return out


def procedure_note(design: ComparisonDesign, m: int) -> str:
    """The ``procedure:`` note of a comparison under ``design`` (its figures exact)."""
    from evalband.analysis._sequential_plan import DESIGN_SOURCES

    per_side = f"{100 * design.alpha / (2 * m):.3g}% per direction"
    return (
        f"procedure: anytime-valid sequential test per slice under the design "
        f"{DESIGN_SOURCES[design.source]}, tuned to a {100 * design.effect:g}-point drop "
        f"(theta = {next(iter(design.slices.values())).theta:.3f}); "
        + "; ".join(design_lines(design))
        + f"; each slice stopped at its first decision; e-value Bonferroni across {m} slice(s) "
        f"at {per_side}; intervals are confidence sequences, valid at every n")


def futility_sentence(design: ComparisonDesign, episodes: str = "") -> str:
    """The sentence of a futility stop (``episodes``: e.g. "after 300 of 300 episodes")."""
    powers = sorted({round(s.power, 2) for s in design.slices.values()})
    had = (_pct(powers[0]) if len(powers) == 1
           else f"{_pct(powers[0])} to {_pct(powers[-1])}")
    text = (f"stopped{(' ' + episodes) if episodes else ''}: a drop of "
            f"{100 * design.effect:g} points could not be shown within the maximum (the design "
            f"had {had} power per slice to show it")
    drops = [s.drop_at_power for s in design.slices.values() if s.drop_at_power is not None]
    if design.underpowered and drops:
        text += (f"; at this maximum {_pct(design.power)} power needs a drop of >= "
                 f"{100 * max(drops):.1f} points")
    return text + ") -- not evidence of no change"


def exploratory_notice(design: ComparisonDesign) -> str:
    """The first line of a comparison whose design was chosen after the data."""
    return (f"EXPLORATORY: this sequential design (a {100 * design.effect:g}-point drop, "
            f"power target {_pct(design.power)}, discordance {design.discordant:.3g}) was "
            "chosen after the data were in; trying designs until one decides inflates the "
            "error rate, so its verdict does not keep its alpha -- declare the design before "
            "the data (run --until-decided, or the panel's design block)")
