"""The HTML report: verdict first, the slice table, the aggregate, plots, outcomes, provenance.

One self-contained file (:func:`~evalband.report._page.html_page`): plots are inline SVG,
tables sort on click, nothing is fetched. Every number is read off the analysis objects
(:class:`~evalband.analysis.Comparison`, :class:`~evalband.analysis.RunSummary`,
:class:`~evalband.analysis.NoiseFloor`) and formatted with the Markdown report's helpers, so
the terminal, the Markdown and the HTML say the same thing.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalband.report._data import ReportData, RunView, collect
from evalband.report._markdown import (
    fmt_delta,
    fmt_p,
    fmt_rate,
    fmt_seconds,
    run_verdict_text,
    verdict_parts,
    verdict_text,
)
from evalband.report._page import html_page

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from evalband.analysis import Comparison
    from evalband.report._curves import PowerCurve
    from evalband.store import RunManifest, RunStore

__all__ = ["render_html", "report_html", "slice_table_html"]

_E = html.escape


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


# ---------------------------------------------------------------------------- small pieces


def _num(value: float | int | None, text: str | None = None, sub: str = "") -> str:
    """A right-aligned numeric cell that sorts by ``value``.

    ``sub`` is a second, smaller line (a band under its rate); the cell's text reads
    ``text sub`` when copied.
    """
    shown = text if text is not None else ("-" if value is None else str(value))
    sort = "" if value is None else f' data-sort="{value}"'
    second = f' <span class="sub">{_E(sub)}</span>' if sub else ""
    return f'<td class="num"{sort}>{_E(shown)}{second}</td>'


def _td(text: str, cls: str = "") -> str:
    return f'<td class="{cls}">{_E(text)}</td>' if cls else f"<td>{_E(text)}</td>"


Header = str | tuple[str, str]
"""A column header: its text, or ``(text, second line)``."""


def _th(header: Header, numeric: bool) -> str:
    cls = ' class="num"' if numeric else ""
    if isinstance(header, str):
        return f'<th scope="col"{cls}>{_E(header)}</th>'
    text, sub = header
    return f'<th scope="col"{cls}>{_E(text)} <span class="sub">{_E(sub)}</span></th>'


def _table(headers: Sequence[Header], rows: Sequence[str], cls: str = "sortable",
           caption: str = "", text_columns: Sequence[int] = (0,)) -> str:
    """A table; the headers of numeric columns (all but ``text_columns``) align right."""
    head = "".join(_th(h, i not in text_columns) for i, h in enumerate(headers))
    cap = f"<caption class='note'>{_E(caption)}</caption>" if caption else ""
    return (f'<div class="table-wrap"><table class="{cls}">{cap}<thead><tr>{head}</tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>")


def _split(text: str) -> tuple[str, str]:
    """``45.0% [38.1, 52.1]`` -> ``("45.0%", "[38.1, 52.1]")``: a value and its band."""
    head, _, band = text.partition(" ")
    return head, band


def _level(confidence: float) -> str:
    return f"{100 * confidence:.4g}%"


def _figure(fig_id: str, fig: Figure, caption: str) -> str:
    from evalband.report._svg import figure_svg

    svg = figure_svg(fig)
    return (f'<figure id="{fig_id}">{svg}<figcaption>{caption}</figcaption></figure>')


def _section(sec_id: str, title: str, body: str) -> str:
    return f'<section id="{sec_id}"><h2>{_E(title)}</h2>\n{body}\n</section>'


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


# ---------------------------------------------------------------------------- verdict


def _verdict_section(data: ReportData) -> str:
    parts = []
    if not data.is_comparison:
        cls, word, sentence = run_verdict_text(data.runs[0])
        parts.append(f'<div class="verdict {cls}"><strong class="word">{_E(word)}</strong>'
                     f" — {_E(sentence)}</div>")
    for view in data.runs:
        if view.summary.error_causes:
            items = "".join(f"<li>{_E(line)}</li>" for line in view.summary.error_lines())
            parts.append(f"<div class='alert error-causes'>{_E(view.run_id)}: "
                         f"{view.summary.counts.get('error', 0)} error episode(s), by cause:"
                         f"<ul>{items}</ul></div>")
    for c in data.comparisons:
        cls = c.verdict.replace(" ", "-")
        if c.panel_mismatch:
            parts.append('<p class="alert">PANEL MISMATCH: these runs were made on different '
                         "panels; episodes pair only where their keys coincide.</p>")
        parts.append(f'<div class="verdict {_E(cls)}"><strong class="word">{_E(c.verdict)}'
                     f"</strong> — {_E(c.sentence)}</div>")
        if c.hidden_regressions:
            parts.append(f'<p class="alert">Hidden regression: '
                         f"{_E(', '.join(c.hidden_regressions))} regressed while the aggregate "
                         "does not show it.</p>")
        if c.notes:
            parts.append("<ul class='note'>" + "".join(f"<li>{_E(n)}</li>" for n in c.notes)
                         + "</ul>")
    return _section("verdict", "Verdict", "\n".join(parts))


# ---------------------------------------------------------------------------- tables


def _comparison_table(c: Comparison) -> str:
    rows = []
    for r in c.slice_rows:
        d = r.delta or {}
        cls = " ".join(x for x in (r.verdict.replace(" ", "-"), f"kind-{r.kind}") if x)
        paired = r.pairing == "paired"
        pairs = (f"{r.pairs.get('candidate_only', 0)} / {r.pairs.get('baseline_only', 0)}"
                 if paired else "unpaired")
        word, detail = verdict_parts(r)
        why = f' <span class="sub">{_E(detail)}</span>' if detail else ""
        rows.append(
            f'<tr class="{_E(cls)}">' + _td(r.name, "slice")
            + _num(d.get("estimate"), *_split(fmt_delta(r.delta)))
            + f'<td class="verdict-cell" title="{_E(verdict_text(r))}">'
            f'<span class="word">{_E(word)}</span>{why}</td>'
            + _num(r.n_baseline, f"{r.n_baseline}/{r.n_candidate}")
            + _num((r.rate_baseline or {}).get("estimate"), *_split(fmt_rate(r.rate_baseline)))
            + _num((r.rate_candidate or {}).get("estimate"), *_split(fmt_rate(r.rate_candidate)))
            + _num(r.pairs.get("candidate_only") if paired else None, pairs)
            + _num(r.p_value, fmt_p(r.p_value)) + _num(r.p_holm, fmt_p(r.p_holm)) + "</tr>"
        )
    level = _level(c.confidence)
    return (f"<h3>{_E(c.candidate)} ({_E(c.candidate_policy)}) vs {_E(c.baseline)} "
            f"({_E(c.baseline_policy)})</h3>"
            + _table(["slice", ("Δ points", f"Holm-adjusted, family {level}"), "verdict",
                      ("n", "base/cand"), ("baseline", f"{level} Wilson"),
                      ("candidate", f"{level} Wilson"), ("pairs", "cand-only / base-only"),
                      ("p", "exact"), ("Holm p", "all slices")], rows, "sortable slices",
                     text_columns=(0, 2)))


def slice_table_html(view: RunView) -> str:
    """A run's per-slice table: outcomes, rate with its Wilson band, time among successes."""
    rows = []
    for s in view.slices:
        sm = s.summary
        c = sm.counts
        rate = sm.rate.as_dict() if sm.rate else None
        rows.append(
            f'<tr class="kind-{_E(s.kind)}">' + _td(s.name, "slice") + _num(sm.n)
            + "".join(_num(c.get(o, 0)) for o in ("success", "failure", "timeout", "error"))
            + _num(rate["estimate"] if rate else None, *_split(fmt_rate(rate)))
            + _num(sm.mean_time_to_success_s, fmt_seconds(sm.mean_time_to_success_s)) + "</tr>"
        )
    level = _level(view.summary.rate.confidence if view.summary.rate else 0.95)
    return _table(["slice", "n", "success", "failure", "timeout", "error",
                   ("success rate", f"{level} Wilson"), ("mean time", "among successes")],
                  rows, "sortable slices")


