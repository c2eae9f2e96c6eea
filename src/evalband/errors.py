"""The one exception root of evalband and its named subclasses.

Every error a user can cause is an :class:`EvalbandError`. Messages say what was
expected, what came, and what to do; the CLI prints the message on one line and
exits with status 2.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EvalbandError",
    "InvalidInputError",
    "InvalidCountsError",
    "InvalidParameterError",
    "PanelError",
    "PanelMismatchError",
    "EnvError",
    "PolicyNotFoundError",
    "PolicyImportError",
    "StoreError",
    "RunNotFoundError",
    "SessionNotFoundError",
    "PreregistrationError",
    "BundleError",
    "ImportFormatError",
    "BackendError",
    "RobotError",
    "RunStoppedError",
]


class EvalbandError(Exception):
    """Root of every error evalband raises on purpose.

    Messages speak the library's language: they name the Python arguments involved in
    backticks (```max_batch```, ```allow_empty=True```), never command-line flags. Pass those
    names as ``parameters`` and the command line shows them as its flags (``--max-batch``,
    ``--allow-empty``), so one message serves both audiences.

    >>> err = EvalbandError("`max_batch` must be >= 1; got 0", parameters=("max_batch",))
    >>> str(err), err.parameters
    ('`max_batch` must be >= 1; got 0', ('max_batch',))
    """

    def __init__(self, *args: object, parameters: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # kwargs: e.g. ModuleNotFoundError's name
        self.parameters = tuple(parameters)


class InvalidInputError(EvalbandError, ValueError):
    """A value given by the user is not what the function accepts."""


class InvalidCountsError(InvalidInputError):
    """Counts that are not whole, non-negative numbers, or successes exceeding trials."""


class InvalidParameterError(InvalidInputError):
    """A parameter (confidence, method name, probability, ...) is outside its domain."""


class PanelError(InvalidInputError):
    """A panel specification that cannot be loaded (unknown or ill-typed field, bad YAML)."""


class EnvError(PanelError):
    """A panel's environment that cannot be imported, found, built or checked."""


class PanelMismatchError(EvalbandError):
    """Runs or a resume whose panel fingerprints differ."""


class PolicyNotFoundError(EvalbandError):
    """A policy name or import path that does not resolve to a callable."""


class PolicyImportError(PolicyNotFoundError, ModuleNotFoundError):
    """A policy module that exists but cannot be imported (one of its imports is missing).

    Also a :class:`ModuleNotFoundError` (``name`` is the missing module), so code that
    catches the real error still does; the CLI says it in one line naming both modules.
    """


class StoreError(EvalbandError):
    """The run store cannot be opened or written (not a database, wrong schema, ...)."""


class RunNotFoundError(StoreError):
    """A run id that is not in the store."""


class SessionNotFoundError(StoreError):
    """A hardware-session id that is not in the store."""


class PreregistrationError(StoreError):
    """A pre-registration that is unknown, ambiguous, changed, or re-locked with new content."""


class BundleError(StoreError):
    """An artifact bundle that is incomplete or whose hashes do not match its manifest."""


class BackendError(EvalbandError):
    """A backend that cannot start (missing extra, no cluster) or a chunk that failed every try."""


class RobotError(EvalbandError):
    """A robot that cannot be built, connected or driven (the message names the port and fix)."""


class RunStoppedError(EvalbandError):
    """A run stopped before its end, marked ``interrupted``, its stored episodes kept.

    Raised by the runner when its episodes cannot go on usefully (a policy server that failed
    several episodes in a row); a re-run of the same run id resumes it.

    Attributes:
        run_id: the run.
    """

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class ImportFormatError(InvalidInputError):
    """A results file to import that does not match its documented format.

    The one-line message names the file, the data row (or line, or lerobot task and
    episode) and the column of the first problem, and what was expected against what came;
    nothing is imported.

    Attributes:
        path: the file.
        where: the row, line, or lerobot task and episode of the first problem.
        column: the column (or field) of the first problem, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        where: str | None = None,
        column: str | None = None,
        parameters: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, parameters=parameters)
        self.path = path
        self.where = where
        self.column = column
