"""Benchmark (an audit): metric intervals' coverage and the family-wise rate with a primary metric.

Issue 29's "must show", by seeded simulation:

* ``coverage``: how often each metric interval contains the true mean (difference), with a
  95% Clopper-Pearson band on that rate, for n in 20, 50, 200: paired differences
  (:func:`evalband.stats.paired_mean_difference`: paired t, or the paired BCa bootstrap when
  the differences are skewed) on normal, skewed (lognormal) and bounded (Beta, in [0, 1])
  metrics; unpaired (Welch) on skewed and bounded metrics; one run's mean
  (:func:`evalband.stats.mean_interval`: t unbounded, BCa bounded);
  (``paired_t_alone``: the paired t interval on the same draws, for comparison);
* ``family``: two identical policies compared by ``compare`` (in memory, the code path of
  ``evalband compare``) on a 3-slice panel whose ``return`` is a primary metric: 3 success
  slices and 3 metric slices in one family (a decided metric slice uses the paired t test);
  the share of comparisons with a false
  "regression" verdict and with any slice or metric slice falsely "improved", each stated at
  most 2.5% (alpha / 2), with its band; skewed and bounded primary metrics, n 20 and 100.

``speed``: ``compare`` of two stored runs of 10,000 episodes with two metrics, with the metric
rows, and as before them (neither the ``extra`` column read nor the rows computed; the store
read, the slices and the aggregate are in both), medians of interleaved rounds.

BCa intervals use 1,999 resamples here (9,999 in the product) to keep the audit short.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _band(k: int, n: int) -> dict[str, Any]:
    from evalband.stats import interval

    iv = interval(k, n, method="clopper-pearson")
    return {"rate": round(k / n, 4), "band": [round(iv.low, 4), round(iv.high, 4)]}


def _paired(kind: str) -> tuple[Callable[[np.random.Generator, int], tuple[Any, Any]], float]:
    """A paired design: (draw candidate and baseline values, true mean difference)."""
    if kind == "normal":
        return (lambda rng, n: (lambda b: (b + rng.normal(0.5, 1.0, n), b))(
            rng.normal(size=n)), 0.5)
    if kind == "skewed":  # lognormal(0, 1) gains: skewness ~6
        return (lambda rng, n: (lambda b: (b + rng.lognormal(0.0, 1.0, n), b))(
            rng.normal(size=n)), float(np.exp(0.5)))

    def bounded(rng: np.random.Generator, n: int) -> tuple[Any, Any]:
        level = rng.beta(2.0, 2.0, n)  # the condition's difficulty, shared
        return (np.clip(level * rng.beta(0.5, 4.0, n) * 2, 0, 1),
                np.clip(level * rng.beta(0.5, 2.0, n), 0, 1))

    rng = np.random.default_rng(12345)  # the true difference by a large sample
    a, b = bounded(rng, 2_000_000)
    return bounded, float(a.mean() - b.mean())


def _coverage(reps: int, boot: int) -> list[dict[str, Any]]:
    from evalband.stats._means import (
        mean_interval,
        paired_mean_difference,
        t_mean_difference,
        welch_mean_difference,
    )

    out = []
    for n in (20, 50, 200):
        for kind in ("normal", "skewed", "bounded"):
            draw, truth = _paired(kind)
            rng = np.random.default_rng(np.random.SeedSequence([29, n, len(kind)]))
            hits, bca, t_hits = 0, 0, 0
            for _ in range(reps):
                a, b = draw(rng, n)
                d = paired_mean_difference(a, b, seed=rng, reps=boot, bounded=kind == "bounded")
                i = d.interval_at(0.95)
                hits += i.low <= truth <= i.high
                bca += d.method == "paired-bootstrap-bca"
                t = t_mean_difference(np.subtract(a, b)).interval_at(0.95)
                t_hits += t.low <= truth <= t.high
            out.append({"design": f"paired {kind}", "n": n, "reps": reps,
                        "bca_share": round(bca / reps, 3), **_band(hits, reps),
                        "paired_t_alone": _band(t_hits, reps)})
        for kind, draw_u, truth in (
                ("skewed", lambda rng, n: (rng.lognormal(0, 1, n), rng.normal(1.0, 2.0, n)),
                 float(np.exp(0.5)) - 1.0),
                ("bounded", lambda rng, n: (rng.beta(0.5, 4.0, n), rng.beta(2.0, 5.0, n)),
                 0.5 / 4.5 - 2.0 / 7.0)):
            rng = np.random.default_rng(np.random.SeedSequence([29, n, 7, len(kind)]))
            hits = 0
            for _ in range(reps):
                a, b = draw_u(rng, n)
                i = welch_mean_difference(a, b).interval_at(0.95)
                hits += i.low <= truth <= i.high
            out.append({"design": f"unpaired (Welch) {kind}", "n": n, "reps": reps,
                        **_band(hits, reps)})
        for kind, draw_1, truth, bounded in (
                ("bounded Beta(0.4, 3)", lambda rng, n: rng.beta(0.4, 3.0, n), 0.4 / 3.4, True),
                ("unbounded lognormal", lambda rng, n: rng.lognormal(0, 1, n),
                 float(np.exp(0.5)), False),
                ("unbounded normal", lambda rng, n: rng.normal(2.0, 1.0, n), 2.0, False)):
            rng = np.random.default_rng(np.random.SeedSequence([29, n, 11, len(kind)]))
            hits = 0
            for _ in range(reps):
                i = mean_interval(draw_1(rng, n), bounded=bounded, seed=rng, reps=boot)
                hits += i.low <= truth <= i.high
            out.append({"design": f"one run, {kind}", "n": n, "reps": reps,
                        **_band(hits, reps)})
    return out


def _run(run_id: str, panel: Any, levels: Any, metric: str, rng: np.random.Generator) -> Any:
    """One simulated run: success by the condition's level, a skewed or bounded ``return``."""
    from evalband.analysis._compare import RunData
    from evalband.episode import EpisodeRecord, Outcome

    specs = panel.episode_specs()
    won = rng.random(len(specs)) < 1 / (1 + np.exp(-levels))
    if metric == "skewed":
        values = levels + rng.lognormal(0.0, 1.0, len(specs))
    else:
        values = rng.beta(1 + np.exp(levels), 3.0)
    records = [EpisodeRecord(
        run_id, run_id, panel.fingerprint, s.cell, s.episode, s.repeat,
        s.condition_seed, Outcome.SUCCESS if w else Outcome.FAILURE, True, False,
        1, slices=dict(s.slices), extra={"metrics": {"return": float(v)}})
        for s, w, v in zip(specs, won.tolist(), values.tolist(), strict=True)]
    return RunData(run_id, run_id, panel.fingerprint, panel, records, source="memory")


