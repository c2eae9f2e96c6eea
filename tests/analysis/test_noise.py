"""noise_floor against plain-Python brute force, statsmodels' Wilson band, and simulation."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

from evalband.analysis import NoiseFloor, noise_floor
from evalband.episode import EpisodeRecord
from evalband.errors import InvalidInputError, InvalidParameterError

OUTCOMES = ("success", "failure", "timeout", "error")


def rec(cell: str, episode: int, repeat: int, outcome: str, run_id: str = "r") -> EpisodeRecord:
    return EpisodeRecord(
        run_id=run_id, policy="p", panel_fingerprint="f", cell=cell, episode=episode,
        repeat=repeat, condition_seed=episode, outcome=outcome,
        terminated=outcome in ("success", "failure"), truncated=outcome == "timeout", steps=1,
    )


def wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def cluster_wilson(k: list[int], n: list[int], confidence: float) -> tuple[float, float]:
    """The documented flip band in plain Python: each condition a cluster; Wilson at the
    Korn-Graubard effective size n / deff (deff >= 1) with Student's t on G - 1 df."""
    g, total = len(n), sum(n)
    p = sum(k) / total
    if g >= 2 and 0 < p < 1:
        var = g / (g - 1) * sum((a - p * b) ** 2 for a, b in zip(k, n, strict=True)) / total**2
        deff = max(var / (p * (1 - p) / total), 1.0)
    else:
        deff = max(total / g, 1.0)
    m, q = total / deff, float(student_t.isf((1 - confidence) / 2, max(g - 1, 1)))
    centre = (p + q * q / (2 * m)) / (1 + q * q / m)
    half = q / (1 + q * q / m) * math.sqrt(p * (1 - p) / m + q * q / (4 * m * m))
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------- brute force (plain Python)
def brute_force(records: list[EpisodeRecord], m: int, errors_as_failures: bool,
                confidence: float) -> dict:
    counted = lambda r: errors_as_failures or r.outcome.value != "error"  # noqa: E731
    # every episode (all repeats) in plan order: the suites run over repeats as stored
    ordered = sorted(records, key=lambda r: (r.cell, r.episode, r.repeat))
    used = [r for r in ordered if counted(r)]
    wins = [r.outcome.value == "success" for r in used]
    full = len(wins) // m
    suites = [wins[i * m:(i + 1) * m] for i in range(full)]
    rest = wins[full * m:]
    k, n = sum(wins), len(wins)
    p = k / n
    low, high = wilson(k, n, confidence)
    rates = [sum(s) / m for s in suites]
    groups: dict[tuple[str, int], list[bool]] = {}
    for r in sorted(records, key=lambda r: (r.cell, r.episode, r.repeat)):
        if counted(r):
            groups.setdefault((r.cell, r.episode), []).append(r.outcome.value == "success")
    running = []
    per_condition = []
    pairs = flips = n_groups = 0
    for outcomes in groups.values():
        if len(outcomes) < 2:
            continue
        n_groups += 1
        here = [x != y for x, y in itertools.combinations(outcomes, 2)]
        pairs += len(here)
        flips += sum(here)
        per_condition.append((sum(here), len(here)))
        running.append((n_groups, pairs, flips))
    return {
        "n": n, "k": k, "p": p, "band": (low, high),
        "suite_wins": [sum(s) for s in suites], "rest": (len(rest), sum(rest)),
        "min": min(rates) if rates else None, "max": max(rates) if rates else None,
        "std": statistics.stdev(rates) if len(rates) > 1 else None,
        # statsmodels gives 1 - 1e-16 where the exact bound is 1: compare with a tolerance
        "outside": sum(1 for x in rates if x < low - 1e-9 or x > high + 1e-9),
        "binomial_std": math.sqrt(p * (1 - p) / m),
        "pairs": pairs, "flips": flips, "running": running, "per_condition": per_condition,
        "errors": len(ordered) - len(used),
    }


