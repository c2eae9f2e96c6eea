"""The work of ``evalband run``, without typer.

:mod:`evalband.cli._runs` declares the command's options for typer and calls
:func:`run_run`, which plays the panel and prints the summary.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalband.cli._out import CommandExit, command_args, console, emit_json, pct, store_path

__all__ = ["run_run", "summary_lines", "interrupts_resumable", "stopped_resumable",
           "worker_modules"]


def summary_lines(run_id: str, policy: str, summary: object) -> list[str]:
    """The text lines ``evalband run`` prints for a finished run's summary."""
    from evalband.analysis import RunSummary

    assert isinstance(summary, RunSummary)
    c = summary.counts
    lines = [
        f"{run_id} ({policy}): {summary.successes}/{summary.n} success, "
        f"{c['failure']} failure, {c['timeout']} timeout, {c['error']} error"
    ]
    if summary.rate is not None:
        lines.append(
            f"  success rate {pct(summary.rate.estimate, 6)}, Wilson 95% "
            f"[{pct(summary.rate.low, 6)}, {pct(summary.rate.high, 6)}]"
        )
    lines.append(f"  mean time among successes: {summary.time_text}")
    if summary.error_causes:
        lines.append("  error episodes, by cause:")
        lines.extend(f"    {line}" for line in summary.error_lines())
    if summary.verdict_withheld:
        lines.append(
            f"  verdict withheld: {c['error']} episode(s) errored; fix them, or re-run "
            "with --errors-as-failures to count them as failures"
        )
    elif summary.errors_as_failures and c["error"]:
        lines.append(f"  {c['error']} error episode(s) counted as failures (--errors-as-failures)")
    return lines


@contextlib.contextmanager
def interrupts_resumable(run_id: str, add_run_id: bool) -> Iterator[None]:
    """Ctrl-C and SIGTERM stop a run cleanly, saying how to resume it.

    The runner marks the run ``interrupted`` (its ``finally``); one line on stderr gives the
    resume command; the exit status is 130 (SIGINT) or 143 (SIGTERM).
    """
    received: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except KeyboardInterrupt:
        argv = command_args() + (["--run-id", run_id] if add_run_id else [])
        what = "SIGTERM" if received else "interrupted (Ctrl-C)"
        sys.stderr.write(f"{what}: run {run_id} is marked interrupted; its stored episodes "
                         f"are kept. Resume with: evalband {shlex.join(argv)}\n")
        raise CommandExit(143 if received else 130) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _play_until_decided(panel_obj: Any, policy: str, store: Path | None, *,
                        record_steps: bool | str, step: int | None, **until: Any) -> None:
    """``run --until-decided`` / ``--against``: play in chunks until the comparison decides.

    ``until`` holds :func:`evalband.cli._until.run_until`'s keywords (the run's settings and
    the ``--until-decided`` options).
    """
    from evalband.cli._until import run_until
    from evalband.policies import resolve_policy

    if record_steps:  # every chunk of the run (and of a played baseline) keeps step data
        until["record_steps"] = record_steps
    against_policy = until.get("against_policy")
    if against_policy is not None:
        resolve_policy(against_policy)
        if step is not None:
            from evalband.errors import InvalidInputError

            raise InvalidInputError(
                "--step names the checkpoint of one run, but --against-policy plays two "
                "policies; run with --against BASE_RUN, or without --step")
    elif step is not None:
        until["step"] = step
    run_until(panel_obj, policy, store, **until)


def _say_summary(rid: str, policy: str, summary: Any, started: list[int], as_json: bool) -> None:
    """Print the run's summary (JSON, or lines; a resume says what was already stored)."""
    if as_json:
        emit_json({"run_id": rid, "policy": policy, "summary": summary.as_dict()})
        return
    if started and started[1]:  # a resume: what was there and what this call played
        total, before = started
        console.print(f"resumed {rid}: {before}/{total} already stored, "
                      f"{summary.n_attempted - before} played now")
    for line in summary_lines(rid, policy, summary):
        console.print(line)


def worker_modules(panel: str, policy: str) -> list[str]:
    """What the workers of a run of ``panel`` with ``policy`` import, known before it loads.

    The panel file's ``env`` and ``imports`` (its YAML read here, without the panel model)
    and the policy give the modules (:func:`evalband._util.names.worker_preload`), so the
    forkserver imports the env (MuJoCo...) and the policy once while this process loads the
    panel, instead of each worker importing them after. Anything unclear (a built-in panel
    name, an unreadable file) leaves the run loop alone: the run asks for the rest itself.

    >>> worker_modules("no-such-panel.yaml", "pusht:expert")
    ['evalband.run._execute', 'evalband.policies.pusht']
    """
    from evalband._util.names import env_module, worker_preload

    env, imports = None, []
    try:
        import yaml

        with open(panel, encoding="utf-8") as file:
            data = yaml.safe_load(file)
        if isinstance(data, dict) and isinstance(data.get("env"), str):
            env = data["env"]
            found = data.get("imports") or []
            imports = [str(m) for m in found] if isinstance(found, list) else []
    except (OSError, ValueError, yaml.YAMLError):
        pass
    return worker_preload(None if env is None else env_module(env), imports, policy)


#: ``run``'s options that only the sequential comparison (``--until-decided``) reads.
_UNTIL_ONLY = ("max_episodes", "alpha", "margin", "chunk", "effect", "power", "discordant")


