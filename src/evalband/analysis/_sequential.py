"""The anytime-valid verdict (``compare --sequential``) and the peeking notice.

:func:`compare_sequential` decides every slice with the anytime-valid paired test of
:mod:`evalband.stats._sequential` instead of the fixed-n exact test + Holm: each direction of
each of the ``m`` slices at ``alpha / (2 m)`` (e-value Bonferroni), each slice's interval the
confidence sequence valid at ``1 - alpha / m`` together with the test, which excludes 0 exactly
when the test decided (:func:`evalband.stats.decided_sequence`). The verdict may be read
after any number of episodes, as often as one likes; the overall verdict and sentence come
from the same rules as the fixed-n comparison.

:func:`peeking_notes` says, first, when a fixed-n verdict is being read off a run that is not
finished or off a pair of runs already compared at fewer episodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import msgspec

from evalband.analysis._compare import (
    DEFAULT_EFFECT,
    Comparison,
    RunData,
    SliceComparison,
    compare_many,
    comparison_notes,
    comparison_of,
    slice_definitions,
)
from evalband.analysis._sequential_plan import (
    ComparisonDesign,
    SliceDesign,
    decide_path,
    slice_paths,
)
from evalband.analysis._slice_test import SliceTest
from evalband.analysis._verdicts import SequentialBonferroni, SliceVerdict, decide
from evalband.stats import Difference, confidence_sequence, sequential_paired_test
from evalband.stats._sequential import (
    DEFAULT_FUTILITY,
    SequentialTest,
    decided_sequence,
    design_theta,
    pair_in_order,
)

__all__ = ["compare_sequential", "peeking_notes", "episode_counts", "incomplete",
           "SEQUENTIAL_MULTIPLICITY"]

SEQUENTIAL_MULTIPLICITY = "e-value bonferroni (alpha / 2m per direction)"
"""The procedure of ``compare --sequential``, as its comparison names it."""


def _pairs_of(row: SliceComparison, base: RunData, cand: RunData) -> dict[str, int]:
    """Matched-pair counts of a row; unpaired rows are paired in episode order."""
    if row.pairing == "paired":
        return {k: int(row.pairs[k]) for k in ("both", "baseline_only", "candidate_only",
                                                "neither")}
    slices = next((sl for _, name, sl in slice_definitions(base.panel) if name == row.name), {})

    def outcomes(run: RunData) -> list[bool]:
        recs = [r for r in run.records
                if all(r.slices.get(f) == v for f, v in slices.items())]
        return [bool(r.success) for r in sorted(recs, key=lambda r: r.key)
                if r.outcome != "error"]
    return pair_in_order(outcomes(base), outcomes(cand))


def _designed_test(row: SliceComparison, path: Any, sd: SliceDesign,
                   alpha_side: float) -> tuple[SequentialTest, dict[str, Any]]:
    """The slice's test at its stop along ``path`` under the declared design."""
    decision, pairs = decide_path(path, sd)
    test = sequential_paired_test(pairs["baseline_only"], pairs["candidate_only"],
                                  alpha_side=alpha_side, theta=sd.theta,
                                  horizon=sd.max_discordant, futility=sd.futility)
    test = replace(test, threshold=sd.threshold, decision=decision)
    return test, {**pairs, "max_pairs": sd.max_pairs, "futility": sd.futility}


class _SequentialSlice:
    """A slice's anytime-valid test as a hypothesis of the decision engine.

    Its decision is the test's own (:class:`~evalband.analysis._verdicts.SequentialBonferroni`);
    its interval at a level is :func:`~evalband.stats.decided_sequence`, excluding 0 exactly
    when the test decided.
    """

    p_value = float("nan")  # the test reads e-values against a threshold instead

    def __init__(self, row: SliceComparison, test: SequentialTest,
                 pairs: Mapping[str, int]) -> None:
        self.test = test
        self.decision = test.decision
        self.pairs = {k: int(pairs[k]) for k in ("both", "baseline_only", "candidate_only",
                                                   "neither")}
        self.reasons = row.reasons
        self.margin = row.margin

    def sequence(self, level: float) -> Difference:
        """The confidence sequence at ``level`` (not adjusted to the test)."""
        p = self.pairs
        return confidence_sequence(p["both"], p["baseline_only"], p["candidate_only"],
                                   p["neither"], level=level)

    def interval_at(self, confidence: float) -> Difference:
        """The confidence sequence at ``confidence`` that agrees with the test's decision.

        :func:`~evalband.stats.decided_sequence`: valid at ``confidence`` with the test (whose
        level per direction is half of ``1 - confidence``), excluding 0 exactly when it decided.
        """
        p = self.pairs
        return decided_sequence(p["both"], p["baseline_only"], p["candidate_only"],
                                p["neither"], decision=str(self.decision), level=confidence)


