"""Check a panel's environment for evaluation (``evalband check-env``), like Gymnasium's checker.

What an evaluation needs of an env, each checked with a few real resets and rollouts:

* it imports and builds (one line naming the module when not);
* a sane control period (:func:`~evalband.envs._contract.control_dt`), and where it came from;
* a condition seed reproduces the same initial observation (twice in one env, and in a
  fresh one);
* each reset-option or constructor factor takes effect: its values give different initial
  observations for the same condition seed, unless the env declares the option
  (``reset_options``) or the panel marks the factor ``dynamics_only``
  (:func:`refuse_ignored_factors` refuses such a factor before every run);
* the success rule is reachable: its info key appears in the env's info, and (with a
  policy) some episode succeeds by it;
* lockstep (batched) rollouts give the records of one-at-a-time rollouts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalband.episode import Outcome
from evalband.errors import EnvError
from evalband.panel import Panel, as_factor_spec

if TYPE_CHECKING:
    from evalband.run._execute import RunTask
    from evalband.run._worker import Worker

__all__ = ["Finding", "check_env", "clock_finding", "factor_findings", "never_met_finding",
           "refuse_ignored_factors", "reproduction_finding", "same_obs", "same_play",
           "success_key_finding"]

# Fields that differ between equal rollouts only by when, how fast and in which run.
_TIMING = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
           "started_at", "extra", "run_id")


@dataclass(frozen=True)
class Finding:
    """One line of ``check-env``: a ``problem`` (the panel cannot be trusted) or a ``note``."""

    level: str
    check: str
    message: str

    def line(self) -> str:
        """``problem [check] message``."""
        return f"{self.level} [{self.check}] {self.message}"


def same_obs(a: Any, b: Any) -> bool:
    """Whether two observations are equal (arrays, dicts and tuples of them, exactly).

    >>> import numpy as np
    >>> same_obs({"x": np.zeros(2)}, {"x": np.zeros(2)}), same_obs(np.zeros(2), np.ones(2))
    (True, False)
    """
    import numpy as np

    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_obs(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same_obs(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    except TypeError:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _first_obs(task: RunTask, cell_kwargs: dict[str, Any], seed: int,
               options: dict[str, Any]) -> Any:
    from evalband.envs._resolve import close_env
    from evalband.episode import TASK_OPTION_KEYS
    from evalband.run._worker import make_task_env

    env = make_task_env(task, cell_kwargs)
    kept = {k: v for k, v in options.items() if k not in TASK_OPTION_KEYS}  # the policy's
    try:
        return env.reset(seed=seed, options=kept or None)[0]
    finally:
        close_env(env)


def factor_findings(panel: Panel, task: RunTask) -> list[Finding]:
    """A finding per reset-option or constructor factor whose values leave the start unchanged.

    Every value of the factor is tried with the other factors at their first value and the
    condition seed of the first cell's first episode. A factor whose levels set the same
    thing (a replication factor), a ``task`` factor, a ``dynamics_only`` factor, an option
    the env declares in ``reset_options`` and the policy's instruction options are not tried.
    """
    from evalband.envs._resolve import env_class

    if not panel.factors:
        return []
    first = panel.cells()[0]
    seed = panel.seed_function()(panel.seed, first.key, 0)
    declared = set(getattr(env_class(panel.env), "reset_options", ()) or ())
    findings = []
    for name, levels in panel.factors.items():
        spec = as_factor_spec(levels)
        if spec.target == "task":
            continue
        from evalband.episode import TASK_OPTION_KEYS

        settings = [sets for _, sets in spec.settings(name)]
        if spec.target == "env_kwargs":  # a level's instruction goes to the policy (Panel.cells)
            settings = [{k: v for k, v in s.items() if k not in TASK_OPTION_KEYS}
                        for s in settings]
        if len({json.dumps(s, sort_keys=True, default=str) for s in settings}) < 2:
            continue
        keys = sorted({k for s in settings for k in s})
        where = "reset option" if spec.target == "options" else "constructor argument"

        if spec.target == "options" and set(keys) <= declared | set(TASK_OPTION_KEYS):
            continue  # declared by the env, or the policy's instruction (not the env's)
        observations = []
        for sets in settings:
            options, kwargs = dict(first.options), dict(first.env_kwargs)
            (options if spec.target == "options" else kwargs).update(sets)
            observations.append(_first_obs(task, kwargs, seed, options))
        if all(same_obs(observations[0], o) for o in observations[1:]):
            if spec.dynamics_only:
                findings.append(Finding("note", "factors", (
                    f"factor {name!r} ({where} {', '.join(keys)}) leaves the initial "
                    "observation unchanged, as declared (dynamics_only)")))
                continue
            findings.append(Finding("problem", "factors", (
                f"factor {name!r} ({where} {', '.join(keys)}) gives the same initial "
                f"observation for all {len(settings)} values at condition seed {seed}: the env "
                "ignores it, or it acts on dynamics only (then mark it dynamics_only: true)")))
    return findings


def refuse_ignored_factors(panel: Panel, task: RunTask) -> None:
    """Raise :class:`EnvError` (one line) for the first factor the env ignores.

    Called by the runner before a run, so an env that silently ignores an option cannot
    make slices that differ only in seed.
    """
    for finding in factor_findings(panel, task):
        if finding.level == "problem":
            raise EnvError(f"panel {panel.name}: {finding.message}")


def _dt_findings(panel: Panel, env: Any) -> Iterator[Finding]:
    from evalband.envs import control_dt
    from evalband.envs._resolve import registered_time_limit

    period = control_dt(env, panel.control_dt)
    if period.dt is None:
        level = "problem" if panel.budget.seconds is not None else "note"
        yield Finding(level, "time", "the env gives no control period (no dt, frame_skip, "
                      "render_fps): sim_time_s is not recorded; set control_dt in the panel")
    elif not (1e-4 <= period.dt <= 10.0) or not math.isfinite(period.dt):
        yield Finding("problem", "time", f"control period {period.dt:g} s from {period.source} "
                      "is implausible; set control_dt in the panel")
    else:
        note = f" ({period.note})" if period.note else ""
        yield Finding("note", "time", f"control period {period.dt:g} s from {period.source}{note}")
    limit = registered_time_limit(panel.env)
    if limit is not None and panel.time_limit == "env" and panel.budget.steps is not None and \
            limit < panel.budget.steps:
        yield Finding("note", "time", f"the env's TimeLimit ({limit} steps) cuts episodes "
                      f"before the budget ({panel.budget.steps}) (time_limit: env)")


def clock_finding(panel: Panel, env: Any, steps: int = 20) -> Finding | None:
    """The control period checked against the simulator's clock (MuJoCo's ``data.time``).

    A few random actions from the first condition seed; the clock must advance the period
    per step. ``None`` when the env shows no clock or gives no period.
    """
    from evalband.envs import control_dt
    from evalband.envs._contract import simulator_time

    period = control_dt(env, panel.control_dt)
    spec = panel.episode_specs()[0]
    env.reset(seed=spec.condition_seed)
    start = simulator_time(env)
    space = getattr(env, "action_space", None)
    if period.dt is None or start is None or space is None:
        return None
    space.seed(spec.condition_seed)
    played = 0
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(space.sample())
        played += 1
        if terminated or truncated:
            break
    end = simulator_time(env)
    if end is None or played == 0:
        return None
    per_step = (end - start) / played
    if math.isclose(per_step, period.dt, rel_tol=1e-6, abs_tol=1e-12):
        return Finding("note", "time", f"the simulator's clock (data.time) advanced "
                       f"{per_step:g} s a step over {played} steps, as the period says")
    return Finding("problem", "time", (
        f"control period {period.dt:g} s from {period.source}, but the simulator's clock "
        f"(data.time) advanced {per_step:g} s a step over {played} steps: sim_time_s and "
        f"budget.seconds would be wrong; set control_dt: {per_step:g} in the panel"))


def reproduction_finding(task: RunTask, seed: int) -> Finding | None:
    """A ``problem [reset]`` when ``reset(seed=seed)`` does not give the same start twice.

    Tried twice in one env and once in a fresh one (both built here and closed). What
    ``check-env`` says per seed, and what ``run`` warns about before its first episode.
    """
    from evalband.envs._resolve import close_env
    from evalband.run._worker import make_task_env

    env = make_task_env(task)
    try:
        return next(_reset_findings(task, env, [seed]), None)
    finally:
        close_env(env)


def never_met_finding(rule: Any, keys_seen: set[str]) -> Finding | None:
    """A ``problem [success]`` when the rule reads an info key the env never gives.

    >>> from evalband.run._judge import Rule
    >>> never_met_finding(Rule(key="is_success"), {"reward_dist"}).message[:31]
    "success key 'is_success' never "
    >>> never_met_finding(Rule(rule="return", threshold=1.0), set()) is None
    True
    """
    if rule.rule == "return" or rule.key in keys_seen:
        return None
    shown = ", ".join(sorted(keys_seen)[:12]) or "none"
    return Finding("problem", "success", (
        f"success key {rule.key!r} never appears in the env's step info (keys seen: "
        f"{shown}): the rule {rule.rule} can never be met; set success.key"))


def success_key_finding(task: RunTask, spec: Any, steps: int = 200) -> Finding | None:
    """:func:`never_met_finding` on one episode of random actions (at most ``steps`` steps).

    ``run`` calls it when its first episodes have no success, in an env built here (and
    closed): one line saying the panel can never succeed instead of a silent 0/N.
    """
    from evalband.envs._resolve import close_env
    from evalband.run._worker import make_task_env

    env = make_task_env(task)
    try:
        _, keys = _random_rollouts(task, env, [spec], max_steps=steps)
    finally:
        close_env(env)
    return never_met_finding(task.success, keys)


def _reset_findings(task: RunTask, env: Any, seeds: list[int]) -> Iterator[Finding]:
    for seed in seeds:
        first = env.reset(seed=seed)[0]
        again = env.reset(seed=seed)[0]
        fresh = _first_obs(task, {}, seed, {})
        if not (same_obs(first, again) and same_obs(first, fresh)):
            yield Finding("problem", "reset", (
                f"reset(seed={seed}) does not reproduce the initial observation "
                f"({'in a fresh env' if same_obs(first, again) else 'twice in one env'}): "
                "the env does not fix its initial state from the seed"))
            return


UNTIL_SUCCESS = 20
"""Episodes a policy plays at most, by default, until its first success (a positive control
that succeeds 15% of the time fails 3 episodes in a row 61% of the time, 20 only 4%)."""


def _one_line(exc: BaseException) -> str:
    """``Type: first line`` of an exception, with what to set when it is a rendering one."""
    from evalband.envs._resolve import render_hint

    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}{render_hint(str(exc))}"


def check_env(panel: Panel, policy: str | None = None,
              episodes: int | None = None) -> list[Finding]:
    """Check ``panel``'s env for evaluation; one :class:`Finding` per problem or note.

    Every check runs: an env or policy that raises in one is a ``problem`` line naming the
    check and the error, never a traceback.

    Args:
        panel: the panel.
        policy: a policy to roll out (success reachable, lockstep equals one at a time); any
            policy ``run`` takes (a function, a class, an instance, ``ws://``, ``lerobot:``).
            Without one, random actions (seeded by the condition seed) probe the info keys.
        episodes: episodes to roll out (the panel's first ones). ``None``: 3 for the resets
            and random actions; a policy plays until its first success, at most
            :data:`UNTIL_SUCCESS` episodes.
    """
    from evalband.envs._resolve import close_env, prepare_imports
    from evalband.run._runner import panel_task
    from evalband.run._worker import Worker, make_task_env

    prepare_imports(imports=panel.imports)
    findings: list[Finding] = []
    worker = Worker()  # the rollouts' envs and policy, closed at the end
    try:
        task = panel_task(panel, "check-env", policy or "random")
        env = make_task_env(task)
    except EnvError as exc:
        return [Finding("problem", "build", str(exc))]
    try:
        try:
            env.reset(seed=panel.episode_specs()[0].condition_seed)
        except Exception as exc:  # noqa: BLE001 - the env cannot even start: one line
            return [Finding("problem", "build", f"env {panel.env} cannot reset: "
                            f"{_one_line(exc)}")]
        seeds = [s.condition_seed for s in panel.episode_specs()[:episodes or 3]]
        reset: list[Finding] = []

        def resets() -> list[Finding]:
            reset.extend(_reset_findings(task, env, seeds))
            return reset

        checks: list[tuple[str, Any]] = [
            ("time", lambda: list(_dt_findings(panel, env))),
            ("time", lambda: [f for f in [clock_finding(panel, env)] if f is not None]),
            ("reset", resets),
            ("factors", lambda: factor_findings(panel, task)),
            # Lockstep vs one-at-a-time is only comparable when a seed fixes the episode.
            ("success", lambda: _rollout_findings(panel, task, env, policy, episodes,
                                                  worker, compare=not reset)),
        ]
        for name, check in checks:
            try:
                findings += check()
            except EnvError as exc:
                findings.append(Finding("problem", name, str(exc).splitlines()[0]))
            except Exception as exc:  # noqa: BLE001 - one line per check, never a traceback
                who = f"policy {policy} or env {panel.env}" if policy else f"env {panel.env}"
                findings.append(Finding("problem", name, f"{who} raised: {_one_line(exc)}"))
    finally:
        close_env(env)
        worker.close()
    return findings


def _rollout_findings(panel: Panel, task: RunTask, env: Any, policy: str | None,
                      episodes: int | None, worker: Worker,
                      compare: bool = True) -> list[Finding]:
    from evalband.run._execute import execute_chunk

    until_success = policy is not None and episodes is None
    specs = panel.episode_specs()[:UNTIL_SUCCESS if until_success else episodes or 3]
    keys_seen: set[str] = set()
    rule = panel.success
    if policy is None:
        records, keys_seen = _random_rollouts(task, env, specs)
    else:
        from dataclasses import replace

        single = replace(task, policy=policy, batch=False, batch_size=0)
        records = []
        for record in execute_chunk(single, specs, worker):
            records.append(record)
            if until_success and (record.success or record.outcome.value == "error"):
                break  # a positive control has shown it; an error is said below
        # the first episode's own env: a cell's constructor arguments (env_kwargs factors)
        # may make another task than the panel's bare env (robosuite's PickPlaceCan, ...)
        keys_seen = _info_keys(worker.task_env(task, env, specs[0]), specs[0], task, worker)
    findings: list[Finding] = []
    errors = [r for r in records if r.outcome.value == "error"]
    if errors:
        return [Finding("problem", "success", f"{len(errors)} of {len(records)} episodes "
                        f"raised: {errors[0].error}")]
    never = never_met_finding(rule, keys_seen)
    if never is not None:
        return [never]
    wins = sum(r.success for r in records)
    who = policy or "random actions"
    what = "return" if rule.rule == "return" else rule.key
    bar = "" if rule.threshold is None else f" >= {rule.threshold:g}"
    until = " (played until the first success)" if until_success else ""
    if wins == 0:
        findings.append(Finding("problem" if policy else "note", "success", (
            f"no success by rule {rule.rule} ({what}{bar}) in {len(records)} episodes of "
            f"{who}")))
    else:
        findings.append(Finding("note", "success", f"{wins}/{len(records)} episodes of {who} "
                                f"succeed by rule {rule.rule} ({what}{bar}){until}"))
    refusal = None
    if policy is not None and compare:
        refusal = worker.policy(task).batch_refusal(policy)
        if refusal is not None:  # run refuses --batch for it: nothing to compare
            findings.append(Finding("note", "batch", "lockstep play not compared: "
                                    + refusal.split(", so ")[0]))
    if policy is not None and compare and refusal is None:
        from dataclasses import replace

        played = specs[:min(len(records), 3)]  # lockstep vs one at a time: a few suffice
        batched = replace(task, policy=policy, batch=True, batch_size=min(2, len(played)))
        lock = {r.key: r for r in execute_chunk(batched, played, worker)}
        for record in records[:len(played)]:
            other = lock.get(record.key)
            if other is None or not same_play(record, other):
                findings.append(Finding("problem", "batch", (
                    f"episode {record.key} differs between lockstep and one-at-a-time play "
                    "(the env or the policy keeps state across episodes or slots)")))
                break
    return findings


def same_play(a: Any, b: Any, rel_tol: float = 1e-9) -> bool:
    """Whether two records played the same episode.

    Equal fields but the run and the timing ones, and metrics equal to ``rel_tol`` (an env's
    reward may differ in its last bit between two instances, e.g. gym-pusht's polygon-overlap
    coverage, while every state is identical).

    >>> from evalband.episode import EpisodeRecord
    >>> r = EpisodeRecord(run_id="r", policy="p", panel_fingerprint="f", cell="", episode=0,
    ...                   repeat=0, condition_seed=1, outcome="timeout", terminated=False,
    ...                   truncated=True, steps=3, extra={"metrics": {"return": 0.1 + 0.2}})
    >>> from dataclasses import replace
    >>> same_play(r, replace(r, extra={"metrics": {"return": 0.3}}), rel_tol=1e-12)
    True
    """
    fields_a = {k: v for k, v in a.as_dict().items() if k not in _TIMING}
    fields_b = {k: v for k, v in b.as_dict().items() if k not in _TIMING}
    ma, mb = a.metrics, b.metrics
    return fields_a == fields_b and ma.keys() == mb.keys() and all(
        math.isclose(ma[k], mb[k], rel_tol=rel_tol, abs_tol=1e-12) for k in ma
    )


def _info_keys(env: Any, spec: Any, task: RunTask, worker: Worker) -> set[str]:
    """The info keys of one short episode of the task's policy (what the rule can read).

    The policy is the runner's own handle on it (:meth:`~evalband.run._worker.Worker.policy`),
    so every kind ``run`` takes works here: reset with the episode's context, then acted.
    """
    from evalband.run._execute import env_options, episode_context

    runtime = worker.policy(task)
    if runtime.resets():
        runtime.reset(episode_context(task, spec, env=env))
    act = runtime.actor()
    keys: set[str] = set()
    obs, info = env.reset(seed=spec.condition_seed, options=env_options(spec))
    keys.update(info)
    for _ in range(min(task.budget_steps, 50)):
        obs, _, terminated, truncated, info = env.step(act(obs))
        keys.update(info)
        if terminated or truncated:
            break
    return keys


def _random_rollouts(task: RunTask, env: Any, specs: list[Any],
                     max_steps: int | None = None) -> tuple[list[Any], set[str]]:
    """Episodes of random actions (the action space seeded by the condition seed).

    ``max_steps`` cuts each episode short (a probe of the info keys, not a judged episode).
    """
    from evalband.run._execute import _record, env_options, judge

    keys: set[str] = set()
    records = []
    for spec in specs:
        tally = judge(task)
        env.action_space.seed(spec.condition_seed)
        obs, info = env.reset(seed=spec.condition_seed, options=env_options(spec))
        keys.update(info)
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            keys.update(info)
            end = tally.step(reward, terminated, truncated, info)
            if end is None and max_steps is not None and tally.steps >= max_steps:
                end = (Outcome.TIMEOUT, False, True)
            if end is not None:
                break
        outcome, terminated, truncated = end
        records.append(_record(task, spec, outcome=outcome, sim_time_s=None,
                               terminated=terminated, truncated=truncated, steps=tally.steps))
    return records, keys
