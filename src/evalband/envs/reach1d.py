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

from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from evalband._util.validate import check_choice
from evalband.envs._lcg import _check_state, lcg_jump
from evalband.envs._reach1d_batch import (
    Policy,
    Reach1DBatchResult,
    as_commands,
    batch_rollout_specs,
    rollout_batch,
)
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
    SUCCESS_REWARD,
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
from evalband.errors import EvalbandError, InvalidParameterError

__all__ = [
    "ENV_ID",
    "OPTION_KEYS",
    "Reach1DEnv",
    "Reach1DBatchResult",
    "rollout_batch",
    "batch_rollout_specs",
    "Policy",
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
    "FAILURE",
    "RUNNING",
    "SUCCESS",
    "TIMEOUT",
    "as_commands",
]

ENV_ID = "evalband/Reach1D-v0"
"""The Gymnasium id the env is registered under (on ``import evalband.envs``)."""
OPTION_KEYS = ("dynamics", "noise", "max_steps")
"""Keys ``reset(options=...)`` accepts: per-episode overrides of the constructor settings."""

Obs = NDArray[np.float64]


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
    reset_options = OPTION_KEYS  # the env contract: reset options it reads

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

    @staticmethod
    def condition_seed(seed: int, cell: str, episode: int) -> int:
        """Panel hook: the condition seed of ``episode`` in a panel with seed ``seed``.

        The lab's own stream, :func:`episode_condition_seed` ``(seed, episode)``: episode
        ``i``'s conditions are the seed program's ``i``-th batch row (prefix-stable). The
        cell is deliberately ignored: every cell of a panel (dynamics, noise, budget) sees
        the same starts and error sequences, as the seed's presets and its nominal vs
        changed-dynamics batches do, so episodes pair across cells too.

        Args:
            seed: the panel seed, an LCG state in ``[0, 2**32)`` (the lab uses 7).
            cell: the cell key (unused: conditions are matched across cells).
            episode: 0-based episode index.

        Returns:
            The LCG state for ``reset(seed=...)``.

        >>> Reach1DEnv.condition_seed(7, "dynamics=changed", 0)
        7
        """
        del cell
        return episode_condition_seed(seed, episode)

    @staticmethod
    def batch_rollout(
        policy: Policy, specs: Sequence[Any], env_kwargs: Mapping[str, Any], budget_steps: int
    ) -> dict[str, Any]:
        """Runner hook: the episodes of ``specs`` in lockstep (:func:`batch_rollout_specs`).

        Args:
            policy: vectorised policy ``(B, 2) -> (B, 1)``.
            specs: episode specs with ``condition_seed`` and ``options``.
            env_kwargs: constructor keyword arguments of the panel's env.
            budget_steps: the panel's action budget.

        Returns:
            Per-spec ``outcome``, ``terminated``, ``truncated``, ``steps``, ``sim_time_s``,
            ``metrics`` (per-spec reward metrics by name) and per-call ``policy_call_ms``.

        >>> from types import SimpleNamespace as Spec
        >>> from evalband.policies.reach1d import baseline
        >>> out = Reach1DEnv.batch_rollout(baseline, [Spec(condition_seed=7, options={})], {}, 30)
        >>> out["outcome"], out["sim_time_s"]
        (['failure'], [2.6])
        """
        return batch_rollout_specs(policy, specs, env_kwargs, budget_steps)

    @property
    def current_condition_seed(self) -> int:
        """The LCG state that fixed the current episode's conditions."""
        return self._condition_seed

    def trace_point(self) -> dict[str, float]:
        """The trace hook: the true position ``x`` (m) and velocity ``v`` (m/s) now.

        >>> env = Reach1DEnv()
        >>> _ = env.reset(seed=7)
        >>> sorted(env.trace_point())
        ['v', 'x']
        """
        return {"x": float(self._x[0]), "v": float(self._v[0])}

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
        self._trace = {"t": [0.0], **{k: [p] for k, p in self.trace_point().items()}}
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
        u = as_commands(action, 1, "action")
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
            for key, value in self.trace_point().items():
                self._trace[key].append(value)
        terminated = code in (SUCCESS, FAILURE)
        truncated = code == TIMEOUT
        if code != RUNNING:
            self._active = False
            info["outcome"] = OUTCOME_NAMES[code]
            if self.record_trace:
                info["trace"] = {key: list(values) for key, values in self._trace.items()}
        reward = SUCCESS_REWARD if code == SUCCESS else 0.0
        return self._observation(), reward, terminated, truncated, info

    def _observation(self) -> Obs:
        # The k-th action sees errors[k]; after the 40th action no error is left and the
        # (never acted-upon) final observation carries the true position.
        k = self._steps
        error = self._errors[k : k + 1] if k < N_POSITION_ERRORS else np.zeros(1)
        x_measured = self._x + self._ep_noise * error
        return np.array([x_measured[0], self._v[0]], dtype=np.float64)
