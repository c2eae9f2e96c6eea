"""One uniform handle on any policy: lifecycle, per-slot state and batched calls.

:class:`PolicyRuntime` wraps what the user gave (a plain callable, a :class:`~evalband.
policies._contract.Policy`, a stateless batched policy, a per-slot
:class:`~evalband.policies._contract.SlotPolicy` or a factory) so the runner, the lockstep
loop and ``evalband serve`` speak to every kind the same way: ``setup()``, ``reset(context)``,
``act(obs, slot)``, ``act_batch(observations, slots)`` and ``close()``.
"""

from __future__ import annotations

import inspect
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evalband.policies._contract import EpisodeContext

__all__ = ["PolicyRuntime", "as_runtime", "policy_label", "stack_observations",
           "unstack_actions"]


def stack_observations(observations: Sequence[Any]) -> Any:
    """Stack observations along a new first axis; dict observations are stacked per key.

    >>> stack_observations([np.zeros(2), np.ones(2)]).shape
    (2, 2)
    >>> batch = stack_observations([{"a": np.zeros(3), "b": 1.0}, {"a": np.ones(3), "b": 2.0}])
    >>> batch["a"].shape, batch["b"].tolist()
    ((2, 3), [1.0, 2.0])
    """
    first = observations[0]
    if isinstance(first, dict):
        return {key: stack_observations([o[key] for o in observations]) for key in first}
    return np.stack([np.asarray(o) for o in observations])


def unstack_actions(actions: Any, rows: int) -> list[Any]:
    """Split batched actions into ``rows`` per-episode actions (dicts split per key).

    Raises:
        ValueError: the actions do not have ``rows`` rows.

    >>> [a.tolist() for a in unstack_actions(np.arange(4).reshape(2, 2), 2)]
    [[0, 1], [2, 3]]
    >>> unstack_actions({"x": np.arange(2)}, 2)[1]["x"].tolist()
    1
    """
    if isinstance(actions, dict):
        parts = {key: unstack_actions(value, rows) for key, value in actions.items()}
        return [{key: part[i] for key, part in parts.items()} for i in range(rows)]
    if len(actions) != rows:
        raise ValueError(f"batched call returned {len(actions)} actions for {rows} observations")
    return [actions[i] for i in range(rows)]


