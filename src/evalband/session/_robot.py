"""The robot a session drives: lerobot's ``Robot`` interface, as a ``typing.Protocol``.

A robot is anything with lerobot's shape (``lerobot.robots.Robot``, huggingface/lerobot
``src/lerobot/robots/robot.py``): ``connect(calibrate)``, ``disconnect()``,
``get_observation()`` (a flat dict: each motor's ``"<motor>.pos"`` float and each camera's
``(H, W, 3)`` uint8 frame under its name), ``send_action(action)`` (a dict of goals; returns
what was actually sent), ``observation_features`` / ``action_features`` (``float`` for a
value, a shape tuple for a camera) and ``is_connected``. Every lerobot robot satisfies it
unchanged, and so does ``sim-arm`` (:class:`evalband.envs.sim_arm.SimArm`).

``--robot SPEC`` names one (:func:`resolve_robot`): ``sim-arm`` (options:
``sim-arm?action_latency_ms=15&camera_latency_ms=40&seed=0``) or ``lerobot:TYPE`` with
``--robot-config FILE.yaml`` (built from lerobot's own config classes, in the Python that
has lerobot: :mod:`evalband.session._lerobot_robot`). :func:`connect_robot` connects without
lerobot's interactive calibration and turns any failure into one line naming the port and the
fix (:class:`~evalband.errors.RobotError`); nothing is recorded as a trial.

>>> from evalband.envs.sim_arm import SimArm
>>> isinstance(SimArm(clock=lambda: 0.0), Robot)
True
>>> state_keys({"a.pos": float, "wrist": (4, 4, 3)}), camera_keys({"wrist": (4, 4, 3)})
(('a.pos',), ('wrist',))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs

import numpy as np

from evalband.errors import RobotError

__all__ = [
    "Robot",
    "ROBOT_SPECS",
    "as_action",
    "camera_keys",
    "connect_robot",
    "is_simulated",
    "policy_observation",
    "resolve_robot",
    "robot_label",
    "state_keys",
    "state_of",
]

ROBOT_SPECS = ("sim-arm", "lerobot:TYPE")
"""The forms of ``--robot``."""


@runtime_checkable
class Robot(Protocol):
    """lerobot's robot interface (see the module docstring)."""

    @property
    def observation_features(self) -> dict[str, Any]:
        """Observation keys: ``float`` for a value, ``(H, W, 3)`` for a camera."""

    @property
    def action_features(self) -> dict[str, Any]:
        """Action keys (``float`` each)."""

    @property
    def is_connected(self) -> bool:
        """Whether the robot is connected."""

    def connect(self, calibrate: bool = True) -> None:
        """Connect (and, in lerobot, calibrate when asked and needed)."""

    def disconnect(self) -> None:
        """Disconnect and leave the robot safe (lerobot: torque off)."""

    def get_observation(self) -> dict[str, Any]:
        """The present observation."""

    def send_action(self, action: dict[str, Any]) -> dict[str, Any]:
        """Send goals; return the goals actually sent."""


def state_keys(features: Mapping[str, Any]) -> tuple[str, ...]:
    """The scalar keys of a feature dict, in its order (lerobot's ``observation.state``)."""
    return tuple(k for k, v in features.items() if not isinstance(v, tuple))


def camera_keys(features: Mapping[str, Any]) -> tuple[str, ...]:
    """The camera keys of a feature dict (shape tuples), in its order."""
    return tuple(k for k, v in features.items() if isinstance(v, tuple))


