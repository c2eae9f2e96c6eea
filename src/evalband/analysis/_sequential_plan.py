"""The declared design of a sequential comparison, fixed before the data, and each slice's path.

One :class:`ComparisonDesign` serves ``run --until-decided`` (computed once when the run starts,
recorded in the run's manifest beside its looks, read back on resume), ``compare --sequential``
and the viewer's live comparison. Per slice it holds the tuned design of
:func:`evalband.stats._sequential_design.sequential_design`: a maximum of ``max_pairs`` pairs
and ``max_discordant`` discordant pairs, the test's ``theta``, the futility factor and the
threshold exact for ``max_discordant`` at ``alpha / (2 m)`` per direction (``m`` slices,
e-value Bonferroni), with its exact operating characteristics at the assumed discordance: the
power at the declared drop, the expected pairs to a decision at that drop and under no
difference, and -- when the maximum is too small for the target power -- the smallest drop it
does catch with that power.

**Fixed before the data** (:func:`design_for`). The design a comparison uses is, in order:
the candidate run's record of ``run --until-decided`` against this baseline (source
``"run"``); the panel's ``design`` block, stored with both runs (``"panel"``); or the tool's
default (``"default"``: a 10-point drop, 80% power, the conservative discordance, each slice's
planned pairs) -- none of them chosen after the comparison's data. A design asked for at
comparison time that differs from it (another effect, power, discordance, maximum or
confidence) would be chosen after the data: trying designs until one decides inflates the error
(the audit: 4.9-5.9% false regressions at a nominal 2.5% over 9 designs), so it is refused
unless marked ``exploratory`` (``"exploratory"``), which the output then says first.

**Its inputs.** The declared ``effect`` (the drop to catch), ``alpha``, ``power``, each slice's
maximum (what the run can reach) and a discordance: the declared one, or by default the
conservative one, the largest probability that two *independent* episodes at rates ``p`` and
``p - effect`` disagree over every baseline rate ``p`` (at ``p = (1 + effect) / 2``:
``(1 + effect^2) / 2``). A positively correlated pair disagrees less and carries more evidence
per discordant pair, so where the maximum allows the target power, the power holds for any
correlation ``phi >= 0`` and any baseline rate. (When a slice's maximum is too small for the
target power, pairs that disagree less also reach fewer discordant pairs within it, and the
power there can be lower still: the design records that least power too, and says it.) The
design never reads the baseline's outcomes: a design tuned to the baseline's observed rate
depends on the very pairs it then tests (with the rate rounded to a twentieth, 4,000 null runs
of one slice at 0.7 gave 2.65% false regressions against 2.05% with the rate fixed, at a
nominal 2.5%), so the default keeps the level exact; declare ``discordant`` (e.g. from an
earlier run's flip rate) to tune the design to a rig.

**Level.** The threshold is exact for the discordant cap whatever ``theta`` and futility are;
each slice stops at its first decision, at its discordant cap or at its pair cap, looking after
every pair (:func:`decide_path`). Looking only at chunks, or the run stopping sooner because
another slice decided, can only lower the crossing probability, so the family-wise error holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from evalband.analysis._compare import RunData
    from evalband.panel import DesignSpec, Panel

__all__ = ["SliceDesign", "ComparisonDesign", "comparison_design", "conservative_discordance",
           "planned_pairs", "design_for", "slice_paths", "decide_path", "DESIGN_SOURCES"]

DESIGN_SOURCES = {
    "run": "declared at run --until-decided, before the candidate's first episode",
    "panel": "declared in the panel's design block, before either run",
    "default": "fixed by the tool's defaults, not chosen from the data",
    "exploratory": "EXPLORATORY: chosen after the data were in",
}
"""Where a comparison's design comes from, in words."""


@dataclass(frozen=True)
class SliceDesign:
    """One slice's declared design (see the module docstring).

    ``power``, ``expected_pairs`` and the ``null_*`` pairs are exact at the design's assumed
    discordance; ``drop_at_power`` is the smallest drop the slice's maximum catches with the
    target power (None when ``power`` reaches the target at the declared drop, or in records
    made before it was kept); ``cap`` the most pairs the slice could reach; ``least_power``
    (with the conservative discordance) the least exact power at the declared drop over 25
    discordances from the drop up to the assumed one -- pairs that disagree less, as
    correlated ones do: on a maximum too small for the target power, fewer discordant pairs
    can mean less power than at the assumed discordance.
    """

    theta: float
    futility: float
    max_pairs: int
    max_discordant: int
    threshold: float
    power: float
    expected_pairs: float
    n_fixed: int
    null_expected_pairs: float | None = None
    null_p90_pairs: float | None = None
    p90_pairs: float | None = None
    drop_at_power: float | None = None
    cap: int | None = None
    least_power: float | None = None


