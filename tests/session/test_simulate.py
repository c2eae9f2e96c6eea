"""simulate_session: the flip probability it promises, checked by brute-force Monte Carlo."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalband.errors import InvalidParameterError
from evalband.session import SessionStore, expected_flip_rate, plan_session, simulate_session

RATES = {"A": 0.5, "B": 0.3, "C": 0.7}


def flips_and_pairs(trials: pd.DataFrame) -> tuple[int, int]:
    """Every pair of attempts (i < j) of one policy in one scene, enumerated column by column."""
    scored = trials[trials["status"] == "scored"]
    wide = scored.pivot_table(index=["policy", "scene"], columns="attempt", values="success",
                              aggfunc="first")
    flips = pairs = 0
    for i, j in itertools.combinations(wide.columns, 2):
        both = wide[[i, j]].dropna()
        pairs += len(both)
        flips += int((both[i].astype(bool) != both[j].astype(bool)).sum())
    return flips, pairs


@pytest.mark.parametrize(("flip_prob", "attempts", "rho"), [
    (0.27, 2, 0.0), (0.27, 3, 0.6), (0.10, 2, 0.3), (None, 2, 0.0)])
def test_flip_probability_is_what_the_model_promises(flip_prob, attempts, rho) -> None:
    plan = plan_session(list(RATES), scenes=1000, attempts=attempts, seed=1, session_id="mc")
    trials = simulate_session(plan, success_prob=RATES, flip_prob=flip_prob,
                              scene_correlation=rho, seed=11)
    flips, pairs = flips_and_pairs(trials)
    truth = expected_flip_rate(plan, RATES, flip_prob)
    if flip_prob is None:
        assert truth == pytest.approx(np.mean([2 * m * (1 - m) for m in RATES.values()]))
    # pairs share attempts when attempts > 2: inflate the binomial SE by the attempt count
    se = math.sqrt(truth * (1 - truth) / pairs) * attempts
    assert abs(flips / pairs - truth) < 4 * se
    # each policy keeps its mean rate
    for policy, m in RATES.items():
        got = trials.loc[trials["policy"] == policy, "success"].astype(float).mean()
        assert got == pytest.approx(m, abs=0.03)


def test_zero_flip_probability_means_attempts_always_agree() -> None:
    plan = plan_session(["A", "B"], scenes=200, attempts=3, seed=2, session_id="z")
    trials = simulate_session(plan, success_prob={"A": 0.4, "B": 0.6}, flip_prob=0.0, seed=3)
    flips, pairs = flips_and_pairs(trials)
    assert pairs == 2 * 200 * 3 and flips == 0
    assert 0.3 < trials["success"].astype(float).mean() < 0.7  # not all-or-nothing overall


def test_scene_correlation_couples_policies_not_attempts() -> None:
    """Shared scene difficulty makes policies agree more in a scene; the flip rate stays."""
    rates = {"A": 0.5, "B": 0.5}
    plan = plan_session(list(rates), scenes=1200, attempts=2, seed=4, session_id="c")

    def disagreement(rho: float) -> tuple[float, float]:
        t = simulate_session(plan, success_prob=rates, flip_prob=0.2, scene_correlation=rho,
                             seed=5)
        wide = t.pivot_table(index=["scene", "attempt"], columns="policy", values="success",
                             aggfunc="first").astype(bool)
        f, p = flips_and_pairs(t)
        return float((wide["A"] != wide["B"]).mean()), f / p

    independent, flip0 = disagreement(0.0)
    coupled, flip9 = disagreement(0.9)
    assert independent == pytest.approx(0.5, abs=0.04)  # two independent q's at mean 0.5
    assert coupled < independent - 0.1
    assert flip0 == pytest.approx(0.2, abs=0.035) and flip9 == pytest.approx(0.2, abs=0.035)


def test_table_matches_the_store_frame_and_the_rubric(tmp_path: Path) -> None:
    plan = plan_session(["A", "B"], scenes=4, attempts=2, seed=9, session_id="t")
    trials = simulate_session(plan, success_prob={"A": 0.5, "B": 0.5}, flip_prob=0.3,
                              score_probs={0: 1.0, 1: 0.0, 2: 1.0}, seed=1)
    with SessionStore(tmp_path / "s.sqlite") as ss:
        ss.create(plan)
        stored = ss.trials("t")
    assert list(trials.columns) == list(stored.columns)
    assert dict(trials.dtypes.astype(str)) == {
        **dict(stored.dtypes.astype(str)), "scored_at": "object", "note": "object"}
    assert (trials[["trial_index", "scene", "attempt", "policy", "code", "position"]]
            .equals(stored[["trial_index", "scene", "attempt", "policy", "code", "position"]]))
    assert (trials["success"] == (trials["score"] >= 2)).all()
    assert set(trials["score"]) <= {0, 2}  # weight 0 on level 1: failures all score 0


def test_seeded_skips_and_assists() -> None:
    plan = plan_session(["A", "B"], scenes=100, attempts=2, seed=1, session_id="s")
    a = simulate_session(plan, success_prob={"A": 0.5, "B": 0.5}, skip_prob=0.1,
                         assist_prob=0.1, seed=7)
    b = simulate_session(plan, success_prob={"A": 0.5, "B": 0.5}, skip_prob=0.1,
                         assist_prob=0.1, seed=7)
    c = simulate_session(plan, success_prob={"A": 0.5, "B": 0.5}, skip_prob=0.1,
                         assist_prob=0.1, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a["success"].equals(c["success"])
    skipped = a["status"] == "skipped"
    assert 0.05 < skipped.mean() < 0.15 and a.loc[skipped, "score"].isna().all()
    assert not a.loc[skipped, "assisted"].any() and 0.04 < a["assisted"].mean() < 0.15


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"success_prob": {"A": 0.5}}, "no rate for B"),
    ({"success_prob": {"A": 0.5, "B": 1.2}}, r"success_prob\['B'\]"),
    ({"success_prob": {"A": 0.5, "B": 0.1}, "flip_prob": 0.27}, "at most 2m"),
    ({"success_prob": {"A": 0.5, "B": 0.5}, "scene_correlation": 1.0}, "below 1"),
    ({"success_prob": {"A": 0.5, "B": 0.5}, "score_probs": {7: 1.0}}, "levels"),
    ({"success_prob": {"A": 0.5, "B": 0.5}, "start": "yesterday"}, "ISO"),
])
def test_bad_parameters_are_refused(kwargs, needle) -> None:
    plan = plan_session(["A", "B"], scenes=2, attempts=2, seed=1, session_id="b")
    with pytest.raises(InvalidParameterError, match=needle):
        simulate_session(plan, seed=1, **kwargs)
