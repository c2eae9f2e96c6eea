"""Clips encoded in a separate encoder process: the same bytes as a thread, no orphans."""

from __future__ import annotations

import multiprocessing
import os
import signal
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.panel import Panel, load_panel
from evalband.policies.pusht import expert
from evalband.run import _encproc, run_panel
from evalband.store import RunStore


def pusht_panel(episodes: int = 2, steps: int = 12) -> Panel:
    return load_panel({"name": "pt-encproc", "env": "evalband/PushT-v0", "episodes": episodes,
                       "seed": 9, "budget": {"steps": steps},
                       "factors": {"start": ["train", "held_out"]}})


@pytest.fixture
def encoders(monkeypatch: pytest.MonkeyPatch) -> list[_encproc.EncoderProcess]:
    """Every encoder process started during the test, in order."""
    started: list[_encproc.EncoderProcess] = []
    original = _encproc.EncoderProcess.__init__

    def tracked(self: _encproc.EncoderProcess) -> None:
        original(self)
        started.append(self)

    monkeypatch.setattr(_encproc.EncoderProcess, "__init__", tracked)
    return started


def gone(pid: int | None) -> bool:
    """Whether the process has ended and been reaped (no zombie left either)."""
    return pid is not None and not Path(f"/proc/{pid}").exists()


def test_the_encoder_process_writes_the_clips_a_thread_writes(
    store: RunStore, encoders: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    panel = pusht_panel()
    run_panel(panel, "pusht:expert", store, run_id="process", record_video="all")
    assert len(encoders) == 1 and encoders[0].pid != os.getpid() and gone(encoders[0].pid)
    monkeypatch.setattr(_encproc, "MODE", "thread")
    run_panel(panel, "pusht:expert", store, run_id="thread", record_video="failures")
    assert len(encoders) == 1  # the thread path starts no process

    def clips(run_id: str) -> dict[Any, str]:
        return {r.key: r.media[0]["sha256"] for r in store.episode_records(run_id) if r.media}

    by_thread = clips("thread")
    assert by_thread  # 12 steps are too few for the expert: every episode fails
    assert clips("process") == by_thread


class Failing:
    """The PushT expert, which raises ``error`` at its ``after``-th call."""

    def __init__(self, error: type[BaseException], after: int) -> None:
        self.error, self.after, self.calls = error, after, 0

    def __call__(self, obs: Any) -> Any:
        self.calls += 1
        if self.calls >= self.after:
            raise self.error("the policy gives up here")
        return expert(obs)


@pytest.mark.parametrize("where", ["policy", "driver"])
def test_a_failing_run_leaves_no_encoder_process(
    store: RunStore, encoders: list[Any], where: str
) -> None:
    """Ctrl-C in the middle of a filmed episode (the one before may still be encoding), or an
    error in the driver once a record is committed: the run ends, its encoder with it."""
    def committed(record: object) -> None:
        raise RuntimeError("the driver gives up here")

    if where == "policy":
        with pytest.raises(KeyboardInterrupt, match="gives up"):
            run_panel(pusht_panel(steps=12), Failing(KeyboardInterrupt, after=18), store,
                      run_id="dies", record_video="all")
    else:
        with pytest.raises(RuntimeError, match="gives up"):
            run_panel(pusht_panel(steps=12), "pusht:expert", store, run_id="dies",
                      record_video="all", on_episode=committed)
    assert len(encoders) == 1 and gone(encoders[0].pid)
    assert not [p for p in multiprocessing.active_children() if p.name == "evalband-encoder"]


class KillsTheEncoder:
    """The PushT expert, which kills the encoder process at its ``at``-th call."""

    def __init__(self, encoders: list[Any], at: int) -> None:
        self.encoders, self.at, self.calls = encoders, at, 0

    def __call__(self, obs: Any) -> Any:
        self.calls += 1
        if self.calls == self.at:
            os.kill(self.encoders[0].pid, signal.SIGKILL)
        return expert(obs)


def test_an_encoder_process_that_dies_fails_its_clips_not_the_run(
    store: RunStore, encoders: list[Any]
) -> None:
    run_id, _ = run_panel(pusht_panel(steps=40), KillsTheEncoder(encoders, at=5), store,
                          run_id="orphaned", record_video="all")
    records = store.episode_records(run_id)
    assert len(records) == 4 and all(r.steps > 5 for r in records)
    assert all(not r.media and "encoder process ended" in r.extra["media_error"]
               for r in records)
    assert gone(encoders[0].pid)


def test_processes_that_cannot_fork_encode_on_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _encproc.encoder_mode() == "process"
    fake_ray = types.SimpleNamespace(is_initialized=lambda: True)
    monkeypatch.setitem(__import__("sys").modules, "ray", fake_ray)
    assert _encproc.encoder_mode() == "thread"  # a Ray worker
    monkeypatch.delitem(__import__("sys").modules, "ray")
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    assert _encproc.encoder_mode() == "thread"  # a daemonic process may have no children


def test_a_clip_given_whole_and_frames_of_odd_sizes() -> None:
    from evalband.run._encode import encode_frames

    frames = [np.full((17, 15, 3), 12 * i, np.uint8) for i in range(5)]
    encoder = _encproc.EncoderProcess()
    try:
        first = _encproc.ProcessClip(encoder, 5.0, "vp9", frames)
        second = _encproc.ProcessClip(encoder, 5.0, "h264", frames[:2])
        assert first.finish()[:2] == encode_frames(frames, 5.0, "vp9")[:2]
        assert second.finish()[1] == 2 and second.done and second.finish()[1] == 2
    finally:
        encoder.close()
    assert not encoder.alive
