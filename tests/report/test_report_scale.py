"""A report's page is bounded by what a page shows, not by the runs' episodes (issue 34).

The HTML report of two stored runs ten times larger is the same page: the same figures (drawn
from counts at a bounded number of points), tables of slices and cells, not of episodes, and
no episode read as a record (the columns are counted). The timed 1M case is
``bench/bench_store_scale.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.report import render_html
from evalband.store import RunStore, import_results, open_store


def _csv(path: Path, n: int, seed: int) -> Path:
    """``n`` paired episodes over four cells (two factors), as bench_store_scale writes them."""
    rng = np.random.default_rng(seed)
    outcomes = np.where(rng.random(n) < 0.8 - 0.05 * seed, "success", "failure")
    path.write_text("slice.mass,slice.friction,episode,repeat,outcome,steps\n" + "".join(
        f"{('light', 'heavy')[i % 2]},{('low', 'high')[(i // 2) % 2]},{i // 4},0,{o},"
        f"{10 + i % 50}\n" for i, o in enumerate(outcomes)))
    return path


def test_the_page_does_not_grow_with_the_episodes(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = RunStore.episode_records
    monkeypatch.setattr(RunStore, "episode_records",
                        lambda self, *a, **k: made.append(a) or real(self, *a, **k))
    pages = []
    for n in (400, 4000):
        path = tmp_path / f"s{n}.sqlite"
        with open_store(path) as st:
            for j, run_id in enumerate(("base", "cand")):
                import_results(st, _csv(tmp_path / f"{run_id}{n}.csv", n, j), run_id=run_id)
        pages.append(render_html(["base", "cand"], path))
    small, large = pages
    assert f"{4000 // 4}" in large  # the larger runs' counts are on the page
    assert small.count("<svg") == large.count("<svg") > 0
    assert small.count("<tr") == large.count("<tr")  # rows of slices and cells, not episodes
    assert len(large) < 1.05 * len(small)
    assert made == []  # every figure and table counted from the columns: no record read
