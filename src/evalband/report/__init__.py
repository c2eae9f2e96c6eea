"""Reports: HTML (inline SVG plots, no network), Markdown for pull requests, terminal tables.

The report layer reads results and renders them; every number comes from
:mod:`evalband.analysis` and :mod:`evalband.stats` (it computes no statistic itself).
Names load on first use, so importing ``evalband.report`` is cheap; the report's figures
are SVG written directly (:mod:`evalband.report._svgplot`), and matplotlib loads only for
:func:`figure_svg` of a figure of your own.

>>> from evalband.report import html_page
>>> html_page("t", "<p>x</p>").count("<script")
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.report._html import render_html
    from evalband.report._markdown import comparison_markdown, render_markdown
    from evalband.report._page import html_page
    from evalband.report._svg import figure_svg
    from evalband.report._write import write_report

__all__ = [
    "render_html",
    "render_markdown",
    "write_report",
    "html_page",
    "figure_svg",
    "comparison_markdown",
]

_LAZY = {
    "render_html": "evalband.report._html",
    "render_markdown": "evalband.report._markdown",
    "comparison_markdown": "evalband.report._markdown",
    "write_report": "evalband.report._write",
    "html_page": "evalband.report._page",
    "figure_svg": "evalband.report._svg",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
