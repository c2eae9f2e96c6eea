"""Benchmark: the reaching lab's lockstep kernel split into helpers vs the one-function kernel.

Issue 32 split :func:`evalband.envs._reach1d_kernel.lockstep_step` (162 lines) into numba
helper functions, each holding whole loops and called once per step, so no function is over
120 lines. This measures what the split costs: the kernel as it was at
:data:`BEFORE_SPLIT` (read from git; skipped where the checkout lacks it) and as it is now,
both compiled here with evalband's numba options and no on-disk cache (compilation in the
warm-up, outside the timed region), run on the same seeded batches of the damped policy,
interleaved (the order alternates by round). Figures: medians of the summed kernel-call
CPU time per rollout (``time.thread_time``: a few microseconds of wall time on a loaded
machine are mostly the scheduler's) and of the whole ``rollout_batch`` wall time, large
(200,000 episodes) and small (4,096) batches; the results must be identical. Target: the
split is no more than 10 % slower (``ratio`` = before / split kernel time >= 1 / 1.1).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import evalband._util.jit as jit
import evalband.envs._reach1d_batch as batch
from evalband.envs import rollout_batch
from evalband.envs._reach1d_core import episode_condition_seeds
from evalband.envs._reach1d_kernel import lockstep_step
from evalband.policies.reach1d import baseline, damped

BEFORE_SPLIT = "5f77956d98f3acd1aa662dfadf6f3864ab5f14c0"  # the last one-function kernel
KERNEL_PATH = "src/evalband/envs/_reach1d_kernel.py"
TARGET_RATIO = 1 / 1.1
CLAIM = ("the reaching lab's lockstep kernel split into numba helpers vs the one-function "
         "kernel before it, side by side: kernel time no more than 10 % above, same results")


def _kernels() -> dict[str, Any] | None:
    """Both kernels compiled without numba's cache; ``None`` without git or numba."""
    if not jit.compiled_available():
        return None
    import numba

    root = Path(__file__).resolve().parents[1]
    try:
        source = subprocess.run(["git", "-C", str(root), "show", f"{BEFORE_SPLIT}:{KERNEL_PATH}"],
                                capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    namespace: dict[str, Any] = {"__name__": "reach1d_kernel_before_split"}
    exec(compile(source, f"{BEFORE_SPLIT[:12]}:{KERNEL_PATH}", "exec"), namespace)
    built = jit.compiled(lockstep_step)  # evalband's options; registers the helpers
    options = {k: v for k, v in built.targetoptions.items() if k != "nopython"}
    return {"before": numba.njit(**options)(namespace["lockstep_step"]),
            "split": numba.njit(**options)(lockstep_step)}


def _rollout(kernel: Any, seeds: Any, policy: Any, repeats: int) -> tuple[float, float, Any]:
    """Mean wall seconds and kernel-call CPU seconds (this thread) per rollout; the result.

    The kernel calls are timed in CPU time: on a loaded machine a wall-clock interval of a
    few microseconds is mostly the scheduler's.
    """
    spent = [0.0]

    def timed(*args: Any) -> int:
        t0 = time.thread_time()
        m = kernel(*args)
        spent[0] += time.thread_time() - t0
        return int(m)

    batch.compiled = lambda fn: timed  # a bench-only stand-in: the kernel under test
    t0 = time.perf_counter()
    for _ in range(repeats):
        out = rollout_batch(policy, seeds, kernel="compiled")
    return (time.perf_counter() - t0) / repeats, spent[0] / repeats, out


def run(quick: bool = False) -> dict[str, Any]:
    kernels = _kernels()
    if kernels is None:
        return {"name": "reach_kernel_split", "claim": CLAIM, "ratio": None,
                "skipped": "needs numba and the git history (the kernel before the split)",
                "target_ratio": TARGET_RATIO, "passed": False}
    fields = ("outcome", "steps", "final_x", "final_v", "sim_time_s")
    warm = episode_condition_seeds(3, 5000)
    same = []
    for policy in (baseline, damped):  # warm-up (compiles) and the identical-results check
        outs = [_rollout(k, warm, policy, 1)[2] for k in kernels.values()]
        same.append(all(getattr(outs[0], f).tobytes() == getattr(outs[1], f).tobytes()
                        for f in fields))
    rounds = 5 if quick else 15
    cases = {"large": (200_000, 2), "small": (4096, 60)}
    result: dict[str, Any] = {"name": "reach_kernel_split", "claim": CLAIM, "rounds": rounds,
                              "identical": all(same), "target_ratio": TARGET_RATIO}
    for case, (episodes, repeats) in cases.items():
        seeds = episode_condition_seeds(7, episodes)
        wall: dict[str, list[float]] = {k: [] for k in kernels}
        step: dict[str, list[float]] = {k: [] for k in kernels}
        for r in range(rounds):
            for name in (list(kernels) if r % 2 == 0 else list(reversed(kernels))):
                w, s, _ = _rollout(kernels[name], seeds, damped, repeats)
                wall[name].append(w)
                step[name].append(s)
        med = {f"{case}_{what}_{name}_ms": 1e3 * statistics.median(v[name])
               for what, v in (("kernel", step), ("rollout", wall)) for name in kernels}
        result.update({"episodes_" + case: episodes, **med})
        result[f"ratio_{case}"] = med[f"{case}_kernel_before_ms"] / med[f"{case}_kernel_split_ms"]
        result[f"ratio_{case}_paired"] = statistics.median(  # per round, then the median
            b / a for a, b in zip(step["split"], step["before"], strict=True))
        result[f"ratio_rollout_{case}"] = (med[f"{case}_rollout_before_ms"]
                                           / med[f"{case}_rollout_split_ms"])
    result["load_average"] = [round(v, 2) for v in os.getloadavg()]
    result["ratio"] = min(result["ratio_large"], result["ratio_small"])
    result["passed"] = bool(result["identical"] and result["ratio"] >= TARGET_RATIO)
    return result


if __name__ == "__main__":
    print(run())
