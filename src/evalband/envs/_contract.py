"""The environment contract: what evalband uses of an env, written down as Protocols.

An env is anything with Gymnasium's ``reset``/``step``/``close`` (:class:`EvalEnv`). The rest
is optional and found by attribute: a control period (:func:`control_dt`), a condition-seed
hook (:class:`ConditionSeeded`), a batch simulator (:class:`BatchRollout`), declared reset
options (:class:`DeclaresResetOptions`), ``render`` and a trace point (:class:`Traces`:
what the runner records of a few episodes per cell for the report's trace plots).
``docs/extending.md`` explains each.

The control period is the time between two actions. It is read, in this order, from the
panel's ``control_dt``; the env's ``control_dt``; the simulator: MuJoCo's ``frame_skip *
model.opt.timestep`` (on the env or on a simulator it holds, e.g. gymnasium-robotics'
PointMaze keeps its MuJoCo env as ``point_env``) and dm_control's ``control_timestep()``
(shimmy keeps the dm_control env as ``_env``); the env's ``dt`` (a property or an attribute,
gymnasium's MuJoCo and Fetch envs: the same product); ``1 / metadata["render_fps"]``, with a
note, since a rendering rate need not be the control rate (dm_control's cartpole renders at
10 fps and steps every 0.01 s). When ``dt`` and ``render_fps`` disagree and ``1 / render_fps``
is a whole number of ``dt`` steps, ``dt`` is the physics step and the env sub-steps per action
(gym-pusht, a pymunk env: ``dt = 0.01``, 10 Hz control), so ``1 / render_fps`` is used.
:func:`simulator_time` reads the simulator's own clock (MuJoCo's ``data.time``), which
``check-env`` compares with the steps played times the period.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EvalEnv",
    "ConditionSeeded",
    "BatchRollout",
    "DeclaresResetOptions",
    "Renders",
    "Traces",
    "ControlPeriod",
    "control_dt",
    "simulator_time",
    "unwrapped",
]


@runtime_checkable
class EvalEnv(Protocol):
    """What the runner calls on every env (Gymnasium's API).

    ``reset(seed=condition_seed, options=...)`` must fix the episode's initial state from the
    seed (the same seed, the same initial observation); ``step(action)`` returns
    ``(obs, reward, terminated, truncated, info)``; ``close()`` is called once when the run
    is done with the env, also after an error.
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode from the condition ``seed`` with reset ``options``."""
        ...

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Apply one action for one control period."""
        ...

    def close(self) -> None:
        """Free the simulator (windows, renderers, processes)."""
        ...


@runtime_checkable
class ConditionSeeded(Protocol):
    """An env class whose episode conditions come from its own seed stream.

    ``condition_seed(panel_seed, cell, episode) -> int`` (a static method) replaces
    :func:`evalband.panel.default_condition_seed`.
    """

    @staticmethod
    def condition_seed(seed: int, cell: str, episode: int) -> int:
        """The seed passed to ``reset`` for ``episode`` of ``cell``."""
        ...


@runtime_checkable
class BatchRollout(Protocol):
    """An env class with its own batch simulator (several episodes per call).

    ``batch_rollout(policy, specs, env_kwargs, budget_steps)`` returns a mapping of per-spec
    lists ``outcome``, ``terminated``, ``truncated``, ``steps``, ``sim_time_s``, a
    ``metrics`` mapping of per-spec lists by name (``return``, ``reward_max``,
    ``reward_final``: the sum, largest and last of the episode's rewards), and optionally
    ``policy_call_ms``, equal to what one-at-a-time play would record. The runner does not
    use a hook that returns no ``metrics`` (it plays those episodes one at a time).
    """

    @staticmethod
    def batch_rollout(
        policy: Any, specs: Sequence[Any], env_kwargs: Mapping[str, Any], budget_steps: int
    ) -> Mapping[str, Any]:
        """Play ``specs`` together; one entry per spec in each list."""
        ...


@runtime_checkable
class DeclaresResetOptions(Protocol):
    """An env that lists the reset-option keys it reads (``reset_options``).

    A factor on a declared key is trusted to take effect even when it leaves the initial
    observation unchanged (a dynamics option); any other option factor must change it.
    """

    reset_options: Sequence[str]


@runtime_checkable
class Renders(Protocol):
    """An env that can draw its state (``render_mode`` chosen at construction)."""

    def render(self) -> Any:
        """An RGB frame or ``None``."""
        ...


@runtime_checkable
class Traces(Protocol):
    """An env that can say where things are now, for the run's stored traces.

    ``trace_point()`` returns a few named finite numbers (positions, velocities) of the
    current state; the runner calls it after ``reset`` and after every step of the first
    episodes of each cell (:mod:`evalband.run._trace`) and stores the series, decimated,
    with the episode (``extra["trace"]``), so reports draw them without running anything.
    """

    def trace_point(self) -> Mapping[str, float]:
        """The current state's named numbers (the same names every call)."""
        ...


@dataclass(frozen=True)
class ControlPeriod:
    """The control period and where it came from.

    Attributes:
        dt: seconds between two actions (``None`` when the env gives no clue).
        source: ``panel control_dt``, ``control_dt``, ``dt``, ``frame_skip x timestep``,
            ``control_timestep()``, ``render_fps`` or ``none``.
        note: why a candidate was set aside (e.g. ``dt`` is a physics step), else ``""``.
    """

    dt: float | None
    source: str
    note: str = ""


def unwrapped(env: Any) -> Any:
    """The innermost env under Gymnasium wrappers (``env`` itself without them).

    >>> unwrapped(3)
    3
    """
    return getattr(env, "unwrapped", env)


def _positive(value: Any) -> float | None:
    """``value`` as a positive finite float, else ``None`` (a property object is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) and not hasattr(
        value, "__float__"
    ):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that raises gives no clue
        return None


def _simulators(env: Any) -> Iterator[Any]:
    """``env``, then the objects it holds that look like a simulator (one level down).

    gymnasium-robotics' mazes hold their MuJoCo env (``point_env``, ``ant_env``); shimmy holds
    the dm_control env (``_env``). Lazily: a caller that finds what it asks on ``env`` itself
    stops before ``vars(env)``, which in CPython 3.11 turns the instance's inline attribute
    values into a dict for good, and every attribute read in the env's own ``step`` slower
    (~8k instructions a Reacher step).
    """
    yield env
    found = [env]
    for value in [_attr(env, "_env"), *_attribute_values(env)]:
        if value is None or any(value is seen for seen in found) or \
                isinstance(value, int | float | str | bytes | list | dict | tuple):
            continue
        if any(_attr(value, name) is not None for name in ("frame_skip", "control_timestep",
                                                           "physics", "data")):
            found.append(value)
            yield value


_MANAGED_DICT = 1 << 4  # CPython's Py_TPFLAGS_MANAGED_DICT (3.11+): attributes stored inline


def _attribute_values(obj: Any) -> list[Any]:
    """The values of ``obj``'s instance attributes (``vars(obj).values()``; none without any).

    Read through the garbage collector's view of the object where that is the same list:
    CPython (3.11, 3.12) keeps a plain class's attributes as inline values until something
    reads ``__dict__``, and ``vars()`` would turn them into a dict for the env's life, every
    attribute read in its ``step`` then slower (~200k instructions a PushT episode).
    ``vars`` is still asked when the view may differ: a class with ``__slots__`` or not laid
    out so, or an object whose dict already exists (its only referent besides its class).
    The values come in the order of the class's attribute names, which is ``vars()``'s
    unless this object deleted an attribute and set it again.

    >>> class Env:
    ...     def __init__(self):
    ...         self.a, self.b = 1, "x"
    >>> _attribute_values(Env()), _attribute_values(3)
    ([1, 'x'], [])
    """
    import gc

    kind = type(obj)
    if kind.__flags__ & _MANAGED_DICT and sys.implementation.name == "cpython" and \
            not any(getattr(k, "__slots__", ()) for k in kind.__mro__[:-1]):
        values = [v for v in gc.get_referents(obj) if v is not kind]
        if not (len(values) == 1 and type(values[0]) is dict):
            return values
    try:
        return list(vars(obj).values())
    except TypeError:
        return []


def _frame_skip_dt(env: Any) -> float | None:
    skip = _attr(env, "frame_skip")
    opt = _attr(_attr(env, "model"), "opt")
    timestep = _positive(_attr(opt, "timestep"))
    if isinstance(skip, int) and not isinstance(skip, bool) and skip > 0 and \
            timestep is not None:
        return skip * timestep
    return None


def _dm_control_dt(env: Any) -> float | None:
    method = _attr(env, "control_timestep")
    if callable(method):
        try:
            return _positive(method())
        except Exception:  # noqa: BLE001 - no clue from it
            return None
    return None


def _simulator_dt(base: Any) -> tuple[str, float] | None:
    """The period the simulator steps per action, and what it was read from, or ``None``."""
    for holder in _simulators(base):
        for source, read in (("frame_skip x timestep", _frame_skip_dt),
                             ("control_timestep()", _dm_control_dt)):
            dt = read(holder)
            if dt is not None:
                return source, dt
    return None


def simulator_time(env: Any) -> float | None:
    """The simulator's clock in seconds (MuJoCo's ``data.time``), or ``None`` if none is found.

    Looked up on the env under its wrappers and on the simulators it holds (a MuJoCo env's
    ``data``, a dm_control env's ``physics.data``).

    >>> class Data:
    ...     time = 0.25
    >>> class Env:
    ...     data = Data()
    >>> simulator_time(Env()), simulator_time(object())
    (0.25, None)
    """
    for holder in _simulators(unwrapped(env)):
        for data in (_attr(holder, "data"), _attr(_attr(holder, "physics"), "data")):
            time = _attr(data, "time")
            if time is None or isinstance(time, bool) or callable(time):
                continue
            try:
                return float(time)
            except (TypeError, ValueError):
                continue
    return None


def control_dt(env: Any, declared: float | None = None) -> ControlPeriod:
    """The env's control period: seconds between two actions (see the module docstring).

    Args:
        env: an env instance (wrapped or not).
        declared: the panel's ``control_dt``, which wins when given.

    >>> class Physics:
    ...     dt = 0.01
    ...     metadata = {"render_fps": 10}
    >>> control_dt(Physics())
    ControlPeriod(dt=0.1, source='render_fps', note='dt 0.01 is a physics step: 10 per action')
    >>> control_dt(Physics(), declared=0.05).dt
    0.05
    """
    if declared is not None:
        return ControlPeriod(float(declared), "panel control_dt")
    base = unwrapped(env)
    own = _positive(_attr(base, "control_dt"))
    if own is not None:
        return ControlPeriod(own, "control_dt")
    simulated = _simulator_dt(base)
    if simulated is not None:
        return ControlPeriod(simulated[1], simulated[0])
    fps = _positive((_attr(base, "metadata") or {}).get("render_fps"))
    from_fps = 1.0 / fps if fps is not None else None
    dt = _positive(_attr(base, "dt"))
    if dt is not None:
        if from_fps is not None and not math.isclose(dt, from_fps, rel_tol=1e-6):
            ratio = from_fps / dt
            if ratio > 1.5 and abs(ratio - round(ratio)) < 1e-6:
                note = f"dt {dt:g} is a physics step: {round(ratio)} per action"
                return ControlPeriod(from_fps, "render_fps", note)
        return ControlPeriod(dt, "dt")
    if from_fps is not None:
        return ControlPeriod(from_fps, "render_fps", (
            "the env gives no simulator period (frame_skip, control_timestep(), dt): a "
            "rendering rate need not be the control rate; set control_dt in the panel if "
            "it is not"))
    return ControlPeriod(None, "none")
