"""Session plans: seeded, matched blocks; blind codes; the rubric; `session plan` input errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.session import Rubric, SessionPlan, plan_session
from evalband.session._plan import blind_codes

POLICIES = ["GN_s1000", "GN_s2000", "PT_fullLR"]


def _orders(plan: SessionPlan) -> list[tuple[tuple[str, int], ...]]:
    return [tuple((t.policy, t.attempt) for t in plan.block(s)) for s in range(1, plan.scenes + 1)]


def test_same_seed_same_schedule_and_codes() -> None:
    a = plan_session(POLICIES, scenes=6, attempts=2, seed=11, blind=True, session_id="a")
    b = plan_session(POLICIES, scenes=6, attempts=2, seed=11, blind=True, session_id="b")
    assert a.trials == b.trials and a.codes == b.codes


def test_each_block_holds_every_policy_attempt_once() -> None:
    plan = plan_session(POLICIES, scenes=5, attempts=3, seed=2, session_id="x")
    expected = sorted((p, a) for p in POLICIES for a in (1, 2, 3))
    assert plan.n_trials == 5 * 9
    for scene in range(1, 6):
        block = plan.block(scene)
        assert sorted((t.policy, t.attempt) for t in block) == expected
        assert [t.position for t in block] == list(range(9))
        # attempts count up in the order they are played within the block
        for policy in POLICIES:
            assert [t.attempt for t in block if t.policy == policy] == [1, 2, 3]
    assert [t.index for t in plan.trials] == list(range(plan.n_trials))
    assert [t.scene for t in plan.trials] == sorted(t.scene for t in plan.trials)


def test_orders_differ_across_blocks_and_seeds() -> None:
    plan = plan_session(POLICIES, scenes=8, attempts=2, seed=5, session_id="x")
    orders = [tuple(t.policy for t in plan.block(s)) for s in range(1, 9)]
    assert len(set(orders)) > 1
    # 6!/(2!^3) = 90 orders: over many seeds consecutive blocks rarely repeat an order
    repeats = total = 0
    for seed in range(60):
        o = [tuple(t.policy for t in blk) for blk in map(
            plan_session(POLICIES, scenes=4, attempts=2, seed=seed, session_id="x").block,
            range(1, 5))]
        repeats += sum(o[i] == o[i + 1] for i in range(3))
        total += 3
    assert repeats / total < 0.05
    other = plan_session(POLICIES, scenes=8, attempts=2, seed=6, session_id="x")
    assert _orders(other) != _orders(plan)


def test_block_order_is_uniform_over_seeds() -> None:
    # Independent check of the shuffle: which policy plays first in block 1 is uniform.
    firsts = Counter(
        plan_session(POLICIES, scenes=1, attempts=1, seed=s, session_id="x").trials[0].policy
        for s in range(600)
    )
    counts = [firsts[p] for p in POLICIES]
    assert stats.chisquare(counts).pvalue > 0.001


def test_block_order_uses_the_documented_stream() -> None:
    plan = plan_session(["A", "B", "C", "D"], scenes=3, attempts=1, seed=42, session_id="x")
    for scene in (1, 2, 3):
        perm = np.random.default_rng(np.random.SeedSequence([42, scene])).permutation(4)
        assert [t.policy for t in plan.block(scene)] == ["ABCD"[i] for i in perm]


def test_blind_codes_distinct_reproducible_and_uninformative() -> None:
    names = [f"policy_{i:02d}" for i in range(40)]
    codes = blind_codes(names, seed=3)
    assert len(set(codes.values())) == 40
    assert codes == blind_codes(names, seed=3)
    assert codes != blind_codes(names, seed=4)
    assert all(c.startswith("P-") and len(c) == 5 for c in codes.values())
    assert not any(n in c for n in names for c in codes.values())
    # the codes' sort order is not the policies' order
    assert sorted(codes.values()) != [codes[n] for n in names]
    plan = plan_session(POLICIES, scenes=2, attempts=1, seed=9, blind=True, session_id="x")
    assert all(t.code == plan.codes[t.policy] != t.policy for t in plan.trials)
    unblind = plan_session(POLICIES, scenes=2, attempts=1, seed=9, session_id="x")
    assert all(t.code == t.policy for t in unblind.trials)


def test_blind_codes_never_loop_on_short_names() -> None:
    codes = blind_codes(["P", "-", "P-", "2"], seed=0)
    assert len(set(codes.values())) == 4


def test_plan_round_trips_through_json() -> None:
    plan = plan_session(POLICIES, scenes=3, attempts=2, seed=1, blind=True,
                        positive_control="GN_s1000",
                        rubric=Rubric({0: "miss", 1: "touch", 2: "grip", 3: "held"}, 3),
                        session_id="rt")
    again = SessionPlan.from_dict(json.loads(json.dumps(plan.as_dict())))
    assert again == plan
    assert again.rubric.levels == {0: "miss", 1: "touch", 2: "grip", 3: "held"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policies": []}, "one or more"),
        ({"policies": ["A", "A"]}, "more than once: A"),
        ({"scenes": 0}, "`scenes` must be a whole number >= 1; got 0"),
        ({"attempts": 0}, "`attempts` must be a whole number >= 1; got 0"),
        ({"attempts": 1.5}, "`attempts` must be a whole number"),
        ({"seed": -1}, "non-negative"),
        ({"positive_control": "Z"}, "must be one of the session's policies"),
        ({"session_id": "has space"}, "session id"),
    ],
)
def test_plan_rejects_bad_input(kwargs: dict, match: str) -> None:
    args = {"policies": ["A", "B"], "scenes": 2, "attempts": 1, "seed": 0, **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        plan_session(args.pop("policies"), args.pop("scenes"), args.pop("attempts"),
                     args.pop("seed"), **args)


def test_rubric_defaults_and_success() -> None:
    r = Rubric()
    assert r.levels == {0: "never held", 1: "acquired but lost", 2: "held through the stress"}
    assert [r.is_success(s) for s in (0, 1, 2)] == [False, False, True]
    with pytest.raises(InvalidInputError, match="one of the rubric levels"):
        r.is_success(3)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("levels: {0: miss, 1: hit}\nsuccess_at: 2\n", "success_at must be one of the levels"),
        ("levels: {0: miss, high: hit}\nsuccess_at: 0\n", "integer from 0 to 9"),
        ("levels: {0: miss, 12: hit}\nsuccess_at: 12\n", "integer from 0 to 9"),
        ("levels: {0: miss, 1: ''}\nsuccess_at: 1\n", "non-empty text"),
        ("levels: {0: miss}\nsuccess_at: 0\n", "at least two levels"),
        ("levels: {0: miss, 1: hit}\nsuccess_at: 0\n", "lowest level"),
        ("levels: {0: miss, 1: hit}\nsucess_at: 1\n", "unknown rubric field"),
        ("success_at: 1\n", "needs 'levels'"),
        ("levels: [miss, hit]\n", "mapping"),
        ("levels: {0: miss\n", "not valid YAML"),
        ("levels: {0: miss, '0': again, 1: hit}\nsuccess_at: 1\n", "level 0 is given twice"),
        ("levels: {0: miss, 1: hit}\nsuccess_at: true\n", "integer from 0 to 9"),
    ],
)
def test_rubric_yaml_errors_name_the_file(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=match) as info:
        Rubric.from_yaml(path)
    assert str(path) in str(info.value)


def test_rubric_yaml_loads(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("levels:\n  0: missed\n  1: held\nsuccess_at: 1\n")
    r = Rubric.from_yaml(path)
    assert r.levels == {0: "missed", 1: "held"} and r.success_at == 1


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--attempts", "0"], "--attempts must be a whole number >= 1; got 0"),
        (["--positive-control", "Z"], "--positive-control must be one of the session's "
                                      "policies (A, B); got 'Z'"),
        (["--scenes", "0"], "--scenes must be"),
        (["--seed", "-1"], "--seed must be a non-negative integer"),
    ],
)
def test_cli_plan_bad_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    extra: list[str], match: str) -> None:
    db = str(tmp_path / "s.sqlite")
    args = ["session", "plan", "--policies", "A,B", "--scenes", "2", "--seed", "1",
            "--store", db, *extra]
    code, out, err = _cli(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and match in err and len(err.strip().splitlines()) == 1


def test_cli_plan_bad_rubric_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("levels: {0: miss, 1: hit}\nsuccess_at: 5\n")
    code, _, err = _cli(capsys, "session", "plan", "--policies", "A,B", "--scenes", "1",
                        "--seed", "1", "--rubric", str(rubric),
                        "--store", str(tmp_path / "s.sqlite"))
    assert code == 2 and "success_at must be one of the levels [0, 1]; got 5" in err


def test_cli_plan_json_and_duplicate_id(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    args = ["session", "plan", "--policies", ",".join(POLICIES), "--scenes", "4",
            "--attempts", "2", "--seed", "3", "--session-id", "g1", "--store", db]
    code, out, err = _cli(capsys, *args, "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["session_id"] == "g1" and view["n_trials"] == 24
    assert view["policies"] == POLICIES
    code, _, err = _cli(capsys, *args)
    assert code == 2 and "session 'g1' already exists" in err
