"""The runner: a Panel + a policy -> Episode records in the store, resumable after a crash."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalband.analysis import RunSummary, summarize
from evalband.episode import EpisodeRecord, EpisodeSpec
from evalband.errors import InvalidParameterError, PanelMismatchError, StoreError
from evalband.panel import Panel
from evalband.policies._runtime import as_runtime, policy_label
from evalband.run._backends import get_backend
from evalband.run._execute import RunTask, resolve_task_policy
from evalband.run._judge import Rule
from evalband.run._options import RunOptions
from evalband.run._worker import Worker
from evalband.store._lease import RunLease, discard_empty_run

if TYPE_CHECKING:
    from evalband.store import RunStore
    from evalband.store._manifest import RunManifest

__all__ = ["run_panel", "keep_step", "default_run_id", "default_episode_timeout",
           "panel_task", "GroupCommit",
           "ProgressCallback"]

ProgressCallback = Callable[[EpisodeRecord], None]


def default_run_id(panel: Panel, policy: str) -> str:
    """A readable, unique-enough run id: panel, policy and UTC time.

    >>> default_run_id(Panel(name="p", env="evalband/Coin-v0", episodes=1, seed=0,
    ...                      budget={"steps": 1}), "a:b").startswith("p-a_b-")
    True
    """
    from evalband._util.ids import RUN_ID_MAX, safe_name

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    head = safe_name(f"{panel.name}-{policy.replace(':', '_')}", "run")
    return f"{head[: RUN_ID_MAX - len(stamp) - 1]}-{stamp}"


def _check_env_kwargs(panel: Panel) -> None:
    """Refuse, before anything is stored, ``env_kwargs`` the env's constructor cannot take."""
    from evalband.envs._resolve import accepts_kwarg, env_class
    from evalband.errors import PanelError

    if not panel.env_kwargs:
        return
    cls = env_class(panel.env)
    if cls is None:
        return
    unknown = [k for k in panel.env_kwargs if not accepts_kwarg(cls, k)]
    if unknown:
        import inspect

        try:
            known = [n for n in inspect.signature(cls).parameters if n != "self"]
        except (TypeError, ValueError):
            known = []
        raise PanelError(
            f"panel {panel.name}: env {panel.env} does not take env_kwargs "
            f"{', '.join(map(repr, unknown))}; it takes {', '.join(known) or 'none'}; fix "
            "env_kwargs in the panel"
        )


def _env_dt(panel: Panel) -> float | None:
    """The panel's control period: its ``control_dt``, else read from an env instance.

    The env is built with the panel's own arguments (no budget), asked
    (:func:`~evalband.envs._contract.control_dt`) and closed.
    """
    if panel.control_dt is not None:
        return panel.control_dt
    from evalband.envs import control_dt, make_env
    from evalband.envs._resolve import close_env, prepare_imports

    prepare_imports(imports=panel.imports)
    env = make_env(panel.env, dict(panel.env_kwargs))
    try:
        return control_dt(env).dt
    finally:
        close_env(env)


class GroupCommit:
    """Commit episodes that finish within a few tens of milliseconds of each other together.

    One commit per episode weighed on short simulated episodes (a WAL commit costs ~0.3-1 ms
    here, an episode of a fast env ~10-20 ms). An episode that arrives more than
    :attr:`WINDOW_S` after the previous one is committed at once, as before; one that arrives
    sooner joins a group, committed in one transaction (:meth:`RunStore.add_episodes`) when
    the group is :attr:`MAX_GROUP` long or :attr:`MAX_WAIT_S` old, when a later episode is
    slow, and when the run ends or is interrupted (the block exits, also on an exception).
    Resume stays exactly-once: an episode is done when it is committed, and a grouped episode
    lost to a kill was never stored, so the resume plays it again (condition-seeded: the same
    record). ``on_episode`` is called for each record after its commit.
    """

    WINDOW_S = 0.05
    MAX_GROUP = 256
    MAX_WAIT_S = 0.25

    def __init__(self, store: RunStore, on_episode: ProgressCallback | None = None) -> None:
        self.store = store
        self.on_episode = on_episode
        self.pending: list[EpisodeRecord] = []
        self._first = 0.0
        self._last = -math.inf

    def add(self, record: EpisodeRecord) -> None:
        """Take one finished episode; commit now or with the next few."""
        now = time.perf_counter()
        quick, self._last = now - self._last < self.WINDOW_S, now
        if not self.pending:
            self._first = now
        if not quick and self.pending:
            self.flush()  # the group's last member was followed by a slow episode
            self._first = now
        self.pending.append(record)
        if not quick or len(self.pending) >= self.MAX_GROUP or now - self._first >= \
                self.MAX_WAIT_S:
            self.flush()

    def flush(self) -> None:
        """Commit the pending episodes (one transaction), then report each."""
        if not self.pending:
            return
        group, self.pending = self.pending, []
        if any(record.media or "step_data" in record.extra for record in group):
            # their clips and step data on disk first
            from evalband.store._media import sync_media

            sync_media()
        if len(group) == 1:
            self.store.add_episode(group[0])
        else:
            self.store.add_episodes(group)
        if self.on_episode is not None:
            for record in group:
                self.on_episode(record)

    def __enter__(self) -> GroupCommit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


