"""The viewer's own pages and the pieces it adds to report pages.

The run list, the error pages, the navigation bar and the live-update snippet. Report pages
themselves are :func:`evalband.report.render_html` output, served as rendered; the viewer
only adds a bar on top and, while a run is still running, a small script that polls
``/api/state`` and reloads the page when episodes arrive.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalband.report import html_page
from evalband.report._page import DEFAULT_CSP

if TYPE_CHECKING:
    from evalband.store import RunStore
    from evalband.store._manifest import RunManifest

__all__ = [
    "VIEW_CSP",
    "run_url",
    "comparison_url",
    "run_row",
    "comparison_row",
    "store_state",
    "index_page",
    "message_page",
    "decorate_report",
]

VIEW_CSP = DEFAULT_CSP.replace("media-src data:", "media-src 'self' data:") + "; connect-src 'self'"
"""The viewer's Content-Security-Policy: a report's, plus polling its own server and playing
the clips it serves."""

_E = html.escape

_VIEW_CSS = """
nav.evalband-view { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: baseline;
  font-size: .9em; color: #5f6368; border-bottom: 1px solid #d9d9de; padding: 0 0 .5rem;
  margin: 0 0 1rem; }
nav.evalband-view a { color: #1f4e8c; text-decoration: none; font-weight: 600; }
.evalband-live, .evalband-note { color: #a15c00; }
.status { display: inline-block; padding: 0 .45em; border-radius: 3px; font-size: .88em;
  background: #eceef1; }
.status-running { background: #fff0d6; color: #a15c00; }
.status-finished { background: #e3f1e4; color: #2e7d32; }
.status-interrupted { background: #fbe3e3; color: #c62828; }
.empty { color: #5f6368; font-style: italic; }
table.runs td a, table.comparisons td a { color: #1f4e8c; text-decoration: none; }
"""


def run_url(run_id: str) -> str:
    """The viewer's path of a run's report page.

    >>> run_url("reach1d/damped")
    '/run/reach1d%2Fdamped'
    """
    return "/run/" + urllib.parse.quote(run_id, safe="")


def comparison_url(comparison_id: str) -> str:
    """The viewer's path of a comparison's report page.

    >>> comparison_url("cmp-0123456789ab")
    '/compare/cmp-0123456789ab'
    """
    return "/compare/" + urllib.parse.quote(comparison_id, safe="")


def run_row(store: RunStore, manifest: RunManifest) -> dict[str, Any]:
    """What the run list (and ``/api/runs``) shows of one run.

    Keys: ``run_id``, ``policy``, ``panel_name``, ``panel_fingerprint``, ``status``,
    ``episodes`` (stored so far), ``n_planned``, ``outcomes`` (episodes per outcome),
    ``successes``, ``started_at``, ``finished_at``, ``source`` and ``url``.

    >>> import tempfile
    >>> from evalband.store import RunStore
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, RunStore(f"{d}/s.sqlite") as store:
    ...     store.create_run(_example().replace(n_planned=4))
    ...     row = run_row(store, store.require_run("r1"))
    >>> row["episodes"], row["n_planned"], row["status"], row["url"]
    (0, 4, 'running', '/run/r1')
    """
    outcomes = store.outcome_counts(manifest.run_id)
    return {
        "run_id": manifest.run_id,
        "policy": manifest.policy,
        "panel_name": manifest.panel_name,
        "panel_fingerprint": manifest.panel_fingerprint,
        "status": manifest.status,
        "episodes": sum(outcomes.values()),
        "n_planned": manifest.n_planned,
        "outcomes": outcomes,
        "successes": outcomes.get("success", 0),
        "started_at": manifest.started_at,
        "finished_at": manifest.finished_at,
        "source": manifest.source,
        "url": run_url(manifest.run_id),
    }


def comparison_row(comparison: dict[str, Any], runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A recorded comparison (:meth:`RunStore.comparisons`) as the run list shows it.

    Adds ``url``, ``policies`` (one per run id, ``None`` for a run no longer stored) and
    ``status`` (``running`` while any of its runs is).

    >>> comparison_row({"comparison_id": "cmp-1", "run_ids": ["a", "b"], "options": {},
    ...                 "created_at": "t"}, {"a": {"policy": "p", "status": "finished"}})["status"]
    'finished'
    """
    known = [runs.get(r) for r in comparison["run_ids"]]
    running = any(r is not None and r["status"] == "running" for r in known)
    return {
        **comparison,
        "url": comparison_url(comparison["comparison_id"]),
        "policies": [None if r is None else r["policy"] for r in known],
        "status": "running" if running else "finished",
    }


def store_state(store: RunStore, run_ids: Sequence[str] | None = None) -> tuple[str, bool]:
    """A token that changes whenever what a page shows may change, and whether a run runs.

    For the given runs: each run's status, stored-episode count (episodes are only ever
    added) and a digest of its whole manifest (so an edited manifest, e.g. a new status
    note or finish time, re-renders too). For ``None`` (the run list): every run's, and
    the recorded comparisons. A run that is not stored reads as ``missing``.

    >>> import tempfile
    >>> from evalband.store import RunStore
    >>> from evalband.store._manifest import _example
    >>> with tempfile.TemporaryDirectory() as d, RunStore(f"{d}/s.sqlite") as store:
    ...     store.create_run(_example())
    ...     before, running = store_state(store, ["r1", "gone"])
    ...     _ = store.update_run("r1", extra={"note": "re-scored"})  # same status and count
    ...     after, _ = store_state(store, ["r1", "gone"])
    >>> before.startswith("r1=running:0:"), before.endswith(";gone=missing"), running
    (True, True, True)
    >>> before != after
    True
    """
    parts: list[str] = []
    running = False
    if run_ids is None:
        manifests = store.list_runs()
        for m in manifests:
            parts.append(_run_token(m, store.count_episodes(m.run_id)))
            running = running or m.status == "running"
        parts.extend(c["comparison_id"] for c in store.comparisons())
        return ";".join(parts), running
    for run_id in run_ids:
        manifest = store.get_run(run_id)
        if manifest is None:
            parts.append(f"{run_id}=missing")
            continue
        parts.append(_run_token(manifest, store.count_episodes(run_id)))
        running = running or manifest.status == "running"
    return ";".join(parts), running


def _run_token(manifest: RunManifest, episodes: int) -> str:
    """``run_id=status:episodes:digest`` with a short sha256 of the whole manifest."""
    text = json.dumps(manifest.as_dict(), sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{manifest.run_id}={manifest.status}:{episodes}:{digest}"


_LIVE_SCRIPT = r"""
(function () {
  "use strict";
  var box = document.getElementById("evalband-live");
  if (!box || !window.fetch) { return; }
  var url = box.getAttribute("data-state-url");
  var state = box.getAttribute("data-state");
  var every = parseInt(box.getAttribute("data-poll-ms"), 10) || 2000;
  function poll() {
    fetch(url, { cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (s) {
        if (s.state !== state) { window.location.reload(); return; }
        setTimeout(poll, every);
      })
      .catch(function () {
        box.textContent = "live updates paused: the viewer does not answer";
        setTimeout(poll, every * 5);
      });
  }
  setTimeout(poll, every);
})();
"""


def _live(text: str, state_url: str, state: str, poll_ms: int) -> str:
    return (
        f'<span id="evalband-live" class="evalband-live" role="status" '
        f'data-state-url="{_E(state_url)}" data-state="{_E(state)}" '
        f'data-poll-ms="{int(poll_ms)}">{_E(text)}</span>'
        f"<script>{_LIVE_SCRIPT}</script>"
    )


def _state_url(run_ids: Sequence[str] | None) -> str:
    if not run_ids:
        return "/api/state"
    return "/api/state?" + urllib.parse.urlencode([("runs", r) for r in run_ids])


def _nav(store_label: str, extra: str = "", *, back: bool = True) -> str:
    link = '<a href="/">&larr; all runs</a>' if back else "<strong>evalband view</strong>"
    return (
        f"<style>{_VIEW_CSS}</style>"
        f'<nav class="evalband-view">{link}'
        f"<span>store <code>{_E(store_label)}</code> (read-only)</span>{extra}</nav>"
    )


def _when(stamp: str | None) -> str:
    """An ISO-8601 UTC time stamp, shorter: ``2025-01-01 00:00:00`` (UTC, as stored).

    >>> _when("2025-01-01T00:00:00.123+00:00"), _when("2025-01-01T10:00:00Z")
    ('2025-01-01 00:00:00', '2025-01-01 10:00:00')
    """
    if not stamp:
        return "-"
    text = stamp.replace("T", " ", 1)
    for suffix in ("+00:00", "Z"):
        text = text.removesuffix(suffix)
    return text.split(".", 1)[0]


def _status(status: str) -> str:
    return f'<span class="status status-{_E(status)}">{_E(status)}</span>'


def sortable_table(headings: Sequence[str], rows: Sequence[str], *, cls: str = "",
                   numeric: Sequence[str] = ()) -> str:
    """An HTML table that the page's sort script sorts.

    ``headings`` (the ``numeric`` ones right-aligned), ``rows`` (each a ready
    ``<tr>...</tr>``), ``cls``: more classes for the table.

    >>> t = sortable_table(["run", "n"], ["<tr><td>a</td><td>3</td></tr>"], cls="runs",
    ...                    numeric=["n"])
    >>> t.split("<thead>")[0], t.split("</th>")[1]
    ('<table class="sortable runs">', '<th scope="col" class="num">n')
    """
    num = ' class="num"'
    head = "".join(f'<th scope="col"{num if h in numeric else ""}>{_E(h)}</th>'
                   for h in headings)
    classes = f"sortable {cls}" if cls else "sortable"
    return (f'<table class="{classes}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _runs_table(runs: Sequence[dict[str, Any]]) -> str:
    if not runs:
        return '<p class="empty">No runs in this store yet.</p>'
    rows = []
    for r in runs:
        done = r["episodes"]
        rate = f" ({100 * r['successes'] / done:.1f}%)" if done else ""
        rows.append(
            "<tr>"
            f'<td><a href="{_E(r["url"])}">{_E(r["run_id"])}</a></td>'
            f"<td>{_E(r['policy'])}</td><td>{_E(r['panel_name'])}</td>"
            f"<td>{_status(r['status'])}</td>"
            f'<td class="num" data-sort="{done}">{done}/{r["n_planned"]}</td>'
            f'<td class="num" data-sort="{r["successes"]}">{r["successes"]}{rate}</td>'
            f'<td data-sort="{_E(r["started_at"])}">{_E(_when(r["started_at"]))}</td>'
            "</tr>"
        )
    return sortable_table(("run", "policy", "panel", "status", "episodes", "successes",
                           "started (UTC)"), rows, cls="runs", numeric=("episodes", "successes"))


def _options_text(options: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(options.items())) or "-"


def _comparisons_table(comparisons: Sequence[dict[str, Any]]) -> str:
    if not comparisons:
        return ('<p class="empty">No comparisons recorded yet (<code>evalband compare</code> '
                "and the labs record theirs).</p>")
    rows = []
    for c in comparisons:
        links = [
            f'<a href="{_E(run_url(r))}">{_E(r)}</a>' if p is not None else _E(r)
            for r, p in zip(c["run_ids"], c["policies"], strict=True)
        ]
        rows.append(
            "<tr>"
            f'<td><a href="{_E(c["url"])}">{_E(c["comparison_id"])}</a></td>'
            f"<td>{links[0]}</td><td>{', '.join(links[1:])}</td>"
            f"<td>{_E(_options_text(c['options']))}</td>"
            f"<td>{_status(c['status'])}</td>"
            f'<td data-sort="{_E(c["created_at"])}">{_E(_when(c["created_at"]))}</td>'
            "</tr>"
        )
    return sortable_table(("comparison", "baseline", "candidates", "options", "status",
                           "recorded (UTC)"), rows, cls="comparisons")


def index_page(
    store_label: str,
    runs: Sequence[dict[str, Any]],
    comparisons: Sequence[dict[str, Any]],
    *,
    state: str,
    poll_ms: int,
    sessions: str = "",
) -> str:
    """The run list: every run (newest first), then the recorded comparisons.

    ``sessions``: the hardware-session index (trusted markup, see
    :func:`evalband.web._view_sessions.sessions_table`), shown after the comparisons.

    The page polls ``/api/state`` and reloads when a run advances or a run or comparison
    is added.

    >>> page = index_page("s.sqlite", [], [], state="", poll_ms=1000)
    >>> "No runs in this store yet." in page, 'id="evalband-live"' in page
    (True, True)
    """
    live = _live("updates as runs progress", _state_url(None), state, poll_ms)
    body = (
        f"{_nav(store_label, live, back=False)}"
        "<header><h1>evalband runs</h1>"
        f"<p class='subtitle'>{len(runs)} run(s), {len(comparisons)} comparison(s). "
        "Click a run or a comparison for its report; click a header to sort.</p></header>"
        f'<section id="runs"><h2>Runs</h2>{_runs_table(runs)}</section>'
        f'<section id="comparisons"><h2>Comparisons</h2>{_comparisons_table(comparisons)}'
        "</section>"
        + (f'<section id="sessions"><h2>Hardware sessions</h2>{sessions}</section>'
           if sessions else "")
    )
    return html_page(f"evalband runs: {store_label}", body, csp=VIEW_CSP)


def message_page(title: str, message: str, store_label: str) -> str:
    """A page that says one thing (not found, cannot render), with the way back.

    >>> "&lt;x&gt;" in message_page("Not found", "<x>", "s.sqlite")
    True
    """
    body = (f"{_nav(store_label)}<header><h1>{_E(title)}</h1></header>"
            f"<p>{_E(message)}</p>")
    return html_page(f"evalband: {title}", body, csp=VIEW_CSP)


_BODY_OPEN = re.compile(r"<body\b[^>]*>", re.IGNORECASE)
_CSP_META = re.compile(
    r'(<meta\s+http-equiv="Content-Security-Policy"\s+content=")([^"]*)(")', re.IGNORECASE
)


def decorate_report(
    page: str,
    store_label: str,
    *,
    run_ids: Sequence[str],
    state: str,
    running: bool,
    poll_ms: int,
    note: str = "",
) -> str:
    """A rendered report with the viewer's bar on top and, while running, live updates.

    The report's own Content-Security-Policy gains ``connect-src 'self'`` so the live
    script may poll this server; it still fetches nothing else.

    >>> page = "<html><head></head><body><p>r</p></body></html>"
    >>> out = decorate_report(page, "s", run_ids=["a"], state="a=running:1", running=True,
    ...                       poll_ms=500)
    >>> out.index("all runs") < out.index("<p>r</p>"), 'data-state="a=running:1"' in out
    (True, True)
    """
    extra = f'<span class="evalband-note">{_E(note)}</span>' if note else ""
    extra += "".join(f'<a href="/run/{_E(urllib.parse.quote(r, safe=""))}/episodes">episodes of '
                     f"{_E(r)}</a>" for r in run_ids)
    if running:
        extra += _live("live: a run is still running; this page reloads as episodes arrive",
                      _state_url(run_ids), state, poll_ms)
    nav = _nav(store_label, extra)
    match = _BODY_OPEN.search(page)
    page = page[: match.end()] + nav + page[match.end():] if match else nav + page
    return _CSP_META.sub(
        lambda m: m.group(1)
        + m.group(2).replace("media-src data:", _E("media-src 'self' data:"))
        + _E("; connect-src 'self'") + m.group(3)
        if "connect-src" not in m.group(2) else m.group(0),
        page,
        count=1,
    )
