"""``lerobot:PATH`` in the main venv (no lerobot here): resolved or refused in one line.

The checkpoint itself is evaluated against lerobot-eval in tests/policies/test_lerobot.py,
inside .venv-lerobot.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evalband.errors import PolicyNotFoundError
from evalband.panel import load_panel
from evalband.policies import resolve_policy
from evalband.policies._runtime import as_runtime


def test_a_missing_directory_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(PolicyNotFoundError, match="does not exist"):
        resolve_policy(f"lerobot:{tmp_path / 'nope'}")
    with pytest.raises(PolicyNotFoundError, match="has no config.json"):
        resolve_policy(f"lerobot:{tmp_path}")


def test_unknown_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyNotFoundError, match="unknown option 'replan'"):
        resolve_policy(f"lerobot:{tmp_path}?replan=2")


def test_a_checkpoint_without_lerobot_says_how_to_install(tmp_path: Path) -> None:
    if importlib.util.find_spec("lerobot") is not None:
        pytest.skip("lerobot is installed in this Python")  # the main venv has none
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(PolicyNotFoundError, match="lerobot is not installed"):
        resolve_policy(f"lerobot:{tmp_path}")


def test_resolves_to_a_factory_one_policy_per_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without importing lerobot: the resolver checks the directory and that lerobot exists."""
    import evalband.policies.lerobot as module

    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name: object())
    factory = resolve_policy(f"lerobot:{tmp_path}?device=cuda")
    runtime = as_runtime(factory)
    assert runtime.kind == "factory" and runtime.batch_refusal("x") is None
    made = factory()
    assert (made.path, made.device, made.name) == (
        str(tmp_path), "cuda", f"lerobot:{tmp_path}?device=cuda")
    assert made is not factory()


def test_lerobot_pusht_panel_plays_lerobot_evals_seeds() -> None:
    panel = load_panel("lerobot-pusht", check_env=False)
    specs = panel.episode_specs()
    assert [s.condition_seed for s in specs] == list(range(1000, 1050))
    assert {s.cell for s in specs} == {"task_group=pusht,task=0"}
    derived = panel.model_copy(update={"condition_seeds": "derived"})
    assert derived.fingerprint != panel.fingerprint
    assert [s.condition_seed for s in derived.episode_specs()][:2] != [1000, 1001]


class _Pipeline:
    """A stand-in for a lerobot processor pipeline: records what it is given."""

    def __init__(self) -> None:
        self.seen: list[object] = []
        self.resets = 0

    def __call__(self, batch: object) -> object:
        self.seen.append(batch)
        return batch

    def reset(self) -> None:
        self.resets += 1


def test_the_panels_instruction_reaches_lerobot_as_task() -> None:
    """The step path without lerobot: obs -> batch with ``task`` -> select_action -> action."""
    torch = pytest.importorskip("torch")
    from evalband.policies import EpisodeContext
    from evalband.policies.lerobot import LerobotPolicy

    class Model:
        resets = 0

        def reset(self) -> None:
            Model.resets += 1

        def select_action(self, batch: dict[str, object]) -> object:
            return torch.tensor([[1.0, 2.0]])

    policy = LerobotPolicy("ckpt")
    policy.policy, policy.preprocessor, policy.postprocessor = Model(), _Pipeline(), _Pipeline()
    policy._torch = torch
    policy._to_batch = lambda obs: {"observation.state": torch.as_tensor(obs["agent_pos"])[None]}
    context = EpisodeContext("r", "p", "", {}, 0, 0, 1, seed=5, task="push the T")
    policy.reset(context)
    action = policy.act({"agent_pos": [0.0, 1.0]})
    assert action.tolist() == [1.0, 2.0]
    assert policy.preprocessor.seen[0]["task"] == ["push the T"]
    assert (Model.resets, policy.preprocessor.resets, policy.postprocessor.resets) == (1, 1, 1)
    policy.reset(EpisodeContext("r", "p", "", {}, 1, 0, 2, seed=6))
    policy.act({"agent_pos": [0.0, 1.0]})
    assert policy.preprocessor.seen[1]["task"] == [""]  # no instruction: lerobot's empty task
    with pytest.raises(TypeError, match="expected a dict observation"):
        policy.act([0.0, 1.0])


def _cached_model(cache: Path, repo: str, config: str, revision: str = "abc123") -> Path:
    """A model as the Hugging Face cache holds it after a download (its documented layout)."""
    root = cache / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(config)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(revision)
    return snapshot


def test_hub_id_resolves_from_the_local_cache_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalband.policies.lerobot as module

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)  # no local directory named like the repo
    monkeypatch.setattr(module.importlib.util, "find_spec", lambda name: object())
    snapshot = _cached_model(cache, "someorg/act_pusht", '{"type": "act"}')
    policy = resolve_policy("lerobot:someorg/act_pusht")
    assert isinstance(policy, module.LerobotBatchPolicy)  # ACT: batched across slots
    assert policy.path == str(snapshot) and policy.name == "lerobot:someorg/act_pusht"
    assert as_runtime(policy).kind == "slots"
    other = _cached_model(cache, "someorg/diffusion_pusht", '{"type": "diffusion"}')
    factory = resolve_policy("lerobot:someorg/diffusion_pusht")
    assert as_runtime(factory).kind == "factory" and factory().path == str(other)


def test_hub_id_absent_from_the_cache_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PolicyNotFoundError) as caught:
        resolve_policy("lerobot:someorg/not_here")
    message = str(caught.value)
    assert "\n" not in message and "never downloads" in message
    assert "models--someorg--not_here" in message
