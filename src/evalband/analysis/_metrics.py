"""Per-episode metrics as results: one run's means, two runs' differences per slice.

Every played episode stores numbers besides its outcome (``record.metrics``: the return, the
largest and the last reward, the panel's declared info keys; an import's own columns). Here
they become typed results:

* :func:`metric_summaries`: one run's mean or median of each metric with its interval,
  chosen by the metric's type (:func:`metric_type`): the mean with Student's t when
  unbounded, with the BCa bootstrap when its values lie in ``[0, 1]``; the median with the
  exact order-statistic interval when skewed, ordinal or a progress score
  (:mod:`evalband.stats._location`); ``evalband show`` prints them. An ordinal metric's
  summary also holds its levels' shares (:mod:`evalband.analysis._ordinal`).
* :func:`metric_rows`: two runs' mean difference ``candidate - baseline`` per metric, per
  slice (the comparison's slices) and overall: over matched episodes (pairing by ``(cell,
  episode, repeat)``) the paired t test where it is justified (a bounded metric, or
  differences that are not skewed), else the paired BCa bootstrap from the comparison's
  seed; Welch's t test where no episode pairs (:mod:`evalband.stats._means`). A metric of a
  median type (skewed, ordinal, progress) compares matched episodes by the median of their
  differences, with its exact order-statistic interval and the sign test inverted from it,
  decided or descriptive alike (:mod:`evalband.stats._location`); an ordinal metric's row
  also holds each level's "at least level k" difference, descriptive whatever its role.

A metric the panel declares ``primary`` (:class:`evalband.panel.MetricSpec`) is decided:
each slice's difference, oriented so that "better" is positive (``direction``), is one
hypothesis of the comparison's family, decided with the success slices by the one engine
(:func:`evalband.analysis._verdicts.decide`, in ``decide_family``) at the comparison's one
family-wise error rate; its interval is at the level that decided it. A decided slice uses
the paired t test (Welch's unpaired) whatever the skew: under two identical policies the
matched differences are symmetric about 0, where t keeps its level (conservative under heavy
tails), while the BCa bootstrap's inverted p-values do not at these sizes
(``bench/bench_metrics.py``: ~8% false regressions at 20 pairs per slice with lognormal
noise, against <= 2.5% by t). Every other metric,
and every metric's overall row, is descriptive: its interval is at the nominal confidence,
unadjusted, and says so. Error episodes carry no metric and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from evalband.analysis._ordinal import LevelDifference, LevelShare
from evalband.episode import EpisodeRecord, Outcome
from evalband.panel import BUILTIN_METRICS, MetricSpec, Panel
from evalband.stats import Difference, Interval
from evalband.stats._types import SliceVerdict

if TYPE_CHECKING:
    from evalband.stats._means import MeanDifference

__all__ = [
    "MetricSummary",
    "MetricRow",
    "MetricValues",
    "MetricHypothesis",
    "metric_values",
    "metric_specs",
    "metric_summaries",
    "metric_rows",
    "OVERALL",
    "PendingMetric",
    "decided_row",
    "metric_notes",
    "orient",
]

OVERALL = "overall"
"""The name of a metric's row over every episode of the comparison."""


class MetricSummary(msgspec.Struct, frozen=True):
    """One run's mean of one metric with its interval.

    Attributes:
        metric: the metric's name (``return``, ``coverage``...).
        n: episodes that recorded it.
        mean: the mean with its interval (``method``: ``student-t`` or ``bootstrap-bca``).
        bounded: the interval treats the metric as bounded in ``[0, 1]``.
        direction: ``higher`` or ``lower`` is better (as the panel declares; else higher).
        primary: the panel declares it primary.
        estimand: ``mean`` or ``median`` (``mean`` then holds the median: the field keeps
            its name for readers of older output), by the metric's type.
        metric_type: ``unbounded``, ``bounded``, ``skewed``, ``ordinal`` or ``progress``
            (declared, or read from the values: :func:`metric_type`).
        slice: the slice summarised (``overall``: every episode of the run).
        kind: ``factor`` (one factor's level), ``cell`` or ``overall``.
        levels: an ordinal metric's share at each level and at least at it, with Wilson
            intervals (:func:`evalband.analysis._ordinal.level_shares`); empty (and left out
            of the JSON) for other types, or values that are not whole numbers.
    """

    __wire_omit_default__: ClassVar[tuple[str, ...]] = ("levels",)

    metric: str
    n: int
    mean: Interval
    bounded: bool
    direction: Literal["higher", "lower"] = "higher"
    primary: bool = False
    estimand: Literal["mean", "median"] = "mean"
    metric_type: str = "unbounded"
    slice: str = OVERALL
    kind: Literal["factor", "cell", "overall"] = "overall"
    levels: list[LevelShare] = []


