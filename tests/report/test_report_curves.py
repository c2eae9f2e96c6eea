"""The plotted series against brute force, statsmodels and the env's own rules."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalband._util.families import trace_spec
from evalband.envs.reach1d import BOUNDARY, SETTLE_SAMPLES, SUCCESS_POSITION, SUCCESS_VELOCITY
from evalband.episode import EpisodeRecord
from evalband.report._curves import (
    accumulation_order,
    cumulative_curve,
    power_curve,
    prefix_grid,
    running_verdicts,
)
from evalband.report._data import collect
from evalband.report._traces import (
    episode_traces,
    pick_keys,
    stored_trace,
)
from evalband.stats import diff_paired, interval, minimum_detectable_difference, sample_size


def records(outcomes: list[str], cells: int = 2, run: str = "r") -> list[EpisodeRecord]:
    out = []
    for i, outcome in enumerate(outcomes):
        cell, episode = f"c={i % cells}", i // cells
        out.append(EpisodeRecord(run, "p", "f", cell, episode, 0, i, outcome,
                                 outcome in ("success", "failure"), outcome == "timeout", 1,
                                 slices={"c": str(i % cells)}))
    return out


@pytest.mark.parametrize("total", [1, 7, 500, 501, 12_345])
def test_prefix_grid(total: int) -> None:
    grid = prefix_grid(total)
    assert grid[0] == 1 and grid[-1] == total and len(grid) <= 500
    assert np.all(np.diff(grid) > 0)
    if total <= 500:
        assert grid.tolist() == list(range(1, total + 1))


def test_cumulative_curve_is_the_prefix_rate_with_its_wilson_band() -> None:
    rng = np.random.default_rng(3)
    outcomes = rng.choice(["success", "failure", "timeout", "error"], size=1200,
                          p=[0.5, 0.2, 0.2, 0.1]).tolist()
    recs = records(outcomes)
    rng.shuffle(recs)  # the curve orders episodes itself
    curve = cumulative_curve(recs)
    assert curve is not None and len(curve.n) <= 500
    # Brute force: errors left out, episode index first, then the cell.
    ordered = sorted((r for r in recs if r.outcome.value != "error"),
                     key=lambda r: (r.episode, r.repeat, r.cell))
    wins = [r.success for r in ordered]
    assert curve.n[-1] == len(ordered)
    for i in (0, 5, len(curve.n) // 2, len(curve.n) - 1):
        n = int(curve.n[i])
        k = sum(wins[:n])
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert curve.k[i] == k and curve.rate[i] == pytest.approx(k / n)
        assert curve.low[i] == pytest.approx(low, abs=1e-9)
        assert curve.high[i] == pytest.approx(high, abs=1e-9)
    counted = cumulative_curve(recs, errors_as_failures=True)
    assert counted is not None and counted.n[-1] == 1200
    assert cumulative_curve(records(["error"])) is None


def test_accumulation_order_interleaves_cells() -> None:
    recs = sorted(records(["success"] * 6, cells=3), key=accumulation_order)
    assert [(r.episode, r.cell) for r in recs[:3]] == [(0, "c=0"), (0, "c=1"), (0, "c=2")]


def test_running_verdicts_end_on_the_full_paired_interval() -> None:
    rng = np.random.default_rng(11)
    u = rng.random(400)
    base = records(["success" if x < 0.4 else "failure" for x in u], run="b")
    cand = records(["success" if x < 0.6 else "failure" for x in u], run="c")
    stories = running_verdicts(base, cand)
    b = np.array([r.success for r in base])
    c = np.array([r.success for r in cand])
    full = diff_paired(int(np.sum(b & c)), int(np.sum(c & ~b)), int(np.sum(b & ~c)),
                       int(np.sum(~b & ~c)))
    last = stories[-1]
    assert last.pairs == 400 and last.estimate == pytest.approx(full.estimate)
    assert (last.low, last.high) == pytest.approx((full.low, full.high))
    assert last.state == "candidate better"  # common random numbers: only c-only pairs
    # Each earlier point is a change of verdict, brute-forced at that prefix.
    for point in stories[:-1]:
        n = point.pairs
        bb, cc = b[:n], c[:n]
        d = diff_paired(int(np.sum(bb & cc)), int(np.sum(cc & ~bb)), int(np.sum(bb & ~cc)),
                        int(np.sum(~bb & ~cc)))
        assert (d.low > 0) == (point.state == "candidate better")
    assert running_verdicts(base, records(["success"], run="x")[:0]) == []


def test_power_curve_marks_this_runs_resolvable_gap(labs) -> None:
    data = collect(list(labs.hidden), labs.store)
    pc = power_curve(data.runs)
    assert pc is not None
    p, n = data.runs[0].summary.rate.estimate, data.runs[0].summary.n
    assert pc.n == n == 600 and pc.n_slice == 200
    assert pc.mdd_down == pytest.approx(minimum_detectable_difference(n, p, direction="down"))
    assert pc.mdd_slice == pytest.approx(
        minimum_detectable_difference(200, p, direction="down"))
    i = 10
    assert pc.n_down[i] == sample_size(p - pc.gaps[i], p)
    # Resolvable means the sample-size curve crosses this n at that gap.
    assert sample_size(p - pc.mdd_down, p) == pytest.approx(n, rel=0.01)
    assert 0 < pc.discordant < 1


def test_stored_traces_follow_the_envs_rules(labs) -> None:
    data = collect(list(labs.reach), labs.store)
    for view in data.runs:
        traced = [(r, t) for r in view.data.records if (t := stored_trace(view, r)) is not None]
        assert len(traced) == 8  # the first eight episodes of the lab's one cell
        for record, trace in traced:
            assert trace.outcome == record.outcome.value
            x, v = np.array(trace.series["x"]), np.array(trace.series["v"])
            assert len(x) == record.steps + 1  # the reset state, then one sample per action
            settled = (np.abs(x[-SETTLE_SAMPLES:]) <= SUCCESS_POSITION) & (
                np.abs(v[-SETTLE_SAMPLES:]) <= SUCCESS_VELOCITY)
            if record.outcome.value == "success":
                assert settled.all()
            elif record.outcome.value == "failure":
                assert abs(x[-1]) >= BOUNDARY
            else:
                assert record.steps == 30 and np.all(np.abs(x) < BOUNDARY)


def test_the_plots_guides_are_the_envs_constants() -> None:
    """The families' trace specs (plain data the report reads) hold the envs' own numbers."""
    from evalband.envs.pusht_model import ENV_ID as PUSHT_ID
    from evalband.envs.pusht_model import TABLE_HALF, TARGET
    from evalband.envs.reach1d import ENV_ID as REACH_ID

    reach, pusht = trace_spec(REACH_ID), trace_spec(PUSHT_ID)
    assert reach is not None and pusht is not None
    x, v = reach.options["rows"]
    assert (x["series"], x["lines"], x["band"]) == ("x", BOUNDARY, SUCCESS_POSITION)
    assert (v["series"], v["band"]) == ("v", SUCCESS_VELOCITY)
    assert (pusht.options["half"], pusht.options["target"]) == (TABLE_HALF, list(TARGET[:2]))


def test_traces_show_where_the_runs_disagree_first(labs) -> None:
    data = collect(list(labs.reach), labs.store)
    traced = {r.key for r in data.runs[0].data.records if "trace" in r.extra}
    keys = pick_keys(data.runs, limit=4, among=traced)
    assert set(keys) <= traced
    base = {r.key: r.success for r in data.runs[0].data.records}
    cand = {r.key: r.success for r in data.runs[1].data.records}
    assert len(keys) == 4 and cand[keys[0]] and not base[keys[0]]
    traces = episode_traces(data.runs)
    assert traces is not None and traces.kind == "reach1d" and not traces.notes
    assert len(traces.traces) == 8  # the same four episodes for both runs
    hidden = collect(list(labs.hidden), labs.store)
    assert episode_traces(hidden.runs) is None  # the coin stand-in records no trace


def test_single_run_curve_matches_the_summary(labs) -> None:
    data = collect([labs.reach[1]], labs.store)
    view = data.runs[0]
    curve = cumulative_curve(view.data.records)
    assert curve is not None and view.summary.rate is not None
    assert (curve.low[-1], curve.high[-1]) == (view.summary.rate.low, view.summary.rate.high)
    assert interval(50, 64).low == view.summary.rate.low


def test_pusht_traces_come_from_the_stored_episodes(store) -> None:
    pytest.importorskip("mujoco")
    from evalband.panel import load_panel
    from evalband.report._plots_runs import trace_plot
    from evalband.run import Recorder, run_panel

    panel = load_panel({"name": "pt", "env": "evalband/PushT-v0", "episodes": 2, "seed": 5,
                        "budget": {"steps": 3}, "factors": {"start": ["train"]}})
    run_panel(panel, lambda obs: obs[:2], store, run_id="pt")
    traces = episode_traces(collect(["pt"], store).runs)
    seeds = [s.condition_seed for s in panel.episode_specs()]
    assert traces is not None and traces.kind == "pusht" and not traces.notes
    assert sorted(t.condition_seed for t in traces.traces) == sorted(seeds)
    assert all(len(t.series["tee_x"]) == 4 for t in traces.traces)
    svg = trace_plot(traces)
    assert svg.count("<path") > 4 and "pt" in svg
    # A run logged without traces (made elsewhere) gets a note, not a replay.
    with Recorder(store, panel, "elsewhere.pt", run_id="logged") as rec:
        for spec in panel.episode_specs():
            rec.log(cell=spec.cell, episode=spec.episode, outcome="timeout", steps=3)
    logged = episode_traces(collect(["logged"], store).runs)
    assert logged is not None and not logged.traces
    assert "no episode traces stored" in logged.notes[0]
