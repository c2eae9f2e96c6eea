"""The viewer's episode timeline (``/run/<id>/steps/<sha256>``): traces of the step data."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.store import open_store, read_steps
from evalband.store._steps import steps_ref
from evalband.view import serve_in_background
from evalband.web._view_steps import MAX_POINTS, trace_svg


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_timeline_draws_every_step_of_every_series(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    panel = load_panel({"name": "pt-steps", "env": "evalband/PushT-v0", "episodes": 2,
                        "seed": 4, "budget": {"steps": 15}, "metrics": ["pos_error"]})
    with open_store(path) as store:
        run_panel(panel, "pusht:expert", store, run_id="pt", record_steps=True)
        records = store.episode_records("pt")
        datas = [read_steps(store.path, r) for r in records]
    with serve_in_background(path) as server:
        status, table = get(f"{server.url}run/pt/episodes")
        assert status == 200
        links = re.findall(r'href="(/run/pt/steps/[0-9a-f]{64})"', table)
        assert len(links) == len(records)
        for record, data in zip(records, datas, strict=True):
            assert data is not None
            digest = steps_ref(record)["sha256"]  # type: ignore[index]
            status, page = get(f"{server.url}run/pt/steps/{digest}")
            assert status == 200
            series = re.findall(r'data-series="([^"]+)"', page)
            assert series == ["reward", "info: pos_error", "action[0]", "action[1]"]
            points = [len(p.split()) for p in re.findall(r'points="([^"]*)"', page)]
            assert points == [data.steps] * 4  # one point a step on every trace
            assert f'data-steps="{data.steps}"' in page
        status, page = get(f"{server.url}run/pt/steps/{'0' * 64}")
        assert status == 404 and "no episode of run pt has step data" in page


def test_a_trace_breaks_at_nan_and_decimates_long_episodes() -> None:
    svg = trace_svg("x", np.array([1.0, np.nan, 2.0, 3.0]))
    assert [len(p.split()) for p in re.findall(r'points="([^"]*)"', svg)] == [1, 2]
    long = trace_svg("y", np.arange(10 * MAX_POINTS, dtype=float))
    (points,) = re.findall(r'points="([^"]*)"', long)
    assert len(points.split()) == MAX_POINTS
