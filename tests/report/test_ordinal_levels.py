"""An ordinal metric's levels in every renderer, from a store through the CLI: ``show``
(terminal and ``--json``), ``compare`` (terminal and ``--json``, against the schema and read
back), and ``report`` (Markdown and HTML) of one run and of a comparison."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.analysis import Comparison
from evalband.analysis._metrics import MetricSummary
from evalband.analysis._models import from_wire, to_wire
from evalband.cli import main
from evalband.panel import load_panel
from evalband.run import Recorder
from evalband.store import open_store

ROOT = Path(__file__).resolve().parents[2]

SPEC = {"name": "grasp", "env": "evalband/Coin-v0", "episodes": 10, "seed": 0,
        "budget": {"steps": 1}, "factors": {"obj": ["cube", "mug"]},
        "metrics": [{"name": "grasp", "type": "ordinal"}, "coverage"]}

LEVELS = {"b": (0.3, 0.3, 0.2, 0.2), "c": (0.1, 0.2, 0.3, 0.4)}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, list[Any]]]:
    """Two stored runs of seed 004's shape: grasp levels 0-3 on two objects (10 each)."""
    db = str(tmp_path_factory.mktemp("ordinal") / "s.sqlite")
    panel = load_panel(SPEC)
    rng = np.random.default_rng(7)
    kept: dict[str, list[Any]] = {}
    for run_id, p in LEVELS.items():
        with open_store(db) as st, Recorder(st, panel, run_id, run_id=run_id) as rec:
            for s in panel.episode_specs():
                g = float(rng.choice(4, p=p))
                rec.log(cell=s.cell, episode=s.episode, repeat=s.repeat, steps=1,
                        outcome="success" if g >= 2 else "failure",
                        extra={"metrics": {"grasp": g, "coverage": float(rng.random())}})
                kept.setdefault(run_id, []).append((s.cell, g))
    return db, kept


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out = capsys.readouterr()
    assert code in (0, 3, 4, 5), out.err
    return out.out


def _count(kept: list[Any], cell: str | None, at: float, least: bool = False) -> int:
    return sum(1 for c, g in kept if (cell is None or c == cell)
               and (g >= at if least else g == at))


def test_show_prints_each_level_per_slice_and_json_reads_back(
        capsys: pytest.CaptureFixture[str],
        store: tuple[str, dict[str, list[Any]]]) -> None:
    db, kept = store
    out = cli(capsys, "show", "b", "--store", db)
    assert "ordinal levels" in out and "Wilson" in out
    for cell, n in (("obj=cube", 10), ("obj=mug", 10), ("overall", 20)):
        for level in range(4):
            k = _count(kept["b"], None if cell == "overall" else cell, level)
            row = next(x for x in out.splitlines()
                       if re.match(rf"\s*grasp\s+{re.escape(cell)}\s+{n}\s+{level}\s+\d+/", x))
            assert f"{k}/{n} = {100 * k / n:.1f}%" in row
    assert not [x for x in out.splitlines() if re.match(r"\s*coverage\s+\S+\s+\d+\s+\d\s+\d+/", x)]
    doc = json.loads(cli(capsys, "show", "b", "--store", db, "--json"))
    by = {(m["metric"], m["slice"]): m for m in doc["metrics"]}
    assert "levels" not in by["coverage", "overall"]  # only an ordinal metric has them
    grasp = by["grasp", "overall"]
    assert [x["k"] for x in grasp["levels"]] == [_count(kept["b"], None, k) for k in range(4)]
    assert [x["at_least"] and x["at_least"]["k"] for x in grasp["levels"]] == [
        None, *(_count(kept["b"], None, k, least=True) for k in (1, 2, 3))]
    back = from_wire(MetricSummary, grasp)
    assert [s.share.k for s in back.levels] == [x["k"] for x in grasp["levels"]]
    assert back.levels[3].at_least is not None
    assert back.levels[3].at_least.high == grasp["levels"][3]["at_least"]["high"]


def test_compare_prints_the_at_least_differences_and_json_matches_the_schema(
        capsys: pytest.CaptureFixture[str],
        store: tuple[str, dict[str, list[Any]]]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    db, kept = store
    out = cli(capsys, "compare", "b", "c", "--store", db)
    assert "ordinal levels" in out and "Newcombe paired score" in out
    for cell in ("obj=cube", "obj=mug", "overall"):
        for level in (1, 2, 3):
            row = next(x for x in out.splitlines()
                       if re.match(rf"\s*grasp\s+{re.escape(cell)}\s+\d+ pairs\s+≥ {level}\s", x))
            n = 20 if cell == "overall" else 10
            kb = _count(kept["b"], None if cell == "overall" else cell, level, least=True)
            kc = _count(kept["c"], None if cell == "overall" else cell, level, least=True)
            assert f"{100 * kb / n:.1f}%" in row and f"{100 * (kc - kb) / n:+.1f} [" in row
            assert row.rstrip().endswith("descriptive")
    doc = json.loads(cli(capsys, "compare", "b", "c", "--store", db, "--json"))
    schema = json.loads((ROOT / "docs" / "schemas" / "comparison.schema.json").read_text())
    jsonschema.validate(doc, schema)
    rows = {(m["metric"], m["slice"]): m for m in doc["metrics"]}
    assert "levels" not in rows["coverage", "overall"]
    assert [x["level"] for x in rows["grasp", "overall"]["levels"]] == [1, 2, 3]
    c = Comparison.from_dict(doc)
    assert [m.levels for m in c.metrics if m.metric == "grasp"][0][0].delta is not None
    assert json.loads(json.dumps(to_wire(c.metrics))) == doc["metrics"]  # read back whole


def test_reports_carry_the_level_tables(capsys: pytest.CaptureFixture[str],
                                        store: tuple[str, dict[str, list[Any]]],
                                        tmp_path: Path) -> None:
    db, kept = store
    md, html = tmp_path / "run.md", tmp_path / "run.html"
    cli(capsys, "report", "b", "--store", db, "--md", str(md), "--html", str(html))
    k3 = _count(kept["b"], None, 3)
    text = md.read_text()
    assert "**Ordinal levels**" in text
    assert f"| grasp | overall | 20 | 3 | {k3}/20 = {100 * k3 / 20:.1f}%" in text
    page = html.read_text()
    assert "Ordinal levels" in page and f"{k3}/20 = {100 * k3 / 20:.1f}%" in page
    md, html = tmp_path / "cmp.md", tmp_path / "cmp.html"
    cli(capsys, "report", "b", "c", "--store", db, "--md", str(md), "--html", str(html))
    kb, kc = (_count(kept[r], None, 3, least=True) for r in ("b", "c"))
    text = md.read_text()
    assert "**Ordinal levels** (share at least at each level" in text
    assert (f"| grasp | overall | 20 pairs | ≥ 3 | {100 * kb / 20:.1f}% | "
            f"{100 * kc / 20:.1f}% | {100 * (kc - kb) / 20:+.1f} [") in text
    page = html.read_text()
    assert "Ordinal levels (descriptive)" in page and "≥ 3" in page
    assert page.count('class="sortable ordinal-levels"') == 3  # each run's, the comparison's
