"""Lockstep batched inference (``run_panel(batch_size=N)``): the same records as one at a time.

Oracles: the one-at-a-time runner path (``play_episode``) on the same panel, field by field
for everything but the timing fields; for PushT also the final MuJoCo state of every episode,
bitwise (a one-ulp change in one action moves it, checked below); the torch policy's batched
rows against its own single calls (bitwise) and against the bare module (to float tolerance).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalband.episode import Outcome
from evalband.errors import InvalidParameterError
from evalband.panel import load_panel
from evalband.run import run_panel
from testenvs import FAULTY_COIN
from testkit import coin_panel, comparable

torch = pytest.importorskip("torch")
mujoco = pytest.importorskip("mujoco")

from evalband.envs.pusht import PushTEnv  # noqa: E402
from evalband.policies._torch import ROW_BLOCK, TorchPolicy  # noqa: E402
from evalband.policies.bc import BCPolicy, norm_stats, save_checkpoint, train_bc  # noqa: E402
from evalband.policies.pusht import collect_demos  # noqa: E402
from evalband.run._backends import guided_chunks  # noqa: E402

ZERO = "evalband.policies._builtin:zero_action"
FINALS: dict[int, tuple[int, tuple[float, ...]]] = {}


class FinalStatePushT(PushTEnv):
    """PushT that remembers each episode's step count and final ``qpos`` by reset seed."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._seed = seed
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        out = super().step(action)
        if out[2] or out[3]:
            FINALS[int(self._seed)] = (self._steps, tuple(self.data.qpos.tolist()))
        return out


class Counting:
    """A batched policy (``act_batch``) that counts its calls; its single call must not run."""

    def __init__(self) -> None:
        self.rows: list[int] = []

    def __call__(self, obs: Any) -> Any:
        raise AssertionError("the single call was used although act_batch exists")

    def act_batch(self, obs: Any) -> Any:
        self.rows.append(len(obs))
        return np.zeros((len(obs), 1))


counting = Counting()


def picky(obs: Any) -> Any:
    """Damped reach control that raises on any observation left of -0.9 (batched too)."""
    arr = np.asarray(obs, dtype=float)
    if (arr[..., 0] < -0.9).any():
        raise ValueError("start too far left")
    return np.clip(-2.0 * arr[..., :1] - 1.5 * arr[..., 1:2], -1.0, 1.0)


picky.batched = True  # type: ignore[attr-defined]


def pusht_panel(env: str = "test_batched:FinalStatePushT", episodes: int = 6) -> Any:
    return load_panel({
        "name": "pusht-batched", "env": env, "episodes": episodes, "seed": 11,
        "budget": {"steps": 60}, "factors": {"start": ["train", "held_out"]},
    })


@pytest.fixture(scope="module")
def bc_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    obs, actions, _ = collect_demos(6, seed=0, max_steps=60)
    policy = train_bc(obs, actions, hidden_dim=32, epochs=8, batch_size=64, seed=0)
    path = tmp_path_factory.mktemp("bc") / "tiny.pt"
    save_checkpoint(policy, path)
    return str(path)


def _records(store: Any, run_id: str) -> list[dict[str, Any]]:
    return [comparable(r) for r in store.episode_records(run_id)]


def _run_finals(store: Any, panel: Any, policy: str, run_id: str, **kwargs: Any) -> Any:
    FINALS.clear()
    run_panel(panel, policy, store, run_id=run_id, **kwargs)
    return dict(FINALS)


# -- the torch policy's batched call -------------------------------------------------------


def test_torch_rows_are_bitwise_single_calls_in_any_batch() -> None:
    rng = np.random.default_rng(0)
    data = rng.uniform(-0.3, 0.3, size=(200, 12))
    torch.manual_seed(0)
    module = BCPolicy(10, 2, 256, norm_stats(data[:, :10], data[:, 10:]))
    policy = TorchPolicy(module)
    for size in (1, 2, 3, 7, ROW_BLOCK - 1, ROW_BLOCK, ROW_BLOCK + 1, 33, 50, 100):
        obs = rng.uniform(-0.3, 0.3, size=(size, 10))
        batch = policy.act_batch(obs)
        singles = np.stack([policy(row) for row in obs])
        assert batch.dtype == np.float64 and batch.shape == (size, 2)
        assert np.array_equal(batch, singles), f"batch of {size} differs from single calls"
        assert np.array_equal(policy(obs), batch)
        with torch.inference_mode():  # padding to whole blocks changes nothing but the bits
            bare = module(torch.from_numpy(obs.astype(np.float32))).numpy()
        np.testing.assert_allclose(batch, bare, rtol=1e-5, atol=1e-6)
    assert policy.act_batch(np.zeros((0, 10))).shape == (0, 2)
    with pytest.raises(Exception, match="act_batch expects a batch"):
        policy.act_batch(np.zeros(10))


