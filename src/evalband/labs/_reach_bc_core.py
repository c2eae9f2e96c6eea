"""The reaching lab's learned-policy exercise: starts, episode split, changed dynamics, rollouts.

Specification: the reaching-lab seed (``002_4e7e9c5b524a571b``), "Evaluate the learned policy
from the shared exercise". Pure numpy, no I/O; :mod:`evalband.labs.reach_bc` writes the files.

* The expert is the lab's damped controller ``clip(-2x - 1.8v, -1, 1)``
  (:func:`evalband.policies.reach1d.expert`); demonstrations and evaluation observe the exact
  position and velocity (the seed's exercise: "Both controllers observe exact position and
  velocity"), so the lab's position noise is 0 here.
* Every rollout uses the env's own dynamics (:func:`~evalband.envs.advance`) and outcome rule
  (:func:`~evalband.envs.judge`): 30 actions of 0.2 s, boundary failure before success before
  timeout.
* The learned policy (:mod:`evalband.labs._reach_bc_fit`) is affine, fitted by least squares.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband._util.validate import as_count
from evalband.envs.reach1d import (
    FAILURE,
    OUTCOME_NAMES,
    RUNNING,
    SUCCESS,
    TIMEOUT,
    advance,
    as_commands,
    judge,
)
from evalband.errors import InvalidInputError, InvalidParameterError

__all__ = [
    "DT",
    "MAX_STEPS",
    "X_RANGE",
    "V_RANGE",
    "CHANGED_GAIN",
    "CHANGED_DISTURBANCE",
    "FINAL_EPISODES",
    "DEFAULT_SEED",
    "DEFAULT_EPISODES",
    "Policy",
    "STAGE_GENERATE",
    "STAGE_SPLIT",
    "STAGE_EVALUATE",
    "stage_rng",
    "draw_starts",
    "split_episodes",
    "changed_dynamics",
    "Rollouts",
    "simulate",
]

DT = 0.2
"""Hold time per action (s), the lab's."""
MAX_STEPS = 30
"""Action budget: 30 actions of 0.2 s, the six-second timeout."""
X_RANGE = (-0.8, 0.8)
"""Start positions of demonstrations and final starts, uniform (m)."""
V_RANGE = (-0.15, 0.15)
"""Start velocities of demonstrations and final starts, uniform (m/s)."""
CHANGED_GAIN = (0.6, 1.4)
"""Changed dynamics: actuator gain, uniform, held per rollout."""
CHANGED_DISTURBANCE = (-0.25, 0.25)
"""Changed dynamics: constant disturbance (m/s^2), uniform, held per rollout."""
FINAL_EPISODES = 16
"""Episodes held out as the final split; their starts are the evaluation starts."""
DEFAULT_SEED = 7
"""Default seed of every stage (the lab's default evaluation seed)."""
DEFAULT_EPISODES = 80
"""Default demonstrations: 48 train / 16 validation / 16 final (60/20/20)."""
STAGE_GENERATE, STAGE_SPLIT, STAGE_EVALUATE = 0, 1, 2
"""Spawn keys of the stages' child streams (one seed never feeds two stages)."""

Policy = Callable[[NDArray[np.float64]], ArrayLike]
"""A vectorised controller ``[x, v] (B, 2) -> commands (B, 1) or (B,)``."""


