"""A tiny coin-flip environment: a stand-in robot for the docs' examples, demos and benchmarks.

Each episode's fate is fixed at reset by its condition seed: with probability ``p`` it
succeeds after ``length`` steps, with probability ``fail_p`` it fails there (task failure),
otherwise it keeps going until the budget truncates it. Registered as ``evalband/Coin-v0``
(:data:`COIN_ENV_ID`). The test suite's variant with slow steps and injected
simulator faults lives in the tests (``tests/testenvs.py``), not in the package.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from evalband.errors import InvalidParameterError

COIN_ENV_ID = "evalband/Coin-v0"
"""The coin-flip stand-in robot's Gymnasium id (registered by :mod:`evalband.envs`)."""

__all__ = ["COIN_ENV_ID", "CoinEnv"]

_OPTION_KEYS = ("p", "fail_p", "length")


class CoinEnv(gymnasium.Env[np.ndarray, np.ndarray]):
    """A coin-flip episode with Gymnasium's API.

    >>> env = CoinEnv(p=1.0, length=2)
    >>> obs, info = env.reset(seed=3)
    >>> _, _, terminated, truncated, info = env.step(np.zeros(1))
    >>> _, _, terminated, truncated, info = env.step(np.zeros(1))
    >>> terminated, info["is_success"]
    (True, True)
    """

    metadata: dict[str, Any] = {"render_modes": []}
    reset_options: tuple[str, ...] = _OPTION_KEYS  # the env contract: reset options it reads

    def __init__(
        self,
        p: float = 0.5,
        fail_p: float = 0.0,
        length: int = 3,
        dt: float = 0.1,
    ) -> None:
        self.defaults: dict[str, Any] = {"p": p, "fail_p": fail_p, "length": length}
        self.dt = dt
        self.observation_space = spaces.Box(0.0, np.inf, (1,), dtype=np.float64)
        self.action_space = spaces.Box(-np.inf, np.inf, (1,), dtype=np.float64)
        self._params = dict(self.defaults)
        self._t = 0
        self._fate = "timeout"
        self._rng = np.random.default_rng(0)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Fix the episode's fate from ``seed``; options override the constructor's values."""
        super().reset(seed=seed)
        params = dict(self.defaults)
        for key, value in (options or {}).items():
            if key not in self.reset_options:
                raise InvalidParameterError(
                    f"{type(self).__name__} option {key!r} is unknown; expected one of "
                    f"{', '.join(self.reset_options)}"
                )
            params[key] = value
        self._params = params
        self._rng = np.random.default_rng(seed)
        draw = self._rng.random()
        p, fail_p = float(params["p"]), float(params["fail_p"])
        self._fate = "success" if draw < p else "failure" if draw < p + fail_p else "timeout"
        self._t = 0
        return np.zeros(1), {}

    def step(
        self, action: np.ndarray
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Advance one step; the fate is revealed after ``length`` steps."""
        self._t += 1
        done = self._t >= int(self._params["length"]) and self._fate != "timeout"
        success = done and self._fate == "success"
        info: dict[str, Any] = {"is_success": success}
        if done:
            info["outcome"] = self._fate
        return np.array([float(self._t)]), float(success), done, False, info
