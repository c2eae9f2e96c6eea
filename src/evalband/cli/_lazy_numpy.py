"""numpy's unused submodules stay unexecuted in the command line's process until touched.

``import scipy.special`` (scipy >= 1.15) imports ``scipy._lib.array_api_compat.numpy``,
which copies numpy's namespace: ``from numpy import *`` and ``hasattr(numpy, name)`` for
every name of ``dir(numpy)``. numpy (2.x) lists its lazily imported submodules there
(``f2py``, ``testing``, ``polynomial``, ``ma``, ``random``, ...), so that copy executes
every one of them: about half of what ``import scipy.special`` costs (``numpy.f2py`` alone
imports ``charset_normalizer`` through ``numpy.f2py.crackfortran``), none of it used by the
statistics that ``evalband compare`` computes with ``bdtr`` and ``gammaln``.

:func:`install` (called by :func:`evalband.cli.main` for the command it runs) puts a finder first on
``sys.meta_path`` that, at the first ``import scipy`` of the process, registers each of
those submodules that is not yet imported as a module not yet executed (in ``sys.modules``
and as numpy's attribute, so numpy's ``__getattr__`` does not import it eagerly; as
:class:`importlib.util.LazyLoader` does, with a lock so that threads wait for the one
executing it) and then steps aside. The copy then holds the same module objects,
unexecuted; the first attribute anyone reads from one (``numpy.random.default_rng``,
``import numpy.testing``, a policy's ``from numpy.polynomial import Polynomial``) executes
it then, in full, as an ordinary import would have: every value is the one numpy gives.
Only the command line does this (library users' processes are left as numpy makes them),
and nothing happens in a process that never imports scipy, or that had imported scipy
before (the tests' in-process runs).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["DEFERRED", "defer_numpy_submodules", "install", "uninstall"]

#: numpy's lazily imported submodules that ``dir(numpy)`` names and nothing that ``evalband``
#: computes with needs at import time (``linalg``, ``fft``, ``typing``, ``core``, ``lib``,
#: ``exceptions``, ``dtypes``: cheap or used by scipy itself, left to numpy).
DEFERRED = ("f2py", "testing", "polynomial", "ma", "random", "ctypeslib", "rec", "char",
            "strings")


class _Deferred(types.ModuleType):
    """A module not yet executed: the first attribute read executes it, in one thread.

    :class:`importlib.util.LazyLoader`'s module on Python 3.11 turns itself into a plain
    module *before* executing its code, so a second thread reading an attribute meanwhile
    would see it half made (CPython gh-114763); here other threads wait for the execution,
    and the executing thread's own reads (the loader's, the module's) pass straight through.
    """

    def __getattribute__(self, attr: str) -> Any:
        spec = object.__getattribute__(self, "__spec__")
        state = spec.loader_state
        with state["lock"]:
            if object.__getattribute__(self, "__class__") is _Deferred:
                if state["loading"]:  # this thread, executing the module
                    return object.__getattribute__(self, attr)
                state["loading"] = True
                try:
                    state["loader"].exec_module(self)
                finally:
                    state["loading"] = False
                self.__class__ = types.ModuleType  # type: ignore[assignment]
        return getattr(self, attr)


def defer_numpy_submodules(names: Sequence[str] = DEFERRED) -> list[str]:
    """Register numpy's submodules ``names`` (those not imported yet) to execute when touched.

    Returns the names deferred. A name numpy does not have is skipped.

    >>> import numpy.random
    >>> defer_numpy_submodules(["random"])  # imported already: left as it is
    []
    """
    import numpy

    deferred: list[str] = []
    for name in names:
        full = f"numpy.{name}"
        if full in sys.modules:
            continue
        spec = importlib.util.find_spec(full)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader_state = {"lock": threading.RLock(), "loading": False, "loader": spec.loader}
        module.__class__ = _Deferred
        sys.modules[full] = module
        setattr(numpy, name, module)
        deferred.append(name)
    return deferred


class _BeforeScipy:
    """A ``sys.meta_path`` finder that defers numpy's submodules once, at ``import scipy``."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname == "scipy":
            uninstall()
            defer_numpy_submodules()
        return None  # the ordinary finders import it


def install() -> None:
    """Defer numpy's unused submodules at this process's first ``import scipy`` (if any).

    Nothing is done when scipy is imported already, or when installed before.
    """
    if "scipy" not in sys.modules and _BeforeScipy not in sys.meta_path:
        sys.meta_path.insert(0, _BeforeScipy)


def uninstall() -> None:
    """Take the finder of :func:`install` off ``sys.meta_path`` (when it is there)."""
    while _BeforeScipy in sys.meta_path:
        sys.meta_path.remove(_BeforeScipy)