@dataclass(frozen=True)
class ComparisonDesign:
    """The design every look of a sequential comparison uses.

    Attributes:
        effect: the declared drop.
        alpha: the family-wise error (two-sided).
        power: the target power per slice at ``effect``.
        p_base: the baseline rate the design assumes.
        discordant: the discordance it assumes.
        discordant_source: ``"declared"`` or ``"conservative"``.
        alpha_side: the level of each direction of each slice, ``alpha / (2 m)``.
        slices: per slice name, its :class:`SliceDesign`.
        source: where it was fixed (:data:`DESIGN_SOURCES`).
    """

    effect: float
    alpha: float
    power: float
    p_base: float
    discordant: float
    discordant_source: str
    alpha_side: float
    slices: dict[str, SliceDesign]
    source: str = "default"

    @property
    def exact_power(self) -> float:
        """The smallest exact power of a slice at the declared drop (what the design has)."""
        return min((s.power for s in self.slices.values()), default=0.0)

    @property
    def underpowered(self) -> bool:
        """Whether some slice's maximum is too small for the target power at the drop."""
        return self.exact_power < self.power - 1e-9

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonDesign:
        """The design recorded by :meth:`as_dict` (older records: the fields they had).

        >>> d = comparison_design({"all": 40}, effect=0.2, p_base=0.8)
        >>> ComparisonDesign.from_dict(d.as_dict()) == d
        True
        """
        known = {f.name for f in fields(cls)} - {"slices"}
        slice_known = {f.name for f in fields(SliceDesign)}
        top = {k: v for k, v in data.items() if k in known}
        top.setdefault("source", "run")  # records made before sources: by run --until-decided
        return cls(**top, slices={k: SliceDesign(**{f: x for f, x in v.items() if f in slice_known})
                                  for k, v in data["slices"].items()})


def conservative_discordance(p_base: float, effect: float) -> float:
    """The discordance of independent episodes at rates ``p_base`` and ``p_base - effect``.

    >>> round(conservative_discordance(0.7, 0.1), 4)
    0.46
    """
    q = p_base - effect
    return float(p_base * (1.0 - q) + q * (1.0 - p_base))


def _design_rate(effect: float, p_base: float | None) -> float:
    """The baseline rate a design assumes: declared, or the most discordant, to a twentieth."""
    rate = (1.0 + effect) / 2.0 if p_base is None else float(p_base)
    return min(1.0, max(round(rate * 20.0) / 20.0, effect))


@lru_cache(maxsize=256)
def _drop_at_power(cap: int, alpha: float, power: float, discordant: float | None,
                   p_base: float | None) -> float | None:
    """The smallest drop (to half a point) ``cap`` pairs catch with ``power``.

    At ``alpha`` (two-sided, per slice), with the discordance the design rules give that drop;
    None when no drop does.
    """
    from evalband.stats._power_statement import smallest_drop
    from evalband.stats._sequential_design import best_power_at

    def power_at(x: float) -> float:
        rate = _design_rate(x, p_base)
        psi = (conservative_discordance(rate, x) if discordant is None
               else max(float(discordant), x))
        return best_power_at(int(cap), round(x, 4), round(min(psi, 1.0), 12), alpha)

    return smallest_drop(power_at, 0.995, power, grain=0.005)


@lru_cache(maxsize=64)
def _slice_design(p_base: float, effect: float, psi: float, alpha: float, power: float,
                  cap: int, declared: float | None) -> SliceDesign:
    from evalband.stats import sequential_design, sequential_threshold

    d = sequential_design(p_base, effect, discordant=psi, alpha=alpha, power=power,
                          max_pairs=cap)
    threshold = sequential_threshold(alpha / 2.0, d.max_discordant, d.theta)
    drop = None
    if d.power < power - 1e-9:
        drop = _drop_at_power(int(cap), alpha, power, declared,
                              None if declared is None else p_base)
    least = None
    if declared is None:
        from evalband.stats._sequential_design import operating_characteristics

        least = min(operating_characteristics(
            d.max_pairs, d.max_discordant, d.theta, alpha / 2.0, d.futility,
            (1.0 - x, (x + effect) / 2.0, (x - effect) / 2.0))[0]
            for x in np.linspace(effect, psi, 25))
    return SliceDesign(theta=d.theta, futility=d.futility, max_pairs=d.max_pairs,
                       max_discordant=d.max_discordant, threshold=float(threshold),
                       power=d.power, expected_pairs=d.expected_pairs, n_fixed=d.n_fixed,
                       null_expected_pairs=d.null_expected_pairs, null_p90_pairs=d.null_p90_pairs,
                       p90_pairs=d.p90_pairs, drop_at_power=drop, cap=int(cap),
                       least_power=None if least is None else float(least))


