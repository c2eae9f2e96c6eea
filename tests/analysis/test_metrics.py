"""Metrics in ``compare``: per-slice differences, primary metrics in the one family, renderings.

The differences are checked against scipy (paired ``ttest_rel`` on the matched episodes, Welch
where none match); a primary metric's slices join the success slices' family (one family-wise
error rate, small seeded Monte Carlo here; the big one is ``bench/bench_metrics.py``), and its
verdict, adjusted p and interval agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from evalband.analysis import Comparison, compare_runs
from evalband.analysis._compare import RunData
from evalband.analysis._metrics import metric_summaries
from evalband.episode import EpisodeRecord, Outcome
from evalband.panel import Panel, load_panel
from evalband.report import comparison_markdown
from evalband.report._document import comparison_document
from evalband.report._metrics import summary_cells

FACTORS = {"f": ["a", "b", "c"]}


def panel_with(metrics: list[Any], episodes: int = 20, **more: Any) -> Panel:
    return load_panel({"name": "m", "env": "evalband/Coin-v0", "episodes": episodes, "seed": 0,
                       "budget": {"steps": 1}, "factors": FACTORS, "metrics": metrics,
                       **more})


def run_of(panel: Panel, run_id: str, rng: np.random.Generator, shift: float = 0.0,
           skip: int = 0, offset: int = 0) -> RunData:
    """Episodes whose ``return`` is the condition's level plus noise (+ ``shift``)."""
    records = []
    for s in panel.episode_specs()[skip:]:
        level = np.random.default_rng(s.condition_seed).normal()
        won = rng.random() < 0.6
        records.append(EpisodeRecord(
            run_id, run_id, panel.fingerprint, s.cell, s.episode + offset, s.repeat,
            s.condition_seed,
            Outcome.SUCCESS if won else Outcome.FAILURE, True, False, 1,
            slices=dict(s.slices),
            extra={"metrics": {"return": level + shift + rng.exponential(1.0),
                               "coverage": float(rng.beta(2.0, 5.0)), "steps_left": 3.0}}))
    return RunData(run_id, run_id, panel.fingerprint, panel, records, source="memory")


def rows(c: Comparison, metric: str) -> dict[str, Any]:
    return {m.slice: m for m in c.metrics if m.metric == metric}


def test_paired_rows_are_scipy_on_the_matched_episodes() -> None:
    panel = panel_with(["coverage"])
    rng = np.random.default_rng(0)
    base, cand = run_of(panel, "b", rng), run_of(panel, "c", rng, skip=5)  # 5 unmatched
    c = compare_runs(base, cand)
    got = rows(c, "coverage")["f=a"]
    by_key = {r.key: r.metrics["coverage"] for r in base.records if r.cell == "f=a"}
    pairs = [(r.metrics["coverage"], by_key[r.key]) for r in cand.records
             if r.cell == "f=a" and r.key in by_key]
    xc, xb = map(np.array, zip(*pairs, strict=True))
    assert got.role == "descriptive" and got.verdict is None and got.n_pairs == len(pairs) == 15
    if got.delta.method == "paired-t":
        ref = stats.ttest_rel(xc, xb)
        assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)
        assert (got.delta.low, got.delta.high) == pytest.approx(
            tuple(ref.confidence_interval(0.95)), rel=1e-9)
    assert got.mean_candidate == pytest.approx(float(np.mean(
        [r.metrics["coverage"] for r in cand.records if r.cell == "f=a"])))
    overall = rows(c, "coverage")["overall"]
    assert overall.kind == "overall" and overall.n_pairs == 55


def test_unmatched_runs_use_welch() -> None:
    panel = panel_with(["coverage"])
    rng = np.random.default_rng(1)
    base, cand = run_of(panel, "b", rng), run_of(panel, "c", rng, offset=1000)  # none pair
    c = compare_runs(base, cand)
    got = rows(c, "coverage")["f=b"]
    xb = [r.metrics["coverage"] for r in base.records if r.cell == "f=b"]
    xc = [r.metrics["coverage"] for r in cand.records if r.cell == "f=b"]
    ref = stats.ttest_ind(xc, xb, equal_var=False)
    assert got.pairing == "unpaired" and got.delta.method == "welch-t"
    assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_a_constant_metric_is_one_row_that_says_so() -> None:
    panel = panel_with([])
    rng = np.random.default_rng(2)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng))
    (row,) = rows(c, "steps_left").values()
    assert row.delta is None and row.reasons == ["3 in every episode of both runs"]


