"""Env families: what each family of environments declares, read without importing it.

A family is one file in ``evalband/envs/families/NAME.toml`` (shipped with the package): its
Gymnasium ids and the class each is registered with (``[envs]``), its built-in policies
(``[policies]``: name -> ``module:attr``), its shipped panels (``panels``), whether its envs
are pure Python that the driver of a process run may play itself (``driver_safe``), and a
trace spec (``[trace]``) that the report draws generically (``draw = "series"``: named series
over time, one row each; ``draw = "paths"``: x/y paths on a square table). That file is the
one place the family is named: the Gymnasium registration (:mod:`evalband.envs`), the policy
table, the process backend's preload and the report read it here, as plain data (the
standard library's ``tomllib``), so the command line knows a run's modules before numpy or
the env loads, and a report draws a trace without importing any env.

>>> sorted(families())[:3]
['classical', 'coin', 'generic']
>>> trace_spec("evalband/Reach1D-v0").family, trace_spec("evalband/Coin-v0")
('reach1d', None)
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalband.errors import EvalbandError

__all__ = ["Family", "TraceSpec", "FAMILY_DIR", "families", "family_of_env", "trace_spec",
           "builtin_policies", "env_entry_points", "driver_safe_modules"]

FAMILY_DIR = Path(__file__).resolve().parent.parent / "envs" / "families"
"""Where the shipped families are declared (one ``NAME.toml`` each)."""


@dataclass(frozen=True)
class TraceSpec:
    """What the report draws of a family's stored traces.

    Attributes:
        family: the family's name.
        draw: ``"series"`` (rows of named series over time) or ``"paths"`` (x/y paths).
        height: the figure's height (inches).
        figure: the figure's description (``{traces}``, ``{runs}``: their counts).
        caption: what the report's caption says the figure shows.
        options: the drawer's parameters (``rows`` for series; ``half``, ``target``,
            ``path``, ``companion`` for paths).
    """

    family: str
    draw: str
    height: float
    figure: str
    caption: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """One env family as its file declares it (see the module docstring)."""

    name: str
    description: str
    envs: dict[str, str]
    policies: dict[str, str]
    panels: tuple[str, ...] = ()
    driver_safe: bool = False
    trace: TraceSpec | None = None


def _family(path: Path) -> Family:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        trace = data.get("trace")
        spec = None
        if trace is not None:
            trace = dict(trace)
            spec = TraceSpec(path.stem, str(trace.pop("draw")), float(trace.pop("height")),
                             str(trace.pop("figure")), str(trace.pop("caption")), trace)
        return Family(path.stem, str(data.get("description", "")),
                      {str(k): str(v) for k, v in data.get("envs", {}).items()},
                      {str(k): str(v) for k, v in data.get("policies", {}).items()},
                      tuple(str(p) for p in data.get("panels", ())),
                      bool(data.get("driver_safe", False)), spec)
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise EvalbandError(f"env family file {path} is broken ({exc}); reinstall evalband") \
            from None


@functools.cache
def families() -> dict[str, Family]:
    """Every shipped family by name (read once per process)."""
    return {p.stem: _family(p) for p in sorted(FAMILY_DIR.glob("*.toml"))}


def family_of_env(env: str) -> Family | None:
    """The family that declares Gymnasium id ``env``, or ``None``."""
    return next((f for f in families().values() if env in f.envs), None)


def trace_spec(env: str) -> TraceSpec | None:
    """The trace spec of ``env``'s family, or ``None`` (no trace plot for this env)."""
    family = family_of_env(env)
    return None if family is None else family.trace


def builtin_policies() -> dict[str, str]:
    """Every family's built-in policies: name -> ``module:attr``."""
    return {name: target for f in families().values() for name, target in f.policies.items()}


def env_entry_points() -> dict[str, str]:
    """Every family's Gymnasium ids -> the class each is registered with."""
    return {env: entry for f in families().values() for env, entry in f.envs.items()}


def driver_safe_modules() -> frozenset[str]:
    """The modules of the envs that the driver of a process run may play itself."""
    return frozenset(entry.partition(":")[0] for f in families().values() if f.driver_safe
                     for entry in f.envs.values())
