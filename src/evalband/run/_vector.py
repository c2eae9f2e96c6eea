"""The vector backend: sub-envs in their own processes, one batched policy call per step.

``evalband run --backend vector --workers N`` (API: ``backend="vector"``) is lerobot-eval's
throughput path: N sub-envs step in parallel in a ``gymnasium.vector.AsyncVectorEnv`` (one
process each), while the policy runs once per step in this process on the stacked
observations of the episodes in play (a ``lerobot:`` policy's real batched forward pass).

What differs from lerobot-eval's use of the vector env is what an evaluation needs:

* **Every episode plays its own condition.** When an episode ends, its sub-env alone is reset
  (``reset_mask``) with that slot's next spec: its condition seed, its cell's reset options
  and constructor arguments. Gymnasium passes one ``options`` dict to every sub-env it resets,
  so the dict carries a table ``{slot: (seed, options, env_kwargs)}`` and each sub-env
  (:class:`SlotEnv`, which knows its index) takes its own row.
* **No autoreset.** The vector env runs with ``AutoresetMode.DISABLED``, and a sub-env never
  reports an ending to it: the panel's success rule is judged here, on the sub-env's own
  ``(obs, reward, terminated, truncated, info)``, exactly as one at a time. A sub-env whose
  episode has ended (or whose slot is idle) is sent ``None`` and does nothing until its next
  reset: nothing of one episode leaks into the next.
* **Exact values.** Gymnasium would copy observations into arrays of the declared space's
  dtype and merge infos across sub-envs; each sub-env instead sends its step result pickled,
  so the policy and the judge see what they would one at a time (a float64 observation stays
  float64, a dict stays a dict). The vector env's own observation is a placeholder.

Records are identical to the serial backend's in every field but the timing ones and
``extra["trace"]`` (sub-envs are not traced); step data (``record_steps``) is kept here, from
the actions sent and the results the sub-envs send back. ``env_ms`` is measured inside each sub-env;
``latency_ms_*`` is the full batched call an action came from; ``wall_s`` is the episode's
share of each step it took part in, as in lockstep (:mod:`evalband.run._lockstep`).

The vector env is kept warm across runs of one Python session with the same env, workers
and imports (the training callback evaluates checkpoint after checkpoint on it: the sub-envs
and their built envs stay); :func:`close_vector_envs` closes them (also at exit).
"""

from __future__ import annotations

import atexit
import json
import pickle
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium
import numpy as np

from evalband.episode import EpisodeRecord, EpisodeSpec, Outcome
from evalband.errors import InvalidParameterError
from evalband.run._execute import (
    RunTask,
    _now,
    env_options,
    episode_context,
    judge,
)
from evalband.run._lockstep import _actions, _Episode, _error, _finish
from evalband.run._worker import Worker

__all__ = ["SlotEnv", "VectorBackend", "close_vector_envs"]

_KEY = "evalband"
_KEPT_ENVS = 2  # built envs a sub-env keeps (one per cell's constructor arguments)


