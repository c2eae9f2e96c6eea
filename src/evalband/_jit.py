"""Optional compiled kernels: one mechanism for every numba-compiled function in evalband.

A kernel is written once as an ordinary Python function over numpy arrays and scalars
(so it runs, slowly, without numba, and the tests compare both executions). With the
``fast`` extra (``pip install 'evalband[fast]'``, numba) :func:`compiled` returns it
compiled: no fast-math (IEEE results; no fused multiply-adds, no reassociation), the
numpy error model (no zero-division checks), the GIL released, and numba's on-disk
cache (a new process loads a kernel in ~0.1 s; the first compilation on a machine
takes a few seconds). numba is imported only when a kernel is first asked for.

Callers decide with :func:`use_compiled`: ``"numpy"`` never, ``"compiled"`` always
(an error without numba), ``"auto"`` when numba imports and the batch has at least
:data:`MIN_COMPILED_BATCH` rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from evalband.errors import InvalidParameterError

__all__ = ["KERNELS", "MIN_COMPILED_BATCH", "compiled", "compiled_available", "use_compiled"]

KERNELS = ("auto", "numpy", "compiled")
"""The ``kernel=`` choices of the functions that have a compiled form."""

MIN_COMPILED_BATCH = 2048
"""Below this many rows ``"auto"`` keeps numpy: it is fast enough there, and the first
compiled call of a process pays a cache load (~0.1 s) or a compilation (~2 s)."""

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def compiled_available() -> bool:
    """Whether numba imports here (the ``fast`` extra); checked once per process.

    >>> isinstance(compiled_available(), bool)
    True
    """
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def use_compiled(kernel: str, rows: int) -> bool:
    """Whether a call over ``rows`` rows should take the compiled kernel.

    Args:
        kernel: ``"auto"``, ``"numpy"`` or ``"compiled"``.
        rows: the batch size.

    Raises:
        InvalidParameterError: an unknown ``kernel``, or ``"compiled"`` without numba.

    >>> use_compiled("numpy", 10**6)
    False
    >>> use_compiled("auto", 10)
    False
    """
    if kernel not in KERNELS:
        raise InvalidParameterError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "numpy":
        return False
    if kernel == "compiled":
        _require_numba()
        return True
    return rows >= MIN_COMPILED_BATCH and compiled_available()


def _require_numba() -> None:
    if not compiled_available():
        raise InvalidParameterError(
            "kernel='compiled' needs numba: pip install 'evalband[fast]' "
            "(or use kernel='numpy' or 'auto')"
        )


@functools.cache
def compiled(fn: F) -> F:
    """``fn`` compiled by numba (once per process per function; cached on disk).

    Raises:
        InvalidParameterError: numba is not installed.
    """
    _require_numba()
    import numba

    # A numba Dispatcher: called like ``fn`` with the same arguments and results.
    return cast(F, numba.njit(cache=True, nogil=True, error_model="numpy")(fn))
