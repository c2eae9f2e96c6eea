"""Experiment (issue 29): a pseudo-count floor under the rectifier's score variance.

The default interval's one coverage shortfall (94.94% exactly at a 10% rate, 98% symmetric
agreement, 300 labels) comes from the rare "only the trusted scorer says success" cell
(value 1, the highest) being empty in 55% of the samples: the constrained fit then gives the
upper side too little spread. This experiment takes, at every hypothesised rate, the larger
of the default variance and the variance with ``F`` counts in each extreme value no labelled
episode showed (Jeffreys' half count, F = 0.5, or Perks' quarter, 0.25; for the variance
only, the estimate unchanged). Taking the larger one makes every interval contain the
default's, so coverage can only rise; the question is what it costs in width.

Run: ``PYTHONPATH=src nice .venv/bin/python bench/ppi_floor.py F`` -> ``bench/ppi_floor_F.json``:
the exact coverage at the shortfall design and the whole ``bench_ppi`` audit (2,000 draws a
design, exact coverage of the 20-label designs), widths against Wilson's, Blaker's and
Clopper-Pearson's intervals of the trusted labels alone.

**Verdict: not adopted.** F = 0.25 lifts the shortfall design to 95.5% and F = 0.5 to
95.9%, but the floor also applies where few labels leave an extreme value unseen by chance,
and there it only widens intervals that already covered 98-99.99%: wider than Wilson's in
10 (F = 0.25) and 27 (F = 0.5) of the 156 informative designs instead of 3, and wider than
even Blaker's exact interval in 2 (up to 1.005 and 1.027).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ppi  # noqa: E402
from evalband.stats import _ppi  # noqa: E402

_DEFAULT = _ppi._constrained_variance


def floored(floor: float):  # type: ignore[no-untyped-def]
    """The default variance, at least what it is with ``floor`` counts in each unseen
    extreme value of the row."""
    def variance(counts: npt.NDArray[np.float64], values: npt.NDArray[np.float64],
                 theta: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        base = _DEFAULT(counts, values, theta)
        seen = counts > 0
        extreme = ((values == values.max(axis=1, keepdims=True))
                   | (values == values.min(axis=1, keepdims=True)))
        seen_value = np.array([[bool(np.any(seen[i] & (values[i] == w))) for w in values[i]]
                               for i in range(len(values))])
        add = extreme & ~seen_value
        if not add.any():
            return base
        return np.maximum(base, _DEFAULT(counts + floor * add, values, theta))
    return variance


if __name__ == "__main__":
    t0 = time.perf_counter()
    f = float(sys.argv[1])
    start_load = os.getloadavg()
    _ppi._constrained_variance = floored(f)
    target = bench_ppi.exact(0.1, 0.98, 300, "symmetric")
    audit = bench_ppi.run()
    keep = ("informative_at_85", "exact_min_coverage", "min_coverage", "failing", "exact")
    Path(__file__).with_name(f"ppi_floor_{f}.json").write_text(json.dumps({
        "floor": f, "shortfall_design_exact": target} | {k: audit[k] for k in keep} | {
        "load_at_start": [round(x, 2) for x in start_load],
        "load_at_end": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.perf_counter() - t0, 1)}, indent=1) + "\n")
