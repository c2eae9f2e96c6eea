"""The policy contract: an episode lifecycle around ``act``.

A policy is whatever the runner can ask for an action. The smallest one is a plain callable
``obs -> action`` (still fine: it is wrapped). A policy with state across steps (an action-chunk
queue, a recurrent memory, a random generator) implements :class:`Policy`: the runner calls
``reset(context)`` at the start of every episode with an :class:`EpisodeContext` (which run,
cell, slices, episode, repeat, condition seed, a per-episode RNG seed, the panel's task
instruction and the lockstep slot), then ``act(obs)`` every step. Optional ``setup()`` and
``close()`` run once per process, outside every timed region (model build, warm-up, connecting
to a server); the warm-up time goes to the run manifest, not to the first episode's latency.

Batched inference (``evalband run --batch N``) plays N episodes in lockstep. A policy takes
part in one of three declared ways:

* **stateless batching**: ``act_batch(obs_batch)`` (one argument) or ``batched = True`` on a
  callable that accepts a batch: rows are independent, nothing is kept between steps;
* **per-slot state** (:class:`SlotPolicy`): ``act_batch(obs_batch, slots)``, where
  ``slots[i]`` is the lockstep slot of row ``i``; ``reset(context)`` says which slot a new
  episode starts in (``context.slot``), so the policy keeps one state per slot;
* **a factory**: a class (or a callable marked with :func:`policy_factory`) that makes one
  policy instance per slot.

A policy that keeps state (it has ``reset``) or is an object that declares none of these is
refused under ``--batch``: one object serving interleaved episodes would mix their state.

>>> context = EpisodeContext(run_id="r", policy="p", cell="", slices={}, episode=0, repeat=0,
...                          condition_seed=7, seed=episode_seed(7))
>>> int(context.rng().integers(100)) == int(context.rng().integers(100))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from evalband.episode import TASK_OPTION_KEYS

__all__ = [
    "BatchPolicy",
    "EpisodeContext",
    "Policy",
    "SlotPolicy",
    "TASK_OPTION_KEYS",
    "episode_seed",
    "policy_factory",
]


_POLICY_STREAM = 0x706F6C  # "pol": the policy's child stream of an episode's condition seed


def episode_seed(condition_seed: int) -> int:
    """The per-episode RNG seed a policy gets: a child stream of the condition seed.

    Derived with :class:`numpy.random.SeedSequence` (the condition seed as entropy, a fixed
    spawn key for the policy stream), so it is independent of the env's own stream yet the
    same for every policy, backend, worker count and batch size: two policies on one panel draw
    common random numbers, and a run re-plays exactly.

    >>> episode_seed(1) == episode_seed(1), episode_seed(1) != episode_seed(2)
    (True, True)
    >>> 0 <= episode_seed(5) < 2**63
    True
    """
    state = np.random.SeedSequence(int(condition_seed), spawn_key=(_POLICY_STREAM,))
    low, high = (int(v) for v in state.generate_state(2, np.uint32))
    return (high & 0x7FFFFFFF) << 32 | low


@dataclass(frozen=True)
class EpisodeContext:
    """What a policy is told at the start of an episode (``reset(context)``).

    Attributes:
        run_id: the run.
        policy: the policy's name as recorded in the run.
        cell: the panel cell key (e.g. ``"start=held_out"``).
        slices: factor -> level of the cell.
        episode: index of the episode within its cell.
        repeat: repeat index (the same condition again).
        condition_seed: the seed the env was reset with.
        seed: a per-episode RNG seed for the policy (:func:`episode_seed`); use :meth:`rng`.
        task: the task instruction from the panel (a cell's option ``instruction`` or
            ``prompt``, which the env does not get), or ``None``.
        slot: the lockstep slot the episode plays in (``0`` one episode at a time).
        options: the cell's options (the env's reset options plus the instruction).
        action_space: the env's ``action_space`` (a Gymnasium space), ``None`` when the env
            has none or the policy is served remotely (not in :meth:`as_dict`).
        observation_space: the env's ``observation_space``, likewise.
    """

    run_id: str
    policy: str
    cell: str
    slices: Mapping[str, str]
    episode: int
    repeat: int
    condition_seed: int
    seed: int
    task: str | None = None
    slot: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    action_space: Any = field(default=None, compare=False, repr=False)
    observation_space: Any = field(default=None, compare=False, repr=False)

    def rng(self) -> np.random.Generator:
        """A fresh generator seeded with :attr:`seed` (same episode, same draws).

        >>> c = EpisodeContext("r", "p", "", {}, 0, 0, 1, seed=3)
        >>> float(c.rng().random()) == float(np.random.default_rng(3).random())
        True
        """
        return np.random.default_rng(self.seed)

    def as_dict(self) -> dict[str, Any]:
        """The context as plain JSON-able data (what a remote policy server receives).

        >>> EpisodeContext("r", "p", "", {}, 2, 0, 1, seed=3).as_dict()["episode"]
        2
        """
        return {
            "run_id": self.run_id, "policy": self.policy, "cell": self.cell,
            "slices": dict(self.slices), "episode": self.episode, "repeat": self.repeat,
            "condition_seed": self.condition_seed, "seed": self.seed, "task": self.task,
            "slot": self.slot,
        }


@runtime_checkable
class Policy(Protocol):
    """A policy with an episode lifecycle (``setup()``/``close()`` are optional extras)."""

    def reset(self, context: EpisodeContext) -> None:
        """Start a new episode: clear per-episode state, seed randomness from ``context``."""
        ...

    def act(self, obs: Any) -> Any:
        """The action for one observation (an array, or a dict of arrays)."""
        ...


@runtime_checkable
class BatchPolicy(Protocol):
    """A stateless batched policy: row ``i`` of the actions is the action for ``obs[i]``.

    A dict observation arrives stacked per key (a dict of arrays with a leading batch axis).
    """

    def act_batch(self, obs_batch: Any) -> Any:
        """Actions ``(B, ...)`` for observations ``(B, ...)``."""
        ...


@runtime_checkable
class SlotPolicy(Protocol):
    """A batched policy with per-slot state: ``reset(context)`` starts ``context.slot``."""

    def reset(self, context: EpisodeContext) -> None:
        """Start a new episode in slot ``context.slot`` (the other slots keep their state)."""
        ...

    def act_batch(self, obs_batch: Any, slots: Sequence[int]) -> Any:
        """Actions for stacked observations; row ``i`` belongs to slot ``slots[i]``."""
        ...


F = TypeVar("F", bound=Callable[..., Any])


def policy_factory(make: F) -> F:
    """Mark a zero-argument callable as a policy factory: one policy per lockstep slot.

    A class given as the policy is a factory already.

    >>> @policy_factory
    ... def make():
    ...     return lambda obs: obs
    >>> make.policy_factory
    True
    """
    make.policy_factory = True  # type: ignore[attr-defined]
    return make
