"""The run manifest: what was run, on which panel, with which code, on which machine.

A :class:`RunManifest` is stored once per run (one row of the store's ``runs`` table) and
travels in an artifact bundle's ``manifest.json``. It is enough to say, months later, which
panel, policy, code version and environment produced a set of episodes.
"""

from __future__ import annotations

import dataclasses
import functools
import platform
import socket
import subprocess
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    from evalband.panel import Panel

__all__ = [
    "RunManifest",
    "RUN_STATUSES",
    "RUN_SOURCES",
    "MANIFEST_FIELDS",
    "check_step",
    "environment_versions",
    "git_sha",
    "new_manifest",
]

RUN_STATUSES: tuple[str, ...] = ("running", "finished", "interrupted", "imported")
"""Allowed values of :attr:`RunManifest.status`."""

RUN_SOURCES: tuple[str, ...] = ("runner", "recorder", "import", "session")
"""Allowed values of :attr:`RunManifest.source`."""

# Distributions whose versions can change results; missing ones are skipped.
_VERSIONED_DISTRIBUTIONS: tuple[str, ...] = (
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "pydantic",
    "gymnasium",
    "mujoco",
    "torch",
    "ray",
    "statsmodels",
)


@dataclass(frozen=True)
class RunManifest:
    """Everything about a run except its episodes.

    Attributes:
        run_id: unique id of the run within a store.
        panel_name: the panel's human name.
        panel_yaml: the panel specification, verbatim.
        panel_fingerprint: sha256 of the panel's result-changing content.
        policy: the policy's name or import path.
        policy_hash: checkpoint hash of the policy, when it has one.
        backend: the execution backend (``serial``, ``process``, ``ray``, ``recorder``, ...).
        workers: how many workers ran episodes.
        host: the machine the driver ran on.
        git_sha: the commit of the code that ran, when inside a git checkout.
        versions: evalband, Python and dependency versions (see :func:`environment_versions`).
        command: the command line that started the run, when known.
        started_at: ISO-8601 UTC timestamp of the start.
        finished_at: ISO-8601 UTC timestamp of the end; ``None`` while running.
        status: ``running``, ``finished``, ``interrupted`` or ``imported``.
        errors_as_failures: the user chose to count ``error`` episodes as failures.
        n_planned: how many episodes the panel plans for this run.
        source: ``runner``, ``recorder``, ``import`` or ``session`` (a hardware session).
        extra: anything else worth keeping (JSON-serialisable).
        step: the training step of the checkpoint this run evaluated, when given
            (``evalband run --step N``; a training callback's step): ``rank --by step`` and
            ``sweep`` order a training run's checkpoints by it.

    >>> m = RunManifest(run_id="r1", panel_name="demo", panel_yaml="name: demo",
    ...                 panel_fingerprint="abc", policy="expert", policy_hash=None,
    ...                 backend="serial", workers=1, host="lab", git_sha=None,
    ...                 versions={"evalband": "0.1.0"}, command=None,
    ...                 started_at="2025-01-01T00:00:00Z", finished_at=None, status="running")
    >>> RunManifest.from_dict(m.as_dict()) == m
    True
    >>> m.replace(status="finished").status
    'finished'
    """

    run_id: str
    panel_name: str
    panel_yaml: str
    panel_fingerprint: str
    policy: str
    policy_hash: str | None
    backend: str
    workers: int
    host: str
    git_sha: str | None
    versions: dict[str, str]
    command: str | None
    started_at: str
    finished_at: str | None
    status: str
    errors_as_failures: bool = False
    n_planned: int = 0
    source: str = "runner"
    extra: dict[str, Any] = field(default_factory=dict)
    step: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.run_id, str) or not self.run_id:
            raise InvalidInputError(f"run_id must be a non-empty string; got {self.run_id!r}")
        if self.status not in RUN_STATUSES:
            raise InvalidInputError(
                f"status must be one of {', '.join(RUN_STATUSES)}; got {self.status!r}"
            )
        if self.source not in RUN_SOURCES:
            raise InvalidInputError(
                f"source must be one of {', '.join(RUN_SOURCES)}; got {self.source!r}"
            )
        for name in ("workers", "n_planned"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a whole number >= 0; got {value!r}")
        check_step(self.step)
        if not isinstance(self.errors_as_failures, bool):
            raise InvalidInputError(
                f"errors_as_failures must be True or False; got {self.errors_as_failures!r}"
            )
        for name in ("versions", "extra"):
            if not isinstance(getattr(self, name), dict):
                raise InvalidInputError(
                    f"{name} must be a dict; got {type(getattr(self, name)).__name__}"
                )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of every field (dicts are copied).

        >>> sorted(_example().as_dict())[:3]
        ['backend', 'command', 'errors_as_failures']
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunManifest:
        """Build a manifest from a dictionary such as :meth:`as_dict` returns.

        Raises:
            StoreError: on unknown or missing field names (all of them are listed).

        >>> RunManifest.from_dict({**_example().as_dict(), "colour": "red"})
        Traceback (most recent call last):
        ...
        evalband.errors.StoreError: unknown run manifest field(s): colour; ...
        """
        unknown = sorted(set(data) - set(MANIFEST_FIELDS))
        if unknown:
            raise StoreError(
                f"unknown run manifest field(s): {', '.join(unknown)}; expected only "
                f"{', '.join(MANIFEST_FIELDS)}"
            )
        missing = [name for name in _REQUIRED_FIELDS if name not in data]
        if missing:
            raise StoreError(f"run manifest is missing field(s): {', '.join(missing)}")
        return cls(**data)

    def replace(self, **changes: Any) -> RunManifest:
        """A copy with some fields changed.

        Raises:
            StoreError: on unknown field names.

        >>> _example().replace(status="finished", finished_at="2025-01-01T01:00:00Z").finished_at
        '2025-01-01T01:00:00Z'
        """
        unknown = sorted(set(changes) - set(MANIFEST_FIELDS))
        if unknown:
            raise StoreError(
                f"unknown run manifest field(s): {', '.join(unknown)}; expected some of "
                f"{', '.join(MANIFEST_FIELDS)}"
            )
        return dataclasses.replace(self, **changes)


def check_step(step: object) -> None:
    """Refuse a checkpoint step that is not ``None`` or a whole number >= 0.

    >>> check_step(1000), check_step(None)
    (None, None)
    >>> check_step(-1)
    Traceback (most recent call last):
    ...
    evalband.errors.InvalidInputError: step must be a whole number >= 0 (a training step); got -1
    """
    if step is None:
        return
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise InvalidInputError(
            f"step must be a whole number >= 0 (a training step); got {step!r}",
            parameters=("step",),
        )


MANIFEST_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunManifest))
"""Field names of :class:`RunManifest`, in declaration order."""

