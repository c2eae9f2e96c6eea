"""Run every speed claim of evalband side by side and write ``bench/results.json``.

Usage: ``python bench/run.py [--quick] [--only NAME ...]`` (also ``make bench``). Each
benchmark module in this folder exposes ``run(quick) -> dict`` with its medians, the measured
ratio, the target ratio and whether it passed (an ``"kind": "audit"`` result reports error
rates instead of a ratio). Machines are shared and noisy: the ratio of two paths measured
in the same run is the figure to quote, not either time alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BENCHMARKS = ("bench_bootstrap", "bench_reach", "bench_pusht", "bench_ray", "bench_scaling",
              "bench_batched", "bench_report", "bench_clustered", "bench_video",
              "bench_startup", "bench_verdicts", "bench_serve", "bench_store_scale",
              "bench_envs", "bench_sequential", "bench_sequential_interval", "bench_compare",
              "bench_stored_results", "bench_instructions", "bench_rank", "bench_agree",
              "bench_control_loop", "bench_benchmarks", "bench_lerobot", "bench_console",
              "bench_multiplicity", "bench_ppi", "bench_metrics",
              "bench_steps", "bench_cli", "bench_core_types", "bench_reach_kernel_split")


def machine() -> dict[str, Any]:
    import numpy as np

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }


def run_isolated(name: str, quick: bool) -> dict[str, Any]:
    """``bench/<name>.py``'s ``run(quick)`` in a fresh interpreter; its result dict.

    Each benchmark gets its own process, so one's imports, threads and heap (numba's
    compiled code, a Ray client, a 100,000-episode store) do not tax the next one's timing:
    importing numba alone, for example, added ~5 points to the PushT runner's paired
    overhead when both ran in one process.
    """
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import importlib; "
        "result = importlib.import_module(sys.argv[2]).run(quick=sys.argv[3] == '1'); "
        "print('\\n' + json.dumps(result))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(HERE), name, "1" if quick else "0"],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"benchmark {name} failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=None,
                        help="run only these benchmarks and replace their entries in --out")
    args = parser.parse_args(argv)
    results = []
    for name in args.only or BENCHMARKS:
        t0 = time.perf_counter()
        result = run_isolated(name, args.quick)
        result["bench_seconds"] = time.perf_counter() - t0
        result["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        results.append(result)
        status = "PASS" if result["passed"] else "MISS"
        if result.get("kind") == "audit":  # an error-rate audit, not a speed ratio
            print(f"{result['name']:<28} error rates and coverage  {status}")
            continue
        ratio = "n/a" if result["ratio"] is None else f"{result['ratio']:.1f}x"
        print(f"{result['name']:<28} ratio {ratio:>9}  target "
              f">= {result['target_ratio']:g}x  {status}")
    if args.only and args.out.exists():  # keep the other benchmarks' last results
        fresh = {r["name"] for r in results}
        previous = json.loads(args.out.read_text()).get("results", [])
        results = [r for r in previous if r["name"] not in fresh] + results
    payload = {
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": machine(),
        "results": results,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {args.out}")
    if args.out == HERE / "results.json":  # the page generated from it
        import make_performance

        make_performance.main([])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
