"""The reaching lab's conditions, dynamics and outcome rule: one implementation for all paths.

Specification: the reaching-lab seed (``002_4e7e9c5b524a571b``, "Robot policy evaluation:
success, failure, and episode counts"). A 1-D point mass (position ``x`` in m, velocity
``v`` in m/s) receives a commanded acceleration ``u``; the actuator applies
``a = g u + d`` held for ``dt`` seconds, which gives the exact endpoints

    v' = v + dt a,        x' = x + dt (v + v') / 2.

After each action the true state is sampled and judged, in this priority: boundary
failure ``|x| >= 1.25``, success after three consecutive samples with ``|x| <= 0.10`` and
``|v| <= 0.15``, timeout when the action budget is spent. Both the Gymnasium env and the
vectorised batch simulator call :func:`advance` and :func:`judge` below, so their
outcomes are identical by construction.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband._util.validate import as_count, check_choice
from evalband.envs._lcg import (
    LCG_MODULUS,
    _check_state,
    as_lcg_states,
    lcg_affine,
    lcg_jump,
    lcg_states,
)
from evalband.errors import InvalidParameterError

__all__ = [
    "SUCCESS_REWARD",
    "DRAWS_PER_EPISODE",
    "N_POSITION_ERRORS",
    "DEFAULT_SEED",
    "DEFAULT_EPISODES",
    "DYNAMICS",
    "BOUNDARY",
    "SUCCESS_POSITION",
    "SUCCESS_VELOCITY",
    "SETTLE_SAMPLES",
    "RUNNING",
    "SUCCESS",
    "FAILURE",
    "TIMEOUT",
    "OUTCOME_NAMES",
    "Reach1DConditions",
    "EpisodeStarts",
    "SampleClassification",
    "episode_condition_seed",
    "episode_condition_seeds",
    "conditions",
    "episode_starts",
    "unit_errors",
    "advance",
    "settle",
    "judge",
    "classify_samples",
]

N_POSITION_ERRORS = 40
"""Position errors drawn per episode, always all of them (seed: "always generates 40")."""
DRAWS_PER_EPISODE = 4 + N_POSITION_ERRORS
"""LCG draws per episode: x0, v0, gain, disturbance, then the 40 position errors."""
DEFAULT_SEED = 7
"""The default lab's evaluation seed."""
DEFAULT_EPISODES = 64
"""The default lab's episode count."""
DYNAMICS = ("lab", "nominal", "changed")
"""``lab``: g ~ U(0.8, 1.2), d ~ U(-0.3, 0.3); ``nominal``: g = 1, d = 0;
``changed``: g ~ U(0.6, 1.4), d ~ U(-0.25, 0.25) (the seed's BC exercise)."""
BOUNDARY = 1.25
"""Boundary failure when a sampled ``|x| >= BOUNDARY`` (m)."""
SUCCESS_POSITION = 0.10
"""Success band on position, ``|x| <= SUCCESS_POSITION`` (m)."""
SUCCESS_VELOCITY = 0.15
"""Success band on velocity, ``|v| <= SUCCESS_VELOCITY`` (m/s)."""
SETTLE_SAMPLES = 3
"""Consecutive in-band post-action samples needed for success."""

RUNNING, SUCCESS, FAILURE, TIMEOUT = 0, 1, 2, 3
"""Outcome codes used by the vectorised paths (``RUNNING``: no outcome yet)."""
SUCCESS_REWARD = 1.0
"""The env's reward on the step an episode settles; every other step pays ``0.0``."""
OUTCOME_NAMES: tuple[str, str, str, str] = ("running", "success", "failure", "timeout")
"""Outcome code -> name; the last three are the Episode record's outcome values."""


