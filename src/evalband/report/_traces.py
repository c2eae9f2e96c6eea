"""Episode traces for inspection: replayed from a stored episode's condition seed, or read back.

The store keeps one row per episode, not its trajectory. A trace is recovered exactly the way
the episode was first played: the panel's env (built with ``record_trace=True``) is reset
with the episode's condition seed and the cell's options, and the run's policy acts through
the runner's own :func:`evalband.run._execute.play_episode`; the replayed outcome is checked
against the stored one. The PushT harness also writes ``traces.json`` next to its
checkpoints; those traces are read back instead of replayed when present.

Envs with traces: ``evalband/Reach1D-v0`` (position and velocity over time) and
``evalband/PushT-v0`` (pusher and block paths on the table).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, Outcome, record_key

if TYPE_CHECKING:
    from evalband.report._data import RunView

__all__ = ["Trace", "TraceSet", "trace_kind", "episode_traces", "replay_trace", "pick_keys"]

REACH1D = "evalband/Reach1D-v0"
PUSHT = "evalband/PushT-v0"
_KINDS = {REACH1D: "reach1d", PUSHT: "pusht"}


@dataclass(frozen=True)
class Trace:
    """One episode's trajectory (``series``: name -> values, ``t`` in seconds first)."""

    run_id: str
    key: tuple[str, int, int]
    condition_seed: int
    outcome: str
    stored_outcome: str
    series: dict[str, list[float]]
    slices: dict[str, str] = field(default_factory=dict)

    @property
    def reproduced(self) -> bool:
        """The replay ended as the stored episode did."""
        return self.outcome == self.stored_outcome


@dataclass(frozen=True)
class TraceSet:
    """The traces a report shows: ``kind`` (``reach1d``/``pusht``) and why some are missing."""

    kind: str
    runs: tuple[str, ...]
    traces: tuple[Trace, ...]
    notes: tuple[str, ...] = ()


def trace_kind(env: str) -> str | None:
    """``"reach1d"``, ``"pusht"`` or ``None`` (no trace plot for this env).

    >>> trace_kind("evalband/Reach1D-v0"), trace_kind("evalband/Coin-v0")
    ('reach1d', None)
    """
    return _KINDS.get(env)


def _counted(records: Sequence[EpisodeRecord]) -> dict[tuple[str, int, int], EpisodeRecord]:
    from evalband.analysis import counted

    return {record_key(r): r for r in counted(records)}


