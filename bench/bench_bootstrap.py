"""Benchmark: the binomial-draw bootstrap vs index resampling for a success rate.

Both sides compute the same 95% percentile bootstrap interval for the same 0/1 outcome
array (n = 200 episodes, 45 successes: seed 000's pooled strong policy) with 10 000
replicates, through the one public function ``evalband.stats.bootstrap_interval``:

* fast (default): the replicate success counts are Binomial(n, k/n), the exact
  distribution of the index bootstrap's count; their histogram is drawn directly;
* index (``fast=False``): the textbook bootstrap, a (reps, n) index matrix.

Timing is the median over several repeats (``time.perf_counter``), validation included on
both sides. The two intervals must agree to within one step of the 1/n lattice (they are
Monte-Carlo draws of the same distribution, with different random streams). Target:
fast >= 100x faster.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from evalband.stats import bootstrap_interval

N = 200
K = 45
REPS = 10_000
TARGET_RATIO = 100.0


def _median_seconds(fn: Callable[[int], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for seed in range(repeats):
        t0 = time.perf_counter()
        result = fn(seed)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run(quick: bool = False) -> dict[str, Any]:
    """Time both paths on the same data; returns the result dict (prints nothing)."""
    repeats = 5 if quick else 21
    data = np.r_[np.ones(K), np.zeros(N - K)]

    def fast(seed: int) -> Any:
        return bootstrap_interval(data, reps=REPS, seed=seed)

    def index(seed: int) -> Any:
        return bootstrap_interval(data, reps=REPS, seed=seed, fast=False)

    fast(0), index(0)  # warm-up: imports, caches
    fast_s, fast_ci = _median_seconds(fast, 10 * repeats)  # cheap: more repeats, steadier
    index_s, index_ci = _median_seconds(index, repeats)
    step = 1.0 / N + 1e-12
    agree = abs(fast_ci.low - index_ci.low) <= step and abs(fast_ci.high - index_ci.high) <= step
    ratio = index_s / fast_s
    return {
        "name": "bootstrap_fast_vs_index",
        "n": N,
        "reps": REPS,
        "repeats": {"fast": 10 * repeats, "index": repeats},
        "fast_median_s": fast_s,
        "index_median_s": index_s,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "fast_interval": [fast_ci.low, fast_ci.high],
        "index_interval": [index_ci.low, index_ci.high],
        "agree": agree,
        "passed": bool(agree and ratio >= TARGET_RATIO),
    }


if __name__ == "__main__":
    print(run())