def run_run(
    panel: str,
    policy: str,
    *,
    workers: int | None = None,
    backend: str = "serial",
    address: str | None = None,
    store: Path | None = None,
    run_id: str | None = None,
    errors_as_failures: bool = False,
    batch: int | None = None,
    report: Path | None = None,
    retry_errors: bool = False,
    record: str | None = None,
    record_size: str | None = None,
    record_steps: bool | str = False,
    episode_timeout: float | None = None,
    as_json: bool = False,
    step: int | None = None,
    episodes: int | None = None,
    seed: int | None = None,
    **until: Any,
) -> None:
    """Run a policy on every planned episode of a panel; resumable with --run-id.

    ``until`` holds the ``--until-decided`` options (``against``, ``against_policy``,
    ``until_decided``, ``max_episodes``, ``alpha``, ``margin``, ``chunk``, ``effect``,
    ``discordant``, ``power``), passed to :func:`evalband.cli._until.run_until`.
    """
    if not until.get("until_decided"):  # refused, not ignored, before anything starts
        from evalband.cli._errors import flag_for
        from evalband.cli._out import refuse_ignored

        refuse_ignored([flag_for(name) for name in _UNTIL_ONLY if until.get(name) is not None],
                       "--until-decided", "the sequential comparison against a baseline")
    if backend == "process":  # the workers start while this process loads what it needs
        import os

        from evalband.run._pool import prestart, worker_init

        prestart(workers or 1, worker_modules(panel, policy), initializer=worker_init,
                 initargs=(os.getpid(),))
    from evalband.cli._progress import RunProgress
    from evalband.panel import load_panel
    from evalband.policies import resolve_policy
    from evalband.run import run_panel
    from evalband.run._runner import default_run_id
    from evalband.run._video import parse_record_size
    from evalband.store import open_store
    from evalband.store._manifest import check_step

    check_step(step)  # a bad --step fails before anything runs
    panel_obj = load_panel(panel)
    override: dict[str, Any] | None = None
    if episodes is not None or seed is not None:  # a smoke test: not the panel's fingerprint
        file_fingerprint = panel_obj.fingerprint
        panel_obj = panel_obj.with_overrides(episodes=episodes, seed=seed)
        changed = {k: v for k, v in (("episodes", episodes), ("seed", seed)) if v is not None}
        override = {**changed, "of_fingerprint": file_fingerprint}
    resolve_policy(policy)  # an unknown policy fails before the store is touched
    against_policy = until.get("against_policy")
    if until.get("until_decided") or until.get("against") is not None or \
            against_policy is not None:
        _play_until_decided(panel_obj, policy, store, record_steps=record_steps, step=step,
                            run_id=run_id, backend=backend, workers=workers, address=address,
                            errors_as_failures=errors_as_failures, as_json=as_json, **until)
        return
    rid = run_id or default_run_id(panel_obj, policy)
    # with --json, what an env or policy prints while it plays goes to stderr
    quiet = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    started: list[int] = []  # (planned, already stored) when the run starts

    def on_start(total: int, done: list[Any]) -> None:
        started[:] = [total, len(done)]
        progress.start(total, done)

    with interrupts_resumable(rid, run_id is None), open_store(store_path(store)) as st, \
            RunProgress(policy.rsplit(":", 1)[-1], enabled=not as_json) as progress, quiet, \
            stopped_resumable(rid, run_id is None):
        rid, summary = run_panel(
            panel_obj,
            policy,
            st,
            run_id=rid,
            backend=backend,
            workers=workers,
            address=address,
            errors_as_failures=errors_as_failures,
            batch_size=batch,
            retry_errors=retry_errors,
            record_video=record,
            step=step,
            record_size=parse_record_size(record_size) if record_size else None,
            record_steps=record_steps,
            episode_timeout=episode_timeout,
            command="evalband " + shlex.join(command_args()),
            on_episode=progress.advance,
            on_start=on_start,
            on_note=progress.note,
            override=override,
        )
    _say_summary(rid, policy, summary, started, as_json)
    if report is not None:
        from evalband.cli._report import write_report_option

        write_report_option([rid], store_path(store), report, quiet=as_json)
    if summary.verdict_withheld:  # error episodes remain: not a clean run
        errors = summary.counts["error"]
        sys.stderr.write(f"{errors} error episode(s) kept; replay them with: "
                         f"{_again(rid, run_id is None, '--retry-errors')}\n")
        raise CommandExit(1)


def _again(run_id: str, add_run_id: bool, *extra: str) -> str:
    """The command line that resumes this run (``--run-id`` added when it was not given)."""
    argv = command_args()
    argv += [] if "--run-id" in argv or not add_run_id else ["--run-id", run_id]
    argv += [flag for flag in extra if flag not in argv]
    return "evalband " + shlex.join(argv)


@contextlib.contextmanager
def stopped_resumable(run_id: str, add_run_id: bool) -> Iterator[None]:
    """A run the runner stopped (a dead policy server): its line, how to resume, exit 75.

    75 is ``EX_TEMPFAIL`` (sysexits.h): the run can go on later, once its cause is fixed.
    """
    from evalband.errors import RunStoppedError

    try:
        yield
    except RunStoppedError as exc:
        sys.stderr.write(
            f"stopped: {exc}\n"
            f"Resume with: {_again(run_id, add_run_id)}\n"
            f"Once the server is back, replay its error episodes with: "
            f"{_again(run_id, add_run_id, '--retry-errors')}\n")
        raise CommandExit(75) from None
