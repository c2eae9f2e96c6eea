"""Rank many policies with simultaneous rank sets: runs on one panel, or a session's policies.

The statistics are :mod:`evalband.stats._ranks` (pairwise tests that use the pairing, Holm
over both directions of every pair, rank sets and tiers; Mogstad, Romano, Shaikh & Wilhelm
2024) and :mod:`evalband.stats._rank_power` (the exact cost of separating a pair). This
module reads the runs into a policies x episodes matrix (one column per pairing key
``(cell, episode, repeat)``), calls them once per slice and builds the typed
:class:`~evalband.analysis._rank_results.Ranking`.

A metric is read per episode: ``success`` (an ``error`` episode is left out unless the run
counts errors as failures), ``unaided`` (success without help; assisted episodes are left
out, as a session's rates do), ``score`` (the ordinal score) or ``metrics.NAME`` (a number
the run recorded in ``extra["metrics"]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from evalband.analysis._rank_results import (
    RankedPolicy,
    Ranking,
    RankPair,
    Separation,
    SliceRanking,
)
from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError, PanelMismatchError

if TYPE_CHECKING:
    from evalband.analysis._compare import RunData
    from evalband.analysis._verdicts import Decided
    from evalband.stats import Difference, Interval

__all__ = ["RANK_METRICS", "RankInput", "rank_inputs", "rank_runs", "rank_matrix", "metric_value"]

RANK_METRICS = ("success", "unaided", "score", "metrics.NAME")
"""What a ranking may rank by (``metrics.NAME``: any number in a record's metrics)."""

_POWER = 0.8
_PROCEDURE = (
    "pairwise tests that use the pairing (exact McNemar on matched episodes, the sign-flip "
    "test over scenes, Fisher's exact test for independent runs, the sign-flip test for a "
    "metric); Holm over both directions of every pair; rank sets from the established "
    "orders (Mogstad, Romano, Shaikh & Wilhelm 2024, Rev. Econ. Stud. 91:476-518)"
)


@dataclass(frozen=True)
class RankInput:
    """One policy's values by pairing key, ready to rank.

    ``values``: pairing key -> value (``nan``: left out); ``slices``: cell -> its slice labels.
    """

    policy: str
    run_id: str
    step: int | None
    values: dict[tuple[str, int, int], float]
    slices: dict[str, dict[str, str]]


def metric_value(record: EpisodeRecord, metric: str, errors_as_failures: bool = False) -> float:
    """One episode's value of ``metric`` (``nan`` when the episode is left out).

    >>> r = EpisodeRecord(run_id="r", policy="p", panel_fingerprint="f", cell="", episode=0,
    ...                   repeat=0, condition_seed=1, outcome="success", terminated=True,
    ...                   truncated=False, steps=3, assisted=True, score=2)
    >>> metric_value(r, "success"), metric_value(r, "unaided"), metric_value(r, "score")
    (1.0, nan, 2.0)
    """
    if record.outcome is Outcome.ERROR and not errors_as_failures:
        return math.nan
    if metric == "success":
        return 1.0 if record.outcome is Outcome.SUCCESS else 0.0
    if metric == "unaided":
        if record.assisted:
            return math.nan
        return 1.0 if record.outcome is Outcome.SUCCESS else 0.0
    if metric == "score":
        return math.nan if record.score is None else float(record.score)
    if metric.startswith("metrics.") and len(metric) > len("metrics."):
        value = record.metrics.get(metric[len("metrics."):])
        return math.nan if value is None or not math.isfinite(value) else float(value)
    raise InvalidInputError(f"metric must be one of {', '.join(RANK_METRICS)}; got {metric!r}",
                            parameters=("metric",))


def rank_inputs(
    runs: Sequence[RunData], metric: str, steps: Sequence[int | None] | None = None,
) -> list[RankInput]:
    """Each run's values of ``metric`` by pairing key."""
    out = []
    for i, run in enumerate(runs):
        values: dict[tuple[str, int, int], float] = {}
        slices: dict[str, dict[str, str]] = {}
        for r in run.records:
            values[r.key] = metric_value(r, metric, run.errors_as_failures)
            if r.cell not in slices:
                slices[r.cell] = dict(r.slices)
        out.append(RankInput(run.policy, run.run_id, None if steps is None else steps[i],
                             values, slices))
    return out


def rank_matrix(
    inputs: Sequence[RankInput], keys: Sequence[tuple[str, int, int]] | None = None,
) -> tuple[npt.NDArray[np.float64], list[tuple[str, int, int]]]:
    """The policies x keys matrix (``nan`` where a policy has no value) and its keys."""
    if keys is None:
        keys = sorted({k for inp in inputs for k in inp.values})
    y = np.full((len(inputs), len(keys)), np.nan)
    for j, inp in enumerate(inputs):
        get = inp.values.get
        y[j] = [get(k, math.nan) for k in keys]
    return y, list(keys)


def _value_band(row: npt.NDArray[np.float64], clusters: npt.NDArray[np.int64] | None,
                binary: bool, confidence: float, seed: int) -> Interval:
    from evalband.stats import Interval, cluster_bootstrap_interval, cluster_proportion_interval
    from evalband.stats import interval as wilson

    keep = np.isfinite(row)
    x = row[keep]
    if x.size == 0:
        return Interval(math.nan, math.nan, math.nan, "none", confidence, 0, 0)
    if binary:
        if clusters is None:
            return wilson(int(x.sum()), int(x.size), "wilson", confidence)
        ids = np.unique(clusters[keep], return_inverse=True)[1]
        return cluster_proportion_interval(np.bincount(ids, weights=x).astype(np.int64),
                                           np.bincount(ids), confidence)
    labels = clusters[keep] if clusters is not None else np.arange(x.size)
    return cluster_bootstrap_interval(x, labels.tolist(), reps=2000, confidence=confidence,
                                      seed=seed)


def _separation(
    names: Sequence[str], tiers: Sequence[Sequence[int]], estimates: npt.NDArray[np.float64],
    tests: Sequence[Any], per_policy: int, *, design: str, alpha: float,
    effect: float | None, higher_is_better: bool,
) -> Separation | None:
    from evalband.stats._rank_power import clip_discordant, separation_size

    group = next((t for t in tiers if len(t) > 1), None)
    if group is None:
        return None
    a, b = group[0], group[1]
    observed = abs(float(estimates[a] - estimates[b]))
    gap = float(effect) if effect is not None else observed
    source = "declared" if effect is not None else "observed"
    k = len(names)
    unit = "scenes" if design == "clustered" else "episodes"
    rate_a = float(estimates[a] if higher_is_better else estimates[b])
    rate_a = min(1.0, max(rate_a, gap))
    rate_b = rate_a - gap
    psi = None
    if design != "unpaired":
        t = next(t for t in tests if {t.a, t.b} == {a, b})
        c = t.counts
        pairs = c["both"] + c["a_only"] + c["b_only"] + c["neither"]
        psi = clip_discordant((c["a_only"] + c["b_only"]) / pairs if pairs else gap,
                              rate_a, rate_b)
    size = None
    if gap > 0:
        size = separation_size(rate_a, rate_b, policies=k, alpha=alpha, power=_POWER,
                               design=design, discordant=psi)
    pair_alpha = alpha / (k * (k - 1) / 2)
    test = {"paired": "exact McNemar", "unpaired": "Fisher's exact test",
            "clustered": "the sign-flip test over scenes, one attempt per scene"}[design]
    what = (f"a {100 * gap:.0f}-point gap"
            + (" (declared)" if source == "declared" else
               " (the gap observed here, a planning guess: gaps read off the data between "
               "near-peers tend to be overstated)"))
    if gap <= 0:
        words = (f"{names[a]} and {names[b]} have equal rates here; declare the gap to plan for "
                 "(--effect)")
    elif size is None:
        words = (f"separating {names[a]} from {names[b]} at {what} would take more than "
                 f"200,000 {unit} per policy")
    else:
        words = (f"separating {names[a]} from {names[b]} at {what} with {100 * _POWER:.0f}% power "
                 f"takes ~{size:,} {unit} per policy ({test} at two-sided alpha "
                 f"{alpha:g}/{k * (k - 1) // 2}); this ranking had {per_policy:,}")
    return Separation(names[a], names[b], gap, source, rate_a, rate_b, psi, design, unit, size,
                      per_policy, _POWER, pair_alpha, k, words)


def _sentence(names: Sequence[str], tiers: Sequence[Sequence[int]], established: int,
              pairs: int, confidence: float, resolvable: float | None, per_policy: int,
              unit: str) -> str:
    level = f"{100 * confidence:g}%"
    if len(tiers) == 1:
        head = (f"at joint {level}, none of the {pairs} orders is established: the "
                f"{len(names)} policies ({', '.join(names[i] for i in tiers[0])}) form one "
                "tier and cannot be told apart at this noise floor")
    else:
        parts = "; ".join(f"tier {t + 1}: {', '.join(names[i] for i in tier)}"
                          for t, tier in enumerate(tiers))
        head = f"at joint {level}, {established} of {pairs} orders are established; {parts}"
    if resolvable is not None:
        each = ", one attempt each," if unit == "scenes" else ""
        head += (f" ({per_policy:,} {unit} per policy{each} resolve gaps of >= "
                 f"{100 * resolvable:.0f} points at 80% power)")
    return head


@dataclass(frozen=True)
class _Pair:
    """One pair's test as a hypothesis of :func:`~evalband.analysis._verdicts.decide`.

    Its interval is the ranking's "better - worse" difference of rates at the level the
    procedure decides it (NaN bounds for a metric: its test is printed without one).
    """

    test: Any
    y: npt.NDArray[np.float64]
    clusters: npt.NDArray[np.int64] | None
    binary: bool

    @property
    def p_value(self) -> float:
        """The pair test's two-sided p-value."""
        return float(self.test.p_value)

    def interval_at(self, confidence: float) -> Difference:
        """The compatible interval of the pair's difference at ``confidence``."""
        from evalband.stats import Difference
        from evalband.stats._ranks import pair_difference

        t = self.test
        flip = t.estimate < 0  # the pair as "better - worse" on the ranking's scale
        if self.binary:
            diff = pair_difference(self.y, t, confidence, clusters=self.clusters, flip=flip)
            if diff is not None:
                return diff
        return Difference(abs(float(t.estimate)), math.nan, math.nan, t.method, confidence,
                          self.clusters is not None or "a_only" in t.counts)


class _DecidedPairs:
    """The ranking's pair procedure, through the one decision engine (kept for the rows)."""

    def __init__(self, y: npt.NDArray[np.float64], clusters: npt.NDArray[np.int64] | None,
                 binary: bool) -> None:
        self.y, self.clusters, self.binary = y, clusters, binary
        self.decided: list[Decided] = []

    def __call__(self, tests: Sequence[Any], alpha: float) -> tuple[
            npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(established, adjusted, levels)`` of ``tests`` as ``rank_policies`` takes them."""
        from evalband.analysis._verdicts import DIRECTIONAL_HOLM, decide

        self.decided = decide([_Pair(t, self.y, self.clusters, self.binary) for t in tests],
                              alpha, procedure=DIRECTIONAL_HOLM)
        return (np.array([d.rejected for d in self.decided], dtype=np.bool_),
                np.array([d.p_adjusted for d in self.decided], dtype=np.float64),
                np.array([1.0 - d.level for d in self.decided], dtype=np.float64))


def _rank_slice(
    label: str, inputs: Sequence[RankInput], keys: Sequence[tuple[str, int, int]], *,
    cluster_of: dict[tuple[str, int, int], int] | None, paired: bool, design: str,
    confidence: float, higher_is_better: bool, effect: float | None, seed: int,
) -> SliceRanking:
    from evalband.stats._rank_power import resolvable_gap
    from evalband.stats._ranks import rank_policies

    y, keys = rank_matrix(inputs, keys)
    clusters = (np.array([cluster_of[k] for k in keys], dtype=np.int64)
                if cluster_of is not None else None)
    finite = y[np.isfinite(y)]
    binary = bool(np.all((finite == 0.0) | (finite == 1.0)))
    alpha = 1.0 - confidence
    signed = y if higher_is_better else (1.0 - y if binary else -y)  # same order, same test
    decided = _DecidedPairs(y, clusters, binary)
    result = rank_policies(signed, clusters=clusters, paired=paired, alpha=alpha, seed=seed,
                           procedure=decided)
    names = [inp.policy for inp in inputs]
    estimates = np.array([np.nanmean(row) if np.isfinite(row).any() else math.nan for row in y])
    tier_of = {i: t + 1 for t, tier in enumerate(result.tiers) for i in tier}
    mean = np.array([np.nanmean(row) if np.isfinite(row).any() else -np.inf for row in signed])
    order = sorted(range(len(inputs)), key=lambda i: (tier_of[i], -float(mean[i]), i))
    policies = tuple(
        RankedPolicy(names[i], inputs[i].run_id, inputs[i].step,
                     _value_band(y[i], clusters, binary, confidence, seed),
                     int(result.rank_low[i]), int(result.rank_high[i]), tier_of[i])
        for i in order
    )
    pairs = []
    for t, done, adj, pair in zip(result.tests, result.established, result.adjusted,
                                  decided.decided, strict=True):
        flip = t.estimate < 0  # the pair as "better - worse" on the ranking's scale
        better, worse = (t.b, t.a) if flip else (t.a, t.b)
        diff = pair.difference if binary and not math.isnan(pair.difference.low) else None
        raw = float(np.nanmean(y[better] - y[worse])) if not binary else None
        estimate = diff.estimate if diff is not None else (raw if raw is not None else 0.0)
        counts = dict(t.counts)
        if flip and "a_only" in counts:
            counts["a_only"], counts["b_only"] = counts["b_only"], counts["a_only"]
        if flip and "k_a" in counts:
            counts = {"k_a": counts["k_b"], "n_a": counts["n_b"], "k_b": counts["k_a"],
                      "n_b": counts["n_a"], **{k: v for k, v in counts.items()
                                               if k not in ("k_a", "n_a", "k_b", "n_b")}}
        pairs.append(RankPair(names[better], names[worse], float(estimate), float(t.p_value),
                              float(adj), bool(done), t.method, diff, counts))
    pairs.sort(key=lambda p: (not p.established, p.adjusted_p, p.better, p.worse))
    n_per = [int(np.isfinite(row).sum()) for row in y]
    scenes = (int(np.unique(clusters).size) if clusters is not None else None)
    per_policy = scenes if design == "clustered" and scenes is not None else min(n_per)
    unit = "scenes" if design == "clustered" else "episodes"
    resolvable = sep = None
    if binary and len(inputs) >= 2:
        pooled = float(np.nanmean(y))
        psi = _pooled_discordance(result.tests) if design != "unpaired" else None
        if (0.0 < pooled <= 1.0) and (design == "unpaired" or psi is not None):
            base = pooled if pooled >= 0.5 else 1.0 - pooled  # the gap fits below it
            resolvable = resolvable_gap(per_policy, base, policies=len(inputs), alpha=alpha,
                                        power=_POWER, design=design,
                                        discordant=psi)
        sep = _separation(names, result.tiers, estimates, result.tests, per_policy,
                          design=design, alpha=alpha, effect=effect,
                          higher_is_better=higher_is_better)
    tiers = tuple(tuple(names[i] for i in tier) for tier in result.tiers)
    sentence = _sentence(names, result.tiers, int(result.established.sum()),
                         len(result.tests), confidence, resolvable, per_policy, unit)
    return SliceRanking(label, policies, tuple(pairs), tiers, int(result.established.sum()),
                        resolvable, sep, sentence)


def _pooled_discordance(tests: Sequence[Any]) -> float | None:
    n = d = 0
    for t in tests:
        c = t.counts
        if "a_only" in c:
            d += c["a_only"] + c["b_only"]
            n += c["a_only"] + c["b_only"] + c["both"] + c["neither"]
    return d / n if n else None



def _check_one_run_per_policy(runs: Sequence[RunData]) -> None:
    """Refuse a policy that appears in more than one of the ranked runs."""
    names = [r.policy for r in runs]
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise InvalidInputError(
            f"each policy may be ranked once; {', '.join(dupes)} appear(s) more than once "
            "(rank one run per policy)")


def _cluster_map(keys: Sequence[tuple[str, int, int]],
                 cluster: str) -> dict[tuple[str, int, int], int]:
    """Number each episode key's cluster: its cell, or its ``(cell, episode)`` condition."""
    labels: dict[Any, int] = {}
    cluster_of: dict[tuple[str, int, int], int] = {}
    for key in keys:
        label = key[0] if cluster == "cell" else key[:2]
        cluster_of[key] = labels.setdefault(label, len(labels))
    return cluster_of


def _slice_keys(inputs: Sequence[RankInput], keys: Sequence[tuple[str, int, int]],
                slices: str) -> dict[str, list[tuple[str, int, int]]]:
    """Group the episode keys by their value of the slice factor ``slices``."""
    factor_values: dict[str, list[tuple[str, int, int]]] = {}
    for key in keys:
        labels_of = next((inp.slices[key[0]] for inp in inputs if key[0] in inp.slices), {})
        if slices not in labels_of:
            raise InvalidInputError(
                f"the runs' episodes have no slice factor {slices!r}; factors: "
                f"{', '.join(sorted(labels_of)) or 'none'}", parameters=("slices",))
        factor_values.setdefault(f"{slices}={labels_of[slices]}", []).append(key)
    return factor_values

def rank_runs(
    runs: Sequence[RunData],
    *,
    metric: str = "success",
    higher_is_better: bool = True,
    confidence: float = 0.95,
    paired: bool | None = None,
    cluster: str | None = None,
    slices: str | None = None,
    effect: float | None = None,
    allow_panel_mismatch: bool = False,
    steps: Sequence[int | None] | None = None,
    session_id: str | None = None,
    seed: int = 0,
) -> Ranking:
    """Rank runs (on one panel) or a session's runs with simultaneous rank sets.

    Args:
        runs: two or more runs.
        metric: see :data:`RANK_METRICS`.
        higher_is_better: the metric's direction (``False`` for a loss or a time).
        confidence: the joint level of every slice's rank sets.
        paired: use the pairing key (default: when every run is on one panel).
        cluster: ``cell`` (a session's scene: matched episodes of a cell are one unit),
            ``condition`` (the attempts of one ``(cell, episode)``; the default when the
            panel repeats its conditions) or ``None``.
        slices: a panel factor: also rank within each of its values.
        effect: the gap to plan the separation cost for (default: the observed one).
        allow_panel_mismatch: rank runs of different panels, unpaired (noted).
        steps: each run's checkpoint step (shown beside it).
        session_id: the session the runs belong to (noted in the result).
        seed: seed of the bootstrap bands and Monte Carlo tests of a metric.

    Returns:
        A :class:`~evalband.analysis._rank_results.Ranking`.

    Raises:
        InvalidInputError: fewer than two runs, a repeated policy, an unknown metric, a
            bad level or slice factor.
        PanelMismatchError: runs of different panels without ``allow_panel_mismatch``.

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> panel = evalband.load_panel("reach1d")
    >>> for p in ("baseline", "damped", "expert"):
    ...     _ = evalband.run_panel(panel, f"reach1d:{p}", store, run_id=p)
    >>> r = rank_runs([evalband.load_run(p, store) for p in ("baseline", "damped", "expert")])
    >>> [(p.policy, p.rank_low, p.rank_high) for p in r.overall.policies]
    [('reach1d:damped', 1, 2), ('reach1d:expert', 1, 2), ('reach1d:baseline', 3, 3)]
    >>> r.overall.tiers
    (('reach1d:damped', 'reach1d:expert'), ('reach1d:baseline',))
    """
    from evalband._util.validate import check_confidence

    level = check_confidence(confidence)
    if len(runs) < 2:
        raise InvalidInputError(f"ranking needs at least 2 runs; got {len(runs)}")
    from evalband.analysis._compare import check_distinct_runs

    check_distinct_runs(runs, "rank two or more different runs, each once")
    _check_one_run_per_policy(runs)
    notes: list[str] = []
    same_panel = len({r.panel_fingerprint for r in runs}) == 1
    if not same_panel:
        if not allow_panel_mismatch:
            raise PanelMismatchError(
                "the runs were recorded on different panels ("
                + ", ".join(f"{r.run_id}: {r.panel_fingerprint[:12]}" for r in runs)
                + "); rank runs of one panel, or pass `allow_panel_mismatch=True` to rank "
                "them anyway (unpaired)", parameters=("allow_panel_mismatch",))
        notes.append("the runs are of different panels: ranked unpaired (no matched episodes)")
    use_pairs = same_panel if paired is None else bool(paired and same_panel)
    if paired and not same_panel:
        notes.append("pairing was asked for, but the panels differ: ranked unpaired")
    if cluster not in (None, "cell", "condition"):
        raise InvalidInputError(f"cluster must be cell, condition or none; got {cluster!r}",
                                parameters=("cluster",))
    if cluster is None and use_pairs and any(int(r.panel.repeats) > 1 for r in runs):
        cluster = "condition"  # repeats of one condition share its fate: one unit
        notes.append("the panel repeats each condition: its repeats are clustered (one unit)")
    inputs = rank_inputs(runs, metric, steps)
    y, keys = rank_matrix(inputs)
    if not np.isfinite(y).any(axis=1).all():
        empty = [(inp.policy, len(run.records)) for inp, run, row in zip(inputs, runs, y,
                                                                          strict=True)
                 if not np.isfinite(row).any()]
        bare = [policy for policy, n in empty if n == 0]
        if bare:  # no metric would do: the run has nothing to rank yet
            raise InvalidInputError(
                f"{', '.join(bare)} {'has' if len(bare) == 1 else 'have'} no episodes yet; "
                "rank runs that have episodes (a session: once each policy has played)")
        raise InvalidInputError(f"no episode of {', '.join(p for p, _ in empty)} has a value "
                                f"of {metric}; rank by another metric")
    cluster_of = _cluster_map(keys, cluster) if use_pairs and cluster is not None else None
    design = ("unpaired" if not use_pairs else "clustered" if cluster_of is not None
              else "paired")
    left_out = int(np.sum(~np.isfinite(y)))
    if left_out:
        notes.append(f"{left_out} policy-episode value(s) left out (errors, assisted episodes "
                     f"for unaided success, or no value of {metric})")
    common: dict[str, Any] = {
        "cluster_of": cluster_of, "paired": use_pairs, "design": design, "confidence": level,
        "higher_is_better": higher_is_better, "effect": effect, "seed": seed,
    }
    out = [_rank_slice("all", inputs, keys, **common)]
    if slices is not None:
        for label, subset in sorted(_slice_keys(inputs, keys, slices).items()):
            out.append(_rank_slice(label, inputs, subset, **common))
        notes.append(f"each slice's rank sets hold at joint {100 * level:g}% within the slice; "
                     "across slices the levels are not combined")
    return Ranking(metric, higher_is_better, level, design, _PROCEDURE, session_id,
                   tuple(r.run_id for r in runs), tuple(out), tuple(notes))
