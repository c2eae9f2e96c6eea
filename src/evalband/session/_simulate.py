r"""Simulated hardware sessions with a known same-state flip probability (a test helper).

A real session is a person scoring grasps; a test needs the same table with a truth to
recover. :func:`simulate_session` fills every planned trial of a
:class:`~evalband.session.SessionPlan` from a two-level model whose flip probability is
known in closed form.

**The model.** Every ``(policy, scene)`` has a latent success probability :math:`q` (the
captured start state is the same for every attempt of that policy in that scene, so its
attempts share :math:`q`); each attempt succeeds independently with probability :math:`q`.
For policy :math:`i` with mean rate :math:`m_i` (``success_prob``), :math:`q` is drawn from
:math:`\mathrm{Beta}(m_i \kappa_i, (1 - m_i) \kappa_i)`. Two attempts of one policy in one
scene flip (one success, one failure) with probability

.. math::

    P(\text{flip}) = E[2q(1-q)] = 2\,(E[q] - E[q^2])
                   = 2 m_i (1 - m_i) \, \frac{\kappa_i}{\kappa_i + 1},

since :math:`\mathrm{Var}(q) = m_i(1-m_i)/(\kappa_i + 1)` for the Beta distribution
(Johnson, Kotz & Balakrishnan 1995, *Continuous Univariate Distributions* vol. 2, ch. 25).
Given a target flip probability :math:`f` the concentration is solved exactly,
:math:`\kappa_i = f / (2 m_i (1 - m_i) - f)`, so **every** policy's same-scene attempt pairs
flip with probability :math:`f`, and so does the pool of them. The limits are included:
:math:`f = 2m(1-m)` is :math:`\kappa = \infty` (every attempt an independent coin of rate
:math:`m`, the default when ``flip_prob`` is ``None``) and :math:`f = 0` is
:math:`\kappa = 0` (:math:`q \in \{0, 1\}`: both attempts always agree). A flip probability
above :math:`2m(1-m)` is impossible in this model (attempts would have to be negatively
correlated) and is refused.

**Shared scene difficulty.** With ``scene_correlation`` :math:`\rho > 0`, the policies' latent
:math:`q` in one scene are coupled by a Gaussian copula: :math:`q_{i,s} = F_i^{-1}(\Phi(\sqrt\rho
\, z_s + \sqrt{1-\rho}\, e_{i,s}))` with :math:`z_s, e_{i,s}` independent standard normals and
:math:`F_i` policy :math:`i`'s Beta distribution function. The argument of :math:`F_i^{-1}` is
uniform whatever :math:`\rho`, so each :math:`q_{i,s}` keeps its Beta distribution and the flip
probability above is unchanged; only the agreement *between* policies in a scene (what a
paired comparison discounts) grows with :math:`\rho`.

**Scores.** A success gets an ordinal score among the rubric levels ``>= success_at``, a
failure one among the levels below, drawn with the relative weights ``score_probs`` (equal
weights by default) renormalised within each group, so the rubric's threshold and the
``success`` column always agree.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from evalband.errors import InvalidParameterError
from evalband.session._store import TRIAL_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session._plan import SessionPlan, Trial

__all__ = ["simulate_session", "expected_flip_rate"]

_DEFAULT_START = "2025-01-06T18:00:00+00:00"


def _probability(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(f"{name} must be a number in [0, 1]; got {value!r}")
    x = float(value)
    if not 0.0 <= x <= 1.0:
        raise InvalidParameterError(f"{name} must be in [0, 1]; got {value!r}")
    return x


def _rates(plan: SessionPlan, success_prob: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(success_prob, Mapping):
        raise InvalidParameterError(
            "success_prob must map every policy of the plan to its mean success rate, e.g. "
            f"{{{plan.policies[0]!r}: 0.5}}; got {success_prob!r}"
        )
    missing = [p for p in plan.policies if p not in success_prob]
    if missing:
        raise InvalidParameterError(
            f"success_prob has no rate for {', '.join(missing)}; give one for every policy "
            f"of the plan ({', '.join(plan.policies)})"
        )
    return {p: _probability(success_prob[p], f"success_prob[{p!r}]") for p in plan.policies}


def _flip(m: float, flip_prob: float | None, policy: str) -> float:
    """The per-pair flip probability of a policy with mean rate ``m``."""
    independent = 2.0 * m * (1.0 - m)
    if flip_prob is None:
        return independent
    if flip_prob > independent + 1e-12:
        raise InvalidParameterError(
            f"flip_prob={flip_prob!r} is impossible for policy {policy!r} with success rate "
            f"{m!r}: attempts sharing a scene flip at most 2m(1-m) = {independent:.4g} of the "
            "time (independent attempts); lower flip_prob or move the rate towards 0.5"
        )
    return flip_prob


def expected_flip_rate(
    plan: SessionPlan, success_prob: Mapping[str, float], flip_prob: float | None = None
) -> float:
    r"""The true flip probability of a same-policy, same-scene attempt pair in the simulation.

    Every ``(policy, scene)`` contributes :math:`K(K-1)/2` pairs (:math:`K` attempts), the same
    number for every policy, so the expected share of flipped pairs in a fully scored session
    is the mean over policies of :math:`f_i`: ``flip_prob`` when it is given (then every
    :math:`f_i` equals it), else :math:`2 m_i (1 - m_i)` (independent attempts).

    Args:
        plan: the session plan.
        success_prob: mean success rate of every policy.
        flip_prob: the target flip probability (``None``: independent attempts).

    Returns:
        The expected flip rate.

    Raises:
        InvalidParameterError: as :func:`simulate_session`.

    >>> from evalband.session import plan_session
    >>> plan = plan_session(["a", "b"], scenes=4, attempts=2, seed=1)
    >>> round(expected_flip_rate(plan, {"a": 0.5, "b": 0.2}), 12)  # (0.5 + 0.32) / 2
    0.41
    >>> expected_flip_rate(plan, {"a": 0.5, "b": 0.2}, flip_prob=0.27)
    0.27
    """
    rates = _rates(plan, success_prob)
    f = None if flip_prob is None else _probability(flip_prob, "flip_prob")
    flips = [_flip(m, f, p) for p, m in rates.items()]
    return float(np.mean(flips))


def _latent(m: float, flip: float, u: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Latent per-scene success probabilities of one policy from uniforms ``u``."""
    from scipy import stats

    independent = 2.0 * m * (1.0 - m)
    if independent == 0.0 or flip >= independent - 1e-15:
        return np.full(u.shape, m)  # kappa = infinity: every attempt a coin of rate m
    if flip <= 0.0:
        return (u < m).astype(np.float64)  # kappa = 0: all or nothing per scene
    kappa = flip / (independent - flip)
    out: npt.NDArray[np.float64] = np.asarray(
        stats.beta.ppf(u, m * kappa, (1.0 - m) * kappa), dtype=np.float64
    )
    return out


