"""Built-in policies and the policy resolver.

A policy is any callable ``obs -> action``. :func:`resolve_policy` turns a built-in name
(:data:`BUILTIN_POLICIES`) or any ``module:attr`` import path into that callable.

>>> sorted(BUILTIN_POLICIES)
['reach1d:baseline', 'reach1d:damped', 'reach1d:expert']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from evalband.errors import PolicyNotFoundError

__all__ = ["BUILTIN_POLICIES", "PolicyNotFoundError", "resolve_policy"]

BUILTIN_POLICIES: dict[str, str] = {
    "reach1d:baseline": "evalband.policies.reach1d:baseline",
    "reach1d:damped": "evalband.policies.reach1d:damped",
    "reach1d:expert": "evalband.policies.reach1d:expert",
}
"""Built-in policy name -> ``module:attr`` import path."""


def _not_found(name: str, why: str) -> PolicyNotFoundError:
    available = ", ".join(sorted(BUILTIN_POLICIES))
    return PolicyNotFoundError(
        f"policy {name!r} not found: {why}; use a built-in name ({available}) "
        f"or an import path 'package.module:attr'"
    )


def resolve_policy(name_or_path: str) -> Callable[..., Any]:
    """Return the policy callable named by a built-in name or a ``module:attr`` path.

    Built-in names (:data:`BUILTIN_POLICIES`) take precedence; otherwise the string must be
    ``module:attr`` where ``module`` is importable and ``attr`` (dotted for nested
    attributes, e.g. ``mod:Class.method``) is callable.

    Args:
        name_or_path: e.g. ``"reach1d:damped"`` or ``"my_pkg.policies:MyPolicy"``.

    Returns:
        The callable.

    Raises:
        PolicyNotFoundError: the name is neither built-in nor an importable callable; the
            message lists the built-in names.

    >>> resolve_policy("reach1d:damped")([-0.5, 0.1]).tolist()
    [0.82]
    >>> resolve_policy("evalband.policies.reach1d:baseline").__name__
    'baseline'
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise _not_found(str(name_or_path), "expected a non-empty string")
    name = name_or_path.strip()
    path = BUILTIN_POLICIES.get(name, name)
    module_name, sep, attr_path = path.partition(":")
    if not sep or not module_name or not attr_path:
        raise _not_found(name, "not a built-in name and not of the form 'module:attr'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and module_name != missing and not module_name.startswith(missing + "."):
            # The module exists but one of ITS imports is missing: a real error, not ours.
            raise
        raise _not_found(name, f"no module named {module_name!r}") from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            why = f"module {module_name!r} has no attribute {attr_path!r}"
            raise _not_found(name, why) from None
    if not callable(obj):
        raise _not_found(name, f"{path!r} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]