def state_of(obs: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    """The scalar values of an observation or action (``keys`` that are present).

    >>> state_of({"a.pos": np.float32(1.5), "cam": None}, ("a.pos",))
    {'a.pos': 1.5}
    """
    return {k: float(obs[k]) for k in keys if k in obs}


def is_simulated(robot: Any) -> bool:
    """Whether a robot declares itself simulated (``simulated = True``).

    Only a simulated robot may run on a virtual clock.

    >>> from evalband.envs.sim_arm import SimArm
    >>> is_simulated(SimArm(clock=lambda: 0.0)), is_simulated(object())
    (True, False)
    """
    return getattr(robot, "simulated", False) is True


def robot_label(spec: str) -> str:
    """The robot's name as trials record it (a spec without its options).

    >>> robot_label("sim-arm?seed=3"), robot_label("lerobot:so101_follower")
    ('sim-arm', 'lerobot:so101_follower')
    """
    return spec.partition("?")[0]


_SIM_OPTIONS = {"seed": int, "action_latency_ms": float, "camera_latency_ms": float}


def resolve_robot(spec: str, config: str | None = None, *,
                  clock: Callable[[], float] | None = None, seed: int = 0) -> Any:
    """The robot ``spec`` names (not connected).

    Args:
        spec: ``sim-arm[?option=value&...]`` or ``lerobot:TYPE``.
        config: ``--robot-config``: a YAML file of the lerobot robot's config fields
            (``port``, ``id``, ``cameras``, ...); not used by ``sim-arm``.
        clock: the time function ``sim-arm``'s physics follows.
        seed: ``sim-arm``'s seed unless the spec gives one.

    Raises:
        RobotError: an unknown spec or option, lerobot missing, an unknown lerobot type or a
            config file lerobot's config class refuses.

    >>> resolve_robot("sim-arm?seed=2", clock=lambda: 0.0).name
    'sim_arm'
    """
    text = str(spec).strip()
    base, _, query = text.partition("?")
    if base == "sim-arm":
        options: dict[str, Any] = {}
        for key, values in parse_qs(query, keep_blank_values=True).items():
            if key not in _SIM_OPTIONS:
                raise RobotError(f"robot {text!r}: unknown option {key!r}; sim-arm takes "
                                 f"{', '.join(_SIM_OPTIONS)}")
            try:
                options[key] = _SIM_OPTIONS[key](values[-1])
            except ValueError:
                raise RobotError(f"robot {text!r}: option {key!r} must be a number; got "
                                 f"{values[-1]!r}") from None
        if config is not None:
            raise RobotError("sim-arm takes no `robot_config`; give its options in the spec, "
                             "e.g. sim-arm?action_latency_ms=30", parameters=("robot_config",))
        from evalband.envs.sim_arm import SimArm

        return SimArm(
            seed=int(options.get("seed", seed)), clock=clock,
            action_latency_s=options.get("action_latency_ms", 15.0) / 1000.0,
            camera_latency_s=options.get("camera_latency_ms", 40.0) / 1000.0,
        )
    if base.startswith("lerobot:") and base[len("lerobot:"):]:
        from evalband.session._lerobot_robot import lerobot_robot

        return lerobot_robot(base[len("lerobot:"):], config, clock)
    raise RobotError(f"`robot` must be one of {', '.join(ROBOT_SPECS)} (e.g. "
                     f"lerobot:so101_follower with a `robot_config` file); got {text!r}",
                     parameters=("robot", "robot_config"))


def connect_robot(robot: Any, spec: str) -> None:
    """Connect ``robot`` without interactive calibration; one line on any failure.

    lerobot robots are connected with ``calibrate=False`` (a session never starts lerobot's
    interactive calibration) and refused when ``is_calibrated`` is false afterwards.

    Raises:
        RobotError: the robot could not connect (the message names the port and the fix)
            or is not calibrated; the robot is left disconnected.
    """
    from evalband.session._lerobot_robot import explain_connect_error, not_calibrated

    if getattr(robot, "is_connected", False):
        return
    try:
        robot.connect(calibrate=False)
    except RobotError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line
        raise RobotError(explain_connect_error(exc, robot, spec)) from None
    if getattr(robot, "is_calibrated", True) is False:
        try:
            robot.disconnect()
        except Exception:  # noqa: BLE001, S110 - already failing; the message says why
            pass
        raise RobotError(not_calibrated(robot, spec))


def as_action(action: Any, keys: tuple[str, ...]) -> dict[str, float]:
    """A policy's action as the robot's action dict.

    A mapping passes through (its keys must be the robot's); an array's entries are the
    motors in ``action_features`` order (what lerobot's policies output).

    Raises:
        RobotError: an unknown key, or an array of the wrong length.

    >>> as_action(np.array([1.0, 2.0]), ("a.pos", "b.pos"))
    {'a.pos': 1.0, 'b.pos': 2.0}
    >>> as_action({"b.pos": 3}, ("a.pos", "b.pos"))
    {'b.pos': 3.0}
    """
    if isinstance(action, Mapping):
        unknown = [k for k in action if k not in keys]
        if unknown:
            raise RobotError(f"the policy's action names {unknown[0]!r}, which the robot does "
                             f"not have; its motors: {', '.join(keys)}")
        return {str(k): float(v) for k, v in action.items()}
    values = np.asarray(action, dtype=float).reshape(-1)
    if values.size != len(keys):
        raise RobotError(f"the policy's action has {values.size} values; the robot has "
                         f"{len(keys)} motors ({', '.join(keys)})")
    return {k: float(v) for k, v in zip(keys, values, strict=True)}


def policy_observation(obs: Mapping[str, Any], features: Mapping[str, Any],
                       lerobot_style: bool) -> Any:
    """What a policy is given: the robot's observation, or lerobot's env form of it.

    lerobot policies read named features: the motors as ``agent_pos`` (lerobot's
    ``observation.state``, in ``observation_features`` order) and the cameras under
    ``pixels`` (``observation.images.<camera>``), which lerobot's own
    ``preprocess_observation`` turns into tensors. Every other policy gets the robot's dict.

    >>> obs = {"a.pos": 1.0, "wrist": np.zeros((2, 2, 3), np.uint8)}
    >>> out = policy_observation(obs, {"a.pos": float, "wrist": (2, 2, 3)}, True)
    >>> out["agent_pos"].tolist(), sorted(out["pixels"])
    ([1.0], ['wrist'])
    """
    if not lerobot_style:
        return obs
    state = np.array([float(obs[k]) for k in state_keys(features)], dtype=np.float32)
    out: dict[str, Any] = {"agent_pos": state}
    cameras = camera_keys(features)
    if cameras:
        out["pixels"] = {k: np.ascontiguousarray(obs[k]) for k in cameras}
    return out
