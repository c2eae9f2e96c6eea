"""``run --record`` on envs that take render_mode through ``**kwargs`` (gymnasium's MuJoCo,
Fetch, Adroit), in their venvs; PyAV checked before the first episode; ``--record-size``
(issue 33, items 5, 6 and 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import evalband
from evalband.errors import InvalidParameterError
from evalband.panel import load_panel
from evalband.run import run_panel
from testkit import side_venv_python

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SRC = Path(evalband.__file__).resolve().parents[1]

MAIN_VENV = ["Reacher-v5", "InvertedPendulum-v5", "HalfCheetah-v5", "AdroitHandDoor-v1"]
MUJOCO3 = ["FetchReach-v4", "FetchPush-v4"]  # gymnasium-robotics' Fetch needs MuJoCo 3.x


def _panels(tmp_path: Path, envs: list[str]) -> list[str]:
    paths = []
    for env in envs:
        path = tmp_path / f"{env}.yaml"
        path.write_text(yaml.safe_dump({
            "name": env, "env": env, "imports": ["gymnasium_robotics"], "episodes": 1,
            "budget": {"steps": 4}, "success": {"rule": "return", "threshold": 1e9}}))
        paths.append(str(path))
    return paths


def _film(python: Path, tmp_path: Path, panels: list[str]) -> list[list[Any]]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}", "MUJOCO_GL": "egl"}
    done = subprocess.run([str(python), str(HERE / "record_envs.py"),
                           str(tmp_path / "s.sqlite"), *panels], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.slow
def test_record_films_gymnasium_mujoco_and_adroit_envs(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium_robotics")
    got = _film(Path(sys.executable), tmp_path, _panels(tmp_path, MAIN_VENV))
    assert [row[0] for row in got] == MAIN_VENV
    assert all(row[1:] == [4, 5, 64, 48] for row in got), got  # a frame per step + reset


@pytest.mark.slow
@pytest.mark.mujoco3
def test_record_films_fetch_and_a_mujoco3_panel_in_their_venv(tmp_path: Path) -> None:
    python = side_venv_python(ROOT / ".venv-mujoco3", (
        "the Fetch envs run in the MuJoCo 3.3 venv; `make test` builds .venv-mujoco3"))
    shipped = yaml.safe_load((ROOT / "examples" / "dmc-point-mass.yaml").read_text())
    shipped.update(episodes=1, budget={"steps": 4})
    (tmp_path / "dmc.yaml").write_text(yaml.safe_dump(shipped))
    got = _film(python, tmp_path, [*_panels(tmp_path, MUJOCO3), str(tmp_path / "dmc.yaml")])
    assert [row[0] for row in got] == [*MUJOCO3, "dmc-point-mass"]
    assert all(row[1:] == [4, 5, 64, 48] for row in got), got


class _Drawn:
    """Frames of 30 x 20 pixels, ``render_mode`` reaching it through a subclass's ``**kwargs``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, length: int = 3) -> None:
        import gymnasium

        self.render_mode, self.length = render_mode, length
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,))
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        self.t = 0
        return np.zeros(1), {}

    def step(self, action: Any) -> Any:
        self.t += 1
        return np.zeros(1), 0.0, self.t >= self.length, False, {"is_success": False}

    def render(self) -> np.ndarray:
        return np.full((20, 30, 3), 40 * self.t, np.uint8)

    def close(self) -> None:
        pass


class KwargsEnv(_Drawn):
    """Takes every argument through ``**kwargs`` (as gymnasium's ``Reacher-v5`` does)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)


def _panel(env: str = "test_record_envs:KwargsEnv") -> Any:
    return load_panel({"name": "drawn", "env": env, "episodes": 2, "budget": {"steps": 5}})


def test_render_mode_through_kwargs_is_filmed_and_resized(store: Any) -> None:
    import av

    from evalband.store._media import media_file

    run_panel(_panel(), "random", store, run_id="kw", record_video="all",
              record_size=(32, 16))
    for record in store.episode_records("kw"):
        (ref,) = record.media
        with av.open(str(media_file(store.path, ref))) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        assert len(frames) == record.steps + 1 and frames[0].shape == (16, 32, 3)
    assert store.require_run("kw").extra["record_size"] == [32, 16]


def test_a_size_the_renderer_takes_is_passed_to_it() -> None:
    pytest.importorskip("gym_pusht")
    from evalband.run._video import record_kwargs

    kwargs, resize = record_kwargs("gym_pusht:gym_pusht/PushT-v0", (128, 128))
    assert kwargs == {"render_mode": "rgb_array", "visualization_width": 128,
                      "visualization_height": 128} and not resize
    kwargs, resize = record_kwargs("Reacher-v5", (64, 48))
    assert kwargs == {"render_mode": "rgb_array", "width": 64, "height": 48} and not resize


def test_missing_pyav_is_one_line_before_the_first_episode(
        store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "av", None)  # `import av` fails as if not installed
    with pytest.raises(InvalidParameterError, match="PyAV") as info:
        run_panel(_panel(), "random", store, run_id="no-av", record_video="all")
    assert "pip install 'evalband[video]'" in str(info.value)
    assert store.list_runs() == []
