"""``evalband view`` in real headless Chromium: the run list, a report, a live run."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from evalband.run import Recorder
from evalband.store import open_store
from evalband.view import serve_in_background
from testkit import coin_panel

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_view_lists_the_store_and_opens_a_report(
    lab_store: Path, lab_comparisons: dict[str, dict[str, Any]], watched: Any, tmp_path: Path
) -> None:
    with open_store(lab_store) as st:
        run_ids = [m.run_id for m in st.list_runs()]
    with serve_in_background(lab_store) as server:
        watched.allowed_origin = server.url.rstrip("/")
        page = watched.page
        page.goto(server.url, wait_until="load")

        # the run list: every run of the store, newest first, and both recorded comparisons
        listed = page.locator("table.runs tbody tr td:first-child").all_text_contents()
        assert listed == run_ids
        compared = page.locator("table.comparisons tbody tr td:first-child")
        assert sorted(compared.all_text_contents()) == sorted(
            c["comparison_id"] for c in lab_comparisons.values())
        page.screenshot(path=str(tmp_path / "view.png"), full_page=True)

        # one run's report, reached by clicking its link
        damped = lab_comparisons["reach1d-dynamics"]["run_ids"][1]
        page.locator("table.runs a", has_text=damped).click()
        page.wait_for_url(server.url + "run/" + urllib.parse.quote(damped, safe=""))
        assert damped in page.locator("h1").first.text_content()
        svgs = page.locator("svg")
        assert svgs.count() >= 5
        for i in range(svgs.count()):
            box = svgs.nth(i).bounding_box()
            assert box is not None and box["width"] > 0 and box["height"] > 0

        # back to the list, then the hidden-regression comparison's report
        page.locator("nav.evalband-view a", has_text="all runs").click()
        page.wait_for_url(server.url)
        cid = lab_comparisons["hidden-regression-200"]["comparison_id"]
        page.locator("table.comparisons a", has_text=cid).click()
        page.wait_for_url(server.url + "compare/" + cid)
        assert page.locator("tr.regressed").count() >= 1
        page.screenshot(path=str(tmp_path / "view-compare.png"), full_page=True)

    watched.assert_clean()
    assert watched.foreign_requests() == []
    assert any(u.startswith(server.url + "compare/") for u in watched.requests)


def test_a_running_run_page_follows_its_episodes(
    tmp_path: Path, watched: Any
) -> None:
    panel = coin_panel(episodes=4)
    specs = panel.episode_specs()
    path = tmp_path / "live.sqlite"
    with open_store(path) as st, Recorder(st, panel, "arm", run_id="live") as rec:

        def log(spec: Any) -> None:
            rec.log(cell=spec.cell, episode=spec.episode, repeat=spec.repeat,
                    outcome="success" if spec.episode % 2 == 0 else "failure", steps=2)

        for spec in specs[:2]:
            log(spec)
        with serve_in_background(path, poll_ms=200) as server:
            watched.allowed_origin = server.url.rstrip("/")
            page = watched.page
            page.goto(server.url + "run/live", wait_until="load")
            live = page.locator("#evalband-live")
            assert (live.get_attribute("data-state") or "").startswith("live=running:2:")
            for spec in specs[2:5]:
                log(spec)
            # the page polls, sees three new episodes, and reloads itself
            page.wait_for_function(
                "() => ((document.getElementById('evalband-live') || {dataset: {}})"
                ".dataset.state || '').startsWith('live=running:5:')", timeout=60_000)
            assert page.locator("svg").count() >= 1
            rec.close()  # the run finishes: the page reloads once more and stops following
            page.wait_for_function("() => !document.getElementById('evalband-live')",
                                   timeout=60_000)
    watched.assert_clean()
    assert watched.foreign_requests() == []
