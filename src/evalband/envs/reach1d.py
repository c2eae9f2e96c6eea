"""The reaching lab: a seeded 1-D point mass as a Gymnasium env and a vectorised simulator.

Specification and reference: the reaching-lab seed (``002_4e7e9c5b524a571b``, "Robot
policy evaluation: success, failure, and episode counts"), whose standard-library program
these paths reproduce bit for bit. Two paths share one implementation of the dynamics
(:func:`advance`) and of the outcome rule (:func:`judge`):

* :class:`Reach1DEnv` (``gymnasium.make("evalband/Reach1D-v0")``), one episode at a time;
  ``reset(seed=condition_seed)`` where the seed IS the LCG state at the episode start
  (:func:`episode_condition_seed`).
* :func:`rollout_batch`, all episodes in lockstep with numpy, one policy call per step on
  the stacked observations of the still-active episodes.

Success and boundary failure terminate; a timeout truncates (Gymnasium's time-limit
semantics). The env never clips actions: the lab's controllers saturate at +-1 themselves.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike, NDArray

from evalband.envs._lcg import _check_state, lcg_jump
from evalband.envs._reach1d_core import (
    BOUNDARY,
    DEFAULT_EPISODES,
    DEFAULT_SEED,
    DRAWS_PER_EPISODE,
    DYNAMICS,
    FAILURE,
    N_POSITION_ERRORS,
    OUTCOME_NAMES,
    RUNNING,
    SETTLE_SAMPLES,
    SUCCESS,
    SUCCESS_POSITION,
    SUCCESS_VELOCITY,
    TIMEOUT,
    Reach1DConditions,
    SampleClassification,
    _check_dt,
    _check_max_steps,
    _check_noise,
    advance,
    classify_samples,
    conditions,
    episode_condition_seed,
    episode_condition_seeds,
    judge,
)
from evalband.errors import EvalbandError, InvalidInputError, InvalidParameterError
from evalband.stats._validate import check_choice

__all__ = [
    "ENV_ID",
    "OPTION_KEYS",
    "Reach1DEnv",
    "Reach1DBatchResult",
    "rollout_batch",
    # re-exported from the core
    "DRAWS_PER_EPISODE",
    "N_POSITION_ERRORS",
    "DEFAULT_SEED",
    "DEFAULT_EPISODES",
    "DYNAMICS",
    "BOUNDARY",
    "SUCCESS_POSITION",
    "SUCCESS_VELOCITY",
    "SETTLE_SAMPLES",
    "OUTCOME_NAMES",
    "Reach1DConditions",
    "SampleClassification",
    "lcg_jump",
    "episode_condition_seed",
    "episode_condition_seeds",
    "conditions",
    "advance",
    "judge",
    "classify_samples",
]

ENV_ID = "evalband/Reach1D-v0"
"""The Gymnasium id the env is registered under (on ``import evalband.envs``)."""
OPTION_KEYS = ("dynamics", "noise", "max_steps")
"""Keys ``reset(options=...)`` accepts: per-episode overrides of the constructor settings."""

Obs = NDArray[np.float64]
Policy = Callable[[NDArray[np.float64]], ArrayLike]


class Reach1DEnv(gym.Env[NDArray[np.float64], NDArray[np.float64]]):
    """The reaching lab's 1-D point mass with seeded matched conditions.

    Observation ``[x_measured, v]`` (float64) with ``x_measured = x + noise * errors[k]``
    for the ``k``-th action (``k`` = actions taken so far) and the exact velocity. Action:
    commanded acceleration, shape ``(1,)``, unbounded (not clipped). Dynamics
    :func:`advance`; outcome rule :func:`judge` (boundary failure, then success, then
    timeout). Reward 1.0 on the success step, else 0.0. The env truncates itself at
    ``max_steps`` (register it without a ``TimeLimit`` wrapper).

    ``info`` on every step: ``x`` (true position), ``v``, ``streak``, ``is_success``,
    ``steps``; on the final step also ``outcome`` and, with ``record_trace``, ``trace``
    (``{"t", "x", "v"}`` lists including the reset state at ``t = 0``).

    Args:
        max_steps: action budget (1..40; 30 actions = the seed's six-second budget).
        dt: hold time per action (s).
        noise: position-error bound eta (m).
        dynamics: ``"lab"``, ``"nominal"`` or ``"changed"`` (see :data:`DYNAMICS`).
        record_trace: attach the sampled trajectory to the final step's ``info``.

    The seed lab's "Episode 1" (index 0 of seed 7): the damped controller times out at 6 s.

    >>> from evalband.policies.reach1d import damped
    >>> env = Reach1DEnv()
    >>> obs, info = env.reset(seed=episode_condition_seed(7, 0))
    >>> done = False
    >>> while not done:
    ...     obs, reward, terminated, truncated, info = env.step(damped(obs))
    ...     done = terminated or truncated
    >>> info["outcome"], info["steps"] * env.dt, round(info["x"], 6)
    ('timeout', 6.0, 0.125754)
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        max_steps: int = 30,
        dt: float = 0.2,
        noise: float = 0.02,
        dynamics: str = "lab",
        record_trace: bool = False,
    ) -> None:
        super().__init__()
        self.max_steps = _check_max_steps(max_steps)
        self.dt = _check_dt(dt)
        self.noise = _check_noise(noise)
        self.dynamics = check_choice(dynamics, "dynamics", DYNAMICS)
        self.record_trace = bool(record_trace)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)
        self.action_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
        self._next_seed = DEFAULT_SEED
        self._active = False
        self._condition_seed = DEFAULT_SEED
        self._ep_noise = self.noise
        self._ep_dynamics = self.dynamics
        self._ep_max_steps = self.max_steps
        self._x = np.zeros(1)
        self._v = np.zeros(1)
        self._gain = np.ones(1)
        self._disturbance = np.zeros(1)
        self._errors = np.zeros(N_POSITION_ERRORS)
        self._streak = np.zeros(1, dtype=np.int64)
        self._steps = 0
        self._trace: dict[str, list[float]] = {"t": [], "x": [], "v": []}

    @property
    def condition_seed(self) -> int:
        """The LCG state that fixed the current episode's conditions."""
        return self._condition_seed

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        """Start the episode whose conditions the LCG state ``seed`` fixes.

        Args:
            seed: the condition seed, an LCG state in ``[0, 2**32)``
                (:func:`episode_condition_seed`). ``None`` continues the batch: the
                episode after the previous one (the first call uses the default lab's
                episode 0, seed 7).
            options: per-episode overrides among :data:`OPTION_KEYS`.

        Returns:
            The first observation and an info dict with the condition (``condition_seed``,
            ``x0``, ``v0``, ``gain``, ``disturbance``, ``dynamics``, ``noise``, ``max_steps``).

        Raises:
            InvalidParameterError: a bad seed, an unknown option key or a bad option value.
        """
        condition_seed = self._next_seed if seed is None else _check_state(seed, "seed")
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTION_KEYS))
        if unknown:
            raise InvalidParameterError(
                f"unknown reset option(s) {', '.join(map(repr, unknown))} for {ENV_ID}; "
                f"allowed keys: {', '.join(OPTION_KEYS)}"
            )
        dynamics = check_choice(opts.get("dynamics", self.dynamics), "dynamics", DYNAMICS)
        noise = _check_noise(opts.get("noise", self.noise))
        max_steps = _check_max_steps(opts.get("max_steps", self.max_steps))
        super().reset(seed=condition_seed)

        cond = conditions([condition_seed], dynamics=dynamics)
        self._condition_seed = condition_seed
        self._next_seed = lcg_jump(condition_seed, DRAWS_PER_EPISODE)
        self._ep_dynamics, self._ep_noise, self._ep_max_steps = dynamics, noise, max_steps
        self._x, self._v = cond.x0.copy(), cond.v0.copy()
        self._gain, self._disturbance = cond.gain, cond.disturbance
        self._errors = cond.errors[0]
        self._streak = np.zeros(1, dtype=np.int64)
        self._steps = 0
        self._active = True
        self._trace = {"t": [0.0], "x": [float(self._x[0])], "v": [float(self._v[0])]}
        info = {
            "condition_seed": condition_seed,
            "x0": float(cond.x0[0]),
            "v0": float(cond.v0[0]),
            "gain": float(cond.gain[0]),
            "disturbance": float(cond.disturbance[0]),
            "dynamics": dynamics,
            "noise": noise,
            "max_steps": max_steps,
        }
        return self._observation(), info

    def step(
        self, action: NDArray[np.float64]
    ) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        """Hold the commanded acceleration for ``dt`` and judge the new sample.

        Args:
            action: commanded acceleration, one number (shape ``(1,)``); not clipped.

        Returns:
            ``(obs, reward, terminated, truncated, info)``.

        Raises:
            InvalidInputError: the action is not one finite number.
            EvalbandError: ``step`` after the episode ended (call ``reset``).
        """
        if not self._active:
            raise EvalbandError(
                f"{ENV_ID}: step() called with no running episode; call reset() first"
            )
        u = _actions(action, 1, "action")
        self._x, self._v = advance(self._x, self._v, u, self._gain, self._disturbance, self.dt)
        self._steps += 1
        self._streak, code_arr = judge(
            self._x, self._v, self._streak, self._steps, self._ep_max_steps
        )
        code = int(code_arr[0])
        x, v = float(self._x[0]), float(self._v[0])
        info: dict[str, Any] = {
            "x": x,
            "v": v,
            "streak": int(self._streak[0]),
            "is_success": code == SUCCESS,
            "steps": self._steps,
        }
        if self.record_trace:
            self._trace["t"].append(self._steps * self.dt)
            self._trace["x"].append(x)
            self._trace["v"].append(v)
        terminated = code in (SUCCESS, FAILURE)
        truncated = code == TIMEOUT
        if code != RUNNING:
            self._active = False
            info["outcome"] = OUTCOME_NAMES[code]
            if self.record_trace:
                info["trace"] = {key: list(values) for key, values in self._trace.items()}
        reward = 1.0 if code == SUCCESS else 0.0
        return self._observation(), reward, terminated, truncated, info

    def _observation(self) -> Obs:
        # The k-th action sees errors[k]; after the 40th action no error is left and the
        # (never acted-upon) final observation carries the true position.
        k = self._steps
        error = self._errors[k : k + 1] if k < N_POSITION_ERRORS else np.zeros(1)
        x_measured = self._x + self._ep_noise * error
        return np.array([x_measured[0], self._v[0]], dtype=np.float64)