def _slices_section(data: ReportData) -> str:
    if data.is_comparison:
        body = "\n".join(_comparison_table(c) for c in data.comparisons)
        body += ("<p class='note'>Slices first, aggregate last. Δ is candidate - baseline in "
                 "points, paired by (cell, episode, repeat) where episodes match; p is exact "
                 "McNemar (Fisher where unpaired), two-sided, Holm-adjusted across every slice; "
                 "each interval is at the level Holm used for its slice, so it excludes 0 "
                 "exactly when the slice is decided. Click a header to sort.</p>")
    else:
        body = slice_table_html(data.runs[0])
    return _section("slices", "Slices", body)


def _aggregate_section(data: ReportData) -> str:
    parts = []
    for c in data.comparisons:
        a = c.aggregate
        weights = ", ".join(f"{_E(k or 'all')}: {w:.3g}" for k, w in a.weights.items())
        parts.append(
            f"<p><strong>{_E(c.candidate)} vs {_E(c.baseline)}</strong>: ΔJ = "
            f"{100 * a.delta:+.1f} points [{100 * a.low:+.1f}, {100 * a.high:+.1f}] "
            f"({_E(a.method)}); baseline {_pct(a.rate_baseline)}, candidate "
            f"{_pct(a.rate_candidate)}.</p>"
            f"<p class='note'>Cell weights: {weights}.</p>")
    if not data.is_comparison:
        v = data.runs[0]
        s = v.summary
        parts.append(
            f"<p>{s.successes}/{s.n} counted episodes succeeded: {fmt_rate(s.rate.as_dict())}"
            if s.rate else "<p>no counted episode")
        parts[-1] += (f" ({s.n_attempted} attempted, {s.counts.get('error', 0)} errors"
                      f"{' counted as failures' if s.errors_as_failures else ''}); mean time "
                      f"among successes {_E(fmt_seconds(s.mean_time_to_success_s))}.</p>")
    return _section("aggregate", "Aggregate (last)", "\n".join(parts))


