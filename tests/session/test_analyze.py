"""analyze_session against simulation truth, brute force, statsmodels, scipy and stats power."""

from __future__ import annotations

import html
import itertools
import json
import math
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t
from sessionkit import pending_after, store_session
from statsmodels.stats import proportion as sm_proportion
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalband import stats
from evalband.analysis import SliceVerdict
from evalband.cli import main
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.session import analyze_session, expected_flip_rate, plan_session, simulate_session
from evalband.session._prereg import Grouping, parse_prereg
from evalband.session._results import CONFIRMATORY, EXPLORATORY

LABEL = "exploratory — a hypothesis, not a finding"  # seed 004, section 5, word for word
RATES = {"A": 0.6, "B": 0.45, "C": 0.3}


def session(scenes: int = 20, seed: int = 1, rates: dict[str, float] | None = None,
            session_id: str = "s", **kwargs):
    rates = rates or RATES
    plan = plan_session(list(rates), scenes=scenes, attempts=2, seed=seed,
                        session_id=session_id, positive_control=kwargs.pop("control", None))
    kwargs.setdefault("flip_prob", 0.27)
    trials = simulate_session(plan, success_prob=rates, seed=seed + 100, **kwargs)
    return plan, trials


def unaided(trials: pd.DataFrame) -> pd.DataFrame:
    return trials[(trials["status"] == "scored") & ~trials["assisted"].astype(bool)]


def wilson(k: int, n: int) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def cluster_wilson(k: list[int], n: list[int]) -> tuple[float, float]:
    """The documented cluster band in plain Python: Wilson at n / deff with t_{G-1}."""
    g, total = len(n), sum(n)
    p = sum(k) / total
    if 0 < p < 1:
        var = g / (g - 1) * sum((a - p * b) ** 2 for a, b in zip(k, n, strict=True)) / total**2
        deff = max(var / (p * (1 - p) / total), 1.0)
    else:
        deff = total / g
    m, q = total / deff, float(student_t.isf(0.025, g - 1))
    centre = (p + q * q / (2 * m)) / (1 + q * q / m)
    half = q / (1 + q * q / m) * math.sqrt(p * (1 - p) / m + q * q / (4 * m * m))
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_flip_p(x: list[int]) -> float:
    """Two-sided sign-flip p-value by convolution of integer sums (a dict, plain Python)."""
    dist = {0: 1.0}
    for v in x:
        new: dict[int, float] = {}
        for total, mass in dist.items():
            for signed in (v, -v):
                new[total + signed] = new.get(total + signed, 0.0) + mass / 2
        dist = new
    observed = abs(sum(x))
    return min(1.0, sum(m for t, m in dist.items() if abs(t) >= observed))


# ----------------------------------------------------------------- the flip floor
def test_flip_rate_interval_covers_the_true_flip_probability() -> None:
    """40 seeded sessions, 95% Wilson band: it must contain the truth in >= 90% of them."""
    hits = 0
    for seed in range(40):
        plan, trials = session(scenes=24, seed=seed)
        truth = expected_flip_rate(plan, RATES, 0.27)
        flip = analyze_session(plan, trials).flip
        assert flip is not None and flip.pooled.pairs == 3 * 24
        hits += flip.pooled.rate.contains(truth)
    assert hits >= 36


def test_flip_counts_and_running_match_brute_force() -> None:
    plan, trials = session(scenes=12, seed=3, skip_prob=0.1, assist_prob=0.1)
    flip = analyze_session(plan, trials).flip
    assert flip is not None
    used = unaided(trials)
    running = []
    flips = pairs = 0
    for scene in range(1, 13):
        for policy in RATES:
            outcomes = used[(used["scene"] == scene) & (used["policy"] == policy)]["success"]
            for x, y in itertools.combinations([bool(v) for v in outcomes], 2):
                pairs += 1
                flips += x != y
        if pairs:
            running.append((scene, pairs, flips))
    assert [(p.scene, p.pairs, p.flips) for p in flip.by_scene] == running[
        -len(flip.by_scene):]
    assert (flip.pooled.pairs, flip.pooled.flips) == (pairs, flips)
    # the band: the scene is the cluster (its policies' pairs summed)
    per_scene = {}
    for scene in range(1, 13):
        for policy in RATES:
            outcomes = used[(used["scene"] == scene) & (used["policy"] == policy)]["success"]
            pairs_here = list(itertools.combinations([bool(v) for v in outcomes], 2))
            if pairs_here:
                k, n = per_scene.get(scene, (0, 0))
                per_scene[scene] = (k + sum(x != y for x, y in pairs_here), n + len(pairs_here))
    low, high = cluster_wilson([v[0] for v in per_scene.values()],
                               [v[1] for v in per_scene.values()])
    assert (flip.pooled.rate.low, flip.pooled.rate.high) == pytest.approx((low, high))
    assert flip.pooled.rate.method == "cluster-wilson"
    assert sum(pf.flip.pairs for pf in flip.by_policy) == pairs
    # independent reference: pairs-weighted 2p(1-p) of each policy's paired attempts
    ref = 0.0
    for pf in flip.by_policy:
        mine = used[used["policy"] == pf.policy]
        sizes = mine.groupby("scene")["success"].size()
        paired = mine[mine["scene"].isin(sizes[sizes >= 2].index)]["success"].astype(float)
        ref += pf.flip.pairs * 2 * paired.mean() * (1 - paired.mean())
    assert flip.independent_reference == pytest.approx(ref / pairs)