def _slice_test(row: SliceComparison, pairs: Mapping[str, int], *, alpha: float, m: int,
                theta: float, horizon: int | None, futility: float | None,
                designed: tuple[SequentialTest, dict[str, Any]] | None = None
                ) -> tuple[_SequentialSlice, SliceTest]:
    """The slice's anytime-valid test (at its designed stop, if declared) and its record."""
    if designed is not None:
        test, extra = designed
        pairs = extra
    else:
        test = sequential_paired_test(pairs["baseline_only"], pairs["candidate_only"],
                                      alpha_side=alpha / (2 * m), theta=theta, horizon=horizon,
                                      futility=futility)
        extra = {}
    hypothesis = _SequentialSlice(row, test, pairs)
    record = SliceTest("sequential (likelihood ratio of the design alternative, anytime-valid)",
                       None, sequential=test, pairs=dict(hypothesis.pairs),
                       max_pairs=extra.get("max_pairs"), futility=extra.get("futility"))
    return hypothesis, record


def compare_sequential(
    baseline: RunData,
    candidate: RunData,
    *,
    confidence: float = 0.95,
    effect: float = DEFAULT_EFFECT,
    discordant: float | None = None,
    max_pairs: int | Mapping[str, int] | None = None,
    futility: float | None = DEFAULT_FUTILITY,
    allow_panel_mismatch: bool = False,
    margin: float | None = None,
    design: ComparisonDesign | None = None,
) -> Comparison:
    """The anytime-valid comparison of ``candidate`` against ``baseline``.

    With a declared ``design`` (:func:`~evalband.analysis._sequential_plan.comparison_design`,
    what ``run --until-decided`` records) each slice is decided at its first stop along its
    pairs in play order (:func:`~evalband.analysis._sequential_plan.decide_path`), its counts,
    interval and verdict those at the stop; ``effect``, ``discordant``, ``max_pairs`` and
    ``futility`` are then the design's. Without one, the test reads the counts so far with
    Ville's threshold (or one exact for ``max_pairs``).

    Args:
        baseline: the baseline run.
        candidate: the candidate run.
        confidence: one minus the family-wise error (each direction gets half).
        effect: the design drop the test is tuned to (``theta`` via :func:`design_theta`).
        discordant: the design probability that a pair disagrees (None: ``2 * effect``).
        max_pairs: a declared maximum of pairs per slice (one number, or per slice name; the
            threshold is then exact for it and a futility stop applies); None keeps Ville's
            threshold, valid for ever.
        futility: the futility factor (with ``max_pairs``).
        allow_panel_mismatch: compare runs of different panels anyway.
        margin: a non-inferiority margin for every slice (default: the panel's).
        design: the declared design (see above).

    >>> import tempfile
    >>> from evalband._api import load_run
    >>> from evalband.labs.hidden_regression import simulate_hidden_regression
    >>> from evalband.store import open_store
    >>> with tempfile.TemporaryDirectory() as d, open_store(f"{d}/runs.sqlite") as store:
    ...     ids = simulate_hidden_regression(store, episodes=200)
    ...     base, cand = (load_run(i, store) for i in ids)
    >>> c = compare_sequential(base, cand)
    >>> str(c.verdict), c.notes[0].startswith("procedure: anytime-valid")
    ('regression', True)
    """
    if design is not None:
        effect, confidence = design.effect, 1.0 - design.alpha
    (fixed,) = compare_many(baseline, [candidate], allow_panel_mismatch=allow_panel_mismatch,
                            confidence=confidence, effect=effect, power_statements=False)
    alpha = 1.0 - confidence
    rows = [r if margin is None else msgspec.structs.replace(r, decision=msgspec.structs.replace(
        r.decision, margin=float(margin))) for r in fixed.slice_rows]
    active = [r for r in rows if r.n_baseline and r.n_candidate]
    m = max(1, len(active) if design is None else len(design.slices))
    theta = design_theta(effect, discordant)
    paths = ({} if design is None else slice_paths(
        baseline, candidate, [r.name for r in active if r.name in design.slices],
        {r.name: r.pairing == "paired" for r in active}))
    tested = {
        r.name: _slice_test(
            r, _pairs_of(r, baseline, candidate) if r.name not in paths else {},
            alpha=alpha, m=m, theta=theta,
            horizon=(max_pairs.get(r.name) if isinstance(max_pairs, Mapping) else max_pairs),
            futility=futility,
            designed=(None if r.name not in paths or design is None else _designed_test(
                r, paths[r.name], design.slices[r.name], design.alpha_side)))
        for r in rows if r.n_baseline and r.n_candidate
    }
    hypotheses = [h for h, _ in tested.values()]
    verdicts = dict(zip(tested, decide(hypotheses, alpha, procedure=SequentialBonferroni(m)),
                        strict=True))
    decided = []
    for r in rows:
        if r.name not in tested:
            decided.append(r)
            continue
        h, record = tested[r.name]
        d = verdicts[r.name]
        reasons = list(r.reasons) + ([d.reason] if d.reason else [])
        decided.append(msgspec.structs.replace(r, test=record, decision=msgspec.structs.replace(
            r.decision, p_holm=None, level=1.0 - d.level, delta=d.difference,
            delta_unadjusted=h.sequence(1.0 - alpha), verdict=d.verdict, reasons=reasons,
            possible_regression=bool(d.difference.estimate < 0
                                     and d.verdict != SliceVerdict.REGRESSED))))
    notes = [n for n in comparison_notes(baseline, candidate, fixed.panel_mismatch, decided, m,
                                         alpha)
             if not n.startswith("procedure:") and "Fisher's exact test" not in n]
    per_side = f"{100 * alpha / (2 * m):.3g}% per direction"
    if design is not None:
        from evalband.analysis._sequential_outcome import procedure_note

        notes.insert(0, procedure_note(design, m))
    else:
        notes.insert(0, (
            f"procedure: anytime-valid sequential test per slice (likelihood ratio of a "
            f"{100 * effect:g}-point drop, theta = {theta:.3f}), e-value Bonferroni across {m} "
            f"slice(s) at {per_side}"
            + (", threshold exact for the declared maximum of pairs" if max_pairs else
               ", Ville's threshold (valid under any monitoring)")
            + "; intervals are confidence sequences, valid at every n"))
    primary = sorted({row.metric for row in fixed.metrics if row.role == "primary"})
    if primary:  # metrics have no anytime-valid test here: said, not silently dropped
        notes.append(f"primary metric(s) {', '.join(primary)} are decided at fixed n only "
                     "(compare without --sequential); this anytime-valid verdict reads the "
                     "success slices alone")
    out = comparison_of(baseline, candidate, fixed.panel_mismatch, decided, fixed.aggregate,
                        confidence, m, effect, notes=notes, multiplicity=SEQUENTIAL_MULTIPLICITY)
    if design is None:
        return out
    from evalband.analysis._sequential_outcome import futility_sentence, overall_decision

    stopped = futility_sentence(design) if overall_decision(out) == "futility" else None
    return msgspec.structs.replace(out, design=design.as_dict(), stopped=stopped)


