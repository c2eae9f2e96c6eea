"""Two scorers' agreement and the prediction-powered estimate as text: a pure renderer."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalband.analysis._scorers import ScorerAgreement

__all__ = ["scorer_agreement_lines", "scorers_lines"]


def _label(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def scorers_lines(run_id: str, scorers: dict[str, dict[str, object]]) -> list[str]:
    """The scorers a run's episodes carry, one line each.

    >>> scorers_lines("r", {"success": {"source": "outcome", "episodes": 3}})
    ['run r: 1 scorer(s)', '  success      outcome        3 episodes']
    """
    out = [f"run {run_id}: {len(scorers)} scorer(s)"]
    out += [f"  {name:<12} {str(info['source']):<14} {info['episodes']} episodes"
            for name, info in scorers.items()]
    return out


def scorer_agreement_lines(a: ScorerAgreement) -> list[str]:
    """The agreement result as terminal lines (table first, then the figures, then PPI)."""
    first, second = a.scorers
    level = f"{a.confidence:.0%}"
    out = [f"run {a.run_id}: {first} ({a.sources[0]}) vs {second} ({a.sources[1]}), "
           f"{a.n} episodes judged by both"]
    width = max(6, *(len(_label(v)) for v in a.levels))
    corner = f"{first} / {second}"
    out.append(f"  {corner}  " + " ".join(f"{_label(v):>{width}}" for v in a.levels))
    for value, row in zip(a.levels, a.table, strict=True):
        out.append(f"  {_label(value):>{len(corner)}}  "
                   + " ".join(f"{c:>{width}}" for c in row))
    acc = a.accuracy
    out.append(f"  accuracy {acc['estimate']:.1%} [{acc['low']:.1%}, {acc['high']:.1%}] "
               f"({level} Wilson)")
    k = a.kappa
    if k.estimate != k.estimate:  # nan
        out.append("  Cohen's kappa undefined (one value only)")
    else:
        out.append(f"  Cohen's kappa {k.estimate:+.3f} [{k.low:+.3f}, {k.high:+.3f}] ({level})")
    if a.weighted is not None and a.weighted.estimate == a.weighted.estimate:
        w = a.weighted
        out.append(f"  quadratic-weighted kappa {w.estimate:+.3f} [{w.low:+.3f}, "
                   f"{w.high:+.3f}]")
    if a.only_first or a.only_second:
        out.append(f"  judged by one only: {first} {a.only_first}, {second} {a.only_second}")
    if a.ppi is not None:
        p = a.ppi
        out.append(f"  {first}'s rate, prediction-powered ({p.n} {first} + "
                   f"{p.n_unlabelled} {second}-only episodes): {p.estimate:.1%} "
                   f"[{p.low:.1%}, {p.high:.1%}] ({level}, {p.method}, {second} weighted "
                   f"{p.lam:.2f})")
        out.append(f"  {first}'s rate from its {p.n} labels alone: {p.classical:.1%} "
                   f"[{p.classical_low:.1%}, {p.classical_high:.1%}]  (width "
                   f"{p.high - p.low:.1%} vs {p.classical_high - p.classical_low:.1%})")
    out += [f"  note: {n}" for n in a.notes]
    return out