# ----------------------------------------------------------------- per-policy success
def test_skipped_never_failures_assisted_excluded_scores_counted() -> None:
    plan, trials = session(scenes=10, seed=4, skip_prob=0.15, assist_prob=0.15)
    result = analyze_session(plan, trials)
    for row in result.policies:
        mine = trials[trials["policy"] == row.policy]
        free = unaided(mine)
        assert row.skipped == int((mine["status"] == "skipped").sum())
        assert row.unaided == len(free)
        assert row.successes == int((free["score"] >= 2).sum())
        assert row.assisted == int(mine["assisted"].sum())
        assert row.unaided + row.assisted + row.skipped == row.planned == 20
        assert row.scores == {lvl: int((free["score"] == lvl).sum()) for lvl in (0, 1, 2)}
        assert row.rate is not None
        by_scene = free.groupby("scene")["success"]
        band = cluster_wilson([int(v) for v in by_scene.sum()], [int(v) for v in by_scene.count()])
        assert (row.rate.low, row.rate.high) == pytest.approx(band)
    assert any("never as failures" in n for n in result.notes)
    assert any("left out of unaided success" in n for n in result.notes)
    # a skipped trial turned into a failure would lower the rate: check it does not
    worse = trials.copy()
    sk = worse["status"] == "skipped"
    worse.loc[sk, ["status", "score", "success"]] = ["scored", 0, False]
    assert [r.successes for r in analyze_session(plan, worse).policies] == [
        r.successes for r in result.policies]
    assert sum(r.unaided for r in analyze_session(plan, worse).policies) > sum(
        r.unaided for r in result.policies)


# ----------------------------------------------------------------- comparisons
def test_paired_comparisons_against_statsmodels_and_holm() -> None:
    plan, trials = session(scenes=25, seed=5, assist_prob=0.05)
    result = analyze_session(plan, trials)
    used = unaided(trials).set_index(["policy", "scene", "attempt"])["success"].astype(bool)
    raw = []
    for c in result.comparisons:
        assert c.label == LABEL and c.exploratory and c.kind == "policies"
        a = used.xs(c.a, level="policy")
        b = used.xs(c.b, level="policy")
        joint = pd.concat([a, b], axis=1, join="inner")
        joint.columns = ["a", "b"]
        table = pd.crosstab(joint["a"], joint["b"]).reindex(
            index=[True, False], columns=[True, False], fill_value=0)
        counts = {"both": int(table.loc[True, True]), "a_only": int(table.loc[True, False]),
                  "b_only": int(table.loc[False, True]), "neither": int(table.loc[False, False])}
        net = (joint["a"].astype(int) - joint["b"].astype(int)).groupby(level="scene").sum()
        counts["scenes"] = int(net.size)
        assert c.counts == counts
        # the scene is the unit: sign-flip over scenes' net discordance, guarded by McNemar's
        # asymptotic test (statsmodels), the larger p-value
        guard = sm_mcnemar(table.to_numpy(), exact=False, correction=False).pvalue
        if counts["a_only"] + counts["b_only"] == 0:
            guard = 1.0
        assert c.test.p_value == pytest.approx(max(sign_flip_p(net.tolist()), guard))
        assert c.difference.estimate == pytest.approx(joint["a"].mean() - joint["b"].mean())
        raw.append(c.test.p_value)
    expected = multipletests(raw, method="holm")[1]
    assert [c.p_holm for c in result.comparisons] == pytest.approx(list(expected))
    assert all(c.family_size == 3 for c in result.comparisons)
    assert [c.significant for c in result.comparisons] == [p <= 0.05 for p in expected]
    for c in result.comparisons:  # the interval agrees with the verdict in every row
        assert c.difference.excludes_zero == c.significant


