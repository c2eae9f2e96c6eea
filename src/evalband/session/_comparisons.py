"""A session's comparisons: the scene is the unit, Holm within each family, one engine.

Two policies are matched attempt ``k`` against attempt ``k`` in the same scene; two groups of
policies are pooled scene by scene. Either way the scene is the unit: the exact sign-flip test
over scenes (:func:`evalband.stats.clustered_paired_test`,
:func:`evalband.stats.clustered_grouped_test`) gives each comparison its raw p-value and the
interval that inverts it at any level. The decision is the one every verdict in evalband
goes through (:func:`evalband.analysis._verdicts.decide`: Holm with the compatible
per-step levels, the interval at the level of the Holm step that decided it, the verdict in
``compare``'s words), once per family: the pre-registered (confirmatory) comparisons, and
every other one (exploratory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from evalband.analysis import SliceVerdict, decide
from evalband.analysis._pairs import PairTable
from evalband.analysis._verdicts import Decided, Standing
from evalband.errors import InvalidInputError
from evalband.session._prereg import Grouping, Preregistration
from evalband.session._results import (
    ComparisonKind,
    ComparisonSpec,
    PreregUse,
    Progress,
    SessionComparison,
)
from evalband.session._trials import Row, cluster_rate, parse_scored_at, scene_counts
from evalband.stats import Difference, Interval
from evalband.stats._types import TestResult

if TYPE_CHECKING:
    from evalband.session._plan import SessionPlan

__all__ = ["session_comparisons", "check_policies", "prereg_use"]


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


@dataclass(frozen=True)
class _Raw(ComparisonSpec):
    """A comparison before multiplicity correction: its test, and its interval at any level.

    A :class:`~evalband.analysis._verdicts.Hypothesis`: :func:`decide` decides it.
    """

    test: TestResult
    interval_at: Callable[[float], Difference]

    @property
    def p_value(self) -> float:
        """The test's raw p-value."""
        return self.test.p_value



_Compared = tuple[dict[str, int], TestResult, Callable[[float], Difference], Interval, Interval]


def _paired(a: str, b: str, rows: Sequence[Row], confidence: float) -> _Compared | None:
    """Attempt k of A against attempt k of B in the same scene (both unaided), by scene.

    A scene is a cell: its matched attempts count into ``compare``'s
    :class:`~evalband.analysis._pairs.PairTable` (A the candidate, B the baseline), and the
    session's totals are the sum of its scenes' tables, as a slice's are of its cells'.
    """
    from evalband.stats import clustered_paired_interval, clustered_paired_test

    outcome = {(r.policy, r.scene, r.attempt): bool(r.success) for r in rows if r.unaided}
    per_scene: dict[int, Counter[tuple[bool, bool]]] = {}
    for (policy, scene, attempt), sa in outcome.items():
        if policy != a or (b, scene, attempt) not in outcome:
            continue
        per_scene.setdefault(scene, Counter())[(sa, outcome[(b, scene, attempt)])] += 1
    if not per_scene:
        return None
    cells = [_scene_table(per_scene[s]) for s in sorted(per_scene)]
    counts = {**sum(cells, PairTable()).difference_counts(), "scenes": len(cells)}
    b_s = [t.candidate_only for t in cells]
    c_s = [t.baseline_only for t in cells]
    n_s = [t.n_candidate for t in cells]
    test = clustered_paired_test(b_s, c_s, n_s)

    def interval_at(level: float) -> Difference:
        return clustered_paired_interval(b_s, c_s, n_s, confidence=level)

    return (
        counts,
        test,
        interval_at,
        cluster_rate([t.k_candidate for t in cells], n_s, confidence),
        cluster_rate([t.k_baseline for t in cells], n_s, confidence),
    )


def _scene_table(tally: Counter[tuple[bool, bool]]) -> PairTable:
    """One scene's matched attempts, ``(A succeeded, B succeeded) -> count``, as a pair table."""
    both, a_only = tally[(True, True)], tally[(True, False)]
    b_only, neither = tally[(False, True)], tally[(False, False)]
    n = both + a_only + b_only + neither
    return PairTable(k_baseline=both + b_only, n_baseline=n, k_candidate=both + a_only,
                     n_candidate=n, both=both, baseline_only=b_only, candidate_only=a_only,
                     neither=neither)


def _pooled(grouping: Grouping, rows: Sequence[Row], confidence: float) -> _Compared | None:
    """Two groups of policies per scene: the scene is the unit (sign-flip over scenes)."""
    from evalband.stats import clustered_grouped_interval, clustered_grouped_test

    scenes = sorted({r.scene for r in rows if r.unaided})
    ka, na = scene_counts(rows, grouping.members[0], scenes)
    kb, nb = scene_counts(rows, grouping.members[1], scenes)
    both = [i for i, (x, y) in enumerate(zip(na, nb, strict=True)) if x and y]
    if not both:
        return None
    ka, na, kb, nb = ([v[i] for i in both] for v in (ka, na, kb, nb))
    counts = {"k_a": sum(ka), "n_a": sum(na), "k_b": sum(kb), "n_b": sum(nb),
              "scenes": len(both)}
    test = clustered_grouped_test(ka, na, kb, nb)

    def interval_at(level: float) -> Difference:
        return clustered_grouped_interval(ka, na, kb, nb, confidence=level)

    return (
        counts,
        test,
        interval_at,
        cluster_rate(ka, na, confidence),
        cluster_rate(kb, nb, confidence),
    )


def check_policies(plan: SessionPlan, named: set[str], what: str) -> None:
    """Refuse ``named`` policies the session does not have (``what`` names who named them)."""
    unknown = sorted(named - set(plan.policies))
    if unknown:
        raise InvalidInputError(
            f"{what} names {', '.join(unknown)}, not among the policies of session "
            f"{plan.session_id!r} ({', '.join(plan.policies)})"
        )


