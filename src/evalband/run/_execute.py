"""Play episodes: the one place where a policy meets an environment.

Every backend calls :func:`execute_chunk` on a list of :class:`~evalband.panel.EpisodeSpec`;
it yields one :class:`~evalband.episode.EpisodeRecord` per spec, in order. An exception in the
policy or the env becomes an ``error`` episode with its message: never a failure, never dropped.
The envs and the policy it plays with are its :class:`~evalband.run._worker.Worker`'s.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalband.envs import EvalEnv
from evalband.episode import TASK_OPTION_KEYS, EpisodeRecord, EpisodeSpec, Outcome
from evalband.policies import EpisodeContext
from evalband.policies._contract import episode_seed
from evalband.policies._runtime import as_runtime
from evalband.run._judge import DEFAULT_RULE, Judge, Rule
from evalband.run._steps import StepRecorder
from evalband.run._trace import TRACE_EPISODES, start_trace, traceable, traces
from evalband.run._worker import Worker, process_worker

__all__ = ["RunTask", "env_options", "episode_context", "execute_chunk", "resolve_task_policy"]


@dataclass(frozen=True)
class RunTask:
    """Everything a worker needs to play episodes (picklable: names, not objects).

    Attributes:
        run_id: the run.
        policy: a built-in policy name or ``module:attr`` path.
        panel_fingerprint: recorded on every episode.
        env: env id or ``module:Class``.
        env_kwargs: constructor keyword arguments.
        budget_steps: actions allowed per episode.
        batch: step episodes in lockstep when the env and policy support it.
        batch_size: ``0`` plays one episode at a time; ``N >= 1`` plays up to ``N`` episodes
            in lockstep with one policy call per step (:mod:`evalband.run._lockstep`).
        policy_obj: the policy object when ``run_panel`` was given one (pickled to workers);
            ``None`` resolves ``policy`` by name in each process.
        cwd: the run's directory, first on ``sys.path`` in the driver and every worker.
        imports: modules to import before resolving the env (the panel's ``imports``).
        success: the panel's success rule.
        metrics: numeric info keys stored with each episode.
        control_dt: the panel's control period (``None``: read from the env).
        time_limit: ``budget`` (the env's ``TimeLimit`` is the budget) or ``env`` (kept).
        record: a :class:`~evalband.run._video.RecordPlan` to film episodes (played one at
            a time then); ``None`` films nothing.
        trace_episodes: the first this many episodes of each cell store a trace
            (:mod:`evalband.run._trace`) when the env has a trace hook; ``0`` traces none.
        episode_timeout_s: wall seconds one episode may take (:class:`EpisodeTimeout`);
            ``None``: no limit.
        record_steps: keep every episode's step data (actions, rewards, the ``metrics``
            info keys; :mod:`evalband.run._steps`).
        record_obs: with ``record_steps``, keep the low-dimensional observations too.
    """

    run_id: str
    policy: str
    panel_fingerprint: str
    env: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    budget_steps: int = 1
    batch: bool = True
    batch_size: int = 0
    policy_obj: Any = None
    cwd: str | None = None
    imports: tuple[str, ...] = ()
    success: Rule = DEFAULT_RULE
    metrics: tuple[str, ...] = ()
    control_dt: float | None = None
    time_limit: str = "budget"
    record: Any = None
    trace_episodes: int = TRACE_EPISODES
    episode_timeout_s: float | None = None
    record_steps: bool = False
    record_obs: bool = False

    def step_recorder(self) -> StepRecorder | None:
        """A new episode's step recorder when the task keeps step data, else ``None``."""
        if not self.record_steps:
            return None
        return StepRecorder(self.metrics, observations=self.record_obs)


def resolve_task_policy(name: str) -> Any:
    """Resolve a policy name, server URL or import path to a policy."""
    from evalband.policies import resolve_policy

    return resolve_policy(name)


def env_options(spec: EpisodeSpec) -> dict[str, Any] | None:
    """The reset options the env gets: the cell's, less the policy-only instruction keys.

    >>> env_options(EpisodeSpec("", 0, 0, 1, options={"prompt": "go", "p": 0.5}))
    {'p': 0.5}
    """
    options = {k: v for k, v in spec.options.items() if k not in TASK_OPTION_KEYS}
    return options or None


def episode_context(task: RunTask, spec: EpisodeSpec, slot: int = 0,
                    env: Any = None) -> EpisodeContext:
    """The :class:`~evalband.policies.EpisodeContext` a policy is reset with for ``spec``.

    ``env`` gives the context its ``action_space`` and ``observation_space``.

    >>> spec = EpisodeSpec("", 3, 0, 11, options={"instruction": "push the T"})
    >>> c = episode_context(RunTask("r", "p", "f", "env"), spec)
    >>> c.episode, c.task, c.seed == episode_seed(11)
    (3, 'push the T', True)
    """
    told = {**{k: spec.options[k] for k in TASK_OPTION_KEYS if k in spec.options}, **spec.task}
    # the instruction: a task factor's (or option's) instruction/prompt, else its one value
    task_text = next((str(told[k]) for k in TASK_OPTION_KEYS if k in told), None)
    if task_text is None and len(told) == 1:
        task_text = str(next(iter(told.values())))
    return EpisodeContext(
        run_id=task.run_id, policy=task.policy, cell=spec.cell, slices=dict(spec.slices),
        episode=spec.episode, repeat=spec.repeat, condition_seed=spec.condition_seed,
        seed=episode_seed(spec.condition_seed), task=task_text, slot=slot,
        options={**spec.options, **spec.task},
        action_space=getattr(env, "action_space", None),
        observation_space=getattr(env, "observation_space", None),
    )


_SECOND: tuple[int, str] = (-1, "")
"""The last whole second :func:`_now` formatted, and its text."""


def _now() -> str:
    """The time now in UTC, ISO 8601 to the millisecond (``...T12:00:00.123+00:00``).

    What ``datetime.now(UTC).isoformat(timespec="milliseconds")`` gives, at a fifth of its
    cost (it is read once an episode): the text of the current second is formatted once and
    the milliseconds appended.

    >>> text = _now()
    >>> abs(datetime.fromisoformat(text) - datetime.now(UTC)).total_seconds() < 1.0
    True
    """
    global _SECOND
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    second = _SECOND
    if second[0] != seconds:
        second = _SECOND = (seconds, datetime.fromtimestamp(seconds, UTC).isoformat()[:-6])
    return f"{second[1]}.{nanos // 1_000_000:03d}+00:00"


def _latency_fields(latencies_s: Sequence[float]) -> dict[str, Any]:
    """Median, 95th percentile and max of per-call policy latency, in milliseconds."""
    if not latencies_s:
        return {"latency_ms_p50": None, "latency_ms_p95": None, "latency_ms_max": None}
    ordered = sorted(latencies_s)  # seconds; to milliseconds after (three numbers, not all)
    return {
        "latency_ms_p50": 1000.0 * _quantile(ordered, 0.50),
        "latency_ms_p95": 1000.0 * _quantile(ordered, 0.95),
        "latency_ms_max": 1000.0 * ordered[-1],
    }


def _quantile(ordered: Sequence[float], q: float) -> float:
    """``numpy.percentile``'s default (linear) quantile of sorted values.

    Written out because numpy's per-call overhead (~0.2 ms) dominated the runner's own
    cost per episode.

    >>> _quantile([1.0, 2.0, 3.0, 10.0], 0.5), round(_quantile([1.0, 2.0, 3.0, 10.0], 0.95), 6)
    (2.5, 8.95)
    """
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def judge(task: RunTask) -> Judge:
    """A fresh :class:`~evalband.run._judge.Judge` for one episode of ``task``.

    >>> task = RunTask(run_id="r", policy="p", panel_fingerprint="f", env="e", budget_steps=3)
    >>> j = judge(task)
    >>> [j.step(0.0, False, False, {}) for _ in range(3)][-1]
    (<Outcome.TIMEOUT: 'timeout'>, False, True)
    """
    return Judge(task.success, task.budget_steps, task.metrics)


class EpisodeTimeout(Exception):  # noqa: N818 - the episode's cause, as recorded
    """An episode ran past its wall-time limit (a hung policy or env): an error episode."""


@contextlib.contextmanager
def episode_deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`EpisodeTimeout` in this thread if the block runs past ``seconds``.

    A real-time interval timer (``SIGALRM``), so a policy or env stuck in Python code or in a
    system call (a socket, a sleep) is interrupted; only the main thread can be (elsewhere,
    and with ``None``, no limit). The previous handler is restored after the block.

    >>> with episode_deadline(5.0):
    ...     pass
    """
    import signal
    import threading

    if seconds is None or threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise EpisodeTimeout(f"the episode ran past its {seconds:g} s wall-time limit "
                             "(episode_timeout_s): a hung policy or env; the run went on")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _sim_time(steps: int, dt: float | None) -> float | None:
    return steps * dt if dt else None


def play_episode(env: EvalEnv, policy: Any, spec: EpisodeSpec, task: RunTask,
                 worker: Worker) -> EpisodeRecord:
    """Play one episode to its end (the panel's success rule) and return its record.

    ``policy`` is a :class:`~evalband.policies._runtime.PolicyRuntime` or anything it wraps;
    it is reset with the episode's context before the env is. ``worker`` built ``env``
    (it knows the env's facts) and notes the episode before it is played.
    """
    runtime = as_runtime(policy)
    runtime.setup()  # once per runtime (a no-op after the first), before the timing starts
    started_at = _now()
    wall0 = time.perf_counter()
    latencies: list[float] = []
    env_s = 0.0
    terminated = truncated = False
    outcome = Outcome.TIMEOUT
    error: str | None = None
    tally = judge(task)
    dt, can_trace = worker.env_facts(env, task)
    trace = start_trace(env, spec, dt, task.trace_episodes) if can_trace else None
    steps = task.step_recorder()
    if worker.note is not None:  # the driver notes the episode before it plays (a crash names it)
        worker.note(spec)
    try:
        with episode_deadline(task.episode_timeout_s):
            if runtime.resets():  # the context (a SeedSequence draw): for a policy that reads it
                runtime.reset(episode_context(task, spec, env=env))
            act = runtime.actor()
            t0 = time.perf_counter()
            obs, info = env.reset(seed=spec.condition_seed, options=env_options(spec))
            env_s += time.perf_counter() - t0
            if trace is not None:
                trace.add(0)
            clock = time.perf_counter
            while True:
                t0 = clock()
                action = act(obs)
                t1 = clock()  # the policy's end is the env's start (one clock read, not two)
                latencies.append(t1 - t0)
                if steps is not None:
                    steps.observe(obs)
                    t1 = clock()  # the copy is not the env's time
                obs, reward, terminated, truncated, info = env.step(action)
                env_s += clock() - t1
                end = tally.step(reward, terminated, truncated, info)
                if steps is not None:
                    steps.add(action, reward, info)
                if trace is not None:
                    trace.add(tally.steps)
                if end is not None:
                    outcome, terminated, truncated = end
                    break
    except Exception as exc:  # noqa: BLE001 - every crash becomes an error episode
        outcome = Outcome.ERROR
        terminated = truncated = False
        error = f"{type(exc).__name__}: {exc}"
    info_extra = runtime.episode_info(0)
    return _record(
        task,
        spec,
        outcome=outcome,
        terminated=terminated,
        truncated=truncated,
        steps=tally.steps,
        sim_time_s=_sim_time(tally.steps, dt),
        env_ms=env_s * 1000.0,
        wall_s=time.perf_counter() - wall0,
        started_at=started_at,
        error=error,
        extra={**(metrics_extra(tally) if error is None else {}), **info_extra,
               **(trace.extra() if trace is not None else {}),
               **(steps.extra() if steps is not None else {})},
        **_latency_fields(latencies),
    )


def metrics_extra(tally: Judge) -> dict[str, Any]:
    """The record's ``extra`` for a played episode: ``{"metrics": ...}`` when there are any."""
    metrics = tally.metrics()
    return {"metrics": metrics} if metrics else {}


def _record(
    task: RunTask, spec: EpisodeSpec, *, outcome: Outcome, sim_time_s: float | None,
    **fields: Any,
) -> EpisodeRecord:
    """The record of one played episode: identity from the task and spec, the rest given."""
    return EpisodeRecord(
        run_id=task.run_id,
        policy=task.policy,
        panel_fingerprint=task.panel_fingerprint,
        cell=spec.cell,
        episode=spec.episode,
        repeat=spec.repeat,
        condition_seed=spec.condition_seed,
        slices=dict(spec.slices),
        outcome=outcome,
        sim_time_s=sim_time_s,
        # a success judged at the episode's end (return, final_step) has no time to success
        time_to_success_s=sim_time_s if outcome is Outcome.SUCCESS
        and task.success.rule in ("terminal", "any_step") else None,
        **fields,
    )


def _batch_records(
    env: Any, policy: Any, specs: Sequence[EpisodeSpec], task: RunTask, worker: Worker
) -> list[EpisodeRecord] | None:
    """Play specs in lockstep through the env's batch simulator, or ``None`` if unsupported.

    Only for a stateless batched callable (``batched = True``, no ``reset``): the simulator
    calls it on the whole batch and knows nothing of episode lifecycles. It keeps no
    trajectory, so the traced episodes (:mod:`evalband.run._trace`) are played one at a time.
    Each record's ``extra["metrics"]`` is the hook's ``metrics`` (per-spec lists by name),
    what one-at-a-time play stores; a hook that returns none is not used (``None``), so
    no episode of a run lacks the metrics its neighbours carry.
    """
    runtime = as_runtime(policy)
    policy = runtime.policy
    batch_fn = getattr(type(getattr(env, "unwrapped", env)), "batch_rollout", None)
    if (not task.batch or batch_fn is None or not getattr(policy, "batched", False)
            or runtime.kind != "batched" or callable(getattr(policy, "reset", None))):
        return None
    if task.success != DEFAULT_RULE or task.metrics or task.record_steps or \
            any(s.env_kwargs for s in specs):
        return None  # the hook knows the terminal rule and the panel's constructor args only
    traced = {s.key for s in specs if traces(s, task.trace_episodes)}
    if not traceable(env):
        traced = set()  # no trace hook: the simulator plays them all
    rest = [s for s in specs if s.key not in traced]
    started_at = _now()
    wall0 = time.perf_counter()
    try:
        result = batch_fn(policy, rest, task.env_kwargs, task.budget_steps) if rest else {}
    except Exception:  # noqa: BLE001 - fall back to one-at-a-time, which isolates the error
        return None
    wall = time.perf_counter() - wall0
    metrics = result.get("metrics") if rest else {}
    if metrics is None:
        return None  # its records would lack the metrics one-at-a-time play stores
    per_call_ms = result.get("policy_call_ms", [])
    latency = _latency_fields([ms / 1000.0 for ms in per_call_ms])
    records = {s.key: play_episode(env, runtime, s, task, worker)
               for s in specs if s.key in traced}
    for i, spec in enumerate(rest):
        played = {name: float(values[i]) for name, values in metrics.items()}
        records[spec.key] = _record(
            task,
            spec,
            outcome=Outcome(str(result["outcome"][i])),
            terminated=bool(result["terminated"][i]),
            truncated=bool(result["truncated"][i]),
            steps=int(result["steps"][i]),
            sim_time_s=float(result["sim_time_s"][i]),
            env_ms=None,
            wall_s=wall / len(rest),
            started_at=started_at,
            extra={**({"metrics": played} if played else {}), "batched": True},
            **latency,
        )
    return [records[spec.key] for spec in specs]


def execute_chunk(task: RunTask, specs: Sequence[EpisodeSpec],
                  worker: Worker | None = None) -> Iterator[EpisodeRecord]:
    """Yield one record per spec, in order (batched when the env and policy allow it).

    With ``task.batch_size`` set, episodes are played in lockstep and yielded as they finish.
    ``worker`` builds (or reuses) the env and the policy: the run's in the driver; ``None``:
    this process's (:func:`~evalband.run._worker.process_worker`).
    """
    worker = worker if worker is not None else process_worker()
    env, policy = worker.env_and_policy(task)
    if task.record is not None:  # filming: one episode at a time, frames from env.render()
        from evalband.run._video import play_recorded

        yield from play_recorded(task, specs, env, policy, worker, play_episode)
        return
    if task.batch_size:
        from evalband.run._lockstep import play_lockstep

        yield from play_lockstep(task, specs, env, policy, worker)
        return
    batched = _batch_records(env, policy, specs, task, worker)
    if batched is not None:
        yield from batched
        return
    for spec in specs:
        yield play_episode(worker.task_env(task, env, spec), policy, spec, task, worker)


def execute_chunk_list(task: RunTask, specs: Sequence[EpisodeSpec]) -> list[EpisodeRecord]:
    """:func:`execute_chunk` as a list, with this process's worker.

    What a worker process runs and sends back: a pool's worker, an isolated chunk's child,
    a Ray task.
    """
    return list(execute_chunk(task, specs, process_worker()))
