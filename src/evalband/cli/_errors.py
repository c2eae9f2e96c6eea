"""Library errors in the command line's words: one line, Python argument names as flags."""

from __future__ import annotations

import re

from evalband.errors import EvalbandError

__all__ = ["error_line", "flag_for"]

# Arguments whose flag is not their name with dashes.
_FLAGS = {"batch_size": "--batch", "out_dir": "--out", "new_run_id": "--run-id"}


def flag_for(parameter: str) -> str:
    """The command-line flag of a library argument.

    >>> flag_for("max_batch"), flag_for("batch_size")
    ('--max-batch', '--batch')
    """
    return _FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def error_line(exc: EvalbandError) -> str:
    """The first line of ``exc``'s message, with the arguments it names shown as flags.

    A library message names its arguments as Python does, in backticks (```allow_empty=True```,
    ```max_batch```); the error lists them in ``parameters``, and here each becomes the flag
    that sets it (``--allow-empty``, ``--max-batch``). Everything else is left alone.

    >>> err = EvalbandError("pass `allow_empty=True` to allow it; `max_batch` is 0",
    ...                     parameters=("allow_empty", "max_batch"))
    >>> error_line(err)
    'pass --allow-empty to allow it; --max-batch is 0'
    """
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for name in getattr(exc, "parameters", ()):
        text = re.sub(rf"`{re.escape(name)}(=True)?`", flag_for(name), text)
    return text