def episode_condition_seed(seed: int, episode: int) -> int:
    """LCG state at the start of episode ``episode`` of a batch started at ``seed``.

    Episode ``i`` starts after ``44 i`` draws (:data:`DRAWS_PER_EPISODE`), so its
    conditions are a pure function of ``(seed, i)``: prefix-stable (256 episodes keep the
    first 64) and independent of order or worker count. Computed with the O(log n)
    jump-ahead :func:`~evalband.envs._lcg.lcg_jump` (Brown 1994).

    Args:
        seed: the batch's starting LCG state in ``[0, 2**32)`` (the default lab uses 7).
        episode: 0-based episode index.

    Returns:
        The condition seed to pass to ``Reach1DEnv.reset(seed=...)``.

    >>> episode_condition_seed(7, 0)
    7
    >>> episode_condition_seed(7, 1) == lcg_jump(7, 44)
    True
    """
    start = _check_state(seed, "seed")
    index = as_count(episode, "episode")
    return lcg_jump(start, DRAWS_PER_EPISODE * index)


def episode_condition_seeds(seed: int, n_episodes: int, start: int = 0) -> NDArray[np.uint64]:
    """Condition seeds of episodes ``start .. start + n_episodes - 1`` as a uint64 array.

    Vectorised form of :func:`episode_condition_seed` (same values): the array is grown by
    doubling, each half jumped ahead with one affine map, so it costs O(log n) numpy
    operations.

    Args:
        seed: the batch's starting LCG state in ``[0, 2**32)``.
        n_episodes: how many episodes.
        start: index of the first episode.

    Returns:
        Array of shape ``(n_episodes,)``.

    >>> episode_condition_seeds(7, 3).tolist() == [episode_condition_seed(7, i) for i in range(3)]
    True
    """
    n = as_count(n_episodes, "n_episodes")
    first = episode_condition_seed(seed, start)
    out = np.empty(n, dtype=np.uint64)
    out[:1] = first
    mask = np.uint64(2**32 - 1)
    filled = min(n, 1)
    while filled < n:  # the next block: the first ones jumped ahead by `filled` episodes
        a, c = lcg_affine(DRAWS_PER_EPISODE * filled)
        take = min(filled, n - filled)
        block = np.multiply(out[:take], np.uint64(a), out=out[filled : filled + take])
        block += np.uint64(c)  # a s + c < 2**64: exact in uint64, then reduced
        block &= mask
        filled += take
    return out


@dataclass(frozen=True)
class Reach1DConditions:
    """Matched episode conditions, one row per condition seed.

    Attributes:
        condition_seeds: LCG state at each episode's start (uint64).
        x0: initial position, ``-1 + u`` (m).
        v0: initial velocity, ``-0.2 + 0.4 u`` (m/s).
        gain: actuator gain (see :data:`DYNAMICS`).
        disturbance: constant disturbance (m/s^2) (see :data:`DYNAMICS`).
        errors: unit position errors ``2 u - 1``, shape ``(B, 40)``; the measured position
            for action ``k`` is ``x + noise * errors[:, k]``.
        dynamics: the dynamics option of each row.
    """

    condition_seeds: NDArray[np.uint64]
    x0: NDArray[np.float64]
    v0: NDArray[np.float64]
    gain: NDArray[np.float64]
    disturbance: NDArray[np.float64]
    errors: NDArray[np.float64]
    dynamics: NDArray[np.str_]

    def __len__(self) -> int:
        return int(self.x0.shape[0])


def _dynamics_array(
    dynamics: str | Sequence[str] | NDArray[np.str_], size: int
) -> NDArray[np.str_]:
    if isinstance(dynamics, str):  # one option: a read-only broadcast view, no copy
        choice = np.asarray(check_choice(dynamics, "dynamics", DYNAMICS), dtype="<U7")
        return np.broadcast_to(choice, (size,))
    arr = np.asarray(dynamics, dtype=object).reshape(-1)
    if arr.shape[0] != size:
        raise InvalidParameterError(
            f"dynamics must be one string or one per episode ({size}), got {arr.shape[0]} values"
        )
    lowered = [check_choice(str(d), "dynamics", DYNAMICS) for d in arr.tolist()]
    return np.asarray(lowered, dtype="<U7")


