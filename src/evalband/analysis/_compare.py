"""Compare runs on one panel: per-slice paired deltas first, the weighted aggregate last.

The algorithm is seed ``003_0a6cd29592fb46cc``'s slice-aware evaluation, with an interval on
every number: for each factor value and each cell, both runs' rates with Wilson bands, the
paired difference (Newcombe 1998b method 10) with exact McNemar where episodes pair by
``(cell, episode, repeat)`` (Newcombe's unpaired hybrid score and Fisher's exact test where
they cannot), Holm-adjusted p-values across slices, and a verdict per slice. Interventions,
latency budgets and error episodes make a slice inconclusive; the aggregate
``Delta J = sum_s w_s Delta_s`` comes last, and a slice that regressed while the aggregate
does not show it is a hidden regression, flagged by name.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.analysis._summary import counted
from evalband.episode import EpisodeRecord
from evalband.errors import PanelMismatchError
from evalband.panel import Panel
from evalband.stats import (
    Difference,
    diff_paired,
    diff_unpaired,
    fisher_exact_test,
    holm,
    interval,
    mcnemar,
    minimum_detectable_difference,
    paired_stratified_bootstrap_interval,
    sample_size,
    z_value,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RunData",
    "SliceComparison",
    "Aggregate",
    "Comparison",
    "compare_runs",
    "compare_many",
    "VERDICT_EXIT_CODES",
    "worst_verdict",
]

VERDICT_EXIT_CODES = {"improves": 0, "no regression": 3, "regression": 4, "inconclusive": 5}
"""Exit status of ``evalband compare`` per overall verdict (2 is reserved for bad input)."""
_SEVERITY = ("improves", "no regression", "inconclusive", "regression")


@dataclass(frozen=True)
class RunData:
    """A run's identity, panel and episodes (from the store or an artifact bundle)."""

    run_id: str
    policy: str
    panel_fingerprint: str
    panel: Panel
    records: list[EpisodeRecord]
    errors_as_failures: bool = False
    source: str = "store"


@dataclass(frozen=True)
class SliceComparison:
    """One slice (a factor value or a cell) compared between baseline and candidate."""

    kind: str  # "factor", "cell" or "all"
    name: str  # e.g. "embodiment=franka_panda"
    n_baseline: int
    successes_baseline: int
    rate_baseline: dict[str, Any] | None
    n_candidate: int
    successes_candidate: int
    rate_candidate: dict[str, Any] | None
    pairing: str  # "paired" or "unpaired"
    pairs: dict[str, int]
    delta: dict[str, Any] | None
    test: dict[str, Any] | None
    p_value: float | None
    p_holm: float | None
    verdict: str
    reasons: list[str] = field(default_factory=list)
    minimum_detectable_difference: float | None = None
    possible_regression: bool = False
    episodes_to_resolve: int | None = None
    unaided_rate_baseline: float | None = None
    unaided_rate_candidate: float | None = None
    intervention_rate_baseline: float | None = None
    intervention_rate_candidate: float | None = None
    inflated_baseline: float | None = None
    inflated_candidate: float | None = None
    latency_p95_candidate_ms: float | None = None
    latency_budget_ms: float | None = None
    excluded: bool = False
    margin: float | None = None
    mean_time_to_success_baseline_s: float | None = None
    mean_time_to_success_candidate_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


