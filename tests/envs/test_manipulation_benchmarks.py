"""The manipulation benchmark panels (robosuite, LIBERO, ManiSkill3), run inside .venv-bench.

robosuite 1.4, hf-libero and ManiSkill3 need MuJoCo 3.x and pins of their own, so ``make
test`` builds a side venv with the versions of requirements/bench.txt. Each test runs
``evalband`` (this checkout's source) there through its CLI, as a user would, and reads the
records back from the run store here. A missing venv fails the test with what to do.
The full 20-episode runs of every panel on the three paths are ``bench/bench_benchmarks.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalband.run._check import same_play
from evalband.store import open_store
from testkit import comparable, side_venv_python

pytestmark = [pytest.mark.benchvenv, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def side_python() -> Path:
    return side_venv_python(ROOT / ".venv-bench", (
        "the robosuite, LIBERO and ManiSkill tests run evalband in a venv beside the main one; "
        "`make test` builds .venv-bench from requirements/bench.txt"))


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")  # this checkout's evalband, whatever is installed
    env["LIBERO_CONFIG_PATH"] = str(tmp_path / "libero-config")
    env["HOME"] = str(tmp_path / "home")  # no assets or caches of this machine's user
    env.setdefault("MUJOCO_GL", "egl")
    return env


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(side_python()), "-m", "evalband.cli", *args], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc: subprocess.Popen[str], code: int = 0, timeout: float = 300.0) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == code, f"{proc.args}: exit {proc.returncode}\n{out}\n{err[-3000:]}"
    return out if code == 0 else err


def python(tmp_path: Path, code: str) -> Any:
    """Run ``code`` in the side venv; it prints one JSON value."""
    proc = subprocess.run([str(side_python()), "-c", code], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def panel_file(tmp_path: Path, name: str, **overrides: Any) -> str:
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    data.update(overrides)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def records(store_path: Path, run_id: str) -> dict[Any, Any]:
    with open_store(store_path) as store:
        return {r.key: r for r in store.episode_records(run_id)}


THREE_PATHS = """
import sys
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.store import open_store

if __name__ == "__main__":
    panel, policy, store = sys.argv[1:4]
    with open_store(store) as opened:
        for run_id, options in {"serial": {},
                                "vector": {"backend": "vector", "workers": 2}}.items():
            run_panel(load_panel(panel), policy, opened, run_id=run_id, **options)
    print("{}")
