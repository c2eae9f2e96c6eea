"""Plots as SVG markup written directly: axes with ticks, lines, bands, markers, bars, text.

The report's figures are simple (a few hundred points at most), so they are written as SVG
strings here instead of laid out by matplotlib, which cost about 0.15 s per figure and
0.6 s to import. Nothing here refers to an ``id``: several figures on one page never
collide, and no markup points outside the page. Text stays ``<text>`` (searchable,
``sans-serif``); every figure carries ``role="img"``, an ``aria-label``, a ``<title>`` and a
``<desc>``. Data elements carry a class (``series``, ``band``, ``mark``, ``bar``,
``interval``) so tests can count what a figure encodes.

>>> fig = Canvas(4, 2, "demo", "a line")
>>> ax = fig.axes(xlim=(0, 1), ylim=(0, 1))
>>> ax.line([0, 1], [0, 1], "#4c72b0")
>>> svg = fig.svg()
>>> svg.startswith("<svg") and 'class="series"' in svg and "<title>demo</title>" in svg
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = ["Canvas", "Axes", "nice_ticks", "integer_ticks", "log_ticks", "plain", "label_width"]

DPI = 96.0
"""Pixels per inch of a figure's size."""
FONT = 12.0
"""Font size (px) of tick labels; titles and labels are a little larger or smaller."""
_CHAR = 0.56  # average glyph width of sans-serif, in ems: margins for tick labels
_GRID = "#e8e8e8"
_AXIS = "#333333"


