"""Run every speed claim of evalband side by side and write ``bench/results.json``.

Usage: ``python bench/run.py [--quick]`` (also ``make bench``). Each benchmark module in
this folder exposes ``run(quick) -> dict`` with its medians, the measured ratio, the target
ratio and whether it passed. Machines are shared and noisy: the ratio of two paths measured
in the same run is the figure to quote, not either time alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BENCHMARKS = ("bench_bootstrap", "bench_reach", "bench_pusht", "bench_ray", "bench_scaling",
              "bench_batched", "bench_report")


def machine() -> dict[str, Any]:
    import numpy as np

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args(argv)
    results = []
    for name in BENCHMARKS:
        module = __import__(name)
        t0 = time.perf_counter()
        result = module.run(quick=args.quick)
        result["bench_seconds"] = time.perf_counter() - t0
        results.append(result)
        status = "PASS" if result["passed"] else "MISS"
        ratio = "n/a" if result["ratio"] is None else f"{result['ratio']:.1f}x"
        print(f"{result['name']:<28} ratio {ratio:>9}  target "
              f">= {result['target_ratio']:g}x  {status}")
    payload = {
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": machine(),
        "results": results,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
