"""Recorded clips in real headless Chromium: an offline report plays them, the viewer serves
them."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.view import serve_in_background

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_PLAY_JS = """async () => {
  const v = document.querySelector('section#clips video');
  const ready = await new Promise(res => {
    if (v.readyState >= 2) return res(v.readyState);
    v.addEventListener('loadeddata', () => res(v.readyState), {once: true});
    v.addEventListener('error', () => res(-1), {once: true});
    setTimeout(() => res(v.readyState), 10000);
  });
  const t0 = v.currentTime;
  await v.play();
  await new Promise(res => setTimeout(res, 700));
  return {ready, t0, t1: v.currentTime, error: v.error && v.error.code,
          src: v.currentSrc.slice(0, 20), count: document.querySelectorAll('video').length};
}"""


@pytest.fixture(scope="module")
def filmed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a PushT run whose failures were filmed (`run --record failures`)."""
    folder = tmp_path_factory.mktemp("filmed")
    panel = folder / "pt.yaml"
    panel.write_text("name: pt-clips\nenv: evalband/PushT-v0\nepisodes: 3\nseed: 4\n"
                     "budget: {steps: 12}\nfactors: {start: [train, held_out]}\n")
    store = folder / "runs.sqlite"
    assert main(["run", str(panel), "--policy", "pusht:expert", "--run-id", "filmed",
                 "--record", "failures", "--store", str(store), "--json"]) == 0
    return store


def test_offline_report_plays_its_embedded_clips(
    watched: Any, filmed_store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "filmed", "--store", str(filmed_store), "--html", str(out)]) == 0
    watched.page.goto(out.as_uri())
    got = watched.page.evaluate(_PLAY_JS)
    assert got["src"].startswith("data:video/mp4"), got
    assert got["ready"] >= 2, got
    assert got["t1"] > got["t0"], got
    assert watched.foreign_requests() == []
    watched.assert_clean()


def test_viewer_serves_clips_with_ranges_and_filters_episodes(
    watched: Any, filmed_store: Path
) -> None:
    with serve_in_background(filmed_store) as server:
        watched.allowed_origin = server.url.rstrip("/")
        watched.page.goto(f"{server.url}run/filmed/episodes")
        links = watched.page.eval_on_selector_all("a[href^='/media/']", "a => a.map(x => x.href)")
        assert links
        with urllib.request.urlopen(urllib.request.Request(links[0],
                                                           headers={"Range": "bytes=0-99"})) as r:
            assert r.status == 206 and r.headers["Content-Type"] == "video/mp4"
            assert r.headers["Content-Range"].startswith("bytes 0-99/") and len(r.read()) == 100
        rows = watched.page.locator("#episodes tbody tr")
        total = rows.count()
        assert total == 6
        watched.page.select_option("select[data-col='f-start']", "held_out")
        visible = watched.page.locator("#episodes tbody tr:not([hidden])")
        assert visible.count() == 3
        assert all("start=held_out" in t for t in visible.all_inner_texts())
        assert watched.page.inner_text("#shown") == "3"
        # a clip served by the viewer plays in the page too
        watched.page.goto(links[0])
        state = watched.page.evaluate("""async () => {
          const v = document.querySelector('video');
          await new Promise(r => setTimeout(r, 1500));
          return v ? v.readyState : -1; }""")
        assert state >= 2
    watched.assert_clean()