SERVER_FAILURES_IN_A_ROW = 3
"""Episodes in a row that a policy server fails (:class:`~evalband.policies.remote.
ServerUnreachableError`: not reached, or no answer within its timeout) before the run stops."""


class _Breaker:
    """Stops a run whose policy server is gone.

    :data:`SERVER_FAILURES_IN_A_ROW` error episodes in a row caused by the transport (a dead
    or hung server), not by the policy, stop it. Each such episode costs at most the client's
    ``timeout``, so a hung server stops the run within that many timeouts instead of turning
    every remaining episode into an error.
    """

    CAUSE = "ServerUnreachableError:"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.in_a_row = 0

    def check(self, record: EpisodeRecord) -> None:
        """Count ``record``; raise :class:`~evalband.errors.RunStoppedError` when tripped."""
        from evalband.errors import RunStoppedError

        if not (record.error or "").startswith(self.CAUSE):
            self.in_a_row = 0
            return
        self.in_a_row += 1
        if self.in_a_row >= SERVER_FAILURES_IN_A_ROW:
            cause = (record.error or "")[len(self.CAUSE):].strip().split("; check")[0]
            raise RunStoppedError(
                f"the policy server failed {self.in_a_row} episodes in a row ({cause}): run "
                f"{self.run_id} stopped, marked interrupted, its stored episodes kept",
                run_id=self.run_id)


class _PanelWatch:
    """What ``check-env`` would say of a panel, said by the run as it goes (``on_note``).

    Before the first episode: whether the first condition seed reproduces its start (envs
    outside evalband's own). After the first :attr:`FIRST` episodes of this call, if none
    succeeded: whether the success rule's info key ever appears (one short episode of
    random actions). Each check runs once, in an env of its own, and never fails the run.
    """

    FIRST = 3

    def __init__(self, task: RunTask, todo: list[EpisodeSpec],
                 on_note: Callable[[str], None] | None) -> None:
        self.task, self.todo, self.on_note = task, todo, on_note
        self.seen = 0
        self.wins = 0

    def _say(self, check: Callable[[], Any]) -> None:
        assert self.on_note is not None
        try:
            finding = check()
        except Exception:  # noqa: BLE001 - a probe never fails the run
            return
        if finding is not None:
            self.on_note(f"env {self.task.env}: {finding.message} (evalband check-env "
                         "checks the panel)")

    def before(self) -> None:
        """The reproduction check, before any episode is played."""
        if self.on_note is None or not self.todo or self.task.env.startswith("evalband/"):
            return
        from evalband.run._check import reproduction_finding

        seed = self.todo[0].condition_seed
        self._say(lambda: reproduction_finding(self.task, seed))

    def after(self, record: EpisodeRecord) -> None:
        """Count one played episode; probe the success key after the first ones."""
        if self.on_note is None or self.seen >= self.FIRST:
            return
        self.seen += 1
        self.wins += record.success
        if self.seen == min(self.FIRST, len(self.todo)) and self.wins == 0 and \
                self.task.success.rule != "return":
            from evalband.run._check import success_key_finding

            spec = self.todo[0]
            self._say(lambda: success_key_finding(self.task, spec))


def default_episode_timeout(budget_steps: int) -> float:
    """The wall seconds an episode may take unless told: 60 s plus one second a step.

    Far above any real episode's time (simulated steps take milliseconds; a real robot's
    steps under a second), and finite: a hung policy or env costs minutes, not the run.

    >>> default_episode_timeout(300)
    360.0
    """
    return 60.0 + float(budget_steps)