def _positional_params(fn: Any) -> int:
    """How many positional parameters ``fn`` takes (bound ``self`` excluded); -1 if unknown."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return -1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 99
    return sum(1 for p in params if p.kind in kinds)


def policy_label(policy: Any) -> str:
    """The name a run records for a policy object: its ``name`` attribute or ``module:qualname``.

    >>> policy_label(policy_label)
    'evalband.policies._runtime:policy_label'
    """
    name = getattr(policy, "name", None)
    if isinstance(name, str) and name:
        return name
    target = policy if isinstance(policy, type | types.FunctionType) else type(policy)
    return f"{target.__module__}:{target.__qualname__}"


def _is_plain_function(obj: Any) -> bool:
    import functools

    if isinstance(obj, functools.partial):
        return _is_plain_function(obj.func)
    return isinstance(obj, types.FunctionType | types.BuiltinFunctionType | types.MethodType)


class PolicyRuntime:
    """The runner's handle on one policy (see the module docstring).

    Attributes:
        policy: what was wrapped (for a factory: the factory).
        kind: ``"slots"`` (per-slot ``act_batch``), ``"factory"``, ``"batched"`` (stateless
            batched), ``"stateful"`` (has ``reset``, no batching declared), ``"object"`` (an
            object with no declaration) or ``"function"`` (a plain function).
        setup_s: seconds ``setup()`` took (``None`` before it ran).

    >>> rt = as_runtime(lambda obs: 2 * obs)
    >>> rt.kind, rt.act(np.ones(1)).tolist(), rt.batch_refusal("x") is None
    ('function', [2.0], True)
    """

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.setup_s: float | None = None
        self._instances: dict[int, Any] = {}
        act_batch = getattr(policy, "act_batch", None)
        self._stateless: bool = getattr(policy, "stateless", False) is True
        if isinstance(policy, type) or getattr(policy, "policy_factory", False) is True:
            self.kind = "factory"
        elif callable(act_batch) and _positional_params(act_batch) >= 2:
            self.kind = "slots"
        elif callable(act_batch) or getattr(policy, "batched", False) is True:
            self.kind = "batched"
        elif callable(getattr(policy, "reset", None)):
            self.kind = "stateful"
        elif _is_plain_function(policy):
            self.kind = "function"
        else:
            self.kind = "object"

    # -- lifecycle ---------------------------------------------------------------------

    def _instance(self, slot: int) -> Any:
        """The policy playing ``slot``: the wrapped one, or the factory's instance for it."""
        if self.kind != "factory":
            return self.policy
        if slot not in self._instances:
            made = self.policy()
            setup = getattr(made, "setup", None)
            if callable(setup):
                setup()
            self._instances[slot] = made
        return self._instances[slot]

    @property
    def has_setup(self) -> bool:
        """Whether the policy declares a ``setup()`` (a factory counts: it builds instances)."""
        return self.kind == "factory" or callable(getattr(self.policy, "setup", None))

    def setup(self) -> float:
        """Run the policy's ``setup()`` once (a factory: build slot 0's); return its seconds."""
        if self.setup_s is None:
            t0 = time.perf_counter()
            if self.kind == "factory":
                self._instance(0)
            else:
                setup = getattr(self.policy, "setup", None)
                if callable(setup):
                    setup()
            self.setup_s = time.perf_counter() - t0
        return self.setup_s

    def close(self) -> None:
        """Call ``close()`` on the policy (or every factory instance) that has one."""
        targets = list(self._instances.values()) if self.kind == "factory" else [self.policy]
        self._instances.clear()
        for target in targets:
            close = getattr(target, "close", None)
            if callable(close):
                close()

    def reset(self, context: EpisodeContext) -> None:
        """Start an episode in ``context.slot`` (a no-op for policies without ``reset``)."""
        reset = getattr(self._instance(context.slot), "reset", None)
        if callable(reset):
            reset(context)

    def resets(self, slot: int = 0) -> bool:
        """Whether the policy playing ``slot`` has a ``reset``.

        Without one :meth:`reset` is a no-op, and the runner does not build the episode's
        context for it.

        >>> as_runtime(lambda obs: obs).resets()
        False
        """
        return callable(getattr(self._instance(slot), "reset", None))

    def episode_info(self, slot: int = 0) -> dict[str, Any]:
        """What the policy adds to an episode's record ``extra`` (its ``episode_info(slot)``).

        A remote policy reports the server's own compute time here, apart from the
        round trip the runner measures as latency.
        """
        target = self._instances.get(slot) if self.kind == "factory" else self.policy
        info = getattr(target, "episode_info", None)
        if not callable(info):
            return {}
        out = info(slot) if self.kind == "slots" else info()
        return dict(out) if out else {}

    # -- acting --------------------------------------------------------------------------

    def act(self, obs: Any, slot: int = 0) -> Any:
        """The action for one observation of the episode in ``slot``."""
        if self.kind == "slots":
            return unstack_actions(self.policy.act_batch(stack_observations([obs]), [slot]), 1)[0]
        target = self._instance(slot)
        act = getattr(target, "act", None)
        return act(obs) if callable(act) else target(obs)

    def actor(self, slot: int = 0) -> Callable[[Any], Any]:
        """:meth:`act` for ``slot`` as one callable, looked up once.

        The runner calls it every step of an episode.

        >>> as_runtime(lambda obs: obs + 1).actor()(1)
        2
        """
        if self.kind == "slots":
            return lambda obs: self.act(obs, slot)
        target = self._instance(slot)
        act = getattr(target, "act", None)
        return act if callable(act) else target  # type: ignore[no-any-return]

    @property
    def batches(self) -> bool:
        """Whether :meth:`act_batch` makes one call for many observations."""
        return self.kind in ("slots", "batched")

    def act_batch(self, observations: Sequence[Any], slots: Sequence[int]) -> list[Any]:
        """One action per observation (row ``i`` plays in ``slots[i]``), batched when declared.

        Raises:
            ValueError: the batched call returned the wrong number of actions.
        """
        n = len(observations)
        if self.kind == "slots":
            out = self.policy.act_batch(stack_observations(observations), list(slots))
            return unstack_actions(out, n)
        if self.kind == "batched":
            act_batch = getattr(self.policy, "act_batch", None)
            call = act_batch if callable(act_batch) else self.policy
            return unstack_actions(call(stack_observations(observations)), n)
        return [self.act(obs, slot) for obs, slot in zip(observations, slots, strict=True)]

    def batch_refusal(self, label: str) -> str | None:
        """Why this policy cannot play episodes in lockstep, or ``None`` when it can.

        >>> class Chunky:
        ...     def reset(self, context): ...
        ...     def act(self, obs): ...
        >>> "per-slot" in as_runtime(Chunky()).batch_refusal("chunky")
        True
        """
        if self.kind in ("slots", "factory", "batched", "function") or self._stateless:
            return None
        what = "keeps state across steps (it has reset())" if self.kind == "stateful" else (
            "is an object that may keep state across steps")
        return (
            f"policy {label!r} {what} but declares neither per-slot state nor stateless "
            "batching, so `batch_size` > 1 would mix the state of interleaved episodes; give "
            "it act_batch(obs_batch, slots), make it a factory (a class, one instance per "
            "slot), set stateless = True, or drop `batch_size` (see docs/extending.md, Policies)"
        )


def as_runtime(policy: Any) -> PolicyRuntime:
    """``policy`` wrapped in a :class:`PolicyRuntime` (a runtime is returned as is).

    >>> as_runtime(as_runtime(print)).kind
    'function'
    """
    return policy if isinstance(policy, PolicyRuntime) else PolicyRuntime(policy)
