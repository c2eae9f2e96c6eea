"""Meta-World's own scripted policies as evalband policies (positive controls).

Meta-World 3.x ships one scripted policy per task (``metaworld.policies``): a stateless
function of the goal-observable observation (hand, object and goal positions) that solves
the task. :func:`metaworld_reach` and :func:`metaworld_push` call those of ``reach-v3`` and
``push-v3``; :func:`metaworld_policy` gives the one of any task. Needs the
``envs-metaworld`` extra.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["metaworld_policy", "metaworld_push", "metaworld_reach"]

Array = NDArray[np.float64]


@functools.cache
def metaworld_policy(task: str) -> Callable[[Any], Array]:
    """Meta-World's scripted policy for ``task`` (``"push-v3"`` -> ``SawyerPushV3Policy``).

    Needs the ``envs-metaworld`` extra: ``metaworld_policy("reach-v3")(obs)`` is the
    scripted action for ``obs`` (exercised in the MuJoCo 3 venv by ``tests/envs/test_mujoco3.py``).
    """
    import metaworld.policies as scripted

    name = "Sawyer" + "".join(part.capitalize() for part in task.split("-")) + "Policy"
    cls = getattr(scripted, name, None)
    if cls is None:
        raise ValueError(f"Meta-World has no scripted policy {name} for task {task!r}")
    instance = cls()

    def act(obs: Any) -> Array:
        return np.asarray(instance.get_action(np.asarray(obs, dtype=np.float64)), np.float64)

    return act


def metaworld_reach(obs: Any) -> Array:
    """``reach-v3``: Meta-World's ``SawyerReachV3Policy`` (moves the hand to the goal)."""
    return metaworld_policy("reach-v3")(obs)


def metaworld_push(obs: Any) -> Array:
    """``push-v3``: Meta-World's ``SawyerPushV3Policy`` (grasps the puck, carries it to goal)."""
    return metaworld_policy("push-v3")(obs)