def conditions(
    condition_seeds: ArrayLike,
    *,
    dynamics: str | Sequence[str] | NDArray[np.str_] = "lab",
) -> Reach1DConditions:
    """Draw the conditions of many episodes at once from their condition seeds.

    Each episode consumes exactly 44 LCG draws ``u`` (reaching-lab seed, "Declare the
    evaluation distribution" and its Python program): ``x0 = -1 + u``,
    ``v0 = -0.2 + 0.4 u``, ``gain = 0.8 + 0.4 u``, ``disturbance = -0.3 + 0.6 u``, then 40
    errors ``2 u - 1``. ``dynamics="changed"`` maps the same two draws to
    ``gain = 0.6 + 0.8 u`` and ``disturbance = -0.25 + 0.5 u`` (the seed's BC exercise);
    ``"nominal"`` sets ``gain = 1``, ``disturbance = 0``.

    Args:
        condition_seeds: LCG states at the episodes' starts, integers in ``[0, 2**32)``.
        dynamics: one option of :data:`DYNAMICS`, or one per episode.

    Returns:
        The conditions, vectorised over the seeds.

    The seed lab's "Episode 1 of 64" (index 0 of seed 7):

    >>> c = conditions([episode_condition_seed(7, 0)])
    >>> [round(float(a[0]), 6) for a in (c.x0, c.v0, c.gain, c.disturbance)]
    [-0.761219, 0.165397, 1.044997, 0.256189]
    >>> c.errors.shape
    (1, 40)
    """
    start = episode_starts(condition_seeds, dynamics=dynamics)
    errors = unit_errors(lcg_states(start.condition_seeds, N_POSITION_ERRORS, first=5))
    return Reach1DConditions(
        condition_seeds=start.condition_seeds,
        x0=start.x0,
        v0=start.v0,
        gain=start.gain,
        disturbance=start.disturbance,
        errors=errors.T,  # (40, B) C-contiguous, exposed as its (B, 40) transpose
        dynamics=start.dynamics,
    )


class EpisodeStarts(NamedTuple):
    """The first four draws of each episode: everything but the position errors.

    Attributes:
        condition_seeds: LCG state at each episode's start (uint64).
        x0: initial position (m).
        v0: initial velocity (m/s).
        gain: actuator gain.
        disturbance: constant disturbance (m/s^2).
        dynamics: the dynamics option of each row.
    """

    condition_seeds: NDArray[np.uint64]
    x0: NDArray[np.float64]
    v0: NDArray[np.float64]
    gain: NDArray[np.float64]
    disturbance: NDArray[np.float64]
    dynamics: NDArray[np.str_]


def episode_starts(
    condition_seeds: ArrayLike,
    *,
    dynamics: str | Sequence[str] | NDArray[np.str_] = "lab",
) -> EpisodeStarts:
    """Draws 1-4 of each episode (:func:`conditions` without the 40 position errors).

    Error ``k`` of an episode is draw ``5 + k``: callers that need only some of them jump
    straight to it (``lcg_states(seeds, count, first=5 + k)`` and :func:`unit_errors`).

    Args:
        condition_seeds: LCG states at the episodes' starts, integers in ``[0, 2**32)``.
        dynamics: one option of :data:`DYNAMICS`, or one per episode.

    Returns:
        Seeds, start state, gain and disturbance, vectorised over the seeds.

    >>> s = episode_starts([7])
    >>> round(float(s.x0[0]), 6), round(float(s.gain[0]), 6)
    (-0.761219, 1.044997)
    """
    seeds = as_lcg_states(condition_seeds)
    dyn = _dynamics_array(dynamics, seeds.shape[0])
    uniform = str(dyn[0]) if dyn.size and isinstance(dynamics, str) else None
    # draw = state / 2**32 exactly (state < 2**32 is exact in float64, the scale a power
    # of two), so each value below is rounded once, as in the seed program. The four
    # rows of one (4, B) block are mapped in place (fewer fresh pages: large batches).
    draws = np.multiply(lcg_states(seeds, 4), 1.0 / LCG_MODULUS)
    x0, v0, gain, disturbance = draws
    x0 += -1  # -1 + u
    v0 *= 0.4
    v0 += -0.2  # -0.2 + 0.4 u
    _by_dynamics(dyn, uniform, gain, lab=(0.8, 0.4), changed=(0.6, 0.8), nominal=1.0)
    _by_dynamics(dyn, uniform, disturbance, lab=(-0.3, 0.6), changed=(-0.25, 0.5), nominal=0.0)
    return EpisodeStarts(
        condition_seeds=seeds, x0=x0, v0=v0, gain=gain, disturbance=disturbance, dynamics=dyn
    )


