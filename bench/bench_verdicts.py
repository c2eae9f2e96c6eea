"""Audit: the error rates of `compare`'s verdicts and the coverage of its aggregate interval.

An error-rate claim, not a speed one. Seeded Monte Carlo through the same
``decide_family`` that decides ``evalband compare`` (``evalband.analysis._calibrate``):

* null designs (identical true rates): 5, 10 and 17 slices (one factor with 5 or 10 levels;
  a 2 x 5 panel's 7 factor values and 10 cells), matched pairs with correlation phi 0, 0.5,
  0.8 and independent arms, n = 20, 50, 200 episodes per cell, base rate 0.7, plus rates near
  0 and 1 (0.03 and 0.97 at n = 20): the rate of false "regression", "hidden regression" and
  "improves" verdicts, each with its 95% Clopper-Pearson band (stated: <= 2.5% each);
* coverage of the aggregate interval (stratified MOVER) by simulation: 1 and 3 cells, n = 10,
  20 and 50 per cell, matched (phi 0.5) and unpaired, true rates from 0.02 to 0.98, with the
  count of zero-width intervals.

Pass: every false-verdict rate's lower Monte Carlo bound <= 2.5% and every coverage >= 93%.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from evalband.analysis._calibrate import Rate, simulate_tables, verdict_of_tables
from evalband.analysis._compare import aggregate_from_tables
from evalband.panel import load_panel


def _panel(levels: dict[str, int], episodes: int) -> Any:
    factors = {name: [f"{name}{i}" for i in range(k)] for name, k in levels.items()}
    return load_panel({"name": "audit", "env": "evalband/Coin-v0", "episodes": episodes,
                       "seed": 0, "budget": {"steps": 1}, "factors": factors})


SLICES = {5: {"a": 5}, 10: {"a": 10}, 17: {"a": 2, "b": 5}}


def _row(rate: Rate) -> dict[str, Any]:
    return {"rate": round(rate.rate, 4), "band": [round(rate.low, 4), round(rate.high, 4)]}


def _null(reps: int, seed: int, quick: bool) -> list[dict[str, Any]]:
    designs = []
    for slices, levels in SLICES.items():
        for n in (20, 50) if quick else (20, 50, 200):
            for paired, phi in ((True, 0.0), (True, 0.5), (True, 0.8), (False, 0.0)):
                designs.append((slices, levels, n, paired, phi, 0.7))
    for rate in (0.03, 0.97):
        designs.append((10, SLICES[10], 20, True, 0.5, rate))
    rows = []
    rng = np.random.default_rng(seed)
    for slices, levels, n, paired, phi, rate in designs:
        panel = _panel(levels, n)
        keys = [c.key for c in panel.cells()]
        sims = simulate_tables(panel, {k: rate for k in keys}, {},
                               episodes={k: n for k in keys}, paired=paired,
                               correlation=phi, reps=reps, rng=rng)
        regress = hidden = improves = 0
        for tables in sims:
            verdict, hid, _ = verdict_of_tables(panel, tables)
            regress += verdict == "regression"
            hidden += bool(hid)
            improves += verdict == "improves"
        rows.append({"slices": slices, "n": n, "paired": paired, "phi": phi, "rate": rate,
                     "reps": reps, "false_regression": _row(Rate.of(regress, reps)),
                     "false_hidden_regression": _row(Rate.of(hidden, reps)),
                     "false_improves": _row(Rate.of(improves, reps))})
    return rows


def _coverage(reps: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for cells in (1, 3):
        panel = _panel({"a": cells}, 1) if cells > 1 else _panel({}, 1)
        keys = [c.key for c in panel.cells()]
        for n in (10, 20, 50):
            for paired in (True, False):
                for pb, pc in ((0.02, 0.02), (0.5, 0.5), (0.98, 0.98), (0.9, 0.7), (0.1, 0.3),
                               (0.95, 0.85)):
                    sims = simulate_tables(panel, {k: pb for k in keys},
                                           {k: pb - pc for k in keys},
                                           episodes={k: n for k in keys}, paired=paired,
                                           correlation=0.5, reps=reps, rng=rng)
                    covered = zero = 0
                    for tables in sims:
                        agg = aggregate_from_tables(panel, tables)
                        covered += agg.low <= pc - pb <= agg.high
                        zero += agg.high <= agg.low
                    rows.append({"cells": cells, "n": n, "paired": paired, "p_baseline": pb,
                                 "p_candidate": pc, "coverage": round(covered / reps, 4),
                                 "zero_width": zero, "reps": reps})
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates and sizes."""
    t0 = time.perf_counter()
    null = _null(150 if quick else 600, 21, quick)
    cover = _coverage(300 if quick else 1500, 22)
    passed = (
        all(r[k]["band"][0] <= 0.025 for r in null
            for k in ("false_regression", "false_hidden_regression", "false_improves"))
        and all(r["coverage"] >= 0.93 and r["zero_width"] == 0 for r in cover)
    )
    return {
        "name": "compare_verdict_error_rates",
        "kind": "audit",
        "null_designs": null,
        "aggregate_coverage": cover,
        "max_false_regression": max(r["false_regression"]["rate"] for r in null),
        "max_false_improves": max(r["false_improves"]["rate"] for r in null),
        "min_aggregate_coverage": min(r["coverage"] for r in cover),
        "seconds": time.perf_counter() - t0,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": passed,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
