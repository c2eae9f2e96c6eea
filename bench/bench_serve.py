"""Benchmark: ``evalband serve`` (dynamic batching) feeding 4 simulator workers vs 4 local copies.

The policy is the PushT harness seed's behaviour-cloning MLP (``bench_batched``'s checkpoint,
hidden width 256), on ``bench_pusht``'s panel (budget 200 steps). Both paths play the SAME
episodes with the process backend and 4 workers:

* **local**: ``--policy bc.pt``: every worker loads the checkpoint and runs the MLP itself,
  one observation per call;
* **served**: ``evalband serve bc.pt --max-batch 16 --max-wait-ms 2`` in its own process and
  ``--policy ws://127.0.0.1:PORT``: every worker sends its observations over loopback
  (openpi's websocket protocol, msgpack-numpy frames); the server cuts a batch when every
  connected worker has a request in it (or at 16 requests, or 2 ms after the first) and runs
  the MLP once per batch;
* **--batch 8**, local and served: each worker plays 8 episodes in lockstep (locally one
  batched MLP call per step; served, 8 connections per worker, so server batches can reach 16).

Reported: episodes per wall second of each (``ratio``: served over local, one episode per
worker at a time; ``ratio_batch8``: the same with ``--batch 8`` on both sides; the issue's
goal is >= 2, which assumes the inference process has hardware the workers lack), per-step
latency as the episodes saw it (median over episodes of their p50 and p95, milliseconds: the
served figure is the full round trip), the server's mean batch size and its CPU time per
step (``/proc``), and whether the records (every field but timing, ``extra`` and the
policy's name) are identical: the server's batched rows
are bitwise the local single calls (``TorchPolicy``'s row blocks) and msgpack carries
float64 exactly.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_batched import train_checkpoint
from bench_pusht import pusht_panel
from evalband.run import run_panel
from evalband.store import RunStore, open_store

WORKERS = 4
MAX_BATCH = 16
MAX_WAIT_MS = 2.0
_SKIP = {"latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
         "started_at", "run_id", "policy", "extra"}


def _records(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.as_dict().items() if k not in _SKIP}
            for r in store.episode_records(run_id)]


def _latency(store: RunStore, run_id: str) -> tuple[float, float]:
    records = store.episode_records(run_id)
    p50 = statistics.median(r.latency_ms_p50 for r in records if r.latency_ms_p50 is not None)
    p95 = statistics.median(r.latency_ms_p95 for r in records if r.latency_ms_p95 is not None)
    return p50, p95


def _serve(checkpoint: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalband.cli", "serve", checkpoint, "--port", "0",
         "--max-batch", str(MAX_BATCH), "--max-wait-ms", str(MAX_WAIT_MS), "--json"],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["url"]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{url.removeprefix('ws://')}/stats") as response:
        stats: dict[str, Any] = json.loads(response.read())
    return stats


def run(quick: bool = False) -> dict[str, Any]:
    """Time local and served inference for 4 workers on the same PushT episodes."""
    per_cell = 6 if quick else 40
    panel = pusht_panel(per_cell)
    n = len(panel.episode_specs())
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        checkpoint = train_checkpoint(Path(tmp) / "bc.pt", demos=5 if quick else 20,
                                      epochs=3 if quick else 10)
        proc, url = _serve(checkpoint)
        try:
            run_panel(pusht_panel(2), url, store, run_id="warm")  # server warm, imports
            timings: dict[str, float] = {}
            batches: dict[str, float] = {}
            server_cpu: dict[str, float] = {}
            plan = (("local", checkpoint, None), ("served", url, None),
                    ("local_b8", checkpoint, 8), ("served_b8", url, 8))
            for name, policy, batch in plan:
                before = _stats(url)
                cpu0 = _cpu_s(proc.pid)
                t0 = time.perf_counter()
                run_panel(panel, policy, store, run_id=name, backend="process",
                          workers=WORKERS, batch_size=batch)
                timings[name] = time.perf_counter() - t0
                server_cpu[name] = _cpu_s(proc.pid) - cpu0
                after = _stats(url)
                requests = after["requests"] - before["requests"]
                batches[name] = requests / max(after["batches"] - before["batches"], 1)
        finally:
            proc.kill()
            proc.wait()
        reference = _records(store, "local")
        identical = all(_records(store, name) == reference
                        for name in ("served", "local_b8", "served_b8"))
        latency = {name: _latency(store, name) for name in timings}
        steps = sum(r["steps"] for r in reference)
    eps = {name: n / seconds for name, seconds in timings.items()}
    ratio = eps["served"] / eps["local"]
    return {
        "name": "serve_vs_local_inference",
        "episodes": n,
        "steps": steps,
        "workers": WORKERS,
        "max_batch": MAX_BATCH,
        "max_wait_ms": MAX_WAIT_MS,
        "seconds": {k: round(v, 3) for k, v in timings.items()},
        "eps_per_s": {k: round(v, 2) for k, v in eps.items()},
        "latency_ms_p50": {k: round(v[0], 3) for k, v in latency.items()},
        "latency_ms_p95": {k: round(v[1], 3) for k, v in latency.items()},
        "mean_batch_size": {k: round(v, 2) for k, v in batches.items()
                            if k.startswith("served")},
        # the policy server's own CPU time per simulated step (all its threads)
        "server_cpu_ms_per_step": {k: round(1000.0 * v / steps, 4)
                                   for k, v in server_cpu.items() if k.startswith("served")},
        "ratio": ratio,
        "ratio_batch8": eps["served_b8"] / eps["local_b8"],
        "ratio_batch8_vs_local_single": eps["served_b8"] / eps["local"],
        "target_ratio": 2.0,
        "identical": bool(identical),
        "passed": bool(identical and ratio >= 2.0),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
