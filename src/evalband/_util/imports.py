"""Resolve ``module:attr`` import paths: one mechanism for envs, policies and panels."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["resolve_import_path", "is_import_path", "source_hash", "lazy_attributes",
           "shadowed_by"]


def is_import_path(text: str) -> bool:
    """Whether ``text`` looks like ``package.module:attr``.

    >>> is_import_path("evalband.envs:Coin"), is_import_path("evalband/Coin-v0")
    (True, False)
    """
    module, sep, attr = text.partition(":")
    return bool(sep) and bool(module) and bool(attr) and "/" not in module


def resolve_import_path(path: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted) and return the object.

    Raises:
        ImportError: the module cannot be imported.
        AttributeError: the attribute does not exist.

    >>> resolve_import_path("math:pi") > 3
    True
    """
    module_name, _, attr = path.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def shadowed_by(module: Any, cwd: str | None = None) -> str | None:
    """The local file an imported module hides, when a module of another place was imported.

    ``module_name`` names ``./chunk.py`` in the run's directory, but ``import chunk`` gave
    the standard library's ``chunk`` (imported before, or found first): the user's file was
    silently not used. ``None`` when there is no such local file, or it is the one imported.

    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "json.py"), "w").close()
    >>> shadowed_by(json, folder).endswith("json.py"), shadowed_by(json, tempfile.mkdtemp())
    (True, None)
    """
    import os

    top = module.__name__.partition(".")[0]
    root = os.path.abspath(cwd if cwd is not None else os.getcwd())
    top_module = sys.modules.get(top, module)
    where = getattr(top_module, "__file__", None)
    for local in (os.path.join(root, f"{top}.py"), os.path.join(root, top, "__init__.py")):
        if os.path.isfile(local):
            if where is None or os.path.realpath(where) != os.path.realpath(local):
                return local
            return None
    return None


def source_hash(obj: Any) -> str | None:
    """sha256 of an object's source code, or ``None`` when it has none (builtins, C code).

    >>> len(source_hash(source_hash) or "")
    64
    """
    import inspect  # ~10 ms: not at start-up (``evalband`` itself imports this module)

    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        return None
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that imports ``names[attr]`` on first use.

    The value is cached in the package's namespace, so later lookups are plain attribute reads.

    >>> getattr_ = lazy_attributes("math", {"pi": "math"})
    >>> round(getattr_("pi"), 2)
    3.14
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
