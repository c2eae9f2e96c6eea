"""A slice's prospective power statement, computed exactly under assumptions it states.

``compare`` says of every slice it did not decide what its design could have shown: "80%
power: a drop of >= X points from P%" and "~N pairs to catch a 10-point drop". Both are exact
figures of the *printed test* -- the exact McNemar test on matched pairs, the central Fisher
test on independent arms, at the Bonferroni level ``alpha / m`` (the level of Holm's first
step, the strictest a slice of ``m`` meets) -- under assumptions that are printed with them:

* the base rate ``P``: the baseline's observed rate in the slice (a drop is counted from it,
  so a slice at 20% can only drop 20 points);
* for matched pairs, the correlation ``phi`` of the two policies' outcomes on a pair: the
  observed one (the phi coefficient of the slice's 2 x 2 table, kept in [0, 1]; 0 when a rate
  is 0 or 1), so a drop ``x`` means pairs drawn with ``P(both) = p q + phi sqrt(p(1-p)
  q(1-q))`` at rates ``p = P`` and ``q = P - x`` (clipped to what the margins allow) -- the
  disagreement a drop brings with it, not the disagreement seen without one;
* the pairs (or episodes per arm) of the slice.

``X`` is the smallest drop, to a tenth of a point, whose exact power is at least 80% at the
printed value itself (the exact power is not monotone at this grain); ``N`` the smallest
number found by bisection on the exact power (:func:`~evalband.stats._procedure.
episodes_for_drop`). Simulation of the printed test under these assumptions delivers them
(``tests/stats/test_power_statement.py``, ``bench/bench_verdicts.py``). An earlier form
assumed the top of the base rate's Wilson band and the top of the observed discordance's, and
held only 60-76% of the time in 6 of 52 audited designs (the discordance a drop brings was
missing) while quoting up to twice the pairs needed.

Sources: McNemar, Q. (1947) *Psychometrika* 12:153-157; Fisher, R. A. (1935) *JRSS* 98:39-82;
the pair model as in :func:`evalband.stats.discordant_from_correlation`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

__all__ = ["PowerStatement", "power_statement", "pair_correlation", "joint_pair", "smallest_drop"]

POWER_TARGET = 0.8


@dataclass(frozen=True)
class PowerStatement:
    """What a slice's design could show, and the assumptions it is exact under.

    Attributes:
        detectable_drop: the smallest drop from ``base_rate`` caught with ``power`` (None: no
            drop down to a rate of 0 is).
        episodes_for_effect: pairs (or episodes per arm) that catch ``effect`` with ``power``
            (None: the slice's own ``n`` already does, beyond 20,000, or ``effect`` above the
            base rate).
        effect: the declared drop.
        base_rate: the assumed baseline rate (observed).
        correlation: the assumed phi of a pair (matched pairs; None for independent arms).
        level: the two-sided level of the test (``alpha / m``).
        power: the target power.
        test: the printed test.
    """

    detectable_drop: float | None
    episodes_for_effect: int | None
    effect: float
    base_rate: float
    correlation: float | None
    level: float
    power: float
    test: str

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


def joint_pair(p_b: float, p_c: float, phi: float) -> tuple[float, float, float, float]:
    """(both, baseline only, candidate only, neither) of a pair at rates and correlation phi.

    >>> [round(x, 3) for x in joint_pair(0.7, 0.6, 0.0)]
    [0.42, 0.28, 0.18, 0.12]
    """
    p11 = p_b * p_c + phi * math.sqrt(max(p_b * (1 - p_b) * p_c * (1 - p_c), 0.0))
    p11 = min(max(p11, max(0.0, p_b + p_c - 1.0)), min(p_b, p_c))
    p10, p01 = p_b - p11, p_c - p11
    return p11, max(p10, 0.0), max(p01, 0.0), max(1.0 - p11 - p10 - p01, 0.0)


def pair_correlation(both: int, a_only: int, b_only: int, neither: int) -> float:
    """The phi coefficient of a paired 2 x 2 table, kept in [0, 1] (0 when undefined).

    >>> pair_correlation(40, 0, 0, 10), pair_correlation(10, 10, 10, 10)
    (1.0, 0.0)
    """
    a, b, c, d = both, a_only, b_only, neither
    den = (a + b) * (c + d) * (a + c) * (b + d)
    if den == 0:
        return 0.0
    return float(min(1.0, max(0.0, (a * d - b * c) / math.sqrt(den))))


def _paired_power(n: int, p: float, x: float, phi: float, level: float) -> float:
    from evalband.stats._procedure import exact_power

    _, p10, p01, _ = joint_pair(p, p - x, phi)
    return exact_power(n, p, x, level, paired=True, discordant=p10 + p01)


def _unpaired_power(n_c: int, n_b: int, p: float, x: float, level: float) -> float:
    from evalband.stats._procedure import _fisher_central_power

    return _fisher_central_power(int(n_c), int(n_b), p - x, p, level)


def smallest_drop(power_at: Any, top: float, target: float,
                  grain: float = 0.001) -> float | None:
    """The smallest drop, on a grid of ``grain``, whose power at that very value is enough.

    Bisection on ``power_at`` over ``(0, top]``, then a step up the grid until the printed
    value itself reaches ``target`` (exact power is not monotone at a fine grain); None when
    even ``top`` does not.

    >>> smallest_drop(lambda x: x, 1.0, 0.8)
    0.8
    """
    if top <= 0 or power_at(top) < target:
        return None
    lo, hi = 0.0, top
    while hi - lo > grain / 2.0:
        mid = (lo + hi) / 2.0
        if power_at(mid) >= target:
            hi = mid
        else:
            lo = mid
    digits = max(0, -math.floor(math.log10(grain)))
    x = min(top, round(math.ceil(hi / grain - 1e-9) * grain, digits))
    while x - grain > lo and power_at(round(x - grain, digits)) >= target:
        x = round(x - grain, digits)
    while power_at(x) < target and x < top:
        x = min(top, round(x + grain, digits))
    return x if power_at(x) >= target else None


@lru_cache(maxsize=8192)
def power_statement(
    n: int, base_rate: float, level: float, effect: float, *, paired: bool,
    correlation: float = 0.0, n_baseline: int | None = None, power: float = POWER_TARGET,
) -> PowerStatement:
    """The slice's power statement under the stated assumptions (see the module docstring).

    Args:
        n: matched pairs (paired) or the candidate's episodes (unpaired).
        base_rate: the assumed baseline rate.
        level: the two-sided level of the printed test.
        effect: the declared drop for ``episodes_for_effect``.
        paired: matched pairs (exact McNemar) or independent arms (central Fisher).
        correlation: the assumed phi of a pair (paired only).
        n_baseline: the baseline's episodes (unpaired; default ``n``).
        power: the target power.

    >>> s = power_statement(100, 0.7, 0.05, 0.1, paired=True, correlation=0.5)
    >>> 0.1 < s.detectable_drop < 0.3, s.episodes_for_effect > 100
    (True, True)
    """
    from evalband.stats._procedure import episodes_for_drop

    p = float(base_rate)
    phi = float(correlation)
    n_b = int(n if n_baseline is None else n_baseline)

    def power_at(x: float) -> float:
        return (_paired_power(int(n), p, x, phi, level) if paired
                else _unpaired_power(int(n), n_b, p, x, level))

    drop = smallest_drop(power_at, p, power)
    needed = None
    if 0 < effect <= p and (drop is None or drop > effect):  # this n does not catch it
        psi = sum(joint_pair(p, p - effect, phi)[1:3]) if paired else 0.0
        needed = episodes_for_drop(p, effect, level, paired=paired, discordant=psi, power=power)
    test = "exact McNemar" if paired else "central Fisher"
    return PowerStatement(
        detectable_drop=drop, episodes_for_effect=needed,
        effect=float(effect), base_rate=p, correlation=float(correlation) if paired else None,
        level=float(level), power=float(power), test=test)