def _family(reps: int) -> list[dict[str, Any]]:
    from evalband.analysis import compare_runs
    from evalband.panel import load_panel

    out = []
    for n in (20, 100):
        for metric in ("skewed", "bounded"):
            panel = load_panel({
                "name": "fam", "env": "evalband/Coin-v0", "episodes": n, "seed": 0,
                "budget": {"steps": 1}, "factors": {"f": ["a", "b", "c"]},
                "metrics": [{"name": "return", "primary": True}]})
            specs = panel.episode_specs()
            levels = np.array([np.random.default_rng(s.condition_seed).normal()
                               for s in specs])
            rng = np.random.default_rng(np.random.SeedSequence([29, n, len(metric), 3]))

            regression = improved = metric_regressed = bca = decided = 0
            for _ in range(reps):
                c = compare_runs(_run("b", panel, levels, metric, rng),
                                 _run("c", panel, levels, metric, rng), power_statements=False)
                primary = [m for m in c.metrics if m.role == "primary"]
                verdicts = [*(str(r.verdict) for r in c.slice_rows),
                            *(str(m.verdict) for m in primary)]
                regression += c.verdict == "regression"
                improved += "improved" in verdicts
                metric_regressed += any(str(m.verdict) == "regressed" for m in primary)
                bca += sum(m.delta is not None and m.delta.method == "paired-bootstrap-bca"
                           for m in primary)
                decided += len(primary)
            out.append({"n_per_cell": n, "primary_metric": metric, "reps": reps,
                        "family": "3 success slices + 3 metric slices",
                        "false_regression": _band(regression, reps),
                        "false_improved": _band(improved, reps),
                        "metric_slice_false_regressed": _band(metric_regressed, reps),
                        "bca_share": round(bca / max(decided, 1), 3)})
    return out


