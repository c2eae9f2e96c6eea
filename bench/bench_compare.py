"""Benchmark: ``compare`` against the limit of this machine, and against the previous code.

Three sizes of one question, each measured side by side with the simplest code that computes
the same counts and tests (the *limit*: what the machine allows), in interleaved rounds
(medians of the per-round ratios):

* ``memory``: 200 vs 200 paired episodes on a three-slice panel, the runs in memory (their
  columns read once). evalband: :func:`evalband.analysis.compare_many` (every slice's row,
  tests, compatible intervals, power statements, aggregate; memoised bands and searches
  warm; what it derives from one run alone kept with the run). The limit: numpy on the same
  arrays -- the pairs' codes counted per cell, the slices' tables by one product, the exact
  McNemar p of every slice (``scipy.special.bdtr``), Holm, both arms' Wilson bands. The worker
  checks that the limit computes the same numbers: every p-value equal, every band equal to
  rounding (1e-12); its Holm is the plain one (evalband's discrete Holm does more work).
  Target <= 2x.
* ``store``: the same runs read from a run store. evalband: ``open_store`` (read-only), two
  ``load_run`` and ``compare_many``. The limit: one ``sqlite3`` query per run of the
  comparison's columns (cell, episode, repeat, outcome, assistance, interventions, latency,
  time to success) into arrays, then the numpy above. Target <= 2x.
* ``cli``: ``evalband compare A B --store S --json`` in a fresh interpreter, wall and CPU
  (the children's ``rusage``). The limit: a fresh interpreter that reads the store and
  computes the counts and exact p-values (numpy, ``sqlite3``; the p-values with integer
  arithmetic). Target < 0.3 s when the machine is quiet (the load is recorded).

``previous``: the same three measured with the code of :data:`PREVIOUS_COMMIT` (the last
commit before this work; taken from git into a temporary folder) in the same rounds, and the
start-up of ``evalband --help``: issue 32 asks for figures no worse than 10% of the code
before. Both comparisons' documents must be equal in every number the previous code wrote
(but the adjusted p, which the discrete Holm procedure lowers on purpose).

``instructions``: the same paths counted in instructions by valgrind (one call of a path is
the count of many calls minus none, divided), which the machine's load does not move: on a
shared machine the ratios of these counts are the figures to quote, the times beside them
what this run saw.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _source import source_of  # bench/ is on sys.path (run.py, the tests)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PREVIOUS_COMMIT = "b2d8aaa57d2dbac0fbade5fc95a3aa6e21186dbb"
"""The code before the fifth speed pass of issue 34 (an in-memory run's kept arrays checked by
a list comparison instead of a walk over its records; paired times read from each run's kept
key-ordered columns, without ``intersect1d``; two runs' same episodes found by comparing their
kept key bytes; a one-cell slice's sums read from the cell's; each slice design's power
statement memoised whole). The fourth pass (what a compare derives from one run kept with the
run: its pairing keys, pair codes, per-cell and per-slice counts and per-slice statistics; the
slices' McNemar p-values in one binomial call; each row finished in one replacement) was
measured against 2e598ca, the third pass (the in-memory compare's per-comparison Python and
numpy calls) against 8f5f089, the second against 5639f0c (metric values kept per run, a
stored run's ``extra`` read only where it may hold metrics, one query per run), the first
against 5bd041d, the code before the decision engine, the result models and the speed work
(``bench/performance_history.md``)."""
TARGETS = {"memory_ratio": 2.0, "store_ratio": 2.0, "cli_s": 0.3, "previous_ratio": 1.1}

# One process measures one code base (``PYTHONPATH``): its compare and the limit, interleaved.
WORKER = r'''
import json, math, sqlite3, statistics, sys, time
import numpy as np
from scipy.special import bdtr
import evalband
from evalband.analysis import compare_many
from evalband.store import open_store

store, base_id, cand_id, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
MODE = sys.argv[5] if len(sys.argv) > 5 else "time"  # or "memory", "store", "limit_*" x N


def limit_numbers(cells, b_ok, c_ok, n_cells):
    """Counts per cell -> per slice (one product), exact McNemar p, Holm, Wilson bands."""
    code = cells * 4 + 2 * c_ok.astype(np.int64) + b_ok.astype(np.int64)
    types = np.bincount(code, minlength=4 * n_cells).reshape(n_cells, 4)
    tables = np.eye(n_cells, dtype=np.int64) @ types
    b_only, c_only = tables[:, 1], tables[:, 2]
    p = np.minimum(1.0, 2.0 * bdtr(np.minimum(b_only, c_only), b_only + c_only, 0.5))
    order = np.argsort(p, kind="mergesort")
    holm = np.empty_like(p)
    holm[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1)))
    n = tables.sum(axis=1)
    z = 1.959963984540054
    bands = []
    for k in (tables[:, 1] + tables[:, 3], tables[:, 2] + tables[:, 3]):
        ph, den = k / n, 1 + z * z / n
        mid = (ph + z * z / (2 * n)) / den
        half = z * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / den
        bands.append((mid - half, mid + half))
    return p, holm, bands


SELECT = ('SELECT "cell", "episode", "repeat", "outcome" = \'success\', "assisted", '
          '"interventions", "latency_ms_p95", "time_to_success_s" FROM episodes WHERE '
          'run_id = ? ORDER BY "cell", "episode", "repeat"')


def read_limit():
    """The comparison's columns of both runs (what evalband reads), then the numpy above."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    out = []
    for run in (base_id, cand_id):
        cells, episode, repeat, ok, assisted, helped, latency, tts = zip(
            *conn.execute(SELECT, (run,)).fetchall())
        arrays = [np.array(v, dtype=t) for v, t in ((episode, np.int64), (repeat, np.int64),
                                                    (assisted, bool), (helped, np.int64),
                                                    (latency, float), (tts, float))]
        out.append((cells, np.array(ok, dtype=bool), arrays))
    conn.close()
    keys = sorted(set(out[0][0]))
    index = {k: i for i, k in enumerate(keys)}
    cells = np.array([index[c] for c in out[0][0]], dtype=np.int64)
    return limit_numbers(cells, out[0][1], out[1][1], len(keys))


def document(c):
    try:
        from evalband.report import comparison_document
    except ImportError:  # the previous code
        return c.as_dict()
    return comparison_document(c)


def from_store():
    with open_store(store, read_only=True) as st:
        base, cand = evalband.load_run(base_id, st), evalband.load_run(cand_id, st)
        return compare_many(base, [cand])[0]


with open_store(store, read_only=True) as st:
    base, cand = evalband.load_run(base_id, st), evalband.load_run(cand_id, st)
    list(base.records), list(cand.records)  # records in memory: the in-memory case
from evalband.analysis._compare import RunData
base = RunData(base.run_id, base.policy, base.panel_fingerprint, base.panel, list(base.records))
cand = RunData(cand.run_id, cand.policy, cand.panel_fingerprint, cand.panel, list(cand.records))
cells = [c.key for c in base.panel.cells()]
bc, cc = base.compare_columns(cells), cand.compare_columns(cells)
doc = document(compare_many(base, [cand])[0])
assert json.dumps(document(from_store())) == json.dumps(doc)
p, _, bands = limit_numbers(bc.cell, bc.success, cc.success, len(cells))
assert [row["p_value"] for row in doc["slices"]] == p.tolist()  # the limit computes the same
for arm, (low, high) in zip(("rate_baseline", "rate_candidate"), bands):  # bands to rounding
    for key, limit in (("low", low), ("high", high)):
        assert np.allclose([row[arm][key] for row in doc["slices"]], limit, rtol=0, atol=1e-12)


if MODE != "time":  # run one path ``rounds`` times (instructions are counted outside)
    path = {"memory": lambda: compare_many(base, [cand]), "store": from_store,
            "limit_memory": lambda: limit_numbers(bc.cell, bc.success, cc.success, len(cells)),
            "limit_store": read_limit}[MODE]
    for _ in range(rounds):
        path()
    sys.exit(0)


def timed(fn, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


times = {k: [] for k in ("memory", "memory_limit", "store", "store_limit")}
for _ in range(rounds):
    times["memory"].append(timed(lambda: compare_many(base, [cand]), 50))
    times["memory_limit"].append(timed(lambda: limit_numbers(bc.cell, bc.success, cc.success,
                                                             len(cells)), 50))
    times["store"].append(timed(from_store, 5))
    times["store_limit"].append(timed(read_limit, 5))
print(json.dumps({"times": times, "document": doc}))
'''

CLI_LIMIT = r'''
import math, sqlite3, sys
import numpy as np
store, runs = sys.argv[1], sys.argv[2:]
conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
cols = []
for run in runs:  # the comparison's columns, as evalband reads them
    cells, episode, repeat, ok, assisted, helped, latency, tts = zip(*conn.execute(
        'SELECT "cell", "episode", "repeat", "outcome" = \'success\', "assisted", '
        '"interventions", "latency_ms_p95", "time_to_success_s" FROM episodes WHERE run_id = ? '
        'ORDER BY "cell", "episode", "repeat"', (run,)).fetchall())
    extra = [np.array(v, dtype=float) for v in (episode, repeat, assisted, helped, latency, tts)]
    cols.append((cells, np.array(ok, dtype=bool)))
keys = sorted(set(cols[0][0]))
cell = np.array([keys.index(c) for c in cols[0][0]])
code = cell * 4 + 2 * cols[1][1] + cols[0][1]
types = np.bincount(code, minlength=4 * len(keys)).reshape(len(keys), 4)
for b, c in types[:, 1:3].tolist():  # exact McNemar p, in integers
    m = b + c
    tail = sum(math.comb(m, k) for k in range(min(b, c) + 1))
    print(min(1.0, 2 * tail / 2 ** m) if m else 1.0)
'''


def small_runs() -> tuple[Any, Any]:
    """Two in-memory runs of 201 episodes each on a three-value factor, every episode paired."""
    import numpy as np

    from evalband.analysis._compare import RunData
    from evalband.episode import EpisodeRecord
    from evalband.panel import load_panel

    panel = load_panel({"name": "speed3", "env": "evalband/Coin-v0", "episodes": 67,
                        "seed": 0, "budget": {"steps": 1},
                        "factors": {"mass": ["light", "mid", "heavy"]}})

    def build(run_id: str, p: float, seed: int) -> RunData:
        rng = np.random.default_rng(seed)
        recs = [
            EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                          cell=cell.key, slices=dict(cell.slices), episode=ep, repeat=0,
                          condition_seed=ep, outcome="success" if ok else "failure",
                          terminated=True, truncated=False, steps=1,
                          time_to_success_s=1.0 + ep / 100 if ok else None)
            for cell in panel.cells() for ep in range(panel.episodes)
            for ok in [bool(rng.random() < p)]
        ]
        return RunData(run_id, run_id, panel.fingerprint, panel, recs)

    return build("base", 0.7, 0), build("cand", 0.62, 1)


def _run(args: list[str], src: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (this child's rusage) and stdout of one fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(src)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3, 4, 5):
        raise RuntimeError(done.stderr[-2000:])
    return wall, cpu, done.stdout


def _build_store(path: Path) -> tuple[str, str]:
    """Two runs of 201 episodes on a three-value factor, every episode paired."""
    from evalband.store import open_store
    from evalband.store._manifest import new_manifest

    base, cand = small_runs()
    with open_store(path) as st:
        for run in (base, cand):
            manifest = new_manifest(run.panel, run.policy, run.run_id, backend="serial",
                                    workers=1, policy_hash=None, n_planned=len(run.records),
                                    command="bench/bench_compare.py")
            st.create_run(manifest)
            st.add_episodes(run.records)
            st.update_run(run.run_id, status="finished", finished_at=manifest.started_at)
    return base.run_id, cand.run_id


def _instructions(args: list[str], src: Path) -> int:
    """Instructions one interpreter executes (valgrind's callgrind): the load does not move it.

    With one hash seed and one BLAS thread, so that two runs of the same path differ only in
    what they do (a per-call count is a difference of two runs: with random hash seeds the
    imports' counts alone moved it by ~0.1 M).
    """
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0",
                               "OPENBLAS_NUM_THREADS": "1"})
    found = [line for line in done.stderr.splitlines() if "Collected" in line]
    if not found:
        raise RuntimeError(done.stderr[-2000:])
    return int(found[-1].split()[-1])


def _per_call(worker: list[str], src: Path, mode: str, calls: int) -> float:
    """Instructions of one call of a path: ``calls`` calls minus none, divided."""
    many = _instructions([*worker, str(calls), mode], src)
    none = _instructions([*worker, "0", mode], src)
    return (many - none) / calls


def _median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _same_numbers(now: Any, before: Any) -> bool:
    """Every number (and word) the previous document wrote is in today's, equal."""
    if isinstance(before, dict):
        return all(k in now and _same_numbers(now[k], v) for k, v in before.items()
                   if k not in ("notes", "multiplicity", "p_holm", "sentence"))
    if isinstance(before, list):
        return len(now) == len(before) and all(
            _same_numbers(n, b) for n, b in zip(now, before, strict=True))
    return bool(now == before or (isinstance(before, float) and before != before))


def run(quick: bool = False, rounds: int | None = None) -> dict[str, Any]:
    """Every case, this code and the previous, each beside its limit; bench/run.py's dict.

    ``rounds``: interleaved rounds of the timed cases (default 3 quick, 9 otherwise; on a
    loaded machine fewer, as ``python bench/bench_compare.py --rounds 3`` or, through
    ``bench/run.py``, ``BENCH_COMPARE_ROUNDS=3``); the instruction counts are the full run's
    either way.
    """
    t0 = time.perf_counter()
    rounds = rounds or int(os.environ.get("BENCH_COMPARE_ROUNDS", "0")) or (3 if quick else 9)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "runs.sqlite"
        base_id, cand_id = _build_store(store)
        srcs = {"now": ROOT / "src", "previous": source_of(PREVIOUS_COMMIT, folder / "prev")}
        (folder / "worker.py").write_text(WORKER)
        (folder / "limit.py").write_text(CLI_LIMIT)
        inproc: dict[str, Any] = {}
        for name, src in srcs.items():
            copy = folder / f"{name}.sqlite"
            copy.write_bytes(store.read_bytes())
            _, _, out = _run([str(folder / "worker.py"), str(copy), base_id, cand_id,
                              str(rounds)], src)
            inproc[name] = json.loads(out.strip().splitlines()[-1])
        cli: dict[str, dict[str, list[float]]] = {
            k: {"wall": [], "cpu": []} for k in ("now", "previous", "limit", "help_now",
                                                 "help_previous")}
        for _ in range(rounds * 2):  # interleaved rounds
            for name, src in srcs.items():
                copy = folder / f"{name}.sqlite"
                wall, cpu, _ = _run(["-m", "evalband.cli", "compare", base_id, cand_id,
                                     "--store", str(copy), "--json"], src)
                cli[name]["wall"].append(wall)
                cli[name]["cpu"].append(cpu)
                wall, cpu, _ = _run(["-m", "evalband.cli", "--help"], src)
                cli[f"help_{name}"]["wall"].append(wall)
                cli[f"help_{name}"]["cpu"].append(cpu)
            wall, cpu, _ = _run([str(folder / "limit.py"), str(store), base_id, cand_id],
                                srcs["now"])
            cli["limit"]["wall"].append(wall)
            cli["limit"]["cpu"].append(cpu)
        counted: dict[str, float] = {}
        calls = 20 if quick else 200
        for name, src in (("now", srcs["now"]), ("previous", srcs["previous"])):
            worker = [str(folder / "worker.py"), str(folder / f"{name}.sqlite"), base_id,
                      cand_id]
            counted[f"memory_{name}"] = _per_call(worker, src, "memory", calls)
            counted[f"store_{name}"] = _per_call(worker, src, "store", max(10, calls // 4))
            counted[f"cli_{name}"] = _instructions(
                ["-m", "evalband.cli", "compare", base_id, cand_id, "--store",
                 str(folder / f"{name}.sqlite"), "--json"], src)
        worker = [str(folder / "worker.py"), str(folder / "now.sqlite"), base_id, cand_id]
        counted["memory_limit"] = _per_call(worker, srcs["now"], "limit_memory", calls)
        counted["store_limit"] = _per_call(worker, srcs["now"], "limit_store", max(10, calls // 4))
        counted["cli_limit"] = _instructions([str(folder / "limit.py"), str(store), base_id,
                                              cand_id], srcs["now"])
    now, prev = inproc["now"]["times"], inproc["previous"]["times"]
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in cli.items()}
    result = {
        "name": "compare_speed" if not quick else "compare_speed_quick",
        "memory": {"ms": 1e3 * statistics.median(now["memory"]),
                   "limit_ms": 1e3 * statistics.median(now["memory_limit"]),
                   "ratio": _median_ratio(now["memory"], now["memory_limit"])},
        "store": {"ms": 1e3 * statistics.median(now["store"]),
                  "limit_ms": 1e3 * statistics.median(now["store_limit"]),
                  "ratio": _median_ratio(now["store"], now["store_limit"])},
        "cli": {"wall_s": med["now"]["wall"], "cpu_s": med["now"]["cpu"],
                "limit_wall_s": med["limit"]["wall"], "limit_cpu_s": med["limit"]["cpu"],
                "ratio": _median_ratio(cli["now"]["cpu"], cli["limit"]["cpu"])},
        "previous": {
            "commit": PREVIOUS_COMMIT,
            "memory_ms": 1e3 * statistics.median(prev["memory"]),
            "store_ms": 1e3 * statistics.median(prev["store"]),
            "cli_wall_s": med["previous"]["wall"], "cli_cpu_s": med["previous"]["cpu"],
            "help_cpu_s": med["help_previous"]["cpu"], "help_cpu_s_now": med["help_now"]["cpu"],
            "memory_ratio": _median_ratio(now["memory"], prev["memory"]),
            "store_ratio": _median_ratio(now["store"], prev["store"]),
            "cli_cpu_ratio": _median_ratio(cli["now"]["cpu"], cli["previous"]["cpu"]),
            "help_cpu_ratio": _median_ratio(cli["help_now"]["cpu"], cli["help_previous"]["cpu"]),
            "same_numbers": _same_numbers(inproc["now"]["document"],
                                          inproc["previous"]["document"]),
        },
        "instructions": {k: round(v) for k, v in counted.items()},
        "instruction_ratios": {
            "memory_vs_limit": counted["memory_now"] / counted["memory_limit"],
            "store_vs_limit": counted["store_now"] / counted["store_limit"],
            "cli_vs_limit": counted["cli_now"] / counted["cli_limit"],
            "memory_vs_previous": counted["memory_now"] / counted["memory_previous"],
            "store_vs_previous": counted["store_now"] / counted["store_previous"],
            "cli_vs_previous": counted["cli_now"] / counted["cli_previous"],
        },
        "targets": TARGETS,
        "rounds": rounds,
    }
    result["ratio"] = result["memory"]["ratio"]
    result["target_ratio"] = TARGETS["memory_ratio"]
    result["passed"] = bool(
        result["memory"]["ratio"] <= TARGETS["memory_ratio"]
        and result["store"]["ratio"] <= TARGETS["store_ratio"]
        and result["cli"]["wall_s"] < TARGETS["cli_s"]
        and all(result["previous"][k] <= TARGETS["previous_ratio"]
                for k in ("memory_ratio", "store_ratio", "cli_cpu_ratio", "help_cpu_ratio"))
        and result["previous"]["same_numbers"])
    result["load_average_1min"] = os.getloadavg()[0]
    result["bench_seconds"] = time.perf_counter() - t0
    return result


if __name__ == "__main__":
    ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else None
    print(json.dumps(run("--quick" in sys.argv, ROUNDS), indent=2))
