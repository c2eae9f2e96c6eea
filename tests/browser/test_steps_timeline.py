"""The episode timeline in real headless Chromium: the cursor follows the clip, a click seeks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.view import serve_in_background

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_cursor_follows_the_clip_and_a_click_seeks_it(watched: Any, tmp_path: Path) -> None:
    panel = tmp_path / "pt.yaml"
    panel.write_text("name: pt-timeline\nenv: evalband/PushT-v0\nepisodes: 1\nseed: 4\n"
                     "budget: {steps: 40}\n")
    store = tmp_path / "runs.sqlite"
    assert main(["run", str(panel), "--policy", "pusht:expert", "--run-id", "t", "--record",
                 "all", "--record-steps", "--store", str(store), "--json"]) == 0
    with serve_in_background(store) as server:
        watched.allowed_origin = server.url.rstrip("/")
        watched.page.goto(f"{server.url}run/t/episodes")
        (link,) = watched.page.eval_on_selector_all("a[href*='/steps/']",
                                                    "a => a.map(x => x.href)")
        watched.page.goto(link)
        got = watched.page.evaluate("""async () => {
          const v = document.getElementById('clip');
          await new Promise(res => {
            if (v.readyState >= 2) return res();
            v.addEventListener('loadeddata', res, {once: true});
            setTimeout(res, 10000);
          });
          v.muted = true;
          await v.play();
          await new Promise(r => setTimeout(r, 1500));
          v.pause();
          const cursor = document.querySelector('line.cursor');
          return {ready: v.readyState, at: parseInt(document.getElementById('at').textContent),
                  x: parseFloat(cursor.getAttribute('x1')),
                  traces: document.querySelectorAll('svg.trace').length,
                  steps: parseInt(document.getElementById('timeline').dataset.steps)};
        }""")
        assert got["ready"] >= 2 and got["traces"] == 3, got  # reward, action[0], action[1]
        assert got["at"] > 0 and got["x"] > 0, got  # the cursor moved with the clip
        box = watched.page.locator("svg.trace").first.bounding_box()
        watched.page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
        seeked = watched.page.evaluate("""() => ({
          t: document.getElementById('clip').currentTime,
          d: document.getElementById('clip').duration,
          at: parseInt(document.getElementById('at').textContent)})""")
        assert seeked["at"] == round(0.25 * got["steps"]), seeked
        assert abs(seeked["t"] / seeked["d"] - 0.25) < 0.05, seeked
    watched.assert_clean()