class MetricRow(msgspec.Struct, frozen=True):
    """Two runs' difference in one metric over one slice (or overall).

    Attributes:
        metric: the metric's name.
        slice: the slice's name (``overall``: every episode of the comparison).
        kind: ``factor``, ``cell``, ``all`` or ``overall``.
        role: ``primary`` (decided in the comparison's family) or ``descriptive``.
        direction: ``higher`` or ``lower`` is better.
        bounded: the metric's values lie in ``[0, 1]``.
        pairing: ``paired`` (matched episodes) or ``unpaired``.
        n_baseline: the baseline's episodes with the metric in the slice.
        n_candidate: the candidate's.
        n_pairs: matched pairs used (0 when unpaired).
        mean_baseline: the baseline's mean (``None``: no episode).
        mean_candidate: the candidate's mean.
        delta: ``candidate - baseline`` with its interval (``None``: too few episodes); a
            primary row's at the level that decided it, a descriptive row's at the nominal
            confidence.
        p_value: the test's raw two-sided p-value.
        p_holm: a primary row's adjusted p-value (``None`` for a descriptive row).
        verdict: a primary row's verdict (oriented by ``direction``: ``regressed`` means
            worse); ``None`` for a descriptive row.
        margin: the declared non-inferiority margin (a worsening in the metric's units).
        reasons: what makes the row unreadable (a primary row is then inconclusive).
        required: the slice counts for the overall verdict (the panel's required slices).
        estimand: ``mean`` (``delta`` is the mean difference; ``mean_*`` the runs' means) or
            ``median`` (``delta`` the median of the matched differences; ``mean_*`` the runs'
            medians), by the metric's type.
        metric_type: the metric's type (:func:`metric_type`).
        levels: an ordinal metric's difference in the share "at least level k" per level,
            descriptive whatever the row's role
            (:func:`evalband.analysis._ordinal.level_differences`); empty (and left out of
            the JSON) for other types.
    """

    __wire_omit_default__: ClassVar[tuple[str, ...]] = ("levels",)

    metric: str
    slice: str
    kind: Literal["factor", "cell", "all", "overall"]
    role: Literal["primary", "descriptive"]
    direction: Literal["higher", "lower"]
    bounded: bool
    pairing: Literal["paired", "unpaired"]
    n_baseline: int
    n_candidate: int
    n_pairs: int
    mean_baseline: float | None
    mean_candidate: float | None
    delta: Difference | None
    p_value: float | None
    p_holm: float | None = None
    verdict: SliceVerdict | None = None
    margin: float | None = None
    reasons: list[str] = []
    required: bool = True
    estimand: Literal["mean", "median"] = "mean"
    metric_type: str = "unbounded"
    levels: list[LevelDifference] = []

    @property
    def label(self) -> str:
        """``metric @ slice``: how a verdict sentence names the row.

        >>> MetricRow("return", "all", "all", "primary", "higher", False, "paired", 2, 2, 2,
        ...           0.0, 1.0, None, None).label
        'return @ all'
        """
        return f"{self.metric} @ {self.slice}"


@dataclass(frozen=True)
class MetricValues:
    """One run's values of every metric: per metric, its episodes' cells, keys and values.

    ``cells``: the cell's index on the panel; ``episodes``, ``repeats``: the rest of the
    pairing key; ``values``: the metric (one entry per non-error episode that recorded it).
    """

    cells: dict[str, NDArray[np.int64]]
    episodes: dict[str, NDArray[np.int64]]
    repeats: dict[str, NDArray[np.int64]]
    values: dict[str, NDArray[np.float64]]


class _Extra(msgspec.Struct):
    """What a record's ``extra`` JSON holds that a metric reads (the rest is skipped)."""

    metrics: Any = None


_DECODE = msgspec.json.Decoder(_Extra)
_DECODE_ALL = msgspec.json.Decoder(list[_Extra])


