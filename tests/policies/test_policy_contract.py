"""The policy lifecycle: reset(context) per episode, per-slot state under --batch, setup/close.

Oracles: the one-at-a-time serial run of the same policy on the same panel (records equal field
by field but for timing); a hand-written reference of the chunking rule (re-plan every CHUNK
steps from a fresh per-episode generator) replayed against the env directly; the refusal of a
stateful policy without per-slot state under --batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evalband.errors import InvalidParameterError
from evalband.panel import load_panel
from evalband.policies import EpisodeContext
from evalband.policies._contract import episode_seed
from evalband.policies._runtime import PolicyRuntime
from evalband.run import run_panel
from testkit import coin_panel, comparable

CHUNK = 3


def _plan(obs: Any, rng: np.random.Generator) -> list[np.ndarray]:
    """CHUNK actions from the observation at re-plan time: damped control plus seeded noise."""
    x, v = float(obs[0]), float(obs[1])
    base = np.clip(-2.0 * x - 1.5 * v, -1.0, 1.0)
    return [np.array([np.clip(base + 0.3 * rng.standard_normal(), -1, 1)]) for _ in range(CHUNK)]


class SlotChunker:
    """Stateful action chunking with per-slot state: one queue and generator per slot."""

    def __init__(self) -> None:
        self.state: dict[int, tuple[list[np.ndarray], np.random.Generator]] = {}
        self.contexts: list[EpisodeContext] = []

    def reset(self, context: EpisodeContext) -> None:
        self.contexts.append(context)
        self.state[context.slot] = ([], context.rng())

    def act_batch(self, obs_batch: Any, slots: Any) -> Any:
        out = []
        for row, slot in zip(obs_batch, slots, strict=True):
            queue, rng = self.state[slot]
            if not queue:
                queue.extend(_plan(row, rng))
            out.append(queue.pop(0))
        return np.stack(out)


class SharedChunker:
    """The same chunking with ONE queue: right one episode at a time, wrong interleaved."""

    def __init__(self) -> None:
        self.queue: list[np.ndarray] = []
        self.rng = np.random.default_rng(0)

    def reset(self, context: EpisodeContext) -> None:
        self.queue, self.rng = [], context.rng()

    def act(self, obs: Any) -> Any:
        if not self.queue:
            self.queue.extend(_plan(obs, self.rng))
        return self.queue.pop(0)


slot_chunker = SlotChunker()
shared_chunker = SharedChunker()


def _panel() -> Any:
    return load_panel({**load_panel("reach1d").model_dump(), "episodes": 24})


def _records(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Records without timing and without the policy's name (the two classes differ)."""
    return [{k: v for k, v in comparable(r).items() if k != "policy"}
            for r in store.episode_records(run_id)]


@pytest.mark.slow  # two process-backend runs (worker start-up)
def test_chunking_policy_same_records_any_batch_and_backend(store) -> None:
    panel = _panel()
    run_panel(panel, SharedChunker(), store, run_id="serial")
    serial = _records(store, "serial")
    outcomes = {r["outcome"] for r in serial}
    assert len(outcomes) > 1  # the noise matters: a record mix-up would show
    for size in (1, 8):
        run_panel(panel, SlotChunker(), store, run_id=f"b{size}", batch_size=size)
        assert _records(store, f"b{size}") == serial, f"--batch {size}"
    run_panel(panel, "test_policy_contract:slot_chunker", store, run_id="proc", backend="process",
              workers=2, batch_size=8)
    assert _records(store, "proc") == serial
    run_panel(panel, SharedChunker(), store, run_id="proc1", backend="process", workers=2)
    assert _records(store, "proc1") == serial


def test_chunking_matches_a_hand_replay_with_fresh_state_each_episode(store) -> None:
    from evalband.envs.reach1d import Reach1DEnv

    panel = _panel()
    run_panel(panel, SlotChunker(), store, run_id="b8", batch_size=8)
    by_key = {(r.cell, r.episode): r for r in store.episode_records("b8")}
    for spec in panel.episode_specs()[:6]:
        env = Reach1DEnv(**panel.env_kwargs, max_steps=30)
        obs, _ = env.reset(seed=spec.condition_seed)
        rng, queue, steps = np.random.default_rng(episode_seed(spec.condition_seed)), [], 0
        while True:
            if not queue:
                queue = _plan(obs, rng)
            obs, _, terminated, truncated, _ = env.step(queue.pop(0))
            steps += 1
            if terminated or truncated or steps >= 30:
                break
        assert by_key[(spec.cell, spec.episode)].steps == steps


def test_stateful_policy_without_slots_is_refused_under_batch(store) -> None:
    with pytest.raises(InvalidParameterError, match="per-slot state") as info:
        run_panel(_panel(), SharedChunker(), store, run_id="x", batch_size=8)
    assert "\n" not in str(info.value)
    assert store.get_run("x") is None  # refused before the store is touched


