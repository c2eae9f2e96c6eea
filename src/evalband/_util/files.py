"""A file written whole or not at all: written under a temporary name, renamed when done."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["write_text_whole", "written_whole"]


@contextmanager
def written_whole(out: Path) -> Iterator[Path]:
    """Yield ``OUT.part`` to write; renamed to ``out`` when the block ends without an error.

    An error or Ctrl-C (any exception, ``KeyboardInterrupt`` too) inside the block removes
    the partial file before it goes on: nothing is left beside the file asked for, and a
    file already at ``out`` is untouched.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "a.json"
    >>> try:
    ...     with written_whole(out) as tmp:
    ...         _ = tmp.write_text("{")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> sorted(out.parent.iterdir())
    []
    >>> with written_whole(out) as tmp:
    ...     _ = tmp.write_text("{}")
    >>> [p.name for p in out.parent.iterdir()], out.read_text()
    (['a.json'], '{}')
    """
    tmp = out.with_name(out.name + ".part")
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out)


def write_text_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8, folders created) whole or not at all.

    Through :func:`written_whole`: a crash or Ctrl-C mid-write leaves the file that was
    there (or none), never half a report.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "new" / "r.md"
    >>> write_text_whole(out, "# r")
    >>> out.read_text(), [p.name for p in out.parent.iterdir()]
    ('# r', ['r.md'])
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