def test_pooled_grouping_against_scipy_and_exploratory_when_post_hoc() -> None:
    plan, trials = session(scenes=15, seed=6)
    g = Grouping("g", ("AB", "C"), (("A", "B"), ("C",)))
    result = analyze_session(plan, trials, groupings=[g])
    comp = next(c for c in result.comparisons if c.kind == "grouping")
    used = unaided(trials)
    side_a = used[used["policy"].isin(["A", "B"])].groupby("scene")["success"]
    side_b = used[used["policy"] == "C"].groupby("scene")["success"]
    ka, na = side_a.sum().astype(int), side_a.count()
    kb, nb = side_b.sum().astype(int), side_b.count()
    assert comp.counts == {"k_a": int(ka.sum()), "n_a": int(na.sum()), "k_b": int(kb.sum()),
                           "n_b": int(nb.sum()), "scenes": 15}
    x = [int(v) for v in (nb * ka - na * kb)]  # n_a n_b (phat_a - phat_b) per scene
    score = sm_proportion.test_proportions_2indep(
        int(ka.sum()), int(na.sum()), int(kb.sum()), int(nb.sum()), method="score",
        correction=True).pvalue
    assert comp.test.p_value == pytest.approx(max(sign_flip_p(x), score), rel=1e-3)
    assert comp.label == EXPLORATORY and comp.family_size == 4
    assert comp.difference.excludes_zero == comp.significant


def test_planned_comparison_is_confirmatory_others_exploratory() -> None:
    plan, trials = session(scenes=15, seed=7)
    prereg = parse_prereg("comparisons: [C vs A]\ngroupings: {g: {ab: [A, B], c: [C]}}\n",
                          name="p")
    locked = replace(prereg, locked_at="2020-01-01T00:00:00+00:00")
    result = analyze_session(plan, trials, prereg=locked)
    labels = {c.name: c.label for c in result.comparisons}
    assert labels == {"C vs A": CONFIRMATORY, "ab vs c": CONFIRMATORY, "A vs B": LABEL,
                      "B vs C": LABEL}
    assert [c.label for c in result.comparisons][:2] == [CONFIRMATORY, CONFIRMATORY]
    planned = next(c for c in result.comparisons if c.name == "C vs A")
    assert planned.a == "C" and planned.family_size == 2  # oriented as planned
    # Holm within each family separately
    conf = [c for c in result.comparisons if c.label == CONFIRMATORY]
    assert [c.p_holm for c in conf] == pytest.approx(
        list(multipletests([c.test.p_value for c in conf], method="holm")[1]))
    assert result.prereg is not None and result.prereg.counts


def test_a_plan_locked_after_the_first_scored_trial_is_not_confirmatory() -> None:
    plan, trials = session(scenes=6, seed=8)
    first = min(datetime.fromisoformat(t) for t in trials["scored_at"])
    prereg = parse_prereg("comparisons: [[A, B]]", name="late")
    late = replace(prereg, locked_at=first.astimezone(UTC).replace(microsecond=1).isoformat())
    result = analyze_session(plan, trials, prereg=late)
    assert all(c.label == LABEL for c in result.comparisons)
    assert result.prereg is not None and not result.prereg.counts
    assert "AFTER" in result.prereg.reason
    unlocked = analyze_session(plan, trials, prereg=prereg)
    assert unlocked.prereg is not None and not unlocked.prereg.counts
    assert all(c.label == LABEL for c in unlocked.comparisons)


def test_prereg_for_another_session_or_unknown_policy_is_refused() -> None:
    plan, trials = session(scenes=3, seed=9)
    other = parse_prereg("session: elsewhere\ncomparisons: [[A, B]]", name="x")
    with pytest.raises(InvalidInputError, match="elsewhere"):
        analyze_session(plan, trials, prereg=other)
    unknown = parse_prereg("comparisons: [[A, Z]]", name="x")
    with pytest.raises(InvalidInputError, match="Z"):
        analyze_session(plan, trials, prereg=unknown)


