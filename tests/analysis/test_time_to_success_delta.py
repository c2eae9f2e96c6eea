"""The paired mean time-to-success difference: scipy and brute-force oracles, shown everywhere."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from scipy import stats

import evalband
from evalband.analysis import compare_runs
from evalband.cli import main
from evalband.panel import load_panel
from evalband.run import Recorder

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/schemas/comparison.schema.json").read_text())
GOLDEN_RUNS = ROOT / "tests/report/golden/runs"


def _runs(tmp_path: Path, seed: int = 3, n: int = 40):
    """Two runs on a two-cell panel with random outcomes and times; times drawn per arm."""
    rng = np.random.default_rng(seed)
    panel = load_panel({"name": "ttd", "env": "evalband/Coin-v0", "episodes": n, "seed": 1,
                        "budget": {"steps": 1}, "factors": {"arm": ["a", "b"]}})
    store = evalband.open_store(tmp_path / "s.sqlite")
    logged: dict[str, dict[tuple[str, int], float | None]] = {}
    for policy, shift in (("base", 0.0), ("cand", -0.3)):
        logged[policy] = {}
        with Recorder(store, panel, policy, run_id=policy) as rec:
            for cell in ("arm=a", "arm=b"):
                for episode in range(n):
                    ok = bool(rng.random() < 0.7)
                    t = float(rng.gamma(4.0, 0.5) + shift) if ok else None
                    if ok and rng.random() < 0.1:
                        t = None  # a success whose time was not recorded: not a pair
                    rec.log(cell=cell, episode=episode, outcome="success" if ok else "failure",
                            steps=1, time_to_success_s=t)
                    logged[policy][(cell, episode)] = t if ok else None
    c = compare_runs(evalband.load_run("base", store), evalband.load_run("cand", store))
    store.close()
    return c, logged


def _brute_force(logged, cells: tuple[str, ...]) -> list[float]:
    """Candidate - baseline for every (cell, episode) where both have a success time."""
    out = []
    for key, tb in logged["base"].items():
        tc = logged["cand"][key]
        if key[0] in cells and tb is not None and tc is not None:
            out.append(tc - tb)
    return out


def test_matches_scipy_ttest_rel_and_a_brute_force_join(tmp_path: Path) -> None:
    c, logged = _runs(tmp_path)
    for row in c.slice_rows:
        cells = ("arm=a", "arm=b") if row.kind == "all" else (row.name,)
        d = _brute_force(logged, cells)
        got = row.time_to_success_delta_s
        assert got is not None and got.n == len(d) > 10
        assert got.estimate == pytest.approx(float(np.mean(d)), rel=1e-12)
        b = [logged["base"][k] for k in logged["base"] if k[0] in cells
             and logged["base"][k] is not None and logged["cand"][k] is not None]
        a = [x + y for x, y in zip(b, d, strict=True)]
        ci = stats.ttest_rel(a, b).confidence_interval(0.95)
        assert (got.low, got.high) == pytest.approx((ci.low, ci.high), rel=1e-9)
        assert got.confidence == 0.95 and got.low < got.estimate < got.high


def test_fewer_than_two_pairs_gives_none(tmp_path: Path) -> None:
    panel = load_panel({"name": "few", "env": "evalband/Coin-v0", "episodes": 3, "seed": 1,
                        "budget": {"steps": 1}})
    store = evalband.open_store(tmp_path / "s.sqlite")
    for policy, outcomes in (("base", ["success", "success", "failure"]),
                             ("cand", ["success", "failure", "success"])):
        with Recorder(store, panel, policy, run_id=policy) as rec:
            for episode, outcome in enumerate(outcomes):
                rec.log(episode=episode, outcome=outcome, steps=1,
                        time_to_success_s=1.0 if outcome == "success" else None)
    c = compare_runs(evalband.load_run("base", store), evalband.load_run("cand", store))
    assert [r.time_to_success_delta_s for r in c.slice_rows] == [None]  # one pair only


def test_shown_in_terminal_markdown_html_and_valid_json(capsys, tmp_path: Path) -> None:
    from rich.console import Console

    from evalband.report._html import comparison_table_html
    from evalband.report._markdown import comparison_markdown
    from evalband.report._terminal import comparison_renderables

    base, cand = (str(GOLDEN_RUNS / n) for n in ("reach1d-baseline", "reach1d-damped"))
    evalband.open_store(tmp_path / "s.sqlite").close()  # compare reads bundles beside a store
    assert main(["compare", base, cand, "--store", str(tmp_path / "s.sqlite"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    got = doc["slices"][-1]["time_to_success_delta_s"]
    assert got["n"] == doc["slices"][-1]["pairs"]["both"] > 2
    shown = f"{got['estimate']:+.2f} [{got['low']:+.2f}, {got['high']:+.2f}]"

    c = compare_runs(evalband.load_run(base), evalband.load_run(cand))
    markdown = comparison_markdown([c])
    assert "Δ time to success, s (95%)" in markdown and shown in markdown
    out = io.StringIO()
    for item in comparison_renderables(c, plain=True):
        Console(file=out, width=250).print(item)
    assert "delta time to success s" in out.getvalue() and shown in out.getvalue()
    html = comparison_table_html(c)
    assert "Δ time to success" in html and f'data-sort="{got["estimate"]}"' in html
    assert shown.split(" ", 1)[1] in html  # the interval, on the cell's second line
