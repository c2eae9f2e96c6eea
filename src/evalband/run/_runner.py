"""The runner: a Panel + a policy -> Episode records in the store, resumable after a crash."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalband.analysis import RunSummary, summarize
from evalband.episode import EpisodeRecord, EpisodeSpec
from evalband.errors import InvalidParameterError, PanelMismatchError, StoreError
from evalband.panel import Panel
from evalband.run._backends import get_backend
from evalband.run._execute import RunTask, resolve_task_policy

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = ["run_panel", "default_run_id", "ProgressCallback"]

ProgressCallback = Callable[[EpisodeRecord], None]


def default_run_id(panel: Panel, policy: str) -> str:
    """A readable, unique-enough run id: panel, policy and UTC time.

    >>> default_run_id(Panel(name="p", env="evalband/Coin-v0", episodes=1, seed=0,
    ...                      budget={"steps": 1}), "a:b").startswith("p-a_b-")
    True
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in policy)
    return f"{panel.name}-{safe}-{stamp}"


def _env_dt(panel: Panel) -> float | None:
    from evalband.envs._resolve import env_class

    cls = env_class(panel.env)
    dt = panel.env_kwargs.get("dt", getattr(cls, "dt", None) if cls else None)
    if dt is None and cls is not None:
        import inspect

        param = inspect.signature(cls).parameters.get("dt")
        if param is not None and isinstance(param.default, int | float):
            dt = float(param.default)
    return float(dt) if dt is not None else None


def _policy_hash(policy_fn: object) -> str | None:
    """The hash a run manifest records for a policy.

    A checkpoint's content hash (the policy's ``checkpoint_hash`` attribute, set by
    ``evalband.policies.bc.load_policy``) when it has one, else the sha256 of its source.

    >>> class Loaded:
    ...     checkpoint_hash = "ab" * 32
    >>> _policy_hash(Loaded()) == "ab" * 32, len(_policy_hash(default_run_id) or "")
    (True, 64)
    """
    from evalband._imports import source_hash

    digest = getattr(policy_fn, "checkpoint_hash", None)
    if isinstance(digest, str) and digest:
        return digest
    return source_hash(policy_fn)


