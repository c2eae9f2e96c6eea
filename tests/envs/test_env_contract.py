"""The env contract: ids from any package, entry points, kwargs, time, close, sys.path."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from fake_envs_src import SOURCE

from evalband.cli import main
from evalband.envs._contract import ControlPeriod, control_dt
from evalband.errors import EnvError
from evalband.panel import load_panel
from evalband.run import run_panel
from testkit import comparable


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A third-party env module ``fake_envs`` in the current directory (not installed)."""
    (tmp_path / "fake_envs.py").write_text(SOURCE)
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("FAKE_ENVS_LOG", str(log))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "fake_envs", raising=False)
    yield tmp_path
    sys.modules.pop("fake_envs", None)
    for env_id in ("fake/Reach-v0", "fake/Partial-v0"):
        gym.registry.pop(env_id, None)


def _panel(**fields: Any) -> Any:
    data: dict[str, Any] = {"name": "fake", "env": "fake/Reach-v0", "imports": ["fake_envs"],
                            "episodes": 6, "seed": 1, "budget": {"steps": 40},
                            "success": {"rule": "any_step", "key": "success"}}
    data.update(fields)
    return load_panel(data)


def _closes(pkg: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (pkg / "log").iterdir())


def test_registered_lambda_from_imports_runs_and_closes(pkg: Path, store) -> None:
    panel = _panel()
    rid, summary = run_panel(panel, "fake_envs:toward", store, run_id="lam")
    records = store.episode_records(rid)
    assert summary.successes == 6
    # render_fps 10 is the control period: sim time is steps x 0.1 s.
    assert all(r.sim_time_s == pytest.approx(0.1 * r.steps) for r in records)
    assert all(r.metrics["return"] <= 0 and "reward_max" in r.metrics for r in records)
    assert _closes(pkg) >= 1


def test_module_id_form_and_partial_entry_point(pkg: Path, store) -> None:
    panel = _panel(env="fake_envs:fake/Partial-v0", imports=[])
    _, summary = run_panel(panel, "fake_envs:toward", store, run_id="partial")
    assert summary.successes == 6


def test_max_steps_is_not_pushed_through_kwargs(pkg: Path, store) -> None:
    panel = _panel(env="fake_envs:Passthrough", imports=[])
    _, summary = run_panel(panel, "fake_envs:toward", store, run_id="pass")
    assert summary.counts["error"] == 0 and summary.successes == 6


