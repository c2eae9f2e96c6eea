"""The store-scale benchmark stays runnable: every step runs and checks its own counts
(speed is measured in bench/, not here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_store_scale  # noqa: E402


@pytest.mark.slow
def test_store_scale_bench_runs_at_a_tiny_size() -> None:
    result = bench_store_scale.run(sizes=(300,))
    steps = result["table"]["300"]
    assert {"import", "show", "columns", "records"} <= set(steps)  # + compare, report
    assert all(v["seconds"] > 0 and v["peak_rss_mb"] > 0 for v in steps.values())
    assert isinstance(result["passed"], bool)