class SlotEnv(gymnasium.Env):
    """One sub-env of the vector backend: builds the task's env lazily, plays its own slot.

    A ``gymnasium.Env`` in behaviour (spaces, ``reset``, ``step``, ``close``); its own
    observation is a placeholder and its ``info[_KEY]`` carries the real result, pickled.
    Built in the sub-env's process (the vector env builds a dummy in the driver to read its
    spaces: that one never builds the real env).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, task: RunTask, index: int) -> None:
        gym = gymnasium
        self.task = task
        self.index = index
        self.observation_space = gym.spaces.Box(0.0, 0.0, (1,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
        self._envs: dict[str, Any] = {}
        self._env: Any = None
        self._dt: float | None = None

    def _placeholder(self) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)

    def _env_for(self, cell_kwargs: dict[str, Any]) -> Any:
        from evalband.envs import control_dt
        from evalband.envs._resolve import close_env, prepare_imports
        from evalband.run._worker import make_task_env

        key = json.dumps(cell_kwargs, sort_keys=True, default=str)
        env = self._envs.get(key)
        if env is None:
            prepare_imports(self.task.cwd, self.task.imports)
            while len(self._envs) >= _KEPT_ENVS:
                close_env(self._envs.pop(next(iter(self._envs))))
            env = self._envs[key] = make_task_env(self.task, cell_kwargs)
            self._dt = control_dt(env, self.task.control_dt).dt
        return env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the real env to this slot's spec in ``options[_KEY][index]`` (else idle)."""
        row = (options or {}).get(_KEY, {}).get(self.index)
        if row is None:
            self._env = None
            return self._placeholder(), {}
        condition_seed, env_opts, cell_kwargs = row
        t0 = time.perf_counter()
        try:
            self._env = self._env_for(cell_kwargs)
            t0 = time.perf_counter()  # env time: building the env is not the episode's
            obs, info = self._env.reset(seed=condition_seed, options=env_opts)
            result: tuple[Any, ...] = ("ok", obs, dict(info), self._dt)
        except Exception as exc:  # noqa: BLE001 - an error episode in the driver
            self._env = None
            result = ("error", _error(exc))
        took = time.perf_counter() - t0
        return self._placeholder(), {_KEY: pickle.dumps((*result, took))}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Step the real env with ``action``; ``None`` (idle or ended slot) does nothing."""
        if action is None or self._env is None:
            return self._placeholder(), 0.0, False, False, {}
        t0 = time.perf_counter()
        try:
            obs, reward, terminated, truncated, info = self._env.step(action)
            result: tuple[Any, ...] = ("ok", obs, reward, terminated, truncated, dict(info))
        except Exception as exc:  # noqa: BLE001 - an error episode in the driver
            self._env = None
            result = ("error", _error(exc))
        took = time.perf_counter() - t0
        return self._placeholder(), 0.0, False, False, {_KEY: pickle.dumps((*result, took))}

    def close(self) -> None:
        """Close every env this sub-env built."""
        from evalband.envs._resolve import close_env

        for env in self._envs.values():
            close_env(env)
        self._envs.clear()


def _results(infos: dict[str, Any], slots: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    payload = infos.get(_KEY)
    mask = infos.get(f"_{_KEY}")
    out: dict[int, tuple[Any, ...]] = {}
    for i in slots:
        if payload is None or mask is None or not mask[i]:
            out[i] = ("error", "RuntimeError: the sub-env sent no result", 0.0)
        else:
            out[i] = pickle.loads(payload[i])
    return out


_POOLS: dict[str, Any] = {}


def _pool_key(task: RunTask, n: int) -> str:
    return json.dumps([task.env, task.env_kwargs, task.imports, task.cwd, task.budget_steps,
                       task.time_limit, task.control_dt, n], sort_keys=True, default=str)


def _vector_env(task: RunTask, n: int) -> Any:
    """The warm vector env for ``task`` with ``n`` sub-envs (made on first use)."""
    import functools

    key = _pool_key(task, n)
    vec = _POOLS.get(key)
    if vec is None:
        close_vector_envs()
        gym = gymnasium
        fns = [functools.partial(SlotEnv, task, i) for i in range(n)]
        vec = gym.vector.AsyncVectorEnv(
            fns, shared_memory=False, copy=False, context="forkserver",
            autoreset_mode=gym.vector.AutoresetMode.DISABLED,
        )
        vec.reset(options={_KEY: {}})  # every sub-env idle (a noop reset needs a first obs)
        _POOLS[key] = vec
    return vec


def close_vector_envs() -> None:
    """Close the warm vector envs (their sub-env processes and the envs they built)."""
    for vec in list(_POOLS.values()):
        try:
            vec.close(terminate=True)
        except Exception:  # noqa: BLE001, S110 - closing is best effort at the end
            pass
    _POOLS.clear()


atexit.register(close_vector_envs)


class VectorBackend:
    """Sub-envs in ``workers`` processes (``AsyncVectorEnv``), the policy batched here."""

    name = "vector"

    def __init__(self, workers: int = 2) -> None:
        if workers < 1:
            raise InvalidParameterError(
                f"`workers` must be >= 1 sub-envs for `backend` vector; got {workers}",
                parameters=("workers",))
        self.workers = workers

    def run(self, task: RunTask, specs: Sequence[EpisodeSpec],
            worker: Worker | None = None) -> Iterator[EpisodeRecord]:
        """Yield one record per spec, in the order the episodes end.

        The policy is ``worker``'s (the run's; without one, a worker of its own, closed at
        the end); the envs are the sub-envs' own.
        """
        if worker is None:
            with Worker() as own:
                yield from self.run(task, specs, own)
            return
        runtime = worker.policy(task)
        refusal = runtime.batch_refusal(task.policy)
        if refusal is not None:
            raise InvalidParameterError(
                refusal.replace("`batch_size` > 1", "the vector backend").replace(
                    "drop `batch_size`", "use another backend"), parameters=("backend",))
        if not specs:
            return
        n = max(1, min(self.workers, len(specs)))
        vec = _vector_env(task, n)
        try:
            yield from _play(task, specs, vec, runtime, n)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            close_vector_envs()  # a sub-env process died: the next run starts fresh ones
            raise


def _play(task: RunTask, specs: Sequence[EpisodeSpec], vec: Any, runtime: Any, n: int
          ) -> Iterator[EpisodeRecord]:
    pending = deque(specs)
    slots: list[_Episode | None] = [None] * n
    dt: float | None = None
    while True:
        while pending and any(slot is None for slot in slots):
            starting: dict[int, tuple[EpisodeSpec, str]] = {}
            for i in range(n):
                if slots[i] is None and pending:
                    spec = pending.popleft()
                    started_at = _now()
                    runtime.reset(episode_context(task, spec, slot=i))
                    starting[i] = (spec, started_at)
            mask = np.array([i in starting for i in range(n)])
            table = {i: (spec.condition_seed, env_options(spec), dict(spec.env_kwargs))
                     for i, (spec, _) in starting.items()}
            t0 = time.perf_counter()
            _, infos = vec.reset(options={"reset_mask": mask, _KEY: table})
            took = time.perf_counter() - t0
            for i, result in _results(infos, list(starting)).items():
                spec, started_at = starting[i]
                if result[0] == "error":
                    failed = _Episode(spec, None, started_at, result[-1], took, judge(task))
                    yield _finish(task, failed, dt, outcome=Outcome.ERROR, terminated=False,
                                  truncated=False, error=result[1])
                    continue
                _, obs, _info, dt, env_s = result
                slots[i] = _Episode(spec, obs, started_at, env_s, took, judge(task), slot=i,
                                    steps_kept=task.step_recorder())
        active = [(i, ep) for i, ep in enumerate(slots) if ep is not None]
        if not active:
            return
        step0 = time.perf_counter()
        actions = _actions(runtime, [ep.obs for _, ep in active], [i for i, _ in active])
        batch = np.empty(n, dtype=object)
        failures: dict[int, Exception] = {}
        for (i, ep), (action, latency, failure) in zip(active, actions, strict=True):
            if failure is not None or latency is None:
                failures[i] = failure or RuntimeError("no action")
                continue
            ep.latencies.append(latency)
            if ep.steps_kept is not None:
                ep.steps_kept.observe(ep.obs)
            batch[i] = action
        stepped = [i for i, _ in active if i not in failures]
        results = {}
        if stepped:
            _, _, _, _, infos = vec.step(batch)
            results = _results(infos, stepped)
        elapsed = time.perf_counter() - step0
        own = {i: float(results[i][-1]) for i in stepped}
        shared = (elapsed - (max(own.values()) if own else 0.0)) / len(active)
        finished: list[tuple[_Episode, dict[str, Any]]] = []
        for i, ep in active:
            ep.env_s += own.get(i, 0.0)
            ep.wall_s += own.get(i, 0.0) + shared
            if i in failures:
                finished.append((ep, {"outcome": Outcome.ERROR, "terminated": False,
                                      "truncated": False, "error": _error(failures[i])}))
                slots[i] = None
                continue
            result = results[i]
            if result[0] == "error":
                finished.append((ep, {"outcome": Outcome.ERROR, "terminated": False,
                                      "truncated": False, "error": result[1]}))
                slots[i] = None
                continue
            _, ep.obs, reward, terminated, truncated, info, _took = result
            if ep.steps_kept is not None:
                ep.steps_kept.add(batch[i], reward, info)
            end = ep.tally.step(reward, terminated, truncated, info)
            if end is not None:
                outcome, terminated, truncated = end
                finished.append((ep, {"outcome": outcome, "terminated": terminated,
                                      "truncated": truncated}))
                slots[i] = None
        for ep, how in finished:
            yield _finish(task, ep, dt, runtime=runtime, **how)