def test_import_failure_is_one_line_naming_the_module(pkg: Path, capsys) -> None:
    (pkg / "broken_envs.py").write_text("import not_installed_dep\n")
    with pytest.raises(EnvError) as info:
        load_panel({"name": "b", "env": "broken_envs:Env", "episodes": 1,
                    "budget": {"steps": 1}})
    message = str(info.value)
    assert "'broken_envs'" in message and "not_installed_dep" in message
    assert "\n" not in message
    (pkg / "p.yaml").write_text("env: no_such_pkg_xyz:Env\nepisodes: 1\nbudget: {steps: 1}\n")
    assert main(["run", "p.yaml", "-p", "reach1d:damped", "--store", "s.sqlite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'no_such_pkg_xyz'" in err
    # A policy module whose own import fails: one line naming it and what it misses.
    (pkg / "ok.yaml").write_text("env: fake/Reach-v0\nimports: [fake_envs]\nepisodes: 1\n")
    (pkg / "broken_policy.py").write_text("import not_installed_dep\n")
    assert main(["run", "ok.yaml", "-p", "broken_policy:act", "--store", "s.sqlite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'broken_policy'" in err and "not_installed_dep" in err


def test_time_limit_is_the_budget_unless_kept(pkg: Path, store) -> None:
    # A policy that never reaches: the registered TimeLimit (40) vs a budget of 60 steps.
    zero = "evalband.policies._builtin:zero_action"
    panel = _panel(budget={"steps": 60}, episodes=2)
    run_panel(panel, zero, store, run_id="budget")
    assert {r.steps for r in store.episode_records("budget") if not r.success} == {60}
    kept = _panel(budget={"steps": 60}, episodes=2, time_limit="env")
    run_panel(kept, zero, store, run_id="kept")
    assert {r.steps for r in store.episode_records("kept") if not r.success} == {40}
    assert kept.fingerprint != panel.fingerprint


def test_two_line_panel_gets_its_budget_from_the_time_limit(pkg: Path) -> None:
    (pkg / "two.yaml").write_text("env: fake/Reach-v0\nimports: [fake_envs]\nepisodes: 3\n")
    panel = load_panel(pkg / "two.yaml")
    assert (panel.name, panel.budget.steps, panel.seed) == ("two", 40, 0)


def test_process_workers_resolve_from_the_same_directory(pkg: Path, store) -> None:
    panel = _panel(episodes=8)
    run_panel(panel, "fake_envs:toward", store, run_id="serial")
    run_panel(panel, "fake_envs:toward", store, run_id="proc", backend="process", workers=2)
    serial = sorted(map(comparable, store.episode_records("serial")), key=str)
    proc = sorted(map(comparable, store.episode_records("proc")), key=str)
    assert serial == proc
    from evalband.run._pool import close_pools

    close_pools()  # the session's warm workers exit (as at the end of a session) ...
    assert _closes(pkg) >= 2  # ... so the serial run's env and a worker's are closed


def test_ignored_factor_is_refused_unless_dynamics_only(pkg: Path, store) -> None:
    ignored = _panel(factors={"friction": [0.1, 0.9]})
    with pytest.raises(EnvError, match="factor 'friction'"):
        run_panel(ignored, "fake_envs:toward", store, run_id="ign")
    assert store.get_run("ign") is None
    wobble = {"target": "env_kwargs", "values": [0.0, 0.02]}
    with pytest.raises(EnvError, match="factor 'wobble'"):
        run_panel(_panel(factors={"wobble": wobble}), "fake_envs:toward", store, run_id="w")
    dynamics = _panel(factors={"wobble": {**wobble, "dynamics_only": True}}, episodes=3)
    run_panel(dynamics, "fake_envs:toward", store, run_id="dyn")
    assert len(store.episode_records("dyn")) == 6


def test_constructor_factor_builds_an_env_per_cell(pkg: Path, store) -> None:
    panel = _panel(factors={"goal": {"target": "env_kwargs", "values": [-0.5, 0.5]},
                            "hint": {"target": "task", "values": ["left", "right"]}},
                   episodes=3)
    specs = panel.episode_specs()
    assert {s.env_kwargs["goal"] for s in specs} == {-0.5, 0.5}
    assert {s.task["hint"] for s in specs} == {"left", "right"} and not specs[0].options
    run_panel(panel, "fake_envs:toward", store, run_id="cells")
    run_panel(panel, "fake_envs:toward", store, run_id="cells-b", batch_size=3)
    one = sorted(map(comparable, store.episode_records("cells")), key=str)
    assert one == sorted(map(comparable, store.episode_records("cells-b")), key=str)
    assert all(r.success for r in store.episode_records("cells"))


def test_control_period_sources() -> None:
    class Prop:
        @property
        def dt(self) -> float:
            return 0.02

    class Skip:
        frame_skip = 5
        model = type("M", (), {"opt": type("O", (), {"timestep": 0.002})()})()

    class DmControl:
        _env = type("E", (), {"control_timestep": lambda self: 0.025})()

    assert control_dt(Prop()) == ControlPeriod(0.02, "dt")
    assert control_dt(Skip()).dt == pytest.approx(0.01)
    assert control_dt(DmControl()) == ControlPeriod(0.025, "control_timestep()")
    assert control_dt(object()).dt is None
    assert np.isclose(control_dt(object(), declared=0.5).dt, 0.5)


def test_older_panels_keep_their_fingerprint_and_new_fields_round_trip() -> None:
    import hashlib
    import json

    from evalband.panel import panel_from_yaml

    old = load_panel("reach1d-dynamics")  # the fingerprint formula before the new fields
    content = {"env": old.env, "env_kwargs": old.env_kwargs, "episodes": old.episodes,
               "seed": old.seed, "budget": {"seconds": 6.0},
               "factors": {"dynamics": ["nominal", "changed"]}, "repeats": 1}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    assert old.fingerprint == hashlib.sha256(canonical.encode()).hexdigest()
    panel = load_panel({
        "name": "x", "env": "evalband/Coin-v0", "episodes": 2, "budget": {"steps": 3},
        "success": {"rule": "any_step"}, "metrics": ["a"], "control_dt": 0.5,
        "factors": {"p": {"values": [0.1, 0.9], "dynamics_only": True},
                    "length": {"target": "env_kwargs", "values": [1, 2]},
                    "hint": {"target": "task", "levels": {"l": {"x": 1}, "r": {"x": 2}}}},
    })
    again = panel_from_yaml(panel.to_yaml())
    assert again == panel and again.fingerprint == panel.fingerprint
    flagged = load_panel({**panel.model_dump(), "factors": {
        "p": {"values": [0.1, 0.9]}, "length": {"target": "env_kwargs", "values": [1, 2]},
        "hint": {"target": "task", "levels": {"l": {"x": 1}, "r": {"x": 2}}}}})
    assert flagged.fingerprint == panel.fingerprint  # dynamics_only reads, not plays
    cell = panel.cells()[0]
    assert (cell.options, cell.env_kwargs, cell.task) == ({"p": 0.1}, {"length": 1}, {"x": 1})
