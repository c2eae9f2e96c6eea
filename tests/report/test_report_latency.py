"""The report's policy-latency section: what each run's episodes recorded, summarised."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from evalband.report import render_html
from evalband.run import run_panel
from evalband.store import open_store
from testkit import coin_panel

ZERO = "evalband.policies._builtin:zero_action"


def _section(page: str, name: str) -> str | None:
    found = re.search(rf'<section id="{name}">.*?</section>', page, re.S)
    return found.group(0) if found else None


def test_latency_section_summarises_the_recorded_calls(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as store:
        run_panel(coin_panel(), ZERO, store, run_id="a")
        run_panel(coin_panel(), ZERO, store, run_id="b")
        recorded = {rid: store.episode_records(rid) for rid in ("a", "b")}
        page = render_html(["a", "b"], store)
    section = _section(page, "latency")
    assert section is not None and '<a href="#latency">' in page
    rows = re.findall(r"<tr><td>(\w+)</td>(.*?)</tr>", section)
    assert [run for run, _ in rows] == ["a", "b"]
    for run, cells in rows:
        shown = [float(v) for v in re.findall(r'data-sort="([^"]+)"', cells)]
        recs = recorded[run]
        p50 = [r.latency_ms_p50 for r in recs]
        p95 = [r.latency_ms_p95 for r in recs]
        # independent oracle: the standard library's median and inclusive 95th percentile
        expected = [len(recs), statistics.median(p50),
                    statistics.quantiles(p95, n=20, method="inclusive")[18],
                    max(r.latency_ms_max for r in recs)]
        assert shown[0] == expected[0]
        pairs = zip(shown[1:], expected[1:], strict=True)
        assert all(abs(s - e) <= 1e-9 * max(1.0, e) for s, e in pairs)


def test_no_latency_section_when_no_episode_timed_its_policy(tmp_path: Path) -> None:
    csv = tmp_path / "results.csv"
    csv.write_text("episode,embodiment,success\n" + "".join(
        f"{i},{'a' if i % 2 else 'b'},{i % 3 == 0}\n" for i in range(12)))
    from evalband.store import import_results

    with open_store(tmp_path / "s.sqlite") as store:
        run_id = import_results(store, csv, run_id="imported")
        page = render_html([run_id], store)
    assert _section(page, "latency") is None and '<a href="#latency">' not in page