def _actions(raw: object, n: int, what: str) -> NDArray[np.float64]:
    """Coerce a policy's output to ``n`` finite commands, shape ``(n,)``."""
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what} must be numeric commanded acceleration(s), got {type(raw).__name__}: {exc}"
        ) from None
    allowed = {(n,), (n, 1)} | ({(), (1, 1)} if n == 1 else set())
    if arr.shape not in allowed:
        expected = "shape (1,)" if n == 1 else f"shape ({n}, 1) or ({n},)"
        raise InvalidInputError(f"{what} must have {expected}, got shape {arr.shape}")
    flat = arr.reshape(n)
    if not np.all(np.isfinite(flat)):
        raise InvalidInputError(f"{what} must be finite, got {flat[~np.isfinite(flat)][0]!r}")
    return flat


@dataclass(frozen=True)
class Reach1DBatchResult:
    """Per-episode results of :func:`rollout_batch` (one entry per condition seed).

    Attributes:
        condition_seeds: the episodes' condition seeds.
        outcome: ``"success"``, ``"failure"`` or ``"timeout"``.
        steps: actions taken.
        terminated: success or boundary failure.
        truncated: timeout.
        sim_time_s: ``steps * dt``.
        final_x: true position at the last sample.
        final_v: velocity at the last sample.
        policy_calls: number of policy calls (one per lockstep step).
        policy_seconds: total seconds spent inside the policy.
        wall_seconds: total seconds of the call.
    """

    condition_seeds: NDArray[np.uint64]
    outcome: NDArray[np.str_]
    steps: NDArray[np.int64]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    sim_time_s: NDArray[np.float64]
    final_x: NDArray[np.float64]
    final_v: NDArray[np.float64]
    policy_calls: int
    policy_seconds: float
    wall_seconds: float

    def __len__(self) -> int:
        return int(self.outcome.shape[0])

    @property
    def time_to_success_s(self) -> NDArray[np.float64]:
        """``sim_time_s`` for successes, NaN otherwise (its own denominator)."""
        return np.where(self.outcome == "success", self.sim_time_s, np.nan)

    def counts(self) -> dict[str, int]:
        """Episodes per outcome.

        >>> from evalband.policies.reach1d import baseline
        >>> rollout_batch(baseline, episode_condition_seeds(7, 64)).counts()
        {'success': 9, 'failure': 7, 'timeout': 48}
        """
        return {name: int(np.sum(self.outcome == name)) for name in OUTCOME_NAMES[1:]}