def _decoded(text: str | None) -> dict[str, Any]:
    """A stored ``extra`` text's ``metrics`` map (``{}`` when it has none).

    msgspec reads it; a text it refuses (the store writes NaN as ``NaN``, which JSON lacks)
    is read by :mod:`json`.
    """
    if not text:
        return {}
    try:
        found = _DECODE.decode(text).metrics
    except (msgspec.DecodeError, msgspec.ValidationError):
        import json

        loaded = json.loads(text)
        found = loaded.get("metrics") if isinstance(loaded, dict) else None
    return found if isinstance(found, dict) else {}


def _number(value: Any) -> float:
    """A metric's value as a float (NaN for what is not a number: left out).

    As :attr:`EpisodeRecord.metrics <evalband.episode.EpisodeRecord.metrics>` reads it.
    """
    return float(value) if isinstance(value, int | float) else np.nan


def _column(metrics: Sequence[dict[str, Any]], name: str) -> NDArray[np.float64]:
    """One metric's values over the episodes (NaN where an episode has none)."""
    found = [m.get(name) for m in metrics]
    if set(map(type, found)) <= _PLAIN:  # numbers and None (NaN) convert in one call
        return np.asarray(found, dtype=np.float64).reshape(len(found))
    return np.fromiter((_number(v) for v in found), np.float64, len(found))


_PLAIN = {float, int, bool, type(None)}


def _decoded_all(texts: list[str | None]) -> list[dict[str, Any]]:
    """Every stored ``extra`` text's ``metrics`` map, in one msgspec call where it can."""
    if all(texts):
        try:
            return [e.metrics if isinstance(e.metrics, dict) else {}
                    for e in _DECODE_ALL.decode("[" + ",".join(texts) + "]")]  # type: ignore[arg-type]
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # NaN written as NaN, or a text that is not an object: one by one
    seen: dict[str | None, dict[str, Any]] = {}
    return [seen[t] if t in seen else seen.setdefault(t, _decoded(t)) for t in texts]


def _episodes(records: Sequence[EpisodeRecord], index: dict[str, int]) -> tuple[
        NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_],
        list[dict[str, Any]]]:
    """Each episode's cell index (-1: off the panel), episode, repeat, counted, metrics.

    Counted: not an error. A stored run's episodes are read from its columns (the ``extra``
    JSON decoded by msgspec, equal texts once), without building a record per episode; only
    the texts that may hold metrics are read (:data:`~evalband.analysis._pairs.HAS_METRICS`),
    and when no episode has any, the rest is not computed (empty arrays, no metrics).
    """
    from evalband.analysis._pairs import HAS_METRICS, StoredRecords

    if isinstance(records, StoredRecords):
        met = records.columns.get(f"where {HAS_METRICS}")
        if met is not None and not bool(met.any()):  # no episode holds one: nothing to read
            none = np.zeros(0, dtype=np.int64)
            return none, none, none, np.zeros(0, dtype=np.bool_), []
        extra = records.column_where("extra", HAS_METRICS)
        if extra is None:
            extra = records.column("extra")
    if isinstance(records, StoredRecords) and extra is not None:
        cols = records.columns
        found = np.flatnonzero(extra.astype(np.bool_)).tolist()  # texts, not None or ""
        if not found:
            none = np.zeros(0, dtype=np.int64)
            return none, none, none, np.zeros(0, dtype=np.bool_), []
        metrics: list[dict[str, Any]] = [{}] * len(extra)
        for i, m in zip(found, _decoded_all(extra[found].tolist()), strict=True):
            metrics[i] = m
        error = list(Outcome).index(Outcome.ERROR)  # the store's outcome codes
        cell = np.fromiter((index.get(c, -1) for c in cols["cell"].tolist()), np.int64,
                           len(metrics))
        return (cell, np.asarray(cols["episode"], dtype=np.int64),
                np.asarray(cols["repeat"], dtype=np.int64),
                np.asarray(cols["outcome"]) != error, metrics)
    rows = [(index.get(r.cell, -1), r.episode, r.repeat, r.outcome is not Outcome.ERROR)
            for r in records]
    table = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
    return (table[:, 0], table[:, 1], table[:, 2], table[:, 3].astype(np.bool_),
            [r.metrics for r in records])


