"""The one rule for names a user gives: run ids, session ids, pre-registration names.

A name is 1 to ``max_length`` letters, digits, ``.``, ``_`` or ``-``, starting with a letter
or digit. Such a name never looks like a path (no ``/``), fits in a file name, a URL path
segment and a terminal line, and needs no quoting in a shell.
"""

from __future__ import annotations

import re

from evalband.errors import InvalidInputError

__all__ = [
    "check_name", "check_run_id", "RUN_ID_MAX", "NAME_PATTERN", "safe_name", "shown",
]

RUN_ID_MAX = 128
"""The longest run id accepted (a default id is panel, policy and a 20-digit stamp)."""

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What every name matches in full (its length is checked separately)."""

_COLON_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def shown(value: object) -> str:
    """``repr(value)``, shortened past 60 characters (with the length of a long string).

    >>> shown("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxx' (100 characters)"
    """
    text = repr(value)
    if len(text) > 60:
        size = f" ({len(value)} characters)" if isinstance(value, str) else ""
        text = text[:40] + "..." + text[-10:] + size
    return text


def check_name(value: object, what: str, max_length: int = 64, *, colon: bool = False) -> str:
    """``value`` when it is a valid name of at most ``max_length`` characters.

    Args:
        value: the name given.
        what: what it names, for the message (``"run id"``, ``"session id"``).
        max_length: the longest name accepted.
        colon: also accept ``:`` after the first character (run ids: policies are named
            ``module:attr`` and ``reach1d:damped``, and ids are often made from them).

    Raises:
        InvalidInputError: anything else; the message shows the rule and (shortened) what
            came.

    >>> check_name("grasp-2025.06", "session id")
    'grasp-2025.06'
    >>> try:
    ...     check_name("a/b", "run id")
    ... except InvalidInputError as exc:
    ...     print(str(exc)[:45], "...", str(exc)[-10:])
    a run id must be 1-64 letters, digits, '.', ' ... got 'a/b'
    """
    pattern = _COLON_PATTERN if colon else NAME_PATTERN
    if not isinstance(value, str) or len(value) > max_length or not pattern.fullmatch(value):
        chars = "'.', '_', ':' or '-'" if colon else "'.', '_' or '-'"
        raise InvalidInputError(
            f"a {what} must be 1-{max_length} letters, digits, {chars}, starting "
            f"with a letter or digit; got {shown(value)}"
        )
    return value


def check_run_id(run_id: object) -> str:
    """``run_id`` when it is a valid run id (:func:`check_name` with ``:``, <= 128 characters).

    Raises:
        InvalidInputError: otherwise.

    >>> check_run_id("reach1d-baseline-20250101T000000000000")
    'reach1d-baseline-20250101T000000000000'
    """
    return check_name(run_id, "run id", RUN_ID_MAX, colon=True)


def safe_name(text: str, fallback: str, max_length: int = RUN_ID_MAX) -> str:
    """``text`` made into a valid name: other characters become ``_``, cut to length.

    >>> safe_name("my results (v2)", "imported")
    'my_results__v2_'
    >>> safe_name("..", "imported")
    'imported'
    """
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in text)
    safe = safe.lstrip("._-")[:max_length]
    return safe if NAME_PATTERN.fullmatch(safe) else fallback
