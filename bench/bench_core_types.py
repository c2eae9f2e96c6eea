"""Benchmark: the plain core types against the commit before them, side by side in one run.

Issue 32 item 5 replaced code generated with ``exec`` (``EpisodeRecord.__init__``, the
store's row builder) and the store's read path that skipped the records' checks by plain
slotted dataclasses and plain functions, and grouped ``run_panel``'s options into a
``RunOptions``. This bench prices each removal against the source of a BASE commit
(``EVALBAND_BENCH_BASE``, default: the commit before the change), exported with
``git archive`` into a temporary folder. Base and head run alternately (ABBA), each round in
a fresh interpreter whose ``PYTHONPATH`` points at one of the two ``src`` trees, and every
figure is CPU time (``time.process_time``) so that other load on a shared machine changes
it little. Figures, each a round's best repeat; a ratio is the median over rounds of that
round's base / head (the two ran back to back):

* ``record_init_us``: one :class:`~evalband.episode.EpisodeRecord` as the runner makes it;
* ``row_us``: one record as its SQL row (what ``add_episode`` builds);
* ``add_episodes_us``: per episode, storing a run's records in one transaction;
* ``read_records_us``: per episode, reading a run's records back (``episode_records``);
* ``runner_extra_ms``: the runner's own CPU per episode over a bare loop on a near-free
  env (``bench_pusht.runner_extra``: records, timing, judge, store, the run's setup).

The last three are what a user waits for (a run's per-episode cost, storing and reading a
run); the first two are parts of them (one record and one row per episode), reported to show
where a difference comes from. ``ratio`` is the smallest of base / head over the three
user-facing figures (1.0: as fast as before); the target is head no more than 10 % slower on
each (``ratio >= 1 / 1.1``). A frozen dataclass's own ``__init__`` sets each of the record's
26 fields through ``object.__setattr__`` (~1 us a record more than the generated one's
single dict assignment, ~1 % of the runner's own ~90 us an episode): inside the three
figures, under their noise on a shared 2-core machine.
"""

from __future__ import annotations

import json
import os
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
BASE = "5639f0ccceadfd0af38635c0aa16dbc6a9b71dbc"
"""The commit before the plain core types (branch ``mdef`` when issue 32 item 5 began)."""
TARGET_SLOWDOWN = 0.10
USER_FIGURES = ("add_episodes_us", "read_records_us", "runner_extra_ms")
PART_FIGURES = ("record_init_us", "row_us")
FIGURES = PART_FIGURES + USER_FIGURES


def _best_us(fn: Any, number: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, time.process_time() - t0)
    return 1e6 * best / number


def measure(quick: bool) -> dict[str, float]:
    """The figures of the ``evalband`` this interpreter imports (one round)."""
    from evalband.episode import EpisodeRecord, Outcome
    from evalband.store import _sqlite, open_store
    from evalband.store._manifest import _example

    fields = dict(run_id="r1", policy="p", panel_fingerprint="f", cell="fail_p=0.0",
                  episode=0, repeat=0, condition_seed=7, outcome=Outcome.SUCCESS,
                  terminated=True, truncated=False, steps=5, sim_time_s=0.5,
                  time_to_success_s=0.5, slices={"fail_p": "0.0"}, latency_ms_p50=0.01,
                  latency_ms_p95=0.02, latency_ms_max=0.03, env_ms=0.1, wall_s=0.001,
                  started_at="2026-12-03T00:00:00.000+00:00", extra={"metrics": {"return": 1.0}})
    number = 2_000 if quick else 20_000
    out = {"record_init_us": _best_us(lambda: EpisodeRecord(**fields), number)}
    record = EpisodeRecord(**fields)
    out["row_us"] = _best_us(lambda: _sqlite._episode_row(record), number)
    n = 5_000 if quick else 20_000
    adds, reads = [], []
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "b.sqlite") as store:
        for r in range(3):
            manifest = _example()
            run_id = f"{manifest.run_id}-{r}"
            from dataclasses import replace

            store.create_run(replace(manifest, run_id=run_id))
            records = [EpisodeRecord(**{**fields, "run_id": run_id, "episode": i})
                       for i in range(n)]
            t0 = time.process_time()
            store.add_episodes(records)
            adds.append(time.process_time() - t0)
            t0 = time.process_time()
            back = store.episode_records(run_id)
            reads.append(time.process_time() - t0)
            assert back == records, "the records read back differ from those stored"
    out["add_episodes_us"] = 1e6 * min(adds) / n
    out["read_records_us"] = 1e6 * min(reads) / n
    sys.path.insert(0, str(HERE))
    import bench_pusht

    extra = bench_pusht.runner_extra(episodes=100 if quick else 300, rounds=2 if quick else 4)
    out["runner_extra_ms"] = extra["extra_ms_per_episode_at_5_steps"]
    return out


def _round(src: Path, quick: bool) -> dict[str, float]:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import bench_core_types as b; "
            "print('\\n' + json.dumps(b.measure(sys.argv[2] == '1')))")
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", code, str(HERE), "1" if quick else "0"],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_core_types round on {src} failed:\n{done.stdout}{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(quick: bool = False) -> dict[str, Any]:
    """Base and head alternately, ``rounds`` each; medians and base / head ratios."""
    base = os.environ.get("EVALBAND_BENCH_BASE", BASE)
    rounds = 2 if quick else 7
    each: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"base": source_of(base, Path(tmp)), "head": ROOT / "src"}
        for r in range(rounds):
            for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                each[side].append(_round(srcs[side], quick))
    medians = {side: {f: statistics.median(x[f] for x in runs) for f in FIGURES}
               for side, runs in each.items()}
    # A round's base and head run back to back: their ratio shares the machine's state of
    # that moment, so the median of the paired ratios cancels most of a shared box's drift
    # (as bench_pusht's paired overhead does); the ratio of the medians is kept beside it.
    ratios = {f: statistics.median(b[f] / h[f] for b, h in zip(each["base"], each["head"],
                                                                strict=True))
              for f in FIGURES}
    ratio_of_medians = {f: medians["base"][f] / medians["head"][f] for f in FIGURES}
    load = os.getloadavg()
    return {
        "name": "core_types_vs_base",
        "claim": "plain core types (no exec, validated reads, RunOptions) vs the commit "
                 "before, side by side: runner CPU per episode, storing and reading a run "
                 "each no more than 10 % above the base's",
        "base": base,
        "rounds": rounds,
        "base_figures": medians["base"],
        "head_figures": medians["head"],
        "ratios_base_over_head": ratios,
        "ratio_of_medians": ratio_of_medians,
        "each": each,
        "load_average": [round(v, 2) for v in load],
        "user_facing": list(USER_FIGURES),
        "ratio": min(ratios[f] for f in USER_FIGURES),
        "target_ratio": round(1 / (1 + TARGET_SLOWDOWN), 3),
        "passed": all(ratios[f] >= 1 / (1 + TARGET_SLOWDOWN) for f in USER_FIGURES),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