def metric_values(records: Sequence[EpisodeRecord], cells: Sequence[str]) -> MetricValues:
    """Every metric's values of a run's non-error episodes on the panel's ``cells``.

    >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "timeout", False, True, 5,
    ...                   extra={"metrics": {"return": -1.5}})
    >>> metric_values([r], [""]).values["return"].tolist()
    [-1.5]
    """
    cell, episode, repeat, counts, metrics = _episodes(records, {k: i for i, k in
                                                                 enumerate(cells)})
    out = MetricValues({}, {}, {}, {})
    names = dict.fromkeys(name for m in metrics for name in m)
    if not names:
        return out
    counts &= cell >= 0
    for name in names:
        x = _column(metrics, name)
        keep = counts & np.isfinite(x)
        if not keep.any():
            continue
        out.cells[name], out.episodes[name] = cell[keep], episode[keep]
        out.repeats[name], out.values[name] = repeat[keep], x[keep]
    return out


def metric_specs(panel: Panel, *runs: MetricValues) -> list[MetricSpec]:
    """The metrics to report: the panel's declared ones, then any other a run recorded.

    A declared metric no episode recorded is left out, unless it is primary: a primary
    metric that cannot be compared leaves the verdict inconclusive, it is never dropped.
    The built-in reward metrics come first among the undeclared, the rest by name. A
    comparison with no metric (none declared, none recorded: most success-only panels) is
    answered without building a spec.
    """
    if not panel.metrics:
        for run in runs:
            if run.values:
                break
        else:
            return []
    declared = panel.metric_specs
    names = {m.name for m in declared}
    seen = {name for run in runs for name in run.values}
    rest = sorted(seen - names, key=lambda n: (n not in BUILTIN_METRICS,
                                               BUILTIN_METRICS.index(n)
                                               if n in BUILTIN_METRICS else 0, n))
    return ([m for m in declared if m.name in seen or m.primary]
            + [MetricSpec(name=n) for n in rest])


def _bounded(spec: MetricSpec, *arrays: NDArray[np.float64]) -> bool:
    if spec.bounded is not None:
        return spec.bounded
    if spec.type is not None:  # a declared type decides, as in :func:`metric_type`
        return spec.type == "bounded"
    found = [a for a in arrays if a.size]
    return bool(found) and all(float(a.min()) >= 0.0 and float(a.max()) <= 1.0 for a in found)


SKEW_LIMIT = 1.0
"""An undeclared unbounded metric is ``skewed`` above this sample skewness (in size): the
paired t's rule of thumb (:data:`evalband.stats._means.SKEW_LIMIT`)."""

SMALL_N = 50
"""An undeclared unbounded metric read from 6 to 49 values (matched pairs when episodes
pair) is summarised by its median whatever its sample skewness: below 50 values the
skewness is too noisy to clear a skewed metric (a lognormal's sample skewness is at most 1
in about 1 draw of 7 at 20 values, and the mean's t interval chosen then covers ~80%), while
the median's order-statistic interval is exact for any continuous distribution
(``bench/bench_metrics.py``). Below 6 values the median's exact 95% interval is unbounded, so
the skewness rule decides there."""

MEDIAN_TYPES = frozenset({"skewed", "ordinal", "progress"})
"""Metric types summarised by their median (the rest by their mean)."""

MEDIAN_PAIRS_DECIDED = 11
"""Matched pairs a decided median row needs: its exact interval is finite up to 99.9%
(``2 / 2**11 < 0.001``), the level of a Holm step in a family of up to 50; with fewer the row
is inconclusive and says so (a descriptive row needs 6 at 95%)."""

MEDIAN_PAIRS_DESCRIPTIVE = 6
"""Values the median's exact 95% interval needs to be finite (``2 / 2**6 < 0.05``)."""


