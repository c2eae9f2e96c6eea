"""Source of a third-party env package for the env-contract tests (written into a tmp dir)."""

SOURCE = '''
import functools
import os

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Base(gym.Env):
    """A 1-D reach: obs [x, goal]; info success when |x - goal| < 0.05; never terminates."""

    metadata = {"render_modes": [], "render_fps": 10}

    def __init__(self, goal=0.5, wobble=0.0):
        self.goal, self.wobble = goal, wobble
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), dtype=np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), dtype=np.float64)
        self.x = 0.0

    def _draw(self):
        return float(self.np_random.uniform(-1.0, 1.0))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self._draw()
        return np.array([self.x, self.goal]), {}

    def step(self, action):
        self.x += 0.1 * float(np.asarray(action).reshape(-1)[0]) + self.wobble
        distance = abs(self.x - self.goal)
        info = {"success": distance < 0.05, "dist": distance}
        return np.array([self.x, self.goal]), -distance, False, False, info

    def close(self):
        # beside this module (worker processes may predate the test's environment variables)
        log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log")
        os.makedirs(log, exist_ok=True)
        with open(os.path.join(log, f"closed-{os.getpid()}"), "a") as f:
            f.write("closed\\n")


class Passthrough(Base):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)


class Unseeded(Base):
    def _draw(self):
        return float(np.random.uniform(-1.0, 1.0))


def toward(obs):
    return np.clip(np.array([10.0 * (obs[1] - obs[0])]), -1.0, 1.0)


gym.register("fake/Reach-v0", entry_point=lambda **kw: Base(**kw), max_episode_steps=40)
gym.register("fake/Partial-v0", entry_point=functools.partial(Base, goal=0.2))
'''