_REQUIRED_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in fields(RunManifest)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)


def _example() -> RunManifest:
    """A small manifest for doctests (its panel fingerprint is its panel's)."""
    from evalband.panel import panel_from_yaml

    panel_yaml = "name: demo\nenv: evalband/Coin-v0\nepisodes: 1\nseed: 0\nbudget: {steps: 1}\n"
    return RunManifest(
        run_id="r1",
        panel_name="demo",
        panel_yaml=panel_yaml,
        panel_fingerprint=panel_from_yaml(panel_yaml).fingerprint,
        policy="expert",
        policy_hash=None,
        backend="serial",
        workers=1,
        host="lab",
        git_sha=None,
        versions={},
        command=None,
        started_at="2025-01-01T00:00:00Z",
        finished_at=None,
        status="running",
    )


def environment_versions() -> dict[str, str]:
    """Versions of evalband, Python and the dependencies that can change results (cached).

    >>> environment_versions()["evalband"] == environment_versions()["evalband"]
    True
    """
    return dict(_environment_versions())


@functools.lru_cache(maxsize=1)
def _environment_versions() -> dict[str, str]:
    """Versions of evalband, Python and the dependencies that can change results.

    Read once per process (installed versions do not change under a running process).

    Distributions that are not installed are skipped.

    Returns:
        A mapping name -> version string, e.g. ``{"evalband": "0.1.0", "python": "3.11.9",
        "numpy": "2.4.0", ...}``.

    >>> versions = environment_versions()
    >>> {"evalband", "python", "numpy"} <= set(versions)
    True
    """
    from importlib import metadata

    from evalband import __version__

    versions: dict[str, str] = {}
    try:
        versions["evalband"] = distribution_version("evalband")
    except metadata.PackageNotFoundError:
        versions["evalband"] = __version__
    versions["python"] = platform.python_version()
    for name in _VERSIONED_DISTRIBUTIONS:
        try:
            versions[name] = distribution_version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def distribution_version(name: str) -> str:
    """``importlib.metadata.version(name)``, reading only the metadata's header lines.

    ``metadata.version`` parses a distribution's whole METADATA file (numpy's long
    description included) with the email parser: ~10 ms a package, a tenth of a second of
    every ``evalband run``. The ``Version`` header comes first; anything unusual falls back
    to ``metadata.version``.

    Raises:
        importlib.metadata.PackageNotFoundError: ``name`` is not installed.

    >>> from importlib import metadata
    >>> distribution_version("numpy") == metadata.version("numpy")
    True
    """
    from importlib import metadata

    dist = metadata.distribution(name)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    for line in (text or "").splitlines():
        if not line:  # the end of the headers
            break
        key, sep, value = line.partition(":")
        if sep and key.lower() == "version" and value.strip():
            return value.strip()
    return metadata.version(name)


def git_sha(cwd: str | Path | None = None, *, timeout_s: float = 2.0) -> str | None:
    """The commit checked out at ``cwd`` (``git rev-parse HEAD``), or ``None``.

    Args:
        cwd: a directory inside the checkout; the current directory when ``None``.
        timeout_s: give up (and return ``None``) after this many seconds.

    Returns:
        The full hexadecimal commit id, or ``None`` when ``cwd`` is not in a git
        repository, the repository has no commit yet, or git is not installed.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     git_sha(d) is None
    True
    """
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=None if cwd is None else str(cwd),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = proc.stdout.strip()
    if proc.returncode != 0 or len(sha) not in (40, 64):
        return None
    if any(c not in "0123456789abcdef" for c in sha.lower()):
        return None
    return sha


def new_manifest(
    panel: Panel,
    policy: str,
    run_id: str,
    *,
    backend: str,
    workers: int,
    policy_hash: str | None,
    n_planned: int,
    command: str | None = None,
    errors_as_failures: bool = False,
    source: str = "runner",
    step: int | None = None,
) -> RunManifest:
    """The manifest of a new run: panel, policy, versions, git SHA, host, start time."""
    return RunManifest(
        run_id=run_id,
        panel_name=panel.name,
        panel_yaml=panel.to_yaml(),
        panel_fingerprint=panel.fingerprint,
        policy=policy,
        policy_hash=policy_hash,
        backend=backend,
        workers=workers,
        host=f"{socket.gethostname()} ({platform.platform()})",
        git_sha=git_sha(),
        versions=environment_versions(),
        command=command,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        finished_at=None,
        status="running",
        errors_as_failures=errors_as_failures,
        n_planned=n_planned,
        source=source,
        step=step,
    )
