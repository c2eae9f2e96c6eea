"""Seed 004's shape, ranked: six checkpoints, 46 trials each, a 27% flip floor.

A simulated session (``simulate_session``: same-scene attempt pairs flip with probability 0.27
exactly) of six checkpoints with grasp rates 33-50%, 23 scenes x 2 attempts, recorded trial by
trial into a real store and ranked by the real command line. The seed's session "correctly
refused to rank near-peers"; ``rank`` must too, and name the tier.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sessionkit import store_session

from evalband.cli import main
from evalband.session import plan_session, simulate_session
from evalband.stats._ranks import rank_policies

RATES = {"GN_s1000": 0.50, "GN_s2000": 0.46, "GN_raw": 0.43, "BN_scratch": 0.39,
         "PT_slowLR": 0.37, "PT_fullLR": 0.33}


def seed_like(seed: int) -> tuple[object, object]:
    plan = plan_session(list(RATES), scenes=23, attempts=2, seed=seed, session_id=f"grasp{seed}")
    trials = simulate_session(plan, success_prob=RATES, flip_prob=0.27, scene_correlation=0.5,
                              seed=seed)
    return plan, trials


def test_rank_refuses_to_order_the_near_peers_and_names_the_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    plan, trials = seed_like(4)
    store = tmp_path / "s.sqlite"
    store_session(store, plan, trials)  # type: ignore[arg-type]
    assert main(["rank", "grasp4", "--store", str(store), "--json",
                 "--html", str(tmp_path / "r.html")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["design"] == "clustered" and out["metric"] == "unaided"
    (overall,) = out["slices"]
    assert [p["run_id"].split(":")[0] for p in overall["policies"]] == ["grasp4"] * 6
    assert sum(p["value"]["n"] for p in overall["policies"]) == 6 * 46
    assert overall["established"] == 0
    assert [sorted(t) for t in overall["tiers"]] == [sorted(RATES)]
    assert all((p["rank_low"], p["rank_high"]) == (1, 6) for p in overall["policies"])
    assert "cannot be told apart" in overall["sentence"]
    sep = overall["separation"]  # the leaders' price: far beyond the 23 scenes played
    assert sep["unit"] == "scenes" and sep["have_per_policy"] == 23
    assert sep["per_policy"] is None or sep["per_policy"] > 100
    assert overall["resolvable_gap"] > 0.29  # the seed: 46 trials resolve only ~29 points
    assert (tmp_path / "r.html").read_text().count('class="interval"') == 6
    capsys.readouterr()
    assert main(["rank", "grasp4", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "one tier" in text and all(name in text for name in RATES)


def test_seed_like_sessions_rarely_order_anything_and_never_wrongly() -> None:
    """Over seeded seed-like sessions: a wrong order in at most ~5%; the leaders rarely split."""
    rates = np.array(list(RATES.values()))
    wrong = any_order = 0
    reps = 40
    for seed in range(reps):
        plan, trials = seed_like(100 + seed)
        t = trials.sort_values(["policy", "scene", "attempt"])  # type: ignore[attr-defined]
        y = np.vstack([t[t["policy"] == name]["success"].to_numpy(float) for name in RATES])
        clusters = t[t["policy"] == "GN_s1000"]["scene"].to_numpy()
        r = rank_policies(y, clusters=clusters)
        wrong += bool(np.any(r.better & ~(rates[:, None] > rates[None, :])))
        any_order += bool(r.better.any())
    assert wrong <= 6  # 5% of 40 is 2; 6 is beyond the Monte Carlo noise of a 5% rate
    assert any_order <= reps // 2  # 17 points apart at most: at 46 trials, mostly unresolved


def test_agree_at_the_seeds_noise_floor_says_no_ordering_can_be_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    plan, trials = seed_like(4)
    store = tmp_path / "s.sqlite"
    store_session(store, plan, trials)  # type: ignore[arg-type]
    csv = tmp_path / "offline.csv"  # validation loss orders the six decisively (seed 004)
    csv.write_text("checkpoint,val_loss,action_error\n" + "".join(
        f"{name},{0.02 + 0.001 * i},{0.3 - 0.01 * i}\n" for i, name in enumerate(RATES)))
    assert main(["agree", "grasp4", "--csv", str(csv), "--store", str(store), "--json",
                 "--reps", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["validated"] is False
    assert out["sentence"].startswith("at this noise floor no metric's ordering can be "
                                      "validated")
    for m in out["metrics"]:
        assert m["established"] == 0 and m["higher_is_better"] is False
        assert (m["spearman"]["low"], m["spearman"]["high"]) == (-1.0, 1.0)
