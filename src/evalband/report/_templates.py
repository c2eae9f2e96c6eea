"""The report's Jinja2 templates and static files, shipped as package data.

``evalband/report/templates/`` holds the page (``page.html.j2``), the report body
(``report.html.j2``), its CSS (``page.css``) and its sort script (``sort.js``). Values are
escaped as :func:`html.escape` escapes them (``finalize``), so a template never writes user
text unescaped; trusted markup is passed as :class:`markupsafe.Markup`. Jinja2 is imported on
first use.

>>> "table.sortable" in static("page.css") and "aria-sort" in static("sort.js")
True
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import BytecodeCache, Environment
    from jinja2.bccache import Bucket

__all__ = ["TEMPLATES", "environment", "render", "static"]

TEMPLATES = "evalband.report"
"""The package whose ``templates/`` folder holds the templates."""


@lru_cache(maxsize=8)
def static(name: str) -> str:
    """The text of a file in ``templates/`` (CSS, script), read from the installed package."""
    return (files(TEMPLATES) / "templates" / name).read_text(encoding="utf-8")


def _format(value: Any, spec: str) -> str:
    """``{{ x | f(".3g") }}``: Python's :func:`format` (Jinja's own ``format`` is ``%``)."""
    return format(value, spec)


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment: package templates, autoescape, blocks trimmed."""
    from jinja2 import Environment, PackageLoader, StrictUndefined
    from markupsafe import Markup

    from evalband.report import _format as fmt

    escape = html.escape

    def finalize(value: Any) -> Any:
        """Escape as :func:`html.escape` does (quotes too); markup passes unchanged."""
        return value if hasattr(value, "__html__") else Markup(escape(str(value)))

    env = Environment(loader=PackageLoader(TEMPLATES, "templates"), autoescape=True,
                      finalize=finalize, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True, undefined=StrictUndefined,
                      bytecode_cache=_bytecode_cache())
    env.filters["f"] = _format
    env.filters["breakable"] = lambda text: Markup(breakable(str(text)))
    env.globals["fmt"] = fmt
    return env


_BREAK_AFTER = re.compile(r"([_=,/.:-])(?=\S)")


def breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after ``_ = , / . : -``.

    Slice names (``factor=level``) and cell keys are long identifiers without spaces: a
    table cell or a caption may then wrap them only between their parts, never mid-word.

    >>> breakable("held_out=a<b")
    'held_<wbr>out=<wbr>a&lt;b'
    """
    return _BREAK_AFTER.sub(r"\1<wbr>", html.escape(text))


def _bytecode_cache() -> BytecodeCache | None:
    """Jinja's file cache of compiled templates, so a new process does not compile them again.

    Compiling the report's templates costs a fresh process about 0.2 s; the cache keeps the
    compiled code in Jinja's per-user temporary folder (``_jinja2-cache-<uid>``, private to
    the user), keyed by each template's path and source checksum, the Jinja and Python
    versions, and here the evalband version and this module's text (the environment's
    options shape the compiled code).
    ``EVALBAND_TEMPLATE_CACHE=0`` turns it off; so does a folder it cannot use (then every
    process compiles, as without it). Nothing else changes: the output is the same.
    """
    import os

    if os.environ.get("EVALBAND_TEMPLATE_CACHE", "1") == "0":
        return None
    from jinja2 import FileSystemBytecodeCache

    from evalband import __version__

    class _Quiet(FileSystemBytecodeCache):
        """A cache whose read or write failure only costs a compile."""

        def load_bytecode(self, bucket: Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:
                bucket.reset()

        def dump_bytecode(self, bucket: Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    from hashlib import sha1
    from pathlib import Path

    # This module sets the environment's options: its text and the version key the code.
    setup = sha1(Path(__file__).read_bytes() + __version__.encode()).hexdigest()[:16]
    try:
        return _Quiet(pattern=f"__evalband_{setup}_%s.cache")
    except (OSError, RuntimeError):  # no safe temporary folder
        return None


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``.

    >>> render("page.html.j2", title="a < b", csp="", css="", script="", head="",
    ...        body="").count("<title>a &lt; b</title>")
    1
    """
    return environment().get_template(template).render(**context)