def test_a_primary_metric_decides_in_the_one_family() -> None:
    panel = panel_with([{"name": "return", "primary": True}])
    rng = np.random.default_rng(3)
    base, worse = run_of(panel, "b", rng), run_of(panel, "c", rng, shift=-1.5)
    c = compare_runs(base, worse)
    decided = [m for m in c.metrics if m.role == "primary"]
    assert len(decided) == 3 and c.family_size == 3 + 3  # success slices + metric slices
    assert all(m.verdict == "regressed" for m in decided)
    assert c.verdict == "regression" and "return @ f=a" in c.blocking
    assert rows(c, "return")["overall"].role == "descriptive"
    for m in decided:  # verdict, adjusted p and interval agree
        assert (m.p_holm <= 0.05) == (m.delta.high < 0) == (m.verdict == "regressed")
        assert m.delta.confidence > 0.95  # at the level Holm used for it


def test_direction_and_margin_orient_the_verdict() -> None:
    rng = np.random.default_rng(4)
    lower = panel_with([{"name": "return", "primary": True, "direction": "lower"}])
    c = compare_runs(run_of(lower, "b", rng), run_of(lower, "c", rng, shift=-1.5))
    assert {m.verdict for m in c.metrics if m.role == "primary"} == {"improved"}
    assert all(m.delta.estimate < 0 for m in c.metrics if m.role == "primary")  # raw scale
    margin = panel_with([{"name": "return", "primary": True, "margin": 3.0}], episodes=60)
    c = compare_runs(run_of(margin, "b", rng), run_of(margin, "c", rng, shift=-0.1))
    assert {m.verdict for m in c.metrics if m.role == "primary"} <= {"non-inferior", "regressed"}
    assert "non-inferior" in {m.verdict for m in c.metrics if m.role == "primary"}


def test_no_metric_rows_when_no_episode_records_one() -> None:
    panel = panel_with([])
    base = RunData("b", "b", panel.fingerprint, panel, [], source="memory")
    assert compare_runs(base, base).metrics == []


def test_json_round_trips_and_matches_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    panel = panel_with([{"name": "return", "primary": True}, "coverage"])
    rng = np.random.default_rng(5)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng, shift=-1.0))
    doc = json.loads(json.dumps(comparison_document(c)))
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schemas"
                         / "comparison.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert Comparison.from_dict(doc) == c
    assert {m["metric"] for m in doc["metrics"]} == {"return", "coverage", "steps_left"}


def test_markdown_prints_each_slice_difference_and_says_descriptive() -> None:
    panel = panel_with([{"name": "return", "primary": True}, "coverage"])
    rng = np.random.default_rng(6)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng, shift=-1.5))
    text = comparison_markdown([c])
    line = next(x for x in text.splitlines() if x.startswith("| return | f=a |"))
    assert "regressed" in line and f"{c.metrics[0].delta.estimate:+.4g}" in line
    assert any(x.startswith("| coverage | f=a |") and x.endswith("descriptive |")
               for x in text.splitlines())


def test_summaries_choose_the_interval_by_type() -> None:
    panel = panel_with([{"name": "coverage", "bounded": True}, {"name": "return",
                                                                 "bounded": False}])
    rng = np.random.default_rng(7)
    by = {s.metric: s for s in metric_summaries(run_of(panel, "b", rng).records, panel)}
    assert by["coverage"].mean.method == "bootstrap-t" and by["coverage"].bounded
    assert by["return"].mean.method == "student-t" and not by["return"].bounded
    assert 0.0 <= by["coverage"].mean.low <= by["coverage"].mean.high <= 1.0


def test_no_time_to_success_delta_under_a_return_rule() -> None:
    panel = panel_with([], success={"rule": "return", "threshold": 0.5})
    rng = np.random.default_rng(8)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng))
    assert all(r.time_to_success_delta_s is None for r in c.slice_rows)


