"""The benchmarks stay runnable and their two paths agree (speed is measured in bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_bootstrap  # noqa: E402
import bench_reach  # noqa: E402


def test_bootstrap_bench_paths_agree() -> None:
    result = bench_bootstrap.run(quick=True)
    assert result["agree"] and result["ratio"] > 1


def test_reach_bench_paths_identical() -> None:
    result = bench_reach.run(quick=True)
    assert result["identical"] and result["ratio"] > 1
