"""Success rules and per-episode metrics (Judge) and group commit of episodes."""

from __future__ import annotations

from typing import Any

import pytest

from evalband.episode import Outcome
from evalband.panel import SuccessRule
from evalband.run._judge import Judge
from evalband.run._runner import GroupCommit
from testkit import coin_panel


def _play(rule: SuccessRule, steps: list[tuple[float, bool, bool, dict[str, Any]]],
          budget: int = 10) -> tuple[Any, Judge]:
    judge = Judge(rule, budget, metric_keys=("collisions",))
    for reward, terminated, truncated, info in steps:
        end = judge.step(reward, terminated, truncated, info)
        if end is not None:
            return end, judge
    return None, judge


HIT, MISS = {"success": True, "collisions": 2}, {"success": False, "collisions": 1}


@pytest.mark.parametrize(
    ("rule", "end", "steps"),
    [
        # success at step 2, gone at the end: any_step ends there, final_step does not count it
        ({"rule": "any_step", "key": "success"}, (Outcome.SUCCESS, True, False), 2),
        ({"rule": "final_step", "key": "success"}, (Outcome.TIMEOUT, False, True), 3),
        # terminal: the env never terminates, so a timeout whatever info says
        ({"rule": "terminal", "key": "success"}, (Outcome.TIMEOUT, False, True), 3),
        ({"rule": "return", "threshold": 1.5}, (Outcome.SUCCESS, True, True), 3),
        ({"rule": "return", "threshold": 3.5}, (Outcome.TIMEOUT, False, True), 3),
    ],
)
def test_rules_decide_as_declared(rule: dict[str, Any], end: Any, steps: int) -> None:
    got, judge = _play(SuccessRule(**rule), [(0.5, False, False, MISS), (1.0, False, False, HIT),
                                              (0.5, False, False, MISS)], budget=3)
    assert got == end and judge.steps == steps


def test_termination_without_success_is_a_failure_and_metrics_are_kept() -> None:
    rule = SuccessRule(rule="final_step", key="d", threshold=-0.1)
    got, judge = _play(rule, [(-1.0, False, False, {"d": -0.5}),
                              (-2.0, True, False, {"d": -0.3, "collisions": 4})])
    assert got == (Outcome.FAILURE, True, False)
    assert judge.metrics() == {"return": -3.0, "reward_max": -1.0, "reward_final": -2.0,
                               "collisions": 4.0}
    got, _ = _play(rule, [(0.0, True, False, {"d": -0.05})])
    assert got == (Outcome.SUCCESS, True, False)


def test_return_rule_needs_a_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        SuccessRule(rule="return")


def test_panel_success_rule_enters_the_fingerprint_only_when_set() -> None:
    plain = coin_panel()
    assert coin_panel(success="terminal").fingerprint == plain.fingerprint
    assert coin_panel(success="any_step").fingerprint != plain.fingerprint


class _Store:
    def __init__(self) -> None:
        self.commits: list[list[Any]] = []

    def add_episode(self, record: Any) -> None:
        self.commits.append([record])

    def add_episodes(self, records: Any) -> None:
        self.commits.append(list(records))


class _Named(str):
    """A stand-in episode record: its name, and no clips (``media``) or step data (``extra``)
    to sync before a commit."""

    media = ()
    extra: dict[str, object] = {}  # noqa: RUF012 - read only


class _Clock:
    """The ``time`` module as GroupCommit sees it: a clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


def test_group_commit_groups_quick_episodes_and_commits_slow_ones_at_once(monkeypatch) -> None:
    # the gaps between episodes are set on a hand-moved clock, not slept: a loaded machine
    # can stall the test longer than any real window between two "quick" episodes
    import evalband.run._runner as runner

    clock = _Clock()
    monkeypatch.setattr(runner, "time", clock)
    store, seen = _Store(), []
    with GroupCommit(store, seen.append) as group:  # type: ignore[arg-type]
        group.add(_Named("a"))  # type: ignore[arg-type]
        assert store.commits == [["a"]] and seen == ["a"]  # the first one: at once
        for name in "bcd":
            clock.now += GroupCommit.WINDOW_S / 2
            group.add(_Named(name))  # type: ignore[arg-type]  # within the window: grouped
        assert store.commits == [["a"]] and seen == ["a"]  # not reported before the commit
        clock.now += GroupCommit.WINDOW_S * 1.2
        group.add(_Named("e"))  # type: ignore[arg-type]  # slow: the group first, then this one
        clock.now += GroupCommit.WINDOW_S / 2
        group.add(_Named("f"))  # type: ignore[arg-type]
    assert store.commits == [["a"], ["b", "c", "d"], ["e"], ["f"]]
    assert seen == list("abcdef")
