"""Audit: `evalband agree`'s Spearman interval covers the truth on checkpoints of known order.

An error-rate claim, not a speed one. Checkpoints with known, distinct true success rates
and an offline metric that tracks them with noise (so the truth, Spearman between the metric
and the true rates, is known); behavioural runs of n episodes each (independent or
matched); the metric held against them through the same functions ``evalband agree`` calls
(``rank_policies`` for the behavioural rank sets, ``rank_set_bounds``,
``two_level_bootstrap``). Stated: the rank-set bound covers in >= 95% of draws (pass: its
Clopper-Pearson upper bound reaches 95% and its estimate is >= 94%). The two-level
bootstrap's coverage is measured beside it (no claim: near a perfect correlation it misses,
which is why the bound is the headline interval). Also: at seed 004's noise floor (six
checkpoints, 23 scenes x 2 attempts, rates 33-50%, flips ~27%), how often ``agree`` says
the ordering cannot be validated (no behavioural order established).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from evalband.analysis._calibrate import Rate
from evalband.stats._agreement import rank_set_bounds, spearman, two_level_bootstrap
from evalband.stats._ranks import rank_policies

DESIGNS = (  # checkpoints, episodes, spread of true rates, metric noise (in rate units), paired
    (4, 100, 0.5, 0.05, True),
    (6, 46, 0.17, 0.05, False),
    (6, 200, 0.5, 0.0, True),
    (6, 200, 0.5, 0.10, False),
    (8, 100, 0.6, 0.05, True),
    (10, 200, 0.6, 0.20, True),
)


def _draw(k: int, n: int, spread: float, noise: float, paired: bool,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from scipy.special import ndtr, ndtri

    p = np.sort(rng.uniform(0.5 - spread / 2, 0.5 + spread / 2, k))
    metric = p + rng.normal(0.0, noise, k)
    if paired:
        mu = ndtri(p) * np.sqrt(2.0)
        u = rng.normal(0.0, 1.0, n)
        y = (rng.random((k, n)) < ndtr(mu[:, None] + u[None, :])).astype(float)
    else:
        y = (rng.random((k, n)) < p[:, None]).astype(float)
    return p, metric, y


def coverage(design: tuple[int, int, float, float, bool], reps: int, seed: int,
             boot_reps: int = 400) -> dict[str, Any]:
    """Coverage of the rank-set bound and of the two-level bootstrap for one design."""
    k, n, spread, noise, paired = design
    rng = np.random.default_rng(seed)
    bound = boot = validated = 0
    for _ in range(reps):
        p, metric, y = _draw(k, n, spread, noise, paired, rng)
        truth = spearman(metric, p)
        r = rank_policies(y, paired=paired)
        (lo, hi), _ = rank_set_bounds(metric, r.rank_low, r.rank_high, r.better)
        bound += lo - 1e-12 <= truth <= hi + 1e-12
        b = two_level_bootstrap(metric, list(y), reps=boot_reps, seed=int(rng.integers(1 << 30)))
        finite = b.spearman[np.isfinite(b.spearman)]
        blo, bhi = np.quantile(finite, [0.025, 0.975])
        boot += blo <= truth <= bhi
        validated += bool(r.better.any())
    c, bt = Rate.of(bound, reps), Rate.of(boot, reps)
    return {"checkpoints": k, "n": n, "spread": spread, "metric_noise": noise,
            "paired": paired, "reps": reps, "bound_coverage": round(c.rate, 4),
            "bound_band": [round(c.low, 4), round(c.high, 4)],
            "bootstrap_coverage": round(bt.rate, 4),
            "share_with_an_established_order": round(validated / reps, 4)}


def seed_floor(reps: int, seed: int) -> dict[str, Any]:
    """Seed 004's floor: how often no behavioural order is established (cannot validate)."""
    from scipy.special import ndtr, ndtri

    rng = np.random.default_rng(seed)
    rates = np.array([0.50, 0.46, 0.43, 0.39, 0.37, 0.33])
    sigma = 1.3  # same-scene attempt pairs flip ~27% at these rates
    mu = ndtri(rates) * np.sqrt(1 + sigma**2)
    none = 0
    for _ in range(reps):
        u = rng.normal(0, sigma, 23)
        q = ndtr(mu[:, None] + u[None, :])
        y = (rng.random((6, 23, 2)) < q[:, :, None]).reshape(6, -1).astype(float)
        r = rank_policies(y, clusters=np.repeat(np.arange(23), 2))
        none += not r.better.any()
    c = Rate.of(none, reps)
    return {"reps": reps, "cannot_validate": round(c.rate, 4),
            "band": [round(c.low, 4), round(c.high, 4)]}


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates."""
    t0 = time.perf_counter()
    reps = 100 if quick else 600
    rows = [coverage(d, reps, 40 + i) for i, d in enumerate(DESIGNS)]
    floor = seed_floor(reps, 50)
    passed = all(r["bound_band"][1] >= 0.95 and r["bound_coverage"] >= 0.94 for r in rows)
    return {"name": "agree_spearman_coverage", "kind": "audit", "designs": rows,
            "seed_floor": floor, "min_bound_coverage": min(r["bound_coverage"] for r in rows),
            "min_bootstrap_coverage": min(r["bootstrap_coverage"] for r in rows),
            "seconds": time.perf_counter() - t0, "ratio": None, "target_ratio": 0.0,
            "passed": passed}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
