"""Validation shared across evalband: counts, probabilities, confidence, choices.

One place decides what a valid count is, so every formula (and every env, lab and command
that takes a count or a choice) rejects bad input the same way and with the same message
shape: what was expected, what came.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from evalband.errors import InvalidCountsError, InvalidParameterError

__all__ = [
    "as_count",
    "check_k_n",
    "check_confidence",
    "check_probability",
    "check_choice",
]


def as_count(value: object, name: str) -> int:
    """Return ``value`` as a non-negative ``int`` or raise :class:`InvalidCountsError`.

    Integral floats such as ``3.0`` are accepted; ``3.5``, ``-1``, ``NaN``, booleans
    and strings are not.

    >>> as_count(3.0, "k")
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidCountsError(
            f"{name} must be a whole number of episodes, got {value!r} ({type(value).__name__})"
        )
    as_float = float(value)
    if math.isnan(as_float) or math.isinf(as_float):
        raise InvalidCountsError(f"{name} must be a whole number of episodes, got {value!r}")
    if not as_float.is_integer():
        raise InvalidCountsError(f"{name} must be a whole number of episodes, got {value!r}")
    count = int(as_float)
    if count < 0:
        raise InvalidCountsError(f"{name} must be >= 0, got {count}")
    return count


def check_k_n(k: object, n: object, *, allow_empty: bool = False) -> tuple[int, int]:
    """Validate a success count ``k`` out of ``n`` trials and return them as ints.

    Args:
        k: successes.
        n: trials.
        allow_empty: accept ``n == 0`` (callers then return the vacuous interval).

    >>> check_k_n(9, 64)
    (9, 64)
    """
    k_int = as_count(k, "k (successes)")
    n_int = as_count(n, "n (trials)")
    if k_int > n_int:
        raise InvalidCountsError(
            f"successes k must not exceed trials n, got k={k_int} > n={n_int}"
        )
    if n_int == 0 and not allow_empty:
        raise InvalidCountsError(
            "n (trials) must be >= 1, got n=0; pass `allow_empty=True` for the vacuous "
            "interval [0, 1]",
            parameters=("allow_empty",),
        )
    return k_int, n_int


def _argument(name: str) -> tuple[str, tuple[str, ...]]:
    """``name`` as a message shows it, and the ``parameters`` of the error that names it.

    A Python argument name is shown in backticks and listed, so the command line shows its
    flag (``--p-a``); anything else (a flag, a description) is shown as given.

    >>> _argument("p_a"), _argument("--margin"), _argument("p (baseline rate)")
    (('`p_a`', ('p_a',)), ('--margin', ()), ('p (baseline rate)', ()))
    """
    return (f"`{name}`", (name,)) if name.isidentifier() else (name, ())


def check_confidence(confidence: object) -> float:
    """Validate a confidence level strictly inside (0, 1).

    >>> check_confidence(0.95)
    0.95
    >>> try:
    ...     check_confidence(1.5)
    ... except ValueError as exc:
    ...     print(exc, exc.parameters)
    `confidence` must be strictly between 0 and 1 (e.g. 0.95), got 1.5 ('confidence',)
    """
    shown, parameters = _argument("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise InvalidParameterError(
            f"{shown} must be a number strictly between 0 and 1, got {confidence!r}",
            parameters=parameters)
    value = float(confidence)
    if math.isnan(value) or not 0.0 < value < 1.0:
        raise InvalidParameterError(
            f"{shown} must be strictly between 0 and 1 (e.g. 0.95), got {confidence!r}",
            parameters=parameters)
    return value


def check_probability(p: object, name: str, *, open_interval: bool = False) -> float:
    """Validate a probability in [0, 1] (or (0, 1) when ``open_interval``).

    ``name`` is the argument's (in backticks in the message, so the command line shows its
    flag), or a flag or description shown as given.

    >>> check_probability(0.4, "p_a")
    0.4
    >>> check_probability(1.5, "p_a")
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidParameterError: `p_a` must be a probability in [0, 1], got 1.5
    """
    shown, parameters = _argument(name)
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise InvalidParameterError(f"{shown} must be a probability in [0, 1], got {p!r}",
                                    parameters=parameters)
    value = float(p)
    if open_interval and not 0.0 < value < 1.0:  # NaN too
        raise InvalidParameterError(f"{shown} must be strictly between 0 and 1, got {p!r}",
                                    parameters=parameters)
    if math.isnan(value):
        raise InvalidParameterError(f"{shown} must be a probability in [0, 1], got NaN",
                                    parameters=parameters)
    if not 0.0 <= value <= 1.0:
        raise InvalidParameterError(f"{shown} must be a probability in [0, 1], got {p!r}",
                                    parameters=parameters)
    return value


def check_choice(value: str, name: str, choices: Iterable[str], *,
                 argument: bool = False) -> str:
    """Validate that ``value`` is one of ``choices`` (case-insensitive); return it lower-cased.

    ``argument``: ``name`` is the caller's own argument (in backticks in the message, so the
    command line shows its flag); else it is shown as given (an env option, a file field).

    >>> check_choice("Wilson", "method", ["wilson", "wald"])
    'wilson'
    >>> try:
    ...     check_choice("magic", "method", ["wilson", "wald"], argument=True)
    ... except ValueError as exc:
    ...     print(exc, exc.parameters)
    `method` must be one of wilson, wald; got 'magic' ('method',)
    """
    options = list(choices)
    lowered = str(value).lower()
    if lowered not in options:
        shown, parameters = _argument(name) if argument else (name, ())
        raise InvalidParameterError(
            f"{shown} must be one of {', '.join(options)}; got {value!r}",
            parameters=parameters,
        )
    return lowered