def metric_type(spec: MetricSpec, *samples: NDArray[np.float64],
                skew_of: Sequence[NDArray[np.float64]] | None = None) -> str:
    """The metric's type: declared, else read from ``samples`` (the runs' values).

    Unset: ``bounded`` when every value lies in ``[0, 1]`` (or ``bounded: true``), else
    ``skewed`` when any of ``skew_of`` (default ``samples``; the matched differences when
    episodes pair) holds from 6 to 49 values (:data:`SMALL_N`: too few to read the skewness
    from) or its skewness exceeds :data:`SKEW_LIMIT` in size, else ``unbounded``. One type
    per metric and comparison: every slice reports the same estimand.

    >>> metric_type(MetricSpec(name="x"), np.array([1.0, 2.0, 3.0, 4.0]))
    'unbounded'
    >>> metric_type(MetricSpec(name="x"), np.arange(20.0)), metric_type(
    ...     MetricSpec(name="x"), np.arange(50.0))
    ('skewed', 'unbounded')
    >>> metric_type(MetricSpec(name="x"), np.array([1.0, 1.1, 0.9, 1.2, 1.0, 30.0]))
    'skewed'
    >>> metric_type(MetricSpec(name="x", type="ordinal"), np.array([0.0, 3.0]))
    'ordinal'
    """
    from evalband.stats._means import skewness

    if spec.type is not None:
        return spec.type
    if _bounded(spec, *samples):
        return "bounded"
    if any(MEDIAN_PAIRS_DESCRIPTIVE <= x.size < SMALL_N
           or (x.size >= 3 and abs(skewness(x)) > SKEW_LIMIT)
           for x in (samples if skew_of is None else skew_of)):
        return "skewed"
    return "unbounded"


def _estimand(kind: str) -> Literal["mean", "median"]:
    return "median" if kind in MEDIAN_TYPES else "mean"


def metric_summaries(records: Sequence[EpisodeRecord], panel: Panel, *,
                     confidence: float = 0.95, seed: int = 0,
                     slices: bool = False) -> list[MetricSummary]:
    """One run's mean or median of every metric with its interval, by its type.

    A mean: Student's t (unbounded) or BCa (bounded in ``[0, 1]``); a median (``skewed``,
    ``ordinal``, ``progress``): the exact order-statistic interval
    (:func:`evalband.stats._location.median_interval`).

    With ``slices``, a panel with factors gets each metric's summary per slice first (every
    factor level, then every cell when there are several factors: the slices ``compare``
    reports), its overall summary last; each interval is at the nominal ``confidence``,
    descriptive (no decision is read off them). A slice where no episode recorded the metric
    is left out, and so is a median's slice with fewer than
    :data:`MEDIAN_PAIRS_DESCRIPTIVE` values (its exact interval has no finite bound).

    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 3,
    ...                 "budget": {"steps": 1}})
    >>> rs = [EpisodeRecord("r", "p", "f", "", i, 0, 7, "timeout", False, True, 5,
    ...                     extra={"metrics": {"return": float(i)}}) for i in range(3)]
    >>> s, = metric_summaries(rs, p)
    >>> s.metric, s.mean.estimate, s.mean.method
    ('return', 1.0, 'student-t')
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 2,
    ...                 "budget": {"steps": 1}, "factors": {"p": [0.2, 0.8]}})
    >>> rs = [EpisodeRecord("r", "p", "f", c.key, i, 0, 7, "timeout", False, True, 5,
    ...                     extra={"metrics": {"return": float(i + 10 * j)}})
    ...       for j, c in enumerate(p.cells()) for i in range(2)]
    >>> [(s.slice, s.n, s.mean.estimate) for s in metric_summaries(rs, p, slices=True)]
    [('p=0.2', 2, 0.5), ('p=0.8', 2, 10.5), ('overall', 4, 5.5)]
    """
    from evalband.analysis._compare import slice_definitions
    from evalband.analysis._ordinal import level_shares, ordinal_levels
    from evalband.stats._location import median_interval
    from evalband.stats._means import mean_interval

    all_cells = panel.cells()
    cells = [c.key for c in all_cells]
    run = metric_values(records, cells)
    definitions = slice_definitions(panel, all_cells) if slices and panel.factors else []
    members = [np.array([all(c.slices.get(f) == v for f, v in sl.items()) for c in all_cells],
                        dtype=np.bool_) for _, _, sl in definitions]
    out = []
    for i, spec in enumerate(metric_specs(panel, run)):
        if spec.name not in run.values:
            continue  # a primary metric this run did not record: compare says so
        x = run.values[spec.name]
        bounded = _bounded(spec, x)
        kind = metric_type(spec, x)
        estimand = _estimand(kind)
        levels = ordinal_levels(x) if kind == "ordinal" else []

        def summary(v: NDArray[np.float64], stream: int, estimand: str = estimand,
                    bounded: bool = bounded, i: int = i) -> Interval:
            if estimand == "median":
                return median_interval(v, confidence=confidence)
            return mean_interval(v, bounded=bounded, confidence=confidence,
                                 seed=_child(seed, i, stream))

        for j, (level, name, _) in enumerate(definitions):
            inside = x[members[j][run.cells[spec.name]]]
            if inside.size >= (MEDIAN_PAIRS_DESCRIPTIVE if estimand == "median" else 1):
                out.append(MetricSummary(spec.name, int(inside.size), summary(inside, j + 1),
                                         bounded, spec.direction, spec.primary, estimand, kind,
                                         slice=name, kind=level,  # type: ignore[arg-type]
                                         levels=level_shares(inside, levels,
                                                             confidence=confidence)))
        out.append(MetricSummary(spec.name, int(x.size), summary(x, 0), bounded,
                                 spec.direction, spec.primary, estimand, kind,
                                 levels=level_shares(x, levels, confidence=confidence)))
    return out