"""


def _three_paths(tmp_path: Path, panel: str, policy: str) -> dict[str, dict[Any, Any]]:
    """Serial and two vector sub-envs, from one driver (the process backend, and every
    panel at 20 episodes on all three paths: bench/bench_benchmarks.py)."""
    script = tmp_path / "three_paths.py"
    script.write_text(THREE_PATHS)
    proc = subprocess.run([str(side_python()), str(script), panel, policy,
                           str(tmp_path / "runs.sqlite")], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {run_id: records(tmp_path / "runs.sqlite", run_id)
            for run_id in ("serial", "vector")}


def _same(runs: dict[str, dict[Any, Any]]) -> None:
    serial = runs["serial"]
    for other in set(runs) - {"serial"}:
        got = runs[other]
        assert sorted(got) == sorted(serial)
        assert all(same_play(serial[k], r) for k, r in got.items())
        assert {k: comparable(r) for k, r in serial.items()} == {
            k: comparable(r) for k, r in got.items()}


def test_robosuite_lift_scripted_control_same_records_on_every_path(tmp_path: Path) -> None:
    panel = panel_file(tmp_path, "robosuite-lift", episodes=4, budget={"steps": 80})
    runs = _three_paths(tmp_path, panel, "robosuite:lift")
    _same(runs)
    serial = runs["serial"]
    assert len(serial) == 4 and len({r.condition_seed for r in serial.values()}) == 4
    assert sum(r.success for r in serial.values()) >= 3  # the positive control lifts
    for record in serial.values():
        assert record.slices == {"task": "lift"}
        assert record.sim_time_s == pytest.approx(record.steps * 0.05)
    assert {r.backend for r in _manifests(tmp_path / "runs.sqlite")} == {"serial", "vector"}


def _manifests(store_path: Path) -> list[Any]:
    with open_store(store_path) as store:
        return store.list_runs()


def test_check_env_passes_on_robosuite_lift(tmp_path: Path) -> None:
    out = finish(start(tmp_path, "check-env", panel_file(tmp_path, "robosuite-lift"),
                       "-p", "robosuite:lift", "-n", "1", "--json"))
    report = json.loads(out)
    assert report["ok"] and all(f["level"] != "problem" for f in report["findings"]), report
    notes = " ".join(f["message"] for f in report["findings"])
    assert "1/1 episodes of robosuite:lift succeed" in notes and "0.05 s" in notes



@pytest.mark.parametrize(("name", "factor", "level", "policy"), [
    ("robosuite-door", "task", "door", "robosuite:door"),
    ("robosuite-pickplace", "object", "can", "robosuite:pickplace"),
    ("robosuite-nutassembly", "nut", "round", "robosuite:nut"),
])
def test_check_env_scripted_control_reaches_success(tmp_path: Path, name: str, factor: str,
                                                     level: str, policy: str) -> None:
    """The Door, PickPlace (can) and NutAssembly (round nut) positive controls succeed
    through the panel, and lockstep play equals one at a time (their rates over 20 episodes:
    docs/benchmarks.md)."""
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    factor_spec = data["factors"][factor]
    if "levels" in factor_spec:  # one level of a constructor factor: one robosuite task
        factor_spec = {**factor_spec, "levels": {level: factor_spec["levels"][level]}}
    path = panel_file(tmp_path, name, factors={factor: factor_spec})
    out = finish(start(tmp_path, "check-env", path, "-p", policy, "-n", "1", "--json"))
    report = json.loads(out)
    assert report["ok"] and all(f["level"] != "problem" for f in report["findings"]), report
    notes = " ".join(f["message"] for f in report["findings"])
    assert f"episodes of {policy} succeed by rule any_step" in notes, notes


FACTS = """
import json, re
from pathlib import Path
from evalband.envs import libero
out = {}
for suite in libero.SUITES:
    tasks = libero.suite_tasks(suite)
    states = [libero.task_init_states(suite, t["task_id"]).shape for t in tasks[:1]]
    # LIBERO's benchmark instruction is its file name in words (without a LIBERO-100 scene
    # prefix), read here from the BDDL file's name; the file's own (:language) may differ
    text = [re.sub(r"^[A-Z_]*SCENE[0-9]+_", "", Path(t["bddl"]).stem).replace("_", " ")
            for t in tasks]
    out[suite] = {"n": len(tasks), "states": states, "bddl_language": text,
                  "instructions": [t["instruction"] for t in tasks],
                  "panel": libero.suite_panel(suite)}
made = {}
try:
    from evalband.envs.maniskill import make
    env = make("PickCube-v1")
    first = env.reset(seed=3)[0]
    env.step(env.action_space.sample())
    made = {"same_start": bool((env.reset(seed=3)[0] == first).all()),
            "control_dt": env.control_dt}
except Exception as exc:
    made = {"error": f"{type(exc).__name__}: {exc}"}