def _outcome_table(data: ReportData) -> str:
    rows = []
    for v in data.runs:
        for s in v.slices:
            c = s.summary.counts
            rows.append("<tr>" + _td(v.run_id) + _td(s.name) + _num(s.summary.n_attempted)
                        + "".join(_num(c.get(o, 0)) for o in ("success", "failure", "timeout",
                                                              "error")) + "</tr>")
    return _table(["run", "slice", "attempted", "success", "failure", "timeout", "error"], rows,
                  text_columns=(0, 1))


def _reason_table(data: ReportData) -> str:
    """Why episodes did not succeed, per run and cell, where the records say.

    The reason is an imported failure-mode column (``extra["reason"]``) or an error's type.
    """
    from evalband.analysis._pairs import records_where

    counts: dict[tuple[str, str, str], int] = {}
    for v in data.runs:
        failed = records_where(  # a stored run: only its failures with a reason or an error
            v.data.records, "\"outcome\" <> 'success' AND (instr(\"extra\", '\"reason\"') > 0 "
            "OR \"error\" IS NOT NULL)", lambda r: not r.success)
        for r in failed:
            if r.success:
                continue
            reason = r.extra.get("reason") or (r.error.split(":", 1)[0] if r.error else None)
            if reason:
                key = (v.run_id, r.cell or "(one cell)", f"{r.outcome.value}: {reason}")
                counts[key] = counts.get(key, 0) + 1
    if not counts:
        return ""
    rows = ["<tr>" + _td(run) + _td(cell) + _td(reason) + _num(n) + "</tr>"
            for (run, cell, reason), n in sorted(counts.items())]
    return ("<p><b>Why episodes did not succeed</b>, as the records say (a failure-mode "
            "column of imported results, or an error's type): episodes per reason.</p>"
            + _table(["run", "cell", "outcome: reason", "episodes"], rows,
                     text_columns=(0, 1, 2)))


