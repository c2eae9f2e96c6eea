"""Find and build environments: any registered Gymnasium id, ``module:id``, or ``module:attr``.

A panel's ``env`` is one of:

* a registered id (``Reacher-v5``, ``gym_pusht/PushT-v0``), registered by a module the
  panel lists under ``imports:`` or already imported;
* Gymnasium's own ``module:id`` form (``gym_pusht:gym_pusht/PushT-v0``): the module is
  imported, then the id is looked up (as :func:`gymnasium.make` does);
* an import path ``module:attr`` to an env class or any callable returning an env.

Registered ids are built with :func:`gymnasium.make`, so the registered entry point (a class,
a ``module:attr`` string, a lambda or a :func:`functools.partial`) and the wrappers it
declares are applied as Gymnasium would. The registered ``TimeLimit`` is replaced by the
panel budget unless the panel keeps it (``time_limit: env``). Keyword arguments the runner
adds (``max_steps``) are passed only to constructors that name them; the panel's own
``env_kwargs`` are passed as given.

Both the driver and every worker resolve names through :func:`prepare_imports`: the run's
working directory first on ``sys.path`` (as ``python -m`` puts it) and the panel's
``imports`` imported, so serial and process runs import the same code.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from evalband._util.imports import resolve_import_path
from evalband.errors import EnvError, EvalbandError

__all__ = [
    "accepts_kwarg",
    "close_env",
    "env_class",
    "env_entry",
    "import_module_line",
    "make_env",
    "passes_kwarg",
    "prepare_imports",
    "registered_time_limit",
    "render_hint",
]

_IDENT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _register_builtins() -> None:
    import evalband.envs  # noqa: F401  (registers evalband/Reach1D-v0 and evalband/Coin-v0)


def import_module_line(module: str, what: str = "env") -> Any:
    """Import ``module``; a failure is an :class:`EnvError` of one line naming the module.

    >>> import_module_line("math").pi > 3
    True
    >>> import_module_line("no_such_module_xyz")
    Traceback (most recent call last):
    ...
    evalband.errors.EnvError: env module 'no_such_module_xyz' cannot be imported: ...
    """
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import-time crash, said in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        hint = (
            "install its package or fix the name"
            if isinstance(exc, ModuleNotFoundError) and exc.name == module.split(".")[0]
            else "fix the error it raises on import"
        )
        raise EnvError(
            f"{what} module {module!r} cannot be imported: {type(exc).__name__}: {first}; "
            f"{hint}"
        ) from None


def prepare_imports(cwd: str | None = None, imports: Sequence[str] = ()) -> None:
    """Put ``cwd`` (default: the current directory) first on ``sys.path``; import ``imports``.

    Idempotent. The driver and each worker call it with the run's directory, so a
    ``module:attr`` resolves to the same file in both.

    >>> prepare_imports(imports=["json"])
    >>> os.path.abspath(os.getcwd()) in sys.path
    True
    """
    root = os.path.abspath(cwd if cwd is not None else os.getcwd())
    if root not in sys.path:
        sys.path.insert(0, root)
    for module in imports:
        import_module_line(module)


def _split(env: str) -> tuple[str | None, str]:
    """``(module or None, rest)`` of ``module:rest``; ``rest`` is an attr path or an id."""
    module, sep, rest = env.partition(":")
    if sep and module and rest and "/" not in module:
        return module, rest
    return None, env


def _spec(env_id: str) -> Any:
    """The registered :class:`gymnasium.envs.registration.EnvSpec`, or an :class:`EnvError`."""
    _register_builtins()
    import gymnasium

    try:
        return gymnasium.spec(env_id)
    except gymnasium.error.Error:
        raise EnvError(
            f"env {env_id!r} is not a registered Gymnasium id; list the package that "
            "registers it under the panel's 'imports:' (e.g. imports: [gym_pusht]), write "
            "'module:id', or give an import path 'module:Class'"
        ) from None


def env_entry(env: str) -> tuple[Callable[..., Any], Any]:
    """The callable that builds ``env`` and its registered spec (``None`` for import paths).

    Raises:
        EnvError: the module cannot be imported, the id is not registered, or the attribute
            is missing or not callable (one line, naming the module).

    >>> entry, spec = env_entry("evalband/Coin-v0")
    >>> entry.__name__, spec.id
    ('CoinEnv', 'evalband/Coin-v0')
    """
    module, rest = _split(env)
    if module is not None:
        imported = import_module_line(module)
        if _IDENT_PATH.match(rest):
            obj: Any = imported
            try:
                for part in rest.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                obj = None
            if obj is not None:
                if not callable(obj):
                    raise EnvError(
                        f"env {env!r}: {rest!r} in module {module!r} is a "
                        f"{type(obj).__name__}, not an env class or factory"
                    )
                return obj, None
    spec = _spec(rest)
    entry = spec.entry_point
    if isinstance(entry, str):
        entry_module, _, attr = entry.partition(":")
        import_module_line(entry_module)
        try:
            entry = resolve_import_path(entry)
        except AttributeError:
            raise EnvError(
                f"env {env!r}: entry point {spec.entry_point!r} names a missing attribute"
            ) from None
    return entry, spec


def _class_of(entry: Any) -> type | None:
    while isinstance(entry, functools.partial):
        entry = entry.func
    return entry if isinstance(entry, type) else None


def env_class(env: str) -> type | None:
    """The class behind an env id or import path, or ``None`` (a factory, or not found).

    >>> env_class("evalband/Coin-v0").__name__
    'CoinEnv'
    >>> env_class("no_such_module_xyz:Env") is None
    True
    """
    try:
        entry, _ = env_entry(env)
    except EnvError:
        return None
    return _class_of(entry)


def registered_time_limit(env: str) -> int | None:
    """The ``max_episode_steps`` an id is registered with (``None``: none, or an import path).

    >>> registered_time_limit("evalband/Coin-v0") is None
    True
    """
    try:
        _, spec = env_entry(env)
    except EnvError:
        return None
    return getattr(spec, "max_episode_steps", None) if spec is not None else None


def accepts_kwarg(cls: Any, name: str) -> bool:
    """Whether ``cls(...)`` names a keyword argument ``name`` (a ``**kwargs`` does not count).

    Arguments evalband adds on its own (``max_steps``) go only to constructors that name
    them: a pass-through ``**kwargs`` may hand them to a base class that refuses them.

    >>> class Env:
    ...     def __init__(self, max_steps=10, **kwargs): ...
    >>> class Passthrough(Env):
    ...     def __init__(self, **kwargs): ...
    >>> accepts_kwarg(Env, "max_steps"), accepts_kwarg(Passthrough, "max_steps")
    (True, False)
    """
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    param = params.get(name)
    return param is not None and param.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def passes_kwarg(cls: Any, name: str) -> bool:
    """Whether ``cls(name=...)`` reaches a constructor that names ``name``.

    Named by ``cls`` itself (:func:`accepts_kwarg`), or by a base class's ``__init__`` that a
    ``**kwargs`` of ``cls`` passes it on to (gymnasium's ``Reacher-v5`` takes ``render_mode``,
    ``width`` and ``height`` this way, for ``MujocoEnv``).

    >>> class Base:
    ...     def __init__(self, width=480, **kwargs): ...
    >>> class Env(Base):
    ...     def __init__(self, frame_skip=2, **kwargs): ...
    >>> passes_kwarg(Env, "width"), passes_kwarg(Env, "height")
    (True, False)
    """
    if accepts_kwarg(cls, name):
        return True
    for klass in getattr(cls, "__mro__", ())[:-1]:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters
        except (TypeError, ValueError):
            return False
        if name in params and params[name].kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            return True
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return False  # the chain of **kwargs stops here
    return False


def make_env(env: str, kwargs: dict[str, Any], *, keep_time_limit: bool = True) -> Any:
    """Build an environment from an id, ``module:id`` or ``module:attr`` with keyword arguments.

    Registered ids are built with :func:`gymnasium.make` (env checker off: the runner checks
    outcomes itself). ``keep_time_limit=False`` drops the registered ``TimeLimit``: the
    runner's budget is then the one limit (it stops every episode at its budget itself).
    A failure to build is an :class:`EnvError` of one line.

    >>> env = make_env("evalband/Coin-v0", {"p": 1.0})
    >>> env.reset(seed=1)[0].shape
    (1,)
    >>> env.close()
    """
    entry, spec = env_entry(env)
    try:
        if spec is None:
            return entry(**kwargs)
        import gymnasium

        made: Any = gymnasium.make(spec.id, disable_env_checker=True, **kwargs)
    except EvalbandError:
        raise  # already one line in the library's words (an env may raise ours)
    except Exception as exc:  # noqa: BLE001 - a constructor crash, said in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise EnvError(
            f"env {env!r} could not be built with {kwargs!r}: {type(exc).__name__}: {first}"
        ) from exc
    # The runner enforces reset-before-step (and, unless kept, the time limit) itself: peel
    # off the outer bookkeeping wrappers that only cost time per step, keep any wrapper that
    # changes behaviour (and everything under it).
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

    peel: tuple[type, ...] = (OrderEnforcing, PassiveEnvChecker)
    if not keep_time_limit:
        peel += (TimeLimit,)
    while isinstance(made, peel):
        wrapper: Any = made
        made = wrapper.env
    return made


_RENDER_WORDS = ("OpenGL", "GLFW", "DISPLAY", "EGL", "mjr_makeContext", "gladLoadGL")


def render_hint(message: str) -> str:
    """What to set when ``message`` is a rendering failure without a display, else ``""``.

    MuJoCo (and dm_control) render through GLFW by default, which needs a display; a
    headless machine needs ``MUJOCO_GL=egl`` (EGL: a GPU, or Mesa's software renderer) or
    ``osmesa``.

    >>> render_hint("an OpenGL platform library has not been loaded")
    '; set MUJOCO_GL=egl (or MUJOCO_GL=osmesa) to render without a display'
    >>> render_hint("division by zero")
    ''
    """
    if not any(word in message for word in _RENDER_WORDS):
        return ""
    return "; set MUJOCO_GL=egl (or MUJOCO_GL=osmesa) to render without a display"


def close_env(env: Any) -> str | None:
    """Close ``env``; the error message if closing raised (never raises).

    >>> close_env(object()) is None
    True
    """
    close = getattr(env, "close", None)
    if not callable(close):
        return None
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - closing must not hide the run's own result
        return f"{type(exc).__name__}: {exc}"
    return None