@dataclass(frozen=True)
class Aggregate:
    """The weighted aggregate, reported last."""

    weights: dict[str, float]
    rate_baseline: float
    rate_candidate: float
    delta: float
    low: float
    high: float
    method: str
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """Baseline vs candidate on one panel: slices first, aggregate last, one verdict."""

    baseline: str
    candidate: str
    baseline_policy: str
    candidate_policy: str
    panel_name: str
    panel_fingerprint: str
    panel_mismatch: bool
    slice_rows: list[SliceComparison]
    aggregate: Aggregate
    hidden_regressions: list[str]
    possible_regressions: list[str]
    verdict: str
    sentence: str
    notes: list[str]
    confidence: float

    @property
    def exit_code(self) -> int:
        """The documented exit status for this verdict."""
        return VERDICT_EXIT_CODES[self.verdict]

    @property
    def slices(self) -> pd.DataFrame:
        """The slice table as a DataFrame (one row per slice)."""
        import pandas as pd

        rows = []
        for row in self.slice_rows:
            data = row.as_dict()
            delta = data.pop("delta") or {}
            data["delta"] = delta.get("estimate")
            data["delta_low"] = delta.get("low")
            data["delta_high"] = delta.get("high")
            for arm in ("baseline", "candidate"):
                rate = data.pop(f"rate_{arm}") or {}
                data[f"rate_{arm}"] = rate.get("estimate")
            data.pop("test")
            rows.append(data)
        return pd.DataFrame(rows)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the ``--json`` output; see docs/schemas/)."""
        return {
            "schema": "evalband-comparison/1",
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_policy": self.baseline_policy,
            "candidate_policy": self.candidate_policy,
            "panel_name": self.panel_name,
            "panel_fingerprint": self.panel_fingerprint,
            "panel_mismatch": self.panel_mismatch,
            "confidence": self.confidence,
            "slices": [row.as_dict() for row in self.slice_rows],
            "aggregate": self.aggregate.as_dict(),
            "hidden_regressions": self.hidden_regressions,
            "possible_regressions": self.possible_regressions,
            "verdict": self.verdict,
            "sentence": self.sentence,
            "exit_code": self.exit_code,
            "notes": self.notes,
        }

    def to_json(self) -> str:
        """The comparison as JSON text (NaN written as null)."""
        return json.dumps(_finite(self.as_dict()), indent=2)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------- helpers


def _budget_for(slices: Mapping[str, str], budgets: Mapping[str, float]) -> float | None:
    """The tightest latency budget that applies to a slice's factor values."""
    found = [
        budgets[key]
        for factor, value in slices.items()
        for key in (f"{factor}={value}", value)
        if key in budgets
    ]
    return min(found) if found else None


def _margin_for(name: str, slices: Mapping[str, str], margin: Any) -> float | None:
    if margin is None:
        return None
    if isinstance(margin, int | float):
        return float(margin)
    for key in (name, *(f"{f}={v}" for f, v in slices.items()), *slices.values()):
        if key in margin:
            return float(margin[key])
    return margin.get("*")  # type: ignore[no-any-return]


def _smallest_detectable(n: int, p: float, alpha: float) -> float | None:
    """The smallest gap up or down from ``p`` that ``n`` per arm detects at 80% power."""
    from evalband.errors import InvalidParameterError

    gaps = []
    for direction in ("up", "down"):
        try:
            gaps.append(minimum_detectable_difference(n, p, alpha=alpha, direction=direction))
        except InvalidParameterError:  # no gap in that direction reaches the power
            continue
    return min(gaps) if gaps else None


def _intervened(record: EpisodeRecord) -> bool:
    return record.assisted or record.interventions > 0


def _rates(records: Sequence[EpisodeRecord]) -> tuple[float | None, float | None]:
    """Unaided success rate and intervention rate (None when empty)."""
    if not records:
        return None, None
    n = len(records)
    return (
        sum(r.unaided_success for r in records) / n,
        sum(_intervened(r) for r in records) / n,
    )


def _mean_time(records: Sequence[EpisodeRecord]) -> float | None:
    """Mean time to success among successes (its own denominator); None with no successes."""
    times = [r.time_to_success_s for r in records if r.success and r.time_to_success_s is not None]
    return sum(times) / len(times) if times else None


def _p95(records: Sequence[EpisodeRecord]) -> float | None:
    values = [r.latency_ms_p95 for r in records if r.latency_ms_p95 is not None]
    return float(np.percentile(values, 95)) if values else None


@dataclass
class _Arms:
    base: list[EpisodeRecord]
    cand: list[EpisodeRecord]


