"""Run inside the lerobot side venv by tests/policies/test_lerobot_offline.py.

``python lerobot_offline.py WORKDIR`` builds, with lerobot's own code and nothing from a hub:

* a small local ``LeRobotDataset`` (6 episodes of a 2-D reaching task, keypoint state and an
  environment state, no images; a per-frame ``modality`` column, every third episode
  "kinesthetic");
* one small diffusion policy trained for a few steps on episodes 0-3 (lerobot's
  ``DiffusionPolicy.forward`` loss, its own pre/post-processors from the dataset's stats),
  saved as two checkpoints of the same run (after 3 and after 6 optimiser steps);

then computes the validation action error on episodes 4-5 four ways and prints them as
JSON: evalband's ``offline_action_error`` twice, ``evalband offline ... --json --csv`` once
(in this process), and a direct loop written with lerobot's code alone (``PreTrainedConfig``,
``DiffusionPolicy.from_pretrained``, ``make_pre_post_processors``, ``select_action``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

FPS, EPISODES, FRAMES = 10, 6, 12
HELD_OUT = [4, 5]
STEPS = 4  # denoising steps, held fixed


def build_dataset(root: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features = {
        "observation.state": {"dtype": "float32", "shape": (2,), "names": None},
        "observation.environment_state": {"dtype": "float32", "shape": (4,), "names": None},
        "action": {"dtype": "float32", "shape": (2,), "names": None},
        "modality": {"dtype": "string", "shape": (1,), "names": None},
    }
    ds = LeRobotDataset.create("local/reach", fps=FPS, features=features, root=root,
                               use_videos=False)
    rng = np.random.default_rng(0)
    for ep in range(EPISODES):
        x = rng.normal(size=2).astype(np.float32)
        goal = rng.normal(size=2).astype(np.float32)
        for _ in range(FRAMES):
            a = (0.3 * (goal - x)).astype(np.float32)
            ds.add_frame({"observation.state": x.copy(),
                          "observation.environment_state": np.concatenate([x, goal]),
                          "action": a, "task": "reach the goal",
                          "modality": "kinesthetic" if ep % 3 == 2 else "teleop"})
            x = (x + a + rng.normal(scale=0.02, size=2)).astype(np.float32)
        ds.save_episode()
    ds.finalize()


def train(root: Path, out: Path) -> list[Path]:
    import torch
    from lerobot.configs.types import FeatureType
    from lerobot.datasets.lerobot_dataset import LeRobotDataset, LeRobotDatasetMetadata
    from lerobot.datasets.utils import dataset_to_policy_features
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
    from lerobot.policies.factory import make_pre_post_processors

    torch.manual_seed(0)
    meta = LeRobotDatasetMetadata("local/reach", root=root)
    features = dataset_to_policy_features(meta.features)
    outputs = {k: f for k, f in features.items() if f.type is FeatureType.ACTION}
    inputs = {k: f for k, f in features.items() if k not in outputs}
    config = DiffusionConfig(
        input_features=inputs, output_features=outputs, n_obs_steps=2, horizon=8,
        n_action_steps=4, drop_n_last_frames=3, down_dims=(16, 32), kernel_size=3, n_groups=4,
        diffusion_step_embed_dim=16, num_train_timesteps=20, noise_scheduler_type="DDIM",
        num_inference_steps=10, device="cpu", push_to_hub=False)
    policy = DiffusionPolicy(config)
    pre, post = make_pre_post_processors(config, dataset_stats=meta.stats)
    delta = {k: [i / FPS for i in config.observation_delta_indices] for k in inputs}
    delta["action"] = [i / FPS for i in config.action_delta_indices]
    ds = LeRobotDataset("local/reach", root=root, episodes=list(range(4)),
                        delta_timestamps=delta)
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    optim = torch.optim.Adam(policy.parameters(), lr=1e-3)
    saved = []
    step = 0
    policy.train()
    while step < 6:
        for batch in loader:
            loss, _ = policy.forward(pre(batch))
            optim.zero_grad()
            loss.backward()
            optim.step()
            step += 1
            if step in (3, 6):
                path = out / f"step{step}" / "pretrained_model"
                policy.save_pretrained(path)
                pre.save_pretrained(path)
                post.save_pretrained(path)
                saved.append(path)
            if step >= 6:
                break
    return saved


def direct(path: Path, ds: Any) -> dict[str, float]:
    """The action error with lerobot's code alone: load, reset, replay, compare."""
    import torch
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
    from lerobot.policies.factory import make_pre_post_processors

    from evalband.policies.lerobot_offline import frame_seed

    config = PreTrainedConfig.from_pretrained(path)
    config.num_inference_steps = STEPS
    policy = DiffusionPolicy.from_pretrained(path, config=config)
    policy.eval()
    pre, post = make_pre_post_processors(policy_cfg=config, pretrained_path=str(path))
    sq, ab = [], []
    for ep in HELD_OUT:
        policy.reset()
        rows = [i for i in range(len(ds)) if int(ds.hf_dataset[i]["episode_index"]) == ep]
        for frame, i in enumerate(rows):
            item = ds[i]
            batch = {"observation.state": item["observation.state"][None],
                     "observation.environment_state": item["observation.environment_state"][None],
                     "task": [item["task"]]}
            torch.manual_seed(frame_seed(0, ep, frame))
            with torch.inference_mode():
                action = post(policy.select_action(pre(batch)))[0].numpy()
            err = action.astype(np.float64) - item["action"].numpy().astype(np.float64)
            sq.append(float(np.mean(err**2)))
            ab.append(float(np.mean(np.abs(err))))
    return {"mse": float(np.mean(sq)), "mae": float(np.mean(ab)), "frames": len(sq)}


def main(work: Path) -> None:
    import time

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from evalband.cli import main as cli
    from evalband.policies.lerobot_offline import offline_action_error

    t0 = time.perf_counter()
    root = work / "dataset"
    build_dataset(root)
    t1 = time.perf_counter()
    paths = train(root, work / "ckpt")
    t2 = time.perf_counter()
    names = [f"lerobot:{p}" for p in paths]
    first = offline_action_error(names, root, "4:6", by="modality", denoising_steps=STEPS)
    t3 = time.perf_counter()
    other = offline_action_error(names, root, [4, 5], by="modality", denoising_steps=STEPS,
                                 seed=1)  # other noise draws: other numbers
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli(["offline", *names, "--dataset", str(root), "--episodes", "4:6",
                    "--by", "modality", "--denoising-steps", str(STEPS), "--json",
                    "--csv", str(work / "offline.csv")])
    held_out = LeRobotDataset("local/reach", root=root, episodes=HELD_OUT)
    if code != 0 or not buffer.getvalue().strip():
        raise SystemExit(f"evalband offline exited {code}: {buffer.getvalue()!r}")
    out: dict[str, Any] = {
        "first": first.as_dict(), "other_seed": other.as_dict(),
        # lerobot prints "Loading weights ..." on stdout: the JSON starts at its own "{" line
        "cli_code": code, "cli": json.loads(buffer.getvalue()[buffer.getvalue().index("{\n"):]),
        "csv": (work / "offline.csv").read_text(),
        "direct": {n: direct(p, held_out) for n, p in zip(names, paths, strict=True)},
        "seconds": {"dataset": t1 - t0, "train": t2 - t1, "offline": t3 - t2,
                    "all": time.perf_counter() - t0},
    }
    print("\n" + json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