def stage_rng(seed: int | np.random.Generator, stage: int) -> np.random.Generator:
    """The random stream of one stage: ``SeedSequence(seed, spawn_key=(stage,))``.

    Distinct spawn keys give distinct, hash-mixed streams (numpy's ``SeedSequence``), so
    ``generate``, ``split`` and ``evaluate`` given the same seed never reuse each other's
    draws. A :class:`numpy.random.Generator` is used as is.

    Args:
        seed: a whole number >= 0, or a generator.
        stage: :data:`STAGE_GENERATE`, :data:`STAGE_SPLIT` or :data:`STAGE_EVALUATE`.

    Returns:
        The generator.

    Raises:
        InvalidParameterError: a seed that is not a whole number >= 0.

    >>> float(stage_rng(7, 0).random()) == float(stage_rng(7, 0).random())
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InvalidParameterError(f"seed must be a whole number >= 0, got {seed!r}")
    entropy = int(seed)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(stage,)))


def draw_starts(
    n: int, seed: int | np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Start states ``x ~ U(-0.8, 0.8)`` m, ``v ~ U(-0.15, 0.15)`` m/s, prefix-stable.

    Episode ``i`` takes draws ``2i`` and ``2i + 1`` of the generate stream, so more
    episodes keep the first ones.

    Args:
        n: number of episodes.
        seed: the generate stage's seed or generator.

    Returns:
        ``(x0, v0)``, each of shape ``(n,)``.

    >>> x0, v0 = draw_starts(3, 7)
    >>> bool(np.all(np.abs(x0) <= 0.8) and np.all(np.abs(v0) <= 0.15))
    True
    >>> bool(np.array_equal(draw_starts(2, 7)[0], x0[:2]))
    True
    """
    count = as_count(n, "episodes")
    rng = stage_rng(seed, STAGE_GENERATE)
    draws = rng.uniform(
        low=(X_RANGE[0], V_RANGE[0]), high=(X_RANGE[1], V_RANGE[1]), size=(count, 2)
    )
    return draws[:, 0].copy(), draws[:, 1].copy()


def split_episodes(
    n_episodes: int, seed: int | np.random.Generator
) -> dict[str, NDArray[np.int64]]:
    """Assign whole episodes to ``train`` / ``validation`` / ``final``.

    A seeded permutation of the episode ids: the first :data:`FINAL_EPISODES` go to
    ``final``, the next ``round((n - 16) / 4)`` (at least 1) to ``validation``, the rest to
    ``train`` (80 episodes: 48 / 16 / 16, i.e. 60/20/20). Each part is sorted; the parts are
    disjoint and cover every episode.

    Args:
        n_episodes: demonstrations available (>= 18).
        seed: the split stage's seed or generator.

    Returns:
        ``{"train": ids, "validation": ids, "final": ids}``.

    Raises:
        InvalidParameterError: fewer than 18 episodes.

    >>> parts = split_episodes(80, 7)
    >>> [len(parts[k]) for k in ("train", "validation", "final")]
    [48, 16, 16]
    """
    n = as_count(n_episodes, "episodes")
    if n < FINAL_EPISODES + 2:
        raise InvalidParameterError(
            f"the split needs >= {FINAL_EPISODES + 2} episodes ({FINAL_EPISODES} final, "
            f">= 1 validation, >= 1 train), got {n}; generate more with `episodes`",
            parameters=("episodes",),
        )
    n_val = max(1, round((n - FINAL_EPISODES) / 4))
    order = stage_rng(seed, STAGE_SPLIT).permutation(n)
    final = np.sort(order[:FINAL_EPISODES])
    validation = np.sort(order[FINAL_EPISODES : FINAL_EPISODES + n_val])
    train = np.sort(order[FINAL_EPISODES + n_val :])
    return {
        "train": train.astype(np.int64),
        "validation": validation.astype(np.int64),
        "final": final.astype(np.int64),
    }