def test_context_carries_seed_task_and_slot(store) -> None:
    panel = coin_panel(episodes=3, factors={"goal": {"left": {"instruction": "go left"},
                                                     "right": {"instruction": "go right"}}})
    policy = SlotChunkerCoin()
    run_panel(panel, policy, store, run_id="ctx", batch_size=2)
    assert len(policy.contexts) == 6
    by_cell = {c.cell: c.task for c in policy.contexts}
    assert sorted(by_cell.values()) == ["go left", "go right"]
    assert {c.slot for c in policy.contexts} == {0, 1}
    assert all(c.seed == episode_seed(c.condition_seed) and c.run_id == "ctx"
               for c in policy.contexts)
    assert store.get_run("ctx").policy == "test_policy_contract:SlotChunkerCoin"


class SlotChunkerCoin(SlotChunker):
    """Records contexts; acts zero on the coin env."""

    def act_batch(self, obs_batch: Any, slots: Any) -> Any:
        return np.zeros((len(slots), 1))


class Lifecycle:
    """Counts setup/close; setup sleeps, which must not land in any episode's timing."""

    instances = 0

    def __init__(self) -> None:
        Lifecycle.instances += 1
        self.setups = self.closes = 0

    def setup(self) -> None:
        import time

        self.setups += 1
        time.sleep(0.2)

    def close(self) -> None:
        self.closes += 1

    def reset(self, context: EpisodeContext) -> None: ...

    def act(self, obs: Any) -> Any:
        return np.zeros(1)


def test_setup_outside_timing_close_at_end_factory_per_slot(store) -> None:
    panel = coin_panel(episodes=4)
    policy = Lifecycle()
    run_panel(panel, policy, store, run_id="life")
    assert (policy.setups, policy.closes) == (1, 1)
    assert store.get_run("life").extra["policy_setup_s"] >= 0.2
    assert max(r.wall_s for r in store.episode_records("life")) < 0.2
    Lifecycle.instances = 0
    run_panel(panel, Lifecycle, store, run_id="factory", batch_size=3)  # a class: a factory
    assert Lifecycle.instances == 3


def test_dict_observations_are_stacked_per_key() -> None:
    seen: list[Any] = []

    def act_batch(obs: Any) -> Any:
        seen.append(obs)
        return obs["state"][:, :1] * 2

    policy = type("P", (), {"act_batch": staticmethod(act_batch)})()
    runtime = PolicyRuntime(policy)
    obs = [{"state": np.full(3, float(i)), "image": np.zeros((2, 2))} for i in range(4)]
    actions = runtime.act_batch(obs, [0, 1, 2, 3])
    assert seen[0]["state"].shape == (4, 3) and seen[0]["image"].shape == (4, 2, 2)
    assert [a.tolist() for a in actions] == [[0.0], [2.0], [4.0], [6.0]]


class DictObsEnv:
    """A tiny env with dict observations: reach a target counter; seeded target."""

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        self.target, self.pos = int(np.random.default_rng(seed).integers(2, 6)), 0
        return self._obs(), {}

    def _obs(self) -> dict[str, Any]:
        return {"pos": np.array([float(self.pos)]), "target": np.array([float(self.target)]),
                "image": np.zeros((2, 2, 3), dtype=np.uint8)}

    def step(self, action: Any) -> Any:
        self.pos += int(np.asarray(action["move"]).reshape(-1)[0])
        done = self.pos == self.target
        return self._obs(), 0.0, done, False, {"is_success": done}


class DictPolicy:
    """Stateless batched: gets a dict of stacked arrays, returns a dict of batched actions."""

    batches: list[int] = []

    def act_batch(self, obs: Any) -> Any:
        assert isinstance(obs, dict) and obs["image"].shape[1:] == (2, 2, 3)
        DictPolicy.batches.append(len(obs["pos"]))
        return {"move": (obs["pos"] < obs["target"]).astype(int)}

    def act(self, obs: Any) -> Any:
        return {"move": (obs["pos"] < obs["target"]).astype(int)}


def test_dict_observations_batch_end_to_end(store) -> None:
    panel = coin_panel(env="test_policy_contract:DictObsEnv", env_kwargs={}, episodes=10,
                       budget={"steps": 8}, factors={})
    run_panel(panel, DictPolicy(), store, run_id="one")
    DictPolicy.batches.clear()
    run_panel(panel, DictPolicy(), store, run_id="batched", batch_size=4)
    assert _records(store, "batched") == _records(store, "one")
    assert max(DictPolicy.batches) == 4  # one call for four episodes' dict observations
    assert all(r.outcome.value == "success" for r in store.episode_records("batched"))


def test_serve_cli_refuses_a_shared_state_policy_in_one_line(capsys) -> None:
    from evalband.cli import main

    assert main(["serve", "test_policy_contract:shared_chunker", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "per-slot state" in err