def panel_task(panel: Panel, run_id: str, policy: str, **fields: Any) -> RunTask:
    """The :class:`RunTask` that plays ``panel`` (budget in steps, success rule, imports).

    >>> from evalband.panel import load_panel
    >>> panel_task(load_panel("reach1d"), "r", "reach1d:damped").budget_steps
    30
    """
    import os

    # dt only for a budget in seconds (finding it builds the env: MuJoCo for PushT)
    dt = panel.control_dt if panel.budget.seconds is None else _env_dt(panel)
    budget_steps = panel.budget.resolve_steps(dt)
    timeout = fields.pop("episode_timeout_s", None) or panel.episode_timeout_s or \
        default_episode_timeout(budget_steps)
    return RunTask(
        run_id=run_id,
        policy=policy,
        panel_fingerprint=panel.fingerprint,
        env=panel.env,
        env_kwargs=fields.pop("env_kwargs", dict(panel.env_kwargs)),
        budget_steps=budget_steps,
        episode_timeout_s=timeout,
        cwd=os.getcwd(),
        imports=tuple(panel.imports),
        success=Rule(**panel.success.model_dump()),
        metrics=tuple(panel.info_keys),
        control_dt=panel.control_dt,
        time_limit=panel.time_limit,
        **fields,
    )


def _record_crash(store: RunStore, task: RunTask, specs: list[EpisodeSpec],
                  on_note: Callable[[str], None] | None) -> None:
    """Store, as an ``error``, the episode the run's last process crashed in (a segfault).

    Read from the run's in-flight marker (:mod:`evalband.run._flight`); nothing when the last
    process ended any other way. The episode is then skipped like any error episode, and
    ``retry_errors`` plays it again.
    """
    from evalband.episode import Outcome
    from evalband.run._execute import _now, _record
    from evalband.run._flight import crashed_episode

    found = crashed_episode(store.path, task.run_id)
    if found is None:
        return
    key, cause = found
    spec = next((s for s in specs if s.key == key), None)
    if spec is None or key in store.done_keys(task.run_id):
        return
    error = (f"ProcessCrash: the process playing this episode died: {cause}; recorded when "
             "the run resumed (replay it with retry_errors once fixed)")
    store.add_episode(_record(task, spec, outcome=Outcome.ERROR, sim_time_s=None,
                              terminated=False, truncated=False, steps=0, started_at=_now(),
                              error=error))
    if on_note is not None:
        on_note(f"episode {key} crashed the last run's process ({cause}): stored as an error")


def _policy_hash(policy_fn: object) -> str | None:
    """The hash a run manifest records for a policy.

    A checkpoint's content hash (the policy's ``checkpoint_hash`` attribute, set by
    ``evalband.policies.bc.load_policy``) when it has one, else the sha256 of its source.

    >>> class Loaded:
    ...     checkpoint_hash = "ab" * 32
    >>> _policy_hash(Loaded()) == "ab" * 32, len(_policy_hash(default_run_id) or "")
    (True, 64)
    """
    from evalband._util.imports import source_hash

    digest = getattr(policy_fn, "checkpoint_hash", None)
    if isinstance(digest, str) and digest:
        return digest
    return source_hash(policy_fn)


def keep_step(store: RunStore, existing: RunManifest, step: int | None) -> None:
    """On a resume: record ``step`` on a run that had none; refuse a different one.

    Raises:
        StoreError: the run was recorded at another checkpoint step.
    """
    from evalband.store._manifest import check_step

    check_step(step)
    if step is None or existing.step == step:
        return
    if existing.step is not None:
        raise StoreError(
            f"run {existing.run_id} was recorded at checkpoint step {existing.step}, not "
            f"{step}; use a new `run_id` for another checkpoint", parameters=("run_id",),
        )
    store.update_run(existing.run_id, step=step)


@dataclasses.dataclass
class _PlannedRun:
    """A run checked and planned by :func:`run_panel`, before the store is touched."""

    panel: Panel
    policy: str  # its label
    resolved: Any  # the resolved policy (or the policy object given)
    run_id: str
    backend_impl: Any
    lockstep: int | None  # the checked batch size
    batch_extra: dict[str, object]  # the batching recorded in the manifest's extra
    specs: list[EpisodeSpec]
    plan: Any  # the video recording plan, or None
    task: Any
    errors_as_failures: bool
    worker: Worker  # the run's envs and policy in this process; closed when the run ends


