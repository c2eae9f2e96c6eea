"""The rank, sweep, agreement and preference pages in real headless Chromium: no console
error, no request off the page, every figure drawn with its intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.panel import load_panel
from evalband.session._preference import PreferenceSession, plan_preference
from evalband.session._preference_analysis import simulate_preferences
from evalband.store import RunStore

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    """Each page with the number of intervals its figures must draw."""
    out = tmp_path_factory.mktemp("pages")
    store = out / "s.sqlite"
    with RunStore(store) as st:
        for step, p in ((100, "baseline"), (200, "damped"), (300, "expert")):
            run_panel(load_panel("reach1d"), f"reach1d:{p}", st, run_id=p, step=step)
        plan = plan_preference(["x", "y", "z"], 12, seed=1, session_id="pref")
        session = PreferenceSession.create(st, plan)
        for r in simulate_preferences(plan, {"x": 1.0, "y": 0.0, "z": -1.0}, seed=2):
            session.record(r.block, r.preferred, r.progress_first, r.progress_second)
    (out / "m.csv").write_text("checkpoint,val_loss\nbaseline,3\ndamped,1\nexpert,2\n")
    s = str(store)
    runs = ["baseline", "damped", "expert"]
    assert main(["rank", *runs, "--store", s, "--html", str(out / "rank.html")]) == 0
    assert main(["sweep", *runs, "--store", s, "--html", str(out / "sweep.html")]) == 0
    assert main(["agree", *runs, "--store", s, "--csv", str(out / "m.csv"), "--reps", "200",
                 "--html", str(out / "agree.html")]) == 0
    assert main(["prefer", "analyze", "pref", "--store", s, "--html",
                 str(out / "prefer.html")]) == 0
    return {"rank": (out / "rank.html", 3), "sweep": (out / "sweep.html", 3),
            "agree": (out / "agree.html", 3 + 3), "prefer": (out / "prefer.html", 3)}


@pytest.mark.parametrize("name", ["rank", "sweep", "agree", "prefer"])
def test_page_draws_cleanly_in_chromium(pages: dict[str, tuple[Path, int]], name: str,
                                        watched: Any) -> None:
    path, intervals = pages[name]
    page = watched.page
    page.goto(path.resolve().as_uri(), wait_until="load")
    boxes = page.evaluate("""() => Array.from(document.querySelectorAll("svg")).map(s => {
        const r = s.getBoundingClientRect(); return [r.width, r.height]; })""")
    assert boxes and all(w > 100 and h > 50 for w, h in boxes)
    assert page.locator("svg .interval").count() >= intervals
    assert page.locator("table.sortable").count() >= 1
    watched.assert_clean()
    assert watched.foreign_requests() == [] and watched.blocked == []
