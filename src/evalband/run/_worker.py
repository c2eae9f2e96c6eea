"""One process's runtime state for playing episodes: the envs and policies it has built.

A :class:`Worker` holds what a process builds to play a run's episodes, and nothing else
does: the task's env and policy runtime, the envs built for a cell's constructor arguments
(``env_kwargs`` factors), the extra envs of lockstep slots (:mod:`evalband.run._lockstep`),
the facts asked once per built env (:meth:`Worker.env_facts`) and the driver's crash marker
(:attr:`Worker.note`). :meth:`Worker.close` closes every env and policy it built.

Who makes one:

* the driver: :func:`~evalband.run._runner.run_panel` makes one per run (before it checks
  the env) and hands it to the backend, which plays the driver's own episodes with it
  (serial: all of them; process: the chunks the driver plays while workers start; vector:
  the batched policy); the run closes it when it ends, also on an error;
* a worker process (a process pool's worker, an isolated chunk's child, a Ray worker):
  :func:`process_worker`, made on the first chunk the process plays and kept for the
  process's life (a warm worker plays the next run of the same task without building
  again); it closes its envs, then its policies, when the process exits.

Module-level state that stays elsewhere, and why (none of it holds a built env or policy):

* :data:`evalband.run._pool._IDLE` and :data:`evalband.run._vector._POOLS`: the session's
  warm pools of *processes* (a process pool, a vector env's sub-env processes), kept across
  runs on purpose so a second run starts no workers; each sub-env keeps its own envs on its
  :class:`~evalband.run._vector.SlotEnv`;
* what the process pool asked of the forkserver (``_pool._PRELOAD``, ``_pool._ASKED``)
  and whether forking an encoder failed here once (``_encproc._FORK_BROKEN``): facts of the
  process, not of a run;
* :data:`evalband.run._execute._SECOND`: the last second formatted as text (a pure memo);
* ``functools`` caches of immutable things: parsed panels (``panel_from_yaml``), installed
  versions, compiled report templates, statistical tables, rendered sprites, the classes
  lerobot's registry takes once (``envs/sim_arm_lerobot.register``) and Meta-World's
  scripted policy lookup (``policies/scripted.metaworld_policy``: a stateless function).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalband.envs import control_dt, make_env
from evalband.envs._resolve import accepts_kwarg, close_env, env_class, prepare_imports
from evalband.policies._runtime import PolicyRuntime, as_runtime
from evalband.run._trace import traceable

if TYPE_CHECKING:
    from evalband.envs import EvalEnv
    from evalband.episode import EpisodeSpec
    from evalband.run._execute import RunTask

__all__ = ["CELL_ENVS_KEPT", "Worker", "make_task_env", "process_worker"]

CELL_ENVS_KEPT = 4
"""Envs a worker keeps built for cells' constructor arguments (cells come in order)."""


def make_task_env(task: RunTask, cell_kwargs: dict[str, Any] | None = None) -> Any:
    """A new env for a task and a cell's constructor arguments.

    The budget is passed as ``max_steps`` only to a constructor that names it, and replaces
    the registered ``TimeLimit`` unless the panel keeps it (``time_limit: env``).
    """
    kwargs = {**task.env_kwargs, **(cell_kwargs or {})}
    cls = env_class(task.env)
    if cls is not None and accepts_kwarg(cls, "max_steps"):
        kwargs.setdefault("max_steps", task.budget_steps)
    return make_env(task.env, kwargs, keep_time_limit=task.time_limit == "env")


