"""Resolve ``module:attr`` import paths: one mechanism for envs, policies and panels."""

from __future__ import annotations

import hashlib
import importlib
import inspect
from typing import Any

__all__ = ["resolve_import_path", "is_import_path", "source_hash"]


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
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()
