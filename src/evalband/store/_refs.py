"""The one resolver for run references: a run id in the store, or an artifact-bundle path.

Every command that takes a run (``show``, ``compare``, ``report``, ``noise``, ``export``, the
Python API's :func:`evalband.load_run`) resolves it here, so they all agree:

1. a run id stored in the store wins;
2. else a reference that looks like a path (it holds a ``/``, or starts with ``.`` or
   ``~``; a run id never does) must be a directory holding ``manifest.json``: an artifact
   bundle;
3. else it is an unknown run id. When a bundle directory of that very name exists here, the
   error names both (write ``./NAME`` to read the bundle), so a folder named like a run never
   silently stands in for the stored run of that name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalband._util.ids import shown
from evalband.errors import BundleError, RunNotFoundError

if TYPE_CHECKING:
    from evalband.store._sqlite import RunStore

__all__ = ["RunRef", "resolve_run", "looks_like_path", "is_bundle_path"]

_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class RunRef:
    """Where a run reference points.

    Attributes:
        kind: ``"store"`` (a run id in the store) or ``"bundle"`` (an artifact bundle).
        run_id: the stored run id (``kind == "store"``), else ``None``.
        path: the bundle directory (``kind == "bundle"``), else ``None``.
    """

    kind: Literal["store", "bundle"]
    run_id: str | None = None
    path: Path | None = None


def looks_like_path(source: str | Path) -> bool:
    """Whether a reference is written as a path (a run id never is).

    >>> looks_like_path("baseline"), looks_like_path("./baseline"), looks_like_path("a/b")
    (False, True, True)
    """
    if isinstance(source, Path):
        return True
    text = str(source)
    return "/" in text or os.sep in text or text.startswith((".", "~"))


def is_bundle_path(source: str | Path) -> bool:
    """Whether ``source`` is written as a path and is a directory holding ``manifest.json``.

    >>> is_bundle_path("baseline")  # a bare name is a run id, even when such a folder exists
    False
    """
    return looks_like_path(source) and _is_bundle_dir(Path(source).expanduser())


def _is_bundle_dir(path: Path) -> bool:
    try:
        return path.is_dir() and (path / _MANIFEST).is_file()
    except OSError:  # a name too long for the file system, ...
        return False


def resolve_run(
    source: str | Path, store: RunStore | None, *, store_path: str | Path | None = None
) -> RunRef:
    """Resolve a run reference (see the module docstring for the rules).

    Args:
        source: a run id or an artifact-bundle directory.
        store: the run store to look ids up in; ``None`` when there is none (bundles only).
        store_path: the store's path, named in the error when ``store`` is ``None``.

    Returns:
        A :class:`RunRef`.

    Raises:
        RunNotFoundError: an id that is not stored (naming a same-named bundle directory when
            there is one), or no store to look it up in.
        BundleError: a path that is not a directory holding ``manifest.json``.

    >>> try:
    ...     resolve_run("./no-such-bundle", None)
    ... except BundleError as exc:
    ...     print(str(exc)[:59])
    ./no-such-bundle is written as a path, but there is no such
    """
    text = str(source)
    if store is not None and not isinstance(source, Path):
        if store.get_run(text) is not None:
            return RunRef("store", run_id=text)
    if looks_like_path(source):
        path = Path(source).expanduser()
        if _is_bundle_dir(path):
            return RunRef("bundle", path=path)
        try:
            is_dir = path.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            what = "there is no such directory" if not path.exists() else "a file, not a directory"
            raise BundleError(
                f"{text} is written as a path, but {what}; an artifact bundle is a directory "
                "made by evalband export (or give a run id)"
            )
        if not (path / _MANIFEST).is_file():
            raise BundleError(
                f"{text} is a directory without {_MANIFEST}, so not an artifact bundle; give a "
                "bundle directory made by evalband export, or a run id"
            )
    if _is_bundle_dir(Path(text)):
        where = f"the store {store.path}" if store is not None else (
            f"the store {store_path}" if store_path is not None else "any store"
        )
        raise RunNotFoundError(
            f"{shown(text)} is not a run in {where}, but a bundle directory of that name is here; "
            f"write ./{text} to read the bundle, or give a stored run id"
        )
    if store is None:
        where = (f"there is no run store at {store_path}" if store_path is not None
                 else "no run store was given")
        raise RunNotFoundError(
            f"{shown(text)} is neither a stored run nor an artifact-bundle path ({where}); give a "
            "bundle directory as a path (./NAME) or pass `store` with the store holding it",
            parameters=("store",),
        )
    store.require_run(text)  # raises, listing recent runs
    raise AssertionError("unreachable")  # pragma: no cover
