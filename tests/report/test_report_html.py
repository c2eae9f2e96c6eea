"""The HTML report: self-contained, sections in order, every plot an inline SVG, true numbers."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

import evalband
from evalband.errors import InvalidParameterError, RunNotFoundError
from evalband.report import (
    comparison_sentence,
    figure_svg,
    html_page,
    render_html,
    render_markdown,
    write_report,
)

SECTIONS = ("verdict", "slices", "aggregate", "plots", "outcomes", "runs", "reproducibility")


def core_sections(found: list[str]) -> list[str]:
    """The page's sections among :data:`SECTIONS`, in page order (optional ones, e.g. latency,
    are tested where they are made); the verdict must come first."""
    assert found and found[0] == "verdict"
    return [s for s in found if s in SECTIONS]


class Outline(HTMLParser):
    """Section ids in order; per figure: whether it holds an svg and a caption."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.figures: list[dict[str, object]] = []
        self.svgs = 0
        self.svg_outside_figure = 0
        self._in_figure = False
        self.sortable_tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(str(a.get("id")))
        elif tag == "figure":
            self._in_figure = True
            self.figures.append({"id": a.get("id"), "svg": 0, "caption": False})
        elif tag == "svg":
            self.svgs += 1
            if self._in_figure:
                self.figures[-1]["svg"] = int(self.figures[-1]["svg"]) + 1  # type: ignore
            else:
                self.svg_outside_figure += 1
        elif tag == "figcaption" and self._in_figure:
            self.figures[-1]["caption"] = True
        elif tag == "table" and "sortable" in (a.get("class") or ""):
            self.sortable_tables += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._in_figure = False


def outline(page: str) -> Outline:
    parser = Outline()
    parser.feed(page)
    return parser


def assert_self_contained(page: str) -> None:
    lowered = page.lower()
    assert "<script src" not in lowered and "<link" not in lowered and "<img" not in lowered
    assert "@import" not in lowered and "<iframe" not in lowered
    assert not re.search(r"""\b(src|href)\s*=\s*["']?\s*(https?:)?//""", lowered)
    assert not re.search(r"""url\(\s*["']?(?!#)""", lowered), "url() to anything but #id"
    # The only URLs are the SVG namespace name (an identifier; never fetched).
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert 'http-equiv="Content-Security-Policy"' in page and "default-src 'none'" in page


