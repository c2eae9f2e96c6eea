"""Audit (issue 29): the DEFAULT ``mover`` interval's exact coverage on the dense grid.

``bench/bench_ppi.py`` sums the default interval's coverage exactly on the bench grid (20
labels, and wherever its Monte Carlo band falls short); ``bench/ppi_thulin.py`` checked a
candidate on a denser grid (rates 0.02-0.98, agreement 85-98%, both error kinds). This runs
the default through the same dense designs, one exact sum each (``bench_ppi.exact``: every
2x2 table of the labelled episodes times every count of cheap successes among the 2,000
others, outcomes below 1e-11 of mass left out and reported), so that whether the default's
misses are the bench grid's alone rests on a file, not on a scratch script.

Run: ``PYTHONPATH=src nice .venv/bin/python bench/ppi_default_exact.py NS`` (comma-separated
label counts, e.g. ``40,50,75,100``); rows to ``bench/ppi_default_exact_NS.json``, written
after each design (a stopped run keeps what it summed), with the lowest coverage so far.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ppi  # noqa: E402
from ppi_thulin import dense_designs  # noqa: E402

if __name__ == "__main__":
    t0 = time.perf_counter()
    ns = tuple(int(x) for x in sys.argv[1].split(","))
    out = Path(__file__).with_name(f"ppi_default_exact_{'_'.join(map(str, ns))}.json")
    start_load = os.getloadavg()
    designs = dense_designs(ns)
    rows = []
    for n, p, a, e in designs:
        t1 = time.perf_counter()
        rows.append(bench_ppi.exact(p, a, n, e) | {"seconds": round(time.perf_counter() - t1, 1)})
        print(rows[-1], flush=True)
        low = min(rows, key=lambda r: r["exact_coverage"] + r["neglected_mass"])
        out.write_text(json.dumps({
            "interval": "mover (the default of ppi_mean / evalband agreement)",
            "designs_planned": len(designs), "designs_done": len(rows),
            "below_95": [r for r in rows if r["exact_coverage"] + r["neglected_mass"] < 0.95],
            "lowest": low, "load_at_start": [round(x, 2) for x in start_load],
            "load_now": [round(x, 2) for x in os.getloadavg()],
            "seconds": round(time.perf_counter() - t0, 1), "rows": rows}, indent=1) + "\n")