def test_identical_policies_rarely_regress_with_a_primary_metric_in_the_family() -> None:
    """Small seeded MC (200 pairs of identical runs, 3 success + 3 skewed metric slices).

    At the stated 2.5% per direction, 200 draws give at most 14 false regressions (and 14
    false improvements) with probability > 0.999; a family without multiplicity control
    (~6 x 2.5%) would give ~28. The bench runs the big grid.
    """
    panel = panel_with([{"name": "return", "primary": True}], episodes=20)
    rng = np.random.default_rng(11)
    regressions = improvements = 0
    for _ in range(200):
        c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng),
                         power_statements=False)
        decided = [*(r.verdict for r in c.slice_rows),
                   *(m.verdict for m in c.metrics if m.role == "primary")]
        regressions += "regressed" in decided
        improvements += "improved" in decided
    assert regressions <= 14 and improvements <= 14, (regressions, improvements)


def test_a_skewed_descriptive_metric_uses_the_seeded_paired_bca() -> None:
    """Declared ``unbounded`` (a mean), skewed differences get the paired BCa."""
    panel = panel_with([{"name": "return", "type": "unbounded"}])
    rng = np.random.default_rng(12)
    base, cand = run_of(panel, "b", rng), run_of(panel, "c", rng)
    for r in cand.records:  # heavy right tail on the candidate: skewed differences
        r.extra["metrics"]["return"] += float(rng.lognormal(0.0, 1.5))
    first, again = compare_runs(base, cand, seed=3), compare_runs(base, cand, seed=3)
    other = compare_runs(base, cand, seed=4)
    row = rows(first, "return")["overall"]
    assert row.delta.method == "paired-bootstrap-bca"
    assert rows(again, "return")["overall"].delta == row.delta  # same seed, same interval
    assert rows(other, "return")["overall"].delta != row.delta
    assert any("seed 3" in n for n in first.notes)


def test_stored_runs_give_the_rows_their_records_give(tmp_path: Path) -> None:
    """The columnar path (the store's ``extra`` column) equals the record-by-record one."""
    import evalband
    from evalband.run import Recorder
    from evalband.store import open_store

    panel = panel_with([{"name": "return", "primary": True}, "coverage"], episodes=12)
    rng = np.random.default_rng(13)
    runs = [run_of(panel, "b", rng), run_of(panel, "c", rng, shift=-0.5, skip=3)]
    runs[1].records[0].extra["metrics"]["coverage"] = float("nan")  # left out on both paths
    path = tmp_path / "s.sqlite"
    with open_store(path) as st:
        for run in runs:
            with Recorder(st, panel, run.run_id, run_id=run.run_id) as rec:
                for r in run.records:
                    rec.log(cell=r.cell, episode=r.episode, repeat=r.repeat,
                            outcome=r.outcome.value, steps=1, extra=r.extra)
    with open_store(path) as st:
        stored = compare_runs(evalband.load_run("b", st), evalband.load_run("c", st))
    fresh = compare_runs(*runs)
    assert stored.metrics == fresh.metrics and stored.verdict == fresh.verdict
    assert rows(stored, "coverage")["overall"].n_candidate == 3 * 12 - 3 - 1


def test_the_sequential_verdict_says_it_does_not_decide_primary_metrics() -> None:
    from evalband.analysis import compare_sequential

    panel = panel_with([{"name": "return", "primary": True}])
    rng = np.random.default_rng(14)
    c = compare_sequential(run_of(panel, "b", rng), run_of(panel, "c", rng, shift=-1.5))
    assert c.metrics == [] and not any("return" in name for name in c.blocking)
    assert any("decided at fixed n only" in n for n in c.notes)


def test_a_primary_metric_no_episode_recorded_leaves_the_verdict_inconclusive() -> None:
    panel = panel_with([{"name": "grasp_depth", "primary": True}, "not_recorded_either"])
    rng = np.random.default_rng(15)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng))
    missing = rows(c, "grasp_depth")
    assert set(missing) == {"f=a", "f=b", "f=c", "overall"}
    assert all(m.verdict == "inconclusive" for m in missing.values() if m.role == "primary")
    from evalband.report import comparison_sentence

    assert c.verdict == "inconclusive" and "recorded grasp_depth" in comparison_sentence(c)
    assert "not_recorded_either" not in {m.metric for m in c.metrics}
    assert [s.metric for s in metric_summaries(run_of(panel, "x", rng).records, panel)] == [
        "return", "coverage", "steps_left"]


def _lognormal_runs(panel: Panel, seed: int, shift: float = 0.0) -> tuple[RunData, RunData]:
    """Two runs whose ``return`` differences are lognormal (skewness ~6): a median type."""
    rng = np.random.default_rng(seed)
    base, cand = run_of(panel, "b", rng), run_of(panel, "c", rng)
    for r, s in zip(cand.records, base.records, strict=True):
        r.extra["metrics"]["return"] = (s.extra["metrics"]["return"] + shift
                                        + float(rng.lognormal(0.0, 1.0)) - 1.0)
    return base, cand


