"""Meta-World tasks whose start is fixed by the condition seed (the ``envs-metaworld`` extra).

Meta-World 3.x's envs ignore ``reset(seed=...)`` (its docstring: "Ignored, use ``seed()``
instead"), and its ``Meta-World/MT1`` id picks one of 50 pre-sampled tasks from an RNG that
runs on from episode to episode: the same condition seed gives a different goal depending
on what ran before it, so serial and process runs would not play the same episodes.
:func:`make` builds one task's goal-observable env (the ``Meta-World/goal_observable`` class)
behind :class:`SeededReset`, which turns ``reset(seed=s)`` into what Meta-World's own
seeding does: ``env.seed(s)``, then a fresh object and goal position drawn from the task's
random reset space with that RNG (MT1's tasks are draws from the same space).

A panel names it with ``env: evalband.envs.metaworld:make`` and
``env_kwargs: {task: reach-v3}``; success is Meta-World's ``info["success"]`` at any step.
Source: Meta-World 3.1 (``metaworld/sawyer_xyz_env.py``, ``metaworld/env_dict.py``).
"""

from __future__ import annotations

from typing import Any

import gymnasium

from evalband.errors import EnvError

__all__ = ["SeededReset", "make"]


class SeededReset(gymnasium.Wrapper):
    """A Meta-World env whose ``reset(seed=s)`` draws the task's start from ``seed(s)``.

    Without a seed, the start is the next draw from the env's RNG (as Meta-World does).
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Seed Meta-World's RNG with ``seed``, draw a fresh start from it, reset."""
        base: Any = self.env.unwrapped
        if seed is not None:
            base.seed(int(seed))
        base._freeze_rand_vec = False  # draw the object and goal at every reset
        base.seeded_rand_vec = True  # ... from the env's own (seeded) RNG
        obs, info = self.env.reset()
        return obs, dict(info)


def make(task: str = "reach-v3", render_mode: str | None = None) -> gymnasium.Env:
    """Build Meta-World's goal-observable ``task`` (e.g. ``"reach-v3"``, ``"push-v3"``).

    Needs the ``envs-metaworld`` extra (Meta-World 3.1, which pins MuJoCo 3.3.0).

    An unknown task name raises :class:`~evalband.errors.EnvError` (the adapter is exercised
    in the MuJoCo 3 venv by ``tests/envs/test_mujoco3.py``).
    """
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE as tasks

    key = task if task.endswith("-goal-observable") else f"{task}-goal-observable"
    if key not in tasks:
        raise EnvError(
            f"Meta-World has no task {task!r}; use one of its v3 names, e.g. reach-v3, push-v3"
        )
    return SeededReset(tasks[key](render_mode=render_mode))