def unit_errors(
    states: NDArray[np.uint32], out: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Unit position errors ``2 u - 1`` of LCG states, ``u = state / 2**32`` (the seed's draw).

    Computed as ``state / 2**31 - 1``: ``2 u`` is exact (a power-of-two scaling of an
    integer below 2**32), so the only rounding is the subtraction's, as in the seed.

    Args:
        states: LCG states (any shape).
        out: optional float64 buffer of the same shape.

    Returns:
        ``2 u - 1`` per state (``out`` when given).

    >>> unit_errors(np.array([0, 2**31, 2**32 - 2**30], dtype=np.uint32)).tolist()
    [-1.0, 0.0, 0.5]
    """
    errors = np.multiply(states, 2.0 / LCG_MODULUS, out=out)  # 2 u, exact
    errors -= 1
    return errors


def _by_dynamics(
    dyn: NDArray[np.str_],
    uniform: str | None,
    u: NDArray[np.float64],
    *,
    lab: tuple[float, float],
    changed: tuple[float, float],
    nominal: float,
) -> None:
    """``u <- low + width * u`` in place, per the row's dynamics option (``nominal``: a constant).

    ``uniform`` names the option of every row when they share one (no per-row compare).
    """
    if uniform is not None:
        if uniform == "nominal":
            u[...] = nominal
            return
        low, width = lab if uniform == "lab" else changed
        u *= width
        u += low
        return
    rows_of = {name: dyn == name for name in DYNAMICS}
    for name, (low, width) in (("lab", lab), ("changed", changed)):
        rows = rows_of[name]
        if rows.any():
            u[rows] = low + width * u[rows]
    u[rows_of["nominal"]] = nominal


def advance(
    x: ArrayLike,
    v: ArrayLike,
    u: ArrayLike,
    gain: ArrayLike,
    disturbance: ArrayLike,
    dt: float,
    *,
    out: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Hold the command ``u`` for ``dt`` seconds: exact endpoints of constant acceleration.

    ``a = g u + d``, ``v' = v + dt a``, ``x' = x + dt (v + v') / 2`` (reaching-lab seed,
    "Specify the simulated robot"; the average-velocity update is exact for a held
    acceleration). Each value is rounded exactly as in the seed program (same products
    and sums; only the operands of ``+`` and ``*`` swap sides, which IEEE arithmetic
    rounds identically), so results agree with it bit for bit.

    Args:
        x: position (m).
        v: velocity (m/s).
        u: commanded acceleration (m/s^2); not clipped here.
        gain: actuator gain.
        disturbance: constant disturbance (m/s^2).
        dt: hold time (s).
        out: optional float64 buffers ``(x', v')`` of the broadcast shape to write into
            (the batch simulator's in-place path); they must not overlap any input.

    Returns:
        ``(x', v')`` as float64 arrays (0-d for scalar input); ``out`` when given.

    The seed's hand-worked step (x = -0.5, v = 0.1, g = 1, d = 0.1, u = 0.98):

    >>> x1, v1 = advance(-0.5, 0.1, 0.98, 1.0, 0.1, 0.2)
    >>> round(float(x1), 6), round(float(v1), 6)
    (-0.4584, 0.316)
    """
    if out is None:
        f64 = np.float64
        x, v = np.asarray(x, dtype=f64), np.asarray(v, dtype=f64)
        gain, u = np.asarray(gain, dtype=f64), np.asarray(u, dtype=f64)
        disturbance = np.asarray(disturbance, dtype=f64)
        shape = np.broadcast_shapes(x.shape, v.shape, u.shape, gain.shape, disturbance.shape)
        out = (np.empty(shape, dtype=f64), np.empty(shape, dtype=f64))
    new_x, new_v = out
    np.multiply(gain, u, out=new_v)  # g u
    np.add(new_v, disturbance, out=new_v)  # a = g u + d
    new_v *= dt  # dt a
    np.add(new_v, v, out=new_v)  # v' = v + dt a
    np.add(v, new_v, out=new_x)  # v + v'
    new_x *= dt
    new_x /= 2  # dt (v + v') / 2
    np.add(new_x, x, out=new_x)  # x' = x + dt (v + v') / 2
    return new_x, new_v


def settle(
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    streak: NDArray[np.integer[Any]],
    abs_x: NDArray[np.float64],
    inside: NDArray[np.bool_],
    scratch: NDArray[np.float64],
) -> None:
    """The lab's settling count, in place: one implementation for :func:`judge` and the batch.

    A sample inside both bands (``|x| <= 0.10``, ``|v| <= 0.15``) extends ``streak`` by
    one, any other sample resets it to 0 (reaching-lab seed, "Velocity and the settling
    rule"). Writes ``abs_x <- |x|`` (for the boundary test), ``inside`` (the sample is in
    both bands) and ``streak``; ``scratch`` is overwritten.

    Args:
        x: true positions after the action.
        v: true velocities after the action.
        streak: consecutive in-band samples before this one (any integer dtype), updated.
        abs_x: float64 buffer, receives ``|x|``.
        inside: bool buffer, receives the in-band test.
        scratch: float64 work buffer.

    >>> streak, ax, ins = np.array([2, 2]), np.empty(2), np.empty(2, dtype=bool)
    >>> settle(np.array([0.05, 0.2]), np.array([0.1, 0.0]), streak, ax, ins, np.empty(2))
    >>> streak.tolist(), ins.tolist()
    ([3, 0], [True, False])
    """
    np.abs(x, out=abs_x)
    np.less_equal(abs_x, SUCCESS_POSITION, out=inside)
    np.abs(v, out=scratch)
    inside &= scratch <= SUCCESS_VELOCITY
    streak += 1
    streak *= inside  # reset to 0 outside


def judge(
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    streak: NDArray[np.int64],
    steps: ArrayLike,
    max_steps: ArrayLike,
) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """Judge post-action samples: the lab's outcome rule, vectorised.

    A sample inside both bands (``|x| <= 0.10``, ``|v| <= 0.15``) extends the streak, any
    other sample resets it to 0 (:func:`settle`). Then, in priority order (reaching-lab
    seed, "Define success before running the policy"): boundary failure ``|x| >= 1.25``;
    success when the streak reaches 3; timeout when ``steps >= max_steps``; else still
    running. A success on the final allowed sample counts as success.

    Args:
        x: true positions after the action.
        v: true velocities after the action.
        streak: consecutive in-band samples before this one.
        steps: actions taken, including this one.
        max_steps: the action budget.

    Returns:
        ``(new_streak, code)`` with codes :data:`RUNNING`, :data:`SUCCESS`,
        :data:`FAILURE`, :data:`TIMEOUT`.

    >>> s, c = judge(np.array([0.05, 1.3]), np.array([0.1, 0.0]), np.array([2, 2]), 5, 30)
    >>> s.tolist(), [OUTCOME_NAMES[i] for i in c]
    ([3, 0], ['success', 'failure'])
    """
    x_arr = np.asarray(x, dtype=np.float64)
    shape = x_arr.shape
    new_streak = np.array(np.broadcast_to(np.asarray(streak, dtype=np.int64), shape))
    abs_x = np.empty(shape, dtype=np.float64)
    settle(
        x_arr, np.asarray(v, dtype=np.float64), new_streak, abs_x,
        np.empty(shape, dtype=np.bool_), np.empty(shape, dtype=np.float64),
    )
    # Assign in reverse priority so that the higher-priority outcome wins.
    code = np.zeros(shape, dtype=np.int8)
    budget_spent = np.asarray(steps) >= np.asarray(max_steps)
    if budget_spent.ndim == 0:
        if budget_spent:
            code[...] = TIMEOUT
    else:
        code[np.broadcast_to(budget_spent, code.shape)] = TIMEOUT
    code[new_streak >= SETTLE_SAMPLES] = SUCCESS
    code[abs_x >= BOUNDARY] = FAILURE
    return new_streak, code


class SampleClassification(NamedTuple):
    """Outcome of a sequence of post-action samples under the lab's rule.

    Attributes:
        outcome: ``"success"``, ``"failure"``, ``"timeout"``, or ``None`` when the samples
            ran out before any outcome.
        steps: samples consumed (the step at which the outcome was recorded).
        terminated: the task ended (success or boundary failure).
        truncated: the action budget cut the episode (timeout).
        streaks: the consecutive in-band count after each consumed sample.
    """

    outcome: str | None
    steps: int
    terminated: bool
    truncated: bool
    streaks: tuple[int, ...]


def classify_samples(
    xs: Sequence[float], vs: Sequence[float], max_steps: int
) -> SampleClassification:
    """Apply the outcome rule to post-action samples ``(xs[k], vs[k])``, k = 0, 1, ...

    Sample ``k`` is the state after action ``k + 1``; the rule (:func:`judge`) stops at the
    first outcome. The reset state is not a sample. Success and failure terminate; only a
    timeout truncates.

    Args:
        xs: sampled positions (m).
        vs: sampled velocities (m/s), same length.
        max_steps: the action budget.

    Returns:
        The outcome, the step it was recorded at, the Gymnasium flags and the streaks.

    The seed's Exercise 2: the budget expires at the third sample; a middle velocity of
    0.16 m/s breaks the streak (timeout), 0.14 m/s completes it (success).

    >>> r = classify_samples([0.08, 0.07, 0.06], [0.10, 0.16, 0.10], max_steps=3)
    >>> r.outcome, r.terminated, r.truncated, r.streaks
    ('timeout', False, True, (1, 0, 1))
    >>> classify_samples([0.08, 0.07, 0.06], [0.10, 0.14, 0.10], max_steps=3).outcome
    'success'
    """
    budget = _check_max_steps(max_steps, limit=None)
    if len(xs) != len(vs):
        raise InvalidParameterError(
            f"xs and vs must have the same length, got {len(xs)} and {len(vs)}"
        )
    streak = np.zeros(1, dtype=np.int64)
    streaks: list[int] = []
    for k, (x, v) in enumerate(zip(xs, vs, strict=True)):
        streak, code = judge(
            np.asarray([x], dtype=np.float64), np.asarray([v], dtype=np.float64), streak, k + 1,
            budget,
        )
        streaks.append(int(streak[0]))
        if code[0] != RUNNING:
            name = OUTCOME_NAMES[int(code[0])]
            return SampleClassification(
                name, k + 1, name != "timeout", name == "timeout", tuple(streaks)
            )
    return SampleClassification(None, len(streaks), False, False, tuple(streaks))


def _check_max_steps(max_steps: object, limit: int | None = N_POSITION_ERRORS) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral):
        raise InvalidParameterError(
            f"max_steps must be a whole number of actions, got {max_steps!r}"
        )
    value = int(max_steps)
    if value < 1 or (limit is not None and value > limit):
        upper = "" if limit is None else f" and <= {limit} (the lab draws {limit} position errors)"
        raise InvalidParameterError(f"max_steps must be >= 1{upper}, got {value}")
    return value


def _check_dt(dt: object) -> float:
    if isinstance(dt, bool) or not isinstance(dt, numbers.Real) or not math.isfinite(float(dt)):
        raise InvalidParameterError(f"dt must be a finite number of seconds > 0, got {dt!r}")
    if float(dt) <= 0:
        raise InvalidParameterError(f"dt must be > 0 seconds, got {dt!r}")
    return float(dt)


def _check_noise(noise: object) -> float:
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
        raise InvalidParameterError(
            f"noise must be a position-error bound in m >= 0, got {noise!r}"
        )
    value = float(noise)
    if not math.isfinite(value) or value < 0:
        raise InvalidParameterError(f"noise must be a finite bound in m >= 0, got {noise!r}")
    return value