def test_a_skewed_metric_is_compared_by_the_median_difference_and_the_sign_test() -> None:
    panel = panel_with([{"name": "return", "primary": True}])
    base, cand = _lognormal_runs(panel, 21, shift=0.8)
    c = compare_runs(base, cand)
    for slice_name, row in rows(c, "return").items():
        assert row.estimand == "median" and row.metric_type == "skewed"
        assert row.delta.method == "sign-test-median"
        cells = {"f=a", "f=b", "f=c"} if slice_name == "overall" else {slice_name}
        by_key = {r.key: r.metrics["return"] for r in base.records if r.cell in cells}
        d = np.array([r.metrics["return"] - by_key[r.key] for r in cand.records
                      if r.cell in cells])
        assert row.p_value == pytest.approx(
            stats.binomtest(int((d > 0).sum()), d.size).pvalue, rel=1e-9)
        assert row.delta.estimate == pytest.approx(float(np.median(d)))
        assert row.mean_candidate == pytest.approx(float(np.median(
            [r.metrics["return"] for r in cand.records if r.cell in cells])))
        if row.role == "primary":  # decided by the same procedure as its interval
            assert (row.p_holm <= 0.05) == (row.delta.low > 0) == (row.verdict == "improved")
    assert any("sign test" in n for n in c.notes)


def test_identical_policies_with_a_skewed_primary_metric_rarely_regress() -> None:
    """100 pairs of identical runs, 3 success + 3 median (sign test) slices, 20 per slice.

    At 2.5% per direction, more than 8 of 100 has probability < 0.001; a family without
    multiplicity control (~6 x 2.5%) would give ~14.
    """
    panel = panel_with([{"name": "return", "primary": True, "type": "skewed"}])
    regressions = improvements = 0
    for i in range(100):
        base, cand = _lognormal_runs(panel, 1000 + i)
        c = compare_runs(base, cand, power_statements=False)
        decided = [*(r.verdict for r in c.slice_rows),
                   *(m.verdict for m in c.metrics if m.role == "primary")]
        regressions += "regressed" in decided
        improvements += "improved" in decided
    assert regressions <= 8 and improvements <= 8, (regressions, improvements)


def test_ordinal_and_progress_types_are_medians_and_leave_the_fingerprint() -> None:
    plain = panel_with(["coverage", "return"])
    typed = panel_with([{"name": "coverage", "type": "progress"},
                        {"name": "return", "type": "ordinal"}])
    assert typed.fingerprint == plain.fingerprint
    rng = np.random.default_rng(8)
    run = run_of(typed, "b", rng)
    for r in run.records:
        r.extra["metrics"]["return"] = float(rng.integers(0, 4))  # levels 0-3
        r.extra["metrics"]["coverage"] = float(rng.integers(0, 101))  # 0-100
    by = {s.metric: s for s in metric_summaries(run.records, typed)}
    for name, kind in (("return", "ordinal"), ("coverage", "progress")):
        s = by[name]
        values = np.sort([r.metrics[name] for r in run.records])
        assert (s.estimand, s.metric_type, s.mean.method) == (
            "median", kind, "order-statistic-median")
        k = int(stats.binom.ppf(0.025, values.size, 0.5))  # the exact order statistics
        k += stats.binom.cdf(k, values.size, 0.5) <= 0.025
        assert (s.mean.low, s.mean.high) == (values[k - 1], values[values.size - k])
        cells = summary_cells(s)
        assert cells[2].endswith("(median)") and "median, exact order statistics" in cells[3]
    with pytest.raises(ValueError, match="contradicts"):
        panel_with([{"name": "coverage", "type": "ordinal", "bounded": True}])


def test_a_bounded_metric_stays_a_mean_when_its_differences_leave_zero_one() -> None:
    """Boundedness is read from the runs' values, skewness from the matched differences."""
    panel = panel_with(["coverage"])
    rng = np.random.default_rng(4)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng))
    row = rows(c, "coverage")["f=a"]
    assert (row.metric_type, row.estimand, row.bounded) == ("bounded", "mean", True)
    assert row.delta.method == "paired-t"


