"""The per-slice discordance: discordant matched pairs over matched pairs, with a Wilson band."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from evalband.analysis import compare_many
from evalband.analysis._compare import RunData
from evalband.episode import EpisodeRecord
from evalband.panel import load_panel

PANEL = load_panel({"name": "d", "env": "evalband/Coin-v0", "episodes": 40, "seed": 0,
                    "budget": {"steps": 1}, "factors": {"arm": ["a", "b"]}})


def _run(run_id: str, wins: dict[str, set[int]], *, episodes: range = range(40)) -> RunData:
    records = [EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=PANEL.fingerprint,
                             cell=s.cell, slices=dict(s.slices), episode=s.episode,
                             repeat=s.repeat, condition_seed=s.condition_seed,
                             outcome="success" if s.episode in wins[s.cell] else "failure",
                             terminated=True, truncated=False, steps=1)
               for s in PANEL.episode_specs() if s.episode in episodes]
    return RunData(run_id, run_id, PANEL.fingerprint, PANEL, records, source="memory")


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_discordance_is_the_wilson_band_of_discordant_pairs(confidence: float) -> None:
    cells = [c.key for c in PANEL.cells()]
    # cell a: baseline wins 0-29, candidate 5-31 -> discordant 0-4 and 30-31 (7 of 40)
    # cell b: both win 0-9 -> no discordant pair (0 of 40)
    base = _run("base", {cells[0]: set(range(30)), cells[1]: set(range(10))})
    cand = _run("cand", {cells[0]: set(range(5, 32)), cells[1]: set(range(10))})
    (c,) = compare_many(base, [cand], confidence=confidence)
    for row, k in zip(c.slice_rows, (7, 0), strict=True):
        band = row.extras["discordance"]
        low, high = proportion_confint(k, 40, alpha=1 - confidence, method="wilson")
        assert band.estimate == pytest.approx(k / 40)
        assert (band.low, band.high) == pytest.approx((low, high), abs=1e-12)
        assert band.k == k and band.n == 40 and band.confidence == confidence
        assert row.as_dict()["discordance"]["k"] == k  # written in --json


def test_no_discordance_without_matched_pairs() -> None:
    cells = [c.key for c in PANEL.cells()]
    base = _run("base", {cells[0]: {1}, cells[1]: {2}}, episodes=range(20))
    cand = _run("cand", {cells[0]: {25}, cells[1]: {30}}, episodes=range(20, 40))
    (c,) = compare_many(base, [cand])
    assert all(row.pairing == "unpaired" and row.extras["discordance"] is None
               for row in c.slice_rows)
