"""The ray backend on a local Ray cluster: the same records as serial, a killed worker retried.

One cluster for the module (``num_cpus=2``, started by the backend's own ``connect``), shut
down at the end. The kill test uses :class:`CrashOnceCoin`, an env that ends its worker process
with ``os._exit(1)`` the first time it resets one of the "doomed" condition seeds (a marker
file in ``tmp_path`` remembers it), so only the first attempt of that chunk dies.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.envs._coin import CoinEnv
from evalband.errors import BackendError, InvalidParameterError
from evalband.panel import Panel, load_panel
from evalband.run import run_panel
from evalband.run._backends import get_backend, guided_chunks
from evalband.run._execute import RunTask
from testkit import comparable

pytestmark = pytest.mark.slow

ZERO = "evalband.policies._builtin:zero_action"


class CrashOnceCoin(CoinEnv):
    """The coin env, whose worker dies the first time it resets a doomed condition seed.

    ``always`` kills it on every attempt; a ``gated`` seed waits (up to 60 s) for the file
    ``marker_dir/open`` before it plays, and raises (an error episode) if it never comes;
    ``refuse`` makes the constructor raise an evalband error (the same on every attempt).
    """

    def __init__(self, marker_dir: str, doomed: list[int], length: int = 2,
                 always: bool = False, gated: list[int] | None = None,
                 refuse: bool = False) -> None:
        if refuse:
            raise InvalidParameterError("this env refuses to be built, on purpose")
        super().__init__(length=length)
        self.marker_dir = Path(marker_dir)
        self.doomed = set(doomed)
        self.always = always
        self.gated = set(gated or [])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed in self.doomed:
            marker = self.marker_dir / f"crashed-{seed}"
            if self.always or not marker.exists():
                marker.touch()
                os._exit(1)  # the worker process dies: no exception, no record
        if seed in self.gated:
            deadline = time.monotonic() + 60
            while not (self.marker_dir / "open").exists():
                if time.monotonic() > deadline:
                    raise TimeoutError("the driver never saw a record before the last chunk")
                time.sleep(0.01)
        return super().reset(seed=seed, options=options)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    import ray

    from evalband.run._ray import connect

    if ray.is_initialized():
        ray.shutdown()
    assert connect(workers=2)  # ray.init(num_cpus=2, ...): the backend's local start-up
    assert ray.cluster_resources()["CPU"] == 2
    yield ray
    ray.shutdown()


def _records(store: Any, run_id: str) -> list[dict[str, Any]]:
    return [comparable(r) for r in store.episode_records(run_id)]


def _pusht_panel() -> Panel:
    from evalband.envs.pusht import ENV_ID

    return load_panel({
        "name": "pusht-ray", "env": ENV_ID, "episodes": 4, "seed": 11,
        "budget": {"steps": 60}, "factors": {"start": ["train", "held_out"]},
    })


def test_reach1d_on_ray_equals_serial(cluster, store) -> None:
    panel = load_panel("reach1d")
    run_panel(panel, "reach1d:baseline", store, run_id="serial")
    run_panel(panel, "reach1d:baseline", store, run_id="ray2", backend="ray", workers=2)
    run_panel(panel, "reach1d:baseline", store, run_id="ray1", backend="ray", workers=1)
    serial = _records(store, "serial")
    assert len(serial) == 64
    assert _records(store, "ray2") == serial
    assert _records(store, "ray1") == serial
    assert {r.attempts for r in store.episode_records("ray2")} == {1}
    manifest = store.get_run("ray2")
    assert (manifest.backend, manifest.workers, manifest.status) == ("ray", 2, "finished")
    assert manifest.extra["address"] == "local"


def test_pusht_on_ray_equals_serial(cluster, store) -> None:
    panel = _pusht_panel()
    run_panel(panel, "pusht:expert", store, run_id="serial")
    run_panel(panel, "pusht:expert", store, run_id="ray", backend="ray", workers=2)
    serial = _records(store, "serial")
    assert len(serial) == 8 and _records(store, "ray") == serial
    outcomes = {r["outcome"] for r in serial}
    assert "success" in outcomes and "timeout" in outcomes  # the 60-step budget cut some short


def test_clips_on_ray_equal_serial(cluster: Any, store: Any) -> None:
    """A Ray worker encodes clips on a thread (it forks no encoder process): the same bytes."""
    from evalband.run._encproc import encoder_mode

    assert cluster.get(cluster.remote(encoder_mode).remote()) == "thread"
    panel = _pusht_panel()
    run_panel(panel, "pusht:expert", store, run_id="serial", record_video="sample:3")
    run_panel(panel, "pusht:expert", store, run_id="ray", backend="ray", workers=2,
              record_video="sample:3")

    def clips(run_id: str) -> dict[Any, str]:
        return {r.key: r.media[0]["sha256"] for r in store.episode_records(run_id) if r.media}

    assert len(clips("serial")) == 3 and clips("ray") == clips("serial")


def test_step_data_on_ray_equals_serial(cluster: Any, store: Any) -> None:
    """``record_steps``: the bytes travel back with the records; the driver stores them."""
    from evalband.store._steps import steps_ref

    panel = load_panel("reach1d").with_overrides(episodes=3)
    run_panel(panel, "reach1d:damped", store, run_id="serial", record_steps=True)
    run_panel(panel, "reach1d:damped", store, run_id="ray", backend="ray", workers=2,
              record_steps=True)

    def refs(run_id: str) -> dict[Any, Any]:
        return {r.key: steps_ref(r) for r in store.episode_records(run_id)}

    assert all(refs("serial").values()) and refs("ray") == refs("serial")


def test_records_stream_back_as_chunks_finish(cluster, store, tmp_path) -> None:
    # The last episode cannot start until the driver has committed a record (it opens the
    # gate from the progress callback): a backend that only returned at the end would hang.
    plain = {"name": "gate", "env": "test_ray_backend:CrashOnceCoin", "episodes": 12,
             "seed": 2, "budget": {"steps": 4}, "factors": {"p": [0.3, 0.7]}}
    last = load_panel({**plain, "env_kwargs": {"marker_dir": "", "doomed": []}})
    gated = [last.episode_specs()[-1].condition_seed]
    panel = load_panel({**plain, "env_kwargs": {"marker_dir": str(tmp_path), "doomed": [],
                                                "gated": gated}})
    counts: list[int] = []

    def on_episode(record: Any) -> None:
        counts.append(store.count_episodes("stream"))  # committed before the callback
        (tmp_path / "open").touch()

    _, summary = run_panel(panel, ZERO, store, run_id="stream", backend="ray", workers=2,
                           on_episode=on_episode)
    assert summary.counts["error"] == 0
    # Each callback sees its record committed (records finishing together share a commit),
    # and the first came long before the end: records stream back.
    assert len(counts) == 24 and counts == sorted(counts) and counts[-1] == 24
    assert all(count >= i + 1 for i, count in enumerate(counts)) and counts[0] < 24


def test_killed_worker_chunk_is_retried_and_recorded(cluster, store, tmp_path) -> None:
    data = {"name": "crash", "env": "test_ray_backend:CrashOnceCoin", "episodes": 20,
            "seed": 5, "budget": {"steps": 4}, "factors": {"p": [0.3, 0.7]}}
    markers = tmp_path / "markers"
    markers.mkdir()
    plain = load_panel({**data, "env_kwargs": {"marker_dir": str(markers), "doomed": []}})
    specs = plain.episode_specs()
    doomed = [specs[2].condition_seed, specs[20].condition_seed]
    panel = load_panel({**data, "env_kwargs": {"marker_dir": str(markers), "doomed": doomed}})
    assert [s.condition_seed for s in panel.episode_specs()] == [s.condition_seed for s in specs]

    run_id, summary = run_panel(panel, ZERO, store, run_id="crash", backend="ray", workers=2)
    assert sorted(p.name for p in markers.iterdir()) == sorted(f"crashed-{s}" for s in doomed)
    records = store.episode_records(run_id)
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)) == len(specs) == summary.n_attempted
    assert set(keys) == {s.key for s in specs}
    # The chunks that held a doomed seed were played twice; every other chunk once.
    retried = {s.key for chunk in guided_chunks(specs, 2)
               if any(s.condition_seed in doomed for s in chunk) for s in chunk}
    assert len(retried) >= 2
    assert {r.key for r in records if r.attempts == 2} == retried
    assert {r.attempts for r in records} == {1, 2}
    assert store.get_run(run_id).status == "finished"
    # A retry changes nothing else: the same panel played serially (the markers now exist).
    run_panel(panel, ZERO, store, run_id="again")
    strip = lambda r: {k: v for k, v in r.items() if k != "attempts"}  # noqa: E731
    assert [strip(r) for r in _records(store, "crash")] == [
        strip(r) for r in _records(store, "again")
    ]


def test_chunk_failing_every_attempt_stops_the_run(cluster, tmp_path) -> None:
    from evalband.run._ray import RayBackend

    panel = load_panel({"name": "doom", "env": "test_ray_backend:CrashOnceCoin", "episodes": 3,
                        "seed": 1, "budget": {"steps": 3},
                        "env_kwargs": {"marker_dir": str(tmp_path), "doomed": [],
                                       "always": True}})
    specs = panel.episode_specs()
    task = RunTask(run_id="doom", policy=ZERO, panel_fingerprint=panel.fingerprint,
                   env=panel.env, budget_steps=3,
                   env_kwargs={**panel.env_kwargs, "doomed": [specs[-1].condition_seed]})
    backend = RayBackend(workers=2, chunk_size=1, max_attempts=2)
    got = []
    with pytest.raises(BackendError, match="failed all 2 attempts") as info:
        for record in backend.run(task, specs):
            got.append(record.key)
    assert "worker died" in str(info.value) and "resume with the same `run_id`" in str(info.value)
    assert f"episode {specs[-1].episode} " in str(info.value)
    assert sorted(got) == sorted(s.key for s in specs[:-1])
    assert (tmp_path / f"crashed-{specs[-1].condition_seed}").exists()


def test_evalband_error_in_a_worker_is_not_retried(cluster, store, tmp_path, capsys) -> None:
    from evalband.cli import main

    panel = load_panel({"name": "refuse", "env": "test_ray_backend:CrashOnceCoin",
                        "episodes": 4, "seed": 1, "budget": {"steps": 3},
                        "env_kwargs": {"marker_dir": str(tmp_path), "doomed": [],
                                       "refuse": True}})
    with pytest.raises(InvalidParameterError, match="refuses to be built"):
        run_panel(panel, ZERO, store, run_id="refused", backend="ray", workers=2)
    # a new run that fails before its first episode leaves nothing behind
    assert store.get_run("refused") is None
    # On the command line: the evalband error line on stderr, exit 2, clean JSON on stdout
    # for --json (here: nothing), no traceback. (What Ray's background threads print, and
    # when, is Ray's business: only its re-routing to stderr is ours, tested below.)
    (tmp_path / "refuse.yaml").write_text(panel.to_yaml())
    capsys.readouterr()
    code = main(["run", str(tmp_path / "refuse.yaml"), "--policy", ZERO, "--backend", "ray",
                 "--store", str(tmp_path / "s.sqlite"), "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert any(line.startswith("error: ") and "refuses to be built" in line
               for line in captured.err.splitlines())
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert captured.out.strip() == ""


@pytest.mark.parametrize("is_err", [False, True])
def test_cluster_messages_go_to_stderr(cluster, capsys, monkeypatch, is_err: bool) -> None:
    """Ray's driver-side cluster messages ("A worker died ...") land on stderr, never stdout."""
    from ray._private import ray_logging, worker

    from evalband.run._ray import _cluster_messages_to_stderr

    _cluster_messages_to_stderr()
    _cluster_messages_to_stderr()  # idempotent: wrapping twice changes nothing
    assert getattr(worker.print_to_stdstream, "evalband_stderr", False) is True
    # Ray's de-duplicator would swallow a line like one it printed in the last few seconds.
    monkeypatch.setattr(ray_logging, "RAY_DEDUP_LOGS", False)
    line = "A worker died or was killed while executing a task by an unexpected system error."
    capsys.readouterr()
    worker.print_to_stdstream(
        {"pid": "raylet", "ip": "127.0.0.1", "localhost": "127.0.0.1", "is_err": is_err,
         "lines": [line]},
        ignore_prefix=False,
    )
    captured = capsys.readouterr()
    assert line in captured.err
    assert line not in captured.out and captured.out == ""


