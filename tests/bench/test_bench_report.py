"""The report benchmark stays runnable: a small run renders, under its own target."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_report  # noqa: E402


def test_report_bench_quick() -> None:
    result = bench_report.run(quick=True)
    assert result["episodes"] == 4_000 and result["svg_elements"] == 6
    assert result["ratio"] == result["target_seconds"] / result["median_seconds"]
    assert result["passed"] == (result["median_seconds"] < 10)
