"""Find and build environments: registered Gymnasium ids or ``module:Class`` paths."""

from __future__ import annotations

import inspect
from typing import Any

from evalband._imports import is_import_path, resolve_import_path

__all__ = ["env_class", "make_env", "accepts_kwarg"]


def _register_builtins() -> None:
    import evalband.envs  # noqa: F401  (registers evalband/Reach1D-v0)
    import evalband.envs._coin  # noqa: F401  (registers evalband/Coin-v0)


def env_class(env: str) -> type | None:
    """The class behind an env id or import path, or ``None`` when it cannot be found.

    >>> env_class("evalband/Coin-v0").__name__
    'CoinEnv'
    """
    if is_import_path(env) and "/" not in env.partition(":")[2]:
        try:
            obj = resolve_import_path(env)
        except (ImportError, AttributeError):
            return None
        return obj if isinstance(obj, type) else None
    _register_builtins()
    import gymnasium

    try:
        spec = gymnasium.spec(env)
    except gymnasium.error.Error:
        return None
    entry = spec.entry_point
    if isinstance(entry, str):
        try:
            entry = resolve_import_path(entry)
        except (ImportError, AttributeError):
            return None
    return entry if isinstance(entry, type) else None


def accepts_kwarg(cls: type, name: str) -> bool:
    """Whether ``cls(...)`` accepts a keyword argument ``name``.

    >>> accepts_kwarg(dict, "nope")
    False
    """
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def make_env(env: str, kwargs: dict[str, Any]) -> Any:
    """Build an environment from an id or ``module:Class`` path with keyword arguments.

    Registered ids are built with :func:`gymnasium.make` (env checker off: the runner owns the
    budget and validates outcomes itself).
    """
    if is_import_path(env):
        return resolve_import_path(env)(**kwargs)
    _register_builtins()
    import gymnasium

    made = gymnasium.make(env, disable_env_checker=True, **kwargs)
    # The runner enforces reset-before-step and the budget itself: peel off the bookkeeping
    # wrappers that only cost time per step, keep any wrapper that changes behaviour.
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

    while isinstance(made, OrderEnforcing | PassiveEnvChecker):
        made = made.env
    return made
