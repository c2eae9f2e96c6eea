"""LIBERO suites (``hf-libero``) as panels: ``task`` a factor, fixed initial states the conditions.

LIBERO (the ``envs-libero`` extra: ``hf-libero``, the LIBERO package lerobot uses, on
robosuite 1.4) ships, in its wheel, each suite's task list (BDDL files with the task's
language instruction) and each task's **50 fixed initial states** (the ``.pruned_init``
files every LIBERO paper evaluates from). Its scene **assets** (meshes and textures of
the objects, kitchens and tables) are not in the wheel: LIBERO downloads them from the
Hugging Face Hub dataset ``lerobot/libero-assets`` the first time a scene is built.
evalband never downloads anything: :func:`assets_dir` looks for them where LIBERO and the
Hub client would have put them, and, when they are not on this machine, the panel stops
with one line naming where to put them (:data:`ASSETS_HELP`).

:func:`make` builds one task of one suite (``suite``, ``task_id``) as a Gymnasium env
(:class:`LiberoEnv`): ``reset(seed=i)`` puts the scene in the task's initial state ``i``
(0..49; a panel uses ``condition_seeds: sequential`` and ``seed: 0``, so episode ``i`` of
each cell starts from initial state ``i``, as LIBERO's own evaluation does), then lets the
scene settle for ``settle_steps`` zero actions (LIBERO's and lerobot's evaluations wait 10);
``info["success"]`` is LIBERO's ``check_success()`` (the goal predicates of the BDDL file).
The panels ``examples/libero-*.yaml`` are written by :func:`suite_panel`: one level of the
``task`` factor per task, with its ``task_id`` and its instruction (given to the policy).
Sources: hf-libero 0.1.4 (``libero/libero/benchmark/__init__.py``, ``envs/env_wrapper.py``,
``utils/download_utils.py``); lerobot's ``envs/libero.py`` (settling steps, max steps).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from evalband.errors import EnvError

__all__ = [
    "ASSETS_HELP",
    "ASSETS_REPO",
    "MAX_STEPS",
    "SUITES",
    "LiberoEnv",
    "assets_dir",
    "make",
    "suite_panel",
    "suite_tasks",
    "task_init_states",
]

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
"""The suites shipped as panels (``libero_100`` is ``libero_90`` + ``libero_10``)."""

MAX_STEPS = {"libero_spatial": 220, "libero_object": 280, "libero_goal": 300,
             "libero_10": 520, "libero_90": 400}
"""Each suite's step budget (lerobot's and openpi's LIBERO evaluations)."""

ASSETS_REPO = "lerobot/libero-assets"
"""The Hugging Face Hub dataset LIBERO downloads its scene assets from."""

_ASSET_DIRS = ("articulated_objects", "stable_scanned_objects", "turbosquid_objects",
               "stable_hope_objects", "scenes")

ASSETS_HELP = (
    "LIBERO's scene assets are not on this machine (LIBERO downloads them from the Hugging "
    f"Face Hub dataset {ASSETS_REPO}; evalband never downloads): copy that dataset's files "
    "to ~/.cache/libero/assets (or into the local Hugging Face cache), or give the folder as "
    "env_kwargs assets: PATH or LIBERO_ASSETS=PATH"
)
"""The one line a LIBERO panel says when the assets are missing."""


def _package_root() -> Path:
    spec = importlib.util.find_spec("libero")
    if spec is None or spec.origin is None:
        raise EnvError("the LIBERO panels need hf-libero (pip install 'evalband[envs-libero]')")
    return Path(spec.origin).parent / "libero"


def _configure() -> Path:
    """Point LIBERO's config at its own wheel (it asks on stdin when ``config.yaml`` is missing).

    ``LIBERO_CONFIG_PATH`` set by the user is kept; else a config under evalband's cache.
    """
    import yaml

    root = _package_root()
    folder = Path(os.environ.get("LIBERO_CONFIG_PATH")
                  or Path.home() / ".cache" / "evalband" / "libero")
    config = folder / "config.yaml"
    if not config.exists():
        folder.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump({
            "benchmark_root": str(root), "bddl_files": str(root / "bddl_files"),
            "init_states": str(root / "init_files"), "datasets": str(folder / "datasets"),
            "assets": str(root / "assets"),
        }))
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)
    return root


