"""The reaching lab's fixed feedback controllers (saturated PD laws), vectorised.

Reaching-lab seed (``002_4e7e9c5b524a571b``, "Specify the simulated robot and
controllers"): both controllers observe ``x_measured = x + eps`` and the exact velocity and
command

    u = clip(-2 x_measured - k_d v, -1, 1)

with ``k_d = 0.2`` 1/s for the baseline and ``k_d = 1.8`` 1/s for the damped controller. The
seed's behaviour-cloning exercise uses ``clip(-2x - 1.8v, -1, 1)`` as its expert, which is
the damped law: :func:`expert` is an alias of :func:`damped`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband.errors import InvalidInputError

__all__ = [
    "POSITION_GAIN",
    "BASELINE_DAMPING",
    "DAMPED_DAMPING",
    "COMMAND_LIMIT",
    "saturated_pd",
    "baseline",
    "damped",
    "expert",
]

POSITION_GAIN = 2.0
"""Position gain of both lab controllers (1/s^2)."""
BASELINE_DAMPING = 0.2
"""Velocity gain k_d of the baseline controller (1/s)."""
DAMPED_DAMPING = 1.8
"""Velocity gain k_d of the damped controller (1/s)."""
COMMAND_LIMIT = 1.0
"""Commands saturate at +-1 m/s^2."""


def saturated_pd(obs: ArrayLike, damping: float) -> NDArray[np.float64]:
    """``u = clip(-2 x - k_d v, -1, 1)`` for one observation or a batch.

    The reaching lab's feedback law (seed ``002_4e7e9c5b524a571b``, "Specify the simulated
    robot and controllers"), evaluated in the seed program's operation order.

    Args:
        obs: ``[x_measured, v]`` of shape ``(2,)``, or a batch of shape ``(B, 2)``.
        damping: velocity gain ``k_d`` (1/s).

    Returns:
        Commands of shape ``(1,)`` for one observation, ``(B, 1)`` for a batch.

    Raises:
        InvalidInputError: ``obs`` is not shaped ``(2,)`` or ``(B, 2)``.

    >>> saturated_pd([-0.5, 0.1], 0.2).tolist()  # the seed's hand-worked step
    [0.98]
    """
    arr = np.asarray(obs, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] != 2:
        raise InvalidInputError(
            f"reach1d observations must have shape (2,) or (B, 2) = [x_measured, v], "
            f"got shape {arr.shape}"
        )
    command = np.clip(
        -POSITION_GAIN * arr[..., 0] - damping * arr[..., 1], -COMMAND_LIMIT, COMMAND_LIMIT
    )
    return command[..., np.newaxis]


def baseline(obs: ArrayLike) -> NDArray[np.float64]:
    """The lab's baseline controller, ``u = clip(-2 x - 0.2 v, -1, 1)``.

    Reaching-lab seed, "Specify the simulated robot and controllers" (k_d = 0.2 1/s).

    Args:
        obs: ``[x_measured, v]`` of shape ``(2,)`` or a batch ``(B, 2)``.

    Returns:
        Commands of shape ``(1,)`` or ``(B, 1)``.

    >>> baseline([[-0.5, 0.1], [2.0, 0.0]]).tolist()
    [[0.98], [-1.0]]
    """
    return saturated_pd(obs, BASELINE_DAMPING)


def damped(obs: ArrayLike) -> NDArray[np.float64]:
    """The lab's damped controller, ``u = clip(-2 x - 1.8 v, -1, 1)``.

    Reaching-lab seed, "Specify the simulated robot and controllers" (k_d = 1.8 1/s); also
    the expert of the seed's behaviour-cloning exercise.

    Args:
        obs: ``[x_measured, v]`` of shape ``(2,)`` or a batch ``(B, 2)``.

    Returns:
        Commands of shape ``(1,)`` or ``(B, 1)``.

    >>> damped([-0.5, 0.1]).tolist()
    [0.82]
    """
    return saturated_pd(obs, DAMPED_DAMPING)


expert = damped
"""The BC exercise's expert ``clip(-2x - 1.8v, -1, 1)``: the damped controller."""

# Both controllers act on a whole batch (B, 2) at once: the runner may play a panel's
# episodes in lockstep through ``Reach1DEnv.batch_rollout``.
baseline.batched = True  # type: ignore[attr-defined]
damped.batched = True  # type: ignore[attr-defined]