def _f(v: float) -> str:
    """A coordinate, short: ``12.5`` not ``12.500000``."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def plain(v: float) -> str:
    """A tick label: ``1,000`` not ``1e3``, ``0.5`` not ``0.500``.

    >>> plain(1000.0), plain(0.5), plain(20.0), plain(-0.05)
    ('1,000', '0.5', '20', '-0.05')
    """
    if abs(v - round(v)) < 1e-9 * max(1.0, abs(v)):
        return f"{round(v):,}"
    return f"{v:.6g}"


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering ``[lo, hi]``.

    >>> nice_ticks(-2, 102)
    [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    >>> nice_ticks(0, 1, 4)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * 0.999)
    first = math.ceil(lo / step - 1e-9)
    out = []
    i = first
    while i * step <= hi + 1e-9 * step:
        out.append(round(i * step, 10) + 0.0)
        i += 1
    return out


def integer_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """:func:`nice_ticks` on whole numbers only (episode counts, suite indices).

    >>> integer_ticks(0, 3)
    [0.0, 1.0, 2.0, 3.0]
    """
    ticks = nice_ticks(lo, hi, count)
    if len(ticks) > 1 and ticks[1] - ticks[0] < 1:
        return [float(v) for v in range(math.ceil(lo), math.floor(hi) + 1)]
    return [t for t in ticks if t == int(t)]


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[float]]:
    """Decades in ``[lo, hi]`` (labelled) and the 2s and 5s between them (not).

    >>> log_ticks(1, 500)
    ([1.0, 10.0, 100.0], [2.0, 5.0, 20.0, 50.0, 200.0, 500.0])
    """
    major: list[float] = []
    minor: list[float] = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1.0, 2.0, 5.0):
            v = m * 10.0**e
            if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                (major if m == 1.0 else minor).append(v)
    return major, minor


@dataclass
class Axes:
    """One panel: data coordinates mapped onto a pixel box; elements appended as markup."""

    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlog: bool = False
    ylog: bool = False
    parts: list[str] = field(default_factory=list)
    under: list[str] = field(default_factory=list)

    def _t(self, v: float, lim: tuple[float, float], log: bool) -> float:
        a, b = lim
        if log:
            v, a, b = (math.log10(max(x, 1e-300)) for x in (v, a, b))
        return (v - a) / (b - a) if b != a else 0.5

    def sx(self, v: float) -> float:
        """Pixel x of data x."""
        return self.left + self.width * self._t(v, self.xlim, self.xlog)

    def sy(self, v: float) -> float:
        """Pixel y of data y."""
        return self.top + self.height * (1 - self._t(v, self.ylim, self.ylog))

    def _path(self, xs: Sequence[float], ys: Sequence[float]) -> str:
        d, pen = [], "M"
        for x, y in zip(xs, ys, strict=True):
            if not (math.isfinite(x) and math.isfinite(y)):
                pen = "M"  # a gap (NaN: no such value) breaks the line
                continue
            d.append(f"{pen}{_f(self.sx(x))} {_f(self.sy(y))}")
            pen = "L"
        return "".join(d)

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str, width: float = 1.5,
             dash: str | None = None, opacity: float | None = None, cls: str = "series",
             label: str | None = None) -> None:
        """A polyline through the points (NaN breaks it): one ``<path>``."""
        d = self._path(xs, ys)
        if not d:
            return
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' stroke-opacity="{opacity}"' if opacity is not None else ""
        extra += f' data-points="{sum(1 for _ in d.split("L")) + d.count("M") - 1}"'
        aria = f"<title>{escape(label)}</title>" if label else ""
        self.parts.append(f'<path class="{cls}" d="{d}" fill="none" stroke="{colour}" '
                          f'stroke-width="{width}" stroke-linejoin="round"{extra}>{aria}</path>')

    def band(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float],
             colour: str, opacity: float = 0.18) -> None:
        """The region between two curves over the same xs: one ``<path>`` polygon."""
        up = self._path(xs, highs)
        down = self._path(list(xs)[::-1], list(lows)[::-1])
        if up and down:
            self.under.append(f'<path class="band" d="{up}L{down[1:]}Z" fill="{colour}" '
                              f'fill-opacity="{opacity}" stroke="none"/>')

    def marker(self, x: float, y: float, colour: str, size: float = 4.5, shape: str = "o",
               hollow: bool = False, cls: str = "mark") -> str:
        """One marker's markup (``o`` circle, ``s`` square, ``D`` diamond, ``+`` plus)."""
        px, py, r = self.sx(x), self.sy(y), size * 0.67
        fill = "white" if hollow else colour
        if shape == "o":
            return (f'<circle class="{cls}" cx="{_f(px)}" cy="{_f(py)}" r="{_f(r)}" '
                    f'fill="{fill}" stroke="{colour}" stroke-width="1.2"/>')
        if shape == "s":
            return (f'<rect class="{cls}" x="{_f(px - r)}" y="{_f(py - r)}" width="{_f(2 * r)}" '
                    f'height="{_f(2 * r)}" fill="{fill}" stroke="{colour}"/>')
        if shape == "D":
            q = r * 1.2
            return (f'<path class="{cls}" d="M{_f(px)} {_f(py - q)}L{_f(px + q)} {_f(py)}'
                    f'L{_f(px)} {_f(py + q)}L{_f(px - q)} {_f(py)}Z" fill="{fill}" '
                    f'stroke="{colour}"/>')
        q = r * 1.4
        return (f'<path class="{cls}" d="M{_f(px - q)} {_f(py)}H{_f(px + q)}M{_f(px)} '
                f'{_f(py - q)}V{_f(py + q)}" stroke="{colour}" stroke-width="2" fill="none"/>')

    def markers(self, xs: Sequence[float], ys: Sequence[float], colour: str, size: float = 4.5,
                shape: str = "o", hollow: bool = False) -> None:
        """One marker per point."""
        for x, y in zip(xs, ys, strict=True):
            self.parts.append(self.marker(x, y, colour, size, shape, hollow))

    def interval(self, y: float, est: float, low: float, high: float, colour: str,
                 size: float = 4.5, shape: str = "o", hollow: bool = False, width: float = 1.3,
                 label: str | None = None) -> None:
        """A horizontal interval with caps and its estimate: one ``<g class="interval">``."""
        py, a, b = self.sy(y), self.sx(low), self.sx(high)
        tip = f"<title>{escape(label)}</title>" if label else ""
        self.parts.append(
            f'<g class="interval" data-estimate="{est:.6g}" data-low="{low:.6g}" '
            f'data-high="{high:.6g}">{tip}<path d="M{_f(a)} {_f(py)}H{_f(b)}M{_f(a)} '
            f'{_f(py - 3)}V{_f(py + 3)}M{_f(b)} {_f(py - 3)}V{_f(py + 3)}" stroke="{colour}" '
            f'stroke-width="{width}" fill="none"/>'
            f"{self.marker(est, y, colour, size, shape, hollow, cls='estimate')}</g>")

    def hbar(self, y: float, left: float, width: float, thickness: float, colour: str,
             label: str | None = None) -> None:
        """A horizontal bar from ``left`` to ``left + width`` (data x), ``thickness`` in y."""
        x0, x1 = self.sx(left), self.sx(left + width)
        y0, y1 = self.sy(y + thickness / 2), self.sy(y - thickness / 2)
        tip = f"<title>{escape(label)}</title>" if label else ""
        self.parts.append(f'<rect class="bar" x="{_f(x0)}" y="{_f(y0)}" width="{_f(x1 - x0)}" '
                          f'height="{_f(y1 - y0)}" fill="{colour}">{tip}</rect>')

    def vbar(self, x: float, bottom: float, height: float, thickness: float, colour: str,
             opacity: float = 1.0) -> None:
        """A horizontal-axis histogram bar is :meth:`hbar`; this one is from the y axis."""
        self.hbar(x, bottom, height, thickness, colour)
        self.parts[-1] = self.parts[-1].replace(">", f' fill-opacity="{opacity}">', 1)

    def hline(self, y: float, colour: str, width: float = 1.0, dash: str | None = None) -> None:
        """A horizontal line across the panel."""
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        py = _f(self.sy(y))
        self.parts.append(f'<path d="M{_f(self.left)} {py}H{_f(self.left + self.width)}" '
                          f'stroke="{colour}" stroke-width="{width}"{extra}/>')

    def vline(self, x: float, colour: str, width: float = 1.0, dash: str | None = None) -> None:
        """A vertical line across the panel."""
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        px = _f(self.sx(x))
        self.parts.append(f'<path d="M{px} {_f(self.top)}V{_f(self.top + self.height)}" '
                          f'stroke="{colour}" stroke-width="{width}"{extra}/>')

    def hspan(self, low: float, high: float, colour: str, opacity: float = 0.2) -> None:
        """A shaded horizontal stripe between two y values."""
        y0, y1 = self.sy(high), self.sy(low)
        self.under.append(f'<rect class="span" x="{_f(self.left)}" y="{_f(y0)}" '
                          f'width="{_f(self.width)}" height="{_f(y1 - y0)}" fill="{colour}" '
                          f'fill-opacity="{opacity}"/>')

    def rect(self, x0: float, y0: float, x1: float, y1: float, colour: str) -> None:
        """An unfilled rectangle in data coordinates."""
        a, b, c, d = self.sx(x0), self.sy(y1), self.sx(x1), self.sy(y0)
        self.under.append(f'<rect x="{_f(a)}" y="{_f(b)}" width="{_f(c - a)}" '
                          f'height="{_f(d - b)}" fill="none" stroke="{colour}" '
                          'stroke-width="0.8"/>')

    def text(self, px: float, py: float, s: str, colour: str = _AXIS, size: float = 10.0,
             anchor: str = "start", baseline: str = "middle", halo: bool = False) -> None:
        """Text at a pixel position (use :meth:`sx`/:meth:`sy` for data positions).

        ``halo`` draws a white outline under the glyphs, legible over curves.
        """
        lines = s.split("\n")
        if len(lines) == 1:
            body = escape(s)
        else:
            body = "".join(f'<tspan x="{_f(px)}" dy="{0 if i == 0 else 1.15}em">'
                           f"{escape(line)}</tspan>" for i, line in enumerate(lines))
        extra = (' stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke"'
                 if halo else "")
        self.parts.append(f'<text x="{_f(px)}" y="{_f(py)}" font-size="{size}" fill="{colour}" '
                          f'text-anchor="{anchor}" dominant-baseline="{baseline}"{extra}>'
                          f"{body}</text>")

    def frame(self, xticks: Sequence[float] | None = None, yticks: Sequence[float] | None = None,
              *, ylabels: Sequence[str] | None = None, xminor: Sequence[float] = (),
              yminor: Sequence[float] = (), grid: str = "both", ytick_labels: bool = True,
              ytick_size: float = FONT) -> None:
        """Left and bottom axes with ticks and labels; a light grid behind the data."""
        x0, x1 = self.left, self.left + self.width
        y0, y1 = self.top, self.top + self.height
        out = []
        for v in xticks or ():
            px = _f(self.sx(v))
            if grid in ("both", "x"):
                self.under.insert(0, f'<path d="M{px} {_f(y0)}V{_f(y1)}" stroke="{_GRID}"/>')
            out.append(f'<path d="M{px} {_f(y1)}v4" stroke="{_AXIS}"/>'
                       f'<text x="{px}" y="{_f(y1 + 7)}" text-anchor="middle" '
                       f'dominant-baseline="hanging">{escape(plain(v))}</text>')
        for v in xminor:
            out.append(f'<path d="M{_f(self.sx(v))} {_f(y1)}v2.5" stroke="{_AXIS}"/>')
        for i, v in enumerate(yticks or ()):
            py = _f(self.sy(v))
            if grid in ("both", "y"):
                self.under.insert(0, f'<path d="M{_f(x0)} {py}H{_f(x1)}" stroke="{_GRID}"/>')
            label = ylabels[i] if ylabels is not None else plain(v)
            out.append(f'<path d="M{_f(x0)} {py}h-4" stroke="{_AXIS}"/>')
            if ytick_labels:
                out.append(f'<text x="{_f(x0 - 6)}" y="{py}" text-anchor="end" '
                           f'font-size="{ytick_size}" dominant-baseline="middle">'
                           f"{escape(label)}</text>")
        for v in yminor:
            out.append(f'<path d="M{_f(x0)} {_f(self.sy(v))}h-2.5" stroke="{_AXIS}"/>')
        out.append(f'<path d="M{_f(x0)} {_f(y0)}V{_f(y1)}H{_f(x1)}" fill="none" '
                   f'stroke="{_AXIS}"/>')
        self.parts.append(f'<g class="axis" font-size="{FONT}" fill="{_AXIS}">{"".join(out)}</g>')

    def xlabel(self, s: str) -> None:
        """The x axis label, under the tick labels."""
        self.text(self.left + self.width / 2, self.top + self.height + 34, s, size=FONT + 0.5,
                  anchor="middle")

    def ylabel(self, s: str, offset: float) -> None:
        """The y axis label, turned, ``offset`` pixels left of the axis."""
        cx, cy = self.left - offset, self.top + self.height / 2
        self.parts.append(f'<text transform="translate({_f(cx)} {_f(cy)}) rotate(-90)" '
                          f'font-size="{FONT + 0.5}" fill="{_AXIS}" text-anchor="middle">'
                          f"{escape(s)}</text>")

    def title(self, s: str, size: float = 12.5) -> None:
        """A title above the panel, on the left."""
        self.text(self.left, self.top - 8, s, size=size, baseline="auto")

    def markup(self) -> str:
        """The panel's markup: shaded regions and grid first, then data and axes."""
        return "".join(self.under) + "".join(self.parts)