@st.composite
def runs(draw: st.DrawFn) -> list[EpisodeRecord]:
    cells = draw(st.lists(st.sampled_from(["a=1", "a=2", "b=x"]), min_size=1, max_size=3,
                          unique=True))
    repeats = draw(st.integers(1, 3))
    records = []
    for cell in cells:
        for episode in range(draw(st.integers(0, 14))):
            for repeat in range(repeats):
                records.append(rec(cell, episode, repeat, draw(st.sampled_from(OUTCOMES))))
    order = draw(st.permutations(records))
    return list(order)


@settings(max_examples=150, deadline=None)
@given(runs(), st.integers(1, 9), st.booleans(), st.sampled_from([0.8, 0.95]))
def test_matches_brute_force(records, m, errors_as_failures, confidence) -> None:
    all_counted = [r for r in records if errors_as_failures or r.outcome.value != "error"]
    if not records:
        with pytest.raises(InvalidInputError, match="no episodes"):
            noise_floor(records, m)
        return
    if not all_counted:
        with pytest.raises(InvalidInputError, match="errors_as_failures"):
            noise_floor(records, m, errors_as_failures=errors_as_failures)
        return
    got = noise_floor(records, m, confidence=confidence, errors_as_failures=errors_as_failures)
    want = brute_force(records, m, errors_as_failures, confidence)
    assert got.n_episodes == want["n"]
    assert got.excluded_errors == want["errors"]
    assert got.pooled.k == want["k"] and got.pooled.n == want["n"]
    assert got.pooled.low == pytest.approx(want["band"][0], abs=1e-9)
    assert got.pooled.high == pytest.approx(want["band"][1], abs=1e-9)
    assert [s.successes for s in got.suites] == want["suite_wins"]
    assert all(s.n == m for s in got.suites)
    for s in got.suites:
        low, high = wilson(s.successes, m, confidence)
        assert (s.rate.low, s.rate.high) == pytest.approx((low, high), abs=1e-9)
    if want["rest"][0]:
        assert got.partial is not None
        assert (got.partial.n, got.partial.successes) == want["rest"]
    else:
        assert got.partial is None
    if not want["suite_wins"]:
        assert got.swing is None
    else:
        assert got.swing is not None
        assert got.swing.n_suites == len(want["suite_wins"])
        assert got.swing.min_rate == pytest.approx(want["min"])
        assert got.swing.max_rate == pytest.approx(want["max"])
        if want["std"] is None:
            assert got.swing.std is None
        else:
            assert got.swing.std == pytest.approx(want["std"], abs=1e-12)
        assert got.swing.outside_band == want["outside"]
        assert got.swing.share_outside == pytest.approx(want["outside"] / len(want["suite_wins"]))
        assert got.swing.binomial_std == pytest.approx(want["binomial_std"])
    if want["pairs"] == 0:
        assert got.flip is None
    else:
        assert got.flip is not None
        assert (got.flip.pairs, got.flip.flips) == (want["pairs"], want["flips"])
        low, high = cluster_wilson([f for f, _ in want["per_condition"]],
                                   [n for _, n in want["per_condition"]], confidence)
        assert (got.flip.rate.low, got.flip.rate.high) == pytest.approx((low, high), abs=1e-9)
        assert [(p.groups, p.pairs, p.flips) for p in got.flip.running] == want["running"]
        assert all(p.rate == pytest.approx(p.flips / p.pairs) for p in got.flip.running)
    json.dumps(got.as_dict())  # JSON-ready


# ----------------------------------------------------------------- hand-counted fixtures
def test_known_flips_exact_count() -> None:
    # scene 0: S F -> 1 flip of 1 pair; scene 1: S S -> 0 of 1; scene 2: F S -> 1 of 1;
    # scene 3: S F F -> pairs (S,F) (S,F) (F,F) -> 2 of 3; scene 4: one repeat only -> no pair.
    plan = {0: "SF", 1: "SS", 2: "FS", 3: "SFF", 4: "S"}
    records = [rec("", e, i, "success" if o == "S" else "failure")
               for e, outcomes in plan.items() for i, o in enumerate(outcomes)]
    flip = noise_floor(records, 2).flip
    assert flip is not None
    assert (flip.groups, flip.pairs, flip.flips) == (4, 6, 4)
    assert flip.rate.estimate == pytest.approx(4 / 6)
    assert [(p.groups, p.pairs, p.flips) for p in flip.running] == [
        (1, 1, 1), (2, 2, 1), (3, 3, 2), (4, 6, 4)]
    # the paired episodes: S F S S F S S F F -> 5 of 9 successes
    assert flip.independent_reference == pytest.approx(2 * (5 / 9) * (4 / 9))


