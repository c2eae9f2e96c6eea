"""``--robot lerobot:TYPE --robot-config FILE.yaml``: a lerobot robot built by lerobot's code.

The config is lerobot's own (``lerobot.robots.RobotConfig``, a draccus choice registry:
``so101_follower`` is ``SOFollowerRobotConfig`` with ``port``, ``id``, ``cameras``, ...): the
YAML file's fields are decoded into the registered class of ``TYPE`` by ``draccus.decode``
(what ``lerobot-record --robot.type=... --robot.port=...`` builds from its command line), and
the robot is made by lerobot's ``make_robot_from_config``. Robot types outside lerobot's
factory (third-party plugins, evalband's own ``evalband_sim_arm``) are found among the
subclasses of lerobot's ``Robot`` by their ``name``.

lerobot is imported only here, and only in the Python that has it (``.venv-lerobot``): run
``evalband session run`` from there.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalband.errors import RobotError

__all__ = ["explain_connect_error", "lerobot_robot", "not_calibrated", "robot_types"]

_PLUGINS = ("evalband.envs.sim_arm_lerobot",)


def _register(wanted: str | None = None) -> Any:
    """Import lerobot's robots until ``wanted`` is registered (all of them for ``None``).

    Each robot's package registers its config type on import. Returns lerobot's
    ``RobotConfig`` registry.
    """
    try:
        from lerobot.robots import RobotConfig
    except ModuleNotFoundError as exc:
        if exc.name is not None and not exc.name.startswith("lerobot"):
            raise RobotError(f"lerobot's robots cannot be imported: No module named "
                             f"{exc.name!r}; install it in lerobot's venv") from None
        raise RobotError(
            "a `robot` of lerobot:TYPE needs lerobot, which is not installed in this Python; "
            "run evalband from lerobot's venv (make test builds .venv-lerobot: "
            "`.venv-lerobot/bin/evalband session run ...`)", parameters=("robot",)
        ) from None
    import pkgutil

    import lerobot.robots as robots

    for module in _PLUGINS:
        importlib.import_module(module).register()

    def found() -> bool:
        return wanted is not None and wanted in RobotConfig.get_known_choices()

    for info in pkgutil.iter_modules(robots.__path__):
        if found():
            return RobotConfig
        if info.ispkg:
            try:
                importlib.import_module(f"lerobot.robots.{info.name}")
            except Exception:  # noqa: BLE001, S112 - a robot whose extra is missing
                continue
    if not found():
        try:
            from lerobot.utils.import_utils import register_third_party_plugins

            register_third_party_plugins()
        except ImportError:
            pass
    return RobotConfig


def robot_types() -> list[str]:
    """The robot types lerobot knows here (its own and registered plugins')."""
    return sorted(_register().get_known_choices())


def _config(type_name: str, config: str | None) -> Any:
    registry = _register(type_name)  # first: says so in one line when lerobot is missing
    import draccus
    import yaml

    known = sorted(registry.get_known_choices())
    if type_name not in known:
        raise RobotError(f"lerobot has no robot type {type_name!r}; known types: "
                         f"{', '.join(known)}")
    fields: dict[str, Any] = {}
    if config is not None:
        path = Path(config)
        try:
            loaded = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise RobotError(f"cannot read the robot config {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "bad YAML"
            raise RobotError(f"the robot config {path} is not valid YAML: {first}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise RobotError(f"the robot config {path} must be a mapping of {type_name}'s "
                             f"fields (port, id, cameras, ...); got {type(loaded).__name__}")
        fields = dict(loaded or {})
        named = fields.pop("type", type_name)
        if named != type_name:
            raise RobotError(f"the robot config {path} is for type {named!r}, but `robot` "
                             f"names lerobot:{type_name}", parameters=("robot",))
    try:
        return draccus.decode(registry, {"type": type_name, **fields})
    except Exception as exc:  # noqa: BLE001 - draccus' DecodingError and the config's checks
        text = " ".join(str(exc).split())
        where = f" in {config}" if config else " (give --robot-config FILE.yaml)"
        raise RobotError(f"lerobot's {type_name} config refused the fields{where}: "
                         f"{text}") from None


def lerobot_robot(type_name: str, config: str | None,
                  clock: Callable[[], float] | None = None) -> Any:
    """The lerobot robot of ``type_name`` built from the YAML file ``config`` (not connected).

    A simulated lerobot robot with ``use_clock`` (``evalband_sim_arm``) follows ``clock``.

    Raises:
        RobotError: lerobot not installed, an unknown type, a config lerobot refuses, or a
            robot that cannot be made (e.g. its motor SDK is missing).
    """
    cfg = _config(type_name, config)
    from lerobot.robots.robot import Robot
    from lerobot.robots.utils import make_robot_from_config

    robot = _make(cfg, type_name, Robot, make_robot_from_config)
    if clock is not None and callable(getattr(robot, "use_clock", None)):
        robot.use_clock(clock)
    return robot


def _make(cfg: Any, type_name: str, base: type, factory: Callable[[Any], Any]) -> Any:
    try:
        return factory(cfg)
    except ModuleNotFoundError as exc:
        raise RobotError(f"lerobot's {type_name} needs the package {exc.name!r}; install "
                         f"lerobot's extra for it (e.g. pip install 'lerobot[feetech]')") from None
    except ValueError:
        pass  # not in lerobot's factory: look among the registered subclasses
    found = [cls for cls in _subclasses(base) if getattr(cls, "name", None) == type_name
             and isinstance(cfg, getattr(cls, "config_class", ()))]
    if not found:
        raise RobotError(f"lerobot robot type {type_name!r} has a config class but no robot "
                         "class naming it; install or import its plugin")
    return found[0](cfg)


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def _port(robot: Any) -> str | None:
    config = getattr(robot, "config", None)
    port = getattr(config, "port", None)
    return None if port is None else str(port)


def explain_connect_error(exc: BaseException, robot: Any, spec: str) -> str:
    """One line: why ``robot`` did not connect and what to do (names the port).

    >>> class Cfg: port = "/dev/ttyNONE"
    >>> class Arm: config = Cfg()
    >>> explain_connect_error(ConnectionError("Could not connect"), Arm(), "lerobot:x")[:57]
    'robot lerobot:x cannot connect: the port /dev/ttyNONE doe'
    """
    port = _port(robot)
    text = " ".join(str(exc).split()) or type(exc).__name__
    where = "" if port is None else f" on {port}"
    if port is not None and os.sep in port and not os.path.exists(port):
        return (f"robot {spec} cannot connect: the port {port} does not exist; plug the arm's "
                "USB cable in and find its port with lerobot-find-port, then set port: in "
                "the robot config; nothing was recorded")
    if port is not None and os.path.exists(port) and not os.access(port, os.R_OK | os.W_OK):
        return (f"robot {spec} cannot connect: permission denied on {port}; add yourself to "
                f"the port's group (sudo usermod -aG dialout $USER, then log in again) or "
                f"sudo chmod 666 {port}; nothing was recorded")
    return (f"robot {spec} cannot connect{where}: {text}; check the cable, the power supply "
            "and the port (lerobot-find-port); nothing was recorded")


def not_calibrated(robot: Any, spec: str) -> str:
    """One line: the robot is not calibrated, and lerobot's command that calibrates it."""
    config = getattr(robot, "config", None)
    kind = getattr(config, "type", None) or spec.partition(":")[2]
    port = _port(robot) or "PORT"
    robot_id = getattr(robot, "id", None) or "ID"
    return (f"robot {spec} is not calibrated (no calibration for id {robot_id!r} matches the "
            f"motors); calibrate it with lerobot: lerobot-calibrate --robot.type={kind} "
            f"--robot.port={port} --robot.id={robot_id}; nothing was recorded")
