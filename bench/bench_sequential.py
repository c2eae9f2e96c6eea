"""Pairs to a decision: the anytime-valid sequential comparison vs the fixed-n exact McNemar design.

Per scenario (baseline rate 0.5 or 0.8, a drop of 10, 20 or 30 points, paired phi = 0.5, one
slice, alpha = 0.05 two-sided): the fixed-n design is the smallest n at which the exact McNemar
test has 80% power (``episodes_for_drop``). The sequential design looks after every pair, uses
the likelihood ratio of the design alternative with its threshold computed exactly for a
declared maximum ``N = r n`` (``r`` the smallest of a grid giving >= 80% power, chosen on one
seed and measured on another) and a non-binding futility stop. Reported: power, expected and
90th-percentile pairs to a decision at the design effect, the savings ``1 - E[pairs] / n``, and
under the null the false-regression rate and expected pairs. Error rates, not timings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TARGET_SAVINGS = 0.30


def scenario(p_base: float, drop: float, reps: int, seed: int) -> dict[str, Any]:
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential_design import sequential_design

    phi = 0.5
    probs = _joint(p_base, p_base - drop, phi)
    design = sequential_design(p_base, drop, discordant=probs[1] + probs[2], alpha=0.05,
                               power=0.8, reps=reps, seed=seed)
    return {**design.as_dict(), "phi": phi}


def run(quick: bool = False) -> dict[str, Any]:
    reps = 1500 if quick else 6000
    rows = [scenario(p, d, reps, seed=17 + i)
            for i, (p, d) in enumerate((p, d) for p in (0.5, 0.8) for d in (0.1, 0.2, 0.3))]
    mean_savings = float(np.mean([r["savings"] for r in rows]))
    # MC band on a false-regression rate: 99.5% binomial quantile of alpha/2
    from scipy.stats import binom

    limit = float(binom.ppf(0.995, reps, 0.025)) / reps
    return {
        "name": "sequential",
        "kind": "audit",
        "reps": reps,
        "scenarios": rows,
        "mean_savings": mean_savings,
        "target_savings": TARGET_SAVINGS,
        "ratio": None,
        "target_ratio": 0.0,
        "null_false_regression_limit": limit,
        "passed": bool(mean_savings >= TARGET_SAVINGS
                       and all(r["power"] >= 0.78 for r in rows)
                       and all(r["null_false_regression"] <= limit for r in rows)),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
