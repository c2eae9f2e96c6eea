"""Benchmark (an audit): Holm vs the discrete Holm step-down on the hidden-regression design.

The question of issue 31: one slice that truly drops 20 points among 10 slices x 50 pairs --
how often does ``compare`` name it, at a family-wise false regression of at most 2.5%? Both
procedures decide the very same simulated tables (``evalband.analysis._calibrate``'s
simulation of the panel's pair tables, the path ``calibrate`` and the verdict audit use):

* ``power``: the share of comparisons whose dropped slice is ``regressed``;
* ``false_regression``: under identical policies (no drop), the share with any slice
  ``regressed`` (the family-wise false regression: stated at most alpha / 2 = 2.5%);

each with its 95% Clopper-Pearson band, for several baseline rates and pair correlations
(phi 0.9 is close to the common-random-number pairing of the hidden-regression lab);
``recheck``: the three null designs of the verdict audit (``bench_verdicts``) whose false
regression came out highest at 600 comparisons, again at 8,000 with both procedures. The
discrete procedure charges each slice only the p-values its exact test can attain
(:class:`evalband.analysis._verdicts.DiscreteHolm`); Holm charges every slice ``t``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

DESIGNS = ((0.7, 0.0), (0.7, 0.5), (0.5, 0.5), (0.8, 0.3), (0.7, 0.9))
"""(baseline success rate, phi between the policies' outcomes on a pair)."""
RECHECK = ((5, 200, True, 0.0), (10, 200, True, 0.5), (5, 50, False, 0.0))
"""(slices, episodes per cell, paired, phi) of the verdict audit's highest null rates."""


def _band(k: int, n: int) -> dict[str, Any]:
    from evalband.stats import interval

    iv = interval(k, n, method="clopper-pearson")
    return {"rate": round(k / n, 4), "band": [round(iv.low, 4), round(iv.high, 4)]}


def run(quick: bool = False) -> dict[str, Any]:
    """Power and family-wise false regression of both procedures, per design."""
    import numpy as np

    from evalband.analysis._calibrate import _membership, simulate_tables
    from evalband.analysis._compare import (
        PairTable,
        RunData,
        _row_from_table,
        aggregate_from_tables,
        decide_family,
    )
    from evalband.analysis._verdicts import DISCRETE_HOLM, HOLM
    from evalband.panel import load_panel

    panel = load_panel({"name": "hidden-10x50", "env": "evalband/Coin-v0", "episodes": 50,
                        "seed": 0, "budget": {"steps": 1},
                        "factors": {"arm": [f"s{i}" for i in range(10)]}})
    members = _membership(panel)
    cells = [c.key for c in panel.cells()]
    base = RunData("baseline", "baseline", "sim", panel, [])

    def verdicts(tables: dict[str, PairTable], procedure: Any) -> list[str]:
        rows = []
        for kind, name, keys in members:
            t = PairTable()
            for k in keys:
                t = t + tables[k]
            rows.append(_row_from_table(kind, name, t, panel, confidence=0.95))
        (c,) = decide_family(base, [(base, False, rows, aggregate_from_tables(panel, tables))],
                             power_statements=False, procedure=procedure)
        return [str(r.verdict) for r in c.slice_rows]

    reps = 300 if quick else 3000
    t0 = time.perf_counter()
    rows = []
    for i, (rate, phi) in enumerate(DESIGNS):
        rng = np.random.default_rng(np.random.SeedSequence([31, i]))
        episodes = {c: 50 for c in cells}
        alt = simulate_tables(panel, {c: rate for c in cells}, {cells[0]: 0.2},
                              episodes=episodes, paired=True, correlation=phi, reps=reps,
                              rng=rng)
        null = simulate_tables(panel, {c: rate for c in cells}, {}, episodes=episodes,
                               paired=True, correlation=phi, reps=reps, rng=rng)
        row: dict[str, Any] = {"base_rate": rate, "phi": phi, "reps": reps}
        for procedure in (HOLM, DISCRETE_HOLM):
            named = sum(verdicts(t, procedure)[0] == "regressed" for t in alt)
            false = sum("regressed" in verdicts(t, procedure) for t in null)
            row[procedure.name] = {"power": _band(named, reps),
                                   "false_regression": _band(false, reps)}
        row["power_gain"] = round(row["discrete holm"]["power"]["rate"]
                                  - row["holm"]["power"]["rate"], 4)
        rows.append(row)
    recheck = []
    for j, (slices, n, paired, phi) in enumerate(RECHECK):
        audit = load_panel({"name": "audit", "env": "evalband/Coin-v0", "episodes": n,
                            "seed": 0, "budget": {"steps": 1},
                            "factors": {"a": [f"a{i}" for i in range(slices)]}})
        keys = [c.key for c in audit.cells()]
        sims = simulate_tables(audit, {k: 0.7 for k in keys}, {}, episodes={k: n for k in keys},
                               paired=paired, correlation=phi, reps=8 * reps // 3,
                               rng=np.random.default_rng(np.random.SeedSequence([31, 99, j])))
        panel, members, base = audit, _membership(audit), RunData("b", "b", "sim", audit, [])
        found: dict[str, Any] = {"slices": slices, "n": n, "paired": paired, "phi": phi,
                                 "reps": len(sims)}
        for procedure in (HOLM, DISCRETE_HOLM):
            false = sum("regressed" in verdicts(t, procedure) for t in sims)
            found[procedure.name] = _band(false, len(sims))
        recheck.append(found)
    gains = [r["power_gain"] for r in rows]
    passed = (all(g > 0 for g in gains)
              and all(r[p]["false_regression"]["band"][0] <= 0.025
                      for r in rows for p in ("holm", "discrete holm"))
              and all(r[p]["band"][0] <= 0.025 for r in recheck
                      for p in ("holm", "discrete holm")))
    return {
        "name": "discrete_multiplicity" if not quick else "discrete_multiplicity_quick",
        "kind": "audit",
        "design": "one slice 20 points down among 10 slices x 50 pairs; null: no drop",
        "designs": rows,
        "recheck": recheck,
        "min_power_gain": min(gains),
        "passed": bool(passed),
        "load_average_1min": os.getloadavg()[0],
        "bench_seconds": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run("--quick" in sys.argv), indent=2))
