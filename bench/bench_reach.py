"""Benchmark: the vectorised reaching-lab simulator vs the seed's per-episode Python loop.

Both sides produce the paired outcomes of the baseline and damped controllers on the SAME
conditions (seed 7, episodes 0 .. N-1), conditions generation included:

* loop: the reaching-lab seed's standard-library program (shared/seeds/002_...txt,
  "Reproduce the batch in Python"), logic verbatim, one episode at a time;
* vectorised: ``conditions(episode_condition_seeds(...))`` once, then ``rollout_batch`` for
  each controller, all episodes in lockstep with numpy (the loop also draws once and
  reuses the conditions for both controllers).

Outcomes and times must be identical. Throughput is paired episodes per second, the median
over a few repeats (``time.perf_counter``). Target: vectorised >= 100x the loop.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from evalband.envs import conditions, episode_condition_seeds, rollout_batch
from evalband.policies.reach1d import baseline, damped

TARGET_RATIO = 100.0


def seed_loop(n: int, seed: int = 7, steps: int = 30, noise: float = 0.02) -> list[list[Any]]:
    """The seed's program (verbatim logic): conditions and paired rollouts, pure Python."""
    DT, N, STEPS, NOISE = 0.2, n, steps, noise  # noqa: N806 - the seed's names
    state = seed

    def draw() -> float:
        nonlocal state
        state = (1664525 * state + 1013904223) % (2**32)
        return state / (2**32)

    conditions = []
    for _ in range(N):
        x, v = -1 + draw(), -0.2 + 0.4 * draw()
        gain, disturbance = 0.8 + 0.4 * draw(), -0.3 + 0.6 * draw()
        errors = [2 * draw() - 1 for _ in range(40)]
        conditions.append((x, v, gain, disturbance, errors))

    def episode(condition: Any, damping: float) -> tuple[str, float]:
        x, v, gain, disturbance, errors = condition
        settled = 0
        for k in range(STEPS):
            u = max(-1, min(1, -2 * (x + NOISE * errors[k]) - damping * v))
            acceleration = gain * u + disturbance
            new_v = v + DT * acceleration
            x += DT * (v + new_v) / 2
            v = new_v
            settled = settled + 1 if abs(x) <= 0.1 and abs(v) <= 0.15 else 0
            if abs(x) >= 1.25:
                return "failure", (k + 1) * DT
            if settled >= 3:
                return "success", (k + 1) * DT
        return "timeout", STEPS * DT

    base = [episode(c, 0.2) for c in conditions]
    damp = [episode(c, 1.8) for c in conditions]
    return [[list(r) for r in base], [list(r) for r in damp]]


def vectorised(n: int, seed: int = 7, steps: int = 30, noise: float = 0.02) -> list[Any]:
    """The same paired rollouts through ``rollout_batch`` (conditions drawn once, shared)."""
    shared = conditions(episode_condition_seeds(seed, n))
    return [
        rollout_batch(policy, shared, max_steps=steps, noise=noise) for policy in (baseline, damped)
    ]


def as_rows(results: list[Any]) -> list[list[Any]]:
    """Batch results in the loop's shape: per controller, ``[outcome, time]`` per episode."""
    return [
        [list(p) for p in zip(r.outcome.tolist(), r.sim_time_s.tolist(), strict=True)]
        for r in results
    ]


def _median_seconds(fn: Any, n: int, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn(n)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run(quick: bool = False) -> dict[str, Any]:
    """Time both paths on the same conditions; returns the result dict (prints nothing)."""
    episodes = 2_000 if quick else 20_000
    repeats = 3 if quick else 5
    vectorised(200)  # warm-up: imports, caches
    loop_s, loop_out = _median_seconds(seed_loop, episodes, repeats)
    vec_s, vec_out = _median_seconds(vectorised, episodes, repeats)
    identical = loop_out == as_rows(vec_out)  # compared outside the timed region
    loop_rate = episodes / loop_s
    vec_rate = episodes / vec_s
    ratio = vec_rate / loop_rate
    return {
        "name": "reach_vectorized_vs_loop",
        "episodes": episodes,
        "repeats": repeats,
        "loop_eps_per_s": loop_rate,
        "vectorized_eps_per_s": vec_rate,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "identical": identical,
        "passed": bool(identical and ratio >= TARGET_RATIO),
    }


if __name__ == "__main__":
    print(run())
