"""Several scorers per episode: built-in and stored scorers, agreement, PPI on records."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from evalband.analysis._scorers import scorer_agreement, scorer_values, scorers_of
from evalband.episode import EpisodeRecord
from evalband.errors import InvalidInputError
from evalband.stats import interval


def record(i: int, outcome: str = "success", *, score: int | None = None,
           scorers: dict[str, float] | None = None, play: dict[str, int] | None = None,
           cell: str = "") -> EpisodeRecord:
    extra: dict[str, object] = {}
    if scorers:
        extra["scorers"] = {k: {"value": v, "source": "operator" if k == "human" else "vlm"}
                            for k, v in scorers.items()}
    if play:
        extra["session"] = {"play": play}
    return EpisodeRecord("r", "p", "f", cell, i, 0, i, outcome, outcome != "timeout",
                         outcome == "timeout", 5, score=score, extra=extra,
                         error="boom" if outcome == "error" else None)


def test_built_in_and_stored_scorers() -> None:
    rs = [record(0, "success", score=2, play={"suggestion": 1, "truth": 2},
                 scorers={"judge": 1}),
          record(1, "timeout", scorers={"human": 0}),
          record(2, "error")]
    assert scorer_values(rs, "success") == {("", 0, 0): 1.0, ("", 1, 0): 0.0}
    assert scorer_values(rs, "score") == {("", 0, 0): 2.0}
    assert scorer_values(rs, "suggestion") == {("", 0, 0): 1.0}
    assert scorer_values(rs, "truth") == {("", 0, 0): 2.0}
    assert scorer_values(rs, "human") == {("", 1, 0): 0.0}
    found = scorers_of(rs)
    assert found["judge"] == {"source": "vlm", "episodes": 1}
    assert found["success"] == {"source": "outcome", "episodes": 2}  # the error has none
    assert found["suggestion"]["source"] == "machine"


def test_agreement_reproduces_cohens_worked_example() -> None:
    # The 2 x 2 example of Wikipedia's "Cohen's kappa" article (50 proposals, readers A and
    # B): yes/yes 20, yes/no 5, no/yes 10, no/no 15; p_o = 0.7, p_e = 0.5, kappa = 0.4.
    cells = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    rs = [record(i, "success" if b else "failure", scorers={"human": a})
          for i, (a, b) in enumerate(cells)]
    a = scorer_agreement(rs, "human", "success", run_id="r")
    assert a.table == [[15, 10], [5, 20]]  # rows human 0/1, columns success 0/1
    assert a.kappa.estimate == pytest.approx(0.4)
    assert a.accuracy["estimate"] == pytest.approx(0.7)
    wilson = interval(35, 50)
    assert (a.accuracy["low"], a.accuracy["high"]) == pytest.approx((wilson.low, wilson.high))
    oracle = sm_kappa(np.array(a.table))
    assert a.kappa.se == pytest.approx(oracle["std_kappa"], rel=1e-9)
    assert a.kappa.low < 0.4 < a.kappa.high
    assert a.ppi is None and a.weighted is None
    assert a.as_dict()["levels"] == [0, 1]


def test_ordinal_scorers_get_a_weighted_kappa() -> None:
    rs = [record(i, score=i % 3, play={"suggestion": (i % 3) if i % 5 else 0})
          for i in range(30)]
    a = scorer_agreement(rs, "score", "suggestion")
    assert a.levels == [0.0, 1.0, 2.0] and a.weighted is not None
    oracle = sm_kappa(np.array(a.table), wt="quadratic")
    assert a.weighted.estimate == pytest.approx(oracle["kappa"])


def test_ppi_when_the_trusted_scorer_judged_a_subset() -> None:
    rng = np.random.default_rng(4)
    rs = []
    for i in range(400):
        ok = bool(rng.random() < 0.6)
        human = {"human": float(ok if rng.random() < 0.9 else not ok)} if i % 5 == 0 else None
        rs.append(record(i, "success" if ok else "failure", scorers=human))
    a = scorer_agreement(rs, "human", "success")
    assert a.n == 80 and a.only_second == 320 and a.ppi is not None
    assert a.ppi.method == "mover" and a.ppi.n == 80 and a.ppi.n_unlabelled == 320
    assert a.ppi.high - a.ppi.low < a.ppi.classical_high - a.ppi.classical_low
    assert any("chosen at random" in n for n in a.notes)


@pytest.mark.parametrize("first, second, match", [
    ("human", "human", "two different"),
    ("human", "nope", "scorers: human, progress, success"),
    ("human", "progress", "whole numbers"),
])
def test_bad_requests_say_what_was_expected(first: str, second: str, match: str) -> None:
    rs = [record(0, scorers={"human": 1, "progress": 0.5}), record(1, "failure")]
    with pytest.raises(InvalidInputError, match=match):
        scorer_agreement(rs, first, second)


def test_no_shared_episode_is_refused() -> None:
    rs = [record(0, "error", scorers={"human": 1}), record(1, "failure")]
    with pytest.raises(InvalidInputError, match="judged by both"):
        scorer_agreement(rs, "human", "success")


def test_repeated_conditions_are_named_in_a_note() -> None:
    rs = [EpisodeRecord("r", "p", "f", "", i // 2, i % 2, i, "success", True, False, 5,
                        extra={"scorers": {"human": {"value": 1, "source": "op"}}})
          for i in range(4)]
    assert any("repeat" in n for n in scorer_agreement(rs, "human", "success").notes)
    single = [record(i, scorers={"human": 1}) for i in range(4)]
    assert not any("repeat" in n for n in scorer_agreement(single, "human", "success").notes)
