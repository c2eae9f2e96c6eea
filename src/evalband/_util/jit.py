"""Optional compiled kernels: one mechanism for every numba-compiled function in evalband.

A kernel is written once as an ordinary Python function over numpy arrays and scalars
(so it runs, slowly, without numba, and the tests compare both executions). With the
``fast`` extra (``pip install 'evalband[fast]'``, numba) :func:`compiled` returns it
compiled: no fast-math (IEEE results; no fused multiply-adds, no reassociation), the
numpy error model (no zero-division checks), the GIL released, and numba's on-disk
cache (a new process loads a kernel in ~0.1 s; the first compilation on a machine
takes a few seconds). numba is imported only when a kernel is first asked for.

Callers decide with :func:`use_compiled`: ``"numpy"`` never, ``"compiled"`` always
(an error without numba), ``"auto"`` when numba is ALREADY loaded in this process and the
batch has at least :data:`MIN_COMPILED_BATCH` rows. ``"auto"`` never pays numba's one-time
cost on the caller's behalf: importing numba (~0.3 s) and loading a kernel from its cache
(~0.2 s; ~2-3 s to compile on a new machine) outweigh what one batch saves (~0.4 us per
episode for the reaching lab) below millions of episodes. Ask for ``"compiled"`` once (or
import numba); from then on large batches in this process take the compiled kernels.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

from evalband.errors import InvalidParameterError

__all__ = [
    "KERNELS",
    "MIN_COMPILED_BATCH",
    "compiled",
    "compiled_available",
    "kernel_helper",
    "numba_loaded",
    "use_compiled",
]

KERNELS = ("auto", "numpy", "compiled")
"""The ``kernel=`` choices of the functions that have a compiled form."""

MIN_COMPILED_BATCH = 2048
"""Below this many rows ``"auto"`` keeps numpy even with numba loaded: per call, numpy is
as fast there."""

F = TypeVar("F", bound=Callable[..., Any])

_HELPERS: list[Callable[..., Any]] = []  # kernel helpers not yet registered with numba


def kernel_helper(fn: F) -> F:
    """Mark ``fn`` as callable from a compiled kernel; ``fn`` itself is returned unchanged.

    A kernel split into helper functions calls them by name. Uncompiled, they are plain
    Python calls; when a kernel is compiled (:func:`compiled`) every marked helper is first
    registered with numba (``numba.extending.register_jitable``), so the compiled kernel
    calls their compiled forms. numba is not imported here.

    >>> @kernel_helper
    ... def twice(x: float) -> float:
    ...     return 2.0 * x
    >>> twice(1.5)
    3.0
    """
    _HELPERS.append(fn)
    return fn


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


def numba_loaded() -> bool:
    """Whether numba is already imported in this process (``"auto"`` never imports it).

    >>> isinstance(numba_loaded(), bool)
    True
    """
    return "numba" in sys.modules


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
    return rows >= MIN_COMPILED_BATCH and numba_loaded() and compiled_available()


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
    from numba.extending import register_jitable

    while _HELPERS:  # before compiling: the kernel may call them
        register_jitable(error_model="numpy")(_HELPERS.pop(0))  # the kernels' IEEE model
    # A numba Dispatcher: called like ``fn`` with the same arguments and results.
    return cast(F, numba.njit(cache=True, nogil=True, error_model="numpy")(fn))
