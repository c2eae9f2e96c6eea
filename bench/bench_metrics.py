"""Benchmark (an audit): metric intervals' coverage and the family-wise rate with a primary metric.

Issue 29's "must show", by seeded simulation:

* ``coverage``: how often the interval the product chooses covers the estimand it names,
  with a 95% Clopper-Pearson band on that rate, for n in 20, 50, 200. The product reads the
  metric's type from the values (:func:`evalband.analysis._metrics.metric_type`, as ``show``
  and ``compare`` do) or from a declaration (rows marked ``declared``): a mean for an
  unbounded or bounded metric, a median for a skewed, ordinal or progress one. ``chosen``
  says how often each estimand and method was chosen. Designs: paired (normal, lognormal
  gains, bounded, piled at 0), unpaired (Welch: skewed, bounded, piled at 0) and one run
  (normal, lognormal, Beta(2, 5), piled at 0 and at 1, 0/1 values, ordinal levels 0-3). The
  truth of each estimand comes from 2,000,000 draws.
* ``family``: two identical policies on a 3-slice panel whose ``return`` is a primary
  metric: 3 success slices and 3 metric slices in one family (:data:`FAMILY`: paired, n 20,
  100 and 200 per slice, skewed read from the values and declared, bounded, piled at 0 and
  at 1, mostly exactly 0; unpaired, n 20 and 100: Fisher's and Welch's tests). Per direction,
  the share of comparisons with a false "regression" (any slice regressed) and with a false
  "improved", each stated at most 2.5% (alpha / 2), with its 95% Clopper-Pearson band; the
  same for the success slices alone and the metric slices alone (within the one family);
  ``decided_by`` the tests used. Each replicate is decided by the product's engine on the
  product's hypotheses (``_Design.decide``: ``metric_rows`` and ``decide`` under
  ``compare``'s procedure), ~15 times faster than ``compare`` itself, so the rates get bands
  of about +-0.3 points (10,000 replicates): 1,000 gave +-1.2 and a 3.6% [2.5, 5.0] that a
  re-seeded run put at 1.7% (the rate is ~2.3%; 200,000 replicates, issue 29). The first
  replicates of every design are also compared by ``compare`` itself (the code path of
  ``evalband compare``), which must give every slice the same verdict
  (``checked_against_compare``). Every design has its own seed stream.

``speed``: ``compare`` of two stored runs of 10,000 episodes with two metrics, with the metric
rows, and as before them (neither the ``extra`` column read nor the rows computed; the store
read, the slices and the aggregate are in both), medians of interleaved rounds.

Bootstrap intervals use 1,999 resamples here (9,999 in the product) to keep the audit short.
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


def _truth(draw: Callable[[np.random.Generator, int], Any], estimand: str) -> float:
    """A design's true mean or median by one large seeded sample."""
    x = np.asarray(draw(np.random.default_rng(12345), 2_000_000), dtype=np.float64)
    return float(np.median(x) if estimand == "median" else x.mean())


def _level(rng: np.random.Generator, n: int) -> Any:
    return rng.beta(2.0, 2.0, n)  # a condition's difficulty, shared by both runs


# Each design draws (candidate, baseline) or one run's values; the product chooses the
# estimand and interval from the values (metric_type), the audit checks it covers its truth.
PAIRED: dict[str, Callable[[np.random.Generator, int], tuple[Any, Any]]] = {
    "normal": lambda rng, n: (lambda b: (b + rng.normal(0.5, 1.0, n), b))(rng.normal(size=n)),
    # lognormal(0, 1) gains: differences of skewness ~6 (median 1, mean e^0.5)
    "skewed": lambda rng, n: (lambda b: (b + rng.lognormal(0.0, 1.0, n), b))(
        rng.normal(size=n)),
    "bounded": lambda rng, n: (lambda lv: (np.clip(lv * rng.beta(0.5, 4.0, n) * 2, 0, 1),
                                           np.clip(lv * rng.beta(0.5, 2.0, n), 0, 1)))(
        _level(rng, n)),
    "piled at 0": lambda rng, n: (rng.beta(0.4, 3.0, n), rng.beta(0.3, 3.0, n)),
}
UNPAIRED: dict[str, Callable[[np.random.Generator, int], tuple[Any, Any]]] = {
    "skewed": lambda rng, n: (rng.lognormal(0, 1, n), rng.normal(1.0, 2.0, n)),
    "bounded": lambda rng, n: (rng.beta(0.5, 4.0, n), rng.beta(2.0, 5.0, n)),
    "piled at 0": lambda rng, n: (rng.beta(0.4, 3.0, n), rng.beta(0.3, 3.0, n)),
}
ONE: dict[str, Callable[[np.random.Generator, int], Any]] = {
    "normal": lambda rng, n: rng.normal(2.0, 1.0, n),
    "skewed (lognormal)": lambda rng, n: rng.lognormal(0, 1, n),
    "bounded Beta(2, 5)": lambda rng, n: rng.beta(2.0, 5.0, n),
    "piled at 0, Beta(0.4, 3)": lambda rng, n: rng.beta(0.4, 3.0, n),
    "piled at 1, 1 - Beta(0.3, 4)": lambda rng, n: 1.0 - rng.beta(0.3, 4.0, n),
    "0/1 values, p = 0.9": lambda rng, n: (rng.random(n) < 0.9).astype(float),
    "ordinal 0-3": lambda rng, n: rng.choice(4, n, p=[0.3, 0.4, 0.2, 0.1]).astype(float),
}