def test_a_median_row_with_too_few_pairs_says_so_instead_of_an_infinite_interval() -> None:
    panel = panel_with([{"name": "return", "primary": True, "type": "ordinal"}], episodes=5)
    rng = np.random.default_rng(6)
    c = compare_runs(run_of(panel, "b", rng), run_of(panel, "c", rng))
    for row in rows(c, "return").values():
        if row.kind == "overall":  # 15 pairs: a descriptive median row
            assert row.delta is not None and np.isfinite([row.delta.low, row.delta.high]).all()
        else:  # 5 pairs per slice: fewer than 11 to decide
            assert row.delta is None and "too few pairs" in row.reasons[0]
            assert row.verdict is None or str(row.verdict) == "inconclusive"
    assert c.verdict == "inconclusive"
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(json.dumps(comparison_document(c)))
    jsonschema.validate(doc, json.loads((Path(__file__).resolve().parents[2] / "docs"
                                         / "schemas" / "comparison.schema.json").read_text()))


def test_an_undeclared_metric_with_few_values_is_read_as_its_median() -> None:
    # issue 29: at 20 values a lognormal's sample skewness is at most 1 in ~1 draw of 7, and
    # the mean's t interval chosen then covered ~91% (bench_metrics); below SMALL_N values
    # the type no longer depends on that noisy skewness: every such draw is a median
    from evalband.analysis._metrics import SMALL_N, metric_type
    from evalband.panel import MetricSpec
    from evalband.stats._means import skewness

    spec = MetricSpec(name="x")
    rng = np.random.default_rng(29)
    draws = [rng.lognormal(0.0, 1.0, 20) for _ in range(300)]
    assert sum(abs(skewness(x)) <= 1.0 for x in draws) >= 15  # the old rule's failures
    assert {metric_type(spec, x) for x in draws} == {"skewed"}
    assert {metric_type(spec, rng.normal(size=20)) for _ in range(50)} == {"skewed"}
    # paired: the number of matched differences counts
    assert metric_type(spec, rng.normal(size=80), rng.normal(size=80),
                       skew_of=[rng.normal(size=SMALL_N - 1)]) == "skewed"
    # from SMALL_N values a normal metric is a mean again, almost always; below 6 values the
    # median's 95% interval is unbounded, so the skewness decides
    big = [metric_type(spec, rng.normal(size=SMALL_N)) for _ in range(200)]
    assert big.count("unbounded") >= 190
    assert metric_type(spec, np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == "unbounded"
    assert metric_type(MetricSpec(name="x", type="unbounded"), draws[0]) == "unbounded"


def test_a_declared_type_decides_boundedness_over_the_values() -> None:
    """``type: unbounded`` on values inside [0, 1] is summarised as unbounded (Student t), and
    ``type: bounded`` is never read as unbounded (a reviewer found the values deciding)."""
    import numpy as np

    from evalband.analysis._metrics import _bounded, metric_type
    from evalband.panel import MetricSpec

    inside = np.array([0.1, 0.5, 0.9, 0.3])
    spec = MetricSpec(name="x", type="unbounded")
    assert metric_type(spec, inside) == "unbounded" and not _bounded(spec, inside)
    spec = MetricSpec(name="x", type="bounded")
    assert _bounded(spec, inside) and metric_type(spec, inside) == "bounded"


def test_a_median_slice_with_too_few_values_is_left_out() -> None:
    """Per-slice medians need 6 values for a finite exact interval: fewer, the slice is not
    listed (no ``[-inf, inf]`` row); the overall row stays."""
    import math

    from evalband.analysis._metrics import MEDIAN_PAIRS_DESCRIPTIVE, metric_summaries
    from evalband.episode import EpisodeRecord
    from evalband.panel import load_panel

    panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 5,
                        "budget": {"steps": 1}, "factors": {"p": [0.2, 0.4, 0.6, 0.8]},
                        "metrics": [{"name": "return", "type": "skewed"}]})
    records = [EpisodeRecord("r", "p", "f", c.key, i, 0, 7, "timeout", False, True, 5,
                             extra={"metrics": {"return": float(i * i + j)}})
               for j, c in enumerate(panel.cells()) for i in range(5)]
    out = metric_summaries(records, panel, slices=True)
    assert [s.slice for s in out] == ["overall"]  # 5 < 6 values per slice
    assert all(math.isfinite(s.mean.low) and math.isfinite(s.mean.high) for s in out)
    assert MEDIAN_PAIRS_DESCRIPTIVE == 6