# ----------------------------------------------------------------- price list
def test_price_list_matches_the_power_functions() -> None:
    plan, trials = session(scenes=20, seed=10, assist_prob=0.05)
    result = analyze_session(plan, trials)
    prices = result.prices
    assert prices is not None
    used = unaided(trials)
    base = float(used["success"].astype(float).mean())
    assert prices.baseline == pytest.approx(base)
    want = stats.price_list(gaps=[0.2, 0.15, 0.1, 0.05], baseline=base, power=0.8, alpha=0.05)
    assert [e.unpaired for e in prices.entries] == [r.n_a for r in want]
    assert [e.gap for e in prices.entries] == [0.2, 0.15, 0.1, 0.05]
    # discordant share of matched pairs between policies, counted independently
    wide = used.pivot_table(index=["scene", "attempt"], columns="policy", values="success",
                            aggfunc="first")
    disc = tot = 0
    for a, b in itertools.combinations(RATES, 2):
        both = wide[[a, b]].dropna().astype(bool)
        disc += int((both[a] != both[b]).sum())
        tot += len(both)
    assert prices.discordant == pytest.approx(disc / tot)
    flip = result.flip.pooled.rate.estimate
    for e, row in zip(prices.entries, want, strict=True):
        gap = abs(row.p_a - row.p_b)
        upper = min(row.p_a + row.p_b, 2 - row.p_a - row.p_b)
        psi = min(max(disc / tot, gap), upper)
        # the session's own test, exact power, Bonferroni over its 3 comparisons
        assert e.paired == stats.clustered_paired_sample_size(row.p_a, row.p_b, psi,
                                                              comparisons=3)
        psi0 = min(max(flip, gap), upper)
        assert e.at_flip_floor == stats.clustered_paired_sample_size(row.p_a, row.p_b, psi0,
                                                                     comparisons=3)
    assert prices.comparisons == 3 and "sign-flip" in prices.test
    n_min = int(used.groupby("policy").size().min())
    assert prices.episodes_per_policy == n_min
    assert prices.resolvable_gap == pytest.approx(
        stats.minimum_detectable_difference(n_min, base))


def test_price_list_goes_down_from_a_high_baseline() -> None:
    plan, trials = session(scenes=10, seed=11, rates={"A": 0.95, "B": 0.9}, flip_prob=None)
    prices = analyze_session(plan, trials).prices
    assert prices is not None and prices.baseline > 0.85
    assert all(e.p_a < e.p_b for e in prices.entries)  # baseline + 0.2 > 1: gaps go down


# ----------------------------------------------------------------- positive control, progress
def test_positive_control_floor_and_beaten_control() -> None:
    plan, trials = session(scenes=40, seed=12, rates={"ctl": 0.15, "A": 0.8}, flip_prob=None,
                           control="ctl")
    check = analyze_session(plan, trials).control
    assert check is not None and check.status == "misbehaving" and check.beaten_by == ("A",)
    assert "suspect the instrument and the rig" in check.sentence.lower()
    floor = analyze_session(plan, trials, control_floor=0.6).control
    assert floor is not None and floor.floor == 0.6
    assert any("lies below the floor 60%" in r for r in floor.reasons)
    plan, trials = session(scenes=40, seed=13, rates={"ctl": 0.8, "A": 0.3}, flip_prob=None,
                           control="ctl")
    good = analyze_session(plan, trials, control_floor=0.5).control
    assert good is not None and good.status == "ok" and not good.beaten_by
    # a control a little behind another policy, not significantly: unclear without a floor,
    # ok when its band clears a stated floor
    plan, trials = session(scenes=15, seed=2, rates={"ctl": 0.5, "A": 0.6}, flip_prob=None,
                           control="ctl")
    result = analyze_session(plan, trials)
    ctl, other = result.policies
    assert ctl.rate.estimate < other.rate.estimate and not result.comparisons[0].significant
    assert result.control.status == "unclear"
    floored = analyze_session(plan, trials, control_floor=ctl.rate.low - 0.01).control
    assert floored.status == "ok" and any("scored higher" in r for r in floored.reasons)


