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
