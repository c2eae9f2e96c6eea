"""``evalband agree``: does a cheap ranking agree with the behavioural one, given its noise?

The cheap side is a table of metrics per checkpoint (validation loss, validation action
error: ``evalband offline`` writes one) or simulation runs; the expensive side is
behavioural runs or a session's policies, ranked by :func:`~evalband.analysis.rank_runs`.
The statistics are :mod:`evalband.stats._agreement`: Spearman and Kendall with bounds over
every true ordering the behavioural rank sets allow (coverage at least the joint level),
Pearson and SimplerEnv's MMRV with two-level bootstrap intervals, and the share of the
*established* behavioural orders each metric gets right. When no behavioural order is
established, seed 004's sentence is the result: at this noise floor no metric's ordering
can be validated.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband._util.typed import typed_from_dict
from evalband.analysis._rank_results import Ranking
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.analysis._compare import RunData

__all__ = ["Correlation", "MetricAgreement", "Agreement", "agree_runs", "read_metric_csv",
           "match_checkpoints", "lower_is_better_by_name"]

_LOWER_WORDS = ("loss", "error", "mse", "mae", "distance", "regret")


@dataclass(frozen=True)
class Correlation:
    """One agreement statistic with its interval.

    Attributes:
        name: ``spearman``, ``kendall``, ``pearson`` or ``mmrv``.
        estimate: on the measured rates.
        low: the interval's low end (``None``: undefined).
        high: its high end.
        interval: how the interval was made (``rank-set bound``: over every true ordering the
            behavioural rank sets allow, coverage at least the joint level;
            ``two-level bootstrap``: percentile, over checkpoints and their episodes).
        bootstrap_low: the two-level bootstrap's low end (also for the rank correlations).
        bootstrap_high: its high end.
    """

    name: str
    estimate: float
    low: float | None
    high: float | None
    interval: str
    bootstrap_low: float | None
    bootstrap_high: float | None


@dataclass(frozen=True)
class MetricAgreement:
    """How one cheap metric agrees with the behavioural ranking.

    Attributes:
        metric: the cheap metric's name.
        higher_is_better: its direction.
        direction: ``declared`` or ``assumed from the name`` (a loss or an error: lower).
        values: policy -> its cheap value.
        spearman: Spearman's rank correlation with the behavioural rates.
        kendall: Kendall's tau-b.
        pearson: Pearson's correlation.
        mmrv: SimplerEnv's Mean Maximum Rank Violation (0 is perfect; in rate units).
        established: behavioural orders established at the joint level.
        agreeing: how many of those the metric orders the same way.
        disagreeing: ... the other way.
        tied: ... not at all (equal values).
        sentence: the result in words.
    """

    metric: str
    higher_is_better: bool
    direction: str
    values: dict[str, float]
    spearman: Correlation
    kendall: Correlation
    pearson: Correlation
    mmrv: Correlation
    established: int
    agreeing: int
    disagreeing: int
    tied: int
    sentence: str


@dataclass(frozen=True)
class Agreement:
    """``evalband agree``'s result.

    Attributes:
        behaviour: the behavioural ranking (rank sets, established orders, tiers).
        policies: the checkpoints, in the behavioural ranking's order.
        rates: their behavioural rates, same order.
        confidence: the joint level of the rank sets and the intervals.
        validated: whether any behavioural order is established (else no metric's ordering
            can be validated at this noise floor).
        metrics: one agreement per cheap metric.
        sentence: the result in words.
        notes: what the reader must know.
    """

    behaviour: Ranking
    policies: tuple[str, ...]
    rates: tuple[float, ...]
    confidence: float
    validated: bool
    metrics: tuple[MetricAgreement, ...]
    sentence: str
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``--json``)."""
        return {"kind": "agreement", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Agreement:
        """The typed result back from :meth:`as_dict`."""
        return typed_from_dict(cls, data)


def lower_is_better_by_name(name: str) -> bool:
    """Whether a metric's name says lower is better (a loss, an error, a distance).

    >>> lower_is_better_by_name("val_loss"), lower_is_better_by_name("action_error")
    (True, True)
    >>> lower_is_better_by_name("success")
    False
    """
    low = name.lower()
    return any(word in low for word in _LOWER_WORDS)


def read_metric_csv(path: str | Path, key: str = "checkpoint") -> dict[str, dict[str, float]]:
    """A CSV of metrics per checkpoint: ``{metric: {checkpoint: value}}``.

    The ``checkpoint`` column names the checkpoint (a run id, its policy, or its step); every
    other column with numbers in each row is a metric (a column with a blank cell is left
    out of that row's checkpoint).

    Raises:
        InvalidInputError: no such file, no ``checkpoint`` column, a repeated checkpoint, or
            no numeric column.
    """
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InvalidInputError(f"cannot read the metrics CSV {p}: {exc.strerror}") from None
    if not rows or key not in rows[0]:
        raise InvalidInputError(f"the metrics CSV {p} needs a header with a {key!r} column and "
                                "one column per metric; got "
                                f"{', '.join(rows[0]) if rows else 'no rows'}")
    out: dict[str, dict[str, float]] = {}
    seen: set[str] = set()
    for row in rows:
        name = (row.get(key) or "").strip()
        if not name or name in seen:
            raise InvalidInputError(f"the metrics CSV {p}: checkpoint {name!r} is empty or "
                                    "repeated; one row per checkpoint")
        seen.add(name)
        for column, text in row.items():
            if column == key or column is None or text is None or not text.strip():
                continue
            try:
                value = float(text)
            except ValueError:
                raise InvalidInputError(f"the metrics CSV {p}: column {column!r} of checkpoint "
                                        f"{name!r} is {text!r}, not a number") from None
            out.setdefault(column, {})[name] = value
    if not out:
        raise InvalidInputError(f"the metrics CSV {p} has no metric column besides {key!r}")
    return out


def match_checkpoints(keys: Sequence[str], runs: Sequence[RunData],
                      steps: Sequence[int | None]) -> dict[str, str]:
    """Each checkpoint key -> the run id it names (by run id, policy, or step).

    Raises:
        InvalidInputError: a key that names no run, or more than one.
    """
    out: dict[str, str] = {}
    for key in keys:
        found = {r.run_id for r, s in zip(runs, steps, strict=True)
                 if key in (r.run_id, r.policy) or (s is not None and key == str(s))}
        if len(found) != 1:
            names = ", ".join(f"{r.run_id} ({r.policy})" for r in runs)
            raise InvalidInputError(
                f"checkpoint {key!r} names {'no' if not found else 'more than one'} behavioural "
                f"run; name each by its run id, policy or step; runs: {names}")
        out[key] = found.pop()
    return out


def _bootstrap_bounds(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    if finite.size < 20:
        return None, None
    tail = (1.0 - level) / 2.0
    return float(np.quantile(finite, tail)), float(np.quantile(finite, 1.0 - tail))


def _one_metric(
    name: str, values: np.ndarray, higher: bool, direction: str, rates: np.ndarray,
    ranking: Ranking, order: Sequence[str], boot_args: dict[str, Any], level: float,
) -> MetricAgreement:
    from evalband.stats._agreement import (
        established_agreement,
        kendall_tau_b,
        mmrv,
        pearson,
        rank_set_bounds,
        spearman,
        two_level_bootstrap,
    )

    cheap = values if higher else -values
    overall = ranking.overall
    index = {p: i for i, p in enumerate(order)}
    k = len(order)
    better = np.zeros((k, k), dtype=bool)
    for pair in overall.pairs:
        if pair.established:
            better[index[pair.better], index[pair.worse]] = True
    by_name = {p.policy: p for p in overall.policies}
    low = np.array([by_name[p].rank_low for p in order])
    high = np.array([by_name[p].rank_high for p in order])
    (s_lo, s_hi), (k_lo, k_hi) = rank_set_bounds(cheap, low, high, better)
    boot = two_level_bootstrap(cheap, **boot_args)
    agree_n, disagree_n, tied_n = established_agreement(cheap, better)
    established = int(better.sum())

    def corr(stat: str, estimate: float, bounds: tuple[float, float] | None,
             reps: np.ndarray) -> Correlation:
        b_lo, b_hi = _bootstrap_bounds(reps, level)
        if bounds is not None and not math.isnan(bounds[0]):
            return Correlation(stat, estimate, bounds[0], bounds[1], "rank-set bound", b_lo, b_hi)
        return Correlation(stat, estimate, b_lo, b_hi, "two-level bootstrap", b_lo, b_hi)

    sp = corr("spearman", spearman(cheap, rates), (s_lo, s_hi), boot.spearman)
    kd = corr("kendall", kendall_tau_b(cheap, rates), (k_lo, k_hi), boot.kendall)
    pe = corr("pearson", pearson(cheap, rates), None, boot.pearson)
    mv = corr("mmrv", mmrv(cheap, rates), None, boot.mmrv)
    if established == 0:
        words = (f"{name}: Spearman {sp.estimate:+.2f} on the measured rates, but no "
                 "behavioural order is established, so its ordering cannot be validated")
    else:
        words = (f"{name}: gets {agree_n} of {established} established behavioural orders "
                 f"right ({disagree_n} reversed, {tied_n} tied); Spearman {sp.estimate:+.2f}, "
                 f"between {sp.low:+.2f} and {sp.high:+.2f} for the orders the behavioural "
                 f"rank sets allow")
    return MetricAgreement(name, higher, direction,
                           {p: float(v) for p, v in zip(order, values, strict=True)},
                           sp, kd, pe, mv, established, agree_n, disagree_n, tied_n, words)


def agree_runs(
    behaviour: Sequence[RunData],
    *,
    cheap: Mapping[str, Mapping[str, float]] | None = None,
    cheap_runs: Sequence[RunData] | None = None,
    steps: Sequence[int | None] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    metric: str = "success",
    confidence: float = 0.95,
    cluster: str | None = None,
    session_id: str | None = None,
    reps: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Hold cheap metrics (or simulation runs) against behavioural runs.

    Args:
        behaviour: the behavioural runs (one per checkpoint; a session's runs).
        cheap: ``{metric: {checkpoint: value}}`` (a checkpoint named by run id, policy or
            step of a behavioural run; :func:`read_metric_csv`).
        cheap_runs: simulation runs instead, one per behavioural run in the same order
            (their success rates are the cheap values, resampled in the bootstrap too).
        steps: the behavioural runs' checkpoint steps (for naming by step).
        higher_is_better: per metric, declared directions (else a loss or an error is lower
            is better, by its name).
        metric: the behavioural metric (``success``; ``unaided`` for a session).
        confidence: the joint level.
        cluster: clustering of the behavioural episodes (``cell`` for a session's scenes).
        session_id: the session, when the behaviour is one.
        reps: bootstrap replicates.
        seed: the seed.

    Returns:
        An :class:`Agreement`.

    Raises:
        InvalidInputError: no cheap side (or both), fewer than three checkpoints, a
            checkpoint that names no behavioural run.
    """
    from evalband.analysis._rank import metric_value, rank_runs

    if (cheap is None) == (cheap_runs is None):
        raise InvalidInputError("give the cheap side once: a metrics CSV or simulation runs")
    if len(behaviour) < 3:
        raise InvalidInputError(f"agreement of orderings needs at least 3 checkpoints; got "
                                f"{len(behaviour)}")
    steps = list(steps) if steps is not None else [None] * len(behaviour)
    ranking = rank_runs(behaviour, metric=metric, confidence=confidence, cluster=cluster,
                        steps=steps, session_id=session_id, seed=seed)
    by_run = {p.run_id: p for p in ranking.overall.policies}
    order = [p.policy for p in ranking.overall.policies]
    run_of = {p.policy: p.run_id for p in ranking.overall.policies}
    rates = np.array([p.value.estimate for p in ranking.overall.policies])
    runs_by_id = {r.run_id: r for r in behaviour}
    samples, clusters = [], []
    for p in order:
        run = runs_by_id[run_of[p]]
        vals = [(metric_value(r, metric, run.errors_as_failures), r.cell) for r in run.records]
        kept = [(v, c) for v, c in vals if math.isfinite(v)]
        samples.append(np.array([v for v, _ in kept]))
        clusters.append(np.unique([c for _, c in kept], return_inverse=True)[1])
    boot_args: dict[str, Any] = {"behaviour": samples, "reps": reps, "seed": seed,
                                 "clusters": clusters if cluster is not None else None}
    notes: list[str] = []
    tables: dict[str, dict[str, float]] = {}
    if cheap is not None:
        for name, column in cheap.items():
            matched = match_checkpoints(list(column), behaviour, steps)
            per_run = {matched[key]: v for key, v in column.items()}
            missing = [p for p in order if run_of[p] not in per_run]
            if missing:
                notes.append(f"{name}: no value for {', '.join(missing)}; left out of the table")
                continue
            tables[name] = {p: per_run[run_of[p]] for p in order}
    else:
        assert cheap_runs is not None
        if len(cheap_runs) != len(behaviour):
            raise InvalidInputError(f"give one simulation run per behavioural run; got "
                                    f"{len(cheap_runs)} for {len(behaviour)}")
        sim_of = {b.run_id: c for b, c in zip(behaviour, cheap_runs, strict=True)}
        sim_samples = []
        for p in order:
            sim = sim_of[run_of[p]]
            x = np.array([metric_value(r, "success", sim.errors_as_failures)
                          for r in sim.records])
            sim_samples.append(x[np.isfinite(x)])
        tables["simulation success"] = {p: float(x.mean()) for p, x in zip(order, sim_samples,
                                                                          strict=True)}
        boot_args["cheap_samples"] = sim_samples
        notes.append("the rank-set bounds take the simulation rates as measured; the bootstrap "
                     "resamples both sides")
    if not tables:
        raise InvalidInputError("no cheap metric has a value for every checkpoint")
    results = []
    for name, table in tables.items():
        declared = higher_is_better is not None and name in higher_is_better
        higher = (higher_is_better[name] if declared and higher_is_better is not None
                  else not lower_is_better_by_name(name))
        direction = "declared" if declared else "assumed from the name"
        values = np.array([table[p] for p in order])
        results.append(_one_metric(name, values, higher, direction, rates, ranking, order,
                                   boot_args, confidence))
    overall = ranking.overall
    validated = overall.established > 0
    pairs = len(overall.pairs)
    if not validated:
        sentence = (f"at this noise floor no metric's ordering can be validated: none of the "
                    f"{pairs} behavioural orders of these {len(order)} checkpoints is "
                    f"established at joint {100 * confidence:g}% (their rank sets all overlap)")
    else:
        sentence = "; ".join(m.sentence for m in results)
    del by_run
    return Agreement(ranking, tuple(order), tuple(float(r) for r in rates), confidence,
                     validated, tuple(results), sentence, tuple(notes))