def _plan_run(panel: Panel, policy: str | Any, options: RunOptions) -> _PlannedRun:
    """Check ``run_panel``'s arguments, start its backend and build the task it plays.

    Everything here fails before the store is touched (see :func:`run_panel`).
    """
    run_id, backend, episode_timeout = options.run_id, options.backend, options.episode_timeout
    record_video, record_size, record_steps = (options.record_video, options.record_size,
                                               options.record_steps)
    from evalband._util.ids import check_run_id
    from evalband.envs._resolve import prepare_imports
    from evalband.run._check import refuse_ignored_factors
    from evalband.run._isolation import check_not_bootstrapping

    check_not_bootstrapping()  # a script without a __main__ guard, re-run by a worker
    if run_id is not None:
        check_run_id(run_id)  # before a backend starts or the store is touched
    _check_env_kwargs(panel)
    prepare_imports(imports=panel.imports)  # the driver resolves names as the workers will
    policy_obj = None if isinstance(policy, str) else policy
    if policy_obj is not None:
        resolved: Any = policy_obj
        policy = policy_label(policy_obj)
    else:
        resolved = resolve_task_policy(policy)  # fail fast, in the driver, listing policies
    from evalband.run._lockstep import check_batch_size

    lockstep = check_batch_size(options.batch_size)
    if lockstep and (refusal := as_runtime(resolved).batch_refusal(policy)) is not None:
        raise InvalidParameterError(refusal, parameters=("batch_size",))
    batch_extra: dict[str, object] = {"batch_size": lockstep}
    probe = getattr(resolved, "probe_batch_mode", None)  # a TorchPolicy's kernel check
    if lockstep and callable(probe) and (mode := probe()) is not None:
        batch_extra["batch_mode"] = mode  # as probed in the driver
    backend_impl = get_backend(backend, options.workers, address=options.address)
    warm_up = getattr(backend_impl, "warm_up", None)  # process: workers start while we plan
    if callable(warm_up):
        warm_up(panel.env, policy)
    specs = panel.episode_specs()
    plan, env_kwargs = None, dict(panel.env_kwargs)
    if record_video is not None:
        from evalband.run._video import check_recording, parse_record, record_kwargs

        dt = _env_dt(panel)
        plan = parse_record(record_video, specs, seed=panel.seed, fps=1.0 / dt if dt else None)
        filming, resize = record_kwargs(panel.env, record_size)
        check_recording(panel.env, filming, env_kwargs)  # PyAV, and one frame, before any
        if resize:
            plan = dataclasses.replace(plan, resize=record_size)
        env_kwargs = {**filming, **env_kwargs}
    run_id = run_id or default_run_id(panel, policy)
    if episode_timeout is not None and not (math.isfinite(episode_timeout)
                                            and episode_timeout > 0):
        raise InvalidParameterError(f"`episode_timeout` must be a number of seconds > 0; got "
                                    f"{episode_timeout}", parameters=("episode_timeout",))
    if record_steps not in (False, True, "obs"):
        raise InvalidParameterError(
            f"`record_steps` is True, False or 'obs' (observations too); got {record_steps!r}",
            parameters=("record_steps",))
    task = panel_task(panel, run_id, policy, batch=options.batch, batch_size=lockstep,
                      env_kwargs=env_kwargs, record=plan, policy_obj=policy_obj,
                      episode_timeout_s=episode_timeout, record_steps=bool(record_steps),
                      record_obs=record_steps == "obs")
    worker = Worker()
    try:
        refuse_ignored_factors(panel, task)
        if backend_impl.name == "serial":  # the env it plays: a broken one fails in one line
            worker.env_and_policy(task)  # (a process run's driver need not import the env)
    except BaseException:
        worker.close()
        raise
    return _PlannedRun(panel, policy, resolved, run_id, backend_impl, lockstep, batch_extra,
                       specs, plan, task, options.errors_as_failures, worker)


