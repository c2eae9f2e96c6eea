"""Lockstep play: up to N episodes stepped together, one policy call per step for all of them.

The runner's batched mode (``run_panel(..., batch_size=N)``, ``evalband run --batch N``).
Each chunk of episode specs is played by N slots, each holding its own env; every step stacks
the observations of the still-active episodes and calls the policy ONCE on the stack. When an
episode ends its record is yielded at once (the runner commits it before the next step) and
the slot takes the next spec of the chunk, so the batch stays full until the chunk runs dry.

Why N separate envs and not ``gymnasium.vector.SyncVectorEnv``: by default a vector env
resets a finished sub-env by itself (Gymnasium 1.x ``AutoresetMode.NEXT_STEP``: the step after
the last one is ``reset()`` without a seed), while an evaluation episode must end at its first
outcome and the next one must start from its own condition seed and reset options; with
``AutoresetMode.DISABLED`` every step still steps every sub-env, and a partial reset passes
one ``options`` dict to all of them. Holding the envs directly makes all of it explicit; an
env with its own batch simulator (a ``batch_rollout`` hook, e.g. reach1d) is used instead,
N episodes per call.

Records are identical to the one-at-a-time path (:func:`~evalband.run._execute.play_episode`)
in every field but the timing ones: the same env calls with the same actions, and a policy's
batched call must give each row the action its single call would (the contract of
``act_batch`` / ``batched = True``; :class:`~evalband.policies._torch.TorchPolicy` keeps it
bitwise, see :data:`~evalband.policies._torch.ROW_BLOCK`). Timing fields:

* ``latency_ms_*``: per step, the full wall time of the batched call that produced the
  episode's action (what the episode waited for it), not a share of it;
* ``env_ms``: the episode's own ``reset`` and ``step`` calls;
* ``wall_s``: the episode's own env time plus an equal share of the rest of each lockstep
  step it took part in (the policy call and the bookkeeping): summed over a chunk's episodes
  it is about the chunk's wall time, not the (overlapping) span of each episode.

An exception in one env (``reset`` or ``step``) makes that episode an ``error`` and frees its
slot; the others go on. If the batched policy call raises (or returns the wrong number of
rows), that step falls back to one call per observation, so the exception is pinned on the
episode(s) whose observation raises, as it would be one at a time.
"""

from __future__ import annotations

import numbers
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalband.episode import EpisodeRecord, EpisodeSpec, Outcome
from evalband.errors import InvalidParameterError
from evalband.policies._runtime import PolicyRuntime, as_runtime
from evalband.run._execute import (
    RunTask,
    _batch_records,
    _latency_fields,
    _now,
    _record,
    _sim_time,
    env_options,
    episode_context,
    judge,
    metrics_extra,
)
from evalband.run._judge import Judge
from evalband.run._steps import StepRecorder
from evalband.run._trace import TraceRecorder, start_trace
from evalband.run._worker import Worker

__all__ = ["check_batch_size", "play_lockstep"]