def pick_keys(views: Sequence[RunView], limit: int = 4) -> list[tuple[str, int, int]]:
    """Which episodes to inspect: where two runs disagree first, else one of each outcome.

    With two or more runs: matched episodes where only the candidate succeeded, then where
    only the baseline did, then where the outcomes differ otherwise, then any, in plan order,
    up to ``limit`` (at most half of it from each of the first three groups). With one run:
    the first episode of each outcome, then the first ones, up to ``limit``. Error episodes
    are never picked.
    """
    if len(views) > 1:
        first = _counted(views[0].data.records)
        second = _counted(views[1].data.records)
        keys = sorted(first.keys() & second.keys())
        take = max(1, limit // 2)
        groups: list[list[tuple[str, int, int]]] = [[], [], []]
        for k in keys:
            a, b = first[k], second[k]
            if a.outcome is b.outcome:
                continue
            group = (0 if b.success and not a.success else 1 if a.success and not b.success
                     else 2)
            if len(groups[group]) < take:
                groups[group].append(k)
                if all(len(g) >= take for g in groups):
                    break
        candidates = [k for g in groups for k in g] + keys[:limit]
    else:
        from evalband.analysis import counted

        rows = sorted(counted(views[0].data.records), key=record_key)
        firsts = (next((r for r in rows if r.outcome is o), None) for o in Outcome)
        candidates = [record_key(r) for r in firsts if r is not None]
        candidates += [record_key(r) for r in rows[:limit]]
    chosen: list[tuple[str, int, int]] = []
    for key in candidates:
        if key not in chosen:
            chosen.append(key)
        if len(chosen) >= limit:
            break
    return chosen


def replay_trace(view: RunView, record: EpisodeRecord, policy: Any = None) -> Trace | None:
    """Replay one stored episode with ``record_trace`` on; ``None`` if the env cannot trace.

    Args:
        view: the run (its panel fixes the env, its options and the budget).
        record: the stored episode (its condition seed fixes the conditions).
        policy: the policy callable (default: the run's policy, resolved by name).

    Raises:
        PolicyNotFoundError: the run's policy cannot be loaded here.
    """
    from dataclasses import replace

    from evalband.envs._resolve import accepts_kwarg, env_class, make_env
    from evalband.panel import EpisodeSpec
    from evalband.policies import resolve_policy
    from evalband.run._execute import play_episode
    from evalband.run._runner import _env_dt, panel_task

    panel = view.data.panel
    cls = env_class(panel.env)
    if cls is None or not accepts_kwarg(cls, "record_trace"):
        return None
    budget = panel.budget.resolve_steps(_env_dt(panel))
    kwargs = {**panel.env_kwargs, "record_trace": True}
    if accepts_kwarg(cls, "max_steps"):
        kwargs.setdefault("max_steps", budget)
    options = {c.key: c.options for c in panel.cells()}.get(record.cell, {})
    spec = EpisodeSpec(record.cell, record.episode, record.repeat, record.condition_seed,
                       dict(record.slices), dict(options))
    task = replace(  # the run's task (success rule, control period), tracing on
        panel_task(panel, view.run_id, view.manifest.policy, batch=False),
        panel_fingerprint=view.manifest.panel_fingerprint, env_kwargs=kwargs,
        budget_steps=budget,
    )
    capture = _Capture(make_env(panel.env, kwargs, keep_time_limit=panel.time_limit == "env"))
    try:
        played = play_episode(capture, policy or resolve_policy(view.manifest.policy), spec,
                              task)
    finally:
        capture.close()
    series = capture.info.get("trace")
    if not isinstance(series, dict):
        return None
    return Trace(view.run_id, record.key, record.condition_seed, played.outcome.value,
                 record.outcome.value, {k: [float(x) for x in v] for k, v in series.items()},
                 dict(record.slices))


class _Capture:
    """An env wrapper that keeps the last ``info`` (where the final step puts the trace)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.unwrapped = getattr(env, "unwrapped", env)
        self.info: dict[str, Any] = {}

    def reset(self, **kwargs: Any) -> Any:
        obs, self.info = self.env.reset(**kwargs)
        return obs, self.info

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        self.info = out[4]
        return out

    def close(self) -> None:
        """Close the env."""
        self.env.close()


def _harness_traces(view: RunView, limit: int) -> list[Trace]:
    """Traces the PushT harness wrote next to the run's checkpoint (``traces.json``)."""
    policy = view.manifest.policy
    if ":" in policy and not Path(policy).exists():
        return []
    path = Path(policy).parent / "traces.json"
    if not path.is_file():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    by_seed: dict[tuple[Any, Any], EpisodeRecord] = {
        (r.condition_seed, r.slices.get("start")): r for r in view.data.records
    }
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("policy") != Path(policy).stem:
            continue
        record = by_seed.get((entry.get("seed"), entry.get("start")))
        if record is None:
            continue
        series = {k: [float(x) for x in entry[k]] for k in ("t", "pusher_x", "pusher_y",
                                                             "tee_x", "tee_y", "tee_yaw")
                  if isinstance(entry.get(k), list)}
        out.append(Trace(view.run_id, record.key, record.condition_seed, str(entry["outcome"]),
                         record.outcome.value, series, dict(record.slices)))
        if len(out) >= limit:
            break
    return out


def episode_traces(views: Sequence[RunView], limit: int = 4) -> TraceSet | None:
    """Traces of a few episodes of the first two runs, or ``None`` for an env without them.

    The same episodes (same condition seeds) are shown for both runs (:func:`pick_keys`).
    A run whose policy cannot be loaded here gets a note instead of traces.
    """
    kind = trace_kind(views[0].data.panel.env)
    if kind is None:
        return None
    shown = list(views[:2])
    keys = pick_keys(shown, limit)
    traces: list[Trace] = []
    notes: list[str] = []
    for view in shown:
        stored = _harness_traces(view, limit) if kind == "pusht" else []
        if stored:
            traces.extend(stored)
            continue
        wanted = set(keys)
        records = {k: r for r in view.data.records if (k := record_key(r)) in wanted}
        try:
            from evalband.policies import resolve_policy

            policy = resolve_policy(view.manifest.policy)
            for key in keys:
                trace = replay_trace(view, records[key], policy) if key in records else None
                if trace is not None:
                    traces.append(trace)
        except Exception as exc:  # noqa: BLE001 - a missing policy costs the plot, not the report
            notes.append(f"{view.run_id}: traces need the policy {view.manifest.policy!r}, "
                         f"which cannot be replayed here ({type(exc).__name__}: {exc})")
    for trace in traces:
        if not trace.reproduced:
            notes.append(f"{trace.run_id} episode {trace.key}: the replay ended "
                         f"{trace.outcome}, the stored episode {trace.stored_outcome} "
                         "(the policy or the env changed since the run)")
    if not traces and not notes:
        return None
    return TraceSet(kind, tuple(v.run_id for v in shown), tuple(traces), tuple(notes))