def test_identical_repeats_never_flip() -> None:
    rng = np.random.default_rng(1)
    records = []
    for episode, win in enumerate(rng.random(50) < 0.4):
        records += [rec("", episode, r, "success" if win else "failure") for r in range(3)]
    flip = noise_floor(records, 10).flip
    assert flip is not None and flip.flips == 0 and flip.pairs == 150
    assert flip.rate.low == 0.0 and flip.rate.high > 0.0  # the band never collapses


def test_suites_use_every_repeat_and_errors_are_counted() -> None:
    # plan order (cell, episode, repeat): S F | E S | T | S
    records = [rec("", 0, 0, "success"), rec("", 0, 1, "failure"),
               rec("", 1, 0, "error"), rec("", 1, 1, "success"),
               rec("", 2, 0, "timeout"), rec("", 3, 0, "success")]
    nf = noise_floor(records, 2)
    assert nf.n_episodes == 5 and nf.excluded_errors == 1  # the error alone is left out
    assert [(s.n, s.successes) for s in nf.suites] == [(2, 1), (2, 1)]  # (S, F), (S, T)
    assert nf.suites[1].first == ("", 1) and nf.suites[1].last == ("", 2)
    assert nf.partial is not None and (nf.partial.n, nf.partial.successes) == (1, 1)
    assert nf.pooled.k == 3 and nf.pooled.n == 5
    assert nf.flip is not None and nf.flip.excluded_errors == 1 and nf.flip.pairs == 1
    counted = noise_floor(records, 2, errors_as_failures=True)
    assert counted.n_episodes == 6 and counted.excluded_errors == 0
    assert [s.successes for s in counted.suites] == [1, 1, 1]  # (S, F), (E, S), (T, S)
    assert counted.partial is None
    assert counted.flip is not None and (counted.flip.pairs, counted.flip.flips) == (2, 2)


def test_the_pool_counts_what_show_counts() -> None:
    # the reported case: 40 conditions x 2 repeats, 54 of 80 successes in all (27 of 40 first
    # attempts): the pool is 54/80 and the suites of 20 cover all 80 episodes
    wins = [True] * 27 + [False] * 13
    seconds = [True] * 27 + [False] * 13
    random.Random(7).shuffle(seconds)
    records = [rec("", e, r, "success" if w else "failure")
               for e in range(40) for r, w in ((0, wins[e]), (1, seconds[e]))]
    nf = noise_floor(records, 20)
    assert (nf.pooled.k, nf.pooled.n) == (54, 80)
    assert len(nf.suites) == 4 and nf.partial is None
    assert sum(s.successes for s in nf.suites) == 54
    leftover = noise_floor(records, 30)  # 80 = 2 x 30 + 20: the rest is a partial suite
    assert [s.n for s in leftover.suites] == [30, 30] and leftover.partial is not None
    assert leftover.partial.n == 20


def test_order_of_input_does_not_matter_and_suites_follow_plan_order() -> None:
    records = [rec(c, e, 0, "success" if (e + len(c)) % 3 else "failure")
               for c in ("x=b", "x=a") for e in range(7)]
    shuffled = records[:]
    random.Random(4).shuffle(shuffled)
    a, b = noise_floor(records, 4), noise_floor(shuffled, 4)
    assert a == b
    assert a.suites[0].first == ("x=a", 0) and a.suites[1].first == ("x=a", 4)
    assert a.suites[1].last == ("x=b", 0)  # a suite may span cells in plan order


def test_fewer_episodes_than_a_suite_and_a_single_suite() -> None:
    records = [rec("", e, 0, "success" if e % 2 else "failure") for e in range(5)]
    nf = noise_floor(records, 20)
    assert nf.suites == () and nf.swing is None and nf.flip is None
    assert nf.partial is not None and nf.partial.n == 5
    one = noise_floor(records, 5)
    assert one.swing is not None and one.swing.std is None and one.partial is None


