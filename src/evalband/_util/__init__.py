"""Internal helpers shared by every layer of evalband (not public API).

A helper goes here when more than one package needs it and it knows nothing of any layer:
``imports`` (``module:attr`` resolution, lazy package attributes, source hashes), ``ids``
(the rule for user-given names), ``limits`` (sizes refused at once), ``jit`` (optional numba
kernels), ``names`` (the built-in env ids and policy names, with the modules behind them)
and ``validate`` (counts, probabilities, confidence levels, choices). Each imports
only the standard library and :mod:`evalband.errors`; this package imports nothing, so
``evalband --help`` pays for the modules it uses only.

Everything else crosses a package boundary through the package's public API (its
``__init__``) or a documented non-underscore module: ``tests/test_layering.py`` fails on an
import of another package's private module.
"""

__all__: list[str] = []
