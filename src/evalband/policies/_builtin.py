"""Generic built-in policies for smoke tests of a panel's plumbing."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["zero_action"]


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
