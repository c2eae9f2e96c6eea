"""Benchmark: batched (lockstep, N = 50) vs one-at-a-time inference for the BC MLP on PushT.

The policy is the PushT harness seed's behaviour-cloning MLP (``BCPolicy``, hidden width 256,
trained for a few epochs on scripted-expert demonstrations; its quality does not matter
here, only its cost), saved as a checkpoint and run by path, as a user would. Both paths play
the SAME episodes: ``bench_pusht``'s panel builder (:func:`~bench_pusht.pusht_panel`, budget
200 steps; 100 episodes, most of which the briefly trained policy plays to the budget),
serial backend, one temporary SQLite store.

* whole episodes: ``run_panel(..., batch_size=None)`` vs ``run_panel(..., batch_size=50)``:
  episodes per wall second, the median over repeats run in alternating order; the records
  (every field but the timing ones) must be identical;
* policy calls alone: the observations of the first episodes, fed to the policy one call
  per observation vs ``act_batch`` on consecutive blocks of 50, seconds per observation; the
  actions must be bitwise equal.

``ratio``: whole-episode throughput, batched over one at a time (``passed`` when > 1: the
simulator's share of a step does not batch, so this is the conservative figure);
``policy_ratio``: the same for the policy calls alone. ``policy_us_per_obs_single_unpadded``:
one call per observation without ``TorchPolicy``'s row blocks (``row_block=None``), the cost
the one-at-a-time path pays for actions bitwise equal to the batched ones (docs/batching.md).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_pusht import BUDGET, pusht_panel
from evalband.envs.pusht import PushTEnv
from evalband.policies import resolve_policy
from evalband.policies._torch import TorchPolicy
from evalband.run import run_panel
from evalband.store import RunStore, open_store

BATCH = 50
HIDDEN = 256
_TIMING = {"latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
           "started_at", "run_id"}


def train_checkpoint(path: Path, demos: int = 20, epochs: int = 10) -> str:
    """A BC checkpoint with the seed's architecture, trained briefly (cost, not quality)."""
    from evalband.policies.bc import save_checkpoint, train_bc
    from evalband.policies.pusht import collect_demos

    obs, actions, _ = collect_demos(demos, seed=0)
    save_checkpoint(train_bc(obs, actions, hidden_dim=HIDDEN, epochs=epochs, seed=0), path)
    return str(path)


def _deterministic(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.as_dict().items() if k not in _TIMING}
            for r in store.episode_records(run_id)]


def observations(policy: Any, panel: Any, episodes: int) -> np.ndarray:
    """Every observation the policy sees in the panel's first ``episodes`` episodes."""
    env = PushTEnv(max_steps=BUDGET)
    rows = []
    for spec in panel.episode_specs()[:episodes]:
        obs, _ = env.reset(seed=spec.condition_seed, options=dict(spec.options))
        while True:
            rows.append(obs)
            obs, _, terminated, truncated, _ = env.step(policy(obs))
            if terminated or truncated:
                break
    return np.asarray(rows)


def _per_call(policy: Any, obs: np.ndarray) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    out = np.stack([policy(row) for row in obs])
    return time.perf_counter() - t0, out


def _batched(policy: Any, obs: np.ndarray) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    blocks = [obs[i : i + BATCH] for i in range(0, len(obs), BATCH)]
    out = np.concatenate([policy.act_batch(block) for block in blocks])
    return time.perf_counter() - t0, out


def run(quick: bool = False) -> dict[str, Any]:
    """Time one-at-a-time and batched inference on the same PushT episodes."""
    per_cell = 10 if quick else 50
    repeats = 3
    panel = pusht_panel(per_cell)
    n = len(panel.episode_specs())
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        checkpoint = train_checkpoint(Path(tmp) / "bc.pt", demos=5 if quick else 20,
                                      epochs=3 if quick else 10)
        policy = resolve_policy(checkpoint)
        run_panel(pusht_panel(2), checkpoint, store, run_id="warm")  # imports, caches
        run_panel(pusht_panel(2), checkpoint, store, run_id="warm-b", batch_size=BATCH)
        single_s, batched_s = [], []
        for r in range(repeats):
            for path in ("single", "batched") if r % 2 == 0 else ("batched", "single"):
                t0 = time.perf_counter()
                run_panel(panel, checkpoint, store, run_id=f"{path}-{r}",
                          batch_size=BATCH if path == "batched" else None)
                (single_s if path == "single" else batched_s).append(time.perf_counter() - t0)
        reference = _deterministic(store, "single-0")
        identical = all(_deterministic(store, f"{path}-{r}") == reference
                        for path in ("single", "batched") for r in range(repeats))
        steps = sum(r["steps"] for r in reference)
        successes = sum(r["outcome"] == "success" for r in reference)
        obs = observations(policy, panel, 4 if quick else 10)
        call_single, call_batched, call_unpadded = [], [], []
        same_actions = True
        unpadded = TorchPolicy(policy.module, row_block=None)
        for _ in range(repeats):
            call_unpadded.append(_per_call(unpadded, obs)[0])
            t_single, a_single = _per_call(policy, obs)
            t_batched, a_batched = _batched(policy, obs)
            call_single.append(t_single)
            call_batched.append(t_batched)
            same_actions = same_actions and np.array_equal(a_single, a_batched)
    single_med, batched_med = statistics.median(single_s), statistics.median(batched_s)
    call_single_med, call_batched_med = statistics.median(call_single), statistics.median(
        call_batched
    )
    ratio = single_med / batched_med
    return {
        "name": "batched_vs_single_inference",
        "episodes": n,
        "steps": steps,
        "successes": successes,
        "batch": BATCH,
        "hidden_dim": HIDDEN,
        "repeats": repeats,
        "single_s": single_med,
        "batched_s": batched_med,
        "single_s_each": [round(x, 4) for x in single_s],
        "batched_s_each": [round(x, 4) for x in batched_s],
        "single_eps_per_s": n / single_med,
        "batched_eps_per_s": n / batched_med,
        "policy_observations": len(obs),
        "policy_us_per_obs_single": 1e6 * call_single_med / len(obs),
        "policy_us_per_obs_batched": 1e6 * call_batched_med / len(obs),
        "policy_us_per_obs_single_unpadded": 1e6 * statistics.median(call_unpadded) / len(obs),
        "policy_ratio": call_single_med / call_batched_med,
        # Policy time per step x steps over the one-at-a-time run's wall time: the most
        # batching could save of the whole run.
        "policy_share_of_single_run": call_single_med / len(obs) * steps / single_med,
        "ratio": ratio,
        "target_ratio": 1.0,
        "identical": bool(identical and same_actions),
        "passed": bool(identical and same_actions and ratio > 1.0),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