def test_cli_run_on_ray(cluster, capsys, tmp_path) -> None:
    from evalband.cli import main

    db = str(tmp_path / "s.sqlite")
    code = main(["run", "reach1d-2s", "--policy", "reach1d:damped", "--backend", "ray",
                 "--workers", "2", "--store", db, "--run-id", "cli", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["summary"]["n_attempted"] == 64  # stdout is JSON, nothing else
    assert "Traceback" not in out.err
    code = main(["show", "cli", "--store", db, "--json"])
    manifest = json.loads(capsys.readouterr().out)["manifest"]
    assert (manifest["backend"], manifest["workers"]) == ("ray", 2)
    assert manifest["extra"]["address"] == "local"


def test_missing_ray_names_the_extra(monkeypatch, capsys, tmp_path) -> None:
    from evalband.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(BackendError, match=r"pip install 'evalband\[ray\]'"):
        get_backend("ray", 2)
    db = tmp_path / "s.sqlite"
    code = main(["run", "reach1d", "--policy", "reach1d:damped", "--backend", "ray",
                 "--store", str(db)])
    err = capsys.readouterr().err
    assert code == 2
    assert any(line.startswith("error: ") and "evalband[ray]" in line for line in err.splitlines())
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("backend", "address", "match"),
    [("ray", "not an address", "`address` must be"), ("ray", "ray://head", "`address` must be"),
     ("process", "auto", "`address` is for `backend` ray"), ("dask", None, "serial, process, ray")],
)
def test_bad_backend_arguments(backend, address, match) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        get_backend(backend, 2, address=address)
