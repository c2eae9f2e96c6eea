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

from evalband._util.imports import lazy_attributes

_LAZY = {
    "collect": "evalband.report._data",
    "comparison_document": "evalband.report._document",
    "comparison_json": "evalband.report._document",
    "render_html": "evalband.report._html",
    "render_markdown": "evalband.report._markdown",
    "comparison_markdown": "evalband.report._markdown",
    "html_page": "evalband.report._page",
    "figure_svg": "evalband.report._svg",
    "comparison_sentence": "evalband.report._words",
    "write_report": "evalband.report._write",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