def _chosen(values: tuple[Any, ...], differences: Any | None, declared: str | None) -> str:
    from evalband.analysis._metrics import metric_type
    from evalband.panel import MetricSpec

    spec = MetricSpec(name="m", type=declared)  # type: ignore[arg-type]
    return metric_type(spec, *values, skew_of=None if differences is None else [differences])


def _coverage(reps: int, boot: int, sizes: tuple[int, ...] = (20, 50, 200)
              ) -> list[dict[str, Any]]:
    """Each design's chosen interval covering its estimand (mean or median), n 20-200.

    Each (n, design) row has its own seed, so a row re-run alone (``sizes``) is the same.
    """
    from evalband.analysis._metrics import MEDIAN_TYPES
    from evalband.stats._location import median_difference, median_interval
    from evalband.stats._means import mean_interval, paired_mean_difference, welch_mean_difference

    out = []
    for n in sizes:
        for kind, draw, declared in [*((k, d, None) for k, d in PAIRED.items()),
                                     ("skewed", PAIRED["skewed"], "skewed")]:
            rng = np.random.default_rng(np.random.SeedSequence([29, n, len(kind), 1]))
            truths = {e: _truth(lambda r, m, f=draw: np.subtract(*f(r, m)), e)
                      for e in ("mean", "median")}
            hits, methods = 0, {}  # type: ignore[var-annotated]
            for _ in range(reps):
                a, b = draw(rng, n)
                d = np.subtract(a, b)
                mtype = _chosen((a, b), d, declared)
                estimand = "median" if mtype in MEDIAN_TYPES else "mean"
                diff = (median_difference(d) if estimand == "median" else
                        paired_mean_difference(a, b, seed=rng, reps=boot,
                                               bounded=mtype == "bounded"))
                i = diff.interval_at(0.95)
                hits += i.low <= truths[estimand] <= i.high
                key = f"{estimand}: {diff.method}"
                methods[key] = methods.get(key, 0) + 1
            out.append({"design": f"paired {kind}" + (", declared" if declared else ""),
                        "n": n, "reps": reps,
                        "chosen": {k: round(v / reps, 3) for k, v in methods.items()},
                        **_band(hits, reps)})
        for kind, draw in UNPAIRED.items():
            rng = np.random.default_rng(np.random.SeedSequence([29, n, len(kind), 2]))
            truth = (_truth(lambda r, m, f=draw: f(r, m)[0], "mean")
                     - _truth(lambda r, m, f=draw: f(r, m)[1], "mean"))
            hits = 0
            for _ in range(reps):
                a, b = draw(rng, n)
                i = welch_mean_difference(a, b).interval_at(0.95)
                hits += i.low <= truth <= i.high
            out.append({"design": f"unpaired {kind}", "n": n, "reps": reps,
                        "chosen": {"mean: welch-t": 1.0}, **_band(hits, reps)})
        for kind, draw1, declared in [
                *((k, d, "ordinal" if k.startswith("ordinal") else None)
                  for k, d in ONE.items()),
                ("skewed (lognormal), declared", ONE["skewed (lognormal)"], "skewed")]:
            rng = np.random.default_rng(np.random.SeedSequence([29, n, len(kind), 3]))
            truths = {e: _truth(draw1, e) for e in ("mean", "median")}
            hits, methods = 0, {}
            for _ in range(reps):
                x = draw1(rng, n)
                mtype = _chosen((x,), None, declared)
                estimand = "median" if mtype in MEDIAN_TYPES else "mean"
                iv = (median_interval(x) if estimand == "median" else
                      mean_interval(x, bounded=mtype == "bounded", seed=rng, reps=boot))
                hits += iv.low <= truths[estimand] <= iv.high
                key = f"{estimand}: {iv.method}"
                methods[key] = methods.get(key, 0) + 1
            out.append({"design": f"one run, {kind}", "n": n, "reps": reps,
                        "chosen": {k: round(v / reps, 3) for k, v in methods.items()},
                        **_band(hits, reps)})
    return out


