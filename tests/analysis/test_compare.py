"""compare: slices first, aggregate last; fixtures built with exact counts, oracles from stats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import evalband
from evalband.analysis import compare_many
from evalband.cli import main
from evalband.errors import PanelMismatchError
from evalband.panel import load_panel
from evalband.report import comparison_json, comparison_sentence
from evalband.run import Recorder
from evalband.stats import mcnemar

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/schemas/comparison.schema.json").read_text()
)


def slice_panel(episodes: int, **extra: Any):
    data = {"name": f"slices-{episodes}", "env": "evalband/Coin-v0", "episodes": episodes,
            "seed": 1, "budget": {"steps": 1},
            "factors": {"embodiment": ["easy", "same", "hard"]}}
    data.update(extra)
    return load_panel(data)


def record(store, panel, policy: str, run_id: str, outcomes: dict[str, list[int]],
           assisted: dict[str, list[bool]] | None = None, latency: float | None = None) -> str:
    with Recorder(store, panel, policy, run_id=run_id) as rec:
        for value, successes in outcomes.items():
            for episode, ok in enumerate(successes):
                rec.log(cell=f"embodiment={value}", episode=episode,
                        outcome="success" if ok else "failure", steps=1,
                        assisted=bool((assisted or {}).get(value, [False] * 10**4)[episode]),
                        latency_ms_p95=latency)
    return run_id


def pattern(n: int, both: int, base_only: int, cand_only: int) -> tuple[list[int], list[int]]:
    """Baseline and candidate outcomes with exact paired counts (the rest: neither)."""
    base = [1] * both + [1] * base_only + [0] * cand_only
    cand = [1] * both + [0] * base_only + [1] * cand_only
    rest = n - len(base)
    return base + [0] * rest, cand + [0] * rest


def hidden_fixture(store, n: int):
    # Seed 003's story: easy 0.7 -> 0.9, one unchanged, the hardest 0.6 -> 0.4.
    scale = n // 10
    easy = pattern(n, 7 * scale, 0, 2 * scale)
    same = pattern(n, 8 * scale, 0, 0)
    hard = pattern(n, 4 * scale, 2 * scale, 0)
    panel = slice_panel(n)
    base = record(store, panel, "v1", f"base{n}", {"easy": easy[0], "same": same[0],
                                                   "hard": hard[0]})
    cand = record(store, panel, "v2", f"cand{n}", {"easy": easy[1], "same": same[1],
                                                   "hard": hard[1]})
    return evalband.compare(base, cand, store=store)


def row(comparison, name: str):
    return next(r for r in comparison.slice_rows if r.name == name)


def test_reach_lab_compare_reproduces_seed_pairs(store) -> None:
    panel = load_panel("reach1d")
    for policy in ("reach1d:baseline", "reach1d:damped"):
        evalband.run_panel(panel, policy, store, run_id=policy.split(":")[1])
    c = evalband.compare("baseline", "damped", store=store)
    only = c.slice_rows[0]
    assert only.pairs == {"both": 8, "baseline_only": 1, "candidate_only": 42, "neither": 13,
                          "unmatched": 0}
    # the conditional exact interval: the corners of the Clopper-Pearson rectangle of the
    # discordance (43 of 64) and the candidate-only share (42 of 43), scipy's
    from scipy.stats import binomtest

    share = binomtest(42, 43).proportion_ci(0.95, "exact")
    psi = binomtest(43, 64).proportion_ci(0.95, "exact")
    assert (only.delta.low, only.delta.high) == pytest.approx(
        (psi.low * (2 * share.low - 1), psi.high * (2 * share.high - 1)), abs=1e-12)
    assert only.p_value == pytest.approx(mcnemar(42, 1).p_value, rel=1e-12)
    assert only.verdict == "improved" and c.verdict == "improves" and c.exit_code == 0
    # Time among successes keeps its own denominator (seed 002: 1.511111 s and 2.368000 s).
    assert round(only.mean_time_to_success_baseline_s, 6) == 1.511111
    assert round(only.mean_time_to_success_candidate_s, 6) == 2.368
    jsonschema.validate(json.loads(comparison_json(c)), SCHEMA)


def test_hidden_regression_flagged_at_200(store) -> None:
    c = hidden_fixture(store, 200)
    hard = row(c, "embodiment=hard")
    assert hard.verdict == "regressed" and hard.delta.high < 0
    assert c.aggregate.delta >= 0  # the aggregate holds: 0.7+0.8+0.6 -> 0.9+0.8+0.4
    assert c.hidden_regressions == ["embodiment=hard"]
    assert row(c, "embodiment=easy").verdict == "improved"
    assert row(c, "embodiment=same").verdict == "no detectable change"
    assert c.verdict == "regression" and c.exit_code == 4
    assert "hidden regression" in comparison_sentence(c)
    jsonschema.validate(json.loads(comparison_json(c)), SCHEMA)


def test_hidden_regression_possible_not_established_at_10(store) -> None:
    c = hidden_fixture(store, 10)
    hard = row(c, "embodiment=hard")
    assert hard.verdict == "no detectable change" and hard.delta.low < 0 < hard.delta.high
    assert hard.possible_regression and c.possible_regressions == ["embodiment=hard"]
    # Prospective: 10 pairs cannot catch a 10-point drop; the statement names what would.
    assert hard.effect == 0.10 and hard.episodes_for_effect is not None
    assert hard.episodes_for_effect > 10
    assert hard.detectable_drop is None or hard.detectable_drop > 0.10
    assert "could miss a 10-point drop" in comparison_sentence(c)
    assert c.hidden_regressions == []


def test_holm_adjusts_across_slices(store) -> None:
    """Adjusted p: the discrete step-down by default, Holm's on request, never above Holm's."""
    from scipy.stats import binom

    from evalband.analysis._verdicts import HOLM
    from evalband.stats import holm

    c = hidden_fixture(store, 200)
    base, cand = (evalband.load_run(r, store) for r in (c.baseline, c.candidate))
    (by_holm,) = compare_many(base, [cand], procedure=HOLM)
    ps = [r.p_value for r in c.slice_rows]
    assert [r.p_holm for r in by_holm.slice_rows] == pytest.approx(list(holm(ps)))

    def attainable(m: int, t: float) -> float:  # the exact McNemar test's largest p <= t
        got = [min(1.0, 2 * binom.cdf(k, m, 0.5)) for k in range(m // 2 + 1)]
        return max([v for v in got if v <= t * (1 + 1e-9)], default=0.0)

    ms = [r.pairs["candidate_only"] + r.pairs["baseline_only"] for r in c.slice_rows]
    order = sorted(range(len(ps)), key=ps.__getitem__)
    running, expected = 0.0, {}
    for rank, i in enumerate(order):
        running = max(running, min(1.0, sum(attainable(ms[j], ps[i]) for j in order[rank:])))
        expected[i] = running
    got = [r.p_holm for r in c.slice_rows]
    assert got == pytest.approx([expected[i] for i in range(len(ps))], rel=1e-9, abs=1e-300)
    assert all(a <= h * (1 + 1e-12) for a, h in zip(got, holm(ps), strict=True))


def test_interventions_inflate_and_make_slice_inconclusive(store) -> None:
    n = 100
    panel = slice_panel(n)
    succ = [1] * 89 + [0] * 11
    # Candidate: raw 0.89, unaided 0.61 -> 28 assisted successes (seed 003's numbers).
    cand_assist = [True] * 28 + [False] * 72
    base_assist = [True] * 10 + [False] * 90
    outcomes = {"easy": succ, "same": succ, "hard": succ}
    base = record(store, panel, "v1", "ib", outcomes, {"easy": base_assist, "same": base_assist,
                                                      "hard": base_assist})
    cand = record(store, panel, "v2", "ic", outcomes, {"easy": cand_assist, "same": base_assist,
                                                      "hard": base_assist})
    c = evalband.compare(base, cand, store=store)
    easy = row(c, "embodiment=easy")
    assert easy.unaided_rate_candidate == pytest.approx(0.61)
    assert easy.inflated_candidate == pytest.approx(0.28)
    assert easy.verdict == "inconclusive" and "intervention rate rose" in easy.reasons[0]
    assert row(c, "embodiment=same").verdict == "no detectable change"
    assert c.verdict == "inconclusive" and c.exit_code == 5


def test_latency_over_budget_excludes_slice(store) -> None:
    panel = slice_panel(50, latency_budget_ms={"hard": 10.0})
    base_o, cand_o = pattern(50, 20, 0, 20)
    outcomes_b = {"easy": base_o, "same": base_o, "hard": base_o}
    outcomes_c = {"easy": cand_o, "same": cand_o, "hard": cand_o}
    base = record(store, panel, "v1", "lb", outcomes_b, latency=5.0)
    cand = record(store, panel, "v2", "lc", outcomes_c, latency=12.0)
    c = evalband.compare(base, cand, store=store)
    hard = row(c, "embodiment=hard")
    assert hard.excluded and hard.latency_budget_ms == 10.0
    assert "exceeds the 10 ms budget" in hard.reasons[0]
    assert hard.verdict == "inconclusive"
    easy = row(c, "embodiment=easy")
    assert easy.verdict == "improved" and not easy.excluded
    assert c.verdict == "inconclusive"


def test_a_budget_the_candidate_recorded_no_latency_for_is_not_passed(store) -> None:
    """A latency budget that cannot be checked makes the slice inconclusive and excluded."""
    panel = slice_panel(50, latency_budget_ms={"hard": 10.0})
    outcomes_b = {"easy": [1] * 25 + [0] * 25, "same": [1] * 30 + [0] * 20,
                  "hard": [1] * 25 + [0] * 25}
    outcomes_c = {"easy": [1] * 45 + [0] * 5, "same": [1] * 30 + [0] * 20,
                  "hard": [1] * 45 + [0] * 5}
    base = record(store, panel, "v1", "nb", outcomes_b, latency=5.0)
    cand = record(store, panel, "v2", "nc", outcomes_c)  # no latency recorded
    timed = record(store, panel, "v3", "tc", outcomes_c, latency=8.0)
    c, checked = evalband.analysis.compare_many(
        evalband.load_run(base, store),
        [evalband.load_run(cand, store), evalband.load_run(timed, store)])
    easy, hard = row(c, "embodiment=easy"), row(c, "embodiment=hard")
    assert hard.latency_p95_candidate_ms is None and hard.excluded
    assert hard.reasons == ["the panel sets a 10 ms latency budget but the candidate recorded "
                            "no policy latency here: the budget cannot be checked; excluded "
                            "from the positive-delta count"]
    assert hard.verdict == "inconclusive" and easy.verdict == "improved" and not easy.excluded
    assert c.verdict == "inconclusive" and "cannot be checked" in comparison_sentence(c)
    assert row(checked, "embodiment=hard").verdict == "improved"
    assert checked.verdict == "improves"


def test_non_inferiority_margin(store) -> None:
    panel = slice_panel(200, non_inferiority_margin=0.10)
    base_o, cand_o = pattern(200, 150, 3, 2)
    o_b = {"easy": base_o, "same": base_o, "hard": base_o}
    o_c = {"easy": cand_o, "same": cand_o, "hard": cand_o}
    base, cand = record(store, panel, "v1", "nb", o_b), record(store, panel, "v2", "nc", o_c)
    c = evalband.compare(base, cand, store=store)
    easy = row(c, "embodiment=easy")
    assert easy.verdict == "non-inferior" and easy.delta.low > -0.10
    assert c.verdict == "no regression" and c.exit_code == 3


def test_panel_mismatch_refused_then_stated(store) -> None:
    a = record(store, slice_panel(10), "v1", "m1", {"easy": [1] * 10, "same": [1] * 10,
                                                    "hard": [0] * 10})
    b = record(store, slice_panel(12), "v2", "m2", {"easy": [1] * 12, "same": [0] * 12,
                                                    "hard": [0] * 12})
    with pytest.raises(PanelMismatchError):
        evalband.compare(a, b, store=store)
    c = evalband.compare(a, b, store=store, allow_panel_mismatch=True)
    assert c.panel_mismatch and c.notes[0].startswith("PANEL MISMATCH")


def test_unpaired_when_nothing_pairs(store) -> None:
    panel = slice_panel(10, factors={"embodiment": ["easy"]})
    a = record(store, panel, "v1", "u1", {"easy": [1] * 6 + [0] * 4})
    base = evalband.load_run(a, store)
    shifted = [r.__class__(**{**r.as_dict(), "episode": r.episode, "repeat": 1})
               for r in base.records]
    cand = base.__class__(**{**base.__dict__, "run_id": "u2", "records": shifted})
    c = compare_many(base, [cand])[0]
    only = c.slice_rows[0]
    assert only.pairing == "unpaired" and only.delta.method.startswith("miettinen-nurminen")
    assert any("unpaired" in n for n in c.notes)


def test_several_candidates_and_cli_exit_codes(store, capsys, tmp_path) -> None:
    hidden_fixture(store, 200)
    # a second candidate that plays the baseline's episodes again (the baseline itself, given
    # twice, is refused: its episodes would be matched with themselves)
    easy, same, hard = pattern(200, 140, 0, 40), pattern(200, 160, 0, 0), pattern(200, 80, 40, 0)
    record(store, slice_panel(200), "v3", "again200",
           {"easy": easy[0], "same": same[0], "hard": hard[0]})
    assert main(["compare", "base200", "cand200", "base200", "--store", str(store.path)]) == 2
    assert "base200 is given more than once" in capsys.readouterr().err
    md = tmp_path / "c.md"
    code = main(["compare", "base200", "cand200", "again200", "--store", str(store.path),
                 "--md", str(md), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 4 and out["verdict"] == "regression" and len(out["comparisons"]) == 2
    for comparison in out["comparisons"]:
        jsonschema.validate(comparison, SCHEMA)
    text = md.read_text()
    assert "Hidden regression" in text and "| embodiment=hard |" in text
    code = main(["compare", "base200", "cand200", "--store", str(store.path)])
    shown = capsys.readouterr().out
    assert code == 4 and "hidden regression" in shown and "slices first" in shown
    code = main(["compare", "base200", "nope", "--store", str(store.path)])
    assert code == 2 and "nope" in capsys.readouterr().err


def test_bundle_is_the_baseline_of_record(store, tmp_path) -> None:
    hidden_fixture(store, 10)
    bundle = tmp_path / "baseline-bundle"
    from evalband.store._bundle import export_bundle

    export_bundle(store, "base10", bundle)
    c = evalband.compare(bundle, "cand10", store=store)
    assert c.baseline == "base10" and row(c, "embodiment=hard").possible_regression


def test_primary_slices_decide_secondary_regressions_are_shown_as_such(store) -> None:
    from evalband.report._markdown import comparison_markdown

    n = 200
    scale = n // 10
    easy = pattern(n, 7 * scale, 0, 2 * scale)
    same = pattern(n, 8 * scale, 0, 0)
    hard = pattern(n, 4 * scale, 2 * scale, 0)
    panel = slice_panel(n, primary_slices=["embodiment=easy"])
    base = record(store, panel, "v1", "pb", {"easy": easy[0], "same": same[0], "hard": hard[0]})
    cand = record(store, panel, "v2", "pc", {"easy": easy[1], "same": same[1], "hard": hard[1]})
    c = evalband.compare(base, cand, store=store)
    hard_row = row(c, "embodiment=hard")
    assert hard_row.verdict == "regressed" and not hard_row.primary
    assert row(c, "embodiment=easy").primary
    assert c.verdict != "regression" and "secondary slice(s) regressed" in comparison_sentence(c)
    line = next(x for x in comparison_markdown([c]).splitlines()
                if x.startswith("| embodiment=hard |"))
    assert "secondary slice" in line