def _score_weights(levels: list[int], score_probs: Mapping[int, float] | None) -> dict[int, float]:
    if score_probs is None:
        return {level: 1.0 for level in levels}
    unknown = sorted(set(score_probs) - set(levels))
    if unknown:
        raise InvalidParameterError(
            f"score_probs names levels {unknown} that the rubric does not have ({levels})"
        )
    weights: dict[int, float] = {}
    for level in levels:
        w = score_probs.get(level, 0.0)
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not float(w) >= 0.0:
            raise InvalidParameterError(f"score_probs[{level}] must be a weight >= 0; got {w!r}")
        weights[level] = float(w)
    return weights


def _level_sampler(
    levels: list[int], weights: dict[int, float], what: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    w = np.array([weights[level] for level in levels], dtype=np.float64)
    if not levels or w.sum() <= 0.0:
        raise InvalidParameterError(
            f"the rubric needs at least one {what} level with a positive weight in score_probs "
            f"to score a {what}; levels {levels}, weights {[weights.get(x) for x in levels]}"
        )
    return np.array(levels, dtype=np.int64), w / w.sum()


def _start_time(start: str) -> datetime:
    """The first trial's time (``start``, ISO 8601; UTC when it names no zone)."""
    try:
        t0 = datetime.fromisoformat(start)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"start must be an ISO 8601 time such as {_DEFAULT_START!r}; got {start!r}"
        ) from None
    if t0.tzinfo is None:
        t0 = t0.replace(tzinfo=UTC)
    return t0


def _trial_frame(trials: Sequence[Trial], score: np.ndarray, success: np.ndarray,
                 skipped: np.ndarray, assisted: np.ndarray, trial_s: float,
                 t0: datetime) -> pd.DataFrame:
    """The simulated trials as a ``SessionStore.trials`` table (``TRIAL_COLUMNS``)."""
    import pandas as pd

    n = len(trials)
    frame = pd.DataFrame(
        {
            "trial_index": np.array([t.index for t in trials], dtype=np.int64),
            "scene": np.array([t.scene for t in trials], dtype=np.int64),
            "attempt": np.array([t.attempt for t in trials], dtype=np.int64),
            "policy": pd.Series([t.policy for t in trials], dtype=object),
            "code": pd.Series([t.code for t in trials], dtype=object),
            "position": np.array([t.position for t in trials], dtype=np.int64),
            "status": pd.Series(np.where(skipped, "skipped", "scored"), dtype=object),
            "score": pd.array(
                [None if s else int(v) for v, s in zip(score, skipped, strict=True)], dtype="Int64"
            ),
            "success": pd.array(
                [None if s else bool(v) for v, s in zip(success, skipped, strict=True)],
                dtype="boolean",
            ),
            "assisted": assisted.astype(bool),
            "note": pd.Series([None] * n, dtype=object),
            "exit_code": pd.array([None] * n, dtype="Int64"),
            "duration_s": np.full(n, trial_s),
            "scored_at": pd.Series(
                [
                    (t0 + timedelta(seconds=(i + 1) * trial_s)).isoformat(timespec="seconds")
                    for i in range(n)
                ],
                dtype=object,
            ),
        },
        columns=list(TRIAL_COLUMNS),
    )
    return frame