def _compare_slice(
    kind: str,
    name: str,
    slices: Mapping[str, str],
    arms: _Arms,
    panel: Panel,
    *,
    errors_as_failures: bool,
    confidence: float,
) -> tuple[SliceComparison, Difference | None]:
    base = counted(arms.base, errors_as_failures)
    cand = counted(arms.cand, errors_as_failures)
    reasons: list[str] = []
    errors = (len(arms.base) - len(base)) + (len(arms.cand) - len(cand))
    if errors:
        reasons.append(f"{errors} error episode(s) present (fix them, or --errors-as-failures)")
    k_b, n_b = sum(r.success for r in base), len(base)
    k_c, n_c = sum(r.success for r in cand), len(cand)
    base_by_key = {r.key: r for r in base}
    cand_by_key = {r.key: r for r in cand}
    matched = sorted(base_by_key.keys() & cand_by_key.keys())
    delta: Difference | None = None
    test = None
    pairs: dict[str, int] = {}
    pairing = "paired" if matched else "unpaired"
    if matched:
        both = cand_only = base_only = neither = 0
        for key in matched:
            sc, sb = cand_by_key[key].success, base_by_key[key].success
            both += sc and sb
            cand_only += sc and not sb
            base_only += sb and not sc
            neither += not sc and not sb
        unmatched = len(base_by_key.keys() ^ cand_by_key.keys())
        pairs = {"both": both, "baseline_only": base_only, "candidate_only": cand_only,
                 "neither": neither, "unmatched": unmatched}
        delta = diff_paired(both, cand_only, base_only, neither, confidence=confidence)
        test = mcnemar(cand_only, base_only, method="exact")
    elif n_b and n_c:
        delta = diff_unpaired(k_c, n_c, k_b, n_b, confidence=confidence)
        test = fisher_exact_test(k_c, n_c, k_b, n_b)
    unaided_b, int_b = _rates(base)
    unaided_c, int_c = _rates(cand)
    if int_b is not None and int_c is not None and int_c > int_b:
        reasons.append(f"intervention rate rose from {int_b:.0%} to {int_c:.0%}")
    budget = _budget_for(slices, panel.latency_budget_ms)
    p95 = _p95(cand)
    excluded = budget is not None and p95 is not None and p95 > budget
    if excluded:
        reasons.append(
            f"candidate p95 policy latency {p95:.1f} ms exceeds the {budget:g} ms budget; "
            "excluded from the positive-delta count"
        )
    margin = _margin_for(name, slices, panel.non_inferiority_margin)
    mdd = possible = None
    to_resolve = None
    if delta is None:
        verdict = "inconclusive"
        reasons.append("no episodes to compare")
    elif reasons:
        verdict = "inconclusive"
    elif delta.low > 0:
        verdict = "improved"
    elif delta.high < 0:
        verdict = "regressed"
    elif margin is not None and delta.low > -margin:
        verdict = "non-inferior"
    else:
        verdict = "no detectable change"
    n_arm = min(n_b, n_c)
    if delta is not None and verdict in ("no detectable change", "non-inferior", "inconclusive"):
        p0 = min(max(k_b / n_b if n_b else 0.5, 0.5 / max(n_arm, 1)), 1 - 0.5 / max(n_arm, 1))
        mdd = _smallest_detectable(max(n_arm, 2), p0, 1 - confidence)
    if delta is not None and delta.estimate < 0 and verdict != "regressed":
        possible = True
        p_b, p_c = k_b / n_b, k_c / n_c
        if p_b != p_c:
            to_resolve = sample_size(p_b, p_c, alpha=1 - confidence)
    row = SliceComparison(
        kind=kind,
        name=name,
        n_baseline=n_b,
        successes_baseline=k_b,
        rate_baseline=interval(k_b, n_b, confidence=confidence).as_dict() if n_b else None,
        n_candidate=n_c,
        successes_candidate=k_c,
        rate_candidate=interval(k_c, n_c, confidence=confidence).as_dict() if n_c else None,
        pairing=pairing,
        pairs=pairs,
        delta=delta.as_dict() if delta else None,
        test=test.as_dict() if test else None,
        p_value=test.p_value if test else None,
        p_holm=None,
        verdict=verdict,
        reasons=reasons,
        minimum_detectable_difference=mdd,
        possible_regression=bool(possible),
        episodes_to_resolve=to_resolve,
        unaided_rate_baseline=unaided_b,
        unaided_rate_candidate=unaided_c,
        intervention_rate_baseline=int_b,
        intervention_rate_candidate=int_c,
        inflated_baseline=(k_b / n_b - unaided_b) if n_b and unaided_b is not None else None,
        inflated_candidate=(k_c / n_c - unaided_c) if n_c and unaided_c is not None else None,
        latency_p95_candidate_ms=p95,
        latency_budget_ms=budget,
        excluded=excluded,
        margin=margin,
        mean_time_to_success_baseline_s=_mean_time(base),
        mean_time_to_success_candidate_s=_mean_time(cand),
    )
    return row, delta