def changed_dynamics(
    n: int, seed: int | np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-start changed dynamics ``g ~ U(0.6, 1.4)``, ``d ~ U(-0.25, 0.25)`` m/s^2.

    Drawn once per final start from the evaluate stream (start ``i`` takes draws ``2i`` and
    ``2i + 1``) and shared by the learned policy and the expert.

    Args:
        n: number of starts.
        seed: the evaluate stage's seed or generator.

    Returns:
        ``(gain, disturbance)``, each of shape ``(n,)``.

    >>> g, d = changed_dynamics(16, 7)
    >>> bool(np.all((g >= 0.6) & (g <= 1.4)) and np.all(np.abs(d) <= 0.25))
    True
    """
    count = as_count(n, "starts")
    rng = stage_rng(seed, STAGE_EVALUATE)
    draws = rng.uniform(
        low=(CHANGED_GAIN[0], CHANGED_DISTURBANCE[0]),
        high=(CHANGED_GAIN[1], CHANGED_DISTURBANCE[1]),
        size=(count, 2),
    )
    return draws[:, 0].copy(), draws[:, 1].copy()


@dataclass(frozen=True)
class Rollouts:
    """Rollouts of one controller, all :data:`MAX_STEPS` actions simulated.

    Attributes:
        x: true positions, shape ``(B, T + 1)``; column 0 is the start, column ``k`` the
            sample after action ``k``.
        v: velocities, same shape.
        action: command of action ``k`` in column ``k - 1``, shape ``(B, T)``.
        streak: consecutive in-band samples after action ``k`` in column ``k - 1``.
        code: the first outcome under the lab's rule (``SUCCESS``, ``FAILURE``, ``TIMEOUT``).
        steps: the action at which that outcome was recorded (the rollout's length).
    """

    x: NDArray[np.float64]
    v: NDArray[np.float64]
    action: NDArray[np.float64]
    streak: NDArray[np.int64]
    code: NDArray[np.int8]
    steps: NDArray[np.int64]

    @property
    def outcome(self) -> list[str]:
        """Outcome names: ``success``, ``failure`` (boundary) or ``timeout``."""
        return [OUTCOME_NAMES[int(c)] for c in self.code]

    @property
    def terminated(self) -> NDArray[np.bool_]:
        """Success or boundary failure: the task ended."""
        return np.asarray((self.code == SUCCESS) | (self.code == FAILURE), dtype=np.bool_)

    @property
    def truncated(self) -> NDArray[np.bool_]:
        """Timeout: the action budget cut the rollout."""
        return np.asarray(self.code == TIMEOUT, dtype=np.bool_)


def simulate(
    policy: Policy,
    x0: ArrayLike,
    v0: ArrayLike,
    gain: ArrayLike = 1.0,
    disturbance: ArrayLike = 0.0,
    *,
    max_steps: int = MAX_STEPS,
) -> Rollouts:
    """Roll ``policy`` out from each start for ``max_steps`` actions, in lockstep.

    Each action reads the current exact state ``[x, v]`` (no demonstration state is ever
    substituted), is held for 0.2 s through :func:`~evalband.envs.advance`, and the sample is
    judged by :func:`~evalband.envs.judge` (boundary, then success, then timeout). The first
    outcome is recorded; the state keeps evolving after it so that demonstrations can hold
    the goal for the whole horizon, while evaluation reads only the first ``steps`` actions.

    Args:
        policy: vectorised controller ``(B, 2) -> (B, 1)``.
        x0: start positions (m).
        v0: start velocities (m/s).
        gain: actuator gain, one or per rollout (nominal 1).
        disturbance: constant disturbance (m/s^2), one or per rollout (nominal 0).
        max_steps: action budget.

    Returns:
        The trajectories and the first outcomes.

    The seed's nominal expert succeeds from a start inside the demonstration range:

    >>> from evalband.policies.reach1d import expert
    >>> r = simulate(expert, [-0.5], [0.1])
    >>> r.outcome, bool(r.terminated[0]), int(r.steps[0]) <= 30
    (['success'], True, True)
    """
    x = np.atleast_1d(np.asarray(x0, dtype=np.float64)).copy()
    v = np.atleast_1d(np.asarray(v0, dtype=np.float64)).copy()
    if x.ndim != 1 or x.shape != v.shape:
        raise InvalidInputError(f"x0 and v0 must be 1-D and alike, got {x.shape} and {v.shape}")
    size = x.shape[0]
    g = np.broadcast_to(np.asarray(gain, dtype=np.float64), (size,))
    d = np.broadcast_to(np.asarray(disturbance, dtype=np.float64), (size,))
    xs = np.empty((size, max_steps + 1))
    vs = np.empty((size, max_steps + 1))
    actions = np.empty((size, max_steps))
    streaks = np.empty((size, max_steps), dtype=np.int64)
    xs[:, 0], vs[:, 0] = x, v
    streak = np.zeros(size, dtype=np.int64)
    code = np.full(size, RUNNING, dtype=np.int8)
    steps = np.zeros(size, dtype=np.int64)
    for k in range(max_steps):
        obs = np.stack([x, v], axis=1)
        u = as_commands(policy(obs), size, "policy output")
        x, v = advance(x, v, u, g, d, DT)
        streak, judged = judge(x, v, streak, k + 1, max_steps)
        first = (code == RUNNING) & (judged != RUNNING)
        code[first], steps[first] = judged[first], k + 1
        xs[:, k + 1], vs[:, k + 1], actions[:, k], streaks[:, k] = x, v, u, streak
    return Rollouts(x=xs, v=vs, action=actions, streak=streaks, code=code, steps=steps)