def prereg_use(plan: SessionPlan, prereg: Preregistration, progress: Progress) -> PreregUse:
    """Whether ``prereg`` counts: locked before the session's first scored trial."""
    planned = tuple(f"{a} vs {b}" for a, b in prereg.comparisons) + tuple(
        g.title for g in prereg.groupings
    )
    if prereg.locked_at is None:
        return PreregUse(
            prereg.name,
            prereg.sha256,
            None,
            False,
            "it was never locked (evalband prereg lock)",
            planned,
        )
    locked = parse_scored_at(prereg.locked_at)
    first = progress.first_scored_at
    if first is None:
        return PreregUse(
            prereg.name,
            prereg.sha256,
            prereg.locked_at,
            True,
            f"locked at {prereg.locked_at}, before any scored trial",
            planned,
        )
    if locked < parse_scored_at(first):
        return PreregUse(
            prereg.name,
            prereg.sha256,
            prereg.locked_at,
            True,
            f"locked at {prereg.locked_at}, before the first scored trial ({first})",
            planned,
        )
    return PreregUse(
        prereg.name,
        prereg.sha256,
        prereg.locked_at,
        False,
        f"locked at {prereg.locked_at}, AFTER the first scored trial ({first}): a plan "
        "written after seeing data is not a pre-registration, so its comparisons are "
        "exploratory too",
        planned,
    )


def session_comparisons(
    plan: SessionPlan,
    rows: Sequence[Row],
    prereg: Preregistration | None,
    counts: bool,
    extra: Sequence[Grouping],
    confidence: float,
) -> tuple[SessionComparison, ...]:
    """Every comparison with matched trials, decided within its family; confirmatory first.

    ``counts``: whether the pre-registration counts (locked before the first scored trial);
    ``extra``: post-hoc groupings (exploratory).
    """
    planned_pairs = list(prereg.comparisons) if prereg else []
    planned_keys = {frozenset(p) for p in planned_pairs}
    pairs: list[tuple[str, str, bool]] = [(a, b, True) for a, b in planned_pairs]
    for i, a in enumerate(plan.policies):
        for b in plan.policies[i + 1 :]:
            if frozenset((a, b)) not in planned_keys:
                pairs.append((a, b, False))
    planned_groups = list(prereg.groupings) if prereg else []
    groups = [(g, True) for g in planned_groups] + [(g, False) for g in extra]
    raws: list[_Raw] = []
    for a, b, is_planned in pairs:
        got = _paired(a, b, rows, confidence)
        if got is None:
            continue
        cnt, test, interval_at, ra, rb = got
        raws.append(
            _Raw(
                f"{a} vs {b}",
                ComparisonKind.POLICIES,
                None,
                a,
                b,
                (a,),
                (b,),
                is_planned,
                Standing.CONFIRMATORY if is_planned and counts else Standing.EXPLORATORY,
                "paired by scene and attempt; the scene is the unit (sign-flip over scenes)",
                ra,
                rb,
                cnt,
                test,
                interval_at,
            )
        )
    for g, is_planned in groups:
        got_g = _pooled(g, rows, confidence)
        if got_g is None:
            continue
        cnt, test, interval_at, ra, rb = got_g
        raws.append(
            _Raw(
                g.title,
                ComparisonKind.GROUPING,
                g.name,
                g.labels[0],
                g.labels[1],
                g.members[0],
                g.members[1],
                is_planned,
                Standing.CONFIRMATORY if is_planned and counts else Standing.EXPLORATORY,
                "pooled within each group, scene by scene (sign-flip over scenes)",
                ra,
                rb,
                cnt,
                test,
                interval_at,
            )
        )
    decided: dict[int, Decided] = {}
    sizes: dict[Standing, int] = {}
    for family in (Standing.CONFIRMATORY, Standing.EXPLORATORY):
        idx = [i for i, r in enumerate(raws) if r.label == family]
        sizes[family] = len(idx)
        decisions = decide([raws[i] for i in idx], 1.0 - confidence)
        decided.update(zip(idx, decisions, strict=True))
    out = [_comparison(r, decided[i], sizes[r.label]) for i, r in enumerate(raws)]
    out.sort(key=lambda c: c.label != Standing.CONFIRMATORY)  # stable: confirmatory first
    return tuple(out)


def _comparison(r: _Raw, decided: Decided, size: int) -> SessionComparison:
    """The decided comparison with its sentence (the interval at its Holm step's level)."""
    p, d, verdict = decided.p_adjusted, decided.difference, decided.verdict
    band = (
        f"{_points(d.estimate)} points [{_points(d.low)}, {_points(d.high)}] "
        f"({100 * d.confidence:.4g}% Holm-step interval)"
    )
    if verdict == SliceVerdict.IMPROVED:
        words = f"{r.a} above {r.b} by {band}, Holm p = {p:.3g}"
    elif verdict == SliceVerdict.REGRESSED:
        flipped = (
            f"{_points(-d.estimate)} points [{_points(-d.high)}, {_points(-d.low)}] "
            f"({100 * d.confidence:.4g}% Holm-step interval)"
        )
        words = f"{r.b} above {r.a} by {flipped}, Holm p = {p:.3g}"
    else:
        words = f"{r.name}: {band}, Holm p = {p:.3g}: not established at this n"
    spec = {f.name: getattr(r, f.name) for f in fields(ComparisonSpec)}
    return SessionComparison(
        **spec,
        difference=d,
        test=r.test,
        p_holm=p,
        family_size=size,
        significant=decided.rejected,
        sentence=words,
        verdict=verdict,
    )
