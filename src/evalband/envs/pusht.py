"""``evalband/PushT-v0``: push a T-shaped block to a fixed target pose, on MuJoCo.

The PushT harness seed (``000_b66faff61603906b``, "Evaluation Is Hard") evaluates behaviour
cloning policies on a MuJoCo PushT task whose env it uses but does not list; this is our
own build of that task. A planar T (joints ``tee_x``, ``tee_y``, ``tee_yaw``) is pushed by a
round pusher (``pusher_x``, ``pusher_y``, position-controlled) toward the fixed target pose
:data:`~evalband.envs.pusht_model.TARGET` (the origin, yaw 0). Geometry, start
distribution and success rule live in :mod:`evalband.envs.pusht_model` (no MuJoCo).

* Action: the pusher's commanded position ``(x, y)`` in metres, clipped to
  ``[-WORKSPACE, WORKSPACE]``; held for ``dt`` seconds (``dt / TIMESTEP`` physics steps).
* Observation (float64, :data:`OBS_DIM`, names :data:`OBS_NAMES`): pusher ``x, y``, block
  ``x, y, cos yaw, sin yaw`` and the constant target ``x, y, cos yaw, sin yaw``.
* Reset: ``reset(seed=s, options={"start": "train" | "held_out"})``;
  ``np.random.default_rng(s)`` draws the start (:func:`sample_start`): the block 0.10-0.24 m
  from the target (``train``) or 0.24-0.30 m (``held_out``), uniform yaw, the pusher more than
  0.13 m from the block. Same seed, same episode.
* Outcomes: ``success`` (terminated) when the block is within ``pos_tol`` and ``yaw_tol`` of
  the target; ``failure`` (terminated) if the block's centroid leaves the table; ``timeout``
  (truncated) after ``max_steps`` actions. The env truncates itself: it is registered
  without a ``TimeLimit`` wrapper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from evalband._util.validate import check_choice
from evalband.envs.pusht_model import (
    ACT_DIM,
    ENV_ID,
    OBS_DIM,
    OBS_NAMES,
    STARTS,
    TABLE_HALF,
    TARGET,
    TIMESTEP,
    WORKSPACE,
    mjcf,
    pose_success,
    sample_start,
)
from evalband.errors import EvalbandError, InvalidInputError, InvalidParameterError

__all__ = [
    "ENV_ID",
    "OPTION_KEYS",
    "TRACE_KEYS",
    "OBS_DIM",
    "ACT_DIM",
    "OBS_NAMES",
    "PushTEnv",
    "record_traces",
]

OPTION_KEYS = ("start",)
"""Keys ``reset(options=...)`` accepts."""
TRACE_KEYS = ("t", "pusher_x", "pusher_y", "tee_x", "tee_y", "tee_yaw")
"""Keys of a trace: sim time (s), pusher position (m), block pose (m, m, rad)."""

Obs = NDArray[np.float64]
_TARGET_OBS = (TARGET[0], TARGET[1], math.cos(TARGET[2]), math.sin(TARGET[2]))


def _positive(value: float, name: str) -> float:
    out = float(value)
    if not math.isfinite(out) or out <= 0.0:
        raise InvalidParameterError(f"{name} must be a positive finite number, got {value!r}")
    return out


class PushTEnv(gym.Env[NDArray[np.float64], NDArray[np.float64]]):
    """Push a T-shaped block to a fixed target pose with a round pusher (MuJoCo).

    ``info`` on every step: ``is_success``, ``steps``, ``tee_pose`` ``(x, y, yaw)``,
    ``pos_error`` (m), ``yaw_error`` (rad); on the last step also ``outcome`` and, with
    ``record_trace``, ``trace``: lists ``t, pusher_x, pusher_y, tee_x, tee_y, tee_yaw``
    from the reset state (``t = 0``) to the last step.

    Args:
        max_steps: action budget; the env truncates itself after this many actions.
        dt: control period (s), a whole number of :data:`TIMESTEP` physics steps.
        pos_tol: success radius around the target position (m).
        yaw_tol: success tolerance on the yaw (rad).
        record_trace: attach the trajectory to the final step's ``info``.
        render_mode: ``"rgb_array"`` to draw frames with :meth:`render` (a top-down picture,
            see :func:`evalband.envs._pusht_render.render_pusht`); ``None`` draws nothing.
        render_size: the frame's width and height in pixels.

    >>> env = PushTEnv(max_steps=3, record_trace=True)
    >>> obs, info = env.reset(seed=0, options={"start": "held_out"})
    >>> obs.shape, info["start"]
    ((10,), 'held_out')
    >>> for _ in range(3):
    ...     obs, reward, terminated, truncated, info = env.step(obs[:2])
    >>> truncated, info["outcome"], len(info["trace"]["tee_x"])
    (True, 'timeout', 4)
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}
    reset_options = OPTION_KEYS  # the env contract: reset options it reads

    def __init__(
        self,
        max_steps: int = 200,
        dt: float = 0.1,
        pos_tol: float = 0.02,
        yaw_tol: float = 0.2,
        record_trace: bool = False,
        render_mode: str | None = None,
        render_size: int = 96,
    ) -> None:
        super().__init__()
        if render_mode not in (None, "rgb_array"):
            raise InvalidParameterError(
                f"render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.render_size = int(render_size)
        if isinstance(max_steps, bool) or int(max_steps) != max_steps or max_steps < 1:
            raise InvalidParameterError(f"max_steps must be a whole number >= 1, got {max_steps!r}")
        self.max_steps = int(max_steps)
        self.dt = _positive(dt, "dt")
        substeps = round(self.dt / TIMESTEP)
        if substeps < 1 or abs(substeps * TIMESTEP - self.dt) > 1e-9:
            raise InvalidParameterError(
                f"dt must be a whole number of {TIMESTEP} s physics steps, got {dt!r}"
            )
        self.substeps = int(substeps)
        self.pos_tol = _positive(pos_tol, "pos_tol")
        self.yaw_tol = _positive(yaw_tol, "yaw_tol")
        self.record_trace = bool(record_trace)
        self.model = mujoco.MjModel.from_xml_string(mjcf())
        self.data = mujoco.MjData(self.model)
        names = ("tee_x", "tee_y", "tee_yaw", "pusher_x", "pusher_y")
        addresses = [int(self.model.joint(name).qposadr[0]) for name in names]
        if addresses != list(range(5)):  # the model lists the joints in this order
            raise EvalbandError(f"unexpected PushT joint layout {addresses}")
        # Positions stay within the table (plus one step's travel); cos/sin within [-1, 1].
        high = np.full(OBS_DIM, 2.0 * TABLE_HALF)
        self.observation_space = spaces.Box(-high, high, dtype=np.float64)
        self.action_space = spaces.Box(-WORKSPACE, WORKSPACE, shape=(ACT_DIM,), dtype=np.float64)
        self._steps = 0
        self._active = False
        self._start = "train"
        self._trace: dict[str, list[float]] = {key: [] for key in TRACE_KEYS}

    # ------------------------------------------------------------------ state access
    def set_state(self, tee_xy: Any, tee_yaw: float, pusher_xy: Any) -> Obs:
        """Place the block and the pusher (at rest) and return the observation.

        Resets the simulation state first; the pusher's actuators hold it where it is put.
        The episode's step count restarts at 0.

        >>> env = PushTEnv()
        >>> env.reset(seed=1)[0].shape
        (10,)
        >>> _ = env.set_state((0.0, 0.0), 0.0, (0.2, 0.2))
        >>> env.step(np.array([0.2, 0.2]))[4]["outcome"]
        'success'
        """
        mujoco.mj_resetData(self.model, self.data)
        qpos = self.data.qpos
        qpos[0], qpos[1] = float(tee_xy[0]), float(tee_xy[1])
        qpos[2] = float(tee_yaw)
        qpos[3], qpos[4] = float(pusher_xy[0]), float(pusher_xy[1])
        self.data.ctrl[:] = qpos[3:5]
        mujoco.mj_forward(self.model, self.data)
        self._steps = 0
        self._active = True
        self._trace = {key: [] for key in TRACE_KEYS}
        self._record()
        return self._observation()

    def tee_pose(self) -> tuple[float, float, float]:
        """The block's current ``(x, y, yaw)``."""
        qpos = self.data.qpos
        return float(qpos[0]), float(qpos[1]), float(qpos[2])

    def trace_point(self) -> dict[str, float]:
        """The trace hook: pusher position and block pose now (:data:`TRACE_KEYS` but ``t``).

        >>> env = PushTEnv()
        >>> _ = env.reset(seed=0)
        >>> list(env.trace_point()) == list(TRACE_KEYS[1:])
        True
        """
        q = self.data.qpos
        return {"pusher_x": float(q[3]), "pusher_y": float(q[4]), "tee_x": float(q[0]),
                "tee_y": float(q[1]), "tee_yaw": float(q[2])}

    def pusher_position(self) -> tuple[float, float]:
        """The pusher's current ``(x, y)``."""
        qpos = self.data.qpos
        return float(qpos[3]), float(qpos[4])

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        """Start an episode drawn from ``np.random.default_rng(seed)``.

        Args:
            seed: the condition seed; ``None`` continues the env's own generator.
            options: ``{"start": "train" | "held_out"}`` (default ``train``).

        Returns:
            The first observation and ``info`` with ``start``, ``tee_start`` ``(x, y, yaw)``
            and ``pusher_start`` ``(x, y)``.

        Raises:
            InvalidParameterError: an unknown option key or start value.
        """
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(OPTION_KEYS))
        if unknown:
            raise InvalidParameterError(
                f"unknown reset option(s) {', '.join(map(repr, unknown))} for {ENV_ID}; "
                f"allowed keys: {', '.join(OPTION_KEYS)}"
            )
        start = check_choice(str(opts.get("start", "train")), "start", STARTS)
        super().reset(seed=seed)
        rng = np.random.default_rng(seed) if seed is not None else self.np_random
        tee, yaw, pusher = sample_start(rng, start)
        self._start = start
        obs = self.set_state(tee, yaw, pusher)
        info = {
            "start": start,
            "tee_start": (float(tee[0]), float(tee[1]), yaw),
            "pusher_start": (float(pusher[0]), float(pusher[1])),
        }
        return obs, info

    def step(
        self, action: NDArray[np.float64]
    ) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        """Command the pusher to ``action`` (clipped to the workspace) for ``dt`` seconds.

        Returns:
            ``(obs, reward, terminated, truncated, info)``; reward 1.0 on success, else 0.0.

        Raises:
            InvalidInputError: the action is not two finite numbers.
            EvalbandError: ``step`` with no running episode (call ``reset``).
        """
        if not self._active:
            raise EvalbandError(f"{ENV_ID}: step() called with no running episode; call reset()")
        command = np.asarray(action, dtype=np.float64).reshape(-1)
        if command.shape != (ACT_DIM,) or not np.isfinite(command).all():
            raise InvalidInputError(
                f"{ENV_ID} action must be 2 finite numbers (pusher x, y in m), got {action!r}"
            )
        np.clip(command, -WORKSPACE, WORKSPACE, out=command)
        self.data.ctrl[:] = command
        mujoco.mj_step(self.model, self.data, nstep=self.substeps)
        self._steps += 1
        self._record()
        x, y, yaw = self.tee_pose()
        success = pose_success(x, y, yaw, self.pos_tol, self.yaw_tol)
        fell = abs(x) > TABLE_HALF or abs(y) > TABLE_HALF
        terminated = success or fell
        truncated = not terminated and self._steps >= self.max_steps
        info: dict[str, Any] = {
            "is_success": success,
            "steps": self._steps,
            "tee_pose": (x, y, yaw),
            "pos_error": math.hypot(x - TARGET[0], y - TARGET[1]),
            "yaw_error": abs(math.remainder(yaw - TARGET[2], 2.0 * math.pi)),
        }
        if terminated or truncated:
            self._active = False
            info["outcome"] = "success" if success else "failure" if fell else "timeout"
            if self.record_trace:
                info["trace"] = {key: list(values) for key, values in self._trace.items()}
        return self._observation(), 1.0 if success else 0.0, terminated, truncated, info

    def render(self) -> NDArray[np.uint8] | None:
        """The current frame, ``(render_size, render_size, 3)`` uint8 RGB (``rgb_array`` mode).

        >>> env = PushTEnv(render_mode="rgb_array", render_size=64)
        >>> _ = env.reset(seed=0)
        >>> env.render().shape
        (64, 64, 3)
        """
        if self.render_mode != "rgb_array":
            return None
        from evalband.envs._pusht_render import render_pusht

        return render_pusht(self.tee_pose(), self.pusher_position(), self.render_size)

    # ------------------------------------------------------------------ internals
    def _observation(self) -> Obs:
        q = self.data.qpos
        return np.array(
            [q[3], q[4], q[0], q[1], math.cos(q[2]), math.sin(q[2]), *_TARGET_OBS],
            dtype=np.float64,
        )

    def _record(self) -> None:
        if not self.record_trace:
            return
        trace = self._trace
        trace["t"].append(self._steps * self.dt)
        for key, value in self.trace_point().items():
            trace[key].append(value)