# ---------------------------------------------------------------------------- plots


def _plots_section(data: ReportData) -> tuple[str, str]:
    """The plots section and the outcome-breakdown section."""
    from evalband.report import _curves, _plots, _plots_runs, _traces

    runs = data.runs
    level = _level(data.confidence)
    figures: list[str] = []
    labels = [f"{v.run_id} ({v.data.policy})" for v in runs]
    rows = _plots.forest_rows(runs, data.comparisons)
    cut = (f" The first {_plots.MAX_ROWS} of {len(rows)} slices are drawn; the table lists "
           "all." if len(rows) > _plots.MAX_ROWS else "")
    figures.append(_figure(
        "fig-forest", _plots.forest_plot(rows, labels, data.confidence),
        "<b>Per-slice success rates.</b> Each dot is a slice's success rate, the bar its "
        f"{level} Wilson band; one colour per run, baseline first. Bands that do not "
        "overlap differ; overlapping bands may still differ when episodes pair (read the Δ "
        "plot)." + cut))
    for i, c in enumerate(data.comparisons):
        figures.append(_figure(
            f"fig-delta-{i}", _plots.delta_plot(c),
            f"<b>Per-slice Δ, {_E(c.candidate)} - {_E(c.baseline)}.</b> Paired difference "
            "in points with its interval; <span class='alert'>red</span> slices regressed "
            "(interval below 0), green improved, grey could not tell; a hollow dot is a "
            "possible regression (negative, not established). The diamond is the weighted "
            "aggregate ΔJ, read last: a positive aggregate over a red slice is a hidden "
            "regression."))
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
        story = ""
        if len(stories) > 1:
            story = (f" Dotted lines mark the {len(stories) - 1} point(s) where the paired "
                     f"verdict of {_E(runs[1].run_id)} vs {_E(runs[0].run_id)} changed as "
                     "pairs accumulated, each with the interval that backed it then: a story "
                     "told before the last line was told too early.")
        figures.append(_figure(
            "fig-cumulative", _plots_runs.cumulative_plot(curves, stories),
            "<b>Cumulative success rate</b> as episodes accumulate (episode index first, so "
            f"every cell advances together), with the running {level} Wilson band. Early "
            "wiggles are what a short eval would have reported; the band says how far to "
            f"trust each point (drawn at up to {_curves.MAX_POINTS} prefixes)." + story))
    if any(v.noise is not None for v in runs):
        sizes = sorted({v.noise.suite_size for v in runs if v.noise is not None})
        figures.append(_figure(
            "fig-swing", _plots_runs.swing_plot(runs),
            "<b>Suite swing.</b> The run cut into consecutive suites of "
            f"{'/'.join(map(str, sizes))} episodes (plan order), each read as if it were the "
            f"only eval: dots outside the pooled {level} band (shaded) are single evals that "
            "would have misled; dashed lines are ±2σ of one suite from sampling alone "
            "(many suites are drawn as a histogram)."))
    pc = _curves.power_curve(runs, confidence=data.confidence)
    if pc is not None:
        figures.append(_figure("fig-power", _plots.power_plot(pc), _power_caption(pc)))
    traces = _traces.episode_traces(runs)
    if traces is not None and traces.traces:
        what = ("position and velocity over time; shaded: the success band (|x| ≤ 0.1 m, "
                "|v| ≤ 0.15 m/s), dashed: the boundary" if traces.kind == "reach1d" else
                "block path (solid, ● start, ■ end), pusher path (dotted), + the target")
        notes = "".join(f"<br><span class='alert'>{_E(n)}</span>" for n in traces.notes)
        figures.append(_figure(
            "fig-traces", _plots_runs.trace_plot(traces),
            f"<b>Episode inspection</b>: the same episodes (condition seeds) for each run, "
            f"as recorded while they were played (the first episodes of each cell keep a "
            f"trace); {what}. Colour is the outcome (green success, red "
            f"failure, amber timeout). Episodes where the runs disagree come first.{notes}"))
    elif traces is not None and traces.notes:
        figures.append("<p class='note'>" + "<br>".join(_E(n) for n in traces.notes) + "</p>")
    outcome = _figure(
        "fig-outcomes", _plots.outcome_plot(runs),
        "<b>Outcome breakdown</b> per slice and run: success, task failure, timeout (the "
        "budget ran out; it stays in the denominator) and error (the harness or policy "
        "crashed; never a failure, and a verdict is withheld while errors stand).")
    outcome += _outcome_table(data) if data.is_comparison else ""
    outcome += _reason_table(data)
    return (_section("plots", "Plots", "\n".join(figures)),
            _section("outcomes", "Outcome breakdown", outcome))


