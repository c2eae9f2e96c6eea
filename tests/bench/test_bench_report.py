"""The report benchmark stays runnable, and the page it times shows the run it built.

Speed is measured in ``bench/`` (``make bench``), not here: these tests check only that the
bench builds the run it says it builds and that the rendered page reports that run's own
counts and Wilson bands, computed here independently from the store.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_report  # noqa: E402
from evalband.episode import Outcome  # noqa: E402
from evalband.report import render_html  # noqa: E402
from evalband.stats import interval  # noqa: E402
from evalband.store import open_store  # noqa: E402


def _band(k: int, n: int) -> str:
    ci = interval(k, n, "wilson")
    return f"[{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def test_report_bench_quick() -> None:
    result = bench_report.run(quick=True)
    assert result["episodes"] == 4_000  # 2 cells x 2,000 episodes, the quick size
    # the metric ECDF and the per-run violins, the report's five plots, the outcome breakdown
    assert result["svg_elements"] == 8
    assert result["page_bytes"] > 0 and math.isfinite(result["median_seconds"])
    assert isinstance(result["passed"], bool)


def test_bench_run_renders_with_its_own_counts(tmp_path: Path) -> None:
    per_cell = 150
    store_path = tmp_path / "runs.sqlite"
    run_id = bench_report.build_run(store_path, per_cell)
    with open_store(store_path) as store:
        records = store.episode_records(run_id)
    assert len(records) == 2 * per_cell
    assert len({r.key for r in records}) == 2 * per_cell
    page = render_html([run_id], store_path)
    assert page.count("<svg") == 8  # as in test_report_bench_quick
    wins = Counter(r.cell for r in records if r.outcome == Outcome.SUCCESS)
    sizes = Counter(r.cell for r in records)
    k, n = sum(wins.values()), len(records)
    assert f"{k}/{n}" in page and f"{k} of {n}" in page
    assert _band(k, n) in page
    for cell, size in sizes.items():  # every slice's own band, from its own counts
        assert size == per_cell
        assert _band(wins[cell], size) in page
