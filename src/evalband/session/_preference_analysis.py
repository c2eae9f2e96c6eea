"""What a preference session found: Bradley-Terry strengths, rank sets, task dependence.

* **Strengths**: Bradley-Terry on the blocks' preferences (a tie half each way), centred,
  with Wald intervals; when blocks share start states, the scene-clustered sandwich
  (:mod:`evalband.stats._bradley_terry`).
* **Rank sets** as ``evalband rank`` makes them (:mod:`evalband.stats._ranks`): per pair
  the exact sign test of its direct comparisons (ties left out; over scenes by the
  sign-flip test when a pair met more than once on one start state), each pair a
  :class:`PreferenceTest` decided by the one decision engine
  (:func:`evalband.analysis._verdicts.decide`: the ranking's directional Holm over both
  directions of every pair, the interval compatible with the test at the level that decided
  it, the verdict from ``VERDICT_RULES``: an order is established when its pair is
  "improved"), then rank sets and tiers. Model-free: they hold whether or not Bradley-Terry
  fits. The words (the sentence, the renderings) are ``evalband.report._preference``'s.
* **Task-aware**: with tasks, one Bradley-Terry fit per task and the likelihood-ratio test
  that one set of strengths fits all tasks.
* **Progress**: each policy's mean progress (0-100) with a band over scenes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalband._util.typed import typed_from_dict
from evalband.errors import InvalidInputError
from evalband.session._preference import PreferencePlan, PreferenceResult
from evalband.stats import Difference, Interval

__all__ = ["PreferencePolicy", "PreferencePair", "PreferenceTest", "TaskDependence",
           "PreferenceAnalysis", "analyze_preferences", "simulate_preferences"]


@dataclass(frozen=True)
class PreferencePolicy:
    """One policy of a preference session.

    Attributes:
        policy: its name.
        strength: its centred Bradley-Terry log-strength.
        low: the interval's low end (Wald; scene-clustered when start states repeat).
        high: its high end.
        wins: blocks it was preferred in.
        losses: blocks the other was preferred in.
        ties: tied blocks.
        progress: its mean progress (as a share: 0.8 for 80) with a band over scenes.
        rank_low: best rank it may hold (joint rank sets, 1 = best).
        rank_high: worst rank.
        tier: its tier.
    """

    policy: str
    strength: float
    low: float
    high: float
    wins: int
    losses: int
    ties: int
    progress: Interval | None
    rank_low: int
    rank_high: int
    tier: int


@dataclass(frozen=True)
class PreferencePair:
    """The direct comparisons of two policies and their test in the ranking's family.

    Attributes:
        better: the one preferred more often.
        worse: the other.
        wins: blocks ``better`` was preferred in.
        losses: blocks ``worse`` was preferred in.
        ties: tied blocks.
        p_value: the sign test's two-sided p (ties left out).
        adjusted_p: Holm-adjusted over both directions of every pair.
        established: whether ``better`` is established above ``worse`` (the one engine's
            verdict of its :class:`PreferenceTest` is "improved").
        test: ``sign test`` or ``scene sign-flip``.
    """

    better: str
    worse: str
    wins: int
    losses: int
    ties: int
    p_value: float
    adjusted_p: float
    established: bool
    test: str


@dataclass(frozen=True)
class PreferenceTest:
    """One pair's preference test as a hypothesis of the one decision engine.

    The difference is ``better - worse``: the share of the pair's blocks where ``better`` was
    preferred minus the share where ``worse`` was (ties count as blocks, neither side). Its
    interval inverts the same test, so it excludes 0 exactly when ``p_value`` is at most one
    minus its level: the sign test (exact McNemar on the preferences) with the conditional
    exact interval (:func:`evalband.stats._procedure.compatible_difference`), the scene
    sign-flip test with :func:`evalband.stats.clustered_paired_interval`.

    Attributes:
        better: the one preferred more often (first when even).
        worse: the other.
        wins: blocks ``better`` was preferred in.
        losses: blocks ``worse`` was preferred in.
        ties: tied blocks.
        p_value: the test's two-sided p (ties left out).
        test: ``sign test`` or ``scene sign-flip``.
        scenes: per start state, ``(wins, losses, blocks)`` (the scene sign-flip test; empty
            for the sign test).

    >>> t = PreferenceTest("a", "b", 9, 1, 2, 0.0215, "sign test")
    >>> d = t.interval_at(0.95)
    >>> round(d.estimate, 3), d.low > 0
    (0.667, True)
    """

    better: str
    worse: str
    wins: int
    losses: int
    ties: int
    p_value: float
    test: str
    scenes: tuple[tuple[int, int, int], ...] = ()

    def interval_at(self, confidence: float) -> Difference:
        """The interval of ``better - worse`` at ``confidence``, compatible with the test."""
        from evalband.stats import clustered_paired_interval
        from evalband.stats._procedure import compatible_difference

        if not self.scenes:
            counts = {"both": 0, "a_only": self.wins, "b_only": self.losses,
                      "neither": self.ties}
            return compatible_difference(counts, paired=True, confidence=confidence,
                                         p_value=self.p_value)
        per_w, per_l, per_n = zip(*self.scenes, strict=True)
        return clustered_paired_interval(per_w, per_l, per_n, confidence)


@dataclass(frozen=True)
class TaskDependence:
    """Whether the strengths depend on the task (the task-aware variant).

    Attributes:
        tasks: the tasks.
        strengths: task -> policy -> its strength within the task.
        statistic: the likelihood-ratio statistic G.
        df: its degrees of freedom.
        p_value: against chi-square (asymptotic).
        sentence: in words.
    """

    tasks: tuple[str, ...]
    strengths: dict[str, dict[str, float]]
    statistic: float
    df: int
    p_value: float
    sentence: str


@dataclass(frozen=True)
class PreferenceAnalysis:
    """A preference session's analysis (``evalband prefer analyze``).

    Attributes:
        session_id: the session.
        confidence: the joint level of the rank sets; the strengths' intervals are marginal
            at this level.
        blocks_done: recorded blocks.
        blocks_planned: planned blocks.
        method: the strengths' fit.
        exists: whether the maximum-likelihood strengths exist (else penalised: noted).
        policies: by strength, best first.
        pairs: every pair, most established first.
        tiers: the tiers (names).
        established: orders established.
        task: the task-aware check (``None`` without two or more tasks).
        notes: what the reader must know.

    Its sentence and renderings are ``evalband.report._preference``'s (the ``--json``
    document: ``preference_document``).
    """

    session_id: str
    confidence: float
    blocks_done: int
    blocks_planned: int
    method: str
    exists: bool
    policies: tuple[PreferencePolicy, ...]
    pairs: tuple[PreferencePair, ...]
    tiers: tuple[tuple[str, ...], ...]
    established: int
    task: TaskDependence | None
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The typed fields as JSON (the ``--json`` document adds the sentence)."""
        return {"kind": "preference-analysis", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PreferenceAnalysis:
        """The typed result back from :meth:`as_dict` or the ``--json`` document."""
        return typed_from_dict(cls, data)


_PENALTY = 0.01


def _wins(index: Mapping[str, int], rows: Sequence[PreferenceResult]) -> np.ndarray:
    from evalband.stats._bradley_terry import bt_wins

    return bt_wins(len(index), [index[r.first] for r in rows], [index[r.second] for r in rows],
                   [r.outcome for r in rows])


def _pair_test(a: str, b: str, rows: Sequence[PreferenceResult]) -> PreferenceTest:
    """The pair's test, ``better`` first: the sign test, or over scenes the sign-flip test."""
    from evalband.stats import clustered_paired_test
    from evalband.stats._procedure import paired_exact_p

    met = [r for r in rows if {r.first, r.second} == {a, b}]
    wins = sum(r.preferred != "tie" and (r.first == a) == (r.preferred == "A") for r in met)
    ties = sum(r.preferred == "tie" for r in met)
    losses = len(met) - wins - ties
    flip = losses > wins
    better, worse = (b, a) if flip else (a, b)
    won, lost = (losses, wins) if flip else (wins, losses)
    scenes = [r.scene for r in met]
    if len(set(scenes)) == len(scenes):
        return PreferenceTest(better, worse, won, lost, ties, paired_exact_p(wins, losses),
                              "sign test")
    ids = {s: i for i, s in enumerate(sorted(set(scenes)))}
    per_w, per_l, per_n = (np.zeros(len(ids), dtype=np.int64) for _ in range(3))
    for r in met:
        i = ids[r.scene]
        per_n[i] += 1
        if r.preferred != "tie":
            if (r.first == a) == (r.preferred == "A"):
                per_w[i] += 1
            else:
                per_l[i] += 1
    p = clustered_paired_test(per_w, per_l, per_n).p_value
    if flip:
        per_w, per_l = per_l, per_w
    return PreferenceTest(better, worse, won, lost, ties, float(p), "scene sign-flip",
                          tuple(zip(per_w.tolist(), per_l.tolist(), per_n.tolist(),
                                    strict=True)))


def _decided_pairs(names: Sequence[str], results: Sequence[PreferenceResult],
                   confidence: float) -> list[PreferencePair]:
    """Every pair decided in one family by the one engine, most established first."""
    from evalband.analysis._verdicts import DIRECTIONAL_HOLM, SliceVerdict, decide

    tests = [_pair_test(names[i], names[j], results)
             for i in range(len(names)) for j in range(i + 1, len(names))]
    decided = decide(tests, 1.0 - confidence, procedure=DIRECTIONAL_HOLM)
    pairs = [PreferencePair(t.better, t.worse, t.wins, t.losses, t.ties, float(t.p_value),
                            float(d.p_adjusted), d.verdict is SliceVerdict.IMPROVED, t.test)
             for t, d in zip(tests, decided, strict=True)]
    pairs.sort(key=lambda q: (not q.established, q.adjusted_p, q.better, q.worse))
    return pairs


def _progress(policy: str, rows: Sequence[PreferenceResult], confidence: float,
              seed: int, reps: int) -> Interval | None:
    from evalband.stats import cluster_bootstrap_interval

    values, scenes = [], []
    for r in rows:
        if policy in (r.first, r.second):
            values.append((r.progress_first if r.first == policy else r.progress_second) / 100)
            scenes.append(r.scene)
    if not values:
        return None
    if len(set(values)) == 1:
        return Interval(values[0], values[0], values[0], "constant", confidence, None,
                        len(values))
    return cluster_bootstrap_interval(values, scenes, reps=reps, confidence=confidence, seed=seed)


def analyze_preferences(
    plan: PreferencePlan,
    results: Sequence[PreferenceResult],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    progress_reps: int = 2000,
) -> PreferenceAnalysis:
    """Bradley-Terry strengths, rank sets and the task check of a preference session.

    ``progress_reps``: bootstrap replicates of the progress bands (over scenes).

    Raises:
        InvalidInputError: no recorded block.

    >>> from evalband.session._preference import plan_preference
    >>> plan = plan_preference(["a", "b", "c"], 60, seed=2, session_id="p")
    >>> rows = simulate_preferences(plan, {"a": 1.5, "b": 0.0, "c": -1.5}, seed=3)
    >>> result = analyze_preferences(plan, rows)
    >>> [p.policy for p in result.policies], result.policies[0].rank_high
    (['a', 'b', 'c'], 1)
    """
    from evalband.stats._bradley_terry import bt_fit, bt_heterogeneity
    from evalband.stats._normal import z_value
    from evalband.stats._ranks import rank_intervals, tiers_of

    if not results:
        raise InvalidInputError(f"preference session {plan.session_id} has no recorded block "
                                "yet; record some with evalband prefer run")
    names = list(plan.policies)
    index = {p: i for i, p in enumerate(names)}
    wins = _wins(index, results)
    notes: list[str] = []
    scenes = sorted({r.scene for r in results})
    shared = len(scenes) < len(results)
    clusters = ([_wins(index, [r for r in results if r.scene == s]) for s in scenes]
                if shared else None)
    fit = bt_fit(wins, clusters=clusters)
    if not fit.exists:
        fit = bt_fit(wins, alpha=_PENALTY, clusters=clusters)
        notes.append("some policy never won (or never lost) against the rest: the maximum-"
                     f"likelihood strengths do not exist; penalised (alpha {_PENALTY:g})")
    z = z_value(confidence)
    se = np.sqrt(np.maximum(np.diag(fit.covariance), 0.0))
    pairs = _decided_pairs(names, results, confidence)
    better = np.zeros((len(names), len(names)), dtype=bool)
    for q in pairs:
        better[index[q.better], index[q.worse]] = q.established
    low, high = rank_intervals(better)
    tiers = tiers_of(better, fit.strengths)
    tier_of = {i: t + 1 for t, tier in enumerate(tiers) for i in tier}
    order = sorted(range(len(names)), key=lambda i: (tier_of[i], -fit.strengths[i], i))
    tallies: dict[str, list[int]] = {p: [0, 0, 0] for p in names}
    for r in results:
        if r.preferred == "tie":
            tallies[r.first][2] += 1
            tallies[r.second][2] += 1
        else:
            win, lose = ((r.first, r.second) if r.preferred == "A" else (r.second, r.first))
            tallies[win][0] += 1
            tallies[lose][1] += 1
    policies = tuple(
        PreferencePolicy(names[i], float(fit.strengths[i]), float(fit.strengths[i] - z * se[i]),
                         float(fit.strengths[i] + z * se[i]), tallies[names[i]][0],
                         tallies[names[i]][1], tallies[names[i]][2],
                         _progress(names[i], results, confidence, seed, progress_reps),
                         int(low[i]), int(high[i]), tier_of[i])
        for i in order)
    task = None
    tasks = sorted({r.task for r in results if r.task is not None})
    if len(tasks) >= 2:
        tables = [_wins(index, [r for r in results if r.task == t]) for t in tasks]
        g, df, p = bt_heterogeneity(tables)
        per_task = {t: dict(zip(names, (float(x) for x in bt_fit(w, alpha=_PENALTY).strengths),
                                strict=True))
                    for t, w in zip(tasks, tables, strict=True)}
        verdict = ("the strengths differ between tasks" if p <= 1.0 - confidence
                   else "no evidence that the strengths differ between tasks")
        task = TaskDependence(tuple(tasks), per_task, float(g), int(df), float(p),
                              f"{verdict} (likelihood ratio G {g:.2f} on {df} df, p {p:.3g})")
    tier_names = tuple(tuple(names[i] for i in tier) for tier in tiers)
    n_est = int(better.sum())
    if shared:
        notes.append("blocks share start states: the strengths' intervals and the pair tests "
                     "are clustered by scene")
    return PreferenceAnalysis(plan.session_id, confidence, len(results), len(plan.blocks),
                              fit.method, fit.exists, policies, tuple(pairs), tier_names, n_est,
                              task, tuple(notes))


def simulate_preferences(
    plan: PreferencePlan,
    strengths: Mapping[str, float],
    *,
    tie_prob: float = 0.0,
    seed: int,
    task_shift: Mapping[str, Mapping[str, float]] | None = None,
) -> list[PreferenceResult]:
    r"""Blocks answered by a Bradley-Terry operator (a test helper).

    Each block is a tie with probability ``tie_prob``, else "A" is preferred with probability
    :math:`\sigma(\theta_A - \theta_B)` (``task_shift[task][policy]`` added to a strength
    within that task). Progress: 100 x the preferred policy's win probability, rounded.
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 31]))
    out = []
    for b in plan.blocks:
        shift = (task_shift or {}).get(b.task or "", {})
        d = (strengths[b.first] + shift.get(b.first, 0.0)
             - strengths[b.second] - shift.get(b.second, 0.0))
        p = 1.0 / (1.0 + math.exp(-d))
        if rng.random() < tie_prob:
            preferred = "tie"
        else:
            preferred = "A" if rng.random() < p else "B"
        pa = int(np.clip(round(100 * p + rng.normal(0, 10)), 0, 100))
        pb = int(np.clip(round(100 * (1 - p) + rng.normal(0, 10)), 0, 100))
        out.append(PreferenceResult(b.index, b.scene, b.task, b.first, b.second, preferred,
                                    pa, pb, None, f"2026-01-01T00:{b.index // 60:02d}:"
                                    f"{b.index % 60:02d}Z"))
    return out