def _power_caption(pc: PowerCurve) -> str:
    from evalband.report._plots import gap_text

    def resolves(down: float | None, up: float | None) -> str:
        said = ([f"a drop of {gap_text(down)} points"] if down is not None else []) + (
            [f"a rise of {gap_text(up)} points"] if up is not None else [])
        return " or ".join(said) if said else "no gap"

    level = f"{100 * (1 - pc.confidence):.0f}%"
    text = (f"<b>Power.</b> Episodes per arm a two-sided test at {level} needs for 80% power, "
            f"against the gap from the baseline rate {100 * pc.p:.1f}%. ")
    if pc.n < 1:
        text += "A run has no counted episode yet, so this report resolves no gap"
    else:
        text += f"This run's n = {pc.n:,} per arm resolves {resolves(pc.mdd_down, pc.mdd_up)}"
    if pc.n_slice is not None and pc.n_slice >= 1 and pc.n_slice != pc.n:
        down = pc.mdd_slice if pc.slice_direction == "down" else None
        up = pc.mdd_slice if pc.slice_direction == "up" else None
        text += f"; the smallest slice (n = {pc.n_slice:,}) resolves {resolves(down, up)}"
    if pc.discordant is not None and pc.mdd_paired is not None:
        text += (f"; with matched episodes (observed discordant share "
                 f"{100 * pc.discordant:.0f}%) a gap of {gap_text(pc.mdd_paired)} points")
    return text + ". Required episodes grow as 1/gap²."


# ---------------------------------------------------------------------------- runs, provenance


def _runs_section(data: ReportData) -> str:
    parts = []
    for v in data.runs:
        cls, word, sentence = run_verdict_text(v)
        parts.append(f"<h3 id='run-{_E(v.run_id)}'>{_E(v.run_id)}</h3>"
                     f"<p><strong>{_E(word)}</strong> — {_E(sentence)}</p>"
                     + slice_table_html(v))
    return _section("runs", "Runs", "\n".join(parts))


def _seeds_text(view: RunView) -> str:
    from evalband.analysis._pairs import StoredRecords

    records = view.data.records
    column = records.column("condition_seed") if isinstance(records, StoredRecords) else None
    if column is not None:  # a stored run: its column
        first = list(dict.fromkeys(column[:64].tolist()))[:6]  # plan order, as below
        if len(first) < 6:
            first = list(dict.fromkeys(column.tolist()))[:6]
        import numpy as np

        distinct = len(set(column.tolist())) if column.dtype == object else np.unique(column).size
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


def _kv(items: Sequence[tuple[str, str]]) -> str:
    return ('<dl class="kv">' + "".join(f"<dt>{_E(k)}</dt><dd>{v}</dd>" for k, v in items)
            + "</dl>")


def _code(text: str | None) -> str:
    return "-" if not text else f"<code>{_E(text)}</code>"