def episode_counts(runs: Sequence[RunData]) -> dict[str, int]:
    """Episodes per run id (what a comparison is recorded with).

    >>> from evalband.analysis._compare import RunData
    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 2, "seed": 0,
    ...                 "budget": {"steps": 1}})
    >>> episode_counts([RunData("a", "pol", p.fingerprint, p, [])])
    {'a': 0}
    """
    return {r.run_id: len(r.records) for r in runs}


def incomplete(episodes: int, planned: int, status: str) -> bool:
    """A run still being written, or holding fewer episodes than planned (not an import).

    >>> incomplete(20, 200, "finished"), incomplete(20, 20, "running"), incomplete(5, 9, "imported")
    (True, True, False)
    """
    return status == "running" or (bool(planned) and episodes < planned
                                   and status != "imported")


def peeking_notes(
    counts: Mapping[str, int],
    planned: Mapping[str, tuple[int, str]],
    previous: Sequence[Mapping[str, Any]],
) -> list[str]:
    """Notices for a fixed-n verdict read off partial runs or re-read at a larger n.

    Args:
        counts: episodes per run id now.
        planned: per run id, (episodes planned, status) from the store.
        previous: earlier recorded comparisons (``run_ids`` and ``options`` with
            ``episode_counts``).

    >>> notes = peeking_notes({"a": 20, "b": 20}, {"a": (200, "running"), "b": (20, "finished")},
    ...                       [{"run_ids": ["a", "b"], "options": {"episode_counts":
    ...                                                             {"a": 10, "b": 20}}}])
    >>> [n[:40] for n in notes]
    ['PEEKING: run a is incomplete (20 of 200 ', 'PEEKING: these runs were already compare']
    """
    notes: list[str] = []
    for rid, n in counts.items():
        plan, status = planned.get(rid, (0, "finished"))
        if incomplete(n, plan, status):
            notes.append(
                f"PEEKING: run {rid} is incomplete ({n} of {plan} planned episodes); a fixed-n "
                "verdict read now and again later loses its error rate -- use --sequential "
                "for a verdict valid at every look")
    ids = set(counts)
    earlier = []
    for cmp in previous:
        if set(cmp.get("run_ids", [])) != ids:
            continue
        seen = (cmp.get("options") or {}).get("episode_counts") or {}
        if seen and any(int(seen.get(r, 0)) < counts[r] for r in ids):
            earlier.append(sum(int(v) for v in seen.values()))
    if earlier:
        notes.append(
            f"PEEKING: these runs were already compared at fewer episodes "
            f"({', '.join(str(e) for e in sorted(set(earlier)))} in all, now "
            f"{sum(counts.values())}); comparing again as more arrive inflates the false-"
            "verdict rate -- use --sequential for a verdict valid at every look")
    return notes