def _complete(path: Path) -> bool:
    return all((path / name).is_dir() for name in _ASSET_DIRS)


def _hub_snapshots(cache: Path) -> list[Path]:
    repo = cache / ("datasets--" + ASSETS_REPO.replace("/", "--"))
    ref = repo / "refs" / "main"
    found = []
    if ref.is_file():
        found.append(repo / "snapshots" / ref.read_text().strip())
    found += sorted((repo / "snapshots").glob("*")) if (repo / "snapshots").is_dir() else []
    return found


def assets_dir(assets: str | os.PathLike[str] | None = None) -> Path:
    """The folder of LIBERO's scene assets on this machine, or :class:`EnvError` (one line).

    Looked for, in order: ``assets``; ``$LIBERO_ASSETS``; LIBERO's own ``assets`` folder in
    its package; ``~/.cache/libero/assets`` (where LIBERO downloads them); the snapshot of
    ``lerobot/libero-assets`` in the local Hugging Face cache (``$HF_HUB_CACHE``, else
    ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``). A folder counts when it holds
    LIBERO's asset folders (``scenes``, ``articulated_objects``, ...).

    >>> assets_dir("/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalband.errors.EnvError: LIBERO assets: /nonexistent holds no LIBERO asset folders ...
    """
    if assets is not None:
        path = Path(assets).expanduser()
        if not _complete(path):
            raise EnvError(f"LIBERO assets: {path} holds no LIBERO asset folders "
                           f"({', '.join(_ASSET_DIRS)}); {ASSETS_HELP}")
        return path
    candidates = []
    if os.environ.get("LIBERO_ASSETS"):
        candidates.append(Path(os.environ["LIBERO_ASSETS"]).expanduser())
    spec = importlib.util.find_spec("libero")
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parent / "libero" / "assets")
    candidates.append(Path.home() / ".cache" / "libero" / "assets")
    hub = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub") if os.environ.get("HF_HOME") else None)
    candidates += _hub_snapshots(Path(hub) if hub else
                                 Path.home() / ".cache" / "huggingface" / "hub")
    for path in candidates:
        if _complete(path):
            return path
    raise EnvError(ASSETS_HELP)


def _benchmark(suite: str) -> Any:
    if suite not in SUITES and suite != "libero_100":
        raise EnvError(f"LIBERO has no suite {suite!r}; use one of {', '.join(SUITES)}")
    _configure()
    from libero.libero import benchmark

    return benchmark.get_benchmark_dict()[suite]()


def suite_tasks(suite: str) -> list[dict[str, Any]]:
    """The suite's tasks in LIBERO's order: ``{"task_id", "name", "instruction", "bddl"}``."""
    bench = _benchmark(suite)
    out = []
    for i in range(bench.n_tasks):
        task = bench.get_task(i)
        out.append({"task_id": i, "name": task.name, "instruction": task.language,
                    "bddl": bench.get_task_bddl_file_path(i)})
    return out


def task_init_states(suite: str, task_id: int) -> np.ndarray:
    """The task's fixed initial states (LIBERO's ``.pruned_init``: ``(50, state size)``)."""
    bench = _benchmark(suite)
    if not 0 <= int(task_id) < bench.n_tasks:
        raise EnvError(f"LIBERO {suite} has tasks 0..{bench.n_tasks - 1}; got task_id {task_id}")
    return np.asarray(bench.get_task_init_states(int(task_id)), dtype=np.float64)


def suite_panel(suite: str, episodes: int = 50) -> dict[str, Any]:
    """The panel of a suite: a ``task`` factor (one level per task), initial states as seeds.

    >>> suite_panel.__name__
    'suite_panel'
    """
    levels = {task["name"]: {"task_id": task["task_id"], "instruction": task["instruction"]}
              for task in suite_tasks(suite)}
    return {
        "name": suite.replace("_", "-"),
        "env": "evalband.envs.libero:make",
        "env_kwargs": {"suite": suite},
        "episodes": episodes,
        "seed": 0,
        "condition_seeds": "sequential",
        "budget": {"steps": MAX_STEPS[suite]},
        "success": {"rule": "any_step", "key": "success"},
        "factors": {"task": {"target": "env_kwargs", "levels": levels}},
    }


