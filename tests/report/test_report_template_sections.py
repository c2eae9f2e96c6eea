"""The clips and until-decided sections, rendered by the report template from their data."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from typing import Any

import pytest

import evalband
from evalband.panel import load_panel
from evalband.report._clips import CLIP_BUDGET_BYTES, MAX_CLIPS, Clip
from evalband.report._data import ReportData, collect
from evalband.report._html import report_html
from evalband.run import Recorder

ODD = "b<&'\""  # a factor level that needs escaping everywhere it appears


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    panel = load_panel({"name": "few", "env": "evalband/Coin-v0", "episodes": 6, "seed": 1,
                        "budget": {"steps": 1}, "factors": {"arm": ["a", ODD]}})
    store = evalband.open_store(tmp_path_factory.mktemp("sections") / "s.sqlite")
    for policy, wins in (("base", 5), ("cand", 2)):
        with Recorder(store, panel, policy, run_id=policy) as rec:
            for spec in panel.episode_specs():
                rec.log(episode=spec.episode, cell=spec.cell, steps=1,
                        outcome="success" if spec.episode < wins else "failure")
    looks: list[dict[str, Any]] = [
        {"episodes": n, "decision": "regression" if n == 12 else None,
         "slices": {"arm=a": {"statistic": 0.3 * n, "boundary": 3.1},
                    f"arm={ODD}": {"statistic": -0.125 * n, "boundary": 3.1}}}
        for n in (4, 8, 12)]
    del looks[0]["slices"][f"arm={ODD}"]  # a slice that joined at the second look
    store.update_run("cand", extra={"sequential": {
        "looks": looks, "against": "base", "alpha": 0.05, "effect": 0.1, "max_episodes": 12,
        "sentence": f"decided after 12 of 12 episodes: regression on arm={ODD}"}})
    out = collect(["base", "cand"], store)
    store.close()
    return out


def section(page: str, name: str) -> str:
    found = re.search(rf'<section id="{name}">.*?</section>', page, re.S)
    assert found is not None, name
    return found.group(0)


def test_looks_section_shows_every_look_and_escapes_names(data: ReportData) -> None:
    part = section(report_html(data), "sequential")
    assert part.count("<figure><svg") == 2 and part.count("<polyline") == 2  # one per slice
    rows = re.findall(r"<tr><td class='num'>(\d+)</td><td>([^<]*)</td>(.*?)</tr>", part)
    assert [(int(e), d) for e, d, _ in rows] == [(4, "continue"), (8, "continue"),
                                                 (12, "regression")]
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", r[2]) for r in rows]
    assert cells[0] == [f"{0.3 * 4:.2f} / 3.10", "-"]  # the slice had no look yet
    assert cells[2] == [f"{0.3 * 12:.2f} / 3.10", f"{-0.125 * 12:.2f} / 3.10"]
    assert ODD not in part and html.escape(f"arm={ODD}") in part
    assert "(3 look(s), alpha 0.05, design effect 0.1, maximum 12 episodes)" in part


def test_no_looks_no_section(data: ReportData) -> None:
    base_only = replace(data, runs=data.runs[:1], comparisons=())
    assert 'id="sequential"' not in report_html(base_only)


@pytest.mark.parametrize("left_out", [0, 1, 3])
def test_clips_section_embeds_each_clip_with_its_caption(data: ReportData,
                                                         left_out: int) -> None:
    clips = (Clip("cand", f"arm={ODD}", 3, 0, "failure", "dropped <it>", f"arm={ODD}",
                  "video/mp4", b"\x00\x01abc"),
             Clip("base", "", 1, 2, "success", None, None, "video/webm", b"xyz" * 5))
    page = report_html(replace(data, clips=clips, clips_left_out=left_out))
    part = section(page, "clips")
    assert f"at most {MAX_CLIPS} clips and {CLIP_BUDGET_BYTES / 1e6:.0f} MB of video" in part
    assert part.startswith('<section id="clips"><h2>Clips</h2>\n<p>2 recorded clips embedded')
    said = {0: "", 1: "; 1 more recorded clip left out", 3: "; 3 more recorded clips left out"}
    assert ("left out" in part) == bool(left_out) and said[left_out] in part
    srcs = re.findall(r'<video controls muted loop playsinline preload="auto" src="([^"]+)">',
                      part)
    assert srcs == [c.data_uri for c in clips]
    captions = [c.replace("<wbr>", "")  # line-break opportunities in the long names
                for c in re.findall(r"<figcaption>(.*?)</figcaption>", part)]
    assert captions == [
        f"<code>cand</code> · {html.escape(f'arm={ODD}')} · episode 3 · <strong>failure</strong>"
        f" · dropped &lt;it&gt; · regressed slice <code>{html.escape(f'arm={ODD}')}</code>",
        "<code>base</code> · (one cell) · episode 1 (repeat 2) · <strong>success</strong>"]
    assert page.index('id="slices"') < page.index('id="clips"') < page.index('id="aggregate"')


def test_one_clip_reads_in_the_singular(data: ReportData) -> None:
    clip = Clip("cand", "arm=a", 0, 0, "failure", None, None, "video/mp4", b"v")
    part = section(report_html(replace(data, clips=(clip,), clips_left_out=0)), "clips")
    assert "<p>1 recorded clip embedded in this file" in part