def test_torch_probe_falls_back_to_one_pass_per_row(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    data = rng.uniform(-0.3, 0.3, size=(100, 12))
    torch.manual_seed(1)
    policy = TorchPolicy(BCPolicy(10, 2, 64, norm_stats(data[:, :10], data[:, 10:])))
    obs = rng.uniform(-0.3, 0.3, size=(ROW_BLOCK + 5, 10))
    policy(obs[0])
    assert policy.batch_mode is None  # a single call does not probe
    calls: list[int] = []
    monkeypatch.setattr(TorchPolicy, "_rows_differ",
                        staticmethod(lambda batch, singles: calls.append(len(batch)) or True))
    batch = policy.act_batch(obs)
    assert policy.batch_mode == "per-row" and len(calls) == 1
    assert np.array_equal(batch, np.stack([policy(row) for row in obs]))
    policy.act_batch(obs)
    assert len(calls) == 1  # probed once
    # the probe needs no observation when the module's first layer gives the width
    fresh = TorchPolicy(BCPolicy(10, 2, 64, norm_stats(data[:, :10], data[:, 10:])))
    assert fresh.probe_batch_mode() == "per-row" and len(calls) == 2
    monkeypatch.undo()
    assert TorchPolicy(torch.nn.Linear(4, 2)).probe_batch_mode() in ("blocked", "per-row")
    assert TorchPolicy(torch.nn.Linear(4, 2), row_block=None).batch_mode == "unblocked"
    assert TorchPolicy(torch.nn.ReLU()).probe_batch_mode() is None  # width unknown yet


def test_pusht_bc_per_row_fallback_equals_one_at_a_time(store, bc_checkpoint,
                                                         monkeypatch) -> None:
    from evalband.run._worker import Worker

    panel = pusht_panel(episodes=4)
    single_finals = _run_finals(store, panel, bc_checkpoint, "single")
    built = []  # the runtimes the run's worker built (a fresh policy, probed under the patch)
    real = Worker.policy
    monkeypatch.setattr(Worker, "policy", lambda self, task, resolved=None: built.append(
        real(self, task, resolved)) or built[-1])
    monkeypatch.setattr(TorchPolicy, "_rows_differ", staticmethod(lambda batch, singles: True))
    finals = _run_finals(store, panel, bc_checkpoint, "rows", batch_size=5)
    assert _records(store, "rows") == _records(store, "single")
    assert finals == single_finals
    assert store.get_run("rows").extra == {"batch_size": 5, "batch_mode": "per-row"}
    assert len({id(runtime) for runtime in built}) == 1  # one policy for the run
    assert built[-1].policy.batch_mode == "per-row"  # the runtime wraps it


# -- PushT with a BC policy: records and final states -----------------------------------


def test_pusht_bc_batched_equals_one_at_a_time(store, bc_checkpoint) -> None:
    panel = pusht_panel()
    n = len(panel.episode_specs())
    single_finals = _run_finals(store, panel, bc_checkpoint, "single")
    single = _records(store, "single")
    assert len(single) == n == len(single_finals)
    assert len({state for _, state in single_finals.values()}) == n  # episodes differ
    for size in (1, 3, n + 5):
        finals = _run_finals(store, panel, bc_checkpoint, f"b{size}", batch_size=size)
        assert _records(store, f"b{size}") == single, f"batch {size}"
        assert finals == single_finals, f"final states differ at batch {size}"
        assert store.get_run(f"b{size}").extra["batch_size"] == size
    latencies = [r.latency_ms_p50 for r in store.episode_records(f"b{n + 5}")]
    assert all(x is not None and x > 0 for x in latencies)


def test_final_state_sees_a_one_ulp_action_change(bc_checkpoint) -> None:
    """The final-state oracle is sharp: actions one float32 ulp off move the end state.

    That is the size of the difference between a torch matmul on one row and on a batch.
    """
    from evalband.policies import resolve_policy

    policy = resolve_policy(bc_checkpoint)
    spec = pusht_panel().episode_specs()[0]
    ends = []
    for nudge in (False, True):
        env = PushTEnv(max_steps=60)
        obs, _ = env.reset(seed=spec.condition_seed, options=dict(spec.options))
        for _ in range(60):
            action = policy(obs)
            if nudge:
                action = action * (1.0 + 2.0**-23)
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        ends.append(tuple(env.data.qpos.tolist()))
    assert ends[0] != ends[1]


def test_policy_without_batched_call_works_in_lockstep(store) -> None:
    panel = pusht_panel(env="evalband/PushT-v0", episodes=2)
    run_panel(panel, "pusht:expert", store, run_id="single")
    run_panel(panel, "pusht:expert", store, run_id="lock", batch_size=3)
    single = _records(store, "single")
    assert _records(store, "lock") == single
    assert any(r["outcome"] == "success" for r in single)


# -- reach1d: independent envs and the env's batch simulator -----------------------------


def test_reach1d_lockstep_equals_one_at_a_time(store) -> None:
    panel = load_panel("reach1d-dynamics")
    run_panel(panel, "reach1d:damped", store, run_id="single", batch=False)
    single = _records(store, "single")
    for size in (1, 3, 1000):
        run_panel(panel, "reach1d:damped", store, run_id=f"b{size}", batch=False,
                  batch_size=size)
        assert _records(store, f"b{size}") == single, f"batch {size}"
    # With the env's batch simulator allowed, groups of N go through it (same records; the
    # simulator marks its episodes in `extra`).
    run_panel(panel, "reach1d:damped", store, run_id="sim", batch_size=7)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "extra"} for r in rs]  # noqa: E731
    assert strip(_records(store, "sim")) == strip(single)


