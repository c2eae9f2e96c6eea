"""Test-only envs, kept out of the package: the coin stand-in with slow steps and faults.

:class:`FaultyCoinEnv` is :class:`evalband.envs._coin.CoinEnv` plus two options the shipped
env does not have: ``sleep_s`` makes each step take wall time (runs slow enough to kill half
way) and ``error_p`` makes a step raise (error episodes). A panel names it by import path,
``env: testenvs:FaultyCoinEnv``: ``tests/`` is on ``sys.path`` in the test process (pytest
puts it there), process and ray workers take the driver's path, and a test that starts the
CLI in a subprocess passes ``sys.path`` on as ``PYTHONPATH``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from evalband.envs._coin import CoinEnv

__all__ = ["FAULTY_COIN", "FaultyCoinEnv", "NoKeyCoinEnv", "UnseededCoinEnv"]

FAULTY_COIN = "testenvs:FaultyCoinEnv"
"""The env string a panel gives for :class:`FaultyCoinEnv`."""


class FaultyCoinEnv(CoinEnv):
    """:class:`CoinEnv` whose steps may sleep (``sleep_s``) or raise (``error_p``)."""

    reset_options = (*CoinEnv.reset_options, "sleep_s", "error_p")

    def __init__(self, p: float = 0.5, fail_p: float = 0.0, length: int = 3,
                 sleep_s: float = 0.0, error_p: float = 0.0, dt: float = 0.1) -> None:
        super().__init__(p=p, fail_p=fail_p, length=length, dt=dt)
        self.defaults.update(sleep_s=sleep_s, error_p=error_p)
        self._params = dict(self.defaults)

    def step(
        self, action: np.ndarray
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Sleep, maybe raise (an injected simulator fault), then the coin's step."""
        if self._params["sleep_s"]:
            time.sleep(float(self._params["sleep_s"]))
        if self._params["error_p"] and self._rng.random() < float(self._params["error_p"]):
            raise RuntimeError(f"injected simulator fault at step {self._t + 1}")
        return super().step(action)


class UnseededCoinEnv(FaultyCoinEnv):
    """A coin whose first observation ignores the seed: its episodes do not reproduce."""

    _draws = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """The coin's reset, with a first observation that differs on every call."""
        _, info = super().reset(seed=seed, options=options)
        UnseededCoinEnv._draws += 1
        return np.array([float(UnseededCoinEnv._draws)]), info


class NoKeyCoinEnv(FaultyCoinEnv):
    """A coin whose step info never carries ``is_success`` (the default rule's key)."""

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The coin's step, with the success key renamed ``done_well``."""
        obs, reward, terminated, truncated, info = super().step(action)
        info["done_well"] = info.pop("is_success")
        info.pop("outcome", None)
        return obs, reward, terminated, truncated, info