print(json.dumps({"libero": out, "maniskill": made}))
"""


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """LIBERO's suites and ManiSkill's build, read in one side-venv process (one torch import)."""
    return python(tmp_path_factory.mktemp("facts"), FACTS)


def test_libero_suites_tasks_initial_states_and_instructions(facts: Any) -> None:
    facts = facts["libero"]
    assert {s: f["n"] for s, f in facts.items()} == {
        "libero_spatial": 10, "libero_object": 10, "libero_goal": 10, "libero_10": 10,
        "libero_90": 90}
    for suite, fact in facts.items():
        assert all(shape[0] == 50 for shape in fact["states"]), suite  # 50 fixed starts
        assert fact["instructions"] == fact["bddl_language"]
        shipped = yaml.safe_load((EXAMPLES / f"{suite.replace('_', '-')}.yaml").read_text())
        assert shipped == fact["panel"]  # the shipped panel is the suite as LIBERO lists it
        levels = shipped["factors"]["task"]["levels"]
        assert [v["task_id"] for v in levels.values()] == list(range(fact["n"]))
        assert shipped["condition_seeds"] == "sequential" and shipped["episodes"] == 50


def test_maniskill_builds_or_says_why_in_one_line(facts: Any) -> None:
    """Where SAPIEN has a Vulkan device the task builds, resets and steps; where not (this
    project's machines), one line says so instead of SAPIEN's error."""
    made = facts["maniskill"]
    if "error" in made:
        assert made["error"].startswith("EnvError: ManiSkill builds its scenes")
        assert "SAPIEN found no Vulkan device" in made["error"] and "\n" not in made["error"]
    else:
        assert made["same_start"] and made["control_dt"] == pytest.approx(0.05)


def test_libero_panel_plan_and_missing_assets_line(tmp_path: Path) -> None:
    """The plan: episode i of a task starts from initial state i, the policy gets the task's
    instruction; with no assets on the machine, one line says where to put them."""
    from evalband.panel import load_panel

    panel = load_panel(EXAMPLES / "libero-goal.yaml", check_env=False)
    specs = panel.episode_specs()
    assert len(specs) == 500 and {s.condition_seed for s in specs} == set(range(50))
    first = [s for s in specs if s.episode == 7][0]
    assert first.condition_seed == 7 and set(first.env_kwargs) == {"task_id"}
    assert first.task["instruction"] == panel.factors["task"].levels[  # type: ignore[union-attr]
        first.slices["task"]]["instruction"]
    err = finish(start(tmp_path, "run", str(EXAMPLES / "libero-goal.yaml"), "-p",
                       "robosuite:random", "--store", str(tmp_path / "s.sqlite")), code=2)
    lines = [line for line in err.splitlines() if line.lower().startswith("error")]
    assert len(lines) == 1 and "lerobot/libero-assets" in lines[0], err[-2000:]
    assert "~/.cache/libero/assets" in lines[0]


def test_libero_assets_found_in_the_local_hub_cache(tmp_path: Path) -> None:
    hub = tmp_path / "home" / ".cache" / "huggingface" / "hub"
    snap = hub / "datasets--lerobot--libero-assets" / "snapshots" / "abc123"
    for name in ("articulated_objects", "stable_scanned_objects", "turbosquid_objects",
                 "stable_hope_objects", "scenes"):
        (snap / name).mkdir(parents=True)
    (hub / "datasets--lerobot--libero-assets" / "refs").mkdir()
    (hub / "datasets--lerobot--libero-assets" / "refs" / "main").write_text("abc123")
    found = python(tmp_path, "import json; from evalband.envs.libero import assets_dir; "
                             "print(json.dumps(str(assets_dir())))")
    assert found == str(snap)


STANDIN_TASK = "KITCHEN_SCENE8_put_both_moka_pots_on_the_stove"  # libero_10 task 8

STANDIN_STATES = """
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, HERE)
from libero_standin import build
from evalband.envs import libero
root = build(Path(ASSETS))
env = libero.make("libero_10", 8, assets=str(root), camera_obs=False, settle_steps=0)
states = libero.task_init_states("libero_10", 8)
same = []
for i in (0, 7, 0):
    env.reset(seed=i)
    same.append(bool(np.allclose(env.env.sim.get_state().flatten(), states[i])))
differ = not bool(np.allclose(states[0], states[7]))
env.close()
print(json.dumps({"same": same, "states_differ": differ}))
"""


def test_libero_task_runs_on_a_locally_built_stand_in_scene(tmp_path: Path) -> None:
    """LIBERO's own env code builds libero_10 task 8 on stand-in assets made here
    (tests/envs/libero_standin.py: the scene's degrees of freedom, simple shapes), resets to
    LIBERO's fixed initial state i exactly, and a panel run plays it: episode i from state i,
    the task's instruction to the policy, random actions, records stored."""
    assets = tmp_path / "libero-assets"
    code = STANDIN_STATES.replace("HERE", repr(str(Path(__file__).parent))).replace(
        "ASSETS", repr(str(assets)))
    facts = python(tmp_path, code)
    assert facts == {"same": [True, True, True], "states_differ": True}
    data = yaml.safe_load((EXAMPLES / "libero-10.yaml").read_text())
    level = data["factors"]["task"]["levels"][STANDIN_TASK]
    panel = panel_file(tmp_path, "libero-10", episodes=3, budget={"steps": 10},
                       env_kwargs={"suite": "libero_10", "task_id": 8,  # the bare env too
                                   "assets": str(assets), "camera_obs": False},
                       factors={"task": {"target": "env_kwargs",
                                         "levels": {STANDIN_TASK: level}}})
    store = tmp_path / "runs.sqlite"
    finish(start(tmp_path, "run", panel, "-p", "robosuite:random", "--store", str(store),
                 "--run-id", "standin", "--json"))
    got = records(store, "standin")
    assert sorted(r.condition_seed for r in got.values()) == [0, 1, 2]
    for record in got.values():
        assert record.outcome.value in ("failure", "timeout"), record.error
        assert record.steps == 10 and record.slices == {"task": STANDIN_TASK}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
