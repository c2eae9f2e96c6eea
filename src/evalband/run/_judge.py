"""Judge an episode as it is played: the panel's success rule and the per-episode metrics.

The rules are :class:`evalband.panel.SuccessRule`'s (documented there). One :class:`Judge`
per episode; :meth:`Judge.step` is called after every ``env.step`` and
says when the episode ends and how. Every path
that plays episodes one step at a time (one at a time, lockstep) uses it, so their records
agree. :meth:`Judge.metrics` gives what is stored in the record's ``extra["metrics"]``: the
return (sum of rewards), the largest and the last reward, and the panel's declared numeric
info keys at the last step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalband.episode import Outcome

__all__ = ["Judge", "End", "DEFAULT_RULE", "Rule"]

End = tuple[Outcome, bool, bool]
"""``(outcome, terminated, truncated)`` of an ended episode."""


@dataclass(frozen=True)
class Rule:
    """A panel's success rule as workers get it (:class:`evalband.panel.SuccessRule`'s fields).

    Plain data, so a worker process that plays episodes imports no pydantic.

    >>> Rule().rule, Rule(rule="any_step", key="success").key
    ('terminal', 'success')
    """

    rule: str = "terminal"
    key: str = "is_success"
    threshold: float | None = None


DEFAULT_RULE = Rule()


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class Judge:
    """Tally one episode and decide its end by a success rule.

    Args:
        rule: the panel's success rule (a :class:`Rule` or a ``SuccessRule``).
        budget_steps: actions allowed.
        metric_keys: numeric info keys to keep (their value at the last step).

    >>> judge = Judge(Rule(rule="any_step", key="success"), budget_steps=3)
    >>> judge.step(0.0, False, False, {"success": False}) is None
    True
    >>> judge.step(1.0, False, False, {"success": True})
    (<Outcome.SUCCESS: 'success'>, True, False)
    >>> judge.metrics()
    {'return': 1.0, 'reward_max': 1.0, 'reward_final': 1.0}
    """

    __slots__ = ("rule", "budget_steps", "metric_keys", "steps", "_return", "_max", "_last",
                 "_info")

    def __init__(
        self, rule: Rule = DEFAULT_RULE, budget_steps: int = 1,
        metric_keys: Sequence[str] = (),
    ) -> None:
        self.rule = rule
        self.budget_steps = budget_steps
        self.metric_keys = tuple(metric_keys)
        self.steps = 0
        self._return = 0.0
        self._max = -math.inf
        self._last: float | None = None
        self._info: dict[str, Any] = {}

    def holds(self, info: dict[str, Any]) -> bool:
        """Whether ``info`` says success by the rule's key (and threshold).

        >>> Judge(Rule(key="d", threshold=-0.1)).holds({"d": -0.05})
        True
        """
        value = info.get(self.rule.key)
        if self.rule.threshold is None:
            if value is None:
                return False
            try:
                return bool(value)
            except ValueError:  # an array: success only if every entry says so
                return bool(all(value))
        number = _number(value)
        return number is not None and number >= self.rule.threshold

    def _terminal_outcome(self, info: dict[str, Any]) -> Outcome:
        declared = info.get("outcome")
        if declared in (Outcome.SUCCESS.value, Outcome.FAILURE.value):
            return Outcome(declared)
        return Outcome.SUCCESS if self.holds(info) else Outcome.FAILURE

    def step(
        self, reward: Any, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> End | None:
        """Count one step; ``(outcome, terminated, truncated)`` if the episode ends here."""
        self.steps += 1
        try:
            r = float(reward)
        except (TypeError, ValueError):
            r = math.nan
        if math.isfinite(r):
            self._return += r
            if r > self._max:
                self._max = r
            self._last = r
        self._info = info
        rule = self.rule.rule
        out_of_time = truncated or self.steps >= self.budget_steps
        if rule == "terminal":
            if terminated:
                return self._terminal_outcome(info), True, False
            return (Outcome.TIMEOUT, False, True) if out_of_time else None
        if rule == "any_step":
            if self.holds(info):
                return Outcome.SUCCESS, True, False
            if terminated:
                return Outcome.FAILURE, True, False
            return (Outcome.TIMEOUT, False, True) if out_of_time else None
        if not (terminated or out_of_time):
            return None
        if rule == "final_step":
            success = self.holds(info)
        else:  # "return"
            success = self._return >= float(self.rule.threshold or 0.0)
        if success:  # judged at the end: the env may also have been cut by the budget
            return Outcome.SUCCESS, True, not terminated
        return (Outcome.FAILURE, True, False) if terminated else (Outcome.TIMEOUT, False, True)

    def metrics(self) -> dict[str, float]:
        """Return, largest and last reward, and the declared info keys at the last step."""
        out: dict[str, float] = {}
        if self._last is not None:
            out = {"return": self._return, "reward_max": self._max, "reward_final": self._last}
        for key in self.metric_keys:
            number = _number(self._info.get(key))
            if number is not None:
                out[key] = number
        return out
