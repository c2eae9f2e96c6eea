"""The report's violin and paired-difference figures draw the stored episodes' values.

The oracle is the store's own records: each run's metric values and, for the pairs, the
differences over episodes with the same (cell, episode, repeat), computed here by hand.
"""

from __future__ import annotations

import re

import numpy as np

from evalband.report._metric_plots import MAX_POINTS
from evalband.store import open_store


def _figure(page: str, fig_id: str) -> str:
    found = re.search(rf'<figure[^>]*id="{fig_id}".*?</figure>', page, re.S)
    assert found is not None, fig_id
    return found.group(0)


def _values(store, run_id: str) -> dict[str, dict[tuple, float]]:
    out: dict[str, dict[tuple, float]] = {}
    for r in store.episode_records(run_id):
        if r.outcome.value == "error":
            continue
        for name, value in r.metrics.items():
            out.setdefault(name, {})[r.key] = float(value)
    return out


def test_violins_and_paired_differences_of_the_reach_lab(labs) -> None:
    base, damped = labs.reach
    page = labs.page(base, damped)
    with open_store(labs.store) as st:
        b, c = _values(st, base), _values(st, damped)

    pairs = _figure(page, "fig-metric-pairs-0")
    titles = re.findall(r"Δ (\S+) per matched episode \((\d+) pairs\)", pairs)
    estimates = [float(x) for x in re.findall(r'class="interval" data-estimate="([^"]+)"',
                                              pairs)]
    assert titles and len(estimates) == len(titles)
    drawn = 0
    for (metric, n), estimate in zip(titles, estimates, strict=True):
        keys = sorted(set(b[metric]) & set(c[metric]))
        diffs = np.array([c[metric][k] - b[metric][k] for k in keys])
        assert int(n) == len(keys) >= 2
        assert estimate == float(f"{diffs.mean():.6g}")  # the mean paired difference
        drawn += min(len(keys), MAX_POINTS)
    assert pairs.count('class="point"') == drawn  # one point per matched episode

    violin = _figure(page, "fig-metric-violin")
    shown = re.findall(r"<text[^>]*>([^<]+)</text>", violin)
    metrics = [m for m in b if m in shown]
    assert metrics
    points = sum(min(len(run.get(m, {})), MAX_POINTS) for m in metrics for run in (b, c))
    assert violin.count('class="point"') == points
    spread = sum(len(set(run.get(m, {}).values())) > 1 for m in metrics for run in (b, c))
    assert violin.count('class="band"') == spread  # a violin where the values spread