def _open_run(
    store: RunStore, planned: _PlannedRun, options: RunOptions
) -> tuple[RunManifest | None, RunLease]:
    """Resume the stored run (checked against the plan) or create it; hold its lease.

    A resume may turn ``planned.errors_as_failures`` on (the stored run's choice holds).

    Returns:
        The stored manifest before this call (``None`` for a new run) and the held lease.
    """
    panel, policy, resolved, run_id = (planned.panel, planned.policy, planned.resolved,
                                       planned.run_id)
    backend_impl, lockstep, batch_extra = (planned.backend_impl, planned.lockstep,
                                           planned.batch_extra)
    specs, errors_as_failures = planned.specs, planned.errors_as_failures
    step, override = options.step, options.override
    existing = store.get_run(run_id)
    if existing is not None:
        if existing.panel_fingerprint != panel.fingerprint:
            raise PanelMismatchError(
                f"run {run_id} was recorded on panel {existing.panel_name} "
                f"(fingerprint {existing.panel_fingerprint[:12]}), not this panel "
                f"({panel.fingerprint[:12]}); use a new `run_id`", parameters=("run_id",),
            )
        if existing.policy != policy:
            raise StoreError(
                f"run {run_id} was recorded with policy {existing.policy!r}, not {policy!r}; "
                "use a new `run_id`", parameters=("run_id",),
            )
        current = getattr(resolved, "checkpoint_hash", None)
        if current and existing.policy_hash and current != existing.policy_hash:
            raise StoreError(
                f"run {run_id} was recorded with checkpoint sha256 {existing.policy_hash[:12]}, "
                f"but {policy!r} now hashes to {current[:12]}: the weights changed; "
                "use a new `run_id`", parameters=("run_id",),
            )
        keep_step(store, existing, step)
        lease = RunLease(store, run_id)
        lease.acquire()  # a second writer on a live run is refused here, before any change
        store.update_run(run_id, status="running", finished_at=None)
        if errors_as_failures and not existing.errors_as_failures:
            # the user's decision is recorded, so show/compare/report count as printed here
            store.update_run(run_id, errors_as_failures=True)
        errors_as_failures = errors_as_failures or existing.errors_as_failures
        changed = {k: v for k, v in batch_extra.items() if existing.extra.get(k, 0) != v}
        if changed:
            # the manifest keeps how the run was started; a resume with other batching
            # (which changes timing fields only) is listed, not written over it
            resumes = [*existing.extra.get("resumed_with", []), changed]
            store.update_run(run_id, extra={**existing.extra, "resumed_with": resumes})
    else:
        from evalband.store._manifest import new_manifest

        store.create_run(
            new_manifest(
                panel,
                policy,
                run_id,
                backend=options.backend,
                workers=backend_impl.workers,
                policy_hash=_policy_hash(resolved),
                command=options.command,
                errors_as_failures=errors_as_failures,
                n_planned=len(specs),
                step=step,
            )
        )
        lease = RunLease(store, run_id)
        lease.acquire()
        if lockstep or override:
            store.update_run(run_id, extra={**(batch_extra if lockstep else {}),
                                            **({"override": override} if override else {})})
        ray_address = getattr(backend_impl, "address", None)
        if ray_address is not None:  # where a ray run ran: local, auto or the cluster
            extra = store.require_run(run_id).extra
            store.update_run(run_id, extra={**extra, "address": ray_address})
    planned.errors_as_failures = errors_as_failures
    return existing, lease


