"""The HTML reports in real headless Chromium: no console errors, every plot drawn, the slice
table sorts on click, no network request, a screenshot."""

from __future__ import annotations

import re
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The report's sort script reads a cell's data-sort (else its text) and its leading number.
_NUMBER = re.compile(r"^[+\-]?(\d+(\.\d*)?|\.\d+)(e[+\-]?\d+)?", re.IGNORECASE)

_TABLES_JS = """() => Array.from(document.querySelectorAll("table.sortable")).map(t => ({
  headers: Array.from(t.tHead.rows[0].cells).map(c => c.textContent.trim()),
  rows: Array.from(t.tBodies[0].rows).map(r => ({
    id: r.textContent,
    keys: Array.from(r.cells).map(c => c.hasAttribute("data-sort")
      ? c.getAttribute("data-sort") : c.textContent.trim())
  }))
}))"""


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def number(key: str) -> float | None:
    match = _NUMBER.match(key.replace("\u2212", "-", 1))
    return float(match.group(0)) if match else None


def sortable_column(tables: list[dict[str, Any]], first: int) -> tuple[int, int, list[float]]:
    """A (table, column) whose keys are all numbers and not already in ascending order.

    Tables from index ``first`` on are tried in order (the slice table is the first).
    """
    for t_index, table in list(enumerate(tables))[first:]:
        rows = table["rows"]
        if len(rows) < 2:
            continue
        for col in range(len(table["headers"])):
            keys = [number(r["keys"][col]) if col < len(r["keys"]) else None for r in rows]
            if any(k is None for k in keys):
                continue
            values = [float(k) for k in keys if k is not None]
            if values != sorted(values):
                return t_index, col, values
    raise AssertionError("no sortable table has a numeric column out of order")


def render_report(store: Path, run_ids: list[str], out: Path) -> Path:
    """The report file exactly as `evalband report ... --html FILE` writes it."""
    assert main(["report", *run_ids, "--store", str(store), "--html", str(out), "--json"]) == 0
    return out


def check_report_in_browser(watched: Any, html_file: Path, shot: Path, *,
                            slice_table: bool = True) -> None:
    """Open the file; check plots, sorting (of the slice table unless it has one row),
    console, network; save a screenshot."""
    page = watched.page
    url = html_file.resolve().as_uri()
    page.goto(url, wait_until="load")
    source = html_file.read_text()

    # every plot is there and drawn at a non-zero size
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    svgs = page.locator("svg")
    assert svgs.count() == source.count("<svg") >= 5
    for i in range(svgs.count()):
        box = svgs.nth(i).bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0, (i, box)
    figures_without_plot = page.evaluate(
        "() => Array.from(document.querySelectorAll('figure'))"
        ".filter(f => !f.querySelector('svg')).length")
    assert figures_without_plot == 0

    # every table fits a 1280-px window: the last column (the verdict's p values, a run's
    # times) is on screen, not behind a scroll bar, and the page never scrolls sideways
    fit = page.evaluate("""() => ({
      page: document.documentElement.clientWidth,
      scroll: document.documentElement.scrollWidth,
      tables: Array.from(document.querySelectorAll("table")).map(t => ({
        right: t.getBoundingClientRect().right,
        box: t.parentElement.getBoundingClientRect().right,
        clipped: t.parentElement.scrollWidth > t.parentElement.clientWidth,
        last: t.tHead.rows[0].cells[t.tHead.rows[0].cells.length - 1]
          .getBoundingClientRect().right}))})""")
    assert fit["scroll"] <= fit["page"] == 1280, fit
    for table in fit["tables"]:
        assert not table["clipped"] and table["right"] <= table["box"] + 0.5, (table, fit)
        assert table["last"] <= fit["page"], (table, fit)

    # the slice table sorts on click: ascending, then descending (ties keep their order)
    tables = page.evaluate(_TABLES_JS)
    in_slices = page.evaluate(
        "() => Array.from(document.querySelectorAll('table.sortable'))"
        ".map(t => !!t.closest('#slices'))")
    assert in_slices[0], "the first sortable table is the slice table"
    t_index, col, values = sortable_column(tables, 0 if slice_table else 1)
    assert in_slices[t_index] is slice_table
    ids = [r["id"] for r in tables[t_index]["rows"]]
    ascending = [ids[i] for i in sorted(range(len(ids)), key=lambda i: (values[i], i))]
    descending = [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-values[i], i))]
    header = page.locator("table.sortable").nth(t_index).locator("thead th").nth(col)
    header.click()
    after = [r["id"] for r in page.evaluate(_TABLES_JS)[t_index]["rows"]]
    assert after == ascending and after != ids
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert [r["id"] for r in page.evaluate(_TABLES_JS)[t_index]["rows"]] == descending
    assert header.get_attribute("aria-sort") == "descending"

    page.screenshot(path=str(shot), full_page=True)
    width, height = png_size(shot)
    assert width == 1280 and height > 900  # the whole page, longer than one screen

    watched.assert_clean()
    assert watched.requests[0] == url  # the route saw the page itself: the guard is live
    assert watched.foreign_requests() == [] and watched.blocked == []


@pytest.mark.parametrize("panel", ["reach1d", "reach1d-dynamics", "hidden-regression-200"])
def test_lab_comparison_report_in_chromium(
    panel: str, lab_store: Path, lab_comparisons: dict[str, dict[str, Any]], watched: Any,
    tmp_path: Path,
) -> None:
    run_ids = lab_comparisons[panel]["run_ids"]
    html_file = render_report(lab_store, run_ids, tmp_path / f"report-{panel}.html")
    # the default reaching panel has one cell: its slice table is one row, nothing to sort,
    # so a run's table is sorted instead
    check_report_in_browser(watched, html_file, tmp_path / f"report-{panel}.png",
                            slice_table=panel != "reach1d")
    if panel.startswith("hidden-regression"):  # the regressed slice is the one marked
        regressed = watched.page.locator("#slices tr.regressed td:first-child")
        assert regressed.all_text_contents() == ["embodiment=franka_panda"]


def test_network_guard_catches_a_request(watched: Any, tmp_path: Path) -> None:
    """A positive control: a page that fetches something is caught and stopped."""
    page_file = tmp_path / "leaky.html"
    page_file.write_text('<!DOCTYPE html><html><body><img src="http://198.51.100.7/x.png">'
                         "<script>fetch('https://example.invalid/y').catch(() => {});</script>"
                         "</body></html>")
    watched.page.goto(page_file.resolve().as_uri(), wait_until="load")
    expected = ["http://198.51.100.7/x.png", "https://example.invalid/y"]
    deadline = time.monotonic() + 10  # the fetch may be issued after "load": poll, not sleep
    while time.monotonic() < deadline and (
        sorted(watched.foreign_requests()) != expected or sorted(watched.blocked) != expected
    ):
        watched.page.wait_for_timeout(50)
    assert sorted(watched.foreign_requests()) == expected
    assert sorted(watched.blocked) == sorted(watched.foreign_requests())