def test_one_policy_call_per_step_for_the_whole_batch(store) -> None:
    panel = coin_panel(env_kwargs={"length": 2, "p": 1.0}, factors={}, episodes=8)
    for size, expected in ((3, [3, 3, 3, 3, 2, 2]), (4, [4, 4, 4, 4]), (20, [8, 8])):
        counting.rows.clear()
        run_panel(panel, "test_batched:counting", store, run_id=f"c{size}", batch_size=size)
        assert counting.rows == expected
        records = store.episode_records(f"c{size}")
        assert len(records) == 8 and all(r.outcome is Outcome.SUCCESS for r in records)


# -- errors stay with their episode ----------------------------------------------------


def test_env_exception_errors_only_that_episode(store) -> None:
    panel = coin_panel(env=FAULTY_COIN, env_kwargs={"length": 3, "error_p": 0.25})
    run_panel(panel, ZERO, store, run_id="single")
    single = _records(store, "single")
    errors = [r for r in single if r["outcome"] == "error"]
    assert 0 < len(errors) < len(single)
    assert all("injected simulator fault" in r["error"] for r in errors)
    for size in (4, 100):
        run_panel(panel, ZERO, store, run_id=f"b{size}", batch_size=size)
        assert _records(store, f"b{size}") == single


def test_policy_exception_in_a_batch_errors_only_its_episode(store) -> None:
    panel = load_panel("reach1d")
    run_panel(panel, "test_batched:picky", store, run_id="single", batch=False)
    single = _records(store, "single")
    errors = [r for r in single if r["outcome"] == "error"]
    assert 0 < len(errors) < len(single)
    assert all(r["error"] == "ValueError: start too far left" for r in errors)
    run_panel(panel, "test_batched:picky", store, run_id="batched", batch=False, batch_size=16)
    assert _records(store, "batched") == single


# -- backends, chunking, validation, CLI ------------------------------------------------


def test_process_backend_with_batches_matches_serial(store) -> None:
    panel = coin_panel(episodes=15)
    run_panel(panel, ZERO, store, run_id="serial")
    run_panel(panel, ZERO, store, run_id="proc", backend="process", workers=2, batch_size=4)
    assert _records(store, "proc") == _records(store, "serial")


def test_process_backend_start_failure_is_raised_not_printed(monkeypatch) -> None:
    import threading
    from concurrent.futures import ProcessPoolExecutor

    from evalband.run._backends import ProcessBackend
    from evalband.run._execute import RunTask

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no workers today")

    printed: list[Any] = []
    monkeypatch.setattr(ProcessPoolExecutor, "submit", refuse)
    monkeypatch.setattr(threading, "excepthook", printed.append)
    panel = coin_panel(episodes=6)
    task = RunTask(run_id="x", policy=ZERO, panel_fingerprint=panel.fingerprint, env=panel.env,
                   env_kwargs=dict(panel.env_kwargs), budget_steps=10)
    with pytest.raises(RuntimeError, match="no workers today"):
        list(ProcessBackend(workers=2).run(task, panel.episode_specs()))
    assert printed == []  # the starter thread's exception reached the driver, not stderr


@pytest.mark.parametrize(("n", "workers", "at_least"), [(0, 2, 1), (1, 2, 1), (200, 2, 1),
                                                        (200, 3, 50), (7, 4, 1), (1000, 2, 1)])
def test_guided_chunks_cover_the_plan_once_in_order(n: int, workers: int, at_least: int) -> None:
    specs = list(range(n))
    chunks = guided_chunks(specs, workers, at_least=at_least)  # type: ignore[arg-type]
    assert [x for chunk in chunks for x in chunk] == specs
    sizes = [len(c) for c in chunks]
    assert sizes == sorted(sizes, reverse=True)
    assert all(1 <= s <= max(64, at_least) for s in sizes)
    assert all(s >= at_least for s in sizes[:-1])
    if n >= 8 * workers:  # the last chunks are small: workers finish together
        assert sizes[-1] <= max(at_least, math.ceil(n / (4 * workers)) // 2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_bad_batch_size_is_refused(store, bad: Any) -> None:
    with pytest.raises(InvalidParameterError, match="`batch_size` must be a whole number"):
        run_panel(coin_panel(), ZERO, store, run_id="x", batch_size=bad)
    assert store.get_run("x") is None


def test_cli_batch_option(tmp_path: Path, capsys) -> None:
    from evalband.cli import main

    db = str(tmp_path / "s.sqlite")
    args = ["run", "reach1d", "--policy", "reach1d:damped", "--store", db]
    assert main([*args, "--run-id", "one", "--json"]) == 0
    capsys.readouterr()
    assert main([*args, "--run-id", "lock", "--batch", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == "lock" and out["summary"]["n"] == 64
    assert main(["show", "lock", "--store", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["manifest"]["extra"]["batch_size"] == 8
    assert main([*args, "--batch", "0"]) == 2
