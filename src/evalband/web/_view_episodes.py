"""The viewer's episode table: every episode of a run, filterable by slice and outcome.

Each row links the episode's stored clips (served by the viewer at ``/media/<file>``, with
the right content type and HTTP range requests, so a browser can seek) and, when it has step
data, its timeline (:mod:`evalband.web._view_steps`). The filters are a few lines of inline
script over the table; nothing is fetched.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from evalband.report import html_page

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord

__all__ = ["MEDIA_NAME", "episodes_page", "media_url"]

MEDIA_NAME = re.compile(r"^[0-9a-f]{64}\.[a-z0-9]{1,8}$")
"""The name of a stored media file: its sha256 and suffix."""

_E = html.escape

_FILTER_SCRIPT = """
(function () {
  var table = document.getElementById('episodes');
  var selects = document.querySelectorAll('select[data-col]');
  function apply() {
    var shown = 0;
    table.querySelectorAll('tbody tr').forEach(function (row) {
      var ok = true;
      selects.forEach(function (s) {
        var got = row.getAttribute('data-' + s.getAttribute('data-col'));
        if (s.value && got !== s.value) ok = false;
      });
      row.hidden = !ok;
      if (ok) shown += 1;
    });
    document.getElementById('shown').textContent = shown;
  }
  selects.forEach(function (s) { s.addEventListener('change', apply); });
  apply();
})();
"""


def media_url(ref: Mapping[str, Any]) -> str | None:
    """The viewer's URL of a stored clip, from its reference (``None`` if not stored).

    >>> media_url({"sha256": "ab" * 32, "content_type": "video/mp4"})[-4:]
    '.mp4'
    """
    from evalband.store._media import CONTENT_TYPES

    digest = ref.get("sha256")
    if not isinstance(digest, str):
        return None
    suffix = next((s for s, t in CONTENT_TYPES.items() if t == ref.get("content_type")), ".bin")
    return f"/media/{digest}{suffix}"


def _attr(name: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", name.lower())


def episodes_page(run_id: str, records: Sequence[EpisodeRecord], *, csp: str) -> str:
    """The episode table of one run (``/run/<id>/episodes``)."""
    factors = sorted({f for r in records for f in r.slices})
    columns = [("outcome", sorted({r.outcome.value for r in records}))]
    columns += [(f, sorted({r.slices.get(f, "") for r in records})) for f in factors]
    filters = "".join(
        f'<label>{_E(name)} <select data-col="{_attr("f-" + name)}"><option value="">all'
        "</option>" + "".join(f'<option value="{_E(v)}">{_E(v)}</option>' for v in values)
        + "</select></label> "
        for name, values in columns
    )
    head = ("<tr><th>cell</th><th>episode</th><th>repeat</th><th>outcome</th><th>reason</th>"
            "<th>steps</th><th>clip</th></tr>")
    rows = []
    filmed = 0
    for r in sorted(records, key=lambda r: r.key):
        attrs = f' data-{_attr("f-outcome")}="{_E(r.outcome.value)}"' + "".join(
            f' data-{_attr("f-" + f)}="{_E(r.slices.get(f, ""))}"' for f in factors)
        links = []
        for ref in r.media:
            url = media_url(ref)
            if url is not None:
                links.append(f'<a href="{_E(url)}">{_E(str(ref.get("kind", "video")))}</a>')
            elif ref.get("missing"):
                links.append(f'<span title="{_E(str(ref.get("path")))}">missing</span>')
            elif ref.get("refused"):
                links.append(f'<span title="{_E(str(ref.get("refused")))}">refused</span>')
        filmed += bool(links)
        step_data = r.extra.get("step_data")
        if isinstance(step_data, dict) and isinstance(step_data.get("sha256"), str):
            links.append(f'<a href="/run/{_E(quote(run_id, safe=""))}/steps/'
                         f'{_E(step_data["sha256"])}">steps</a>')
        reason = r.extra.get("reason") or r.error or ""
        rows.append(
            f"<tr{attrs}><td>{_E(r.cell)}</td><td>{r.episode}</td><td>{r.repeat}</td>"
            f"<td>{_E(r.outcome.value)}</td><td>{_E(str(reason))}</td><td>{r.steps}</td>"
            f"<td>{' '.join(links)}</td></tr>"
        )
    body = (
        f'<header><h1>Episodes of <code>{_E(run_id)}</code></h1><p class="subtitle">'
        f'<a href="/run/{_E(run_id)}">report</a> · {len(records)} episodes, {filmed} with a '
        f'recorded clip · <span id="shown">{len(records)}</span> shown</p></header>'
        f"<main><p>{filters}</p>"
        f'<table id="episodes" class="sortable"><thead>{head}</thead><tbody>'
        + "".join(rows) + "</tbody></table></main>"
        f"<script>{_FILTER_SCRIPT}</script>"
    )
    return html_page(f"evalband: episodes of {run_id}", body, csp=csp)