def label_width(labels: Sequence[str], size: float = FONT) -> float:
    """Pixels the longest label needs (an estimate: no font metrics here).

    >>> label_width(["ab", "abcd"]) > label_width(["ab"])
    True
    """
    return max((len(s) for s in labels), default=0) * size * _CHAR


@dataclass
class Canvas:
    """A figure: its size in inches, an accessible name and description, legend, panels."""

    width_in: float
    height_in: float
    title: str
    desc: str
    legend: list[tuple[str, str, str]] = field(default_factory=list)
    panels: list[Axes] = field(default_factory=list)

    @property
    def width(self) -> float:
        """Width in pixels."""
        return self.width_in * DPI

    @property
    def height(self) -> float:
        """Height in pixels."""
        return self.height_in * DPI

    def add_legend(self, label: str, colour: str, kind: str = "line") -> None:
        """A legend entry above the panels: ``line``, ``dash``, ``dot``, ``hollow`` or ``box``."""
        self.legend.append((kind, colour, label))

    def legend_rows(self, columns: int) -> int:
        """Rows the legend takes with ``columns`` entries per row."""
        return -(-len(self.legend) // max(columns, 1)) if self.legend else 0

    def axes(self, xlim: tuple[float, float], ylim: tuple[float, float], *, left: float = 60,
             right: float = 16, top: float = 14, bottom: float = 46, xlog: bool = False,
             ylog: bool = False, col: int = 0, cols: int = 1, row: int = 0, rows: int = 1,
             gap: float = 14, vgap: float = 24) -> Axes:
        """A panel in a ``rows x cols`` grid, inside the given margins (pixels)."""
        w = (self.width - left - right - gap * (cols - 1)) / cols
        h = (self.height - top - bottom - vgap * (rows - 1)) / rows
        ax = Axes(left + col * (w + gap), top + row * (h + vgap), w, h, xlim, ylim, xlog, ylog)
        self.panels.append(ax)
        return ax

    def _legend_markup(self, columns: int) -> str:
        out, step = [], (self.width - 20) / max(columns, 1)
        for i, (kind, colour, label) in enumerate(self.legend):
            x, y = 10 + (i % columns) * step, 12 + 16 * (i // columns)
            if kind in ("dot", "hollow"):
                fill = "white" if kind == "hollow" else colour
                sym = (f'<circle cx="{_f(x + 9)}" cy="{_f(y)}" r="3.5" fill="{fill}" '
                       f'stroke="{colour}" stroke-width="1.2"/>')
            elif kind == "box":
                sym = (f'<rect x="{_f(x + 2)}" y="{_f(y - 5)}" width="14" height="10" '
                       f'fill="{colour}"/>')
            else:
                dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
                sym = (f'<path d="M{_f(x)} {_f(y)}h18" stroke="{colour}" '
                       f'stroke-width="1.6"{dash}/>')
            out.append(f'{sym}<text x="{_f(x + 24)}" y="{_f(y)}" dominant-baseline="middle">'
                       f"{escape(label)}</text>")
        return f'<g class="legend" font-size="{FONT - 0.5}" fill="{_AXIS}">{"".join(out)}</g>'

    def svg(self, legend_columns: int = 3) -> str:
        """The figure as one ``<svg>`` element (inline, no ids, no external references)."""
        w, h = _f(self.width), _f(self.height)
        legend = self._legend_markup(legend_columns) if self.legend else ""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}" role="img" aria-label="{escape(self.title)}" '
                f'font-family="sans-serif" version="1.1"><title>{escape(self.title)}</title>'
                f"<desc>{escape(self.desc)}</desc>{legend}"
                f'{"".join(ax.markup() for ax in self.panels)}</svg>')
