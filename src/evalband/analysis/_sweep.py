r"""Checkpoint sweeps: success vs training step, the best checkpoint, selection-aware.

Picking the checkpoint with the highest measured rate picks, among noisy rates, one that is
likely high by luck: its own rate overstates it (the winner's curse). A sweep therefore
says three things about the best checkpoint, none of them the naive rate alone:

1. **A selection-aware band**: every checkpoint's band at the Bonferroni level
   ``1 - alpha / K`` (simultaneous over the ``K`` checkpoints), so the band of whichever one
   the data select covers its true rate with probability at least ``1 - alpha`` (a
   simultaneous statement holds for any selection; Benjamini & Yekutieli 2005, *JASA*
   100:71-81, on selected intervals).
2. **A stated bias correction** of the point estimate: the parametric bootstrap estimate of
   the selection bias, :math:`E^*[\hat p^*_{J^*} - \hat p_{J^*}]` with
   :math:`J^* = \arg\max_j \hat p^*_j` over resamples of every checkpoint's episodes
   (whole scenes when clustered), subtracted from the best's rate (Efron & Tibshirani 1993, *An
   Introduction to the Bootstrap*, ch. 10, bias estimation). It reduces the bias; it is not
   a guarantee.
3. **A planned confirmation**: the best and the last checkpoint run again, back to back, on
   fresh conditions (the same panel with a new seed, written to a panel file), whose paired
   result is unbiased because the fresh episodes played no part in the choice. Given those
   runs (``--confirm-best``/``--confirm-last``), the sweep reports the best's confirmed rate
   and the paired best - last difference (exact McNemar, compatible interval).

Whether the last checkpoint is distinguishable from the best is read from the ranking's
simultaneous family (:mod:`evalband.analysis._rank`): valid whichever checkpoint the data
made "best".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband._util.typed import typed_from_dict
from evalband.analysis._rank_results import Ranking, RankPair
from evalband.errors import InvalidInputError
from evalband.stats import Difference, Interval

if TYPE_CHECKING:
    from evalband.analysis._compare import RunData
    from evalband.panel import Panel

__all__ = ["SweepPoint", "Confirmation", "Confirmed", "Sweep", "sweep_runs", "fresh_panel"]

_FRESH_OFFSET = 100_000


@dataclass(frozen=True)
class SweepPoint:
    """One checkpoint of the sweep.

    Attributes:
        step: its training step.
        policy: its name.
        run_id: its run.
        value: its rate (or mean metric) with a marginal band.
        simultaneous: its band at ``1 - alpha / K`` (covers with all the others at once).
        rank_low: best rank it may hold among the checkpoints (joint rank sets).
        rank_high: worst rank.
        tier: its tier in the ranking.
    """

    step: int
    policy: str
    run_id: str
    value: Interval
    simultaneous: Interval
    rank_low: int
    rank_high: int
    tier: int


@dataclass(frozen=True)
class Confirmation:
    """The confirmation the sweep plans: best and last again, on fresh conditions, paired.

    Attributes:
        best: the best checkpoint's policy (as the runs recorded it).
        last: the last checkpoint's policy.
        best_step: its step.
        last_step: its step.
        panel_seed: the fresh panel's seed (the sweep's seed + episodes + 100,000: no
            condition is shared with the sweep's, whatever the panel's seed scheme).
        episodes: episodes per checkpoint (the sweep's panel size).
        commands: the two ``evalband run`` lines (the panel file is ``PANEL``).
        sentence: the plan in words.
    """

    best: str
    last: str
    best_step: int
    last_step: int
    panel_seed: int
    episodes: int
    commands: tuple[str, ...]
    sentence: str


@dataclass(frozen=True)
class Confirmed:
    """What the confirmation runs found (fresh conditions: free of the selection).

    Attributes:
        best_run: the best checkpoint's confirmation run.
        last_run: the last checkpoint's.
        best: the best checkpoint's rate on the fresh conditions (Wilson).
        last: the last checkpoint's rate there.
        difference: best - last on the matched fresh episodes (Newcombe paired, compatible
            with exact McNemar at the sweep's level).
        p_value: exact McNemar p.
        sentence: the result in words.
    """

    best_run: str
    last_run: str
    best: Interval
    last: Interval
    difference: Difference
    p_value: float
    sentence: str


@dataclass(frozen=True)
class Sweep:
    """A checkpoint sweep (``evalband sweep`` / ``rank --by step``).

    Attributes:
        metric: what is ranked (``success`` by default).
        confidence: the joint level.
        points: the checkpoints by step.
        ranking: the checkpoints' ranking (rank sets, tiers, every pair).
        best: the step of the checkpoint with the highest measured value.
        best_naive: its measured value (biased upward by the selection).
        best_simultaneous: its selection-aware band (``1 - alpha / K``).
        best_corrected: its value less the bootstrap estimate of the selection bias.
        selection_bias: that estimate.
        last: the last step.
        last_vs_best: the pair best vs last from the ranking (``None`` when last is best).
        last_distinguishable: whether the ranking establishes best above last.
        confirmation: the planned confirmation.
        confirmed: the confirmation's result, when its runs were given.
        sentence: the sweep in words.
    """

    metric: str
    confidence: float
    points: tuple[SweepPoint, ...]
    ranking: Ranking
    best: int
    best_naive: Interval
    best_simultaneous: Interval
    best_corrected: float
    selection_bias: float
    last: int
    last_vs_best: RankPair | None
    last_distinguishable: bool
    confirmation: Confirmation
    confirmed: Confirmed | None
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``--json``)."""
        return {"kind": "sweep", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sweep:
        """The typed sweep back from :meth:`as_dict`."""
        return typed_from_dict(cls, data)


def fresh_panel(panel: Panel) -> Panel:
    """The same panel on fresh conditions: a new seed that shares no condition seed.

    >>> from evalband.panel import load_panel
    >>> p = load_panel("reach1d")
    >>> q = fresh_panel(p)
    >>> q.seed == p.seed + p.episodes + 100_000, q.fingerprint != p.fingerprint
    (True, True)
    >>> seeds = {s.condition_seed for s in p.episode_specs()}
    >>> seeds & {s.condition_seed for s in q.episode_specs()}
    set()
    """
    from evalband.panel import Panel

    data = panel.model_dump()
    data["seed"] = int(panel.seed) + int(panel.episodes) + _FRESH_OFFSET
    data["name"] = f"{panel.name}-confirm"
    return Panel(**data)


def _values(run: RunData, metric: str,
            cluster: str | None = "cell") -> tuple[np.ndarray, list[str]]:
    """The run's finite values of ``metric`` and each one's cluster (cell, or condition)."""
    from evalband.analysis._rank import metric_value

    pairs = [(metric_value(r, metric, run.errors_as_failures),
              f"{r.cell}|{r.episode}" if cluster == "condition" else r.cell)
             for r in run.records]
    kept = [(v, c) for v, c in pairs if math.isfinite(v)]
    return np.array([v for v, _ in kept], dtype=np.float64), [c for _, c in kept]


def _confirmed(best_run: RunData, last_run: RunData, confidence: float,
               sweep_fingerprint: str) -> Confirmed:
    from evalband.stats import interval
    from evalband.stats._procedure import compatible_difference, paired_exact_p

    if sweep_fingerprint in (best_run.panel_fingerprint, last_run.panel_fingerprint):
        raise InvalidInputError(
            "a confirmation run is on the sweep's own conditions (its panel); run the best and "
            "the last on the fresh confirmation panel (`evalband sweep ... --plan-confirmation "
            "FILE` writes it)")
    if best_run.panel_fingerprint != last_run.panel_fingerprint:
        raise InvalidInputError(
            f"the confirmation runs {best_run.run_id} and {last_run.run_id} are of different "
            "panels; run both on the planned confirmation panel")
    b = {r.key: r.success for r in best_run.records if r.outcome.value != "error"}
    a = {r.key: r.success for r in last_run.records if r.outcome.value != "error"}
    keys = sorted(b.keys() & a.keys())
    if not keys:
        raise InvalidInputError("the confirmation runs share no episode; play both on the "
                                "planned confirmation panel")
    counts = {"both": sum(b[k] and a[k] for k in keys),
              "a_only": sum(b[k] and not a[k] for k in keys),
              "b_only": sum(a[k] and not b[k] for k in keys),
              "neither": sum(not a[k] and not b[k] for k in keys)}
    p = paired_exact_p(counts["a_only"], counts["b_only"])
    diff = compatible_difference(counts, paired=True, confidence=confidence, p_value=p)
    kb, ka = sum(b[k] for k in keys), sum(a[k] for k in keys)
    best = interval(kb, len(keys), "wilson", confidence)
    last = interval(ka, len(keys), "wilson", confidence)
    verdict = ("the best is confirmed above the last" if diff.low > 0 else
               "the last is above the best on fresh conditions" if diff.high < 0 else
               "best and last are not told apart on fresh conditions")
    sentence = (f"on {len(keys)} fresh matched episodes: best {100 * best.estimate:.1f}%, last "
                f"{100 * last.estimate:.1f}%, difference {100 * diff.estimate:+.1f} points "
                f"[{100 * diff.low:+.1f}, {100 * diff.high:+.1f}], p {p:.3g}: {verdict}")
    return Confirmed(best_run.run_id, last_run.run_id, best, last, diff, p, sentence)


def _simultaneous_band(x: np.ndarray, cells: Sequence[str], cluster: str | None,
                       joint: float, seed: int) -> Interval:
    """One checkpoint's band at the joint level: Wilson, cluster-proportion or bootstrap."""
    from evalband.stats import cluster_bootstrap_interval, cluster_proportion_interval, interval

    binary = bool(x.size) and bool(np.all((x == 0) | (x == 1)))
    if binary and cluster is None:
        return interval(int(x.sum()), int(x.size), "wilson", joint)
    if binary:
        labels = np.unique(cells, return_inverse=True)[1]
        return cluster_proportion_interval(np.bincount(labels, weights=x).astype(np.int64),
                                           np.bincount(labels), joint)
    return cluster_bootstrap_interval(x, cells if cluster else list(range(x.size)),
                                      reps=2000, confidence=joint, seed=seed)


def _sentence(metric: str, best: SweepPoint, last: SweepPoint, last_is_best: bool,
              distinguishable: bool, joint: float, corrected: float) -> str:
    """The sweep's one-line summary: the best checkpoint, its band, and the last one."""
    rate = metric in ("success", "unaided")
    unit = 100.0 if rate else 1.0

    def fmtv(v: float) -> str:
        return f"{unit * v:.1f}%" if rate else f"{v:.3g}"

    if last_is_best:
        tail = "the last checkpoint is the best measured"
    elif distinguishable:
        tail = f"the last (step {last.step:,}) is established below the best"
    else:
        tail = (f"the last (step {last.step:,}, {fmtv(last.value.estimate)}) cannot be told "
                "apart from the best")
    return (f"best measured: step {best.step:,} at {fmtv(best.value.estimate)} (selection-"
            f"aware band [{fmtv(best.simultaneous.low)}, {fmtv(best.simultaneous.high)}] at "
            f"{100 * joint:.3g}%; bias-corrected {fmtv(corrected)}); {tail}")


def sweep_runs(
    runs: Sequence[RunData],
    steps: Sequence[int | None],
    *,
    metric: str = "success",
    confidence: float = 0.95,
    cluster: str | None = None,
    policies: Sequence[str] | None = None,
    confirm: tuple[RunData, RunData] | None = None,
    seed: int = 0,
) -> Sweep:
    """The sweep of one training run's checkpoints (each run with its step).

    Args:
        runs: one run per checkpoint, on one panel.
        steps: each run's checkpoint step (``RunManifest.step``); all required.
        metric: what to rank (a 0/1 metric for the bias correction by the binomial).
        confidence: the joint level.
        cluster: as :func:`~evalband.analysis.rank_runs`.
        policies: what to put after ``-p`` in the confirmation commands (default: the
            runs' policies).
        confirm: the confirmation runs of the best and the last checkpoint, when played.
        seed: the bootstrap's seed.

    Returns:
        A :class:`Sweep`.

    Raises:
        InvalidInputError: a run without a step, repeated steps, fewer than two runs.

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> panel = evalband.load_panel("reach1d")
    >>> for step, p in ((100, "baseline"), (200, "expert"), (300, "damped")):
    ...     _ = evalband.run_panel(panel, f"reach1d:{p}", store, run_id=p, step=step)
    >>> runs = [evalband.load_run(p, store) for p in ("baseline", "expert", "damped")]
    >>> s = sweep_runs(runs, [100, 200, 300])
    >>> s.best, s.last, s.last_distinguishable, s.best_corrected < s.best_naive.estimate
    (200, 300, False, True)
    """
    from evalband.analysis._rank import rank_runs

    if len(runs) < 2:
        raise InvalidInputError(f"a sweep needs at least 2 checkpoints; got {len(runs)}: give "
                                "the run ids of two or more checkpoints of one training run "
                                "(each recorded with its checkpoint step)")
    missing = [r.run_id for r, s in zip(runs, steps, strict=True) if s is None]
    if missing:
        raise InvalidInputError(
            f"run(s) {', '.join(missing)} recorded no checkpoint step; record it with "
            "`evalband run ... --step N` (or run_panel(..., step=N))")
    step_list = [int(s) for s in steps if s is not None]
    if len(set(step_list)) != len(step_list):
        raise InvalidInputError(f"each checkpoint step may appear once; got {sorted(step_list)}")
    names = list(policies) if policies is not None else [r.policy for r in runs]
    order = sorted(range(len(runs)), key=lambda i: step_list[i])
    runs = [runs[i] for i in order]
    step_list = [step_list[i] for i in order]
    names = [names[i] for i in order]
    if cluster is None and any(int(r.panel.repeats) > 1 for r in runs):
        cluster = "condition"  # as rank_runs: repeats of one condition are one unit
    ranking = rank_runs(runs, metric=metric, confidence=confidence, cluster=cluster,
                        steps=step_list, seed=seed)
    overall = ranking.overall
    by_run = {p.run_id: p for p in overall.policies}
    k = len(runs)
    joint = 1.0 - (1.0 - confidence) / k
    samples = [_values(r, metric, cluster) for r in runs]
    points = []
    for run, step in zip(runs, step_list, strict=True):
        p = by_run[run.run_id]
        sim = _simultaneous_band(*_values(run, metric, cluster), cluster, joint, seed)
        points.append(SweepPoint(step, run.policy, run.run_id, p.value, sim, p.rank_low,
                                 p.rank_high, p.tier))
    means = [pt.value.estimate for pt in points]
    best_i = int(np.nanargmax(means))
    best, last = points[best_i], points[-1]
    from evalband.stats._selection import selection_bias

    bias = selection_bias([x for x, _ in samples],
                          [c for _, c in samples] if cluster is not None else None, seed=seed)
    corrected = best.value.estimate - bias
    pair = None
    if best_i != len(points) - 1:
        pair = next(p for p in overall.pairs
                    if {p.better, p.worse} == {best.policy, last.policy})
    distinguishable = bool(pair is not None and pair.established and pair.better == best.policy)
    panel = fresh_panel(runs[0].panel)
    episodes = len(runs[0].panel.episode_specs())
    commands = tuple(
        f"evalband run PANEL -p {names[i]} --run-id {runs[i].run_id}-confirm "
        f"--step {step_list[i]}"
        for i in dict.fromkeys((best_i, len(points) - 1)))
    plan_words = (f"to confirm without the selection's bias, run step {best.step:,} and step "
                  f"{last.step:,} again on the fresh panel (seed {panel.seed}, {episodes} "
                  "episodes each, matched), then pass them with --confirm-best/--confirm-last")
    confirmation = Confirmation(best.policy, last.policy, best.step, last.step, int(panel.seed),
                                episodes, commands, plan_words)
    confirmed = (_confirmed(confirm[0], confirm[1], confidence, runs[0].panel_fingerprint)
                 if confirm else None)
    sentence = _sentence(metric, best, last, best_i == len(points) - 1, distinguishable,
                         joint, corrected)
    if math.isnan(corrected):  # pragma: no cover - no finite value at all is refused earlier
        corrected = best.value.estimate
    return Sweep(metric, confidence, tuple(points), ranking, best.step, best.value,
                 best.simultaneous, float(corrected), bias, last.step, pair, distinguishable,
                 confirmation, confirmed, sentence)
