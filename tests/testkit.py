"""Helpers shared by the tests: tiny panels on the coin-flip stand-in robot, record views,
a crashing policy, a simulated session written into a store. Import them as
``from testkit import coin_panel`` (tests/ is on the path)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.panel import Panel, load_panel

if TYPE_CHECKING:
    import pandas as pd

    from evalband.session import SessionPlan

__all__ = ["RELEASED_WORDS", "REPLACED_METHODS", "TIMING_FIELDS", "as_released", "coin_panel",
           "comparable", "mask_replaced", "raising", "side_venv_python", "store_session",
           "start_serve", "descendants", "wait_gone"]

TIMING_FIELDS = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
                 "started_at", "run_id")


def coin_panel(**overrides: Any) -> Panel:
    data: dict[str, Any] = {
        "name": "coin",
        "env": "evalband/Coin-v0",
        "env_kwargs": {"length": 2},
        "episodes": 20,
        "seed": 3,
        "budget": {"steps": 5},
        "factors": {"p": [0.2, 0.8]},
    }
    data.update(overrides)
    return load_panel(data)


def comparable(record: Any) -> dict[str, Any]:
    """A record without the fields that measure time (they differ run to run)."""
    data = record.as_dict()
    for name in TIMING_FIELDS:
        data.pop(name, None)
    return data


def raising(obs: Any) -> Any:
    """A policy that crashes on every call."""
    raise RuntimeError("policy exploded")


RELEASED_WORDS = {  # an interval read alone, in the release's words -> the one vocabulary
    "A is better: the interval excludes 0": "improved",
    "B is better: the interval excludes 0": "regressed",
    "the interval contains 0: the ranking is not established at this n": "no detectable change",
    # the multiplicity step became the discrete Holm procedure (issue 31): its name and note
    "holm": "discrete holm",
    "procedure: exact McNemar test per slice, Holm across 1 slice test(s) at family-wise 5% "
    "(2.5% per direction); each slice's interval is at the level Holm used for it, so it "
    "excludes 0 exactly when the slice is decided":
    "procedure: exact McNemar test per slice, discrete Holm across 1 slice test(s) at "
    "family-wise 5% (2.5% per direction); each exact test is charged only the p-values it can "
    "attain, so a slice too small to reach a small p costs the others nothing; each slice's "
    "interval is at the level Holm used for it, so it excludes 0 exactly when the slice is "
    "decided",
}


REPLACED_METHODS = {  # an interval method of the release -> the one that replaced it (issue 31)
    "newcombe-paired (compatible with mcnemar-exact)":
        "conditional exact (clopper-pearson on the discordant pairs; compatible with "
        "mcnemar-exact)",
    "stratified MOVER (continuity-corrected Wilson limits, Newcombe's paired correlation)":
        "stratified MOVER (per-arm continuity-corrected Wilson limits at the effective sample "
        "size, Newcombe's paired correlation)",
    "score interval at the Holm level of each slice, compatible":
        "conditional exact (matched pairs) or score interval at the Holm level of each slice, "
        "compatible",
}


def mask_replaced(text: str) -> str:
    """``text`` with the limits of intervals replaced since the release masked (an aggregate
    or slice difference printed as ``points [low, high]`` or a table cell ``| +x.x [low, high] |``)
    and replaced method names read as the release's."""
    import re

    for old, new in REPLACED_METHODS.items():
        text = text.replace(new, old)
    text = re.sub(r"(points) \[[^\]]+\]", r"\1 [...]", text)
    return re.sub(r"\| ([+-]\d+\.\d) \[[^\]]+\] \|", r"| \1 [...] |", text)


_METRIC_NOTES = ("metric(s) ", "metric differences by ", "primary metric(s) ")
"""How the notes of the metric rows begin (``evalband.analysis._metrics``)."""