def _child(seed: int, metric: int, row: int) -> np.random.Generator:
    """The bootstrap stream of one metric's row: a child of the comparison's seed."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), metric, row]))


class MetricHypothesis:
    """A primary metric's slice difference as a hypothesis of the decision engine.

    Oriented so that "better" is positive: for a lower-is-better metric the difference and
    its interval are negated (``regressed`` means worse in either direction).
    """

    __slots__ = ("diff", "margin", "p_value", "reasons", "sign")

    def __init__(self, diff: MeanDifference, sign: int, margin: float | None,
                 reasons: Sequence[str] = ()) -> None:
        self.diff = diff
        self.sign = sign
        self.margin = margin
        self.reasons = list(reasons)
        self.p_value = float(diff.p_value)

    def interval_at(self, confidence: float) -> Difference:
        """The oriented interval at ``confidence``."""
        return orient(self.diff.interval_at(confidence), self.sign)


def orient(d: Difference, sign: int) -> Difference:
    """``d`` multiplied by ``sign`` (``-1`` swaps and negates the bounds).

    >>> d = orient(Difference(1.0, 0.5, 2.0, "t", 0.95, True), -1)
    >>> d.estimate, d.low, d.high
    (-1.0, -2.0, -0.5)
    """
    if sign > 0:
        return d
    return Difference(-d.estimate, -d.high, -d.low, d.method, d.confidence, d.paired,
                      dict(d.counts))


@dataclass(frozen=True)
class PendingMetric:
    """A metric row before the decision, and its hypothesis (primary rows only)."""

    row: MetricRow
    hypothesis: MetricHypothesis | None


def _matched(base: MetricValues, cand: MetricValues, spec: MetricSpec,
             members: NDArray[np.bool_] | None) -> tuple[
                 NDArray[np.float64], NDArray[np.float64], NDArray[np.intp], NDArray[np.intp]]:
    """One metric's baseline and candidate values in a slice, and the indices that pair."""
    def pick(run: MetricValues) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        if spec.name not in run.values:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        x, cell = run.values[spec.name], run.cells[spec.name]
        key = (cell * span[0] + run.episodes[spec.name]) * span[1] + run.repeats[spec.name]
        if members is None:
            return x, key
        inside = members[cell]
        return x[inside], key[inside]

    span = (max([int(r.episodes[spec.name].max(initial=0)) for r in (base, cand)
                 if spec.name in r.values], default=0) + 1,
            max([int(r.repeats[spec.name].max(initial=0)) for r in (base, cand)
                 if spec.name in r.values], default=0) + 1)
    xb, kb = pick(base)
    xc, kc = pick(cand)
    _, ib, ic = np.intersect1d(kb, kc, return_indices=True)  # pairs by (cell, episode, repeat)
    return xb, xc, ib, ic


