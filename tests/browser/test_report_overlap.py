"""Report layout in real Chromium at 1400 px: long slice names wrap only between their parts,
clip captions never overlap, plot labels stay inside their figure, and a return-rule panel
shows no time-to-success column (issue 33, item 15). The two screenshots are kept with the
test artefacts (``$EVALBAND_TEST_ARTIFACTS``, else ``test-artifacts/`` at the repository
root)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalband.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("EVALBAND_TEST_ARTIFACTS") or ROOT / "test-artifacts")

LONG = {  # PushT with slice names longer than their column
    "name": "pusht-long-slices", "env": "evalband/PushT-v0", "episodes": 3, "seed": 5,
    "budget": {"steps": 6},
    "factors": {"initial_configuration_of_the_t_block_relative_to_goal": {
        "training_distribution_annulus_near_the_goal_region": {"start": "train"},
        "held_out_annulus_far_away_from_the_goal_region": {"start": "held_out"}}},
}
RETURN = {  # success judged by the episode's return, at its end
    "name": "coin-return", "env": "evalband/Coin-v0", "episodes": 20, "seed": 2,
    "budget": {"steps": 4}, "env_kwargs": {"length": 2},
    "success": {"rule": "return", "threshold": 1.0}, "factors": {"p": [0.3, 0.7]},
}


_LAYOUT_JS = """() => {
  const seps = "_=,/.:-";
  const out = {page: document.documentElement.scrollWidth, midword: [], overlaps: [],
               overflowing: [], clipped: [], headers: []};
  // a slice name wraps only after one of its separators (never inside a part)
  for (const cell of document.querySelectorAll("td.slice")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let prev = null, prevTop = null, node;
    while ((node = walker.nextNode())) {
      for (let i = 0; i < node.length; i++) {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        const rect = r.getClientRects()[0];
        if (!rect || node.data[i].trim() === "") { continue; }
        if (prevTop !== null && rect.top > prevTop + 2 && !seps.includes(prev)) {
          out.midword.push(cell.textContent);
        }
        prev = node.data[i]; prevTop = rect.top;
      }
    }
  }
  // clips and their captions never overlap one another nor spill out of their figure
  const figs = Array.from(document.querySelectorAll("figure.clip"))
    .map(f => f.getBoundingClientRect());
  for (let i = 0; i < figs.length; i++) for (let j = i + 1; j < figs.length; j++) {
    const a = figs[i], b = figs[j];
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5
        && b.top < a.bottom - 0.5) out.overlaps.push([i, j]);
  }
  for (const cap of document.querySelectorAll("figure.clip figcaption"))
    if (cap.scrollWidth > cap.clientWidth + 1) out.overflowing.push(cap.textContent);
  // every label of every plot inside its figure
  for (const svg of document.querySelectorAll("svg")) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
          || r.bottom > box.bottom + 1) out.clipped.push(t.textContent);
    }
  }
  out.headers = Array.from(document.querySelectorAll("#slices thead th"))
    .map(th => th.textContent.trim());
  return out;
}"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("overlap")
    store = str(tmp / "s.sqlite")
    for name, data in (("long", LONG), ("return", RETURN)):
        (tmp / f"{name}.yaml").write_text(yaml.safe_dump(data))
    runs = [("long", "pusht:expert", "base", ["--record", "all"]),
            ("long", "evalband.policies.pusht:expert", "cand", ["--record", "all"]),
            ("return", "evalband.policies._builtin:zero_action", "rb", []),
            ("return", "evalband.policies._builtin:zero_action", "rc", [])]
    for panel, policy, run_id, extra in runs:
        assert main(["run", str(tmp / f"{panel}.yaml"), "-p", policy, "--run-id", run_id,
                     "--store", store, "--json", *extra]) == 0
    out = {}
    for name, ids in (("long", ["base", "cand"]), ("return", ["rb", "rc"])):
        out[name] = tmp / f"{name}.html"
        assert main(["report", *ids, "--store", store, "--html", str(out[name]),
                     "--json"]) == 0
    return out


@pytest.mark.parametrize(("name", "shot"), [("long", "report-long-slices-clips.png"),
                                            ("return", "report-return-rule.png")])
def test_report_layout_has_no_overlap_at_1400px(reports: dict[str, Path], watched: Any,
                                                name: str, shot: str) -> None:
    page = watched.page
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(reports[name].resolve().as_uri(), wait_until="load")
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    found = page.evaluate(_LAYOUT_JS)
    assert found["page"] <= 1400, f"the page is {found['page']} px wide at 1400"
    assert found["midword"] == [], found["midword"]
    assert found["overlaps"] == [] and found["overflowing"] == [], found
    assert found["clipped"] == [], found["clipped"]
    if name == "long":
        assert page.locator("figure.clip").count() >= 4
        assert page.locator("td.slice").count() >= 2
    else:
        assert not any("time to success" in h for h in found["headers"]), found["headers"]
    watched.assert_clean()
    assert watched.foreign_requests() == []
