"""The HTML report: verdict first, the slice table, the aggregate, plots, outcomes, provenance.

One self-contained file (:func:`~evalband.report._page.html_page`): plots are inline SVG,
tables sort on click, nothing is fetched. The markup is ``templates/report.html.j2``
(package data); this module draws the plots and hands the template the analysis objects
(:class:`~evalband.analysis.Comparison`, :class:`~evalband.analysis.RunSummary`,
:class:`~evalband.analysis.NoiseFloor`). Numbers are formatted by
:mod:`evalband.report._format` and the slice table is :data:`evalband.report._table.COLUMNS`,
so the terminal, the Markdown and the HTML say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.report._data import ReportData, RunView, collect, latency_rows
from evalband.report._page import html_page

if TYPE_CHECKING:
    from markupsafe import Markup

    from evalband.analysis import Comparison
    from evalband.store import RunStore
    from evalband.store._manifest import RunManifest

__all__ = ["render_html", "report_html", "comparison_table_html"]

OUTCOMES = ("success", "failure", "timeout", "error")
"""The outcome columns of the run tables, in order."""


def render_html(
    sources: Sequence[str],
    store: RunStore | str | Path | None = None,
    *,
    command: str | None = None,
    title: str | None = None,
    confidence: float = 0.95,
    allow_panel_mismatch: bool = False,
    sequential: bool = False,
) -> str:
    """One self-contained HTML report for one run, or for a comparison of several.

    Args:
        sources: run ids (in ``store``) or artifact-bundle directories, as
            :func:`evalband.load_run` accepts. One source gives a run report; two or more a
            comparison report (the first is the baseline, as ``evalband compare``) followed
            by each run.
        store: a run store, a path to one, or ``None`` (bundles only).
        command: the command line that asked for the report (reproducibility block).
        title: the page title (default: from the run ids).
        confidence: level of every band and interval (as ``evalband compare --confidence``).
        allow_panel_mismatch: compare runs of different panels anyway; the page says so
            in red above the verdict (as ``evalband compare --allow-panel-mismatch``).
        sequential: the anytime-valid verdict (as ``evalband compare --sequential``).

    Returns:
        The HTML document.

    Raises:
        InvalidParameterError: no sources, or ``confidence`` outside (0, 1).
        RunNotFoundError: a source is neither a run in ``store`` nor a bundle.
        PanelMismatchError: the runs were made on different panels and
            ``allow_panel_mismatch`` is false.

    >>> import tempfile, evalband
    >>> store = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> _ = evalband.run_panel(evalband.load_panel("reach1d"), "reach1d:damped", store,
    ...                        run_id="damped")
    >>> page = render_html(["damped"], store)
    >>> page.startswith("<!DOCTYPE html>"), page.count("<svg") >= 5
    (True, True)
    """
    return report_html(collect(sources, store, command=command, title=title,
                               confidence=confidence,
                               allow_panel_mismatch=allow_panel_mismatch,
                               sequential=sequential))


# ------------------------------------------------------------------------ what the template reads


def _svg(svg: str) -> Markup:
    from markupsafe import Markup

    return Markup(svg)


def _plots(data: ReportData) -> dict[str, Any]:
    """The plots (inline SVG) and the figures their captions quote."""
    from evalband.report import _curves, _plots, _plots_runs, _traces

    runs = data.runs
    labels = [f"{v.run_id} ({v.data.policy})" for v in runs]
    rows = _plots.forest_rows(runs, data.comparisons)
    out: dict[str, Any] = {
        "forest": _svg(_plots.forest_plot(rows, labels, data.confidence)),
        "forest_rows": len(rows), "max_rows": _plots.MAX_ROWS,
        "deltas": [(c, _svg(_plots.delta_plot(c))) for c in data.comparisons],
        "max_points": _curves.MAX_POINTS,
        "cumulative": None, "stories": 0, "swing": None, "suite_sizes": [],
        "power": None, "power_curve": None, "traces": None, "trace_caption": None,
        "trace_notes": [],
    }
    curves = []
    for v in runs:
        curve = _curves.cumulative_curve(v.data.records, confidence=data.confidence,
                                         errors_as_failures=v.data.errors_as_failures)
        if curve is not None:
            curves.append((v.run_id, curve))
    stories: list[_curves.StoryPoint] = []
    if len(runs) > 1:
        stories = _curves.running_verdicts(
            runs[0].data.records, runs[1].data.records, confidence=data.confidence,
            errors_as_failures=runs[0].data.errors_as_failures or runs[1].data.errors_as_failures)
    if curves:
        out["cumulative"] = _svg(_plots_runs.cumulative_plot(curves, stories))
        out["stories"] = len(stories)
    if any(v.noise is not None for v in runs):
        out["swing"] = _svg(_plots_runs.swing_plot(runs))
        out["suite_sizes"] = sorted({v.noise.suite_size for v in runs if v.noise is not None})
    pc = _curves.power_curve(runs, confidence=data.confidence)
    if pc is not None:
        out["power"], out["power_curve"] = _svg(_plots.power_plot(pc)), pc
    traces = _traces.episode_traces(runs)
    if traces is not None:
        out["trace_notes"] = list(traces.notes)
        if traces.traces:
            out["traces"] = _svg(_plots_runs.trace_plot(traces))
            out["trace_caption"] = traces.spec.caption  # the family's words
    out["outcomes"] = _svg(_plots.outcome_plot(runs))
    return out


def _metric_series(data: ReportData) -> list[tuple[str, dict[str, list[float]]]]:
    """Each run's metric values (its non-error episodes), baseline first: what the ECDFs draw."""
    from evalband.analysis._metrics import metric_specs, metric_values

    out = []
    for v in data.runs:
        cells = [c.key for c in v.data.panel.cells()]
        values = metric_values(v.data.records, cells)
        out.append((f"{v.run_id} ({v.data.policy})",  # declared metrics first
                    {m.name: values.values[m.name].tolist()
                     for m in metric_specs(v.data.panel, values) if m.name in values.values}))
    return out