def run_panel(
    panel: Panel,
    policy: str,
    store: RunStore,
    *,
    run_id: str | None = None,
    backend: str = "serial",
    workers: int | None = 1,
    address: str | None = None,
    errors_as_failures: bool = False,
    command: str | None = None,
    on_episode: ProgressCallback | None = None,
    on_start: Callable[[int, list[EpisodeRecord]], None] | None = None,
    batch: bool = True,
    batch_size: int | None = None,
    record_video: str | None = None,
    order: Callable[[list[EpisodeSpec]], list[EpisodeSpec]] | None = None,
    stop_when: Callable[[EpisodeRecord], bool] | None = None,
) -> tuple[str, RunSummary]:
    """Run ``policy`` on every planned episode of ``panel`` and record each one in ``store``.

    Episodes are a fixed list decided up front. Re-running with the same ``run_id`` resumes:
    finished episodes are skipped; a different panel fingerprint or policy is refused.

    Args:
        panel: the panel.
        policy: a built-in policy name, a ``*.pt`` checkpoint path (its sha256 is the
            manifest's ``policy_hash``; resuming with changed weights is refused) or a
            ``module:attr`` import path.
        store: an open :class:`~evalband.store.RunStore`.
        run_id: resume or name the run; a fresh id is made when omitted.
        backend: ``serial``, ``process`` or ``ray``.
        workers: worker processes for the process and ray backends (``None``: 1 for
            process, every CPU of the Ray cluster for ray).
        address: the Ray cluster for ``backend="ray"``: ``None``/``local`` (start one on
            this machine), ``auto`` or ``ray://HOST:PORT`` (see ``docs/ray.md``); recorded in
            the manifest's ``extra["address"]``.
        errors_as_failures: count error episodes as failures (kept in the manifest).
        command: the command line, for the manifest.
        on_episode: called with each record after it is committed.
        on_start: called with (planned total, already-finished records) before playing.
        batch: allow lockstep batch simulation where the env and policy support it.
        batch_size: play up to this many episodes in lockstep with one policy call per step
            on their stacked observations (``evalband run --batch N``; see
            ``docs/batching.md``); records equal the one-at-a-time path's except for timing.
            ``None`` plays one episode at a time. Recorded in the manifest's ``extra``, with
            a torch policy's ``batch_mode`` (:meth:`~evalband.policies._torch.TorchPolicy.
            probe_batch_mode`).
        record_video: ``"failures"``, ``"all"`` or ``"sample:K"``: film those episodes (the env
            is made with ``render_mode="rgb_array"``), store each clip beside the store and
            reference it from the record's ``extra["media"]`` (:mod:`evalband.run._video`).
        order: reorders the episodes still to play (``run --until-decided`` interleaves cells).
        stop_when: called with each committed record; returning True ends the run there
            (``run --until-decided``: the comparison is decided).

    Returns:
        The run id and the run's summary.
    """
    resolved = resolve_task_policy(policy)  # fail fast, in the driver, listing known policies
    from evalband.run._lockstep import check_batch_size

    lockstep = check_batch_size(batch_size)
    batch_extra: dict[str, object] = {"batch_size": lockstep}
    probe = getattr(resolved, "probe_batch_mode", None)  # a TorchPolicy's kernel check
    if lockstep and callable(probe) and (mode := probe()) is not None:
        batch_extra["batch_mode"] = mode  # as probed in the driver
    backend_impl = get_backend(backend, workers, address=address)
    specs = panel.episode_specs()
    plan, env_kwargs = None, dict(panel.env_kwargs)
    if record_video is not None:
        from evalband.run._video import parse_record

        dt = _env_dt(panel)
        plan = parse_record(record_video, specs, seed=panel.seed, fps=1.0 / dt if dt else None)
        from evalband.envs._resolve import accepts_kwarg, env_class

        cls = env_class(panel.env)
        if cls is not None and not accepts_kwarg(cls, "render_mode"):
            raise InvalidParameterError(
                f"--record needs frames, but env {panel.env} takes no render_mode; record "
                "an env that draws rgb_array frames (evalband/PushT-v0 does), or drop --record"
            )
        env_kwargs.setdefault("render_mode", "rgb_array")
    run_id = run_id or default_run_id(panel, policy)
    existing = store.get_run(run_id)
    if existing is not None:
        if existing.panel_fingerprint != panel.fingerprint:
            raise PanelMismatchError(
                f"run {run_id} was recorded on panel {existing.panel_name} "
                f"(fingerprint {existing.panel_fingerprint[:12]}), not this panel "
                f"({panel.fingerprint[:12]}); use a new --run-id"
            )
        if existing.policy != policy:
            raise StoreError(
                f"run {run_id} was recorded with policy {existing.policy!r}, not {policy!r}; "
                "use a new --run-id"
            )
        current = getattr(resolved, "checkpoint_hash", None)
        if current and existing.policy_hash and current != existing.policy_hash:
            raise StoreError(
                f"run {run_id} was recorded with checkpoint sha256 {existing.policy_hash[:12]}, "
                f"but {policy!r} now hashes to {current[:12]}: the weights changed; "
                "use a new --run-id"
            )
        store.update_run(run_id, status="running", finished_at=None)
        errors_as_failures = errors_as_failures or existing.errors_as_failures
        if any(existing.extra.get(k, 0) != v for k, v in batch_extra.items()):
            # how timing fields were measured (and batches passed)
            store.update_run(run_id, extra={**existing.extra, **batch_extra})
    else:
        from evalband.store import new_manifest

        store.create_run(
            new_manifest(
                panel,
                policy,
                run_id,
                backend=backend,
                workers=backend_impl.workers,
                policy_hash=_policy_hash(resolved),
                command=command,
                errors_as_failures=errors_as_failures,
                n_planned=len(specs),
            )
        )
        if lockstep:
            store.update_run(run_id, extra=batch_extra)
        ray_address = getattr(backend_impl, "address", None)
        if ray_address is not None:  # where a ray run ran: local, auto or the cluster
            extra = store.require_run(run_id).extra
            store.update_run(run_id, extra={**extra, "address": ray_address})
    done = store.done_keys(run_id)
    todo = [spec for spec in specs if spec.key not in done]
    if order is not None:
        todo = order(todo)
    if on_start is not None:
        on_start(len(specs), store.episode_records(run_id) if done else [])
    if plan is not None:
        extra = store.require_run(run_id).extra
        store.update_run(run_id, extra={**extra, "record": record_video})
    task = RunTask(
        run_id=run_id,
        policy=policy,
        panel_fingerprint=panel.fingerprint,
        env=panel.env,
        env_kwargs=env_kwargs,
        # dt only for a budget in seconds (finding it imports the env: MuJoCo for PushT)
        budget_steps=panel.budget.resolve_steps(
            _env_dt(panel) if panel.budget.steps is None else None
        ),
        batch=batch,
        batch_size=lockstep,
        record=plan,
    )
    status = "interrupted"
    try:
        with store.reproducible_writes():  # condition-seeded episodes re-play exactly
            for record in backend_impl.run(task, todo):
                if plan is not None:
                    from evalband.run._video import store_pending_media

                    record = store_pending_media(store.path, record)
                store.add_episode(record)
                if on_episode is not None:
                    on_episode(record)
                if stop_when is not None and stop_when(record):
                    break
        status = "finished"
    finally:
        store.update_run(
            run_id,
            status=status,
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    records = store.episode_records(run_id)
    return run_id, summarize(records, errors_as_failures=errors_as_failures)
