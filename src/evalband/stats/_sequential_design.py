"""Design a sequential comparison: the maximum, power and pairs to a decision, by simulation.

For a baseline rate, a drop and the discordance ``psi`` (probability a matched pair
disagrees), :func:`sequential_design` compares the anytime-valid test of
:mod:`evalband.stats._sequential` with the fixed-n exact McNemar design of the same alpha and
power (:func:`~evalband.stats._procedure.episodes_for_drop`): it picks the declared maximum
``N = r n_fixed`` as the ``r`` of a grid with the smallest expected pairs at >= ``power`` (on one
seed) and measures power, expected and 90th-percentile pairs to a decision, under the drop and
under the null, on another seed. ``evalband power --sequential`` and ``bench/bench_sequential.py``
both use it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalband.errors import InvalidParameterError

__all__ = ["RATIOS", "SequentialDesign", "simulate_sequential", "sequential_design"]

RATIOS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0)
"""Candidate maxima, as multiples of the fixed-n design's pairs."""


@dataclass(frozen=True)
class SequentialDesign:
    """A sequential design next to the fixed-n one (pairs per slice, one slice)."""

    p_base: float
    drop: float
    discordant: float
    alpha: float
    theta: float
    n_fixed: int
    max_pairs: int
    power: float
    expected_pairs: float
    p90_pairs: float
    savings: float
    null_false_regression: float
    null_expected_pairs: float
    null_p90_pairs: float
    reps: int

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


def simulate_sequential(
    probs: tuple[float, float, float], horizon: int, theta: float, alpha_side: float,
    reps: int, rng: np.random.Generator,
) -> tuple[float, float, float]:
    """(share decided "regressed", mean pairs, 90th percentile pairs) over ``reps`` runs.

    ``probs``: per pair, P(concordant), P(baseline only), P(candidate only). Each run looks
    after every pair, stops at the first regression, improvement or futility decision of
    :func:`~evalband.stats._sequential.sequential_paired_test` (threshold exact for
    ``horizon``), or at ``horizon`` pairs.

    >>> rate, mean, p90 = simulate_sequential((0.7, 0.25, 0.05), 60, 0.8, 0.025, 200,
    ...                                       np.random.default_rng(0))
    >>> rate > 0.5 and mean < 60
    True
    """
    from evalband.stats._sequential import (
        DEFAULT_FUTILITY,
        log_likelihood_ratio,
        sequential_threshold,
    )

    p = np.asarray(probs, dtype=np.float64)
    log_t = math.log(sequential_threshold(alpha_side, horizon, theta)) - 1e-12
    regressed = np.zeros(reps, dtype=bool)
    pairs = np.empty(reps, dtype=np.int64)
    chunk = max(1, min(reps, 2_000_000 // max(horizon, 1)))
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        draws = rng.choice(3, p=p / p.sum(), size=(size, horizon))
        b = np.cumsum(draws == 1, axis=1)
        c = np.cumsum(draws == 2, axis=1)
        m = b + c
        log_reg = log_likelihood_ratio(b, m, theta)
        log_imp = log_likelihood_ratio(c, m, theta)
        reg = log_reg >= log_t
        fut = (np.maximum(log_reg, log_imp) <= -math.log(DEFAULT_FUTILITY)) & (m > 0)
        stop = reg | (log_imp >= log_t) | fut
        any_stop = stop.any(axis=1)
        first = np.where(any_stop, stop.argmax(axis=1), horizon - 1)
        rows = np.arange(size)
        regressed[start : start + size] = reg[rows, first] & any_stop
        pairs[start : start + size] = first + 1
    return float(regressed.mean()), float(pairs.mean()), float(np.percentile(pairs, 90))


def sequential_design(
    p_base: float,
    drop: float,
    *,
    discordant: float,
    alpha: float = 0.05,
    power: float = 0.8,
    reps: int = 2000,
    seed: int = 0,
    ratios: tuple[float, ...] = RATIOS,
) -> SequentialDesign:
    """The sequential design for catching ``drop`` from ``p_base``, beside the fixed-n one.

    Args:
        p_base: the baseline's success rate.
        drop: the design drop (the candidate's rate is ``p_base - drop``).
        discordant: the probability a matched pair disagrees (at least ``drop``).
        alpha: two-sided level (each direction gets half).
        power: the target power at ``drop``.
        reps: simulated runs per evaluation.
        seed: the seed (the design step and the measurement use separate streams).
        ratios: candidate maxima as multiples of the fixed-n pairs.

    Raises:
        InvalidParameterError: a drop outside ``(0, p_base]`` or a discordance below it.

    >>> d = sequential_design(0.8, 0.2, discordant=0.3, reps=400, seed=1)
    >>> d.n_fixed, d.max_pairs >= int(0.8 * d.n_fixed), d.expected_pairs < d.max_pairs
    (61, True, True)
    """
    from evalband.stats._procedure import episodes_for_drop
    from evalband.stats._sequential import design_theta

    if not 0.0 < drop <= p_base <= 1.0:
        raise InvalidParameterError(f"the drop must be in (0, p_base]; got {drop} from {p_base}")
    psi = float(discordant)
    if not drop <= psi <= min(1.0, 2.0 - 2.0 * p_base + drop, 2.0 * p_base - drop):
        raise InvalidParameterError(
            f"the discordance must be between the drop ({drop}) and what the rates allow; "
            f"got {discordant}")
    n_fixed = episodes_for_drop(p_base, drop, alpha, paired=True, discordant=psi, power=power)
    if n_fixed is None:
        raise InvalidParameterError(f"no fixed-n design reaches {power:.0%} power for this drop")
    alt = (1.0 - psi, (psi + drop) / 2.0, (psi - drop) / 2.0)
    null = (1.0 - psi, psi / 2.0, psi / 2.0)
    theta = design_theta(drop, psi)
    design_rng, measure_rng = (np.random.default_rng(s)
                               for s in np.random.SeedSequence([int(seed), 29]).spawn(2))
    best: tuple[float, float] | None = None
    for r in ratios:
        horizon = max(1, int(math.ceil(r * n_fixed)))
        pw, mean, _ = simulate_sequential(alt, horizon, theta, alpha / 2.0, reps, design_rng)
        if pw >= power and (best is None or mean < best[1]):
            best = (r, mean)
    horizon = max(1, int(math.ceil((best[0] if best else ratios[-1]) * n_fixed)))
    pw, mean, p90 = simulate_sequential(alt, horizon, theta, alpha / 2.0, reps, measure_rng)
    false, null_mean, null_p90 = simulate_sequential(null, horizon, theta, alpha / 2.0, reps,
                                                     measure_rng)
    return SequentialDesign(
        p_base=float(p_base), drop=float(drop), discordant=psi, alpha=float(alpha),
        theta=theta, n_fixed=int(n_fixed), max_pairs=horizon, power=pw, expected_pairs=mean,
        p90_pairs=p90, savings=1.0 - mean / n_fixed, null_false_regression=false,
        null_expected_pairs=null_mean, null_p90_pairs=null_p90, reps=int(reps),
    )