def _compare_one(base: MetricValues, cand: MetricValues, spec: MetricSpec, bounded: bool,
                 members: NDArray[np.bool_] | None, kind: str, name: str, required: bool,
                 confidence: float, rng: np.random.Generator, decided: bool,
                 mtype: str = "unbounded") -> PendingMetric:
    """One metric over one slice (``members``: its cells; ``None``: every cell).

    ``mtype``: the metric's type (:func:`metric_type`); a median type compares matched
    episodes by the median of their differences (exact interval, sign test).
    """
    from evalband.stats._location import median_difference, order_rank
    from evalband.stats._means import (
        paired_mean_difference,
        t_mean_difference,
        welch_mean_difference,
    )

    xb, xc, ib, ic = _matched(base, cand, spec, members)
    n_pairs = int(ib.size)
    reasons: list[str] = []
    diff: MeanDifference | None = None
    primary = decided and spec.primary
    estimand = _estimand(mtype)
    need = MEDIAN_PAIRS_DECIDED if primary else max(2, next(
        n for n in range(2, 64) if order_rank(n, confidence) >= 1))
    if estimand == "median" and 2 <= n_pairs < need:
        reasons.append(f"too few pairs for the median's exact interval ({n_pairs}; "
                       f"{need} needed{' to decide' if primary else ''})")
    elif n_pairs >= 2:
        pc, pb = xc[ic], xb[ib]
        if estimand == "median":  # exact for any distribution, decided or not
            diff = median_difference(pc - pb)
        elif primary:  # decided: the paired t test, whose level holds (module's text)
            diff = t_mean_difference(pc - pb, bounded=bounded)
        else:
            diff = paired_mean_difference(pc, pb, seed=rng, bounded=bounded)
    elif not n_pairs and xb.size >= 2 and xc.size >= 2:
        estimand = "mean"  # no matched episode: Welch's t on the means
        diff = welch_mean_difference(xc, xb, bounded=bounded)
    elif not xb.size and not xc.size:
        reasons.append(f"no episode of either run recorded {spec.name} (an info key the env "
                       "does not return?)")
    else:
        reasons.append(f"too few episodes with {spec.name} to compare "
                       f"({n_pairs} pair(s), {xb.size} and {xc.size} episode(s))")
    row = MetricRow(
        metric=spec.name, slice=name, kind=kind,  # type: ignore[arg-type]
        role="primary" if primary else "descriptive", direction=spec.direction,
        bounded=bounded, pairing="paired" if n_pairs else "unpaired",
        n_baseline=int(xb.size), n_candidate=int(xc.size), n_pairs=n_pairs,
        mean_baseline=_centre(xb, estimand), mean_candidate=_centre(xc, estimand),
        delta=None if diff is None else diff.interval_at(confidence),
        p_value=None if diff is None else float(diff.p_value),
        margin=spec.margin, reasons=reasons, required=required, estimand=estimand,
        metric_type=mtype, levels=_levels(base, cand, spec.name, xb, xc, ib, ic, mtype,
                                          confidence))
    hyp = None
    if primary:
        hyp = MetricHypothesis(diff if diff is not None else _NoTest(), spec.sign, spec.margin,
                               reasons)
    return PendingMetric(row, hyp)


def _levels(base: MetricValues, cand: MetricValues, name: str, xb: NDArray[np.float64],
            xc: NDArray[np.float64], ib: NDArray[np.intp], ic: NDArray[np.intp], mtype: str,
            confidence: float) -> list[LevelDifference]:
    """An ordinal metric's per-level differences in a slice (levels from both runs' values)."""
    if mtype != "ordinal":
        return []
    from evalband.analysis._ordinal import level_differences, ordinal_levels

    levels = ordinal_levels(*(run.values[name] for run in (base, cand) if name in run.values))
    return level_differences(xb, xc, (ib, ic), levels, confidence=confidence)


def _centre(x: NDArray[np.float64], estimand: str) -> float | None:
    """A run's mean or median in a slice (``None``: no episode)."""
    if not x.size:
        return None
    return float(np.median(x) if estimand == "median" else x.mean())


class _NoTest:
    """A difference that could not be tested: p = 1, an empty interval at 0 (inconclusive)."""

    estimate, method, paired, n, p_value = 0.0, "none", False, 0, 1.0

    def interval_at(self, confidence: float) -> Difference:
        """NaN bounds: nothing was measured."""
        nan = float("nan")
        return Difference(0.0, nan, nan, "none", confidence, False)


