"""The declared design of a sequential comparison, and each slice's stopping path under it.

One :class:`ComparisonDesign` serves ``run --until-decided`` (computed once when the run starts,
recorded in the run's manifest beside its looks, read back on resume), ``compare --sequential``
(the candidate's recorded design when it has one, else the same computation) and the viewer's
live comparison. Per slice it holds the tuned design of
:func:`evalband.stats._sequential_design.sequential_design`: a maximum of ``max_pairs`` pairs
and ``max_discordant`` discordant pairs, the test's ``theta``, the futility factor and the
threshold exact for ``max_discordant`` at ``alpha / (2 m)`` per direction (``m`` slices,
e-value Bonferroni).

**Its inputs.** The declared ``effect`` (the drop to catch), ``alpha``, ``power``, each slice's
maximum (what the run can reach) and a discordance: the declared one, or by default the
conservative one, the largest probability that two *independent* episodes at rates ``p`` and
``p - effect`` disagree over every baseline rate ``p`` (at ``p = (1 + effect) / 2``:
``(1 + effect^2) / 2``). A positively correlated pair disagrees less and carries more evidence
per discordant pair, so the power holds for any correlation ``phi >= 0`` and any baseline rate.
The design never reads the baseline's outcomes: a design tuned to the baseline's observed rate
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
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from evalband.analysis._compare import RunData
    from evalband.panel import Panel

__all__ = ["SliceDesign", "ComparisonDesign", "comparison_design", "conservative_discordance",
           "planned_pairs", "design_for", "slice_paths", "decide_path"]


@dataclass(frozen=True)
class SliceDesign:
    """One slice's declared design (see the module docstring)."""

    theta: float
    futility: float
    max_pairs: int
    max_discordant: int
    threshold: float
    power: float
    expected_pairs: float
    n_fixed: int


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
    """

    effect: float
    alpha: float
    power: float
    p_base: float
    discordant: float
    discordant_source: str
    alpha_side: float
    slices: dict[str, SliceDesign]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonDesign:
        """The design recorded by :meth:`as_dict`.

        >>> d = comparison_design({"all": 40}, effect=0.2, p_base=0.8)
        >>> ComparisonDesign.from_dict(d.as_dict()) == d
        True
        """
        fields = {k: v for k, v in data.items() if k != "slices"}
        return cls(**fields, slices={k: SliceDesign(**v) for k, v in data["slices"].items()})


def conservative_discordance(p_base: float, effect: float) -> float:
    """The discordance of independent episodes at rates ``p_base`` and ``p_base - effect``.

    >>> round(conservative_discordance(0.7, 0.1), 4)
    0.46
    """
    q = p_base - effect
    return float(p_base * (1.0 - q) + q * (1.0 - p_base))


@lru_cache(maxsize=64)
def _slice_design(p_base: float, effect: float, psi: float, alpha: float, power: float,
                  cap: int) -> SliceDesign:
    from evalband.stats import sequential_design, sequential_threshold

    d = sequential_design(p_base, effect, discordant=psi, alpha=alpha, power=power,
                          max_pairs=cap)
    threshold = sequential_threshold(alpha / 2.0, d.max_discordant, d.theta)
    return SliceDesign(theta=d.theta, futility=d.futility, max_pairs=d.max_pairs,
                       max_discordant=d.max_discordant, threshold=float(threshold),
                       power=d.power, expected_pairs=d.expected_pairs, n_fixed=d.n_fixed)


def comparison_design(
    caps: Mapping[str, int],
    *,
    effect: float = 0.10,
    alpha: float = 0.05,
    power: float = 0.8,
    p_base: float | None = None,
    discordant: float | None = None,
) -> ComparisonDesign:
    """The design for slices with at most ``caps[name]`` pairs each.

    Args:
        caps: per slice, the most pairs it can reach (the run's maximum).
        effect: the declared drop the design catches with ``power``.
        alpha: the family-wise error over the slices (two-sided).
        power: the target power per slice at ``effect``.
        p_base: a declared baseline rate (None: ``(1 + effect) / 2``, the most discordant;
            see the module docstring); rounded to a twentieth, kept within ``[effect, 1]``.
        discordant: the declared discordance (None: :func:`conservative_discordance`).

    Raises:
        InvalidParameterError: an effect or alpha outside (0, 1), no slice, a cap below 1,
            or a discordance the rates cannot have.

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
    if not caps or min(caps.values()) < 1:
        raise InvalidParameterError(
            f"every slice needs a maximum of at least one pair; got {dict(caps)}",
            parameters=("max_episodes",))
    rate = (1.0 + effect) / 2.0 if p_base is None else float(p_base)
    rate = min(1.0, max(round(rate * 20.0) / 20.0, effect))
    if discordant is None:
        psi, source = conservative_discordance(rate, effect), "conservative"
    else:
        psi, source = float(discordant), "declared"
        top = min(1.0, 2.0 - 2.0 * rate + effect, 2.0 * rate - effect)
        if not effect <= psi <= top:
            raise InvalidParameterError(
                f"`discordant` must be between the effect ({effect:g}) and {top:.3g} (what a "
                f"baseline rate of {rate:g} allows); got {discordant}",
                parameters=("discordant",))
    m = len(caps)
    slices = {name: _slice_design(rate, float(effect), round(psi, 12), alpha / m, float(power),
                                  int(cap)) for name, cap in caps.items()}
    return ComparisonDesign(effect=float(effect), alpha=float(alpha), power=float(power),
                            p_base=rate, discordant=psi, discordant_source=source,
                            alpha_side=alpha / (2 * m), slices=slices)


def planned_pairs(panel: Panel) -> dict[str, int]:
    """Per slice, the pairs a whole run of ``panel`` gives (the maximum for a comparison)."""
    from evalband.analysis._compare import slice_definitions

    specs = panel.episode_specs()
    return {name: max(1, sum(all(s.slices.get(f) == v for f, v in sl.items()) for s in specs))
            for _, name, sl in slice_definitions(panel)}


def design_for(
    baseline: RunData,
    *,
    recorded: Mapping[str, Any] | None = None,
    effect: float = 0.10,
    confidence: float = 0.95,
    power: float = 0.8,
    discordant: float | None = None,
    max_pairs: int | None = None,
) -> ComparisonDesign:
    """The design a comparison against ``baseline`` uses: the recorded one, else a new one.

    ``recorded`` is a candidate run's ``extra["sequential"]`` (``run --until-decided``): its
    design serves when it was made against this baseline. Otherwise the design of
    :func:`comparison_design` with each slice's maximum the pairs a whole run of the panel
    gives (or ``max_pairs``).

    >>> from evalband.analysis._compare import RunData
    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 30, "seed": 0,
    ...                 "budget": {"steps": 1}})
    >>> design_for(RunData("a", "pol", p.fingerprint, p, []), effect=0.3).slices["all"].max_pairs
    30
    """
    state = recorded or {}
    if state.get("design") and state.get("against") == baseline.run_id:
        return ComparisonDesign.from_dict(state["design"])
    caps = planned_pairs(baseline.panel)
    if max_pairs is not None:
        caps = {name: int(max_pairs) for name in caps}
    return comparison_design(caps, effect=effect, alpha=1.0 - confidence, power=power,
                             discordant=discordant)


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
    from evalband.stats import log_likelihood_ratio

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
