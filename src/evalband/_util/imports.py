"""Resolve ``module:attr`` import paths: one mechanism for envs, policies and panels."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["resolve_import_path", "is_import_path", "source_hash", "lazy_attributes"]


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
