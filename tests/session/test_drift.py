"""session_drift: detects a simulated rig change, not a null one; oracles from statsmodels/scipy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import boschloo_exact, fisher_exact
from scipy.stats import t as student_t
from sessionkit import store_session
from statsmodels.stats import proportion as sm_proportion
from statsmodels.stats.multitest import multipletests

from evalband.analysis._verdicts import slice_verdict
from evalband.cli import main
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.session import plan_session, session_drift, simulate_session
from evalband.session._results import EXPLORATORY


def pair(rate_1: float, rate_2: float, seed: int, scenes: int = 40, others=("A", "B")):
    """Two sessions sharing the positive control 'ctl', each with its own model."""
    one = plan_session(["ctl", others[0]], scenes=scenes, attempts=2, seed=seed,
                       session_id="week1", positive_control="ctl")
    two = plan_session(["ctl", others[1]], scenes=scenes, attempts=2, seed=seed + 1,
                       session_id="week2", positive_control="ctl")
    t1 = simulate_session(one, success_prob={"ctl": rate_1, others[0]: 0.5}, flip_prob=0.2,
                          seed=1000 + seed)
    t2 = simulate_session(two, success_prob={"ctl": rate_2, others[1]: 0.5}, flip_prob=0.2,
                          seed=2000 + seed)
    return one, t1, two, t2


def test_detects_a_rig_change_and_not_a_null_one() -> None:
    changed = sum(session_drift(*pair(0.75, 0.40, seed)).drifted for seed in range(20))
    null = sum(session_drift(*pair(0.6, 0.6, seed)).drifted for seed in range(20))
    assert changed >= 18  # power ~0.98 for 80 vs 80 trials at 75% vs 40%
    assert null <= 3  # nominal 5%


def scene_counts(trials, policy):
    used = trials[(trials["policy"] == policy) & (trials["status"] == "scored")
                  & ~trials["assisted"]]
    grouped = used.groupby("scene")["success"]
    return [int(v) for v in grouped.sum()], [int(v) for v in grouped.count()]


def effective(k, n):
    """Rao-Scott effective counts, computed here in plain Python (design effect >= 1)."""
    g, total = len(n), sum(n)
    p = sum(k) / total
    var = g / (g - 1) * sum((ki - p * ni) ** 2 for ki, ni in zip(k, n, strict=True)) / total**2
    deff = max(var / (p * (1 - p) / total), 1.0) if 0 < p < 1 else total / g
    return p * total / deff, total / deff, g


def oracle_p(k2, n2, k1, n1, value, df):
    z = sm_proportion.test_proportions_2indep(k2, n2, k1, n1, value=value, method="score",
                                correction=True).statistic
    return 2 * student_t.sf(abs(z), df)


def test_numbers_against_statsmodels_and_scipy() -> None:
    one, t1, two, t2 = pair(0.7, 0.5, seed=3)
    report = session_drift(one, t1, two, t2)
    (anchor,) = report.anchors
    assert anchor.policy == "ctl" and anchor.role == "positive control"
    (ks1, ns1), (ks2, ns2) = scene_counts(t1, "ctl"), scene_counts(t2, "ctl")
    k1, n1, k2, n2 = sum(ks1), sum(ns1), sum(ks2), sum(ns2)
    assert (anchor.before.k, anchor.before.n, anchor.after.k, anchor.after.n) == (k1, n1, k2, n2)
    assert anchor.change.estimate == pytest.approx(k2 / n2 - k1 / n1)
    e1, e2 = effective(ks1, ns1), effective(ks2, ns2)
    df = min(e1[2], e2[2]) - 1
    score = oracle_p(e2[0], e2[1], e1[0], e1[1], 0.0, df)
    fisher = fisher_exact([[k2, k1], [n2 - k2, n1 - k1]])[1]
    assert anchor.test.p_value == pytest.approx(max(score, fisher), rel=1e-3)
    assert anchor.test.details["exact_p"] == pytest.approx(fisher)
    # one shared policy: Holm changes nothing, the interval is at 95%, and its ends are
    # where statsmodels' score test (on the same effective counts, t-referred) gives 0.05
    assert anchor.change.confidence == pytest.approx(0.95)
    for end in (anchor.change.low, anchor.change.high):
        assert oracle_p(e2[0], e2[1], e1[0], e1[1], end, df) == pytest.approx(0.05, abs=2e-3)
    assert anchor.change.excludes_zero == anchor.drifted == (anchor.p_holm <= 0.05)
    slow = session_drift(*pair(0.7, 0.5, seed=3, scenes=12), test="boschloo")
    a = slow.anchors[0]
    k1, n1, k2, n2 = a.before.k, a.before.n, a.after.k, a.after.n
    assert a.test.details["exact_p"] == pytest.approx(
        boschloo_exact([[k2, k1], [n2 - k2, n1 - k1]], n=32).pvalue)
    assert a.test.p_value >= a.test.details["exact_p"]
    (cross,) = report.cross
    assert (cross.a, cross.b, cross.label) == ("A", "B", EXPLORATORY)


def test_interval_and_holm_p_agree_in_every_row() -> None:
    # the symptom: an interval excluding 0 beside Holm p = 0.07. Each interval now inverts
    # the printed test at the level of the Holm step that decided it.
    rates1 = {"ctl": 0.7, "bridge": 0.5, "x": 0.6, "A": 0.4, "C": 0.7}
    rates2 = {"ctl": 0.45, "bridge": 0.62, "x": 0.6, "B": 0.4, "D": 0.55}
    for seed in range(6):
        one = plan_session(list(rates1), scenes=20, attempts=2, seed=seed, session_id="s1",
                           positive_control="ctl")
        two = plan_session(list(rates2), scenes=20, attempts=2, seed=seed + 9, session_id="s2")
        report = session_drift(one, simulate_session(one, success_prob=rates1, flip_prob=0.2,
                                                     seed=seed),
                               two, simulate_session(two, success_prob=rates2, flip_prob=0.2,
                                                     seed=seed + 50))
        for row in (*report.anchors, *report.cross):
            significant = row.p_holm <= 0.05
            d = row.change if hasattr(row, "change") else row.difference
            assert d.excludes_zero == significant, row.sentence
            assert d.confidence >= 0.95 - 1e-12
            assert row.verdict == slice_verdict(significant, d.estimate)  # compare's words


def test_several_shared_policies_are_holm_corrected() -> None:
    rates1 = {"ctl": 0.7, "bridge": 0.5, "x": 0.6, "A": 0.4}
    rates2 = {"ctl": 0.45, "bridge": 0.55, "x": 0.6, "B": 0.4}
    one = plan_session(list(rates1), scenes=30, attempts=2, seed=1, session_id="s1",
                       positive_control="ctl")
    two = plan_session(list(rates2), scenes=30, attempts=2, seed=2, session_id="s2")
    report = session_drift(one, simulate_session(one, success_prob=rates1, seed=3),
                           two, simulate_session(two, success_prob=rates2, seed=4))
    assert [(a.policy, a.role) for a in report.anchors] == [
        ("ctl", "positive control"), ("bridge", "bridge"), ("x", "bridge")]
    raw = [a.test.p_value for a in report.anchors]
    assert [a.p_holm for a in report.anchors] == pytest.approx(
        list(multipletests(raw, method="holm")[1]))
    only = session_drift(one, simulate_session(one, success_prob=rates1, seed=3),
                         two, simulate_session(two, success_prob=rates2, seed=4), on=["x"])
    assert [a.policy for a in only.anchors] == ["x"]


def test_refusals() -> None:
    one, t1, two, t2 = pair(0.6, 0.6, seed=1, scenes=3, others=("A", "B"))
    lone = plan_session(["P", "Q"], scenes=3, attempts=2, seed=1, session_id="lone")
    tl = simulate_session(lone, success_prob={"P": .5, "Q": .5}, seed=1)
    with pytest.raises(InvalidInputError, match="share no policy"):
        session_drift(one, t1, lone, tl)
    with pytest.raises(InvalidInputError, match="`on` must name"):
        session_drift(one, t1, two, t2, on=["A"])
    with pytest.raises(InvalidInputError, match="twice"):
        session_drift(one, t1, one, t1)
    with pytest.raises(InvalidParameterError, match="test"):
        session_drift(one, t1, two, t2, test="t-test")


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_drift_verdict_comes_before_any_model_comparison(capsys, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    one, t1, two, t2 = pair(0.8, 0.3, seed=5)
    store_session(db, one, t1)
    store_session(db, two, t2)
    code, out, err = run_cli(capsys, "session", "drift", "week1", "week2", "--store", str(db))
    assert code == 0, err
    assert out.startswith("RIG DRIFT between week1 and week2")
    assert out.index("RIG DRIFT") < out.index("cross-session model comparisons") < out.index(
        f"{EXPLORATORY}: A (week1) vs B (week2)")
    assert "carries the rig drift measured on ctl" in out
    code, out, _ = run_cli(capsys, "session", "drift", "week1", "week2", "--store", str(db),
                           "--json")
    data = json.loads(out)
    keys = list(data)
    assert data["drifted"] is True and keys.index("sentence") < keys.index("cross")
    lone = plan_session(["P"], scenes=2, attempts=2, seed=1, session_id="lone")
    store_session(db, lone, simulate_session(lone, success_prob={"P": .5}, seed=1))
    code, out, err = run_cli(capsys, "session", "drift", "week1", "lone", "--store", str(db))
    assert code == 2 and "share no policy" in err and len(err.splitlines()) == 1