def _paired_differences(data: ReportData, c: Comparison) -> dict[str, list[float]]:
    """Each metric's differences candidate - baseline over the episodes both runs matched."""
    import numpy as np

    from evalband.analysis._metrics import metric_values

    views = {v.run_id: v.data for v in data.runs}
    base, cand = views.get(c.baseline), views.get(c.candidate)
    if base is None or cand is None:
        return {}
    cells = [cell.key for cell in base.panel.cells()]
    b, k = metric_values(base.records, cells), metric_values(cand.records, cells)
    out: dict[str, list[float]] = {}
    for name in dict.fromkeys(r.metric for r in c.metrics):
        if name not in b.values or name not in k.values:
            continue
        keys = [np.stack([run.cells[name], run.episodes[name], run.repeats[name]], axis=1)
                for run in (b, k)]
        index = {tuple(row): i for i, row in enumerate(keys[0].tolist())}
        pairs = [(index[tuple(row)], j) for j, row in enumerate(keys[1].tolist())
                 if tuple(row) in index]
        if pairs:
            ib, ic = (np.asarray(p) for p in zip(*pairs, strict=True))
            out[name] = (k.values[name][ic] - b.values[name][ib]).tolist()
    return out


def _metric_pairs(data: ReportData, c: Comparison) -> str:
    """The paired-difference figure of a comparison (its overall or only-slice intervals)."""
    from evalband.report._metric_plots import metric_pairs_plot

    overall: dict[str, Any] = {}
    for row in c.metrics:  # the overall row when there is one, else the only slice ("all")
        if row.kind in ("overall", "all"):
            overall[row.metric] = row
    return _svg(metric_pairs_plot(f"{c.candidate} - {c.baseline}",
                                  _paired_differences(data, c), overall))


def _reasons(data: ReportData) -> list[tuple[tuple[str, str, str], int]]:
    """Why episodes did not succeed, per run and cell, where the records say.

    The reason is an imported failure-mode column (``extra["reason"]``) or an error's type.
    """
    from evalband.analysis._pairs import records_where
    from evalband.report._data import WITH_REASON

    counts: dict[tuple[str, str, str], int] = {}
    for v in data.runs:
        failed = records_where(  # a stored run: only its failures with a reason or an error
            v.data.records, WITH_REASON, lambda r: not r.success)
        for r in failed:
            if r.success:
                continue
            reason = r.extra.get("reason") or (r.error.split(":", 1)[0] if r.error else None)
            if reason:
                key = (v.run_id, r.cell or "(one cell)", f"{r.outcome.value}: {reason}")
                counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items())


def _seeds_text(view: RunView) -> str:
    from evalband.analysis import StoredRecords

    records = view.data.records
    column = records.column("condition_seed") if isinstance(records, StoredRecords) else None
    if column is not None:  # a stored run: its column
        first = list(dict.fromkeys(column[:64].tolist()))[:6]  # plan order, as below
        if len(first) < 6:
            first = list(dict.fromkeys(column.tolist()))[:6]
        import numpy as np

        if column.dtype == object:
            distinct = len(set(column.tolist()))
        else:  # sorted, the changes counted: a fraction of np.unique's hashing at 100k seeds
            distinct = int(np.count_nonzero(np.diff(np.sort(column)))) + 1 if column.size else 0
        return _seeds_line(first, int(distinct))
    seeds: list[int] = []
    for r in view.data.records:  # in plan order, as the store and bundles give them
        if r.condition_seed not in seeds:
            seeds.append(r.condition_seed)
        if len(seeds) > 5:
            break
    return _seeds_line(seeds, len({r.condition_seed for r in view.data.records}))


