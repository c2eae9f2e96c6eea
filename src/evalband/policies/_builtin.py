"""Generic built-in policies for smoke tests of a panel's plumbing.

``random`` (:class:`RandomPolicy`) samples the env's action space, seeded per episode by the
context, so two runs of it on one panel play the same actions; ``zero_action`` commands 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RandomPolicy", "zero_action"]


def zero_action(obs: Any) -> np.ndarray:
    """Always command zero (a do-nothing policy); handles one observation or a batch.

    A dict or tuple observation (dm_control's, goal-conditioned envs') is one observation.

    >>> zero_action(np.zeros(2)).tolist(), zero_action({"x": np.zeros(3)}).tolist()
    ([0.0], [0.0])
    """
    if isinstance(obs, dict | tuple):
        return np.zeros(1)
    arr = np.asarray(obs, dtype=float)
    return np.zeros((arr.shape[0], 1)) if arr.ndim > 1 else np.zeros(1)


zero_action.batched = True  # type: ignore[attr-defined]


class RandomPolicy:
    """Uniform random actions from the env's ``action_space`` (the built-in ``random``).

    Each episode's draws are seeded by its context (:meth:`EpisodeContext.rng`'s seed): the
    same episode gets the same actions in every run, backend and batch size. A class, so a
    lockstep run makes one per slot.

    >>> import gymnasium
    >>> from evalband.policies import EpisodeContext
    >>> space = gymnasium.spaces.Box(-1.0, 1.0, (2,))
    >>> policy = RandomPolicy()
    >>> policy.reset(EpisodeContext("r", "random", "", {}, 0, 0, 1, seed=5, action_space=space))
    >>> first = policy.act(None)
    >>> policy.reset(EpisodeContext("r", "random", "", {}, 0, 0, 1, seed=5, action_space=space))
    >>> bool((policy.act(None) == first).all()), first.shape
    (True, (2,))
    """

    name = "random"

    def __init__(self) -> None:
        self._space: Any = None

    def reset(self, context: Any) -> None:
        """Take the episode's action space (a copy) and seed it from the context."""
        import copy

        from evalband.errors import EvalbandError

        space = getattr(context, "action_space", None)
        if space is None or not callable(getattr(space, "sample", None)):
            raise EvalbandError("policy random needs the env's action_space (a Gymnasium "
                              "space); this env has none: use another policy")
        self._space = copy.deepcopy(space)
        self._space.seed(int(context.seed))

    def act(self, obs: Any) -> Any:
        """One uniform draw from the action space."""
        if self._space is None:
            from evalband.errors import EvalbandError

            raise EvalbandError("policy random: act() before reset(context)")
        return self._space.sample()
