"""Benchmark: PushT episodes through the runner vs a bare env + policy loop, and 2 workers.

Both paths play the SAME episodes, in the same order: the condition seeds and reset options
of a PushT panel (``start: [train, held_out]``, budget 200 steps) with the same policy
(``pusht:expert``). What each timed region includes:

* runner: one whole ``run_panel`` call on the serial backend into a temporary SQLite store,
  as ``evalband run`` does it: the manifest (versions, git SHA), the episode plan, building
  the env and the policy (the per-process cache is cleared first, as in a fresh process),
  every episode timed (policy latency, env time) and committed on its own (WAL,
  ``synchronous=NORMAL`` inside ``reproducible_writes``), then the summary read back;
* bare: building the env (``PushTEnv``) and the policy, then a plain
  ``reset / policy / step`` loop over the same specs; nothing timed, nothing recorded.

Four overhead figures, each ``runner / bare - 1`` (target <= 3 %, issue 20; it was 5 %):

* ``runner_overhead`` (used for ``passed``): the median over repeats of the PAIRED wall-time
  ratio. The two paths run interleaved (ABBA: runner-bare, bare-runner, ...), so a pair
  shares the machine's state and its ratio cancels most of a shared box's drift;
* ``runner_overhead_cpu``: the same on this process's CPU time (user + system), which other
  load on the machine barely changes (the git subprocess's CPU is not counted);
* ``runner_overhead_min``: the fastest run of each path compared (the least disturbed);
* ``runner_overhead_in_run``: a decomposition inside each runner run, immune to load that
  changes between runs: the run's wall time over the time spent inside the env (reset and
  step, the records' ``env_ms``) and the policy (the sum of its per-call latencies, taken
  from the runner's own timing through a ~1 us per-episode wrapper). Everything else (the
  run's setup and summary, construction, the loop, the records, the store) counts as the
  runner's, including what a bare loop would also spend on its own loop: an upper bound.

A fifth, ``runner_extra_share``, does not depend on how loaded the machine is between two
runs: the runner's own CPU time per episode and per step, measured on a near-free env
(``CoinEnv``, a constant policy) as runner minus bare loop over the same episodes
(:func:`runner_extra`), priced at this PushT panel's episode length and divided by the
bare PushT episode's CPU time.

The store's share is timed inside the same runs (``store_ms_per_episode``: wall time inside
``RunStore.add_episode``, through a per-instance wrapper costing ~1 us per episode).
Outcomes and step counts must be identical.

Also reported (an issue-8 target, not part of ``passed``): the process backend with 2 workers
vs serial (``process_speedup``, target >= 1.7x on 2 cores), wall time including the worker
pool's start-up, and ``process_speedup_steady``, the same ratio on the marginal time per
extra episode (a larger panel minus a small one), which removes the fixed start-up cost.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evalband.envs.pusht import ENV_ID, PushTEnv
from evalband.panel import EpisodeSpec, Panel, load_panel
from evalband.policies import resolve_policy
from evalband.run import _execute, run_panel
from evalband.store import RunStore, open_store

TARGET_OVERHEAD = 0.03
#: Issue 20's figures before this work (2-core VM): the paired overhead, and the in-run
#: decomposition of the last bench before it.
PREVIOUS = {"runner_overhead": 0.071, "runner_overhead_in_run": 0.044}
TARGET_PROCESS_SPEEDUP = 1.7
POLICY = "pusht:expert"
BUDGET = 200

Played = list[tuple[tuple[str, int, int], str, int]]


def pusht_panel(episodes: int, seed: int = 0) -> Panel:
    return load_panel({
        "name": "bench-pusht",
        "env": ENV_ID,
        "episodes": episodes,
        "seed": seed,
        "budget": {"steps": BUDGET},
        "factors": {"start": ["train", "held_out"]},
    })


def bare_loop(specs: list[EpisodeSpec]) -> Played:
    """The same episodes with nothing but the env and the policy: (key, outcome, steps)."""
    env = PushTEnv(max_steps=BUDGET)
    policy = resolve_policy(POLICY)
    out = []
    for spec in specs:
        obs, _ = env.reset(seed=spec.condition_seed, options=dict(spec.options))
        steps = 0
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs))
            steps += 1
            if terminated or truncated:
                out.append((spec.key, info["outcome"], steps))
                break
    return out


def _fresh_run(store: RunStore, panel: Panel, run_id: str, **kwargs: Any) -> None:
    run_panel(panel, POLICY, store, run_id=run_id, **kwargs)


def _timed_run(store: RunStore, panel: Panel, run_id: str, **kwargs: Any) -> float:
    return _timed(_fresh_run, store, panel, run_id, **kwargs)[0]


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, float, Any]:
    """(wall seconds, this process's CPU seconds, result) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    return time.perf_counter() - w0, time.process_time() - c0, result


def _played(store: RunStore, run_id: str) -> Played:
    records = store.episode_records(run_id)
    return sorted((r.key, r.outcome.value, r.steps) for r in records)


class _StoreClock:
    """Accumulates the wall time spent inside ``store.add_episode`` (a per-instance wrapper)."""

    def __init__(self, store: RunStore) -> None:
        self.store, self.seconds = store, 0.0
        self._original = store.add_episode

    def _timed(self, record: Any) -> None:
        t0 = time.perf_counter()
        self._original(record)
        self.seconds += time.perf_counter() - t0

    def __enter__(self) -> _StoreClock:
        self.store.add_episode = self._timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store.add_episode


class _PolicyClock:
    """Sums the per-call policy latencies the runner measures (wraps ``_latency_fields``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._original = _execute._latency_fields

    def _fields(self, latencies_s: Any) -> dict[str, Any]:
        self.seconds += sum(latencies_s)
        return self._original(latencies_s)

    def __enter__(self) -> _PolicyClock:
        _execute._latency_fields = self._fields  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        _execute._latency_fields = self._original  # type: ignore[assignment]


def _zero_action(obs: Any) -> Any:
    return _ZERO


_ZERO = np.zeros(1)


def runner_extra(episodes: int = 400, rounds: int = 5) -> dict[str, float]:
    """The runner's own CPU time per episode and per step, on a near-free env.

    ``run_panel`` (serial, a fresh run each round) and a bare ``reset / act / step`` loop
    play the same ``CoinEnv`` episodes with a constant policy, at 5 and at 85 steps an
    episode, interleaved; the medians' difference is what the runner adds (records, timing,
    the judge, the store, the run's setup spread over its episodes). Two lengths separate
    the per-step part from the per-episode part.
    """
    from evalband.envs._coin import CoinEnv

    out: dict[str, float] = {}
    for steps in (5, 85):
        panel = load_panel({"name": "coin", "env": "evalband/Coin-v0", "seed": 0,
                            "episodes": episodes // 2, "budget": {"steps": steps},
                            "env_kwargs": {"p": 0.0, "length": 10 * steps},
                            "factors": {"fail_p": [0.0, 0.0001]}})
        specs = panel.episode_specs()

        def bare(specs: list[EpisodeSpec] = specs, steps: int = steps) -> None:
            env = CoinEnv(p=0.0, length=10 * steps)
            for spec in specs:
                obs, _ = env.reset(seed=spec.condition_seed, options=dict(spec.options))
                for _ in range(steps):
                    obs, _, terminated, truncated, _ = env.step(_zero_action(obs))
                    if terminated or truncated:
                        break

        cpu: dict[str, list[float]] = {"runner": [], "bare": []}
        with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "c.sqlite") as store:
            for r in range(rounds + 1):
                for path in ("runner", "bare") if r % 2 else ("bare", "runner"):
                    c0 = time.process_time()
                    if path == "runner":
                        run_panel(panel, _zero_action, store, run_id=f"coin-{r}")
                    else:
                        bare()
                    if r:  # the first round warms up
                        cpu[path].append(time.process_time() - c0)
        extra = (statistics.median(cpu["runner"]) - statistics.median(cpu["bare"])) / len(specs)
        out[f"extra_ms_per_episode_at_{steps}_steps"] = 1000.0 * extra
    per_step = (out["extra_ms_per_episode_at_85_steps"]
                - out["extra_ms_per_episode_at_5_steps"]) / 80
    out["extra_us_per_step"] = 1000.0 * per_step
    out["extra_ms_per_episode"] = out["extra_ms_per_episode_at_5_steps"] - 5 * per_step
    return out


def _paired_overhead(runner: list[float], bare: list[float]) -> float:
    return statistics.median(r / b for r, b in zip(runner, bare, strict=True)) - 1.0


def run(quick: bool = False) -> dict[str, Any]:
    """Time the runner, the bare loop and the process backend; returns the result dict."""
    per_cell = 10 if quick else 100
    repeats = 3 if quick else 11
    proc_repeats = 1 if quick else 3
    panel = pusht_panel(per_cell)
    specs = panel.episode_specs()  # the runner's plan order
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "bench.sqlite") as store:
        _fresh_run(store, pusht_panel(2), "warm-up")  # imports, MuJoCo, caches
        bare_loop(specs[:2])
        wall: dict[str, list[float]] = {"runner": [], "bare": []}
        cpu: dict[str, list[float]] = {"runner": [], "bare": []}
        store_s, in_run, bare = [], [], []
        for r in range(repeats):  # paired and interleaved, the order alternating (ABBA)
            for path in ("runner", "bare") if r % 2 == 0 else ("bare", "runner"):
                if path == "runner":
                    with _StoreClock(store) as clock, _PolicyClock() as policy_clock:
                        w, c, _ = _timed(_fresh_run, store, panel, f"serial-{r}")
                    store_s.append(clock.seconds)
                    env_s = sum(rec.env_ms or 0.0 for rec in store.episode_records(f"serial-{r}"))
                    in_run.append(w / (env_s / 1000.0 + policy_clock.seconds) - 1.0)
                else:
                    w, c, bare = _timed(bare_loop, specs)
                wall[path].append(w)
                cpu[path].append(c)
        bare = sorted(bare)
        identical = all(_played(store, f"serial-{r}") == bare for r in range(repeats))

        small = pusht_panel(max(2, per_cell // 5))
        proc_s, proc_small_s, serial_small_s = [], [], []
        for r in range(proc_repeats):
            proc_s.append(_timed_run(store, panel, f"proc-{r}", backend="process", workers=2))
            proc_small_s.append(
                _timed_run(store, small, f"proc-small-{r}", backend="process", workers=2)
            )
            serial_small_s.append(_timed_run(store, small, f"serial-small-{r}"))
        identical = identical and all(
            _played(store, f"proc-{r}") == bare for r in range(proc_repeats)
        )
    extra = runner_extra(len(specs), 3 if quick else 5)  # the run set-up spread as here
    n = len(specs)
    steps = sum(s for _, _, s in bare)
    bare_cpu_ms = 1000.0 * statistics.median(cpu["bare"]) / n
    extra_ms = extra["extra_ms_per_episode"] + extra["extra_us_per_step"] * steps / n / 1000.0
    runner_med, bare_med = statistics.median(wall["runner"]), statistics.median(wall["bare"])
    proc_med = statistics.median(proc_s)
    more = n - len(small.episode_specs())
    serial_marginal = (runner_med - statistics.median(serial_small_s)) / more
    proc_marginal = (proc_med - statistics.median(proc_small_s)) / more
    overhead = _paired_overhead(wall["runner"], wall["bare"])
    return {
        "name": "pusht_runner_overhead",
        "episodes": n,
        "steps": steps,
        "successes": sum(o == "success" for _, o, _ in bare),
        "repeats": repeats,
        "runner_s": runner_med,
        "bare_s": bare_med,
        "runner_eps_per_s": n / runner_med,
        "bare_eps_per_s": n / bare_med,
        "bare_ms_per_step": 1000.0 * bare_med / steps,
        # passed uses this one: the median of the paired (same-moment) wall-time ratios.
        "runner_overhead": overhead,
        "runner_overhead_pairs": [
            round(r / b - 1.0, 4) for r, b in zip(wall["runner"], wall["bare"], strict=True)
        ],
        # This process's CPU time (user + system): little changed by other load.
        "runner_overhead_cpu": _paired_overhead(cpu["runner"], cpu["bare"]),
        # The least disturbed run of each path (timeit's robust figure on a noisy machine).
        "runner_overhead_min": min(wall["runner"]) / min(wall["bare"]) - 1.0,
        # Inside each runner run: wall / (env + policy time) - 1, median over runs.
        "runner_overhead_in_run": statistics.median(in_run),
        "runner_overhead_in_run_each": [round(x, 4) for x in in_run],
        # The runner's own CPU per episode and step (near-free env), priced at this panel's
        # episode length, over the bare PushT episode's CPU time: load between runs cancels.
        "runner_extra": extra,
        "runner_extra_ms_per_pusht_episode": extra_ms,
        "bare_cpu_ms_per_episode": bare_cpu_ms,
        "runner_extra_share": extra_ms / bare_cpu_ms,
        "previous": PREVIOUS,
        "runner_s_each": [round(x, 4) for x in wall["runner"]],  # per repeat, in pair order
        "bare_s_each": [round(x, 4) for x in wall["bare"]],
        "store_ms_per_episode": 1000.0 * statistics.median(store_s) / n,
        "store_share_of_bare": statistics.median(
            st / b for st, b in zip(store_s, wall["bare"], strict=True)
        ),
        "process_workers": 2,
        "process_repeats": proc_repeats,
        "process_s": proc_med,
        "process_eps_per_s": n / proc_med,
        "process_speedup": runner_med / proc_med,
        # Marginal figures need the full sizes: too noisy (even negative) on a quick run.
        "process_speedup_steady": None if quick else serial_marginal / proc_marginal,
        "process_startup_s": None if quick else proc_med - proc_marginal * n,
        "target_process_speedup": TARGET_PROCESS_SPEEDUP,
        # bench/run.py prints ratio vs target_ratio: the runner's speed relative to bare,
        # which must be at least 1 / (1 + 3 %).
        "ratio": 1.0 / (1.0 + overhead),
        "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
        "target_overhead": TARGET_OVERHEAD,
        "identical": identical,
        "passed": bool(identical and overhead <= TARGET_OVERHEAD),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