def as_released(new: Any, old: Any) -> Any:
    """``new`` cut to the keys the release wrote (a statistic added since adds a key).

    An interval's verdict is now the one verdict vocabulary: the release's words for it are
    read as the word they became (and the release's words returned when they match). An
    interval whose method was replaced since (:data:`REPLACED_METHODS`) is read as the
    release's when its replacement is the one named there and its estimate is unchanged
    (its limits are a different statistic's). A float the release wrote with binary noise
    (``alpha`` as ``1 - 0.95``: 0.050000000000000044) is read as the release's when the new
    one is the same number at 12 significant digits (the declared 0.05).
    """
    if (isinstance(old, float) and isinstance(new, float) and new != old
            and float(f"{old:.12g}") == new):
        return old
    if isinstance(old, str) and old in RELEASED_WORDS:
        return old if new == RELEASED_WORDS[old] else new
    if isinstance(old, str) and isinstance(new, str) and new != old:
        return old if mask_replaced(new) == mask_replaced(old) else new
    if (isinstance(new, dict) and isinstance(old, dict) and old.get("method") in REPLACED_METHODS
            and new.get("method") == REPLACED_METHODS[old["method"]]
            and new.get("estimate", new.get("delta")) == old.get("estimate", old.get("delta"))):
        return old
    if isinstance(new, dict) and isinstance(old, dict):
        assert set(new) >= set(old), set(old) - set(new)
        if isinstance(new.get("notes"), list) and "metrics" not in old:
            # per-episode metrics compared since (issue 29) add their own notes after the
            # release's; they are cut with the ``metrics`` key they describe
            new = {**new, "notes": [n for n in new["notes"]
                                    if not str(n).startswith(_METRIC_NOTES)]}
        return {k: as_released(new[k], old[k]) for k in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [as_released(n, o) for n, o in zip(new, old, strict=True)]
    return new


def side_venv_python(venv: Path, why: str) -> Path:
    """The python of a side venv ``make test`` builds; the test fails saying so if it is missing.

    ``why`` says what runs there and how ``make test`` builds it.
    """
    import pytest

    python = venv / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: {why}; run `make test`, then pytest again",
                    pytrace=False)
    return python


def store_session(path: Path, plan: SessionPlan, trials: pd.DataFrame) -> None:
    """Create the plan in the store and record every non-pending trial through SessionStore."""
    from evalband.session import SessionStore

    with SessionStore(path) as ss:
        ss.create(plan)
        for row in trials.itertuples():
            if row.status == "pending":
                continue
            skipped = row.status == "skipped"
            ss.record(plan.session_id, int(row.trial_index), status=str(row.status),
                      score=None if skipped else int(row.score), assisted=bool(row.assisted),
                      scored_at=str(row.scored_at))


def start_serve(*args: str) -> tuple[Any, str]:
    """``evalband serve ARGS --json`` in a subprocess; returns it and the URL it printed.

    It returns once the server printed its address (it is listening then): no sleep.
    The caller kills and waits for the process.
    """
    import json
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "evalband.cli", "serve", *args, "--json"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "evalband serve printed nothing"
    return proc, str(json.loads(line)["url"])


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` in the process tree now (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until every process of ``pids`` has ended; the ones still running at ``timeout``.

    Woken by each exit (``pidfd_open`` + ``select``: no polling, no sleep); a process that
    is a zombie already counts as ended. ``timeout`` only bounds a failing test.
    """
    import os
    import select
    import time

    fds: dict[int, int] = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    try:
        while fds and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(fds), [], [], left)
            for fd in ready:
                os.close(fd)
                del fds[fd]
        return set(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


def source_at(folder: Path, commit: str, worker: str) -> Path:
    """``folder`` holding the ``src`` tree of ``commit`` (from this checkout's git) and
    ``worker.py`` with ``worker``: the code before, for tests that hold outputs to it.

    Skips the test where git or the commit is missing (a checkout without its history).
    """
    import subprocess
    import tarfile
    from io import BytesIO

    import pytest

    root = Path(__file__).resolve().parents[1]
    try:
        archive = subprocess.run(["git", "-C", str(root), "archive", commit, "src"],
                                 capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {commit[:12]} (the code before) is not in this checkout")
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    (folder / "worker.py").write_text(worker)
    return folder