def simulate_session(
    plan: SessionPlan,
    *,
    success_prob: Mapping[str, float],
    flip_prob: float | None = None,
    score_probs: Mapping[int, float] | None = None,
    scene_correlation: float = 0.0,
    skip_prob: float = 0.0,
    assist_prob: float = 0.0,
    seed: int | np.random.Generator,
    start: str = _DEFAULT_START,
    trial_s: float = 30.0,
) -> pd.DataFrame:
    r"""Score every planned trial of ``plan`` from a model with a known flip probability.

    See the module docstring for the model: a Beta-distributed latent success probability
    per ``(policy, scene)`` whose concentration makes same-policy, same-scene attempt pairs
    flip with probability ``flip_prob`` exactly (:func:`expected_flip_rate` gives the pooled
    truth), optionally coupled across policies within a scene by ``scene_correlation``.

    Random streams are children of one ``numpy.random.SeedSequence``-seeded generator, in a
    fixed order (scene effects, policy effects, attempts, scores, skips, assists): the same
    call gives the same table.

    Args:
        plan: the session plan (every trial is simulated, in schedule order).
        success_prob: mean success rate :math:`m_i` of every policy of the plan.
        flip_prob: the flip probability of a same-policy, same-scene attempt pair, at most
            :math:`2 m_i (1 - m_i)` for every policy; ``None`` for independent attempts.
        score_probs: relative weights of the rubric levels (equal by default), renormalised
            among the success levels for a success and among the others for a failure.
        scene_correlation: :math:`\rho` in [0, 1): how strongly the policies' latent rates
            move together across scenes (shared scene difficulty).
        skip_prob: probability that a trial is recorded as skipped (no score).
        assist_prob: probability that a scored trial is marked assisted.
        seed: an int or a ``numpy.random.Generator``.
        start: ISO time of the first trial; trial ``i`` is scored ``(i + 1) * trial_s``
            seconds after it.
        trial_s: seconds per trial (the ``duration_s`` column).

    Returns:
        A DataFrame with the columns of ``SessionStore.trials`` (``TRIAL_COLUMNS``), one
        row per planned trial: ``status`` ``"scored"`` (or ``"skipped"``), ``score`` (Int64),
        ``success`` (boolean), ``assisted`` (bool).

    Raises:
        InvalidParameterError: a missing or out-of-range rate, an impossible ``flip_prob``,
            bad weights, or a probability outside [0, 1].

    >>> from evalband.session import plan_session
    >>> plan = plan_session(["a", "b"], scenes=3, attempts=2, seed=7)
    >>> t = simulate_session(plan, success_prob={"a": 0.6, "b": 0.3}, flip_prob=0.2, seed=1)
    >>> len(t), sorted(t["status"].unique()), t["score"].dtype.name
    (12, ['scored'], 'Int64')
    >>> bool((t["success"] == (t["score"] >= plan.rubric.success_at)).all())
    True
    """
    from scipy import stats

    rates = _rates(plan, success_prob)
    f = None if flip_prob is None else _probability(flip_prob, "flip_prob")
    flips = {p: _flip(m, f, p) for p, m in rates.items()}
    rho = _probability(scene_correlation, "scene_correlation")
    if rho >= 1.0:
        raise InvalidParameterError(
            "scene_correlation must be below 1 (1 would make every policy's latent rate the "
            f"same quantile in every scene); got {scene_correlation!r}"
        )
    p_skip = _probability(skip_prob, "skip_prob")
    p_assist = _probability(assist_prob, "assist_prob")
    if isinstance(trial_s, bool) or not isinstance(trial_s, numbers.Real) or not trial_s > 0:
        raise InvalidParameterError(f"trial_s must be a number of seconds > 0; got {trial_s!r}")
    t0 = _start_time(start)

    levels = sorted(int(x) for x in plan.rubric.levels)
    weights = _score_weights(levels, score_probs)
    cut = plan.rubric.success_at
    win_levels, win_w = _level_sampler([x for x in levels if x >= cut], weights, "success")
    loss_levels, loss_w = _level_sampler([x for x in levels if x < cut], weights, "failure")

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    s_count, policies = plan.scenes, list(plan.policies)
    z_scene = rng.standard_normal(s_count)
    e_policy = rng.standard_normal((len(policies), s_count))
    u = stats.norm.cdf(math.sqrt(rho) * z_scene[None, :] + math.sqrt(1.0 - rho) * e_policy)
    latent = {
        p: _latent(rates[p], flips[p], np.asarray(u[i], dtype=np.float64))
        for i, p in enumerate(policies)
    }
    trials = sorted(plan.trials, key=lambda t: t.index)
    n = len(trials)
    q = np.array([latent[t.policy][t.scene - 1] for t in trials], dtype=np.float64)
    success = rng.random(n) < q
    win_scores = rng.choice(win_levels, size=n, p=win_w)
    loss_scores = rng.choice(loss_levels, size=n, p=loss_w)
    skipped = rng.random(n) < p_skip
    assisted = (rng.random(n) < p_assist) & ~skipped
    score = np.where(success, win_scores, loss_scores)

    return _trial_frame(trials, score, success, skipped, assisted, float(trial_s), t0)