def _seeds_line(seeds: Sequence[int], distinct: int) -> str:
    shown = ", ".join(str(s) for s in seeds[:5])
    return f"{shown}{', ...' if distinct > 5 else ''} ({distinct} distinct condition seeds)"


def _versions(m: RunManifest) -> str:
    return ", ".join(f"{k} {val}" for k, val in sorted(m.versions.items()))


# ---------------------------------------------------------------------------- the page


def _table_context(columns: Sequence[str] | None) -> dict[str, Any]:
    """What ``templates/tables.html.j2`` reads besides the data."""
    from evalband.report._table import headings, html_columns, is_sequential, verdict_parts
    from evalband.report._words import comparison_sentence, look

    return {"columns": html_columns(columns), "verdict_parts": verdict_parts,
            "OUTCOMES": OUTCOMES, "look": look, "sentence": comparison_sentence,
            "headings": lambda c: vars(headings(c.confidence, is_sequential(c.slice_rows)))}


def comparison_table_html(c: Comparison, columns: Sequence[str] | None = None) -> str:
    """One comparison's slice table (its heading and the sortable table), as in the report."""
    from evalband.report._table import filled
    from evalband.report._templates import environment

    template = environment().from_string(
        '{% from "tables.html.j2" import slice_table with context %}{{ slice_table(c) }}')
    return template.render(c=c, **_table_context(filled(columns, [c])))



def report_html(data: ReportData, columns: Sequence[str] | None = None) -> str:
    """The HTML document for collected report data (see :func:`render_html`).

    ``columns`` keeps only the slice-table columns of these keys (see
    :data:`evalband.report._table.COLUMNS`); all by default.
    """
    from evalband import __version__
    from evalband.report._clips import CLIP_BUDGET_BYTES, MAX_CLIPS
    from evalband.report._markdown import run_verdict_text
    from evalband.report._metric_plots import metric_violin_plot
    from evalband.report._metrics import (
        LEVEL_DIFFERENCE_HEADERS,
        LEVEL_HEADERS,
        LEVEL_NOTE,
        METRIC_HEADERS,
        SUMMARY_HEADERS,
        level_cells,
        level_difference_cells,
        metric_cells,
        metric_difference_plot,
        metric_ecdf_plot,
        summary_cells,
    )
    from evalband.report._sequential import sequential_looks
    from evalband.report._table import filled
    from evalband.report._templates import render

    looks = sequential_looks(data.runs)  # run --until-decided
    toc = [("verdict", "Verdict")] + ([("sequential", "Looks")] if looks else [])
    toc += [("slices", "Slices")]
    toc += [("clips", "Clips")] if data.clips else []
    toc += [("aggregate", "Aggregate")]
    metric_views = [v for v in data.runs if v.metrics]
    metric_comparisons = [(c, _svg(metric_difference_plot(c))) for c in data.comparisons
                          if c.metrics]
    toc += [("metrics", "Metrics")] if metric_views or metric_comparisons else []
    series = _metric_series(data) if toc[-1][0] == "metrics" else []
    ecdf = _svg(metric_ecdf_plot(series)) if series else ""
    violin = _svg(metric_violin_plot(series)) if series else ""
    metric_pairs = [(c, pairs) for c, _ in metric_comparisons
                    if (pairs := _metric_pairs(data, c))]
    toc += [("distributions", "Distributions")] if violin or metric_pairs else []
    toc += [("plots", "Plots"), ("outcomes", "Outcomes")]
    latency = latency_rows(data.runs)
    toc += [("latency", "Latency")] if latency else []
    toc += [("runs", "Runs")] if data.is_comparison else []
    toc += [("reproducibility", "Reproducibility")]
    body = render(
        "report.html.j2", data=data, toc=toc, plots=_plots(data), reasons=_reasons(data),
        latency=latency,
        looks=looks, max_clips=MAX_CLIPS, clip_budget_bytes=CLIP_BUDGET_BYTES,
        run_verdict=run_verdict_text,
        seeds_text=_seeds_text, versions=_versions, version=__version__,
        metric_views=metric_views, metric_comparisons=metric_comparisons, metric_ecdf=ecdf,
        metric_violin=violin, metric_pairs=metric_pairs,
        metric_headers=METRIC_HEADERS, metric_summary_headers=SUMMARY_HEADERS,
        metric_cells=metric_cells, summary_cells=summary_cells, level_cells=level_cells,
        level_difference_cells=level_difference_cells, level_headers=LEVEL_HEADERS,
        level_difference_headers=LEVEL_DIFFERENCE_HEADERS, level_note=LEVEL_NOTE,
        **_table_context(filled(columns, data.comparisons)))
    return html_page(data.title, body.rstrip("\n"))