def _play_run(
    store: RunStore,
    planned: _PlannedRun,
    existing: RunManifest | None,
    lease: RunLease,
    options: RunOptions,
) -> tuple[str, RunSummary]:
    """Play the episodes still to play, commit each one, and mark the run's end status.

    Returns:
        The run id and the run's summary (see :func:`run_panel`).
    """
    run_id, task, specs, plan = planned.run_id, planned.task, planned.specs, planned.plan
    backend_impl, resolved = planned.backend_impl, planned.resolved
    errors_as_failures = planned.errors_as_failures
    on_note, order, stop_when = options.on_note, options.order, options.stop_when
    record_video, record_size, record_steps = (options.record_video, options.record_size,
                                               options.record_steps)
    status = "interrupted"
    played: list[EpisodeRecord] = []  # this call's committed records, as stored
    try:
        if existing is not None:  # the last process crashed in an episode: it is an error
            _record_crash(store, task, specs, on_note)
        retried = (store.delete_error_episodes(run_id) if existing and options.retry_errors
                   else {})
        done = store.done_keys(run_id)
        todo = [spec for spec in specs if spec.key not in done]
        if order is not None:
            todo = order(todo)
        if options.on_start is not None:
            options.on_start(len(specs), store.episode_records(run_id) if done else [])
        if plan is not None:
            extra = store.require_run(run_id).extra
            store.update_run(run_id, extra={
                **extra, "record": record_video,
                **({"record_size": list(record_size)} if record_size else {})})
        if record_steps:
            extra = store.require_run(run_id).extra
            store.update_run(run_id, extra={**extra, "record_steps": True,
                                            **({"record_obs": True}
                                               if record_steps == "obs" else {})})
        if todo and backend_impl.name in ("serial", "process"):
            # The driver plays episodes itself (all of them, or while workers start): set
            # its policy up now, outside every episode's timing, and record the warm-up.
            runtime = planned.worker.policy(task, resolved)
            if runtime.has_setup:
                extra = store.require_run(run_id).extra
                setup_s = round(runtime.setup(), 6)
                store.update_run(run_id, extra={**extra, "policy_setup_s": setup_s})
        watch = _PanelWatch(task, todo, on_note)
        watch.before()
        breaker = _Breaker(run_id)
        from evalband.run._flight import FlightRecorder

        with store.reproducible_writes(), FlightRecorder(store.path, run_id) as flight:
            planned.worker.note = flight.note  # the driver's own episodes
            with GroupCommit(store, options.on_episode) as group:
                for record in backend_impl.run(task, todo, planned.worker):
                    watch.after(record)
                    key = (record.cell, record.episode, record.repeat)
                    if key in retried:
                        record = dataclasses.replace(record, attempts=retried[key] + 1)
                    if plan is not None or record_steps:
                        from evalband.run._video import store_pending_media

                        record = store_pending_media(store.path, record)
                    group.add(record)
                    played.append(record)
                    lease.beat()
                    breaker.check(record)  # a dead server: stop (committed on the way out)
                    if stop_when is not None:
                        group.flush()  # a sequential look sees every committed episode
                        if stop_when(record):
                            break
        status = "finished"
    finally:
        planned.worker.note = None
        planned.worker.close()  # the policy and every env this run built here, also on error
        try:
            # a new run that failed before its first episode leaves nothing behind
            if not (status != "finished" and existing is None
                    and discard_empty_run(store, run_id)):
                store.update_run(
                    run_id,
                    status=status,
                    finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                )
        finally:
            lease.release()
    if done or retried:  # episodes stored before this call count too: read the run back
        records = store.episode_records(run_id)
    else:  # the run is what this call played: no read-back (~40 us an episode)
        records = sorted(played, key=lambda r: r.key)  # the store's order
    return run_id, summarize(records, errors_as_failures=errors_as_failures)


def run_panel(
    panel: Panel,
    policy: str | Any,
    store: RunStore,
    options: RunOptions | None = None,
    **changes: Any,
) -> tuple[str, RunSummary]:
    """Run ``policy`` on every planned episode of ``panel`` and record each one in ``store``.

    Episodes are a fixed list decided up front. Re-running with the same ``run_id`` resumes:
    finished episodes are skipped; a different panel fingerprint or policy is refused.

    Args:
        panel: the panel.
        policy: a built-in policy name, a ``*.pt`` checkpoint path (its sha256 is the
            manifest's ``policy_hash``; resuming with changed weights is refused), a
            ``ws://HOST:PORT`` policy server, a ``module:attr`` import path, or a policy
            object (any callable, :class:`~evalband.policies.Policy`, batched policy or
            factory; recorded under its ``name`` attribute or ``module:qualname``, and
            pickled to worker processes). Its ``setup()`` runs in this process before the
            first episode (serial and process backends), outside every timed region; the
            seconds go to the manifest's ``extra["policy_setup_s"]``.
        store: an open :class:`~evalband.store.RunStore`.
        options: how to run it (:class:`~evalband.run._options.RunOptions`: run id, backend,
            workers, batching, recording, the step, the timeout, callbacks); its defaults
            when omitted.
        **changes: any option by its name, as keyword arguments (``run_id="r1",
            backend="process"``), applied over ``options``; an unknown name is a
            ``TypeError`` as for any function.

    Returns:
        The run id and the run's summary.

    Raises:
        EnvError: the env cannot be imported or built, or a factor does not take effect
            (one line naming it; before the store is touched).
        RunStoppedError: the policy server failed :data:`SERVER_FAILURES_IN_A_ROW` episodes
            in a row; the run is marked ``interrupted`` and resumes with the same ``run_id``.
    """
    options = (options or _DEFAULT_OPTIONS).with_changes(**changes)
    planned = _plan_run(panel, policy, options)
    try:
        existing, lease = _open_run(store, planned, options)
    except BaseException:
        planned.worker.close()  # the env a serial run built to check it
        raise
    return _play_run(store, planned, existing, lease, options)


_DEFAULT_OPTIONS = RunOptions()
