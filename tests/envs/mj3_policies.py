"""Test policies imported by evalband inside .venv-mujoco3 (numpy only: no pytest there)."""

from __future__ import annotations

from typing import Any

import numpy as np


def fetch_noisy(obs: dict[str, Any]) -> np.ndarray:
    """Fetch's P-controller plus large uniform noise, seeded by the observation.

    Uniform random actions never come within Fetch's 5 cm of the goal in 50 steps; around the
    P-controller's they pass through it and often wander out again. Reproducible on any backend.
    """
    seed = np.frombuffer(np.asarray(obs["observation"], dtype=np.float64).tobytes(), np.uint32)
    noise = np.random.default_rng(seed.tolist()).uniform(-1.0, 1.0, 4)
    goal = np.asarray(obs["desired_goal"], dtype=np.float64)
    move = 5.0 * (goal - np.asarray(obs["achieved_goal"], dtype=np.float64))
    return np.clip(np.concatenate([move, [0.0]]) + 1.5 * noise, -1.0, 1.0)