def _speed(episodes: int, rounds: int) -> dict[str, Any]:
    """``compare`` of two stored runs with two metrics, with and without the metric rows.

    Interleaved rounds, medians; the ratio of the two in the same run is the figure to quote.
    """
    import statistics
    import tempfile

    import evalband
    import evalband.analysis._compare as compare_module
    from evalband.analysis import compare_many
    from evalband.panel import load_panel
    from evalband.run import Recorder
    from evalband.store import open_store

    panel = load_panel({"name": "speed", "env": "evalband/Coin-v0", "episodes": episodes // 4,
                        "seed": 0, "budget": {"steps": 1},
                        "factors": {"f": ["a", "b", "c", "d"]}})
    rng = np.random.default_rng(29)
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/s.sqlite"
        with open_store(path) as st:
            for run_id in ("b", "c"):
                with Recorder(st, panel, run_id, run_id=run_id) as rec:
                    for s in panel.episode_specs():
                        rec.log(cell=s.cell, episode=s.episode, repeat=s.repeat, steps=1,
                                outcome="success" if rng.random() < 0.6 else "failure",
                                extra={"metrics": {"return": float(rng.normal()),
                                                   "coverage": float(rng.random())}})
        real = compare_module.metric_rows
        import evalband.analysis._pairs as pairs

        columns = pairs.COMPARE_COLUMNS
        assert columns[-1] == "extra"
        times: dict[str, list[float]] = {"with": [], "without": []}
        try:
            for i in range(rounds + 1):  # the first round warms the imports, not timed
                for mode in ("with", "without"):
                    compare_module.metric_rows = (  # type: ignore[assignment]
                        real if mode == "with" else (lambda *a, **k: []))
                    pairs.COMPARE_COLUMNS = (  # type: ignore[misc]
                        columns if mode == "with" else columns[:-1])  # the code before: no extra
                    with open_store(path) as st:
                        t0 = time.perf_counter()
                        compare_many(evalband.load_run("b", st), [evalband.load_run("c", st)])
                        if i:
                            times[mode].append(time.perf_counter() - t0)
        finally:
            compare_module.metric_rows = real  # type: ignore[assignment]
            pairs.COMPARE_COLUMNS = columns  # type: ignore[misc]
    with_s, without_s = (statistics.median(times[m]) for m in ("with", "without"))
    return {"episodes_per_run": episodes, "metrics": 2, "slices": 4, "rounds": rounds,
            "median_s_with_metrics": round(with_s, 4),
            "median_s_before_metrics": round(without_s, 4),
            "ratio": round(with_s / without_s, 2)}


def run(quick: bool = False) -> dict[str, Any]:
    """Coverage of every metric interval, and the family-wise rate with a primary metric."""
    t0 = time.perf_counter()
    coverage = _coverage(300 if quick else 2000, 999 if quick else 1999)
    family = _family(300 if quick else 2000)
    speed = _speed(2_000 if quick else 10_000, 3 if quick else 7)
    passed = (all(r["false_regression"]["band"][0] <= 0.025
                  and r["false_improved"]["band"][0] <= 0.025 for r in family))
    return {
        "name": "metrics" if not quick else "metrics_quick",
        "kind": "audit",
        "design": "metric interval coverage (n 20-200; paired, unpaired, one run; skewed and "
                  "bounded) and compare's family-wise false regression / improvement with a "
                  "primary metric, identical policies",
        "coverage": coverage,
        "family": family,
        "speed": speed,
        "lowest_coverage": min(r["rate"] for r in coverage),
        "passed": bool(passed),
        "load_average_1min": os.getloadavg()[0],
        "bench_seconds": time.perf_counter() - t0,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run("--quick" in sys.argv), indent=2))