def _values(metric: str, rng: np.random.Generator, levels: Any) -> Any:
    """One run's primary metric per episode: both policies draw from the same law."""
    size = len(levels)
    if metric.startswith("skewed"):
        return levels + rng.lognormal(0.0, 1.0, size)
    if metric == "piled at 0":
        return rng.beta(0.4, 3.0 + np.exp(levels))
    if metric == "piled at 1":
        return 1.0 - rng.beta(0.3, 3.0 + np.exp(levels))
    if metric == "mostly exactly 0":  # ~10-20% of episodes score at all: few nonzero pairs
        return (rng.random(size) < 0.1 + 0.1 / (1 + np.exp(-levels))) * rng.beta(2.0, 2.0, size)
    return rng.beta(1 + np.exp(levels), 3.0)


def _records(run_id: str, panel: Any, won: Any, values: Any, shift: int) -> Any:
    """A simulated run as ``compare`` reads it (``shift``: episode numbers moved so none pair)."""
    from evalband.analysis._compare import RunData
    from evalband.episode import EpisodeRecord, Outcome

    records = [EpisodeRecord(
        run_id, run_id, panel.fingerprint, s.cell, s.episode + shift, s.repeat,
        s.condition_seed, Outcome.SUCCESS if w else Outcome.FAILURE, True, False,
        1, slices=dict(s.slices), extra={"metrics": {"return": float(v)}})
        for s, w, v in zip(panel.episode_specs(), won.tolist(), values.tolist(), strict=True)]
    return RunData(run_id, run_id, panel.fingerprint, panel, records, source="memory")


class _SuccessSlice:
    """A success slice as the engine reads it: the exact test's p, its null, the estimate."""

    reasons: tuple[str, ...] = ()
    margin = None

    def __init__(self, won_b: Any, won_c: Any, paired: bool) -> None:
        from evalband.stats._discrete import FisherNull, McNemarNull
        from evalband.stats._procedure import paired_exact_p, unpaired_exact_p

        k_b, k_c, n_b, n_c = int(won_b.sum()), int(won_c.sum()), won_b.size, won_c.size
        self.estimate = k_c / n_c - k_b / n_b
        if paired:
            c_only, b_only = int((won_c & ~won_b).sum()), int((won_b & ~won_c).sum())
            self.p_value = paired_exact_p(c_only, b_only)
            self._null: Any = McNemarNull(c_only + b_only)
        else:
            self.p_value = unpaired_exact_p(k_c, n_c, k_b, n_b)
            self._null = FisherNull(n_c, n_b, k_c + k_b)

    def null(self) -> Any:
        return self._null

    def interval_at(self, confidence: float) -> Any:
        from evalband.stats import Difference

        return Difference(self.estimate, self.estimate, self.estimate, "sim", confidence, True)


class _Design:
    """One family design: the panel, its slices, and each episode's pairing key and level."""

    def __init__(self, n: int, metric: str, paired: bool) -> None:
        from evalband.analysis._compare import _panel_layout
        from evalband.panel import load_panel

        declared = {"type": "skewed"} if "declared" in metric else {}
        self.panel = load_panel({
            "name": "fam", "env": "evalband/Coin-v0", "episodes": n, "seed": 0,
            "budget": {"steps": 1}, "factors": {"f": ["a", "b", "c"]},
            "metrics": [{"name": "return", "primary": True, **declared}]})
        specs = self.panel.episode_specs()
        self.levels = np.array([np.random.default_rng(s.condition_seed).normal()
                                for s in specs])
        layout = _panel_layout(self.panel)
        self.definitions, self.members = layout.definitions, layout.members
        cell = np.array([layout.cell_keys.index(s.cell) for s in specs], dtype=np.int64)
        self.in_slice = [self.members[j][cell] for j in range(len(self.definitions))]
        self.key = (cell, np.array([s.episode for s in specs], dtype=np.int64),
                    np.array([s.repeat for s in specs], dtype=np.int64))
        self.metric, self.paired, self.shift = metric, paired, 0 if paired else n

    def draw(self, rng: np.random.Generator) -> tuple[Any, Any]:
        won = rng.random(self.levels.size) < 1 / (1 + np.exp(-self.levels))
        return won, _values(self.metric, rng, self.levels)

    def decide(self, base: tuple[Any, Any], cand: tuple[Any, Any]) -> tuple[list[str], list[Any]]:
        """Every slice's verdict (success slices, then metric slices) by the product's engine.

        The metric hypotheses are :func:`~evalband.analysis._metrics.metric_rows`'s (the test
        ``compare`` chooses), decided with the success slices' exact tests by
        :func:`~evalband.analysis._verdicts.decide` under ``compare``'s procedure.
        """
        from evalband.analysis._metrics import MetricValues, metric_rows
        from evalband.analysis._verdicts import DISCRETE_HOLM, decide

        success = [_SuccessSlice(base[0][m], cand[0][m], self.paired) for m in self.in_slice]
        runs = [MetricValues({"return": self.key[0]}, {"return": self.key[1] + shift},
                             {"return": self.key[2]}, {"return": np.asarray(v, dtype=float)})
                for v, shift in ((base[1], 0), (cand[1], self.shift))]
        pending = [p for p in metric_rows(*runs, self.panel, self.definitions, self.members)
                   if p.hypothesis is not None]
        decided = decide([*success, *(p.hypothesis for p in pending)], 0.05,
                         procedure=DISCRETE_HOLM)
        return ([str(d.verdict) for d in decided],
                [p.row.delta.method if p.row.delta else "none" for p in pending])

    def compared(self, base: tuple[Any, Any], cand: tuple[Any, Any]) -> list[str]:
        """The same verdicts from ``compare`` itself (the code path of ``evalband compare``)."""
        from evalband.analysis import compare_runs

        c = compare_runs(_records("b", self.panel, *base, 0),
                         _records("c", self.panel, *cand, self.shift), power_statements=False)
        return [*(str(r.verdict) for r in c.slice_rows),
                *(str(m.verdict) for m in c.metrics if m.role == "primary")]