class LiberoEnv(gymnasium.Env):
    """One LIBERO task as a Gymnasium env (see the module docstring).

    Args:
        env: LIBERO's ``ControlEnv`` (or a stand-in with its methods).
        init_states: the task's fixed initial states, one row per condition.
        instruction: the task's language instruction.
        settle_steps: zero actions after setting an initial state (objects come to rest).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any, init_states: np.ndarray, instruction: str,
                 settle_steps: int = 10) -> None:
        self.env = env
        self.init_states = init_states
        self.instruction = instruction
        self.settle_steps = int(settle_steps)
        low, high = env.env.action_spec
        self.action_space = gymnasium.spaces.Box(
            np.asarray(low, np.float64), np.asarray(high, np.float64), dtype=np.float64)
        self.observation_space = gymnasium.spaces.Dict({})
        self.control_dt = 1.0 / float(env.env.control_freq)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start from initial state ``seed`` (0..49), then settle; ``None`` is state 0."""
        super().reset(seed=seed)
        index = 0 if seed is None else int(seed)
        if not 0 <= index < len(self.init_states):
            raise EnvError(
                f"LIBERO tasks have {len(self.init_states)} fixed initial states: condition "
                f"seed {index} names none (use condition_seeds: sequential, seed: 0 and at "
                f"most {len(self.init_states)} episodes)")
        self.env.seed(index)
        self.env.reset()
        obs = self.env.set_init_state(self.init_states[index])
        zero = np.zeros(self.action_space.shape or (7,))
        zero[-1] = -1.0  # gripper open, as LIBERO's evaluations wait
        for _ in range(self.settle_steps):
            obs, _, _, _ = self.env.step(zero)
        return dict(obs), {"success": False, "init_state": index}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """One control step; ``info["success"]`` is LIBERO's ``check_success()``."""
        obs, reward, _done, info = self.env.step(np.asarray(action, dtype=np.float64))
        info = dict(info)
        info["success"] = bool(self.env.check_success())
        return dict(obs), float(reward), False, False, info

    def close(self) -> None:
        """Close LIBERO's env."""
        self.env.close()


def make(suite: str = "libero_spatial", task_id: int = 0, assets: str | None = None,
         camera_obs: bool = True, image_size: int = 256, settle_steps: int = 10) -> LiberoEnv:
    """Build task ``task_id`` of a LIBERO suite (see the module docstring).

    Args:
        suite: ``libero_spatial``, ``libero_object``, ``libero_goal``, ``libero_10``,
            ``libero_90``.
        task_id: the task's index in the suite (LIBERO's order).
        assets: the scene assets' folder (else found by :func:`assets_dir`).
        camera_obs: render ``agentview`` and ``robot0_eye_in_hand`` images (LIBERO's
            observations; needs an offscreen MuJoCo renderer, e.g. ``MUJOCO_GL=egl``).
        image_size: the images' height and width (lerobot's LIBERO: 256).
        settle_steps: zero actions after the initial state is set.

    Raises:
        EnvError: hf-libero is missing, the suite or task is unknown, or the scene assets are
            not on this machine (:data:`ASSETS_HELP`).
    """
    init_states = task_init_states(suite, task_id)
    task = suite_tasks(suite)[int(task_id)]
    found = assets_dir(assets)
    import libero.libero as libero_root

    libero_root._assets_path_cache = str(found)  # LIBERO's own lookup returns this folder
    from libero.libero.envs.env_wrapper import ControlEnv

    env = ControlEnv(
        bddl_file_name=task["bddl"], use_camera_obs=camera_obs, has_renderer=False,
        has_offscreen_renderer=camera_obs, camera_heights=image_size,
        camera_widths=image_size, ignore_done=True,
    )
    return LiberoEnv(env, init_states, task["instruction"], settle_steps=settle_steps)
