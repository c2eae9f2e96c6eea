"""Analysis of a hardware session: flip floor first, then rates, comparisons and prices.

Seed 004's grasp benchmark measured its instrument before its models: the same-state flip
rate (27% of same-model, same-scene pairs), the positive control, and the power price list
that says what a comparison costs. :func:`analyze_session` computes, from a session's plan and
its trials table, in that order of reading:

1. the **flip floor**: how often two attempts of one policy in one scene disagree, with a
   band that takes the scene as the unit, per policy, and as the scenes accumulated (the one
   statistic that "behaved like a measurement");
2. the **positive-control check**: the control must reach its stated floor and must not be
   beaten by another policy; if it misbehaves, suspect the instrument and the rig before
   inventing science;
3. **per-policy success** at the rubric's threshold with scene-clustered bands and the ordinal score
   distribution; skipped trials are counted apart (never as failures), assisted trials are
   reported and left out of unaided success;
4. **comparisons** with the scene as the unit (exact sign-flip test over scenes, intervals
   that invert it at each Holm step's level), Holm-corrected within their family; with a
   pre-registration locked before the first scored trial, the planned ones are
   *confirmatory* and everything else is *exploratory — a hypothesis, not a finding*;
5. the **cumulative success** per policy as scenes accumulated (where the seed's three wrong
   stories were told);
6. the **power price list** for this session's rates and flip floor.

Pure: no I/O. The pieces live by concept: the trials as rows and the rates read from them
(:mod:`~evalband.session._trials`), the instrument (:mod:`~evalband.session._instrument`), the
comparisons (:mod:`~evalband.session._comparisons`, decided by the engine every verdict
goes through) and the price list (:mod:`~evalband.session._prices`). The terminal and JSON
renderings live in the CLI, the HTML section in :mod:`evalband.report._session`.

The price list: :func:`evalband.stats.price_list` at the session's pooled unaided rate for
20-, 15-, 10- and 5-point gaps (80% power, two-sided 0.05; the seed's two-proportion table),
plus the price of this session's own test in scenes with one attempt per policy
(:func:`evalband.stats.clustered_paired_sample_size`: exact power by enumeration, at
``alpha / m`` for the ``m`` planned comparisons, else every pair) at this session's observed
discordant share between policies and at the flip floor (two equal policies disagree that
often on matched scenes: the cheapest a matched design on this rig can be); and
:func:`evalband.stats.minimum_detectable_difference` at the fewest unaided trials per policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalband._util.validate import check_confidence
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.session._comparisons import check_policies, prereg_use, session_comparisons
from evalband.session._instrument import control_check, flip_floor
from evalband.session._prereg import Grouping, Preregistration
from evalband.session._prices import price_family, price_list_of
from evalband.session._results import (
    CONFIRMATORY,
    EXPLORATORY,
    PolicyResult,
    PreregUse,
    Progress,
    SessionAnalysis,
)
from evalband.session._trials import (
    cumulative_success,
    parse_scored_at,
    policy_results,
    progress_of,
    trial_rows,
)

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session._plan import SessionPlan

__all__ = ["analyze_session", "parse_scored_at"]


def _notes(
    plan: SessionPlan,
    progress: Progress,
    results: Sequence[PolicyResult],
    prereg: PreregUse | None,
) -> tuple[str, ...]:
    notes = []
    if progress.pending:
        notes.append(
            f"session in progress: {progress.pending} of {progress.planned} trials pending; "
            f"{progress.scenes_complete} of {progress.scenes} scenes complete"
        )
        if plan.blind:
            notes.append(
                "the session is blinded and unfinished: these per-policy rates unblind whoever "
                "reads them; the operator should not"
            )
    if progress.skipped:
        notes.append(f"{progress.skipped} skipped trial(s) are counted apart, never as failures")
    if progress.assisted:
        notes.append(
            f"{progress.assisted} assisted trial(s) are reported and left out of unaided success"
        )
    ns = {r.unaided for r in results}
    if len(ns) > 1:
        notes.append(
            "policies have different numbers of unaided trials "
            f"({min(ns)}-{max(ns)}); comparisons use matched pairs only"
        )
    if prereg is None:
        notes.append(
            f"no pre-registration: every comparison is {EXPLORATORY}; lock the next plan before "
            "the data with evalband prereg lock PLAN.yaml"
        )
    elif prereg.counts:
        notes.append(
            f"pre-registration {prereg.name} ({prereg.sha256[:12]}) {prereg.reason}: "
            f"its comparisons are {CONFIRMATORY}, every other one is {EXPLORATORY}"
        )
    else:
        notes.append(
            f"pre-registration {prereg.name} does not count: {prereg.reason}; every "
            f"comparison is {EXPLORATORY}"
        )
    return tuple(notes)


# --------------------------------------------------------------------------- entry point


def _check_control_floor(control_floor: float | None) -> None:
    """Refuse a positive-control floor that is not a success rate in (0, 1]."""
    if control_floor is not None and not (
        isinstance(control_floor, int | float)
        and not isinstance(control_floor, bool)
        and 0.0 < float(control_floor) <= 1.0
        and math.isfinite(float(control_floor))
    ):
        raise InvalidParameterError(
            f"`control_floor` must be a success rate in (0, 1]; got {control_floor!r}",
            parameters=("control_floor",))


def _checked_groupings(plan: SessionPlan, groupings: Sequence[Grouping]) -> tuple[Grouping, ...]:
    """The groupings, each a :class:`Grouping` of the session's policies."""
    extra = tuple(groupings)
    for g in extra:
        if not isinstance(g, Grouping):
            raise InvalidInputError(f"groupings must be Grouping objects; got {g!r}")
        check_policies(plan, set(g.members[0]) | set(g.members[1]), f"grouping {g.title!r}")
    return extra