def _per_episode_noise(noise: float | ArrayLike, size: int) -> NDArray[np.float64]:
    if isinstance(noise, numbers.Real) and not isinstance(noise, bool):
        return np.full(size, _check_noise(noise))
    arr = np.asarray(noise, dtype=np.float64).reshape(-1)
    if arr.shape[0] != size:
        raise InvalidParameterError(
            f"noise must be one number or one per episode ({size}), got {arr.shape[0]} values"
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        raise InvalidParameterError(f"noise must be finite bounds in m >= 0, got {arr[bad][0]!r}")
    return arr


def _per_episode_max_steps(max_steps: int | ArrayLike, size: int) -> NDArray[np.int64]:
    if isinstance(max_steps, numbers.Integral) and not isinstance(max_steps, bool):
        return np.full(size, _check_max_steps(max_steps), dtype=np.int64)
    raw = np.asarray(max_steps).reshape(-1)
    if raw.shape[0] != size:
        raise InvalidParameterError(
            f"max_steps must be one number or one per episode ({size}), got {raw.shape[0]} values"
        )
    return np.asarray([_check_max_steps(m) for m in raw.tolist()], dtype=np.int64)


def rollout_batch(
    policy: Policy,
    condition_seeds: ArrayLike | Reach1DConditions,
    *,
    max_steps: int | ArrayLike = 30,
    dt: float = 0.2,
    noise: float | ArrayLike = 0.02,
    dynamics: str | Sequence[str] | NDArray[np.str_] | None = None,
) -> Reach1DBatchResult:
    """Roll out ``policy`` on many episodes in lockstep with numpy.

    Every step calls ``policy(obs_batch)`` ONCE on the stacked observations
    ``[x + noise * errors[k], v]`` of the still-active episodes (shape ``(B_active, 2)``) and
    expects ``(B_active, 1)`` or ``(B_active,)`` commands; ended episodes freeze (their
    rows are dropped from the working arrays). Dynamics and outcome rule are the env's own
    (:func:`advance`, :func:`judge`), so outcomes, steps and flags equal
    :class:`Reach1DEnv`'s episode by episode (and the reaching-lab seed's program).

    Args:
        policy: vectorised controller ``obs_batch -> actions``.
        condition_seeds: one LCG state per episode (:func:`episode_condition_seeds`), or
            precomputed :func:`conditions` (to share one draw between several policies).
        max_steps: action budget, one or per episode (1..40).
        dt: hold time per action (s).
        noise: position-error bound, one or per episode.
        dynamics: :data:`DYNAMICS` option, one or per episode; ``None`` means ``"lab"``
            for seeds and must stay ``None`` with precomputed conditions (they carry it).

    Returns:
        Per-episode outcomes plus policy-call totals.

    Raises:
        InvalidInputError: the policy returned the wrong shape or a non-finite command.

    The seed's default panel (seed 7, 64 episodes, six-second budget):

    >>> from evalband.policies.reach1d import baseline, damped
    >>> seeds = episode_condition_seeds(7, 64)
    >>> rollout_batch(damped, seeds).counts()
    {'success': 50, 'failure': 0, 'timeout': 14}
    >>> r = rollout_batch(baseline, seeds)
    >>> str(r.outcome[0]), float(r.sim_time_s[0])  # the lab's "Episode 1"
    ('failure', 2.6)
    """
    started = time.perf_counter()
    if isinstance(condition_seeds, Reach1DConditions):
        if dynamics is not None:
            raise InvalidParameterError(
                "dynamics is fixed by the Reach1DConditions passed as condition_seeds; "
                "leave dynamics=None or pass seeds instead"
            )
        cond = condition_seeds
    else:
        cond = conditions(condition_seeds, dynamics="lab" if dynamics is None else dynamics)
    size = len(cond)
    step_dt = _check_dt(dt)
    noise_all = _per_episode_noise(noise, size)
    budget_all = _per_episode_max_steps(max_steps, size)
    errors_t = cond.errors.T  # (40, B): one contiguous row per action index
    if not errors_t.flags.c_contiguous:
        errors_t = np.ascontiguousarray(errors_t)

    code_out = np.zeros(size, dtype=np.int8)
    steps_out = np.zeros(size, dtype=np.int64)
    x_out = cond.x0.copy()
    v_out = cond.v0.copy()

    # Working arrays hold the still-active episodes only; idx maps them to batch rows.
    # Per-episode noise/budget arrays are carried only when they actually vary.
    idx = np.arange(size)
    x, v = cond.x0, cond.v0
    gain, disturbance = cond.gain, cond.disturbance
    streak = np.zeros(size, dtype=np.int64)
    eta: float | NDArray[np.float64] = noise_all
    budget: int | NDArray[np.int64] = budget_all
    if size and bool(np.all(noise_all == noise_all[0])):
        eta = float(noise_all[0])
    if size and bool(np.all(budget_all == budget_all[0])):
        budget = int(budget_all[0])
    calls, policy_seconds = 0, 0.0
    horizon = int(budget_all.max()) if size else 0
    for k in range(horizon):
        n = idx.size
        error = errors_t[k] if n == size else errors_t[k].take(idx)
        obs = np.empty((n, 2), dtype=np.float64)
        obs[:, 0] = x + eta * error
        obs[:, 1] = v
        t0 = time.perf_counter()
        raw = policy(obs)
        policy_seconds += time.perf_counter() - t0
        calls += 1
        u = _actions(raw, n, "policy output")
        x, v = advance(x, v, u, gain, disturbance, step_dt)
        streak, code = judge(x, v, streak, k + 1, budget)
        done = code != RUNNING
        if not done.any():
            continue
        ended = idx[done]
        code_out[ended] = code[done]
        steps_out[ended] = k + 1
        x_out[ended] = x[done]
        v_out[ended] = v[done]
        rows = np.flatnonzero(~done)
        if rows.size == 0:
            break
        idx, x, v, streak = idx.take(rows), x.take(rows), v.take(rows), streak.take(rows)
        gain, disturbance = gain.take(rows), disturbance.take(rows)
        if isinstance(eta, np.ndarray):
            eta = eta.take(rows)
        if isinstance(budget, np.ndarray):
            budget = budget.take(rows)

    names = np.asarray(OUTCOME_NAMES, dtype="<U7")
    return Reach1DBatchResult(
        condition_seeds=cond.condition_seeds,
        outcome=names[code_out],
        steps=steps_out,
        terminated=(code_out == SUCCESS) | (code_out == FAILURE),
        truncated=code_out == TIMEOUT,
        sim_time_s=(steps_out * step_dt).astype(np.float64),
        final_x=x_out,
        final_v=v_out,
        policy_calls=calls,
        policy_seconds=policy_seconds,
        wall_seconds=time.perf_counter() - started,
    )