def test_session_in_progress_and_cumulative() -> None:
    plan, trials = session(scenes=10, seed=14)
    partial = pending_after(trials, 35)  # scenes 1-5 done, scene 6 partly
    result = analyze_session(plan, partial)
    assert result.progress.pending == 60 - 35 and result.progress.scenes_complete == 5
    assert any("in progress" in n for n in result.notes)
    for series in result.cumulative:
        assert [p.scene for p in series.points] == [1, 2, 3, 4, 5, 6]
        mine = unaided(partial)
        mine = mine[mine["policy"] == series.policy]
        for p in series.points:
            upto = mine[mine["scene"] <= p.scene]
            assert (p.successes, p.n) == (int(upto["success"].sum()), len(upto))


def test_nothing_scored_yet_and_single_attempts() -> None:
    plan, trials = session(scenes=3, seed=20)
    empty = analyze_session(plan, pending_after(trials, 0))
    assert empty.flip is None and empty.prices is None and empty.comparisons == ()
    assert all(r.rate is None and r.pending == 6 for r in empty.policies)
    assert all(s.points == () for s in empty.cumulative)
    one = plan_session(["A", "B"], scenes=8, attempts=1, seed=1, session_id="one")
    result = analyze_session(one, simulate_session(one, success_prob={"A": .5, "B": .5},
                                                   seed=1))
    assert result.flip is None and len(result.comparisons) == 1
    assert result.prices is not None and result.prices.entries[0].at_flip_floor is None


def test_bad_input_is_refused() -> None:
    plan, trials = session(scenes=3, seed=15)
    other, _ = session(scenes=3, seed=16, session_id="o")
    with pytest.raises(InvalidInputError, match="not trial"):
        analyze_session(other, trials)
    with pytest.raises(InvalidInputError, match="lacks column"):
        analyze_session(plan, trials.drop(columns=["score"]))
    with pytest.raises(InvalidInputError, match="lacks 1 planned"):
        analyze_session(plan, trials.iloc[1:])
    with pytest.raises(InvalidParameterError, match="confidence"):
        analyze_session(plan, trials, confidence=1.5)
    with pytest.raises(InvalidParameterError, match="control_floor"):
        analyze_session(plan, trials, control_floor=2.0)
    with pytest.raises(InvalidInputError, match="Z"):
        analyze_session(plan, trials, groupings=[Grouping("g", ("x", "y"), (("A",), ("Z",)))])


def test_result_is_frozen_and_json_ready() -> None:
    plan, trials = session(scenes=4, seed=17)
    result = analyze_session(plan, trials)
    with pytest.raises(AttributeError):
        result.session_id = "x"  # type: ignore[misc]
    data = json.loads(json.dumps(result.as_dict()))
    assert data["exploratory_label"] == LABEL
    assert data["comparisons"][0]["label"] == LABEL and data["comparisons"][0]["exploratory"]
    assert "verdict" in data["comparisons"][0]["difference"]


# ----------------------------------------------------------------- the CLI, terminal and HTML
def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def html_rows(page: str) -> dict[str, list[str]]:
    """Table rows of the HTML report, keyed by their first cell's text."""
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c))
                 for c in re.findall(r"<td>(.*?)</td>", tr, flags=re.S)]
        if cells:
            rows[cells[0]] = cells
    return rows


def test_cli_labels_unplanned_comparisons_exploratory_in_terminal_and_html(
        capsys, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("session: grasp\ncomparisons:\n  - [A, C]\n")
    code, out, err = run_cli(capsys, "prereg", "lock", str(plan_file), "--store", str(db))
    assert code == 0, err
    plan, trials = session(scenes=12, seed=18, session_id="grasp",
                           start=datetime(2099, 1, 1, tzinfo=UTC).isoformat())
    store_session(db, plan, trials)
    report = tmp_path / "r.html"
    code, out, err = run_cli(capsys, "session", "analyze", "grasp", "--store", str(db),
                             "--html", str(report))
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.startswith("confirmatory: A vs C") for line in lines)
    for name in ("A vs B", "B vs C"):
        assert any(line.startswith(f"{LABEL}: {name}") for line in lines), out
    assert not any(line.startswith(f"{LABEL}: A vs C") for line in lines)
    assert out.index("1. flip floor") < out.index("2. positive control") < out.index(
        "4. comparisons")
    rows = html_rows(report.read_text())
    assert rows["A vs C"][1] == "confirmatory"
    assert rows["A vs B"][1] == LABEL and rows["B vs C"][1] == LABEL
    code, out, _ = run_cli(capsys, "session", "analyze", "grasp", "--store", str(db), "--json")
    verdicts = {c["name"]: c["verdict"] for c in json.loads(out)["comparisons"]}
    assert {name: rows[name][8] for name in verdicts} == verdicts  # the HTML's verdict column
    assert "<svg" in report.read_text() and "<script src" not in report.read_text()
    code, out, _ = run_cli(capsys, "session", "analyze", "grasp", "--store", str(db), "--json",
                           "--group", "A,B vs C")
    data = json.loads(out)
    assert {c["name"]: c["label"] for c in data["comparisons"]} == {
        "A vs C": "confirmatory", "A vs B": LABEL, "B vs C": LABEL, "A+B vs C": LABEL}
    assert data["prereg"]["counts"] is True


