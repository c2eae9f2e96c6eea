"""The report's figures as SVG: each parses and encodes its data (counts, order, positions)."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evalband.report import _curves, _plots, _plots_runs
from evalband.report._data import collect
from evalband.report._svgplot import integer_ticks, log_ticks, nice_ticks
from evalband.report._traces import episode_traces

NS = {"s": "http://www.w3.org/2000/svg"}
_POINT = re.compile(r"[ML](-?[\d.]+) (-?[\d.]+)")


def parse(svg: str) -> ET.Element:
    """The figure's root, after the checks every figure must pass."""
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.find("s:title", NS) is not None and root.find("s:desc", NS) is not None
    assert not [e for e in root.iter() if e.get("id")]  # no ids: nothing can collide
    assert set(re.findall(r"https?://[^\"' )]+", svg)) <= {"http://www.w3.org/2000/svg"}
    return root


def of_class(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if e.get("class") == cls]


def points(path: ET.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in _POINT.findall(path.get("d", ""))]


@pytest.fixture(scope="module")
def hidden(labs):
    return collect(list(labs.hidden), labs.store)


def test_forest_has_one_interval_per_slice_and_run_in_order_of_rate(hidden) -> None:
    rows = _plots.forest_rows(hidden.runs, hidden.comparisons)
    root = parse(_plots.forest_plot(rows, ["a", "b"], hidden.confidence))
    marks = of_class(root, "interval")
    rates = [t for r in rows[: _plots.MAX_ROWS] for t in r.rates if t]
    assert len(marks) == len(rates) > 2
    est = np.array([float(m.get("data-estimate", "nan")) for m in marks])
    assert sorted(est.tolist()) == pytest.approx(sorted(100 * t[0] for t in rates))
    cx = np.array([float(m.find("s:circle", NS).get("cx")) for m in marks])
    # a higher rate sits further right
    assert np.all(np.diff(cx[np.argsort(est, kind="stable")]) >= -1e-6)


def test_delta_has_each_slice_and_the_aggregate_last(hidden) -> None:
    c = hidden.comparisons[0]
    root = parse(_plots.delta_plot(c))
    marks = of_class(root, "interval")
    shown = [r for r in c.slice_rows if r.delta is not None]
    assert len(marks) == len(shown) + 1
    assert [float(m.get("data-estimate", "nan")) for m in marks] == pytest.approx(
        [100 * r.delta.estimate for r in shown] + [100 * c.aggregate.delta], rel=1e-5)
    # rows go down the page: the aggregate is the lowest
    ys = [float(points(m.find("s:path", NS))[0][1]) for m in marks]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)
    regressed = sum(r.verdict == "regressed" for r in shown)
    assert regressed >= 1  # the hidden regression: some slice is red
    assert sum(m.find("s:circle", NS).get("fill") == "#c62828" for m in marks
               if m.find("s:circle", NS) is not None) == regressed


def test_outcome_bars_are_the_nonzero_counts_and_fill_each_row(hidden) -> None:
    root = parse(_plots.outcome_plot(hidden.runs))
    bars = of_class(root, "bar")
    rows = [(s, v) for s in hidden.runs[0].slices for v in hidden.runs]
    nonzero = sum(1 for s, v in rows
                  for o in ("success", "failure", "timeout", "error")
                  if next(x for x in v.slices if x.name == s.name).summary.counts.get(o, 0))
    assert len(bars) == nonzero
    by_row: dict[str, float] = {}
    for b in bars:
        by_row[b.get("y", "")] = by_row.get(b.get("y", ""), 0.0) + float(b.get("width", "0"))
    assert len(by_row) == len(rows)
    widths = list(by_row.values())
    assert max(widths) == pytest.approx(min(widths), abs=0.05)  # every row sums to 100%


def test_power_curves_run_left_to_right_and_fall(hidden) -> None:
    pc = _curves.power_curve(hidden.runs)
    assert pc is not None and pc.n_paired is not None
    root = parse(_plots.power_plot(pc))
    series = of_class(root, "series")
    assert len(series) == 3
    down = points(series[0])
    assert len(down) == int(np.isfinite(pc.n_down).sum())
    xs, ys = zip(*down, strict=True)
    assert list(xs) == sorted(xs) and list(ys) == sorted(ys)  # fewer episodes: lower
    assert f"this run: n = {pc.n:,} per arm" in "".join(root.itertext())


def test_cumulative_has_a_curve_and_a_band_per_run(hidden) -> None:
    curves = [(v.run_id, _curves.cumulative_curve(v.data.records)) for v in hidden.runs]
    root = parse(_plots_runs.cumulative_plot(curves))
    series, bands = of_class(root, "series"), of_class(root, "band")
    assert len(series) == len(bands) == 2
    for path, (_, curve) in zip(series, curves, strict=True):
        pts = points(path)
        assert len(pts) == len(curve.n)
        xs = [x for x, _ in pts]
        assert xs == sorted(xs) and len(set(xs)) == len(xs)


def test_swing_has_a_dot_per_suite(hidden) -> None:
    root = parse(_plots_runs.swing_plot(hidden.runs))
    suites = sum(len(v.noise.suites) for v in hidden.runs if v.noise is not None)
    assert 0 < suites <= 2 * _plots_runs.MAX_SUITE_DOTS
    assert len(of_class(root, "mark")) == suites


def test_traces_draw_position_and_velocity_per_episode(labs) -> None:
    traces = episode_traces(collect(list(labs.reach), labs.store).runs)
    assert traces is not None and traces.kind == "reach1d" and traces.traces
    root = parse(_plots_runs.trace_plot(traces))
    series = of_class(root, "series")
    assert len(series) == 2 * len(traces.traces)
    for path in series:
        xs = [x for x, _ in points(path)]
        assert xs == sorted(xs)  # time runs forward


def test_ticks_cover_the_range() -> None:
    for lo, hi in ((-2, 102), (0.001, 0.6), (1, 7), (-0.37, 1.3)):
        t = nice_ticks(lo, hi)
        assert 3 <= len(t) <= 11 and lo <= t[0] and t[-1] <= hi
    assert integer_ticks(-0.6, 2.6) == [0.0, 1.0, 2.0]
    assert log_ticks(20, 5000)[0] == [100.0, 1000.0]


def test_rendering_a_report_never_imports_matplotlib(labs) -> None:
    code = ("import sys; from evalband.report import render_html; "
            f"page = render_html({list(labs.hidden)!r}, {str(labs.store)!r}); "
            "assert page.count('<svg') >= 5; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
