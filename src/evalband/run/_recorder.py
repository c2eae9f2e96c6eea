"""The Recorder: log episodes from your own loop or a real robot into the store."""

from __future__ import annotations

from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, Outcome, parse_outcome
from evalband.errors import InvalidInputError, PanelMismatchError
from evalband.panel import Panel
from evalband.run._video import PENDING

if TYPE_CHECKING:
    from evalband.run._steps import StepRecorder
    from evalband.store import RunStore
    from evalband.store._steps import StepData

__all__ = ["Recorder"]


class Recorder:
    """Record episodes played outside the runner; each :meth:`log` is durable when it returns.

    Reopening a Recorder with the same ``run_id`` continues the run (episodes already logged
    stay; logging the same ``(cell, episode, repeat)`` twice is refused).

    >>> import tempfile, evalband
    >>> from evalband.panel import load_panel
    >>> tmp = tempfile.mkdtemp()
    >>> store = evalband.open_store(f"{tmp}/s.sqlite")
    >>> panel = load_panel({"name": "bench", "env": "evalband/Coin-v0", "episodes": 2,
    ...                     "seed": 0, "budget": {"steps": 10}})
    >>> with evalband.Recorder(store, panel, "my-arm-policy", run_id="arm-1") as rec:
    ...     _ = rec.log(episode=0, outcome="success", steps=40, sim_time_s=4.0)
    ...     _ = rec.log(episode=1, outcome="timeout", steps=100, assisted=True, interventions=1)
    >>> store.outcome_counts("arm-1")["timeout"]
    1

    Step data from your loop (what ``run --record-steps`` keeps; read back with
    :func:`evalband.store.read_steps`): fill :meth:`steps` and pass it to :meth:`log`.

    >>> from evalband.store import read_steps
    >>> with evalband.Recorder(store, panel, "my-arm-policy", run_id="arm-2") as rec:
    ...     steps = rec.steps(observations=True)
    ...     for t in range(3):
    ...         steps.add([0.1 * t], reward=0.0, info={}, obs=[float(t), 1.0])
    ...     record = rec.log(episode=0, outcome="failure", step_data=steps)
    >>> data = read_steps(store.path, record)
    >>> record.steps, data.steps, data.obs["obs"][:, 0].tolist()
    (3, 3, [0.0, 1.0, 2.0])
    """

    def __init__(
        self,
        store: RunStore,
        panel: Panel,
        policy: str,
        *,
        run_id: str | None = None,
        policy_hash: str | None = None,
        step: int | None = None,
    ) -> None:
        from evalband.run._runner import default_run_id, keep_step
        from evalband.store._manifest import new_manifest

        self.store = store
        self.panel = panel
        self.policy = policy
        self.run_id = run_id or default_run_id(panel, policy)
        self._cells = {cell.key: cell for cell in panel.cells()}
        self._seeds = {spec.key: spec.condition_seed for spec in panel.episode_specs()}
        existing = store.get_run(self.run_id)
        if existing is None:
            store.create_run(
                new_manifest(
                    panel,
                    policy,
                    self.run_id,
                    backend="recorder",
                    workers=1,
                    policy_hash=policy_hash,
                    n_planned=len(self._seeds),
                    source="recorder",
                    step=step,
                )
            )
        elif existing.panel_fingerprint != panel.fingerprint:
            raise PanelMismatchError(
                f"run {self.run_id} was recorded on another panel "
                f"({existing.panel_fingerprint[:12]} != {panel.fingerprint[:12]}); "
                "use a new run_id"
            )
        else:
            keep_step(store, existing, step)
        from evalband.store._lease import RunLease

        self._lease = RunLease(store, self.run_id)
        self._lease.acquire()  # one writer per run: a second Recorder is refused in one line

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(status="interrupted" if exc_type else None)

    def close(self, status: str | None = None) -> None:
        """Mark the run finished (every planned episode logged) or interrupted."""
        try:
            done = self.store.count_episodes(self.run_id)
            final = status or ("finished" if done >= len(self._seeds) else "interrupted")
            self.store.update_run(
                self.run_id, status=final,
                finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
        finally:
            self._lease.release()

    def steps(self, *, observations: bool = False) -> StepRecorder:
        """A step recorder for one episode of your loop.

        Call its ``add(action, reward, info, obs=obs)`` after every step (``obs``: the
        observation the action was chosen from; kept with ``observations=True`` when it is
        low-dimensional) and pass it to :meth:`log` as ``step_data``. The panel's declared
        info keys (``metrics``) are kept from ``info``.
        """
        from evalband.run._steps import StepRecorder

        return StepRecorder(tuple(self.panel.info_keys), observations=observations)

    def log(
        self,
        *,
        episode: int,
        outcome: str | Outcome,
        cell: str = "",
        repeat: int = 0,
        steps: int = 0,
        terminated: bool | None = None,
        truncated: bool | None = None,
        sim_time_s: float | None = None,
        time_to_success_s: float | None = None,
        step_data: StepRecorder | StepData | None = None,
        **fields: Any,
    ) -> EpisodeRecord:
        """Record one episode; committed to disk before this returns.

        ``terminated``/``truncated`` default from the outcome (success and failure terminate,
        timeout truncates). Other :class:`EpisodeRecord` fields (``score``, ``assisted``,
        ``interventions``, ``latency_ms_p95``, ``error``...) pass through ``fields``.
        ``step_data`` (a :meth:`steps` recorder, or a
        :class:`~evalband.store.StepData`) is stored beside the store, durable before the
        record, as ``run --record-steps`` stores it; ``steps`` defaults to its length.
        """
        if cell not in self._cells:
            known = ", ".join(repr(k) for k in self._cells)
            raise InvalidInputError(f"cell {cell!r} is not in panel {self.panel.name}: {known}")
        key = (cell, episode, repeat)
        if key not in self._seeds:
            raise InvalidInputError(
                f"episode {episode}, repeat {repeat} is outside the panel "
                f"({self.panel.episodes} episodes x {self.panel.repeats} repeats per cell)"
            )
        out = parse_outcome(outcome)
        if terminated is None:
            terminated = out in (Outcome.SUCCESS, Outcome.FAILURE)
        if truncated is None:
            truncated = out is Outcome.TIMEOUT
        if out is Outcome.SUCCESS and time_to_success_s is None:
            time_to_success_s = sim_time_s
        if step_data is not None:
            pending = self._pending_steps(step_data)
            steps = steps or int(pending[PENDING][0]["steps"])
            fields["extra"] = {**fields.get("extra", {}), **pending}
        record = EpisodeRecord(
            run_id=self.run_id,
            policy=self.policy,
            panel_fingerprint=self.panel.fingerprint,
            cell=cell,
            episode=episode,
            repeat=repeat,
            condition_seed=self._seeds[key],
            outcome=out,
            terminated=terminated,
            truncated=truncated,
            steps=steps,
            sim_time_s=sim_time_s,
            time_to_success_s=time_to_success_s,
            slices=dict(self._cells[cell].slices),
            started_at=fields.pop("started_at", datetime.now(UTC).isoformat(timespec="seconds")),
            **fields,
        )
        if step_data is not None:
            from evalband.run._video import store_pending_media
            from evalband.store._media import sync_media

            record = store_pending_media(self.store.path, record)
            sync_media()  # the step data is on disk before the record that names it
        self.store.add_episode(record)
        return record

    @staticmethod
    def _pending_steps(step_data: StepRecorder | StepData) -> dict[str, Any]:
        """The record's ``extra`` that carries ``step_data`` to be stored (and any note)."""
        from evalband.run._steps import StepRecorder
        from evalband.store._steps import STEPS_CONTENT_TYPE, StepData, encode_steps

        if isinstance(step_data, StepRecorder):
            return step_data.extra()
        if not isinstance(step_data, StepData):
            raise InvalidInputError(f"step_data takes rec.steps() or a StepData; got "
                                    f"{type(step_data).__name__}")
        return {PENDING: [{"data": encode_steps(step_data), "content_type": STEPS_CONTENT_TYPE,
                           "kind": "steps", "steps": step_data.steps}]}