def check_batch_size(value: object) -> int:
    """A batch size as an ``int``: ``None`` is one at a time (``0`` here), else ``N >= 1``.

    Raises:
        InvalidParameterError: neither ``None`` nor a whole number >= 1 (``0`` included).

    >>> check_batch_size(None), check_batch_size(50)
    (0, 50)
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InvalidParameterError(
            "`batch_size` must be a whole number of episodes >= 1 (omit it to play one episode "
            f"at a time); got {value!r}", parameters=("batch_size",),
        )
    return int(value)


@dataclass
class _Episode:
    """One episode in a slot: its spec, current observation and running tallies."""

    spec: EpisodeSpec
    obs: Any
    started_at: str
    env_s: float
    wall_s: float
    tally: Judge
    latencies: list[float] = field(default_factory=list)
    slot: int = 0
    trace: TraceRecorder | None = None
    steps_kept: StepRecorder | None = None  # ``record_steps``: the episode's step columns

    @property
    def steps(self) -> int:
        """Actions taken so far."""
        return self.tally.steps


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _actions(
    runtime: PolicyRuntime, observations: list[Any], slots: list[int]
) -> list[tuple[Any, float | None, Exception | None]]:
    """``(action, latency_s, exception)`` per observation, from one call when possible."""
    if runtime.batches:
        t0 = time.perf_counter()
        try:
            out = runtime.act_batch(observations, slots)
        except Exception:  # noqa: BLE001 - retried one by one below, to pin it on an episode
            out = None
        took = time.perf_counter() - t0
        if out is not None:
            return [(action, took, None) for action in out]
    results: list[tuple[Any, float | None, Exception | None]] = []
    for obs, slot in zip(observations, slots, strict=True):
        t0 = time.perf_counter()
        try:
            action = runtime.act(obs, slot)
        except Exception as exc:  # noqa: BLE001 - becomes this episode's error
            results.append((None, None, exc))
            continue
        results.append((action, time.perf_counter() - t0, None))
    return results


def _finish(
    task: RunTask, ep: _Episode, dt: float | None, *, outcome: Outcome, terminated: bool,
    truncated: bool, error: str | None = None, runtime: PolicyRuntime | None = None,
) -> EpisodeRecord:
    info = runtime.episode_info(ep.slot) if runtime is not None else {}
    return _record(
        task,
        ep.spec,
        outcome=outcome,
        terminated=terminated,
        truncated=truncated,
        steps=ep.steps,
        sim_time_s=_sim_time(ep.steps, dt),
        env_ms=ep.env_s * 1000.0,
        wall_s=ep.wall_s,
        started_at=ep.started_at,
        error=error,
        extra={**(metrics_extra(ep.tally) if error is None else {}), **info,
               **(ep.trace.extra() if ep.trace is not None else {}),
               **(ep.steps_kept.extra() if ep.steps_kept is not None else {})},
        **_latency_fields(ep.latencies),
    )


def play_lockstep(
    task: RunTask, specs: Sequence[EpisodeSpec], env: Any, policy: Any, worker: Worker
) -> Iterator[EpisodeRecord]:
    """Play ``specs`` in lockstep, ``task.batch_size`` at a time; yield records as they end.

    Args:
        task: the run task (``batch_size >= 1``).
        specs: the chunk's episodes; each is played exactly once.
        env: the worker's env (slot 0); the other slots get envs made like it.
        policy: the policy (a :class:`~evalband.policies._runtime.PolicyRuntime` or what it
            wraps); its batched call is used when it declares one, each episode reset in
            its slot first.
        worker: the :class:`~evalband.run._worker.Worker` that built ``env``; it builds
            and keeps the other slots' envs and a cell's own env.

    Yields:
        One record per spec, in the order the episodes end.

    Raises:
        InvalidParameterError: the policy keeps state but declares neither per-slot state
            nor stateless batching (:meth:`~evalband.policies._runtime.PolicyRuntime.
            batch_refusal`).
    """
    runtime = as_runtime(policy)
    refusal = runtime.batch_refusal(task.policy)
    if refusal is not None:
        raise InvalidParameterError(refusal, parameters=("batch_size",))
    runtime.setup()  # once per runtime, before any timing
    if any(spec.env_kwargs for spec in specs):  # a cell's constructor args: its own envs
        start = 0
        while start < len(specs):
            end = start + 1
            while end < len(specs) and specs[end].env_kwargs == specs[start].env_kwargs:
                end += 1
            group = specs[start:end]
            yield from _play_lockstep(task, group, worker.task_env(task, env, group[0]),
                                      runtime, dict(group[0].env_kwargs), worker)
            start = end
        return
    yield from _play_lockstep(task, specs, env, runtime, {}, worker)


def _play_lockstep(
    task: RunTask, specs: Sequence[EpisodeSpec], env: Any, runtime: PolicyRuntime,
    cell_kwargs: dict[str, Any], worker: Worker,
) -> Iterator[EpisodeRecord]:
    """:func:`play_lockstep` for specs that share one cell's constructor arguments."""
    size = max(1, min(task.batch_size, len(specs)))
    hook = getattr(type(getattr(env, "unwrapped", env)), "batch_rollout", None)
    if task.batch and hook is not None and runtime.kind == "batched":
        # The env's own batch simulator: N episodes per call (one-at-a-time-identical).
        todo: list[EpisodeSpec] = []
        for start in range(0, len(specs), size):
            group = specs[start : start + size]
            records = _batch_records(env, runtime, group, task, worker)
            if records is None:
                todo.extend(group)
            else:
                yield from records
        specs = todo
        if not specs:
            return
    envs = worker.lockstep_envs(task, env, size, cell_kwargs)
    dt, can_trace = worker.env_facts(env, task)  # the slots' envs are built alike: the first
    pending = deque(specs)
    slots: list[_Episode | None] = [None] * size
    while True:
        for i, slot in enumerate(slots):  # fill free slots with the next episodes
            while slot is None and pending:
                spec = pending.popleft()
                started_at = _now()
                t0 = time.perf_counter()
                try:
                    runtime.reset(episode_context(task, spec, slot=i, env=envs[i]))
                    t0 = time.perf_counter()  # env time: the policy's reset is not in it
                    obs, _ = envs[i].reset(
                        seed=spec.condition_seed, options=env_options(spec)
                    )
                except Exception as exc:  # noqa: BLE001 - every crash becomes an error episode
                    took = time.perf_counter() - t0
                    failed = _Episode(spec, None, started_at, took, took, judge(task))
                    yield _finish(task, failed, dt, outcome=Outcome.ERROR, terminated=False,
                                  truncated=False, error=_error(exc))
                    continue
                took = time.perf_counter() - t0
                trace = (start_trace(envs[i], spec, dt, task.trace_episodes)
                         if can_trace else None)
                slot = slots[i] = _Episode(spec, obs, started_at, took, took, judge(task),
                                           slot=i, trace=trace,
                                           steps_kept=task.step_recorder())
                if slot.trace is not None:
                    slot.trace.add(0)
        active = [(i, slot) for i, slot in enumerate(slots) if slot is not None]
        if not active:
            return
        step0 = time.perf_counter()
        actions = _actions(runtime, [ep.obs for _, ep in active], [i for i, _ in active])
        own = [0.0] * len(active)  # each episode's env time in this step
        finished: list[tuple[_Episode, dict[str, Any]]] = []
        for k, ((i, ep), (action, latency, failure)) in enumerate(
            zip(active, actions, strict=True)
        ):
            if failure is None and latency is not None:
                ep.latencies.append(latency)
                if ep.steps_kept is not None:
                    ep.steps_kept.observe(ep.obs)
                t0 = time.perf_counter()
                try:
                    ep.obs, reward, terminated, truncated, info = envs[i].step(action)
                except Exception as step_exc:  # noqa: BLE001 - an error episode, others go on
                    failure = step_exc
                own[k] = time.perf_counter() - t0
                ep.env_s += own[k]
            if failure is None and ep.steps_kept is not None:
                ep.steps_kept.add(action, reward, info)
            if failure is not None:
                finished.append((ep, {"outcome": Outcome.ERROR, "terminated": False,
                                      "truncated": False, "error": _error(failure)}))
                slots[i] = None
                continue
            end = ep.tally.step(reward, terminated, truncated, info)
            if ep.trace is not None:
                ep.trace.add(ep.steps)
            if end is not None:
                outcome, terminated, truncated = end
                finished.append((ep, {"outcome": outcome, "terminated": terminated,
                                      "truncated": truncated}))
                slots[i] = None
        # Charge the step to every episode in it: its own env time plus an equal share of
        # the rest (the policy call and the bookkeeping).
        shared = (time.perf_counter() - step0 - sum(own)) / len(active)
        for k, (_, ep) in enumerate(active):
            ep.wall_s += own[k] + shared
        for ep, how in finished:
            yield _finish(task, ep, dt, runtime=runtime, **how)
