"""The benchmarks stay runnable and their two paths agree (speed is measured in bench/)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_bootstrap  # noqa: E402
import bench_reach  # noqa: E402


def test_bootstrap_bench_paths_agree() -> None:
    result = bench_bootstrap.run(quick=True)
    assert result["agree"]


def test_reach_bench_paths_identical() -> None:
    result = bench_reach.run(quick=True)
    assert result["identical"] is True  # both kernels equal the seed's loop
    assert result["kernel"] == "compiled"  # numba is part of the dev install


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bench_pusht", "bench_scaling", "bench_batched", "bench_ray",
                                  "bench_video", "bench_envs"])
def test_workload_benches_run_and_their_paths_agree(name: str) -> None:
    """Each side of every runner benchmark plays the same episodes to identical records."""
    module = importlib.import_module(name)
    result = module.run(quick=True)
    assert result["identical"] is True
