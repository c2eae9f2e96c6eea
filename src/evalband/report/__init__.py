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
    from evalband.report._agree import agreement_html, agreement_lines, agreement_markdown
    from evalband.report._data import collect, slice_summaries, stored_slice_summaries
    from evalband.report._document import (
        comparison_document,
        comparison_documents,
        comparison_json,
    )
    from evalband.report._format import percent
    from evalband.report._html import render_html, report_html
    from evalband.report._markdown import comparison_markdown, render_markdown
    from evalband.report._offline import offline_lines, offline_markdown
    from evalband.report._page import DEFAULT_CSP, html_page
    from evalband.report._preference import (
        preference_html,
        preference_lines,
        preference_markdown,
    )
    from evalband.report._ranking import ranking_html, ranking_lines, ranking_markdown
    from evalband.report._scorers import scorer_agreement_lines, scorers_lines
    from evalband.report._session import (
        TableText,
        comparison_table,
        flip_policy_table,
        p_text,
        points_text,
        policy_table,
        rate_text,
        session_html,
        session_section,
    )
    from evalband.report._svg import figure_svg
    from evalband.report._sweep import sweep_html, sweep_lines, sweep_markdown
    from evalband.report._terminal import (
        comparison_renderables,
        metric_summary_table,
        slice_summary_table,
    )
    from evalband.report._words import LOOKS, comparison_sentence, look
    from evalband.report._write import write_report

__all__ = [
    "offline_lines",
    "offline_markdown",
    "preference_html",
    "preference_lines",
    "preference_markdown",
    "agreement_html",
    "agreement_lines",
    "scorer_agreement_lines",
    "scorers_lines",
    "agreement_markdown",
    "sweep_html",
    "sweep_lines",
    "sweep_markdown",
    "ranking_html",
    "ranking_lines",
    "ranking_markdown",
    "session_section",
    "render_html",
    "render_markdown",
    "write_report",
    "html_page",
    "figure_svg",
    "comparison_markdown",
    "collect",
    "slice_summaries",
    "stored_slice_summaries",
    "percent",
    "report_html",
    "DEFAULT_CSP",
    "TableText",
    "comparison_table",
    "flip_policy_table",
    "p_text",
    "points_text",
    "policy_table",
    "rate_text",
    "session_html",
    "comparison_renderables",
    "slice_summary_table",
    "metric_summary_table",
    "comparison_document",
    "comparison_documents",
    "comparison_json",
    "comparison_sentence",
    "LOOKS",
    "look",
]

_LAZY = {
    **dict.fromkeys(("offline_lines", "offline_markdown"), "evalband.report._offline"),
    **dict.fromkeys(("preference_html", "preference_lines", "preference_markdown"),
                    "evalband.report._preference"),
    **dict.fromkeys(("scorer_agreement_lines", "scorers_lines"), "evalband.report._scorers"),
    **dict.fromkeys(("agreement_html", "agreement_lines", "agreement_markdown"),
                    "evalband.report._agree"),
    **dict.fromkeys(("sweep_html", "sweep_lines", "sweep_markdown"), "evalband.report._sweep"),
    **dict.fromkeys(("ranking_html", "ranking_lines", "ranking_markdown"),
                    "evalband.report._ranking"),
    "session_section": "evalband.report._session",
    "render_html": "evalband.report._html",
    "render_markdown": "evalband.report._markdown",
    "comparison_markdown": "evalband.report._markdown",
    "write_report": "evalband.report._write",
    "html_page": "evalband.report._page",
    "figure_svg": "evalband.report._svg",
    "collect": "evalband.report._data",
    "slice_summaries": "evalband.report._data",
    "stored_slice_summaries": "evalband.report._data",
    "percent": "evalband.report._format",
    "report_html": "evalband.report._html",
    "DEFAULT_CSP": "evalband.report._page",
    "TableText": "evalband.report._session",
    "comparison_table": "evalband.report._session",
    "flip_policy_table": "evalband.report._session",
    "p_text": "evalband.report._session",
    "points_text": "evalband.report._session",
    "policy_table": "evalband.report._session",
    "rate_text": "evalband.report._session",
    "session_html": "evalband.report._session",
    "comparison_renderables": "evalband.report._terminal",
    "slice_summary_table": "evalband.report._terminal",
    "metric_summary_table": "evalband.report._terminal",
    "comparison_document": "evalband.report._document",
    "comparison_documents": "evalband.report._document",
    "comparison_json": "evalband.report._document",
    "comparison_sentence": "evalband.report._words",
    "LOOKS": "evalband.report._words",
    "look": "evalband.report._words",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