def comparison_design(
    caps: Mapping[str, int],
    *,
    effect: float = 0.10,
    alpha: float = 0.05,
    power: float = 0.8,
    p_base: float | None = None,
    discordant: float | None = None,
    source: str = "default",
) -> ComparisonDesign:
    """The design for slices with at most ``caps[name]`` pairs each.

    Args:
        caps: per slice, the most pairs it can reach (the run's maximum).
        effect: the declared drop the design is tuned to.
        alpha: the family-wise error over the slices (two-sided).
        power: the target power per slice at ``effect`` (reached when the maximum allows;
            each slice's ``power`` says what it has).
        p_base: a declared baseline rate (None: ``(1 + effect) / 2``, the most discordant;
            see the module docstring); rounded to a twentieth, kept within ``[effect, 1]``.
        discordant: the declared discordance (None: :func:`conservative_discordance`).
        source: where the design was fixed (:data:`DESIGN_SOURCES`).

    Raises:
        InvalidParameterError: an effect, alpha or power outside (0, 1), no slice, a cap
            below 1, or a discordance the rates cannot have.

    >>> d = comparison_design({"a": 150, "b": 150}, effect=0.2)
    >>> d.alpha_side, d.slices["a"].max_pairs <= 150, d.discordant_source, d.discordant
    (0.0125, True, 'conservative', 0.52)
    """
    if not 0.0 < effect < 1.0:
        raise InvalidParameterError(f"`effect` must be in (0, 1); got {effect}",
                                    parameters=("effect",))
    if not 0.0 < alpha < 1.0:
        raise InvalidParameterError(f"`alpha` must be in (0, 1); got {alpha}",
                                    parameters=("alpha",))
    if not 0.0 < power < 1.0:
        raise InvalidParameterError(f"`power` must be in (0, 1); got {power}",
                                    parameters=("power",))
    if not caps or min(caps.values()) < 1:
        raise InvalidParameterError(
            f"every slice needs a maximum of at least one pair; got {dict(caps)}",
            parameters=("max_episodes",))
    if source not in DESIGN_SOURCES:
        raise InvalidParameterError(f"`source` must be one of {sorted(DESIGN_SOURCES)}; got "
                                    f"{source!r}", parameters=("source",))
    rate = _design_rate(effect, p_base)
    if discordant is None:
        psi, kind = conservative_discordance(rate, effect), "conservative"
    else:
        psi, kind = float(discordant), "declared"
        top = min(1.0, 2.0 - 2.0 * rate + effect, 2.0 * rate - effect)
        if not effect <= psi <= top:
            raise InvalidParameterError(
                f"`discordant` must be between the effect ({effect:g}) and {top:.3g} (what a "
                f"baseline rate of {rate:g} allows); got {discordant}",
                parameters=("discordant",))
    m = len(caps)
    slices = {name: _slice_design(rate, float(effect), round(psi, 12), alpha / m, float(power),
                                  int(cap), None if discordant is None else round(psi, 12))
              for name, cap in caps.items()}
    return ComparisonDesign(effect=float(effect), alpha=float(alpha), power=float(power),
                            p_base=rate, discordant=psi, discordant_source=kind,
                            alpha_side=alpha / (2 * m), slices=slices, source=source)


def planned_pairs(panel: Panel) -> dict[str, int]:
    """Per slice, the pairs a whole run of ``panel`` gives (the maximum for a comparison)."""
    from evalband.analysis._compare import slice_definitions

    specs = panel.episode_specs()
    return {name: max(1, sum(all(s.slices.get(f) == v for f, v in sl.items()) for s in specs))
            for _, name, sl in slice_definitions(panel)}