def _prereg_use(plan: SessionPlan, prereg: Preregistration, progress: Progress) -> PreregUse:
    """How the pre-registration counts for this session (refused if it is for another)."""
    if prereg.session_id is not None and prereg.session_id != plan.session_id:
        raise InvalidInputError(
            f"pre-registration {prereg.name!r} is for session {prereg.session_id!r}, not "
            f"{plan.session_id!r}; a plan counts for the session it names"
        )
    check_policies(plan, prereg.policies(), f"pre-registration {prereg.name!r}")
    return prereg_use(plan, prereg, progress)


def _control_floor(control_floor: float | None,
                   prereg: Preregistration | None) -> tuple[float | None, str | None]:
    """The positive control's floor and where it came from (given, or the pre-registration)."""
    if control_floor is not None:
        return float(control_floor), "given"
    if prereg is not None and prereg.positive_control_floor is not None:
        return prereg.positive_control_floor, f"pre-registration {prereg.name}"
    return None, None


def analyze_session(
    plan: SessionPlan,
    trials: pd.DataFrame,
    *,
    prereg: Preregistration | None = None,
    confidence: float = 0.95,
    groupings: Sequence[Grouping] = (),
    control_floor: float | None = None,
) -> SessionAnalysis:
    r"""Analyse one session: flip floor, control, rates, comparisons, cumulative, prices.

    **Success.** A scored trial succeeds when its score is at least the rubric's
    ``success_at``. Skipped trials are counted apart and never as failures; assisted trials
    are counted and left out of *unaided* success, the rate every statistic uses. Attempts
    on one scene share it, so rates get bands with the scene as the cluster
    (:func:`evalband.stats.cluster_proportion_interval`: Wilson at the Korn-Graubard
    effective sample size, Student's t on scenes - 1 degrees of freedom).

    **Flip floor.** Every pair of unaided attempts of one policy in one scene is a
    same-state pair; the share that disagree is the flip rate, its band with the scene as the
    cluster (every policy's pairs on a scene share it), computed by
    :func:`evalband.analysis._noise.flip_rate_of_groups` (the same code as
    :func:`~evalband.analysis.noise_floor`), also after each scene (``by_scene``) and per
    policy. ``independent_reference`` is what independent attempts would give,
    :math:`\sum_i w_i 2p_i(1-p_i)` weighted by each policy's pairs: a flip rate well below it
    means attempts in a scene share a fate (the scene matters), one near it means each attempt
    is a fresh coin.

    **Comparisons: the scene is the unit.** Two policies are matched attempt :math:`k`
    against attempt :math:`k` in the same scene (both unaided); the :math:`K` pairs of a
    scene share it, so the test counts scenes: the net discordance per scene
    :math:`x_s = b_s - c_s` goes to the exact sign-flip test over scenes
    (:func:`evalband.stats.clustered_paired_test`: the labels of equal policies are
    exchangeable inside a shuffled block, so every :math:`x_s` is symmetric about 0 whatever
    the attempts share; Durkalski et al. 2003's clustered McNemar test in exact form), whose
    p-value is guarded by McNemar's asymptotic test (the larger is printed). Groupings
    (pooled policies) compare the per-scene difference of the two groups' rates the same way
    (:func:`evalband.stats.clustered_grouped_test`). Each interval inverts the printed test
    (:func:`evalband.stats.clustered_paired_interval`,
    :func:`evalband.stats.clustered_grouped_interval`) at the level of the Holm step that
    decided the comparison (:func:`evalband.stats.holm_levels`), so it excludes 0 exactly
    when the Holm-adjusted p-value is at most ``1 - confidence``.

    **Confirmatory vs exploratory.** With a pre-registration locked *before* the session's
    first scored trial, its comparisons and groupings are :data:`CONFIRMATORY`; every other
    comparison (every pair, when there is none) is :data:`EXPLORATORY` ("exploratory — a
    hypothesis, not a finding", seed 004). Holm (1979, *Scand. J. Statist.* 6:65-70;
    :func:`evalband.stats.holm`) adjusts the p-values within each family separately, so
    exploring never dilutes the planned tests and the planned tests never launder the
    explored ones.

    **Positive control.** When the plan names one, it must not be significantly below any
    other policy (Holm, from the comparisons above) and, when a floor is stated
    (``control_floor``, else the pre-registration's ``positive_control_floor``), its
    band must not lie wholly below the floor; otherwise it *misbehaves* and the reading is:
    suspect the instrument and the rig first. Its status is ``"ok"`` when its band lies at or
    above the floor (or, without a floor, when it has the session's highest rate), and
    ``"unclear"`` when the band straddles the floor (or, without a floor, when another policy
    scored higher but not significantly).

    **Price list.** See the module docstring ("The price list").

    Args:
        plan: the session's plan.
        trials: its trials table (``SessionStore.trials``), one row per planned trial.
        prereg: the pre-registration to read (see ``evalband.session.prereg_for_session``).
        confidence: two-sided level of every band; Holm's family level is ``1 - confidence``.
        groupings: post-hoc groupings to compare (always exploratory).
        control_floor: the rate the positive control must reach (overrides the
            pre-registration's).

    Returns:
        A :class:`SessionAnalysis`.

    Raises:
        InvalidInputError: a trials table that does not belong to the plan, or a
            pre-registration or grouping naming policies the session does not have, or a
            pre-registration for another session.
        InvalidParameterError: ``confidence`` or ``control_floor`` out of range.

    >>> from evalband.session import plan_session
    >>> from evalband.session._simulate import simulate_session
    >>> plan = plan_session(["A", "B"], scenes=20, attempts=2, seed=4, session_id="demo")
    >>> trials = simulate_session(plan, success_prob={"A": 0.6, "B": 0.4}, flip_prob=0.3,
    ...                           seed=2)
    >>> result = analyze_session(plan, trials)
    >>> result.flip.pooled.pairs, result.comparisons[0].label.value
    (40, 'exploratory — a hypothesis, not a finding')
    >>> result.comparisons[0].verdict
    <SliceVerdict.NO_CHANGE: 'no detectable change'>
    >>> [row.gap for row in result.prices.entries]
    [0.2, 0.15, 0.1, 0.05]
    """
    level = check_confidence(confidence)
    _check_control_floor(control_floor)
    rows = trial_rows(plan, trials)
    extra = _checked_groupings(plan, groupings)
    progress = progress_of(plan, rows)
    use = None if prereg is None else _prereg_use(plan, prereg, progress)
    results = policy_results(plan, rows, level)
    flip = flip_floor(plan, rows, level)
    comparisons = session_comparisons(plan, rows, prereg, bool(use and use.counts), extra, level)
    floor, source = _control_floor(control_floor, prereg)
    return SessionAnalysis(
        session_id=plan.session_id,
        confidence=level,
        rubric=plan.rubric.as_dict(),
        blind=plan.blind,
        positive_control=plan.positive_control,
        progress=progress,
        flip=flip,
        control=control_check(plan, results, comparisons, floor, source),
        policies=results,
        comparisons=comparisons,
        cumulative=cumulative_success(plan, rows, level),
        prices=price_list_of(results, comparisons, flip, price_family(plan, comparisons)),
        prereg=use,
        notes=_notes(plan, progress, results, use),
    )
