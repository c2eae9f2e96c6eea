"""The report's colours, and matplotlib figures of your own as inline SVG (ids made unique).

The report's figures are written by :mod:`evalband.report._svgplot` (no matplotlib, no
ids); :func:`figure_svg` serves figures drawn elsewhere with matplotlib.

matplotlib is an optional extra (``pip install 'evalband[figures]'``), imported inside the
functions that need it: importing :mod:`evalband.report` costs nothing until a figure is drawn,
and a missing matplotlib is one :class:`~evalband.errors.EvalbandError` saying what to install.
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure_svg", "new_figure", "styled", "PALETTE", "OUTCOME_COLOURS", "REGRESSED",
           "IMPROVED", "NEUTRAL"]

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
           "#ccb974")
"""One colour per run, baseline first."""
OUTCOME_COLOURS = {"success": "#2e7d32", "failure": "#c62828", "timeout": "#ef9a00",
                   "error": "#6a1b9a"}
"""One colour per outcome, the same in every plot and table."""
REGRESSED = "#c62828"
IMPROVED = "#2e7d32"
NEUTRAL = "#555555"

_RC: dict[Any, Any] = {
    "svg.fonttype": "none",  # text stays text: searchable, small, no embedded font files
    "svg.hashsalt": "evalband",  # deterministic ids (made unique per figure below)
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_DROP = (
    re.compile(r"<\?xml[^>]*\?>\s*"),
    re.compile(r"<!DOCTYPE[^>]*>\s*", re.DOTALL),
    re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL),
)
_ID = re.compile(r'\bid="([^"]+)"')
_P = ParamSpec("_P")
_INSTALL = "pip install 'evalband[figures]'"
_R = TypeVar("_R")


def _matplotlib() -> Any:
    """matplotlib, or an error that says how to install it."""
    try:
        import matplotlib
    except ImportError as exc:
        from evalband.errors import EvalbandError

        raise EvalbandError(
            f"figures of your own need matplotlib, which is not installed: {_INSTALL}"
        ) from exc
    return matplotlib


def styled(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a plotting function under the report's matplotlib style (an ``rc_context``)."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _matplotlib().rc_context(_RC):
            return fn(*args, **kwargs)

    return wrapper


def new_figure(width: float = 7.5, height: float = 3.2, **kwargs: Any) -> Figure:
    """A matplotlib figure not tied to pyplot (safe in servers and threads).

    >>> new_figure(4, 2).get_size_inches().tolist()
    [4.0, 2.0]
    """
    _matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained", **kwargs)


def figure_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to paste into an HTML page.

    The XML declaration, DOCTYPE (a URL) and RDF metadata (more URLs) are dropped; text is
    kept as ``<text>`` with a generic ``sans-serif`` fallback, so nothing is fetched; every
    ``id`` gets a prefix derived from the figure's content, so several figures on one page
    never share an id; ``xlink:href`` becomes ``href``. The ``width``/``height`` attributes
    are kept (CSS may scale the figure down through its ``viewBox``).

    Args:
        fig: a matplotlib figure (e.g. from :func:`new_figure`).

    Returns:
        The SVG markup, starting with ``<svg``.

    >>> fig = new_figure(3, 2)
    >>> _ = fig.add_subplot().plot([0, 1], [0, 1])
    >>> svg = figure_svg(fig)
    >>> svg.startswith("<svg") and "DOCTYPE" not in svg and "xlink:href" not in svg
    True
    """
    buf = io.StringIO()
    with _matplotlib().rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    for pattern in _DROP:
        text = pattern.sub("", text, count=1)
    text = text.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    text = text.replace("xlink:href=", "href=")
    prefix = "f" + hashlib.sha1(text.encode()).hexdigest()[:8] + "-"
    ids = set(_ID.findall(text))
    if ids:
        names = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
        text = re.sub(rf'\bid="({names})"', lambda m: f'id="{prefix}{m.group(1)}"', text)
        text = re.sub(rf"#({names})\b(?=[\"')])", lambda m: f"#{prefix}{m.group(1)}", text)
    return text.strip()
