"""The MuJoCo 3.x panels (Meta-World, dm_control via shimmy, Fetch), run inside .venv-mujoco3.

These packages do not run on the MuJoCo 4 of the main venv, so ``make test`` builds a second
venv with the versions of requirements/mujoco3.txt. Each test runs ``evalband`` (this
checkout's source) there through its CLI, as a user would, and reads the records back from
the run store here. A missing venv fails the test with what to do: never a silent skip.
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

pytestmark = [pytest.mark.mujoco3, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SIDE_VENV = ROOT / ".venv-mujoco3"

SHIPPED = {  # panel -> (positive control, control period in s); metaworld-push: check-env
    "fetch-reach": ("fetch_reach:p", 0.04),
    "dmc-point-mass": ("point_mass:pd", 0.02),
    "metaworld-reach": ("metaworld:reach", 0.0125),
}


def side_python() -> Path:
    return side_venv_python(SIDE_VENV, (
        "the Meta-World, dm_control and Fetch tests run evalband in a MuJoCo 3.3 venv beside "
        "the main one; `make test` builds .venv-mujoco3 from requirements/mujoco3.txt"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")  # this checkout's evalband, whatever is installed
    env.setdefault("MUJOCO_GL", "egl")  # dm_control's default (glfw) wants a display
    return env


def start(*args: str) -> subprocess.Popen[str]:
    """``evalband ARGS`` inside the side venv (cwd: this folder, for ``mj3_policies``)."""
    return subprocess.Popen(
        [str(side_python()), "-m", "evalband.cli", *args], cwd=Path(__file__).parent,
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 300.0) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{out}\n{err[-3000:]}"
    return out


def panel_file(tmp_path: Path, name: str, stem: str = "", **overrides: Any) -> str:
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    data.update(overrides)
    path = tmp_path / f"{stem or name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def records(store_path: Path, run_id: str) -> dict[Any, Any]:
    with open_store(store_path) as store:
        return {r.key: r for r in store.episode_records(run_id)}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_panel_same_records_on_every_path(name: str, tmp_path: Path) -> None:
    policy, dt = SHIPPED[name]
    panel = panel_file(tmp_path, name, episodes=4)
    paths = {"serial": [], "proc": ["--backend", "process", "--workers", "2"],
             "lock": ["--batch", "4"]}
    procs = {run_id: start("run", panel, "-p", policy, "--run-id", run_id, "--json",
                           "--store", str(tmp_path / f"{run_id}.sqlite"), *extra)
             for run_id, extra in paths.items()}
    summaries = {run_id: json.loads(finish(proc)) for run_id, proc in procs.items()}
    serial = records(tmp_path / "serial.sqlite", "serial")
    assert len(serial) == 4
    for other in ("proc", "lock"):
        got = records(tmp_path / f"{other}.sqlite", other)
        assert sorted(got) == sorted(serial)
        assert all(same_play(serial[k], r) for k, r in got.items())
        assert {k: comparable(r) | {"extra": None} for k, r in serial.items()} == {
            k: comparable(r) | {"extra": None} for k, r in got.items()}
    assert summaries["serial"]["summary"]["successes"] == 4  # the positive control succeeds
    for record in serial.values():
        assert record.sim_time_s == pytest.approx(record.steps * dt)
        assert "return" in record.metrics


def test_check_env_passes_on_the_metaworld_adapter(tmp_path: Path) -> None:
    """Seeded resets reproduce (in one env and a fresh one), lockstep = one at a time."""
    out = finish(start("check-env", panel_file(tmp_path, "metaworld-push"),
                       "-p", "metaworld:push", "-n", "2", "--json"))
    report = json.loads(out)
    assert report["ok"] and all(f["level"] != "problem" for f in report["findings"]), report
    notes = " ".join(f["message"] for f in report["findings"])
    assert "2/2 episodes of metaworld:push succeed" in notes and "0.0125 s" in notes

def test_check_env_on_gym_aloha(tmp_path: Path) -> None:
    """gym-aloha builds, steps and reproduces its seeded start; holding still never succeeds.

    Only check-env, on two steps: each step renders three 480 x 640 cameras on the CPU.
    """
    panel = panel_file(tmp_path, "aloha-transfer-cube", episodes=1, budget={"steps": 2})
    proc = start("check-env", panel, "-p", "aloha:hold", "-n", "1", "--json")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]  # exit 1: a problem found, the one below
    findings = json.loads(out)["findings"]
    problems = [f["message"] for f in findings if f["level"] == "problem"]
    assert problems == ["no success by rule terminal (is_success) in 1 episodes of aloha:hold"]
    assert any("0.02 s from control_timestep()" in f["message"] for f in findings)


def test_gym_aloha_same_records_serial_process_and_lockstep(tmp_path: Path) -> None:
    """gym-aloha's shipped panel through serial, two workers and ``--batch 2``: same records.

    Kept affordable (~30 s): two episodes of two steps. gym-aloha has no state-only
    observation (``obs_type="state"`` raises ``NotImplementedError``) and its task renders
    three 480 x 640 cameras at every reset and step whatever ``observation_width`` says
    (~0.3-0.9 s a step on a CPU renderer), so the steps are few, not smaller.
    """
    panel = panel_file(tmp_path, "aloha-transfer-cube", episodes=2, budget={"steps": 2})
    paths = {"serial": [], "proc": ["--backend", "process", "--workers", "2"],
             "lock": ["--batch", "2"]}
    procs = {run_id: start("run", panel, "-p", "aloha:hold", "--run-id", run_id, "--json",
                           "--store", str(tmp_path / f"{run_id}.sqlite"), *extra)
             for run_id, extra in paths.items()}
    for proc in procs.values():
        finish(proc)
    serial = records(tmp_path / "serial.sqlite", "serial")
    assert sorted(serial) == [("", 0, 0), ("", 1, 0)]
    assert len({r.condition_seed for r in serial.values()}) == 2
    for record in serial.values():  # holding still: the budget runs out, 0.02 s a step
        assert (record.outcome.value, record.steps) == ("timeout", 2)
        assert record.sim_time_s == pytest.approx(0.04) and "return" in record.metrics
    for other in ("proc", "lock"):
        got = records(tmp_path / f"{other}.sqlite", other)
        assert sorted(got) == sorted(serial)
        assert all(same_play(serial[k], r) for k, r in got.items())
        assert {k: comparable(r) | {"extra": None} for k, r in serial.items()} == {
            k: comparable(r) | {"extra": None} for k, r in got.items()}


def test_fetch_success_rule_final_step_vs_any_step(tmp_path: Path) -> None:
    runs = {}
    for rule in ("any_step", "final_step"):
        panel = panel_file(tmp_path, "fetch-reach", rule, episodes=8,
                           success={"rule": rule, "key": "is_success"})
        runs[rule] = start("run", panel, "-p", "mj3_policies:fetch_noisy", "--run-id", rule,
                           "--store", str(tmp_path / f"{rule}.sqlite"))
    got = {rule: records(tmp_path / f"{rule}.sqlite", rule) for rule in runs
           if finish(runs[rule]) is not None}
    anywhere = {k for k, r in got["any_step"].items() if r.success}
    at_end = {k for k, r in got["final_step"].items() if r.success}
    assert at_end <= anywhere and anywhere  # the noisy arm passes through some goals
    assert at_end != anywhere  # ... and wanders out of some again before the end
    assert all(r.steps == 50 for r in got["final_step"].values())
    assert all(got["any_step"][k].steps < 50 or k in at_end for k in anywhere)


_CLOCK = """
import json, sys
import numpy as np
from evalband.envs import make_env
from evalband.envs._resolve import prepare_imports
prepare_imports(imports=["shimmy"])
out = []
for seed, steps in json.loads(sys.argv[1]):
    env = make_env("dm_control/cartpole-swingup-v0", {}, keep_time_limit=False)
    env.reset(seed=seed)
    for _ in range(steps):
        env.step(np.zeros(1))
    out.append(env.unwrapped._env.physics.data.time)  # MuJoCo's own clock
    env.close()
print(json.dumps(out))
"""


def test_dm_control_cartpole_sim_time_is_data_time(tmp_path: Path) -> None:
    """cartpole steps 0.01 s an action (it renders at 10 fps): 1.5 s is 150 steps."""
    panel = tmp_path / "cartpole.yaml"
    panel.write_text(yaml.safe_dump({
        "name": "cartpole", "env": "dm_control/cartpole-swingup-v0", "imports": ["shimmy"],
        "episodes": 2, "seed": 0, "budget": {"seconds": 1.5},
        "success": {"rule": "return", "threshold": 1000.0}}))
    store = tmp_path / "s.sqlite"
    finish(start("run", str(panel), "-p", "evalband.policies._builtin:zero_action",
                 "--run-id", "cp", "--store", str(store)))
    got = records(store, "cp")
    played = json.dumps([[r.condition_seed, r.steps] for r in got.values()])
    clock = subprocess.run([str(side_python()), "-c", _CLOCK, played], env=_env(),
                           capture_output=True, text=True, timeout=300, check=True)
    for record, seconds in zip(got.values(), json.loads(clock.stdout), strict=True):
        assert record.steps == 150 and seconds == pytest.approx(1.5)
        assert record.sim_time_s == pytest.approx(seconds)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
