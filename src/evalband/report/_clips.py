"""Which recorded clips a report embeds, within a stated size budget.

A report is one file that fetches nothing, so its clips travel inside it as ``data:`` URIs
(the page's Content-Security-Policy allows ``media-src data:`` and still no network). At most
:data:`MAX_CLIPS` clips and :data:`CLIP_BUDGET_BYTES` bytes of video are embedded, chosen in
this order: failures of the slices a comparison found **regressed** (candidate runs), then
other failures, then successes; within each group in run, cell and episode order. The page
says how many recorded clips were left out; ``evalband view`` serves every one. The section's
markup is a block of ``templates/report.html.j2``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.episode import EpisodeRecord
    from evalband.report._data import RunView

__all__ = ["CLIP_BUDGET_BYTES", "MAX_CLIPS", "Clip", "choose_clips"]

MAX_CLIPS = 12
"""Most clips one report embeds."""

CLIP_BUDGET_BYTES = 6_000_000
"""Most bytes of video one report embeds (base64 adds a third on top)."""


@dataclass(frozen=True)
class Clip:
    """One embedded clip and what it shows."""

    run_id: str
    cell: str
    episode: int
    repeat: int
    outcome: str
    reason: str | None
    regressed_slice: str | None
    content_type: str
    data: bytes
    url: str | None = None

    @property
    def data_uri(self) -> str:
        """The clip as a ``data:`` URI."""
        return f"data:{self.content_type};base64,{base64.b64encode(self.data).decode()}"

    @property
    def src(self) -> str:
        """Where the page's player reads it: its link (``evalband view``), else its data."""
        return self.url if self.url is not None else self.data_uri


Locate = Callable[[Mapping[str, Any]], Path | None]


def _regressed(comparisons: Sequence[Comparison]) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Candidate run id -> its regressed slices (name, labels)."""
    out: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for c in comparisons:
        for row in c.slice_rows:
            if row.verdict != "regressed" or row.kind == "all":
                continue
            labels = dict(part.split("=", 1) for part in row.name.split(",") if "=" in part)
            out.setdefault(c.candidate, []).append((row.name, labels))
    return out


def choose_clips(
    views: Sequence[RunView],
    comparisons: Sequence[Comparison],
    locate: Mapping[str, Locate],
    *,
    max_clips: int = MAX_CLIPS,
    budget_bytes: int = CLIP_BUDGET_BYTES,
    link: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> tuple[tuple[Clip, ...], int]:
    """The clips to embed, and how many recorded clips were left out.

    Args:
        views: the report's runs.
        comparisons: their comparisons (regressed slices come first).
        locate: run id -> a function from a media reference to its file (or ``None``).
        max_clips: most clips.
        budget_bytes: most bytes of video in all (embedded clips only).
        link: a media reference -> its URL (``evalband view``'s ``/media/...``): the clips
            are linked, not embedded, so no byte budget applies and no file is read.
    """
    regressed = _regressed(comparisons)
    candidates: list[tuple[tuple[int, int], str, EpisodeRecord, dict[str, Any], str | None]]
    candidates = []
    for order, view in enumerate(views):
        slices = regressed.get(view.run_id, [])
        from evalband.analysis._pairs import records_where
        from evalband.report._data import WITH_MEDIA

        with_media = records_where(view.data.records, WITH_MEDIA,
                                   lambda r: bool(r.extra.get("media")))
        for record in with_media:  # most records have no media: sort the few that do
            if not record.extra.get("media"):
                continue
            for ref in record.media:
                if ref.get("kind", "video") != "video" or "sha256" not in ref:
                    continue
                hit = next((name for name, labels in slices
                            if all(record.slices.get(f) == v for f, v in labels.items())), None)
                failed = not record.success
                group = 0 if failed and hit else 1 if failed else 2
                candidates.append(((group, order), view.run_id, record, ref, hit))
    candidates.sort(key=lambda c: (c[0], c[2].key))
    chosen: list[Clip] = []
    used = 0
    for _, run_id, record, ref, hit in candidates:
        if len(chosen) >= max_clips:
            break
        path = locate[run_id](ref) if run_id in locate else None
        if path is None:
            continue
        url = link(ref) if link is not None else None
        if link is not None and url is None:
            continue
        size = 0 if url is not None else path.stat().st_size
        if used + size > budget_bytes:
            continue
        used += size
        reason = record.extra.get("reason")
        chosen.append(Clip(run_id, record.cell, record.episode, record.repeat,
                           record.outcome.value, str(reason) if reason else None, hit,
                           str(ref.get("content_type", "video/mp4")),
                           b"" if url is not None else path.read_bytes(), url))
    return tuple(chosen), len(candidates) - len(chosen)
