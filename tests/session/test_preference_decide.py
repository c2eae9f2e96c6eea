"""A preference session's pairs are decided by the one engine: error rate, p and interval agree."""

from __future__ import annotations

import numpy as np
import pytest

from evalband.analysis._verdicts import DIRECTIONAL_HOLM, SliceVerdict, decide
from evalband.session._preference import plan_preference
from evalband.session._preference_analysis import (
    PreferenceTest,
    analyze_preferences,
    simulate_preferences,
)
from evalband.stats import clustered_paired_test
from evalband.stats._procedure import paired_exact_p


@pytest.mark.parametrize(("k", "blocks", "scenes", "ties"), [
    (2, 24, None, 0.0),   # one pair, one start state per block: the sign test
    (2, 40, 10, 0.2),     # one pair, start states shared: the scene sign-flip test
    (3, 36, None, 0.1),   # three pairs in one family (directional Holm); shared scenes with
])                        # several pairs: test_preference.py's null test
def test_identical_policies_are_preferred_no_more_often_than_alpha(
    k: int, blocks: int, scenes: int | None, ties: float,
) -> None:
    """Under identical policies, the family says "a prefers over b" in at most alpha of
    sessions: the rate's Monte Carlo band (3 standard errors) must reach down to 5%."""
    names = [f"p{i}" for i in range(k)]
    plan = plan_preference(names, blocks, seed=40 + k, scenes=scenes, session_id="null")
    reps, alpha, wrong = 150, 0.05, 0
    for r in range(reps):
        rows = simulate_preferences(plan, dict.fromkeys(names, 0.0), tie_prob=ties,
                                    seed=1000 * k + r)
        result = analyze_preferences(plan, rows, progress_reps=20)
        wrong += result.established > 0
        assert len(result.pairs) == k * (k - 1) // 2
    rate = wrong / reps
    assert rate - 3 * np.sqrt(alpha * (1 - alpha) / reps) <= alpha, rate


def test_clear_preferences_are_decided_improved_in_their_order() -> None:
    plan = plan_preference(["a", "b"], 40, seed=3, session_id="clear")
    rows = simulate_preferences(plan, {"a": 0.0, "b": 2.0}, seed=4)
    pair, = analyze_preferences(plan, rows, progress_reps=20).pairs
    assert (pair.better, pair.worse, pair.established) == ("b", "a", True)


def test_the_verdict_p_and_interval_agree_at_every_level() -> None:
    """decide's interval excludes 0 exactly when the pair is established, for the sign test
    and the scene sign-flip test, alone and in a family, whichever side is preferred."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        tests = []
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.5:
                w, lo, t = (int(x) for x in rng.integers(0, 14, size=3))
                w, lo = max(w, lo), min(w, lo)
                tests.append(PreferenceTest("a", "b", w, lo, t, paired_exact_p(w, lo),
                                            "sign test"))
            else:
                n = rng.integers(1, 4, size=int(rng.integers(3, 9)))
                per_w = rng.binomial(n, 0.5)
                per_l = rng.binomial(n - per_w, 0.6)
                if per_l.sum() > per_w.sum():
                    per_w, per_l = per_l, per_w
                p = clustered_paired_test(per_w, per_l, n).p_value
                tests.append(PreferenceTest(
                    "a", "b", int(per_w.sum()), int(per_l.sum()), int((n - per_w - per_l).sum()),
                    float(p), "scene sign-flip",
                    tuple(zip(per_w.tolist(), per_l.tolist(), n.tolist(), strict=True))))
        alpha = float(rng.choice([0.05, 0.1, 0.2]))
        for test, d in zip(tests, decide(tests, alpha, procedure=DIRECTIONAL_HOLM),
                           strict=True):
            established = d.verdict is SliceVerdict.IMPROVED
            assert d.verdict in (SliceVerdict.IMPROVED, SliceVerdict.NO_CHANGE)
            assert established == d.rejected == (d.difference.low > 0.0)
            assert d.difference.low <= d.difference.estimate <= d.difference.high
            if len(tests) == 1:  # alone: the pair's own p at alpha decides
                assert established == (test.p_value <= alpha)
