"""Benchmark: the vectorised reaching-lab simulator vs the seed's per-episode Python loop.

Both sides produce the paired outcomes of the baseline and damped controllers on the SAME
conditions (seed 7, episodes 0 .. N-1), conditions generation included in the timed region:

* loop: the reaching-lab seed's standard-library program (shared/seeds/002_...txt,
  "Reproduce the batch in Python"), logic verbatim, one episode at a time; it draws every
  episode's 44 numbers once and reuses them for both controllers;
* vectorised: ``episode_condition_seeds`` (O(log N) jump-ahead), then ``rollout_batch``
  from the seeds for each controller, all episodes in lockstep, the policy called once per
  step on the stacked observations of the active episodes (the public policy API, the
  same path ``evalband run`` takes for this env). Two kernels are timed side by side:
  ``compiled`` (``kernel="compiled"``, the ``fast`` extra: one compiled pass per step
  advances, judges and observes every active episode, and the lab's controllers, their
  ``"auto"`` seeing numba loaded, evaluate large batches in one compiled pass) and
  ``numpy`` (whole-array passes everywhere, the controllers included; no optional
  dependency). Nothing is carried between calls or repeats except the 44-entry
  jump-ahead table ``(a_j, c_j)``, which depends on j only, never on a seed, and numba's
  compiled code (compiled in the warm-up, outside the timed region).

Outcomes and times of both kernels must equal the loop's (compared outside the timed
region). Throughput is paired episodes per second; the sides alternate (one loop run, then
``VEC_CALLS_PER_REPEAT`` runs of each kernel, each a complete job from the seeds) so each
sees the same machine, and each side's figure is its median over its runs
(``time.perf_counter``); ``ratio_cpu`` is the same on this process's CPU time. Target: the
vectorised simulator (``ratio``, the compiled kernel when numba is installed) >= 100x the
loop; ``ratio_numpy`` is reported alongside.

Where the time goes (20 000 pairs, 2-core VM, ~7 ms a pair of rollouts on a quiet machine):
the compiled step ~50 %, the policy calls ~10 %, drawing the seeds and the episode starts
~15 %, per-step Python overhead and the result arrays the rest. The step is memory-bound:
~90 bytes per active episode per step stream through the cache. The numpy path needs ~20
whole-array passes per step and stays at ~50-60x on this machine.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

from evalband._util.jit import MIN_COMPILED_BATCH, compiled_available
from evalband.envs import rollout_batch
from evalband.envs._reach1d_core import episode_condition_seeds
from evalband.policies.reach1d import BASELINE_DAMPING, DAMPED_DAMPING, saturated_pd

TARGET_RATIO = 100.0
VEC_CALLS_PER_REPEAT = 5
"""The vectorised job takes ~1/100 of the loop's time, so it is timed more often per repeat
(more samples for its median; every call starts again from the seeds)."""


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


def vectorised(n: int, seed: int = 7, steps: int = 30, noise: float = 0.02,
               kernel: str = "compiled") -> list[Any]:
    """The same paired rollouts through ``rollout_batch``, each drawing its own conditions.

    ``kernel="numpy"`` keeps everything on numpy, the controllers included (with numba
    loaded in the process their ``"auto"`` would compile a large batch).
    """
    seeds = episode_condition_seeds(seed, n)
    policy_kernel = "numpy" if kernel == "numpy" else "auto"
    return [
        rollout_batch(
            functools.partial(saturated_pd, damping=damping, kernel=policy_kernel),
            seeds, max_steps=steps, noise=noise, kernel=kernel,
        )
        for damping in (BASELINE_DAMPING, DAMPED_DAMPING)
    ]


def as_rows(results: list[Any]) -> list[list[Any]]:
    """Batch results in the loop's shape: per controller, ``[outcome, time]`` per episode."""
    return [
        [list(p) for p in zip(r.outcome.tolist(), r.sim_time_s.tolist(), strict=True)]
        for r in results
    ]


def _timed(fn: Any, n: int) -> tuple[float, float, Any]:
    """(wall seconds, this process's CPU seconds, result) of ``fn(n)``."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(n)
    return time.perf_counter() - w0, time.process_time() - c0, result


def run(quick: bool = False) -> dict[str, Any]:
    """Time both paths on the same conditions; returns the result dict (prints nothing)."""
    episodes = 2_000 if quick else 20_000
    repeats = 3 if quick else 7
    kernels = {"compiled": "compiled", "numpy": "numpy"} if compiled_available() else {
        "numpy": "numpy"}
    for kernel in kernels.values():  # warm-up: imports, caches, numba compilation / loads
        vectorised(MIN_COMPILED_BATCH, kernel=kernel)
    wall: dict[str, list[float]] = {"loop": [], **{k: [] for k in kernels}}
    cpu: dict[str, list[float]] = {"loop": [], **{k: [] for k in kernels}}
    loop_out: Any = None
    vec_out: dict[str, Any] = {}
    for _ in range(repeats):  # interleaved: every side sees the same machine state
        w, c, loop_out = _timed(seed_loop, episodes)
        wall["loop"].append(w)
        cpu["loop"].append(c)
        for _ in range(VEC_CALLS_PER_REPEAT):  # each call is the whole job, from the seeds
            for name, kernel in kernels.items():
                w, c, vec_out[name] = _timed(
                    lambda n, kernel=kernel: vectorised(n, kernel=kernel), episodes)
                wall[name].append(w)
                cpu[name].append(c)
    identical = all(loop_out == as_rows(out) for out in vec_out.values())  # outside timing
    main = "compiled" if "compiled" in kernels else "numpy"
    loop_s = statistics.median(wall["loop"])
    vec_s = {name: statistics.median(wall[name]) for name in kernels}
    ratio = loop_s / vec_s[main]
    return {
        "name": "reach_vectorized_vs_loop",
        "episodes": episodes,
        "repeats": repeats,
        "kernel": main,
        "numba": _numba_version(),
        "loop_eps_per_s": episodes / loop_s,
        "vectorized_eps_per_s": episodes / vec_s[main],
        "ratio": ratio,
        "ratio_cpu": statistics.median(cpu["loop"]) / statistics.median(cpu[main]),
        "ratio_numpy": loop_s / vec_s["numpy"],
        "numpy_eps_per_s": episodes / vec_s["numpy"],
        "loop_s_each": [round(x, 4) for x in wall["loop"]],
        "vectorized_s_each": [round(x, 5) for x in wall[main]],
        "numpy_s_each": [round(x, 5) for x in wall["numpy"]],
        "target_ratio": TARGET_RATIO,
        "identical": identical,
        "passed": bool(identical and ratio >= TARGET_RATIO),
    }


def _numba_version() -> str | None:
    try:
        import numba
    except ImportError:
        return None
    return str(numba.__version__)


if __name__ == "__main__":
    print(run())
