"""The viewer's episode timeline: an episode's step data as traces, aligned with its clip.

``/run/<run id>/steps/<sha256>`` shows the episode whose step data (``run --record-steps``,
:mod:`evalband.store._steps`) is stored under that sha256: one SVG trace per series (the
reward, each declared info key, each action component, at most :data:`MAX_ACTION_TRACES`)
over the step axis, and the episode's clip above them when it was filmed. A vertical cursor
on every trace follows the clip as it plays (frame ``k`` of a clip shows the state after step
``k``; frame 0 is the reset), and a click on a trace seeks the clip to that step. The traces
are drawn here, in Python; the page's only script moves the cursor.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from evalband.report import html_page

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord
    from evalband.store._steps import StepData

__all__ = ["MAX_ACTION_TRACES", "MAX_POINTS", "steps_page", "trace_svg"]

MAX_ACTION_TRACES = 8
"""Action components drawn (the first ones); the rest are in the stored file."""
MAX_POINTS = 2000
"""Points one trace draws at most (a longer episode is decimated evenly)."""

_E = html.escape
_W, _H, _PAD = 720, 90, 4

_CURSOR_SCRIPT = """
(function () {
  var clip = document.getElementById('clip');
  var cursors = document.querySelectorAll('line.cursor');
  var box = document.getElementById('timeline');
  var steps = parseInt(box.getAttribute('data-steps'), 10);
  var frames = parseInt(box.getAttribute('data-frames') || '0', 10);
  function place(step) {
    var x = WIDTH * Math.max(0, Math.min(step, steps)) / Math.max(1, steps);
    cursors.forEach(function (c) { c.setAttribute('x1', x); c.setAttribute('x2', x); });
    document.getElementById('at').textContent = step;
  }
  if (clip && frames > 1) {
    clip.addEventListener('timeupdate', function () {
      if (!clip.duration) return;
      place(Math.round(clip.currentTime / clip.duration * frames - 0.5));
    });
  }
  document.querySelectorAll('svg.trace').forEach(function (svg) {
    svg.addEventListener('click', function (e) {
      var r = svg.getBoundingClientRect();
      var step = Math.round((e.clientX - r.left) / r.width * steps);
      place(step);
      if (clip && clip.duration && frames > 1) {
        clip.currentTime = (step + 0.5) / frames * clip.duration;
      }
    });
  });
})();
""".replace("WIDTH", str(_W))


def trace_svg(name: str, values: np.ndarray) -> str:
    """One series as an SVG polyline over steps ``1..T`` (x) and its range (y).

    ``NaN`` values break the line. The cursor line starts at step 0.

    >>> svg = trace_svg("reward", np.array([0.0, 1.0, 0.5]))
    >>> svg.count("<polyline"), 'points="240.0,' in svg
    (1, True)
    """
    values = np.asarray(values, dtype=np.float64)
    steps = len(values)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = high - low if high > low else 1.0
    keep = (range(steps) if steps <= MAX_POINTS
            else sorted({round(i * (steps - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)}))
    runs: list[list[str]] = [[]]
    for i in keep:
        value = float(values[i])
        if not math.isfinite(value):
            if runs[-1]:
                runs.append([])
            continue
        x = _W * (i + 1) / max(1, steps)
        y = _PAD + (_H - 2 * _PAD) * (1.0 - (value - low) / span)
        runs[-1].append(f"{x:.1f},{y:.1f}")
    lines = "".join(f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" '
                    f'points="{" ".join(run)}"/>' for run in runs if run)
    return (f'<figure class="trace"><figcaption><b>{_E(name)}</b> '
            f"<small>{low:.4g} .. {high:.4g}</small></figcaption>"
            f'<svg class="trace" data-series="{_E(name)}" viewBox="0 0 {_W} {_H}" '
            f'width="{_W}" height="{_H}" role="img" aria-label="{_E(name)} over steps">'
            f'<rect width="{_W}" height="{_H}" fill="#fafafa" stroke="#ddd"/>{lines}'
            f'<line class="cursor" x1="0" x2="0" y1="0" y2="{_H}" stroke="#d62728"/>'
            "</svg></figure>")


def _series(data: StepData) -> list[tuple[str, np.ndarray]]:
    out = [("reward", data.reward)]
    out += [(f"info: {key}", values) for key, values in sorted(data.info.items())]
    if data.steps:
        actions = data.action.reshape(data.steps, -1).astype(np.float64)
        width = actions.shape[1]
        out += [(f"action[{j}]" if width > 1 else "action", actions[:, j])
                for j in range(min(width, MAX_ACTION_TRACES))]
    return out


def steps_page(run_id: str, record: EpisodeRecord, data: StepData,
               clip_urls: Sequence[tuple[str, int]], *, csp: str) -> str:
    """The timeline of one episode (``clip_urls``: its clips' URLs and frame counts)."""
    from urllib.parse import quote

    clip = ""
    frames = 0
    if clip_urls:
        url, frames = clip_urls[0]
        clip = f'<video id="clip" controls preload="metadata" src="{_E(url)}"></video>'
    width = data.action.reshape(data.steps, -1).shape[1] if data.steps else 0
    more = (f"<p><small>action components {MAX_ACTION_TRACES}..{width - 1} are not drawn; "
            "they are in the stored file</small></p>" if width > MAX_ACTION_TRACES else "")
    note = record.extra.get("step_data_note")
    body = (
        f'<header><h1>Episode {record.episode} (repeat {record.repeat}) of '
        f'<code>{_E(run_id)}</code></h1><p class="subtitle">'
        f'<a href="/run/{_E(quote(run_id, safe=""))}/episodes">episodes</a> · cell '
        f'<code>{_E(record.cell or "-")}</code> · {_E(record.outcome.value)} · '
        f'{data.steps} steps recorded · step <span id="at">0</span></p></header>'
        f'<main id="timeline" data-steps="{data.steps}" data-frames="{frames}">'
        f"{f'<p>{_E(str(note))}</p>' if note else ''}{clip}"
        + "".join(trace_svg(name, values) for name, values in _series(data))
        + more + "</main>"
        f"<script>{_CURSOR_SCRIPT}</script>"
    )
    return html_page(f"evalband: steps of episode {record.episode} of {run_id}", body, csp=csp)
