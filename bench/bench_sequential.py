"""Pairs to a decision: the anytime-valid sequential comparison vs the fixed-n exact McNemar design.

**Savings.** Per scenario (baseline rate 0.5 or 0.8, a drop of 10, 20 or 30 points, paired
phi = 0.5, one slice, alpha = 0.05 two-sided): the fixed-n design is the smallest n at which the
exact McNemar test has 80% power (``episodes_for_drop``). The sequential design
(:func:`evalband.stats._sequential_design.sequential_design`) declares a maximum of pairs and of
discordant pairs, looks after every pair, and is chosen for the smallest expected pairs at
exact power >= 80%. Its power and pairs are computed exactly (no Monte Carlo error) and checked
by simulation (``mc_power``, ``mc_expected_pairs``). Reported per scenario: ``savings = 1 -
E[pairs] / n``, power, the 90th percentile, and under the null the exact false-regression rate
(at most alpha / 2 by construction; ``mc_null_false_regression`` its Monte Carlo check) and the
expected pairs.

**Type-I error under continuous monitoring.** Null matched pairs (both rates 0.7, phi in
{0, 0.5, 0.8}, 1, 5 and 10 slices, 150 pairs per slice) looked at after every pair and after
every 10, each slice's test at alpha / (2 m) per direction (e-value Bonferroni), threshold exact
for 150 discordant pairs; the share of runs with any false "regressed" (target alpha / 2) and
any false decision (target alpha), each with its 95% Clopper-Pearson interval. **Coverage** of
the 95% confidence sequence, uniformly over 200 pairs. Error rates, not timings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

TARGET_SAVINGS = 0.30
ALPHA = 0.05


def scenario(p_base: float, drop: float, reps: int, seed: int) -> dict[str, Any]:
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential_design import sequential_design

    phi = 0.5
    probs = _joint(p_base, p_base - drop, phi)
    design = sequential_design(p_base, drop, discordant=probs[1] + probs[2], alpha=ALPHA,
                               power=0.8, reps=reps, seed=seed)
    return {**design.as_dict(), "phi": phi}


def _interval(count: int, reps: int) -> list[float]:
    """95% Clopper-Pearson interval of a rate."""
    from scipy.stats import beta

    low = 0.0 if count == 0 else float(beta.ppf(0.025, count, reps - count + 1))
    high = 1.0 if count == reps else float(beta.ppf(0.975, count + 1, reps - count))
    return [low, high]


def type_one(slices: int, phi: float, looks: int, reps: int, seed: int) -> dict[str, Any]:
    """Null runs with any false 'regressed' / any false decision, looked at every ``looks``."""
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential import log_likelihood_ratio, sequential_threshold

    n, theta = 150, 0.75
    log_t = math.log(sequential_threshold(ALPHA / (2 * slices), n, theta)) - 1e-12
    probs = np.asarray(_joint(0.7, 0.7, phi))
    rng = np.random.default_rng(seed)
    reg_runs = either_runs = 0
    for start in range(0, reps, 2000):
        size = min(2000, reps - start)
        draws = rng.choice(4, p=probs / probs.sum(), size=(size, slices, n))
        b = np.cumsum(draws == 1, axis=2)[:, :, looks - 1 :: looks]
        c = np.cumsum(draws == 2, axis=2)[:, :, looks - 1 :: looks]
        reg = log_likelihood_ratio(b, b + c, theta) >= log_t
        imp = log_likelihood_ratio(c, b + c, theta) >= log_t
        reg_runs += int(reg.any(axis=(1, 2)).sum())
        either_runs += int((reg | imp).any(axis=(1, 2)).sum())
    return {"slices": slices, "phi": phi, "look_every": looks, "reps": reps,
            "false_regression": reg_runs / reps,
            "false_regression_ci95": _interval(reg_runs, reps),
            "false_decision": either_runs / reps,
            "false_decision_ci95": _interval(either_runs, reps)}


def coverage(p_b: float, p_c: float, phi: float, reps: int, seed: int) -> dict[str, Any]:
    """Share of runs whose 95% confidence sequence covers the difference at all 200 looks."""
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential import _log_capital

    n, level = 200, 0.95
    probs = np.asarray(_joint(p_b, p_c, phi))
    delta = float(probs[2] - probs[1])
    rng = np.random.default_rng(seed)
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, n))
    b = np.cumsum(draws == 1, axis=1)
    c = np.cumsum(draws == 2, axis=1)
    caps = _log_capital(b, c, np.arange(1, n + 1)[None, :], np.array([delta]))[..., 0]
    covered = int((caps.max(axis=1) < math.log(1.0 / (1.0 - level))).sum())
    return {"p_baseline": p_b, "p_candidate": p_c, "phi": phi, "reps": reps,
            "coverage": covered / reps, "coverage_ci95": _interval(covered, reps)}


def run(quick: bool = False) -> dict[str, Any]:
    reps = 1500 if quick else 6000
    rows = [scenario(p, d, reps, seed=17 + i)
            for i, (p, d) in enumerate((p, d) for p in (0.5, 0.8) for d in (0.1, 0.2, 0.3))]
    mean_savings = float(np.mean([r["savings"] for r in rows]))
    null_reps = 2000 if quick else 10000
    nulls = [type_one(m, phi, looks, null_reps, seed=1000 + 10 * m + int(10 * phi) + looks)
             for m in (1, 5, 10) for phi in (0.0, 0.5, 0.8) for looks in (1, 10)]
    covers = [coverage(pb, pc, phi, 500 if quick else 2000, seed=7 + i)
              for i, (pb, pc, phi) in enumerate(((0.7, 0.6, 0.5), (0.5, 0.5, 0.0),
                                                 (0.8, 0.9, 0.8)))]
    # an error rate passes when its 95% interval reaches down to (or below) its target
    errors_ok = all(r["false_regression_ci95"][0] <= ALPHA / 2
                    and r["false_decision_ci95"][0] <= ALPHA for r in nulls)
    coverage_ok = all(c["coverage_ci95"][1] >= 1.0 - ALPHA for c in covers)
    return {
        "name": "sequential",
        "kind": "audit",
        "reps": reps,
        "scenarios": rows,
        "savings_by_scenario": {f"p={r['p_base']:g} drop={r['drop']:g}": round(r["savings"], 4)
                                for r in rows},
        "mean_savings": mean_savings,
        "target_savings": TARGET_SAVINGS,
        "type_one": nulls,
        "coverage": covers,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": bool(mean_savings >= TARGET_SAVINGS
                       and all(r["power"] >= 0.8 for r in rows)
                       and all(r["null_false_regression"] <= ALPHA / 2 for r in rows)
                       and errors_ok and coverage_ok),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
