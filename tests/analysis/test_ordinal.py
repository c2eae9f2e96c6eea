"""An ordinal metric's levels: shares against a hand count, Wilson against statsmodels, the
"at least level k" differences against statsmodels (unpaired) and by a seeded simulation of
their coverage (paired and unpaired), and the comparison's decision left as it was."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from scipy import stats

from evalband.analysis import compare_runs
from evalband.analysis._compare import RunData
from evalband.analysis._metrics import metric_summaries
from evalband.analysis._ordinal import (
    MAX_LEVELS,
    level_differences,
    level_shares,
    ordinal_levels,
)
from evalband.episode import EpisodeRecord, Outcome
from evalband.panel import Panel, load_panel
from evalband.stats._location import median_difference

proportion = pytest.importorskip("statsmodels.stats.proportion")


def grasp_panel(primary: bool = False, episodes: int = 12, mtype: str = "ordinal") -> Panel:
    """Seed 004's shape: ordinal grasp levels 0-3 on two objects, a plain metric beside."""
    return load_panel({"name": "grasp", "env": "evalband/Coin-v0", "episodes": episodes,
                       "seed": 0, "budget": {"steps": 1}, "factors": {"obj": ["cube", "mug"]},
                       "metrics": [{"name": "grasp", "type": mtype, "primary": primary},
                                   "coverage"]})


def grasp_run(panel: Panel, run_id: str, rng: np.random.Generator,
              p: tuple[float, ...] = (0.3, 0.3, 0.2, 0.2)) -> RunData:
    records = []
    for s in panel.episode_specs():
        g = float(rng.choice(len(p), p=p))
        records.append(EpisodeRecord(
            run_id, run_id, panel.fingerprint, s.cell, s.episode, s.repeat, s.condition_seed,
            Outcome.SUCCESS if g >= 2 else Outcome.FAILURE, True, False, 1,
            slices=dict(s.slices), extra={"metrics": {"grasp": g,
                                                      "coverage": float(rng.random())}}))
    return RunData(run_id, run_id, panel.fingerprint, panel, records, source="memory")


def test_levels_are_the_whole_numbers_seen_else_none() -> None:
    assert ordinal_levels(np.array([3.0, 0.0, 3.0])) == [0, 1, 2, 3]  # 1 and 2 unseen: shown
    assert ordinal_levels(np.array([2.0]), np.array([-1.0])) == [-1, 0, 1, 2]
    assert ordinal_levels(np.array([0.0, 1.5])) == []  # not whole: the median alone
    assert ordinal_levels(np.array([0.0, float(MAX_LEVELS)])) == []  # too many levels
    assert len(ordinal_levels(np.array([0.0, float(MAX_LEVELS - 1)]))) == MAX_LEVELS


def test_shares_are_a_hand_count_with_statsmodels_wilson_intervals() -> None:
    rng = np.random.default_rng(4)
    for n in (1, 5, 37):
        x = rng.integers(0, 4, n).astype(float)
        levels = ordinal_levels(x)
        for conf in (0.9, 0.95):
            shares = level_shares(x, levels, confidence=conf)
            assert [s.level for s in shares] == levels
            for j, s in enumerate(shares):
                at = sum(1 for v in x.tolist() if v == s.level)  # brute force
                above = sum(1 for v in x.tolist() if v >= s.level)
                assert (s.k, s.share.k, s.share.n, s.share.estimate) == (at, at, n, at / n)
                low, high = proportion.proportion_confint(at, n, alpha=1 - conf,
                                                          method="wilson")
                assert (s.share.low, s.share.high) == pytest.approx((low, high), abs=1e-12)
                if j == 0:
                    assert s.at_least is None and above == n
                    continue
                assert s.at_least is not None and s.at_least.estimate == above / n
                low, high = proportion.proportion_confint(above, n, alpha=1 - conf,
                                                          method="wilson")
                assert (s.at_least.low, s.at_least.high) == pytest.approx((low, high),
                                                                          abs=1e-12)