def metric_rows(
    base: Sequence[EpisodeRecord] | MetricValues,
    cand: Sequence[EpisodeRecord] | MetricValues,
    panel: Panel,
    definitions: Sequence[tuple[str, str, dict[str, str]]],
    members: NDArray[np.bool_],
    *,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[PendingMetric]:
    """Every metric's rows, per slice then overall, each with its hypothesis when primary.

    ``definitions``/``members``: the comparison's slices and which cells each holds
    (:func:`evalband.analysis._compare.slice_definitions`). Every slice of a primary metric
    is a hypothesis; its overall row (written only when the panel has factors) is
    descriptive, as every row of the other metrics. ``base``/``cand``: each run's records,
    or their :func:`metric_values` read already.
    """
    cells = ([] if isinstance(base, MetricValues) and isinstance(cand, MetricValues)
             else [c.key for c in panel.cells()])
    b = base if isinstance(base, MetricValues) else metric_values(base, cells)
    c = cand if isinstance(cand, MetricValues) else metric_values(cand, cells)
    specs = metric_specs(panel, b, c)
    if not specs:
        return []
    required = set(panel.required_slices)
    out: list[PendingMetric] = []
    for i, spec in enumerate(specs):
        xb, xc = b.values.get(spec.name, np.zeros(0)), c.values.get(spec.name, np.zeros(0))
        bounded = _bounded(spec, xb, xc)
        pb, pc, ib, ic = _matched(b, c, spec, None)
        mtype = metric_type(spec, xb, xc, skew_of=[pc[ic] - pb[ib]] if ib.size else None)
        both = np.concatenate([xb, xc])
        if not spec.primary and both.size and float(np.ptp(both)) == 0.0:
            out.append(PendingMetric(MetricRow(  # nothing to compare: one row says so
                spec.name, OVERALL, "overall", "descriptive", spec.direction, bounded,
                "unpaired", int(xb.size), int(xc.size), 0, float(both[0]), float(both[0]),
                None, None, margin=spec.margin, required=False,
                reasons=[f"{number_text(float(both[0]))} in every episode of both runs"]),
                None))
            continue
        for j, (kind, name, _) in enumerate(definitions):
            out.append(_compare_one(b, c, spec, bounded, members[j], kind, name,
                                    not required or name in required, confidence,
                                    _child(seed, i, j + 1), decided=True, mtype=mtype))
        if definitions and definitions[0][0] != "all":
            out.append(_compare_one(b, c, spec, bounded, None, "overall", OVERALL, False,
                                    confidence, _child(seed, i, 0), decided=False,
                                    mtype=mtype))
    return out


def number_text(x: float) -> str:
    """A metric value in 4 significant digits.

    >>> number_text(0.0), number_text(-12.3456)
    ('0', '-12.35')
    """
    return f"{x:.4g}"


def decided_row(pending: PendingMetric, d: Any) -> MetricRow:
    """A primary row with the engine's decision (``d``: its :class:`Decided`)."""
    assert pending.hypothesis is not None
    delta = None if pending.row.delta is None else orient(d.difference,
                                                           pending.hypothesis.sign)
    return msgspec.structs.replace(pending.row, delta=delta, p_holm=float(d.p_adjusted),
                                   verdict=d.verdict)


def metric_notes(rows: Sequence[MetricRow], alpha: float, seed: int = 0) -> list[str]:
    """What a reader of the metric rows must know: which are decided, which descriptive.

    ``seed``: the comparison's seed, named when a bootstrap interval was drawn from it.
    """
    if not rows:
        return []
    primary = sorted({m.metric for m in rows if m.role == "primary"})
    other = sorted({m.metric for m in rows if m.role == "descriptive"} - set(primary))
    methods = sorted({m.delta.method for m in rows if m.delta is not None})
    notes = []
    if primary:
        notes.append(
            f"primary metric(s) {', '.join(primary)}: each slice's mean difference is a "
            f"hypothesis of the same family (family-wise {100 * alpha:g}%), its interval at "
            "the level that decided it"
            + ("; the overall row is descriptive" if any(m.kind == "overall" for m in rows)
               else ""))
    if other:
        notes.append(f"metric(s) {', '.join(other)} are descriptive: intervals at the nominal "
                     f"{100 * (1 - alpha):g}%, not adjusted, no verdict")
    medians = sorted({m.metric for m in rows if m.estimand == "median"})
    if medians:
        notes.append(
            f"metric(s) {', '.join(medians)} (skewed, ordinal or progress; undeclared with "
            f"fewer than {SMALL_N} pairs: too few to read the skew from): the median of the "
            "matched differences with its exact order-statistic interval and the sign test "
            "inverted from it (valid for any distribution); the baseline and candidate "
            "columns are medians")
    methods = [m for m in methods if m != "sign-test-median"]
    if methods:
        notes.append("metric differences by " + ", ".join(methods)
                     + " (paired t for a bounded metric or where the matched differences' "
                     "skewness is at most 1, else the paired BCa bootstrap; Welch's t where no "
                     "episode pairs)"
                     + (f"; bootstrap: 9,999 resamples from seed {seed}, a child stream per "
                        "metric and slice" if "paired-bootstrap-bca" in methods else ""))
    return notes
