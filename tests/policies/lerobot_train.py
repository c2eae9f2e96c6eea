"""Run inside .venv-lerobot by tests/training/test_lerobot_training.py: train, then evaluate.

``python lerobot_train.py OUT PANEL STORE`` builds a small LeRobotDataset of gym-pusht
episodes locally (keypoint observations, the scripted pusher's actions: nothing from a hub),
runs lerobot's own ``lerobot-train`` (its ``main``) on it (a small ACT, 20 steps, a
checkpoint every 10), then :func:`evalband.training.evaluate_checkpoints` on PANEL into
STORE with a TensorBoard logger writing to ``OUT/tb``; it prints the results as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STEPS, SAVE_EVERY = 20, 10


def build_dataset(root: Path, episodes: int = 2, length: int = 30) -> None:
    """gym-pusht episodes (environment_state_agent_pos) recorded as a local LeRobotDataset."""
    import gym_pusht  # noqa: F401 - registers gym_pusht/PushT-v0
    import gymnasium
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from evalband.policies.classical import pusht_push

    features = {
        "observation.state": {"dtype": "float32", "shape": (2,), "names": None},
        "observation.environment_state": {"dtype": "float32", "shape": (16,), "names": None},
        "action": {"dtype": "float32", "shape": (2,), "names": None},
    }
    dataset = LeRobotDataset.create("local/pusht_tiny", fps=10, features=features, root=root,
                                    use_videos=False)
    env = gymnasium.make("gym_pusht/PushT-v0", obs_type="environment_state_agent_pos")
    state_env = gymnasium.make("gym_pusht/PushT-v0", obs_type="state")
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        state, _ = state_env.reset(seed=episode)
        for _ in range(length):
            action = np.asarray(pusht_push(state), dtype=np.float32)
            dataset.add_frame({
                "observation.state": np.asarray(obs["agent_pos"], np.float32),
                "observation.environment_state": np.asarray(obs["environment_state"],
                                                            np.float32),
                "action": action, "task": "push the T onto the target"})
            obs, *_ = env.step(action)
            state, *_ = state_env.step(action)
        dataset.save_episode()
    dataset.finalize()


def train(root: Path, output: Path) -> None:
    """lerobot-train's own entry point (in this process: lerobot is imported once), a small
    ACT (one action per forward pass) on the local dataset."""
    from lerobot.scripts import lerobot_train

    saved = sys.argv
    sys.argv = [
        "lerobot-train",
        "--dataset.repo_id=local/pusht_tiny", f"--dataset.root={root}",
        "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
        "--policy.dim_model=32", "--policy.n_heads=2", "--policy.dim_feedforward=64",
        "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1",
        "--policy.n_vae_encoder_layers=1", "--policy.latent_dim=8",
        "--policy.chunk_size=5", "--policy.n_action_steps=1",
        f"--steps={STEPS}", f"--save_freq={SAVE_EVERY}", "--eval_freq=0", "--log_freq=10",
        "--batch_size=4", "--num_workers=0", "--wandb.enable=false",
        f"--output_dir={output}",
    ]
    try:
        lerobot_train.main()
    finally:
        sys.argv = saved


def main(out: str, panel: str, store: str) -> None:
    from evalband.training import TensorBoardLogger, evaluate_checkpoints

    folder = Path(out)
    build_dataset(folder / "data")
    train(folder / "data", folder / "train")
    logger = TensorBoardLogger(folder / "tb")
    results = evaluate_checkpoints(folder / "train", panel, store=store, prefix="act",
                                   loggers=[logger], backend="serial")
    logger.close()
    again = evaluate_checkpoints(folder / "train", panel, store=store, prefix="act")
    print(json.dumps({"results": [r.__dict__ for r in results], "again": len(again)}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
