"""Benchmark: the store at 10k / 100k / 1M episodes: import, show, columnar read, peak RSS.

Each (size, step) runs in a fresh interpreter so its peak resident memory (``ru_maxrss``)
is its own:

* ``import``: :func:`evalband.store.import_results` of a CSV of ``n`` rows (two cells,
  three outcomes, steps) into a new store: the column-wise path (pyarrow columns, numpy
  checks and condition seeds, one ``executemany`` of tuples zipped from columns, in one
  durable transaction); target at 1M: < 10 s and < 500 MB peak;
* ``show``: what ``evalband show`` computes, :func:`~evalband.report._data.
  stored_slice_summaries` (SQLite counts per cell; no episode enters Python);
* ``columns``: :meth:`RunStore.episode_columns` of the comparison's default columns (numpy
  arrays filled block by block);
* ``records`` (up to 100k): the record-by-record path the summaries used before,
  ``slice_summaries(load_run(...))``, for the ratio.

``cpu_seconds`` is the step's own CPU time (``time.process_time``), the figure that does not
move with other processes on a shared machine. ``growth`` is the time ratio between
consecutive sizes (10 means linear). Figures move with the machine's load; the ratio of two
paths measured in one run is the figure to quote.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES_FULL = (10_000, 100_000, 1_000_000)
SIZES_QUICK = (10_000, 100_000)
RECORDS_UP_TO = 100_000

_STEP = r'''
import json, resource, sys, time
size, step, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
from evalband.store import open_store, import_results
import evalband._api, evalband.analysis, evalband.panel, evalband.report._data
import evalband.store._columns, evalband.store._importers
from evalband.stats import interval
interval(1, 2)  # imports loaded before the clock starts: the step alone is timed
t0, c0 = time.perf_counter(), time.process_time()
if step == "import":
    with open_store(f"{folder}/s.sqlite") as st:
        import_results(st, f"{folder}/r{size}.csv", run_id=f"r{size}")
elif step == "show":
    from evalband.report._data import stored_slice_summaries
    with open_store(f"{folder}/s.sqlite", read_only=True) as st:
        n = stored_slice_summaries(st, f"r{size}")[-1].summary.n_attempted
    assert n == size, n
elif step == "columns":
    with open_store(f"{folder}/s.sqlite", read_only=True) as st:
        cols = st.episode_columns(f"r{size}")
    assert len(cols["outcome"]) == size
elif step == "records":
    from evalband._api import load_run
    from evalband.report._data import slice_summaries
    with open_store(f"{folder}/s.sqlite", read_only=True) as st:
        n = slice_summaries(load_run(f"r{size}", st))[-1].summary.n_attempted
    assert n == size, n
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "cpu_seconds": time.process_time() - c0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def write_csv(path: Path, n: int) -> None:
    """``n`` rows: two cells, three outcomes, a step count; one episode index per row."""
    import numpy as np

    rng = np.random.default_rng(0)
    cells = np.array(["mass=light", "mass=heavy"])[rng.integers(0, 2, n)]
    outcomes = np.array(["success", "failure", "timeout"])[rng.integers(0, 3, n)]
    with path.open("w") as fh:
        fh.write("cell,episode,repeat,outcome,steps\n")
        fh.writelines(f"{c},{i},0,{o},{10 + i % 50}\n"
                      for i, (c, o) in enumerate(zip(cells, outcomes, strict=True)))


def _step(size: int, step: str, folder: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _STEP, str(size), step, folder],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{step} at {size}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(quick: bool = False, sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Measure every size; the result dict of ``bench/run.py``."""
    sizes = sizes or (SIZES_QUICK if quick else SIZES_FULL)
    table: dict[str, dict[str, dict[str, float]]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            write_csv(Path(folder) / f"r{size}.csv", size)
            steps = ["import", "show", "columns"]
            if size <= RECORDS_UP_TO:
                steps.append("records")
            table[str(size)] = {step: _step(size, step, folder) for step in steps}
    growth = {
        step: [round(table[str(b)][step]["seconds"] / table[str(a)][step]["seconds"], 2)
               for a, b in zip(sizes, sizes[1:], strict=False)]
        for step in ("import", "show", "columns")
    }
    big = table[str(sizes[-1])]
    mid = table[str(min(sizes[-1], RECORDS_UP_TO))]
    return {
        "name": "store_scale",
        "sizes": list(sizes),
        "table": table,
        "growth": growth,
        "show_vs_records_ratio": round(mid["records"]["seconds"] / mid["show"]["seconds"], 1),
        "target_ratio": 1.0,
        "ratio": round(mid["records"]["seconds"] / mid["show"]["seconds"], 1),
        "import_target": {"seconds": 10.0, "peak_rss_mb": 500.0},
        "passed": (
            big["show"]["peak_rss_mb"] < 500
            and big["columns"]["peak_rss_mb"] < 500
            and big["import"]["peak_rss_mb"] < 500
            and big["import"]["cpu_seconds"] < 10.0  # wall time moves with the shared load
        ),
        "load_average_1min": __import__("os").getloadavg()[0],
        "bench_seconds": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2))
