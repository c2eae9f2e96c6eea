"""One self-contained HTML document: inline CSS, a tiny inline script, nothing fetched."""

from __future__ import annotations

import html

__all__ = ["html_page", "DEFAULT_CSP", "PAGE_CSS", "SORT_SCRIPT"]

DEFAULT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; media-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: the browser itself refuses any network request
(embedded clips are ``data:`` URIs)."""

PAGE_CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #d9d9de; --bg-alt: #f6f7f9;
  --red: #c62828; --green: #2e7d32; --amber: #a15c00; --blue: #1f4e8c; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 1.5rem 1.25rem 4rem; color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 .6rem; border-bottom: 1px solid var(--line);
  padding-bottom: .25rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p, li { max-width: 78ch; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: .86em; }
pre { background: var(--bg-alt); padding: .6rem .8rem; overflow-x: auto; border-radius: 4px; }
.subtitle { color: var(--muted); margin: 0 0 1rem; }
.verdict { border-left: 6px solid var(--blue); background: var(--bg-alt); padding: .7rem 1rem;
  margin: 1rem 0; border-radius: 0 6px 6px 0; }
.verdict strong.word { text-transform: uppercase; letter-spacing: .03em; }
.verdict.regression { border-color: var(--red); }
.verdict.regression strong.word { color: var(--red); }
.verdict.improves { border-color: var(--green); }
.verdict.improves strong.word { color: var(--green); }
.verdict.inconclusive, .verdict.withheld { border-color: var(--amber); }
.verdict.inconclusive strong.word, .verdict.withheld strong.word { color: var(--amber); }
.alert { color: var(--red); font-weight: 600; }
.note { color: var(--muted); font-size: .92em; }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; margin: 0; font-size: .9em;
  font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; white-space: nowrap; }
th .sub, td .sub { display: block; font-size: .8em; font-weight: normal; color: var(--muted); }
td .sub { white-space: nowrap; }
td.num { text-align: right; white-space: nowrap; }
td.slice { overflow-wrap: anywhere; min-width: 10ch; }
th.num { text-align: right; }
table.sortable th { cursor: pointer; user-select: none; position: relative;
  padding-right: 1.25rem; }
table.sortable th::after { content: "\\2195"; color: #b0b0b8; font-weight: normal;
  position: absolute; right: .35rem; top: .3rem; }
table.sortable th[aria-sort="ascending"]::after { content: "\\2191"; color: var(--fg); }
table.sortable th[aria-sort="descending"]::after { content: "\\2193"; color: var(--fg); }
td.verdict-cell { min-width: 12ch; max-width: 24ch; }
td.verdict-cell .word { font-weight: 600; }
td.verdict-cell .sub { white-space: normal; }
tr.regressed td { color: var(--red); }
tr.regressed td .sub { color: inherit; opacity: .85; }
tr.improved td.verdict-cell .word { color: var(--green); }
tr.inconclusive td.verdict-cell .word { color: var(--amber); }
tr.kind-cell td:first-child { padding-left: 1.4rem; }
tr.kind-all td { font-weight: 600; }
figure { margin: 1.2rem 0 1.8rem; }
figure svg { width: 100%; max-width: 900px; height: auto; display: block; }
figcaption { color: var(--muted); font-size: .9em; max-width: 90ch; margin-top: .3rem; }
.clips { display: flex; flex-wrap: wrap; gap: 1rem; }
figure.clip { margin: 0; width: 240px; }
figure.clip video { width: 240px; height: 240px; image-rendering: pixelated; background: #000; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .4rem 0; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
details { margin: .4rem 0; }
summary { cursor: pointer; color: var(--blue); }
nav.toc { font-size: .92em; }
nav.toc a { color: var(--blue); margin-right: .9rem; text-decoration: none; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px;
  margin-right: .3em; vertical-align: -0.05em; }
@media print { h2 { break-after: avoid; } figure { break-inside: avoid; } }
"""

SORT_SCRIPT = r"""
(function () {
  "use strict";
  var NUMBER = /^[+\-\u2212]?(\d+(\.\d*)?|\.\d+)(e[+\-]?\d+)?/i;
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    var text = raw === null ? cell.textContent.trim() : raw;
    var match = text.replace("\u2212", "-").match(NUMBER);
    return match ? { num: parseFloat(match[0]), text: text } : { num: null, text: text };
  }
  function compare(a, b) {
    if (a.num !== null && b.num !== null) { return a.num - b.num; }
    if (a.num !== null) { return -1; }
    if (b.num !== null) { return 1; }
    return a.text.localeCompare(b.text, undefined, { numeric: true });
  }
  function sortBy(table, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, key: key(row.cells[index] || row.cells[0]), i: i };
    });
    rows.sort(function (a, b) {
      var c = compare(a.key, b.key);
      if (!ascending) { c = -c; }
      return c !== 0 ? c : a.i - b.i;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }
  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (t) {
      if (!t.tHead || !t.tBodies.length) { return; }
      Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, index) {
        th.tabIndex = 0;
        th.title = "sort by " + th.textContent.trim();
        th.addEventListener("click", function () { sortBy(t, index, th); });
        th.addEventListener("keydown", function (e) {
          if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(t, index, th); }
        });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else { init(); }
})();
"""


def html_page(
    title: str,
    body_html: str,
    *,
    head_html: str = "",
    csp: str | None = DEFAULT_CSP,
) -> str:
    """A complete HTML document around ``body_html``; it fetches nothing.

    The page carries its CSS (:data:`PAGE_CSS`) and a small script (:data:`SORT_SCRIPT`)
    that makes every ``<table class="sortable">`` sortable by clicking (or pressing Enter
    on) a column header: numbers compare as numbers (a cell's ``data-sort`` attribute, else
    its text's leading number, so ``45.0% [38.1, 52.1]`` sorts as 45.0), text compares
    naturally, and the header gets ``aria-sort``. A Content-Security-Policy ``<meta>``
    (:data:`DEFAULT_CSP`) makes the browser refuse any network request.

    Args:
        title: the document title (escaped here).
        body_html: trusted markup for ``<body>`` (escape user text before building it).
        head_html: extra trusted markup for ``<head>`` (e.g. a refresh ``<meta>``).
        csp: the Content-Security-Policy, or ``None`` for none (a live viewer that
            polls its own server needs ``connect-src 'self'``).

    Returns:
        The document, starting with ``<!DOCTYPE html>``.

    >>> page = html_page("a < b", "<p>hi</p>")
    >>> page.startswith("<!DOCTYPE html>"), "<title>a &lt; b</title>" in page
    (True, True)
    >>> "src=" in page or "@import" in page
    False
    """
    content = html.escape(csp or "", quote=False).replace('"', "&quot;")
    policy = f'<meta http-equiv="Content-Security-Policy" content="{content}">\n' if csp else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{policy}"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{PAGE_CSS}</style>\n"
        f"{head_html}"
        "</head>\n<body>\n"
        f"{body_html}\n"
        f"<script>{SORT_SCRIPT}</script>\n"
        "</body>\n</html>\n"
    )