FAMILY = [(paired, n, metric) for paired, sizes, metrics in [
    (True, (20, 100, 200), ("skewed", "skewed, declared (median: sign test)", "bounded",
                            "piled at 0", "piled at 1", "mostly exactly 0")),
    (False, (20, 100), ("skewed", "bounded", "piled at 0"))] for n in sizes for metric in metrics]
"""The family designs: (episodes pair, episodes per slice, the primary metric's law)."""


def _family(reps: int, checked: int) -> list[dict[str, Any]]:
    """Each family design's false verdicts per direction under identical policies.

    Every replicate is decided by the product's engine on the product's hypotheses
    (:meth:`_Design.decide`); the first ``checked`` replicates of each design are also
    compared by ``compare`` itself and must give the same verdict on every slice.
    """
    import zlib

    out = []
    for paired, n, metric in FAMILY:
        design = _Design(n, metric, paired)
        rng = np.random.default_rng(np.random.SeedSequence(  # one stream per design
            [29, n, int(paired), zlib.crc32(metric.encode()), 4]))
        counts = dict.fromkeys(("regression", "improved", "success_regressed",
                                "success_improved", "metric_regressed", "metric_improved",
                                "mismatch"), 0)
        methods: dict[str, int] = {}
        for rep in range(reps):
            base, cand = design.draw(rng), design.draw(rng)
            verdicts, used = design.decide(base, cand)
            if rep < checked:
                counts["mismatch"] += verdicts != design.compared(base, cand)
            k = len(design.in_slice)
            for part, seen in (("success", verdicts[:k]), ("metric", verdicts[k:])):
                counts[f"{part}_regressed"] += "regressed" in seen
                counts[f"{part}_improved"] += "improved" in seen
            counts["regression"] += "regressed" in verdicts
            counts["improved"] += "improved" in verdicts
            for m in used:
                methods[m] = methods.get(m, 0) + 1
        out.append({
            "pairing": "paired" if paired else "unpaired", "n_per_slice": n,
            "primary_metric": metric, "reps": reps,
            "family": "3 success slices + 3 metric slices",
            "false_regression": _band(counts["regression"], reps),
            "false_improved": _band(counts["improved"], reps),
            "success_slices_alone": {"regressed": _band(counts["success_regressed"], reps),
                                     "improved": _band(counts["success_improved"], reps)},
            "metric_slices_alone": {"regressed": _band(counts["metric_regressed"], reps),
                                    "improved": _band(counts["metric_improved"], reps)},
            "checked_against_compare": {"reps": min(checked, reps),
                                        "different_verdicts": counts["mismatch"]},
            "decided_by": {k: round(v / sum(methods.values()), 3)
                           for k, v in sorted(methods.items())}})
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
        assert columns[-1] == f"where {pairs.HAS_METRICS}"
        times: dict[str, list[float]] = {"with": [], "without": []}
        try:
            for i in range(rounds + 1):  # the first round warms the imports, not timed
                for mode in ("with", "without"):
                    compare_module.metric_rows = (  # type: ignore[assignment]
                        real if mode == "with" else (lambda *a, **k: []))
                    pairs.COMPARE_COLUMNS = (  # type: ignore[misc]
                        columns if mode == "with" else columns[:-1])  # the code before: none
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
    family = _family(1000 if quick else 10_000, 50 if quick else 300)
    speed = _speed(2_000 if quick else 10_000, 3 if quick else 7)
    passed = (all(r["band"][1] >= 0.95 for r in coverage)
              and all(r["false_regression"]["band"][0] <= 0.025
                  and r["false_improved"]["band"][0] <= 0.025
                  and r["checked_against_compare"]["different_verdicts"] == 0
                  for r in family))
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
