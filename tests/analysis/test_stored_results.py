"""A stored comparison result round-trips exactly: document(from_dict(d)) == d, typed back."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from evalband.analysis._compare import (
    Comparison,
    RunData,
    SliceVerdict,
    Verdict,
    compare_many,
)
from evalband.analysis._sequential import compare_sequential
from evalband.analysis._sequential_plan import design_for
from evalband.analysis._slice_test import SliceTest
from evalband.analysis._stored import (
    comparison_options,
    comparison_settings,
    comparisons_from_result,
)
from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError
from evalband.panel import load_panel
from evalband.report import comparison_document
from evalband.report._document import comparison_documents
from evalband.stats import Difference, Interval

OUTCOMES = (Outcome.SUCCESS, Outcome.FAILURE, Outcome.TIMEOUT, Outcome.ERROR)


def random_runs(seed: int) -> tuple[RunData, list[RunData]]:
    """A two-factor panel and a baseline + two candidates with random outcomes and metrics."""
    rng = np.random.default_rng(seed)
    episodes = int(rng.integers(3, 12))
    panel = load_panel({"name": f"p{seed}", "env": "evalband/Coin-v0", "episodes": episodes,
                        "seed": seed, "budget": {"steps": 1},
                        "factors": {"f": ["a", "b", "c"], "g": ["x", "y"]}})

    def run(run_id: str) -> RunData:
        rates = rng.uniform(0, 1, size=4)
        rates /= rates.sum()
        records = []
        for s in panel.episode_specs():
            outcome = OUTCOMES[int(rng.choice(4, p=rates))]
            success = outcome is Outcome.SUCCESS
            records.append(EpisodeRecord(
                run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint, cell=s.cell,
                slices=dict(s.slices), episode=s.episode, repeat=s.repeat,
                condition_seed=s.condition_seed, outcome=outcome, terminated=success,
                truncated=not success, steps=int(rng.integers(1, 50)),
                time_to_success_s=float(rng.uniform(0.1, 3)) if success else None,
                interventions=int(rng.random() < 0.1),
                latency_ms_p95=float(rng.uniform(1, 40)),
                error="boom" if outcome is Outcome.ERROR else None))
        return RunData(run_id, run_id, panel.fingerprint, panel, records, source="memory")

    return run("base"), [run("cand1"), run("cand2")]


def json_round_trip(d: dict[str, Any]) -> dict[str, Any]:
    """What the store gives back (JSON with NaN kept, as the store writes it)."""
    return json.loads(json.dumps(d, allow_nan=True))  # type: ignore[no-any-return]


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal as JSON text: every number, key order and NaN included."""
    return json.dumps(a, allow_nan=True) == json.dumps(b, allow_nan=True)


@pytest.mark.parametrize("seed", range(12))
def test_fixed_n_results_round_trip_exactly(seed: int) -> None:
    base, cands = random_runs(seed)
    for c in compare_many(base, cands, confidence=0.9 if seed % 2 else 0.95):
        stored = json_round_trip(comparison_document(c))
        back = Comparison.from_dict(stored)
        assert same(comparison_document(back), stored)
        assert same(comparison_document(back), comparison_document(c))
        assert isinstance(back.verdict, Verdict) and back.verdict == c.verdict
        assert all(isinstance(r.verdict, SliceVerdict) for r in back.slice_rows)
        assert back.family_size == c.family_size and back.effect == c.effect
        assert back.slice_rows == c.slice_rows  # typed: intervals, differences, tests
        for r in back.slice_rows:
            assert r.rate_baseline is None or isinstance(r.rate_baseline, Interval)
            assert r.delta is None or (isinstance(r.delta, Difference)
                                       and r.delta.verdict in set(SliceVerdict))
            assert r.test is None or (isinstance(r.test, SliceTest) and not r.test.is_sequential
                                      and r.test.p_value == r.p_value)


@pytest.mark.parametrize("seed", range(4))
def test_sequential_results_round_trip_exactly(seed: int) -> None:
    base, cands = random_runs(100 + seed)
    c = compare_sequential(base, cands[0], effect=0.2, max_pairs=200 if seed % 2 else None)
    back = Comparison.from_dict(json_round_trip(comparison_document(c)))
    assert same(comparison_document(back), comparison_document(c))
    assert back.multiplicity == c.multiplicity != "holm"
    assert back.slice_rows == c.slice_rows
    tests = [r.test for r in back.slice_rows if r.test is not None]
    assert tests and all(t.is_sequential and t.threshold is not None for t in tests)


def test_designed_sequential_results_round_trip_exactly() -> None:
    base, cands = random_runs(200)
    design = design_for(base, effect=0.2, exploratory=True)
    c = compare_sequential(base, cands[0], design=design)
    stored = json_round_trip(comparison_document(c))
    back = Comparison.from_dict(stored)
    assert same(comparison_document(back), comparison_document(c))
    assert back.slice_rows == c.slice_rows
    designed = [r.test for r in back.slice_rows if r.test is not None and r.test.designed]
    assert designed and all(t.max_pairs == design.slices[r.name].max_pairs
                            for r, t in ((r, r.test) for r in back.slice_rows)
                            if t is not None and t.designed)
    assert all("max_pairs" in s["test"] for s in stored["slices"] if s["test"])


def test_a_payload_comes_back_as_the_same_comparisons() -> None:
    base, cands = random_runs(7)
    computed = compare_many(base, cands)
    back = comparisons_from_result(json_round_trip({"r": comparison_documents(computed)})["r"])
    assert [same(comparison_document(a), comparison_document(b))
            for a, b in zip(back, computed, strict=True)] == [True, True]


def test_a_dict_of_another_schema_is_refused_with_what_to_do() -> None:
    with pytest.raises(InvalidInputError, match="evalband-comparison/2.*evalband compare"):
        Comparison.from_dict({"schema": "evalband-comparison/1"})


def test_recorded_options_and_settings_are_inverse() -> None:
    for settings in ({}, {"confidence": 0.9}, {"allow_panel_mismatch": True},
                     {"sequential": True, "effect": 0.2, "max_pairs": 50}):
        options = comparison_options(**settings)
        assert comparison_settings({**options, "episode_counts": {"a": 1}}) == (
            {k: v for k, v in settings.items()}, [])


def test_a_result_in_an_earlier_releases_words_reads_back_typed() -> None:
    """The release's ``compare --json`` (its intervals' verdicts in free text) reads back typed."""
    from pathlib import Path

    old = json.loads((Path(__file__).parents[1] / "store" / "fixtures" / "compare-v1.json")
                     .read_text(encoding="utf-8"))
    back = Comparison.from_dict(old)
    (row,) = back.slice_rows
    assert isinstance(row.delta, Difference) and isinstance(row.rate_baseline, Interval)
    assert old["slices"][0]["delta"]["verdict"] == "A is better: the interval excludes 0"
    assert row.delta.verdict is SliceVerdict.IMPROVED == row.verdict
    assert isinstance(row.test, SliceTest) and row.test.p_value == old["slices"][0]["p_value"]
    again = comparison_document(back)
    for key in ("rate_baseline", "rate_candidate", "test"):
        assert again["slices"][0][key] == old["slices"][0][key], key
    for key in ("estimate", "low", "high", "confidence", "paired", "counts", "excludes_zero"):
        assert again["slices"][0]["delta"][key] == old["slices"][0]["delta"][key], key
    assert again["notes"] == old["notes"] and back.peeking == old["peeking"] == []