def test_cli_without_prereg_and_with_a_late_one(capsys, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan, trials = session(scenes=5, seed=19, session_id="early",
                           start="2001-01-01T00:00:00+00:00")
    store_session(db, plan, trials)
    code, out, err = run_cli(capsys, "session", "analyze", "early", "--store", str(db))
    assert code == 0, err
    assert "no pre-registration" in out and "confirmatory:" not in out
    (tmp_path / "late.yaml").write_text("session: early\ncomparisons: [[A, B]]\n")
    assert run_cli(capsys, "prereg", "lock", str(tmp_path / "late.yaml"), "--store",
                   str(db))[0] == 0
    code, out, err = run_cli(capsys, "session", "analyze", "early", "--store", str(db))
    assert code == 0, err
    assert "AFTER the first scored trial" in out and "confirmatory:" not in out
    assert f"{LABEL}: A vs B" in out


def test_cli_blinded_unfinished_session_needs_unblind(capsys, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan = plan_session(["A", "B"], scenes=3, attempts=2, seed=1, blind=True, session_id="bl")
    trials = pending_after(simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=2), 5)
    store_session(db, plan, trials)
    code, out, err = run_cli(capsys, "session", "analyze", "bl", "--store", str(db))
    assert code == 2 and "blinded" in err and "--unblind" in err and len(err.splitlines()) == 1
    code, out, err = run_cli(capsys, "session", "analyze", "bl", "--store", str(db),
                             "--unblind")
    assert code == 0 and "unblind" in out
    code, _, err = run_cli(capsys, "session", "analyze", "nope", "--store", str(db))
    assert code == 2 and "bl" in err  # lists the known sessions
    code, _, err = run_cli(capsys, "session", "analyze", "bl", "--store", str(db), "--unblind",
                           "--group", "A")
    assert code == 2 and "--group" in err


# ----------------------------------------------------------------- every row agrees
@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 14), st.integers(1, 3),
       st.lists(st.sampled_from([0.2, 0.35, 0.5, 0.65, 0.8]), min_size=3, max_size=4))
def test_every_row_p_holm_p_and_interval_agree(seed, scenes, attempts, rates) -> None:
    names = [f"P{i}" for i in range(len(rates))]
    plan = plan_session(names, scenes=scenes, attempts=attempts, seed=seed, session_id="prop")
    trials = simulate_session(plan, success_prob=dict(zip(names, rates, strict=True)),
                              scene_correlation=0.3, skip_prob=0.05, seed=seed)
    g = Grouping("g", ("first", "rest"), ((names[0],), tuple(names[1:])))
    result = analyze_session(plan, trials, groupings=[g])
    for c in result.comparisons:
        assert c.significant == (c.p_holm <= 0.05)
        assert c.difference.excludes_zero == c.significant, c.sentence
        assert c.p_holm >= c.test.p_value
        assert c.difference.high > c.difference.low
        assert f"Holm p = {c.p_holm:.3g}" in c.sentence
        # one verdict vocabulary: compare's SliceVerdict, read on A - B
        expected = (SliceVerdict.NO_CHANGE if not c.significant else SliceVerdict.IMPROVED
                    if c.difference.estimate > 0 else SliceVerdict.REGRESSED)
        assert c.verdict is expected


def test_cli_html_into_a_new_folder(capsys, tmp_path: Path) -> None:
    """``--html`` makes the folders it names, as rank, report and compare do."""
    db = tmp_path / "s.sqlite"
    plan, trials = session(scenes=4, seed=3, session_id="folders")
    store_session(db, plan, trials)
    report = tmp_path / "reports" / "nested" / "s.html"
    code, _, err = run_cli(capsys, "session", "analyze", "folders", "--store", str(db),
                           "--html", str(report))
    assert code == 0, err
    assert "<svg" in report.read_text()