def record_traces(
    policy: Callable[[Obs], Any],
    seeds: Sequence[int],
    *,
    start: str = "train",
    **env_kwargs: Any,
) -> list[dict[str, Any]]:
    """Play one episode per seed with ``record_trace`` on and return the traces for plots.

    Each trace is a dict with ``seed``, ``start``, ``outcome``, ``steps`` and the lists of
    :data:`TRACE_KEYS` (pusher and block poses from the reset state to the last step).

    Args:
        policy: a callable ``obs -> action``.
        seeds: reset seeds, one episode each.
        start: ``"train"`` or ``"held_out"``.
        **env_kwargs: :class:`PushTEnv` arguments (``max_steps``, ``pos_tol``, ...).

    >>> hold = lambda obs: obs[:2]
    >>> [t["outcome"] for t in record_traces(hold, [0, 1], max_steps=2)]
    ['timeout', 'timeout']
    """
    env = PushTEnv(**{**env_kwargs, "record_trace": True})
    traces = []
    for seed in seeds:
        obs, _ = env.reset(seed=int(seed), options={"start": start})
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs))
            if terminated or truncated:
                break
        traces.append({"seed": int(seed), "start": start, "outcome": info["outcome"],
                       "steps": info["steps"], **info["trace"]})
    return traces