def design_from_spec(spec: DesignSpec, caps: Mapping[str, int], *,
                     source: str = "panel") -> ComparisonDesign:
    """The design a panel's ``design`` block declares, for slices with these maxima.

    >>> from evalband.panel import DesignSpec
    >>> design_from_spec(DesignSpec(effect=0.3, max_pairs=20), {"all": 50}).slices["all"].cap
    20
    """
    if spec.max_pairs is not None:
        caps = {name: min(int(cap), int(spec.max_pairs)) for name, cap in caps.items()}
    return comparison_design(caps, effect=spec.effect, alpha=spec.alpha, power=spec.power,
                             discordant=spec.discordant, source=source)


def _differs(a: float | None, b: float | None) -> bool:
    return (a is None) != (b is None) or (a is not None and b is not None
                                          and abs(float(a) - float(b)) > 1e-9)


def fixed_design(baseline: RunData, candidate: RunData | None = None, *,
                 recorded: Mapping[str, Any] | None = None,
                 confidence: float | None = None) -> ComparisonDesign:
    """The design fixed before the comparison's data (see the module docstring).

    The candidate's ``run --until-decided`` record against ``baseline``; else the panel's
    ``design`` block (both runs' stored panels must declare the same one); else the default
    (its alpha ``1 - confidence``, 0.05 when None).

    Raises:
        InvalidParameterError: the two runs' panels declare different designs.
    """
    state = recorded or {}
    if state.get("design") and state.get("against") == baseline.run_id:
        return ComparisonDesign.from_dict(state["design"])
    spec = baseline.panel.design
    if candidate is not None and candidate.panel.design != spec:
        raise InvalidParameterError(
            f"runs {baseline.run_id} and {candidate.run_id} declare different sequential "
            f"designs in their panels ({spec} and {candidate.panel.design}); a design fixed "
            "before the data is one design: compare with the runs' common one, or pass "
            "`exploratory=True`", parameters=("exploratory",))
    caps = planned_pairs(baseline.panel)
    if spec is not None:
        return design_from_spec(spec, caps)
    return comparison_design(caps, alpha=0.05 if confidence is None else 1.0 - confidence)


def design_for(
    baseline: RunData,
    *,
    recorded: Mapping[str, Any] | None = None,
    candidate: RunData | None = None,
    effect: float | None = None,
    confidence: float | None = None,
    power: float | None = None,
    discordant: float | None = None,
    max_pairs: int | None = None,
    exploratory: bool = False,
) -> ComparisonDesign:
    """The design a comparison against ``baseline`` uses: the one fixed before the data.

    :func:`fixed_design` gives it (``recorded`` is a candidate run's
    ``extra["sequential"]``). Options given here (not None) that differ from it would choose
    the design after the data: refused, unless ``exploratory`` -- then the design is made
    from them (on top of the fixed one) and marked ``"exploratory"``.

    Raises:
        InvalidParameterError: a design given after the data, not marked exploratory.

    >>> from evalband.analysis._compare import RunData
    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 30, "seed": 0,
    ...                 "budget": {"steps": 1}})
    >>> base = RunData("a", "pol", p.fingerprint, p, [])
    >>> design_for(base).slices["all"].max_pairs, design_for(base).source
    (30, 'default')
    >>> design_for(base, effect=0.3, exploratory=True).source
    'exploratory'
    """
    try:
        fixed = fixed_design(baseline, candidate, recorded=recorded, confidence=confidence)
    except InvalidParameterError:
        if not exploratory:
            raise
        fixed = comparison_design(planned_pairs(baseline.panel))
    caps = {name: (s.cap or s.max_pairs) for name, s in fixed.slices.items()}
    asked = {
        "effect": _differs(effect, fixed.effect) if effect is not None else False,
        "confidence": confidence is not None and _differs(1.0 - confidence, fixed.alpha),
        "power": power is not None and _differs(power, fixed.power),
        "discordant": discordant is not None and (fixed.discordant_source != "declared"
                                                  or _differs(discordant, fixed.discordant)),
        "max_pairs": max_pairs is not None and any(c != int(max_pairs) for c in caps.values()),
    }
    changed = tuple(k for k, v in asked.items() if v)
    if not changed:
        return fixed
    if not exploratory:
        names = ", ".join(f"`{k}`" for k in changed)
        raise InvalidParameterError(
            f"{names} would choose the sequential design after the data: this comparison's "
            f"design was fixed before them ({DESIGN_SOURCES[fixed.source]}: a "
            f"{100 * fixed.effect:g}-point drop, alpha {fixed.alpha:g}, power target "
            f"{fixed.power:.0%}); drop {names}, or pass `exploratory=True` (the output then "
            "says its error rate does not hold)", parameters=(*changed, "exploratory"))
    if max_pairs is not None:
        caps = dict.fromkeys(caps, int(max_pairs))
    return comparison_design(
        caps, effect=fixed.effect if effect is None else float(effect),
        alpha=fixed.alpha if confidence is None else 1.0 - float(confidence),
        power=fixed.power if power is None else float(power),
        discordant=(discordant if discordant is not None else
                    fixed.discordant if fixed.discordant_source == "declared" else None),
        source="exploratory")