class Worker:
    """The envs and policy runtimes one process built to play episodes, and their closing.

    Attributes:
        note: called with each episode's spec before :func:`~evalband.run._execute.
            play_episode` plays it (the driver's crash marker, :mod:`evalband.run._flight`);
            ``None``: nothing is noted.

    >>> with Worker() as worker:
    ...     worker.close()
    []
    """

    __slots__ = ("_cell_envs", "_facts", "_lockstep", "_policies", "_tasks", "note")

    def __init__(self) -> None:
        # (env, env_kwargs, policy, budget) -> the task's env; None once closed (built again)
        self._tasks: dict[tuple[str, str, str, int], Any] = {}
        self._policies: dict[tuple[str, str], PolicyRuntime] = {}
        self._cell_envs: dict[str, Any] = {}  # a cell's constructor arguments -> its env
        self._lockstep: dict[tuple[str, str, int, str], list[Any]] = {}  # slots 2..N
        # per env played: the env, its control period and whether it has a trace hook;
        # a handful, found by identity (``is``), forgotten with the envs
        self._facts: list[tuple[Any, float | None, bool]] = []
        self.note: Callable[[EpisodeSpec], None] | None = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def policy(self, task: RunTask, resolved: Any = None) -> PolicyRuntime:
        """The runtime for the task's policy, set up once (outside every timed region).

        ``resolved`` seeds it with a policy the caller already holds (the driver's). The
        previous task's policy, if any, is closed. A policy object is one per run (a worker
        process keeps the first copy it unpickles).
        """
        key = (task.policy, task.run_id if task.policy_obj is not None else "")
        runtime = self._policies.get(key)
        if runtime is None:
            from evalband.policies import resolve_policy

            self.close_policies()
            source = resolved if resolved is not None else task.policy_obj
            runtime = as_runtime(source if source is not None else resolve_policy(task.policy))
            self._policies[key] = runtime
            runtime.setup()
        return runtime

    def env_and_policy(self, task: RunTask) -> tuple[Any, PolicyRuntime]:
        """The task's env and policy, built on first use (a new task closes the last one's).

        Names resolve from the task's ``cwd`` and ``imports`` (:func:`prepare_imports`), the
        same in the driver and in every worker process.
        """
        prepare_imports(task.cwd, task.imports)
        # The budget is part of the key: it is the env's max_steps when the env takes one.
        key = (task.env, json.dumps(task.env_kwargs, sort_keys=True), task.policy,
               task.budget_steps)
        if key not in self._tasks:
            self.close_envs()
            self._tasks.clear()
            self._tasks[key] = make_task_env(task)
            self.policy(task)
        elif self._tasks[key] is None:  # closed at the end of the last run: build it again
            self._tasks[key] = make_task_env(task)
        return self._tasks[key], self.policy(task)

    def task_env(self, task: RunTask, env: EvalEnv, spec: EpisodeSpec) -> EvalEnv:
        """The env for ``spec``: the task's ``env``, or one built for its cell's arguments.

        A cell's constructor arguments (``env_kwargs`` factors) get an env of their own; the
        last :data:`CELL_ENVS_KEPT` are kept.
        """
        if not spec.env_kwargs:
            return env
        key = json.dumps(spec.env_kwargs, sort_keys=True, default=str)
        made = self._cell_envs.get(key)
        if made is None:
            while len(self._cell_envs) >= CELL_ENVS_KEPT:  # cells come in order: drop oldest
                close_env(self._cell_envs.pop(next(iter(self._cell_envs))))
            made = self._cell_envs[key] = make_task_env(task, dict(spec.env_kwargs))
        return made  # type: ignore[no-any-return]

    def lockstep_envs(self, task: RunTask, first: Any, n: int,
                      cell_kwargs: dict[str, Any]) -> list[Any]:
        """``n`` envs for lockstep slots: ``first`` (the task's or cell's env) and copies.

        The copies are kept for the next chunk of the same task and cell; another cell's
        closes them.
        """
        key = (task.env, json.dumps(task.env_kwargs, sort_keys=True), task.budget_steps,
               json.dumps(cell_kwargs, sort_keys=True, default=str))
        if key not in self._lockstep:
            for group in self._lockstep.values():
                for env in group:
                    close_env(env)
            self._lockstep.clear()
            self._lockstep[key] = []
        extra = self._lockstep[key]
        while len(extra) < n - 1:
            extra.append(make_task_env(task, cell_kwargs))
        return [first, *extra[: n - 1]]

    def env_facts(self, env: Any, task: RunTask) -> tuple[float | None, bool]:
        """A built env's control period and whether it can be traced, asked once per env.

        Both are fixed for the env's life (:func:`~evalband.envs.control_dt`,
        :func:`~evalband.run._trace.traceable`), and the trace hook's check (a runtime
        Protocol ``isinstance``) costs ~20 us.
        """
        for known in self._facts:
            if known[0] is env:
                return known[1], known[2]
        known = (env, control_dt(env, task.control_dt).dt, traceable(env))
        self._facts.append(known)
        return known[1], known[2]

    def close_envs(self) -> list[str]:
        """Close every env this worker built; the messages of closes that raised.

        The policies stay (a re-run reuses them); the envs are built again when asked for.
        """
        envs = [env for env in self._tasks.values() if env is not None]
        envs += list(self._cell_envs.values())
        envs += [env for group in self._lockstep.values() for env in group]
        self._tasks = dict.fromkeys(self._tasks)
        self._cell_envs.clear()
        self._lockstep.clear()
        self._facts.clear()
        return [message for env in envs if (message := close_env(env)) is not None]

    def close_policies(self) -> None:
        """Close and forget this worker's policy runtimes."""
        runtimes = list(self._policies.values())
        self._policies.clear()
        for runtime in runtimes:
            runtime.close()

    def close(self) -> list[str]:
        """Close the policies, then every env; the messages of env closes that raised."""
        self.close_policies()
        return self.close_envs()


_PROCESS: list[Worker] = []


def process_worker() -> Worker:
    """This process's worker (worker processes: a pool's, an isolated chunk's, Ray's).

    Made on first use and kept for the process's life; when the process exits its envs are
    closed, then (in a child process) its policies.
    """
    if not _PROCESS:
        import multiprocessing
        from multiprocessing import util

        worker = Worker()
        _PROCESS.append(worker)
        util.Finalize(None, worker.close_envs, exitpriority=100)
        if multiprocessing.parent_process() is not None:
            util.Finalize(None, worker.close_policies, exitpriority=10)
    return _PROCESS[0]
