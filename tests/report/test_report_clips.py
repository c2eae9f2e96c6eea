"""Recorded clips where people look: the report embeds some, bundles and the viewer carry all."""

from __future__ import annotations

import base64
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalband.episode import EpisodeRecord
from evalband.panel import load_panel
from evalband.report import render_html
from evalband.report._clips import choose_clips
from evalband.run import run_panel
from evalband.store import RunStore, open_store
from evalband.store._bundle import export_bundle, import_bundle
from evalband.store._media import media_dir, store_media_bytes
from evalband.view import serve_in_background


@pytest.fixture
def filmed(store: RunStore) -> RunStore:
    panel = load_panel({"name": "pt-clips", "env": "evalband/PushT-v0", "episodes": 2,
                        "seed": 4, "budget": {"steps": 4},
                        "factors": {"start": ["train", "held_out"]}})
    run_panel(panel, "pusht:expert", store, run_id="filmed", record_video="all")
    return store


def test_report_embeds_clips_as_data_uris_under_a_no_network_policy(
    filmed: RunStore, tmp_path: Path
) -> None:
    page = render_html(["filmed"], filmed)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None and "media-src data:" in csp.group(1)
    assert "default-src &#x27;none&#x27;" in csp.group(1) or "default-src 'none'" in csp.group(1)
    uris = re.findall(r'<video[^>]* src="data:video/mp4;base64,([^"]+)"', page)
    assert len(uris) == 4
    stored = {p.read_bytes() for p in media_dir(filmed.path).glob("*.mp4")}
    assert {base64.b64decode(u) for u in uris} == stored
    assert "at most 12 clips and 6 MB of video" in page


@dataclass
class _Row:
    kind: str
    name: str
    verdict: str


@dataclass
class _Cmp:
    candidate: str
    slice_rows: list[_Row] = field(default_factory=list)


@dataclass
class _View:
    run_id: str
    records: list[EpisodeRecord]

    @property
    def data(self) -> Any:
        return self


def _record(
    run: str, start: str, episode: int, success: bool, ref: dict[str, Any]
) -> EpisodeRecord:
    return EpisodeRecord(run_id=run, policy="p", panel_fingerprint="f", cell=f"start={start}",
                         slices={"start": start}, episode=episode, repeat=0, condition_seed=1,
                         outcome="success" if success else "failure", terminated=True,
                         truncated=False, steps=3, extra={"media": [ref]})


def test_regressed_failures_come_first_and_the_budget_holds(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    refs = [store_media_bytes(db, bytes([i]) * 1000, content_type="video/mp4") for i in range(6)]
    base = _View("base", [_record("base", "train", 0, False, refs[0])])
    cand = _View("cand", [
        _record("cand", "train", 0, False, refs[1]),
        _record("cand", "held_out", 0, True, refs[2]),
        _record("cand", "held_out", 1, False, refs[3]),
        _record("cand", "train", 1, True, refs[4]),
    ])
    cmp = _Cmp("cand", [_Row("factor", "start=held_out", "regressed"),
                        _Row("all", "all", "regressed")])
    from evalband.store._media import media_file

    locate = {v: (lambda ref: media_file(db, ref)) for v in ("base", "cand")}
    clips, left = choose_clips([base, cand], [cmp], locate)  # type: ignore[list-item,arg-type]
    order = [(c.run_id, c.cell, c.episode, c.outcome) for c in clips]
    assert order[0] == ("cand", "start=held_out", 1, "failure")
    assert clips[0].regressed_slice == "start=held_out"
    assert [o[3] for o in order[1:3]] == ["failure", "failure"] and left == 0
    assert [o[3] for o in order[3:]] == ["success", "success"]
    clips, left = choose_clips([base, cand], [cmp], locate, budget_bytes=2500)  # type: ignore[list-item,arg-type]
    assert len(clips) == 2 and left == 3 and sum(len(c.data) for c in clips) <= 2500


def test_bundles_carry_the_clips(filmed: RunStore, tmp_path: Path) -> None:
    bundle = export_bundle(filmed, "filmed", tmp_path / "bundle")
    clips = sorted((bundle / "media").glob("*.mp4"))
    assert len(clips) == 4
    with open_store(tmp_path / "other" / "s.sqlite") as other:
        import_bundle(other, bundle)
        assert sorted(p.name for p in media_dir(other.path).glob("*.mp4")) == [
            p.name for p in clips]
    (bundle / "media" / clips[0].name).write_bytes(b"tampered")
    from evalband.errors import BundleError

    with pytest.raises(BundleError, match="does not match its manifest"):
        import_bundle(open_store(tmp_path / "third.sqlite"), bundle)


def test_viewer_range_requests(filmed: RunStore) -> None:
    name = next(media_dir(filmed.path).glob("*.mp4")).name
    data = (media_dir(filmed.path) / name).read_bytes()
    with serve_in_background(filmed.path) as server:
        url = f"{server.url}media/{name}"

        def get(headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            request = urllib.request.Request(url, headers=headers)
            try:
                with urllib.request.urlopen(request) as r:
                    return r.status, dict(r.headers), r.read()
            except urllib.error.HTTPError as exc:
                return exc.code, dict(exc.headers), b""

        status, headers, body = get({})
        assert (status, headers["Content-Type"], headers["Accept-Ranges"]) == (
            200, "video/mp4", "bytes") and body == data
        status, headers, body = get({"Range": "bytes=10-"})
        assert status == 206 and body == data[10:]
        assert headers["Content-Range"] == f"bytes 10-{len(data) - 1}/{len(data)}"
        status, _, body = get({"Range": "bytes=-7"})
        assert status == 206 and body == data[-7:]
        status, headers, _ = get({"Range": f"bytes={len(data)}-"})
        assert status == 416 and headers["Content-Range"] == f"bytes */{len(data)}"
        assert get({"Range": "bytes=0-1"})[0] == 206
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{server.url}media/..%2Fruns.sqlite")
        page = urllib.request.urlopen(f"{server.url}run/filmed/episodes").read().decode()
        assert page.count('href="/media/') == 4 and "data-f-start=" in page


def test_report_breaks_failures_down_by_reason(store: RunStore, tmp_path: Path) -> None:
    from evalband.store import import_results

    path = tmp_path / "lab.csv"
    path.write_text("episode,embodiment,success,failure_mode\n0,arm,1,\n1,arm,0,slipped\n"
                    "2,arm,0,slipped\n3,arm,0,<dropped>\n")
    run = import_results(store, path)
    page = render_html([run], store)
    table = page[page.index("Why episodes did not succeed"):]
    assert re.search(r"failure: slipped</td>\s*<td[^>]*>2<", table)
    assert "failure: &lt;dropped&gt;" in table  # escaped
