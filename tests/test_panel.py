from __future__ import annotations

import pytest

from evalband.errors import PanelError
from evalband.panel import Budget, Panel, builtin_panels, default_condition_seed, load_panel
from testkit import coin_panel


def test_builtin_reach_panel_loads() -> None:
    panel = load_panel("reach1d")
    assert panel.seed == 7 and panel.episodes == 64
    assert panel.budget.resolve_steps(0.2) == 30
    assert set(builtin_panels()) >= {"reach1d", "reach1d-2s", "reach1d-256", "reach1d-noisy"}


def test_fingerprint_ignores_cosmetic_and_analysis_fields() -> None:
    base = coin_panel()
    cosmetic = coin_panel(name="renamed", description="words", slice_weights={"p=0.2": 2.0},
                          required_slices=["p=0.8"], latency_budget_ms={"arm": 30.0})
    assert base.fingerprint == cosmetic.fingerprint
    assert coin_panel(episodes=21).fingerprint != base.fingerprint
    assert coin_panel(seed=4).fingerprint != base.fingerprint
    assert coin_panel(factors={"p": [0.2, 0.9]}).fingerprint != base.fingerprint


def test_yaml_round_trip_keeps_fingerprint(tmp_path) -> None:
    panel = coin_panel()
    path = tmp_path / "p.yaml"
    path.write_text(panel.to_yaml())
    assert load_panel(path).fingerprint == panel.fingerprint


def test_condition_seeds_prefix_stable_and_repeat_invariant() -> None:
    small = coin_panel(episodes=5, repeats=2).episode_specs()
    large = coin_panel(episodes=50, repeats=2).episode_specs()
    by_key = {s.key: s.condition_seed for s in large}
    for spec in small:
        assert by_key[spec.key] == spec.condition_seed
    seeds = {(s.cell, s.episode): set() for s in small}
    for spec in small:
        seeds[(spec.cell, spec.episode)].add(spec.condition_seed)
    assert all(len(v) == 1 for v in seeds.values())  # a repeat is the same condition again
    assert len({s.condition_seed for s in large}) == len(large) // 2


def test_cell_seeds_do_not_move_when_a_level_is_added() -> None:
    a = {s.key: s.condition_seed for s in coin_panel(factors={"p": [0.2]}).episode_specs()}
    b = {s.key: s.condition_seed for s in coin_panel(factors={"p": [0.2, 0.8]}).episode_specs()}
    assert all(b[k] == v for k, v in a.items())
    assert default_condition_seed(3, "p=0.2", 0) == a[("p=0.2", 0, 0)]


def test_reach_condition_seeds_follow_the_lab_lcg() -> None:
    from evalband.envs import episode_condition_seed

    specs = load_panel("reach1d-256").episode_specs()
    assert [s.condition_seed for s in specs[:64]] == [
        s.condition_seed for s in load_panel("reach1d").episode_specs()
    ]
    assert specs[5].condition_seed == episode_condition_seed(7, 5)


def test_factor_mapping_levels_pass_options() -> None:
    panel = coin_panel(factors={"arm": {"weak": {"p": 0.1}, "strong": {"p": 0.9}}})
    cells = panel.cells()
    assert [c.key for c in cells] == ["arm=weak", "arm=strong"]
    assert cells[1].options == {"p": 0.9} and cells[1].slices == {"arm": "strong"}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"episodez": 3}, "unknown field 'episodez'"),
        ({"episodes": "many"}, "field 'episodes'"),
        ({"episodes": 0}, "field 'episodes'"),
        ({"budget": {"steps": 3, "seconds": 1.0}}, "budget"),
        ({"env": "nope/Missing-v9"}, "field 'env'"),
    ],
)
def test_bad_panels_name_the_field(change: dict, needle: str) -> None:
    data = {"name": "x", "env": "evalband/Coin-v0", "episodes": 2, "seed": 0,
            "budget": {"steps": 1}}
    data.update(change)
    with pytest.raises(PanelError) as info:
        load_panel(data)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_and_invalid_yaml_files(tmp_path) -> None:
    with pytest.raises(PanelError, match="not found"):
        load_panel(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(PanelError, match="not valid YAML"):
        load_panel(bad)


def test_budget_seconds_must_divide() -> None:
    with pytest.raises(PanelError):
        Budget(seconds=1.1).resolve_steps(0.2)
    assert Budget(seconds=2.0).resolve_steps(0.2) == 10
    assert isinstance(coin_panel(), Panel)


def test_condition_seeds_of_a_column_are_the_one_at_a_time_seeds() -> None:
    import numpy as np

    from evalband.panel import default_condition_seed, default_condition_seeds

    rng = np.random.default_rng(3)
    episodes = np.concatenate([np.arange(40), rng.integers(0, 2**32, 40), [2**32 - 1, 2**32 + 5]])
    for seed in (0, 1, 7, 2**32 - 1, 2**32, 2**70 + 3):
        for cell in ("", "a=1", "mass=heavy,x=0.25"):
            got = [int(s) for s in default_condition_seeds(seed, cell, episodes)]
            assert got == [default_condition_seed(seed, cell, int(e)) for e in episodes]


@pytest.mark.parametrize("episodes", [1, 15, 16, 40])
def test_episode_specs_seeds_are_one_seedsequence_each(episodes: int) -> None:
    """Large cells take the vectorised seeds: the same numbers as one SeedSequence each."""
    import hashlib

    import numpy as np

    panel = load_panel({"name": "c", "env": "evalband/Coin-v0", "episodes": episodes,
                        "seed": 2**40 + 7, "budget": {"steps": 1}, "repeats": 2,
                        "factors": {"p": [0.2, 0.8]}})
    specs = panel.episode_specs()
    assert len(specs) == 4 * episodes
    for spec in specs:
        cell_hash = int.from_bytes(hashlib.sha256(spec.cell.encode()).digest()[:4], "little")
        expected = np.random.SeedSequence(entropy=panel.seed, spawn_key=(
            cell_hash, spec.episode)).generate_state(1, dtype=np.uint32)[0]
        assert type(spec.condition_seed) is int and spec.condition_seed == int(expected)


def test_env_kwargs_level_instruction_goes_to_the_policy() -> None:
    """A constructor factor's level may carry the task's instruction: the policy gets it, the
    env's constructor does not (LIBERO's and robosuite's task factors)."""
    from evalband.run._execute import RunTask, episode_context

    panel = load_panel({
        "name": "tasks", "env": "evalband/Coin-v0", "episodes": 1, "budget": {"steps": 3},
        "factors": {"task": {"target": "env_kwargs", "levels": {
            "short": {"length": 1, "instruction": "flip once"},
            "long": {"length": 3, "instruction": "flip thrice"}}}},
    })
    specs = panel.episode_specs()
    assert [s.env_kwargs for s in specs] == [{"length": 1}, {"length": 3}]
    task = RunTask("r", "p", panel.fingerprint, panel.env)
    assert [episode_context(task, s).task for s in specs] == ["flip once", "flip thrice"]