# ---------------------------------------------------------------------------- comparison


def _cell_weights(panel: Panel, cells: Sequence[tuple[str, Mapping[str, str]]]) -> dict[str, float]:
    """Normalised cell weights from the panel's ``slice_weights``.

    A weight keyed by the cell key wins; otherwise the product of the weights of its
    factor values (keyed ``factor=value`` or ``value``; 1 when absent).
    """
    raw: dict[str, float] = {}
    for key, slices in cells:
        if key in panel.slice_weights:
            raw[key] = panel.slice_weights[key]
            continue
        weight = 1.0
        for factor, value in slices.items():
            weight *= panel.slice_weights.get(f"{factor}={value}",
                                              panel.slice_weights.get(value, 1.0))
        raw[key] = weight
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()} if total > 0 else raw


def _aggregate(
    panel: Panel,
    cells: Sequence[tuple[str, Mapping[str, str]]],
    arms: Mapping[str, _Arms],
    errors_as_failures: bool,
    confidence: float,
    seed: int,
) -> Aggregate:
    weights = _cell_weights(panel, cells)
    rate_b = rate_c = 0.0
    pairs: dict[str, tuple[int, int, int, int]] = {}  # (both, cand_only, base_only, neither)
    paired = True
    var = 0.0
    used: dict[str, float] = {}
    for key, _ in cells:
        base = counted(arms[key].base, errors_as_failures)
        cand = counted(arms[key].cand, errors_as_failures)
        if not base or not cand:
            continue
        used[key] = weights[key]
        p_b = sum(r.success for r in base) / len(base)
        p_c = sum(r.success for r in cand) / len(cand)
        rate_b += weights[key] * p_b
        rate_c += weights[key] * p_c
        var += weights[key] ** 2 * (p_b * (1 - p_b) / len(base) + p_c * (1 - p_c) / len(cand))
        base_by_key = {r.key: r.success for r in base}
        cand_by_key = {r.key: r.success for r in cand}
        matched = base_by_key.keys() & cand_by_key.keys()
        if not matched:
            paired = False
        tally = Counter((bool(cand_by_key[k]), bool(base_by_key[k])) for k in matched)
        pairs[key] = (tally[True, True], tally[True, False], tally[False, True],
                      tally[False, False])
    total = sum(used.values())
    norm = {k: w / total for k, w in used.items()} if total > 0 else used
    delta = (rate_c - rate_b) / total if total > 0 else float("nan")
    if paired and pairs and all(sum(c) for c in pairs.values()):
        # Binary outcomes paired by episode: the exact multinomial pair-type bootstrap
        # (same distribution as resampling episodes within each cell, O(reps x cells)).
        band = paired_stratified_bootstrap_interval(
            pairs, weights=norm, reps=10_000, confidence=confidence, seed=seed
        )
        low, high = band.low, band.high
        method = "stratified paired bootstrap (percentile, 10,000 reps)"
        delta = band.estimate
    else:
        half = z_value(confidence) * math.sqrt(var) / (total if total > 0 else 1.0)
        low, high = delta - half, delta + half
        method = "stratified normal approximation (unpaired cells)"
    return Aggregate(
        weights=norm,
        rate_baseline=rate_b / total if total > 0 else float("nan"),
        rate_candidate=rate_c / total if total > 0 else float("nan"),
        delta=delta,
        low=low,
        high=high,
        method=method,
        confidence=confidence,
    )