def test_differences_count_by_hand_and_unpaired_is_statsmodels_newcombe() -> None:
    rng = np.random.default_rng(5)
    b, c = rng.integers(0, 4, 30).astype(float), rng.integers(1, 4, 25).astype(float)
    levels = ordinal_levels(b, c)
    unpaired = level_differences(b, c, None, levels)
    assert [d.level for d in unpaired] == levels[1:]
    for d in unpaired:
        kb, kc = int(sum(v >= d.level for v in b)), int(sum(v >= d.level for v in c))
        assert (d.at_least_baseline, d.at_least_candidate) == (kb / 30, kc / 25)
        assert d.delta is not None and d.delta.estimate == pytest.approx(kc / 25 - kb / 30)
        low, high = proportion.confint_proportions_2indep(kc, 25, kb, 30, method="newcomb",
                                                          compare="diff")
        assert (d.delta.low, d.delta.high) == pytest.approx((low, high), abs=1e-9)
    ib, ic = np.arange(20), np.arange(5, 25)  # 20 matched pairs: b[i] with c[i + 5]
    for d in level_differences(b, c, (ib, ic), levels):
        hb, hc = b[ib] >= d.level, c[ic] >= d.level
        assert d.delta is not None and d.delta.paired
        assert d.delta.counts == {"both": int(sum(hb & hc)), "a_only": int(sum(hc & ~hb)),
                                  "b_only": int(sum(hb & ~hc)), "neither": int(sum(~hb & ~hc))}
        assert d.delta.estimate == pytest.approx(hc.mean() - hb.mean())


def _coverage(paired: bool, n: int, reps: int, seed: int) -> list[int]:
    """Covers of the true "at least k" difference per level over ``reps`` seeded runs.

    Latent bivariate normal scores (correlation 0.6 when paired, else independent draws), cut
    at fixed thresholds into levels 0-3; the candidate's latent mean is 0.4 higher.
    """
    cuts = np.array([-0.5, 0.3, 1.0])
    truth = [(1 - stats.norm.cdf(t - 0.4)) - (1 - stats.norm.cdf(t)) for t in cuts]
    rng = np.random.default_rng(seed)
    covered = [0, 0, 0]
    cov = [[1.0, 0.6 if paired else 0.0], [0.6 if paired else 0.0, 1.0]]
    for _ in range(reps):
        z = rng.multivariate_normal([0.0, 0.4], cov, size=n)
        b, c = (np.searchsorted(cuts, z[:, k]).astype(float) for k in (0, 1))
        pairs = (np.arange(n), np.arange(n)) if paired else None
        rows = {d.level: d for d in level_differences(b, c, pairs, [0, 1, 2, 3])}
        for k in (1, 2, 3):
            d = rows[k].delta
            covered[k - 1] += d is not None and d.low <= truth[k - 1] <= d.high
    return covered


@pytest.mark.parametrize("paired", [True, False])
def test_at_least_differences_reach_their_coverage(paired: bool) -> None:
    """400 seeded runs of 30 episodes: each level's 95% interval covers the true difference.

    Newcombe's score intervals are near nominal at these sizes; with 400 runs a true
    coverage of 95% gives at least 372 covers (93%) with probability ~0.97, an interval that
    covers only 90% (a Wald interval at this n) with probability ~0.02.
    """
    reps = 400
    covered = _coverage(paired, n=30, reps=reps, seed=11 if paired else 12)
    assert min(covered) >= 0.93 * reps, covered