def text_of(markup: str) -> str:
    """What a reader sees: the markup without its tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def wilson_text(k: int, n: int) -> str:
    """The band as the report prints it, from statsmodels (an independent oracle)."""
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return f"{100 * k / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def test_reach_lab_comparison_page(labs) -> None:
    base, damped = labs.reach
    page = labs.page(base, damped)
    assert_self_contained(page)
    shape = outline(page)
    assert core_sections(shape.sections) == list(SECTIONS)
    # forest, delta, cumulative, swing, power, traces (reach1d records traces), outcomes
    ids = [f["id"] for f in shape.figures]
    assert ids == ["fig-metric-ecdf", "fig-metrics-0", "fig-metric-violin",
                   "fig-metric-pairs-0", "fig-forest", "fig-delta-0",
                   "fig-cumulative", "fig-swing", "fig-power", "fig-traces",
                   "fig-outcomes"]  # the metrics section (distributions, differences) first
    assert shape.svgs == 11 and shape.svg_outside_figure == 0
    assert all(f["svg"] == 1 and f["caption"] for f in shape.figures)
    assert shape.sortable_tables >= 3  # slices, outcomes, one per run
    # The verdict comes first, in words, and is the comparison's.
    c = evalband.compare(base, damped, store=labs.store)
    assert page.index(comparison_sentence(c)) < page.index('id="slices"')
    assert 'class="verdict improves"' in page
    # Seed 002's counts: 9/64 and 50/64, with the Wilson bands statsmodels computes.
    shown = text_of(page)
    assert wilson_text(9, 64) in shown and wilson_text(50, 64) in shown
    delta = c.slice_rows[0].delta
    assert f"{100 * delta.estimate:+.1f} [{100 * delta.low:+.1f}, " \
           f"{100 * delta.high:+.1f}]" in shown
    # Reproducibility: the panel fingerprint, the seed, the policies, the command.
    assert c.panel_fingerprint in page and "reach1d:damped" in page
    assert "<code>pytest</code>" in page
    assert "panel seed</dt><dd><code>7</code>" in page


def test_hidden_regression_page_marks_the_regression_red(labs) -> None:
    base, cand = labs.hidden
    page = labs.page(base, cand)
    assert_self_contained(page)
    shape = outline(page)
    assert core_sections(shape.sections) == list(SECTIONS)
    # No traces for the coin stand-in: six plots.
    assert [f["id"] for f in shape.figures] == ["fig-forest", "fig-delta-0", "fig-cumulative",
                                               "fig-swing", "fig-power", "fig-outcomes"]
    assert shape.svgs == 6
    assert 'class="verdict regression"' in page and "Hidden regression" in page
    row = re.search(r'<tr class="regressed kind-factor">(.*?)</tr>', page)
    assert row is not None and "embodiment=franka_panda" in row.group(1).replace("<wbr>", "")
    assert page.count('<tr class="regressed') == 1
    c = evalband.compare(base, cand, store=labs.store)
    hard = next(r for r in c.slice_rows if r.name == "embodiment=franka_panda")
    for arm in ("baseline", "candidate"):
        k, n = getattr(hard, f"successes_{arm}"), getattr(hard, f"n_{arm}")
        assert wilson_text(k, n) in text_of(row.group(1))
    agg = c.aggregate
    assert f"ΔJ = {100 * agg.delta:+.1f} points [{100 * agg.low:+.1f}, {100 * agg.high:+.1f}]" \
        in page


def test_numeric_cells_sort_by_their_value(labs) -> None:
    page = labs.page(*labs.hidden)
    values = re.findall(r'<td class="num" data-sort="([^"]+)">', page)
    assert values and all(float(v) == float(v) for v in values)  # parseable, no NaN
    assert "table.sortable" in page and "aria-sort" in page


def test_single_run_page(labs) -> None:
    base = labs.reach[0]
    page = labs.page(base)
    assert_self_contained(page)
    shape = outline(page)
    assert core_sections(shape.sections) == [s for s in SECTIONS if s != "runs"]
    assert [f["id"] for f in shape.figures] == ["fig-metric-ecdf", "fig-metric-violin",
                                               "fig-forest",
                                               "fig-cumulative", "fig-swing", "fig-power",
                                               "fig-traces", "fig-outcomes"]
    ci = evalband.stats.interval(9, 64)
    assert f"{100 * ci.estimate:.1f}% [{100 * ci.low:.1f}, {100 * ci.high:.1f}]" in text_of(page)
    assert "9/64 = 14.1%" in page


def test_bundle_sources_need_no_store(labs, tmp_path: Path) -> None:
    from evalband.store import open_store
    from evalband.store._bundle import export_bundle

    with open_store(labs.store) as st:
        bundle = export_bundle(st, labs.hidden[0], tmp_path / "bundle")
    md = render_markdown([str(bundle)])
    assert labs.hidden[0] in md and "| slice |" in md
    assert not list(tmp_path.glob("**/*.sqlite"))  # no store was created for a bundle


def test_markdown_comparison_has_the_slice_table(labs) -> None:
    md = render_markdown(list(labs.hidden), labs.store)
    assert "| slice | n | baseline | candidate | Δ points (95%, Holm-adjusted) |" in md
    assert "| embodiment=franka_panda |" in md and "**regression**" in md
    assert "Hidden regression" in md


def test_write_report_writes_both_files(labs, tmp_path: Path) -> None:
    html_path, md_path = tmp_path / "deep" / "r.html", tmp_path / "r.md"
    written = write_report(list(labs.hidden), labs.store, html=html_path, md=md_path,
                           command="evalband report x")
    assert written == [html_path, md_path]
    assert html_path.read_text().startswith("<!DOCTYPE html>")
    assert "| embodiment=franka_panda |" in md_path.read_text()
    with pytest.raises(InvalidParameterError, match="html=PATH"):
        write_report(list(labs.hidden), labs.store, html=None, md=None)


def test_bad_sources_are_named(labs) -> None:
    with pytest.raises(RunNotFoundError, match="nope"):
        render_html(["nope"], labs.store)
    with pytest.raises(InvalidParameterError, match="at least one"):
        render_html([], labs.store)
    with pytest.raises(RunNotFoundError, match="no run store was given"):
        render_html(["some-run"])


def test_figure_svg_is_inline_and_ids_do_not_collide() -> None:
    from evalband.report._svg import new_figure

    svgs = []
    for offset in (0.0, 1.0):
        fig = new_figure(3, 2)
        ax = fig.add_subplot()
        ax.plot([0, 1], [offset, 2], "o-")
        ax.set_title("a < b & c")
        svgs.append(figure_svg(fig))
    for svg in svgs:
        assert svg.startswith("<svg") and svg.endswith("</svg>")
        assert "<!DOCTYPE" not in svg and "<metadata" not in svg and "xlink:" not in svg
        assert "a &lt; b &amp; c" in svg  # text stays text, escaped
        ids = re.findall(r'\bid="([^"]+)"', svg)
        refs = re.findall(r'(?:href="#|url\(#)([^")]+)', svg)
        assert ids and set(refs) <= set(ids)  # every reference points inside this figure
    first, second = (set(re.findall(r'\bid="([^"]+)"', s)) for s in svgs)
    assert not first & second


def test_html_page_is_self_contained() -> None:
    page = html_page("a <b>", "<p>x</p>", head_html="<meta name='k' content='v'>", csp=None)
    assert "<title>a &lt;b&gt;</title>" in page and "<meta name='k'" in page
    assert "Content-Security-Policy" not in page
    assert_self_contained(html_page("t", "<table class='sortable'></table>"))


def test_seed_count_of_a_stored_column_equals_the_records_count() -> None:
    """The stored run's seed column is counted as the records are (set of Python ints)."""
    from types import SimpleNamespace

    import numpy as np

    from evalband.analysis._pairs import StoredRecords
    from evalband.report._html import _seeds_text

    for size, high in ((300, 50), (40, 2**40), (1, 5)):
        seeds = np.random.default_rng(size).integers(0, high, size)
        recs = [SimpleNamespace(condition_seed=int(s)) for s in seeds]
        stored = StoredRecords({"cell": np.zeros(size, dtype=object)}, lambda r=recs: r,
                               read_column=lambda name, s=seeds: s)
        from_column = _seeds_text(SimpleNamespace(data=SimpleNamespace(records=stored)))
        assert stored._records is None  # the column was read, not the records
        assert from_column == _seeds_text(SimpleNamespace(data=SimpleNamespace(records=recs)))
        assert f"({len(set(seeds.tolist()))} distinct condition seeds)" in from_column


def test_figures_without_matplotlib_say_what_to_install(monkeypatch) -> None:
    import sys

    from evalband.errors import EvalbandError
    from evalband.report._svg import new_figure

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    with pytest.raises(EvalbandError, match=r"evalband\[figures\]"):
        new_figure(3, 2)


def test_a_stored_comparison_report_reads_each_run_in_one_pass(labs, monkeypatch) -> None:
    """The seeds line and the latency section read columns fetched with the compare columns."""
    from evalband.store import RunStore

    calls: list[tuple[str, tuple[str, ...]]] = []
    original = RunStore.episode_columns

    def counting(self, run_id, columns=None, progress=None,  # type: ignore[no-untyped-def]
                 conditions=()):
        calls.append((run_id, tuple(columns or ())))
        assert conditions  # the clips' and reasons' filters are read in the same pass
        return original(self, run_id, columns, progress, conditions)

    monkeypatch.setattr(RunStore, "episode_columns", counting)
    html = render_html(list(labs.hidden), labs.store)
    assert "distinct condition seeds" in html
    assert sorted(run for run, _ in calls) == sorted(labs.hidden), calls  # one read a run
    assert all({"condition_seed", "latency_ms_p50"} <= set(cols) for _, cols in calls)