def _split(records: Sequence[EpisodeRecord], pred: Any) -> list[EpisodeRecord]:
    return [r for r in records if pred(r)]


def _slice_definitions(panel: Panel) -> list[tuple[str, str, dict[str, str]]]:
    """(kind, name, slices) for every factor value, then every cell (when they differ)."""
    cells = panel.cells()
    if not panel.factors:
        return [("all", "all", {})]
    out: list[tuple[str, str, dict[str, str]]] = []
    for factor, levels in panel.factors.items():
        labels = list(levels) if isinstance(levels, dict) else [str(v) for v in levels]
        out.extend(("factor", f"{factor}={label}", {factor: str(label)}) for label in labels)
    if len(panel.factors) > 1:
        out.extend(("cell", cell.key, dict(cell.slices)) for cell in cells)
    return out


def compare_runs(
    baseline: RunData,
    candidate: RunData,
    *,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` (see :func:`compare_many`)."""
    return compare_many(
        baseline, [candidate], allow_panel_mismatch=allow_panel_mismatch,
        confidence=confidence, seed=seed,
    )[0]


def compare_many(
    baseline: RunData,
    candidates: Sequence[RunData],
    *,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Comparison]:
    """Compare each candidate against the baseline; Holm adjusts across every slice test.

    Args:
        baseline: the baseline of record (a stored run or an artifact bundle).
        candidates: one or more candidate runs.
        allow_panel_mismatch: compare runs of different panels anyway (said first).
        confidence: two-sided confidence level of every interval.
        seed: seed of the aggregate's bootstrap.

    Raises:
        PanelMismatchError: a candidate's panel fingerprint differs from the baseline's and
            ``allow_panel_mismatch`` is not set.
    """
    panel = baseline.panel
    prepared = []
    for cand in candidates:
        mismatch = cand.panel_fingerprint != baseline.panel_fingerprint
        if mismatch and not allow_panel_mismatch:
            raise PanelMismatchError(
                f"runs {baseline.run_id} and {cand.run_id} were made on different panels "
                f"({baseline.panel_fingerprint[:12]} vs {cand.panel_fingerprint[:12]}); "
                "their episodes do not pair. Re-run on one panel, or pass "
                "--allow-panel-mismatch to compare them anyway"
            )
        eaf = baseline.errors_as_failures or cand.errors_as_failures
        rows: list[SliceComparison] = []
        deltas: list[Difference | None] = []
        for kind, name, slices in _slice_definitions(panel):
            def match(r: EpisodeRecord, s: dict[str, str] = slices) -> bool:
                return all(r.slices.get(f) == v for f, v in s.items())

            arms = _Arms(_split(baseline.records, match), _split(cand.records, match))
            row, delta = _compare_slice(kind, name, slices, arms, panel,
                                        errors_as_failures=eaf, confidence=confidence)
            rows.append(row)
            deltas.append(delta)
        cells = [(c.key, dict(c.slices)) for c in panel.cells()]
        cell_arms = {
            key: _Arms(_split(baseline.records, lambda r, k=key: r.cell == k),
                       _split(cand.records, lambda r, k=key: r.cell == k))
            for key, _ in cells
        }
        agg = _aggregate(panel, cells, cell_arms, eaf, confidence, seed)
        prepared.append((cand, mismatch, rows, agg))
    # Holm across every slice test of every candidate.
    flat = [(i, j, row.p_value) for i, (_, _, rows, _) in enumerate(prepared)
            for j, row in enumerate(rows) if row.p_value is not None]
    adjusted: list[float] = [float(x) for x in holm([p for _, _, p in flat])] if flat else []
    out = []
    for i, (cand, mismatch, rows, agg) in enumerate(prepared):
        new_rows = list(rows)
        for (ci, j, _), p_adj in zip(flat, adjusted, strict=True):
            if ci == i:
                new_rows[j] = _replace(new_rows[j], p_holm=float(p_adj))
        out.append(_verdict(baseline, cand, panel, mismatch, new_rows, agg, confidence))
    return out


def _replace(row: SliceComparison, **changes: Any) -> SliceComparison:
    from dataclasses import replace

    return replace(row, **changes)


def _verdict(
    baseline: RunData,
    cand: RunData,
    panel: Panel,
    mismatch: bool,
    rows: list[SliceComparison],
    agg: Aggregate,
    confidence: float,
) -> Comparison:
    required = set(panel.required_slices)
    regressed = [r.name for r in rows if r.verdict == "regressed"]
    blocking = [
        r for r in rows if r.verdict == "regressed" and (not required or r.name in required)
    ]
    unsure = [r.name for r in rows if r.verdict == "inconclusive" or r.excluded]
    aggregate_hides = agg.delta >= 0 or (agg.low <= 0 <= agg.high)
    hidden = [name for name in regressed if aggregate_hides]
    possible = [r.name for r in rows if r.possible_regression]
    notes = []
    if mismatch:
        notes.append(
            f"PANEL MISMATCH: {baseline.run_id} and {cand.run_id} were run on different panels "
            "(--allow-panel-mismatch); episodes pair only where keys coincide"
        )
    for r in rows:
        unmatched = r.pairs.get("unmatched", 0)
        if unmatched:
            notes.append(f"{r.name}: {unmatched} unmatched episode(s) left out of the pairing")
        if r.pairing == "unpaired" and r.delta is not None:
            notes.append(f"{r.name}: no episodes pair; Newcombe's unpaired interval was used")
    if blocking:
        verdict = "regression"
        sentence = (
            f"{cand.policy} regresses against {baseline.policy}: "
            f"{', '.join(r.name for r in blocking)} regressed"
            + (f" while the aggregate moved {100 * agg.delta:+.1f} points (hidden regression)"
               if hidden else "")
            + "."
        )
    elif unsure:
        verdict = "inconclusive"
        sentence = (
            f"inconclusive: {', '.join(unsure)} cannot be judged "
            f"({'; '.join(r for row in rows if row.name in unsure for r in row.reasons[:1])})."
        )
    elif agg.low > 0:
        verdict = "improves"
        sentence = (
            f"{cand.policy} improves on {baseline.policy}: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            "with no slice regressed."
        )
    else:
        verdict = "no regression"
        sentence = (
            f"no regression established, and no improvement: aggregate "
            f"{100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}] "
            "contains 0."
        )
        if regressed:  # regressions outside the required set
            sentence += f" (non-required slice(s) regressed: {', '.join(regressed)})"
    if possible:
        sentence += (
            f" Possible regression, not established at this n: {', '.join(possible)}."
        )
    return Comparison(
        baseline=baseline.run_id,
        candidate=cand.run_id,
        baseline_policy=baseline.policy,
        candidate_policy=cand.policy,
        panel_name=panel.name,
        panel_fingerprint=baseline.panel_fingerprint,
        panel_mismatch=mismatch,
        slice_rows=rows,
        aggregate=agg,
        hidden_regressions=hidden,
        possible_regressions=possible,
        verdict=verdict,
        sentence=sentence,
        notes=notes,
        confidence=confidence,
    )


def worst_verdict(comparisons: Sequence[Comparison]) -> str:
    """The most severe verdict (regression > inconclusive > no regression > improves)."""
    return max((c.verdict for c in comparisons), key=_SEVERITY.index)
