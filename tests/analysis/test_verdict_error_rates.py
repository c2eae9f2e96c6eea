"""The verdicts keep their error rates: seeded Monte Carlo, a property test, a coverage audit.

Oracles: the binomial distribution of a count of false verdicts (scipy), an independent
simulation that builds episode records and runs the record path of compare, and exact
enumeration of the multinomial for the aggregate interval's coverage.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, multinomial

from evalband.analysis._calibrate import _joint, calibrate, simulate_tables, verdict_of_tables
from evalband.analysis._compare import (
    PairTable,
    RunData,
    _row_from_table,
    aggregate_from_tables,
    compare_many,
    decide_family,
)
from evalband.episode import EpisodeRecord
from evalband.labs.hidden_regression import hidden_regression_panel
from evalband.panel import load_panel
from evalband.report._format import points as fmt_delta
from evalband.report._html import comparison_table_html
from evalband.report._markdown import comparison_markdown
from evalband.report._terminal import comparison_renderables
from evalband.stats._procedure import stratified_difference


def _terminal_text(c) -> str:
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=400, color_system=None)
    for item in comparison_renderables(c, plain=True):
        console.print(item)
    return out.getvalue()


def panel_of(levels: dict[str, int], episodes: int):
    factors = {name: [f"{name}{i}" for i in range(k)] for name, k in levels.items()}
    return load_panel({"name": "mc", "env": "evalband/Coin-v0", "episodes": episodes,
                       "seed": 0, "budget": {"steps": 1}, "factors": factors})


def too_many(count: int, reps: int, rate: float) -> bool:
    """True when ``count`` false verdicts out of ``reps`` are significantly above ``rate``."""
    return count > binom.ppf(0.995, reps, rate)


DESIGNS = [  # (factors, episodes per cell, paired, phi, base rate)
    ({"a": 5}, 20, True, 0.5, 0.5),       # 5 slices, small n
    ({"a": 10}, 20, True, 0.8, 0.7),      # 10 slices, strong pairing
    ({"a": 2, "b": 5}, 10, False, 0.0, 0.5),  # 17 slices, unpaired
    ({"a": 5}, 50, True, 0.0, 0.95),      # rates near 1
]


@pytest.mark.parametrize("levels,episodes,paired,phi,rate", DESIGNS)
def test_null_false_regression_and_improves_keep_alpha_over_two(levels, episodes, paired, phi,
                                                                 rate) -> None:
    panel = panel_of(levels, episodes)
    reps = 150
    rng = np.random.default_rng(7)
    sims = simulate_tables(panel, {c.key: rate for c in panel.cells()}, {},
                           episodes={c.key: episodes for c in panel.cells()}, paired=paired,
                           correlation=phi, reps=reps, rng=rng)
    regress = improves = hidden = 0
    for tables in sims:
        verdict, hid, _ = verdict_of_tables(panel, tables)
        regress += verdict == "regression"
        improves += verdict == "improves"
        hidden += bool(hid)
    # Nominal: at most 2.5% per direction (the old per-slice rule gave 10-27% here).
    assert not too_many(regress, reps, 0.025), regress
    assert not too_many(hidden, reps, 0.025), hidden
    assert not too_many(improves, reps, 0.025), improves


def test_the_old_unadjusted_rule_would_fail_this_check() -> None:
    """The check above can fail: the unadjusted 'any slice interval below 0' rule breaks it."""
    panel = panel_of({"a": 10}, 20)
    rng = np.random.default_rng(3)
    sims = simulate_tables(panel, {c.key: 0.5 for c in panel.cells()}, {},
                           episodes={c.key: 20 for c in panel.cells()}, paired=True,
                           correlation=0.5, reps=150, rng=rng)
    from evalband.stats import diff_paired

    old = 0
    for tables in sims:  # the old rule: any slice's unadjusted Newcombe interval below 0
        old += any(diff_paired(t.both, t.candidate_only, t.baseline_only, t.neither).high < 0
                   for t in tables.values())
    assert too_many(old, 150, 0.025)


def _records(panel, run_id: str, outcomes: dict[str, np.ndarray]) -> RunData:
    recs = []
    for cell in panel.cells():
        for i, ok in enumerate(outcomes[cell.key]):
            recs.append(EpisodeRecord(
                run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                cell=cell.key, slices=dict(cell.slices), episode=i, repeat=0,
                condition_seed=i, outcome="success" if ok else "failure", terminated=True,
                truncated=False, steps=1))
    return RunData(run_id, run_id, panel.fingerprint, panel, recs)


def test_calibrate_agrees_with_an_independent_record_level_simulation() -> None:
    panel = hidden_regression_panel(episodes=30)
    target = "embodiment=franka_panda"
    result = calibrate(panel, base_rates=0.7, correlation=0.5, effect=0.3, reps=60,
                       power_reps=60, seed=5)
    # Independent: latent Gaussian pairs thresholded to the same margins would differ in phi,
    # so draw the same joint law by hand, build episode records, run the record path.
    rng = np.random.default_rng(11)
    hits, reps = 0, 60
    for _ in range(reps):
        base_out, cand_out = {}, {}
        for cell in panel.cells():
            drop = 0.3 if cell.key == target else 0.0
            pb, pc = 0.7, 0.7 - drop
            p11 = pb * pc + 0.5 * math.sqrt(pb * (1 - pb) * pc * (1 - pc))
            p11 = min(max(p11, pb + pc - 1, 0.0), pb, pc)
            u = rng.random(30)
            both = u < p11
            b_only = (u >= p11) & (u < pb)
            c_only = (u >= pb) & (u < pb + pc - p11)
            base_out[cell.key] = both | b_only
            cand_out[cell.key] = both | c_only
        (c,) = compare_many(_records(panel, "b", base_out), [_records(panel, "c", cand_out)],
                            power_statements=False)
        hits += next(r for r in c.slice_rows if r.name == target).verdict == "regressed"
    mine = result.power[target]
    pooled = (mine.count + hits) / (2 * reps)
    sd = math.sqrt(2 * pooled * (1 - pooled) / reps) or 1 / reps
    assert abs(mine.rate - hits / reps) <= 3.5 * sd, (mine.rate, hits / reps)
    assert result.false_regression.rate <= 0.1


tables = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 12), st.integers(0, 12), st.integers(0, 30)),
    min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(tables)
def test_every_row_verdict_p_adjusted_p_and_interval_agree(cells) -> None:
    panel = panel_of({"a": len(cells)}, 1)
    tabs = {c.key: PairTable(both + b, both + b + c_ + nei, both + c_, both + b + c_ + nei,
                             both, b, c_, nei)
            for c, (both, b, c_, nei) in zip(panel.cells(), cells, strict=True)}
    if any(t.n_baseline == 0 for t in tabs.values()):
        return
    base = RunData("b", "b", "f" * 64, panel, [])
    rows = [_row_from_table("factor", k, t, panel, confidence=0.95) for k, t in tabs.items()]
    (c,) = decide_family(base, [(base, False, rows, aggregate_from_tables(panel, tabs))],
                         power_statements=False)
    markdown = comparison_markdown([c])
    terminal = _terminal_text(c)
    html = comparison_table_html(c)
    for r in c.slice_rows:
        decided = r.p_holm is not None and r.p_holm <= 0.05
        assert r.delta is not None and r.level is not None
        excludes = r.delta.low > 0 or r.delta.high < 0
        assert decided == excludes == (r.p_value <= 1 - r.level + 1e-15)
        assert (r.verdict == "regressed") == (decided and r.delta.high < 0)
        assert (r.verdict == "improved") == (decided and r.delta.low > 0)
        raw = r.delta_unadjusted
        assert raw is not None and ((raw.low > 0 or raw.high < 0) == (r.p_value <= 0.05))
        shown = fmt_delta(r.delta)  # the printed interval is the adjusted one, everywhere
        line = next(x for x in markdown.splitlines() if x.startswith(f"| {r.name} |"))
        assert str(r.verdict) in line and shown in line
        term = next(x for x in terminal.splitlines() if x.strip().startswith(r.name + " "))
        assert str(r.verdict) in term and shown in term
        row_html = next(x for x in html.replace("<wbr>", "").split("<tr")[1:]
                        if f">{r.name}<" in x)  # names break only between their parts
        assert f">{r.verdict}<" in row_html and shown.split(" [")[0] in row_html


@pytest.mark.parametrize("n", [10, 20])
@pytest.mark.parametrize("pb,pc,phi", [(0.98, 0.98, 0.0), (0.02, 0.1, 0.5), (0.5, 0.5, 0.0),
                                       (0.95, 0.85, 0.0), (0.9, 0.98, 0.5)])
def test_aggregate_interval_coverage_by_exact_enumeration(n, pb, pc, phi) -> None:
    probs = _joint(pb, pc, phi)
    covered = total = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            for c in range(n + 1 - a - b):
                d = n - a - b - c
                pr = float(multinomial.pmf([a, b, c, d], n, probs))
                if pr < 1e-12:
                    continue
                iv = stratified_difference([{"both": a, "a_only": c, "b_only": b,
                                             "neither": d}], [1.0])
                assert iv.high > iv.low  # never zero width
                total += pr
                covered += pr * (iv.low <= pc - pb <= iv.high)
    assert covered / total >= 0.93