def with_source(design: ComparisonDesign, source: str) -> ComparisonDesign:
    """The same design, recorded as fixed at ``source``."""
    return replace(design, source=source)


def _order_key(panel: Panel) -> Any:
    cells = {c.key: i for i, c in enumerate(panel.cells())}
    return lambda key: (key[1], key[2], cells.get(key[0], len(cells)), key[0])


def slice_paths(baseline: RunData, candidate: RunData, names: Sequence[str],
                paired: Mapping[str, bool]) -> dict[str, NDArray[np.int8]]:
    """Per slice, its pairs in play order: 0 both, 1 baseline only, 2 candidate only, 3 neither.

    The play order is ``run --until-decided``'s (episode, repeat, then cell in panel order).
    Paired slices pair by key; unpaired ones pair each arm's episodes in that order.
    """
    from evalband.analysis._compare import slice_definitions

    defs = {name: sl for _, name, sl in slice_definitions(baseline.panel)}
    order = _order_key(baseline.panel)

    def outcomes(run: RunData) -> dict[tuple[str, int, int], tuple[bool, dict[str, str]]]:
        return {r.key: (bool(r.success), r.slices) for r in run.records
                if r.outcome != "error" or run.errors_as_failures}

    base, cand = outcomes(baseline), outcomes(candidate)
    out: dict[str, NDArray[np.int8]] = {}
    for name in names:
        sl = defs.get(name, {})

        def keys(arm: Mapping[tuple[str, int, int], tuple[bool, dict[str, str]]],
                 sl: dict[str, str] = sl) -> list[tuple[str, int, int]]:
            return sorted((k for k, (_, s) in arm.items()
                           if all(s.get(f) == v for f, v in sl.items())), key=order)

        if paired.get(name, True):
            matched = [k for k in keys(base) if k in cand]
            pairs = [(base[k][0], cand[k][0]) for k in matched]
        else:
            pairs = [(base[a][0], cand[b][0]) for a, b in zip(keys(base), keys(cand),
                                                               strict=False)]
        out[name] = np.array([0 if b and c else 1 if b else 2 if c else 3 for b, c in pairs],
                             dtype=np.int8)
    return out


def decide_path(path: NDArray[np.int8], design: SliceDesign) -> tuple[str, dict[str, int]]:
    """A slice's decision: the first along its pairs, looking after every pair.

    Stops "regressed" / "improved" when a likelihood ratio reaches the threshold, "futile" at
    the discordant cap, at the pair cap or when both ratios are at most ``1 / futility``;
    "continue" when none happened yet. Returns the decision and the pair counts at the stop.

    >>> sd = SliceDesign(0.75, 4.0, 40, 30, 20.0, 0.8, 20.0, 50)
    >>> decide_path(np.array([1] * 12 + [0] * 5, dtype=np.int8), sd)
    ('regressed', {'both': 0, 'baseline_only': 8, 'candidate_only': 0, 'neither': 0})
    """
    from evalband.stats._sequential import log_likelihood_ratio

    path = np.asarray(path[: design.max_pairs])
    b = np.cumsum(path == 1)
    c = np.cumsum(path == 2)
    m = b + c
    log_t = math.log(design.threshold) - 1e-12
    log_reg = log_likelihood_ratio(b, m, design.theta)
    log_imp = log_likelihood_ratio(c, m, design.theta)
    some = m > 0
    reg = (log_reg >= log_t) & some
    imp = (log_imp >= log_t) & some
    fut = some & ((m >= design.max_discordant)
                  | (np.maximum(log_reg, log_imp) <= -math.log(design.futility)))
    if len(path) >= design.max_pairs > 0:
        fut[-1] = True
    stop = reg | imp | fut
    end = int(np.argmax(stop)) + 1 if stop.any() else len(path)
    decision = ("continue" if not stop.any() else "regressed" if reg[end - 1]
                else "improved" if imp[end - 1] else "futile")
    head = path[:end]
    counts = {k: int((head == i).sum()) for i, k in enumerate(("both", "baseline_only",
                                                                 "candidate_only", "neither"))}
    return decision, counts
