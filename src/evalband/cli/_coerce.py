"""Command-line values coerced without pydantic, where the answer is not in doubt.

typer (0.2x) turns every command-line value into its parameter's type through a pydantic
``TypeAdapter`` built on first use; importing pydantic and building the adapters is most
of a short command's start-up (about 0.1 s of ``evalband ci 8 20`` on a 2-core VM, more
than the statistics). Most values are plain: a word for a ``str``, digits for an ``int`` or
a ``float``, a path. :func:`install` makes typer coerce those here, with the result
pydantic gives for them, and hand every other value (a malformed number, a number outside
the parameter's ``min``/``max``, an enum, a file, ...) to typer's own adapter, so results
and error messages stay typer's. ``tests/cli/test_cli_startup.py`` checks both paths
agree on the real typer.

The patch is process-wide (typer looks ``build_runtime_param`` up in ``typer.core`` when a
parameter is first used) and harmless to other typer apps in the process: they get the
same values, faster. On a typer without that hook it does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["install", "plain_value"]

#: Numbers written plainly: what typer's pydantic coercion turns into the same value as
#: ``int(text)`` / ``float(text)``.
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?:[eE][-+]?[0-9]{1,3})?")
_UNDECIDED = object()


def _leaf(annotation: Any, info: Any, value: Any) -> Any:
    """``value`` as ``annotation`` when that is unambiguous, else :data:`_UNDECIDED`."""
    if info.parser is not None:
        return _UNDECIDED
    if annotation is str:
        return value if isinstance(value, str) else _UNDECIDED
    if annotation is bool:
        return value if isinstance(value, bool) else _UNDECIDED
    if annotation is int or annotation is float:
        if info.clamp:
            return _UNDECIDED
        if type(value) is annotation:  # a default value
            number = value
        elif isinstance(value, str) and (_INT if annotation is int else _FLOAT).fullmatch(value):
            number = annotation(value)
        else:
            return _UNDECIDED
        if (info.min is not None and number < info.min) or (
            info.max is not None and number > info.max
        ):
            return _UNDECIDED  # typer's adapter words the range error
        return number
    return _UNDECIDED


def plain_value(annotation: Any, info: Any, value: Any) -> Any:
    """``value`` coerced to ``annotation`` without pydantic, or ``None`` when undecided.

    Args:
        annotation: the parameter's type as typer resolved it (``int``, ``list[str]``...).
        info: its ``typer.models.ParameterInfo`` (``min``, ``max``, ``parser``...).
        value: the raw value click parsed (a ``str``, or a tuple of them).

    >>> import typer
    >>> plain_value(int, typer.Option(1, min=1), "12"), plain_value(int, typer.Option(1), "x")
    (12, None)
    """
    result = _plain(annotation, info, value)
    return None if result is _UNDECIDED else result


def _plain(annotation: Any, info: Any, value: Any) -> Any:
    origin = getattr(annotation, "__origin__", None)
    if origin is list:
        (item_type,) = annotation.__args__
        items = value if isinstance(value, list | tuple) else [value]
        out = [_leaf(item_type, info, item) for item in items]
        return _UNDECIDED if any(item is _UNDECIDED for item in out) else out
    if origin is not None:
        return _UNDECIDED
    return _leaf(annotation, info, value)


def install() -> bool:
    """Route typer's coercion of plain values through :func:`plain_value`; True if done.

    >>> install() in (True, False)
    True
    """
    try:
        import typer.core
        from typer import _coercion, _param_types
    except ImportError:  # pragma: no cover - another typer layout
        return False
    original: Any = getattr(typer.core, "build_runtime_param", None)
    base: Any = getattr(_coercion, "RuntimeParam", None)
    coerce_path: Any = getattr(_param_types, "coerce_cli_path", None)
    if original is None or base is None or coerce_path is None:
        return False  # pragma: no cover - typer without pydantic coercion
    if getattr(original, "evalband_plain", False):
        return True

    @dataclass(frozen=True)
    class PlainRuntimeParam(base):  # type: ignore[misc]
        """Coerce plain values here, the rest through typer's runtime parameter."""

        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            annotation = self.annotation
            if (
                isinstance(annotation, type)
                and issubclass(annotation, Path)
                and info.path_type is None
                and isinstance(value, str)
                and value
            ):  # typer's own checks (exists, dir_okay...) on the Path pydantic would make
                return coerce_path(Path(value), info, path_type=annotation, param=param,
                                   ctx=ctx)
            result = _plain(annotation, info, value)
            if result is _UNDECIDED:
                return original(self.descriptor)._coerce_value(value, param=param, ctx=ctx)
            return result

    def build_runtime_param(descriptor: Any) -> Any:
        if descriptor.file_annotation is not None:
            return original(descriptor)
        return PlainRuntimeParam(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            descriptor=descriptor,
        )

    build_runtime_param.evalband_plain = True  # type: ignore[attr-defined]
    build_runtime_param.typer_original = original  # type: ignore[attr-defined]
    typer.core.build_runtime_param = build_runtime_param  # type: ignore[attr-defined]
    return True
