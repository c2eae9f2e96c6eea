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

from evalband._util.jit import compiled, use_compiled
from evalband.errors import InvalidInputError

__all__ = [
    "POSITION_GAIN",
    "BASELINE_DAMPING",
    "DAMPED_DAMPING",
    "COMMAND_LIMIT",
    "saturated_pd",
    "saturated_pd_rows",
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


def saturated_pd(obs: ArrayLike, damping: float, *, kernel: str = "auto") -> NDArray[np.float64]:
    """``u = clip(-2 x - k_d v, -1, 1)`` for one observation or a batch.

    The reaching lab's feedback law (seed ``002_4e7e9c5b524a571b``, "Specify the simulated
    robot and controllers"), evaluated in the seed program's operation order. A large
    batch runs in one compiled pass when numba is loaded in the process, or always with
    ``kernel="compiled"`` (:mod:`evalband._util.jit`; same numbers bit for bit, NaN kept as NaN
    like ``np.clip``).

    Args:
        obs: ``[x_measured, v]`` of shape ``(2,)``, or a batch of shape ``(B, 2)``.
        damping: velocity gain ``k_d`` (1/s).
        kernel: ``"auto"``, ``"numpy"`` or ``"compiled"`` (see :mod:`evalband._util.jit`).

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
    if arr.ndim == 2 and use_compiled(kernel, arr.shape[0]):
        command = np.empty(arr.shape[0], dtype=np.float64)
        compiled(saturated_pd_rows)(arr[:, 0], arr[:, 1], float(damping), command)
        return command[:, np.newaxis]
    # The seed's (-2 x) - (k_d v), then the saturation, in one output buffer (one
    # temporary): a batch of 20,000 rows costs ~40 us instead of ~190 us with fresh
    # temporaries for every operation.
    x, v = arr[..., 0], arr[..., 1]
    command = np.multiply(x, -POSITION_GAIN, out=np.empty(x.shape))  # an array, also 0-d
    command -= np.multiply(v, damping)
    np.clip(command, -COMMAND_LIMIT, COMMAND_LIMIT, out=command)
    return command[..., np.newaxis]


def saturated_pd_rows(
    x: NDArray[np.float64], v: NDArray[np.float64], damping: float, out: NDArray[np.float64]
) -> None:
    """The saturated PD law row by row into ``out``: :func:`saturated_pd`'s compiled kernel.

    ``(-2 x) - (k_d v)`` rounded as in the seed program, then held to ``[-1, 1]`` with
    two comparisons that leave NaN as NaN (as ``np.clip`` does).

    >>> out = np.empty(3)
    >>> saturated_pd_rows(np.array([-0.5, 2.0, np.nan]), np.array([0.1, 0.0, 0.0]), 0.2, out)
    >>> out.tolist()
    [0.98, -1.0, nan]
    """
    for i in range(x.shape[0]):
        command = -POSITION_GAIN * x[i] - damping * v[i]
        if command < -COMMAND_LIMIT:
            command = -COMMAND_LIMIT
        elif command > COMMAND_LIMIT:
            command = COMMAND_LIMIT
        out[i] = command


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