def _manifest_items(view: RunView, m: RunManifest) -> list[tuple[str, str]]:
    panel = view.data.panel
    cells = len(panel.cells())
    return [
        ("run id", _code(m.run_id)),
        ("read from", _E(view.data.source)),
        ("panel", f"{_E(m.panel_name)} — {panel.episodes} episodes × {cells} cell(s) × "
                  f"{panel.repeats} repeat(s), env <code>{_E(panel.env)}</code>"),
        ("panel fingerprint", _code(m.panel_fingerprint)),
        ("panel seed", _code(str(panel.seed))),
        ("condition seeds", _E(_seeds_text(view))),
        ("policy", _code(m.policy)),
        ("policy checkpoint sha256", _code(m.policy_hash) if m.policy_hash else "none (no "
         "checkpoint: a built-in or code policy)"),
        ("backend", f"{_E(m.backend)}, {m.workers} worker(s), host {_E(m.host)}"),
        ("git commit", _code(m.git_sha)),
        ("status", f"{_E(m.status)} ({m.source}); started {_E(m.started_at)}, finished "
                   f"{_E(m.finished_at or '-')}"),
        ("errors", "counted as failures" if m.errors_as_failures else
         "left out of the rate (verdict withheld while any stand)"),
        ("command", _code(m.command)),
        ("versions", ", ".join(f"{_E(k)} {_E(str(val))}" for k, val in sorted(m.versions.items()))
         or "-"),
    ]


def _repro_section(data: ReportData) -> str:
    import evalband

    parts = [_kv([
        ("report command", _code(data.command)),
        ("report sources", ", ".join(_code(s) for s in data.sources)),
        ("rendered by", f"evalband {_E(evalband.__version__)}"),
    ])]
    for v in data.runs:
        parts.append(f"<h3>{_E(v.run_id)}</h3>" + _kv(_manifest_items(v, v.manifest)))
        parts.append(f"<details><summary>panel YAML</summary><pre>"
                     f"{_E(v.manifest.panel_yaml)}</pre></details>")
    return _section("reproducibility", "Reproducibility", "\n".join(parts))


# ---------------------------------------------------------------------------- the page


def report_html(data: ReportData) -> str:
    """The HTML document for collected report data (see :func:`render_html`)."""
    first = data.runs[0]
    subtitle = (f"panel <code>{_E(first.data.panel.name)}</code> "
                f"(<code>{_E(first.data.panel_fingerprint[:12])}</code>) · "
                + (f"{len(data.runs)} runs, baseline <code>{_E(first.run_id)}</code>"
                   if data.is_comparison else f"run <code>{_E(first.run_id)}</code>"))
    plots, outcomes = _plots_section(data)
    sections = [_verdict_section(data), _slices_section(data), _aggregate_section(data), plots,
                outcomes]
    if data.clips:
        from evalband.report._clips import clips_html

        sections.insert(2, _section("clips", "Clips", clips_html(data.clips,
                                                                data.clips_left_out)))
    from evalband.report._sequential import sequential_section

    looks = sequential_section(data.runs)  # run --until-decided
    if looks is not None:
        sections.insert(1, looks)
    if data.is_comparison:
        sections.append(_runs_section(data))
    sections.append(_repro_section(data))
    toc = [("verdict", "Verdict")] + ([("sequential", "Looks")] if looks else [])
    toc += [("slices", "Slices")]
    toc += [("clips", "Clips")] if data.clips else []
    toc += [("aggregate", "Aggregate"), ("plots", "Plots"), ("outcomes", "Outcomes")]
    toc += [("runs", "Runs")] if data.is_comparison else []
    toc += [("reproducibility", "Reproducibility")]
    nav = ('<nav class="toc">' + "".join(f'<a href="#{k}">{_E(t)}</a>' for k, t in toc)
           + "</nav>")
    body = (f"<header><h1>{_E(data.title)}</h1><p class='subtitle'>{subtitle}</p>{nav}"
            "</header>\n<main>\n" + "\n".join(sections) + "\n</main>")
    return html_page(data.title, body)
