"""Env families: each family's one file declares its ids, policies, panels and trace spec.

What a family declares is what the rest of evalband uses: Gymnasium registers its ids with
its entry points, the policy table resolves its names, every shipped panel belongs to one
family and runs on an env the family knows, and the report draws the family's trace spec.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import gymnasium as gym
import pytest

import evalband.envs  # noqa: F401  (registers the built-in ids)
from evalband._util.families import (
    FAMILY_DIR,
    _family,
    builtin_policies,
    driver_safe_modules,
    families,
    trace_spec,
)
from evalband._util.names import BUILTIN_ENV_ENTRY_POINTS, BUILTIN_POLICIES
from evalband.errors import EvalbandError
from evalband.panel import load_panel


def test_gymnasium_registers_every_declared_id_with_its_entry_point() -> None:
    declared = {env: entry for f in families().values() for env, entry in f.envs.items()}
    assert declared == BUILTIN_ENV_ENTRY_POINTS and declared
    for env, entry in declared.items():
        assert gym.spec(env).entry_point == entry
        module, _, attr = entry.partition(":")
        assert importlib.util.find_spec(module) is not None, entry


def test_every_declared_policy_is_in_the_table_and_its_module_exists() -> None:
    assert builtin_policies() == BUILTIN_POLICIES
    names = [n for f in families().values() for n in f.policies]
    assert len(names) == len(set(names))  # no name declared by two families
    for target in BUILTIN_POLICIES.values():
        assert importlib.util.find_spec(target.partition(":")[0]) is not None, target


def test_every_shipped_panel_belongs_to_one_family() -> None:
    shipped = {p.stem for p in (FAMILY_DIR.parent.parent / "panels").glob("*.yaml")}
    declared = [p for f in families().values() for p in f.panels]
    assert sorted(declared) == sorted(shipped)
    for family in families().values():
        for name in family.panels:
            env = load_panel(name).env
            # the family's own ids, or another package's env its policies play
            assert env in family.envs or any(
                t.split(":")[0].split("/")[0] in env for t in family.policies), (name, env)


def test_only_the_pure_python_families_may_be_played_by_the_driver() -> None:
    assert driver_safe_modules() == {"evalband.envs.reach1d", "evalband.envs._coin"}


def test_trace_specs_name_a_drawing_the_report_has() -> None:
    specs = {f.name: f.trace for f in families().values() if f.trace is not None}
    assert set(specs) == {"reach1d", "pusht"}
    for spec in specs.values():
        assert spec.draw in ("series", "paths")
        assert "{traces}" in spec.figure and "{runs}" in spec.figure
    assert trace_spec("evalband/Coin-v0") is None and trace_spec("Hopper-v5") is None


def test_a_broken_family_file_says_what_to_do(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[envs\n")
    with pytest.raises(EvalbandError, match="bad.toml is broken.*reinstall"):
        _family(bad)
    no_height = tmp_path / "nh.toml"
    no_height.write_text('[trace]\ndraw = "series"\n')
    with pytest.raises(EvalbandError, match="nh.toml is broken"):
        _family(no_height)