def test_summaries_and_comparison_carry_levels_only_for_the_ordinal_metric() -> None:
    panel = grasp_panel()
    rng = np.random.default_rng(1)
    base, cand = grasp_run(panel, "b", rng), grasp_run(panel, "c", rng, (0.1, 0.2, 0.3, 0.4))
    summaries = metric_summaries(base.records, panel, slices=True)
    by = {(s.metric, s.slice): s for s in summaries}
    assert [s.slice for s in summaries if s.metric == "grasp"] == ["obj=cube", "obj=mug",
                                                                   "overall"]
    assert all(not s.levels for s in summaries if s.metric == "coverage")
    values = [r.metrics["grasp"] for r in base.records]
    overall = by["grasp", "overall"]
    assert (overall.estimand, overall.metric_type) == ("median", "ordinal")
    assert [s.k for s in overall.levels] == [values.count(float(k)) for k in range(4)]
    cube = [r.metrics["grasp"] for r in base.records if r.cell == "obj=cube"]
    assert [s.k for s in by["grasp", "obj=cube"].levels] == [cube.count(float(k))
                                                             for k in range(4)]
    c = compare_runs(base, cand)
    rows = {m.slice: m for m in c.metrics if m.metric == "grasp"}
    assert all(not m.levels for m in c.metrics if m.metric == "coverage")
    for name, row in rows.items():
        assert [d.level for d in row.levels] == [1, 2, 3] and row.role == "descriptive"
        inside = [(rb, rc) for rb, rc in zip(base.records, cand.records, strict=True)
                  if name == "overall" or rb.cell == name]  # same specs: pairs in order
        for d in row.levels:
            hb = [rb.metrics["grasp"] >= d.level for rb, _ in inside]
            hc = [rc.metrics["grasp"] >= d.level for _, rc in inside]
            assert (d.at_least_baseline, d.at_least_candidate) == pytest.approx(
                (np.mean(hb), np.mean(hc)))


def _as_skewed(value: Any) -> Any:
    return msgspec.structs.replace(value, levels=[], metric_type="skewed")


def _retyped(run: RunData, panel: Panel) -> RunData:
    return RunData(run.run_id, run.policy, panel.fingerprint, panel, run.records,
                   source="memory")


def test_a_primary_ordinal_metric_keeps_its_median_decision() -> None:
    """The levels never join the family: its size, the rows' p, interval and verdict are the
    median's (the sign test on the matched differences), and every row is what the same
    values declared ``type: skewed`` (a median type without levels) give."""
    panel = grasp_panel(primary=True, episodes=15)
    rng = np.random.default_rng(2)
    base, cand = grasp_run(panel, "b", rng), grasp_run(panel, "c", rng, (0.1, 0.2, 0.3, 0.4))
    c = compare_runs(base, cand)
    from evalband.report._document import procedure_block

    assert procedure_block(c)["family_size"] == 2 * 2  # 2 success slices + 2 metric slices
    for row in (m for m in c.metrics if m.metric == "grasp" and m.slice != "overall"):
        assert row.role == "primary" and row.verdict is not None and row.levels
        diffs = [rc.metrics["grasp"] - rb.metrics["grasp"]
                 for rb, rc in zip(base.records, cand.records, strict=True)
                 if rb.cell == row.slice]
        assert row.p_value == pytest.approx(median_difference(np.array(diffs)).p_value)
        assert row.estimand == "median" and row.delta is not None
    skewed = grasp_panel(primary=True, episodes=15, mtype="skewed")
    other = compare_runs(_retyped(base, skewed), _retyped(cand, skewed))
    assert other.verdict == c.verdict and other.slice_rows == c.slice_rows
    assert [m for m in other.metrics] == [_as_skewed(m) if m.metric == "grasp" else m
                                          for m in c.metrics]


def test_non_whole_values_keep_the_median_alone() -> None:
    panel = grasp_panel()
    rng = np.random.default_rng(3)
    run = grasp_run(panel, "b", rng)
    for r in run.records:
        r.extra["metrics"]["grasp"] += 0.5
    s = next(s for s in metric_summaries(run.records, panel) if s.metric == "grasp")
    assert (s.metric_type, s.estimand, s.levels) == ("ordinal", "median", [])
