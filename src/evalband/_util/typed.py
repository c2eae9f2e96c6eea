"""Typed results from their JSON form: a frozen dataclass rebuilt field by field from its hints.

Every stored or ``--json`` result of evalband (session analyses, rankings, agreement, sweeps)
is a tree of frozen dataclasses whose JSON is ``dataclasses.asdict``; :func:`typed_from_dict`
gives the typed object back. Standard library only (a ``_util`` module).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar

__all__ = ["typed_from_dict"]

_T = TypeVar("_T")


def typed_from_dict(cls: type[_T], data: Mapping[str, Any]) -> _T:
    """A frozen result dataclass rebuilt from its JSON form, field by field from its type hints.

    Nested dataclasses, ``X | None``, ``tuple[X, ...]``, ``dict[K, V]`` (JSON's text keys
    turned back into ``int`` where ``K`` is ``int``), enums and numbers are rebuilt; unknown
    keys are ignored, missing ones take the field's default.

    >>> from evalband.stats import Interval
    >>> typed_from_dict(Interval, {"estimate": 0.5, "low": 0.2, "high": 0.8,
    ...                            "method": "wilson", "confidence": 0.95, "k": 5, "n": 10})
    Interval(estimate=0.5, low=0.2, high=0.8, method='wilson', confidence=0.95, k=5, n=10)
    """
    return typing.cast(_T, _decode(cls, data))


def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _decode(inner[0], value) if len(inner) == 1 else value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kwargs = {
            f.name: _decode(hints[f.name], value[f.name])
            for f in dataclasses.fields(tp) if f.init and f.name in value
        }
        return tp(**kwargs)
    if origin is tuple:
        return tuple(_decode(args[0], v) for v in value)
    if origin is list:
        return [_decode(args[0], v) for v in value] if args else list(value)
    if origin is dict:
        key_type, value_type = args if args else (Any, Any)
        return {_decode(key_type, k): _decode(value_type, v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(value)
    if tp is float:
        return float(value)
    if tp is int:
        return int(value)
    return value