# ----------------------------------------------------------------- simulation
def test_suite_std_of_a_fair_coin_is_the_binomial_std() -> None:
    # 400 suites of M = 20 Bernoulli(0.3) episodes: the sample std of the suite rates has
    # its own sampling sd of about sigma / sqrt(2 * 399) = 0.0036; allow 4 of those.
    p, m, k = 0.3, 20, 400
    wins = np.random.default_rng(20240611).random(m * k) < p
    records = [rec("", e, 0, "success" if w else "failure") for e, w in enumerate(wins)]
    nf = noise_floor(records, m)
    sigma = math.sqrt(p * (1 - p) / m)
    assert nf.swing is not None and nf.swing.std is not None
    assert nf.swing.n_suites == k
    assert nf.swing.std == pytest.approx(sigma, abs=4 * sigma / math.sqrt(2 * (k - 1)))
    assert nf.swing.binomial_std == pytest.approx(sigma, abs=0.003)  # pooled p near 0.3
    # A wrong suite size in the reference (e.g. sqrt(p(1-p)/(2M))) would be far off:
    assert abs(nf.swing.std - math.sqrt(p * (1 - p) / (2 * m))) > 0.02


def test_independent_repeats_flip_at_two_p_one_minus_p() -> None:
    p, scenes = 0.35, 3000
    wins = np.random.default_rng(7).random((scenes, 2)) < p
    records = [rec("", e, r, "success" if wins[e, r] else "failure")
               for e in range(scenes) for r in range(2)]
    flip = noise_floor(records, 20).flip
    assert flip is not None and flip.pairs == scenes
    expected = 2 * p * (1 - p)
    assert flip.rate.estimate == pytest.approx(expected, abs=4 * math.sqrt(expected / scenes))
    assert flip.independent_reference == pytest.approx(expected, abs=0.02)


def test_heterogeneous_cells_swing_more_than_the_binomial_std() -> None:
    # Two cells at 0.1 and 0.9, suites inside each cell: suite std ~ 0.4 >> binomial ~ 0.11.
    rng = np.random.default_rng(3)
    records = [rec(f"c={p}", e, 0, "success" if rng.random() < p else "failure")
               for p in (0.1, 0.9) for e in range(200)]
    swing = noise_floor(records, 20).swing
    assert swing is not None and swing.std is not None
    assert swing.std > 3 * swing.binomial_std
    assert swing.share_outside == 1.0


# ----------------------------------------------------------------- validation
@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "20", None])
def test_bad_suite_size_is_refused(bad) -> None:
    with pytest.raises(InvalidParameterError, match="suite_size"):
        noise_floor([rec("", 0, 0, "success")], bad)


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="no episodes"):
        noise_floor([], 20)
    with pytest.raises(InvalidParameterError, match="confidence"):
        noise_floor([rec("", 0, 0, "success")], 20, confidence=1.5)
    with pytest.raises(InvalidInputError, match="appears twice"):
        noise_floor([rec("", 0, 0, "success"), rec("", 0, 0, "failure")], 20)
    with pytest.raises(InvalidInputError, match="one run"):
        noise_floor([rec("", 0, 0, "success"), rec("", 1, 0, "success", run_id="s")], 20)
    with pytest.raises(InvalidInputError, match="errors_as_failures"):
        noise_floor([rec("", 0, 0, "error"), rec("", 0, 1, "error")], 20)  # all errors
    one = noise_floor([rec("", 0, 0, "error"), rec("", 0, 1, "success")], 20)
    assert (one.n_episodes, one.excluded_errors) == (1, 1)  # a later repeat still counts


def test_result_type_is_frozen_and_serialises() -> None:
    nf = noise_floor([rec("", e, 0, "success" if e % 3 else "timeout") for e in range(45)], 20)
    assert isinstance(nf, NoiseFloor)
    with pytest.raises(AttributeError):
        nf.suite_size = 3  # type: ignore[misc]
    data = json.loads(json.dumps(nf.as_dict()))
    assert data["pooled"]["k"] == 30 and len(data["suites"]) == 2
    assert data["partial"]["n"] == 5 and data["swing"]["n_suites"] == 2
