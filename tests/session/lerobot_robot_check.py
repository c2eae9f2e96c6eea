"""Run inside lerobot's venv (.venv-lerobot) by ``test_robot_lerobot.py``: ``python THIS DIR``.

Prints, as its last line, a JSON object of what it found:

* ``so101``: ``evalband session run --robot lerobot:so101_follower`` with a config naming a
  port that does not exist (the exit code and stderr), the robot lerobot's factory built
  from that config (class, module, lerobot ``Robot`` subclass, config class), and what the
  store holds afterwards (nothing);
* ``loop``: a rehearsal on ``lerobot:evalband_sim_arm`` (lerobot's ``Robot`` base class, the
  motors sim-arm's), its trials and plays;
* ``export``: the session exported with ``--format lerobot``, opened with lerobot's
  ``LeRobotDataset``, each episode's frames, state and action against the stored clip (decoded
  with PyAV here) and step data (read with pyarrow here).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def cli(*args: str) -> tuple[int, str, str]:
    from evalband.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def so101(tmp: Path, store: str) -> dict[str, Any]:
    import lerobot.robots

    from evalband.session import SessionStore
    from evalband.session._attempts import AttemptLog
    from evalband.session._lerobot_robot import lerobot_robot

    config = tmp / "so101.yaml"
    config.write_text("port: /dev/ttyEVALBAND_NONE\nid: grasp-arm\n")
    cli("session", "plan", "--policies", "sim-arm:grasp", "--scenes", "1", "--attempts", "1",
        "--seed", "1", "--instrument", "sim-arm", "--session-id", "so", "--store", store)
    code, _, err = cli("session", "run", "so", "--robot", "lerobot:so101_follower",
                       "--robot-config", str(config), "--store", store)
    robot = lerobot_robot("so101_follower", str(config))
    with SessionStore(store, read_only=True) as ss:
        stored = [len(ss.records("so")), len(AttemptLog(ss).attempts("so"))]
    return {"code": code, "err": err, "class": type(robot).__name__,
            "module": type(robot).__module__,
            "is_lerobot_robot": isinstance(robot, lerobot.robots.Robot),
            "config": type(robot.config).__name__, "port": robot.config.port,
            "stored": stored}


def loop(tmp: Path, store: str) -> dict[str, Any]:
    import lerobot.robots

    from evalband.session import SessionStore, resolve_robot
    from evalband.session._attempts import AttemptLog

    config = tmp / "sim.yaml"
    config.write_text("id: rehearsal-arm\nseed: 3\n")
    cli("session", "plan", "--policies", "sim-arm:grasp,sim-arm:never", "--scenes", "1",
        "--attempts", "1", "--seed", "5", "--instrument", "sim-arm", "--session-id", "lr",
        "--store", store)
    code, out, err = cli("session", "run", "lr", "--robot", "lerobot:evalband_sim_arm",
                         "--robot-config", str(config), "--operator", "suggested", "--clock",
                         "virtual", "--store", store)
    robot = resolve_robot("lerobot:evalband_sim_arm", str(config))
    with SessionStore(store, read_only=True) as ss:
        records = ss.records("lr")
        attempts = AttemptLog(ss).attempts("lr")
    return {"code": code, "out": out[-2000:], "err": err[-2000:],
            "base": [c.__module__ + "." + c.__name__ for c in type(robot).__mro__],
            "is_lerobot_robot": isinstance(robot, lerobot.robots.Robot),
            "robot_id": robot.id,
            "trials": [{"score": r.score, "robot": (r.play or {}).get("robot"),
                        "end": (r.play or {}).get("end"), "kinds": sorted(
                            m["kind"] for m in (r.play or {}).get("media", []))}
                       for r in records],
            "attempts": [a.status for a in attempts]}


def save_act(directory: Path) -> None:
    """A small, randomly initialised lerobot ACT for sim-arm's motors and wrist camera."""
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    torch.manual_seed(0)
    config = ACTConfig(
        input_features={
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(5,)),
            "observation.images.wrist": PolicyFeature(type=FeatureType.VISUAL,
                                                      shape=(3, 96, 128)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(5,))},
        chunk_size=10, n_action_steps=10, dim_model=32, n_heads=2, dim_feedforward=64,
        n_encoder_layers=1, n_decoder_layers=1, n_vae_encoder_layers=1, latent_dim=8,
        pretrained_backbone_weights=None, device="cpu", push_to_hub=False,
    )
    home = torch.tensor([0.0, 200.0, 150.0, 0.0, 100.0])
    stats: dict[str, dict[str, Any]] = {
        "observation.state": {"mean": home, "std": torch.full((5,), 50.0)},
        "observation.images.wrist": {"mean": torch.full((3, 1, 1), 0.5),
                                     "std": torch.full((3, 1, 1), 0.25)},
        "action": {"mean": home, "std": torch.tensor([10.0, 20.0, 20.0, 10.0, 10.0])},
    }
    policy = ACTPolicy(config)
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    policy.save_pretrained(directory)
    pre.save_pretrained(directory)
    post.save_pretrained(directory)


def checkpoint(tmp: Path, store: str) -> dict[str, Any]:
    """A lerobot checkpoint (``act=lerobot:DIR``) plays a trial on the lerobot sim-arm."""
    import pyarrow.parquet as pq

    from evalband.session import SessionStore
    from evalband.store._media import media_file

    directory = tmp / "act"
    save_act(directory)
    config = tmp / "sim.yaml"
    cli("session", "plan", "--policies", f"act=lerobot:{directory}", "--scenes", "1",
        "--attempts", "1", "--seed", "2", "--instrument", "sim-arm", "--session-id", "ck",
        "--store", store)
    code, out, err = cli("session", "run", "ck", "--robot", "lerobot:evalband_sim_arm",
                         "--robot-config", str(config), "--operator", "suggested", "--clock",
                         "virtual", "--store", store)
    with SessionStore(store, read_only=True) as ss:
        (record,) = ss.records("ck")
    refs = record.play["media"]
    table = pq.read_table(media_file(store, next(m for m in refs if m["kind"] == "steps")))
    phase = table.column("phase").to_pylist()
    sent = [table.column(f"action.{k}").to_pylist() for k in ("reach.pos", "lift.pos")]
    moving = [len({round(v, 3) for v, p in zip(col, phase, strict=True) if p == "policy"})
              for col in sent]
    return {"code": code, "err": err[-2000:], "steps": record.play["timing"]["steps"],
            "end": record.play["end"], "distinct_goals": moving}


def export(tmp: Path, store: str) -> dict[str, Any]:
    import av
    import pyarrow.parquet as pq
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from evalband.session import SessionStore
    from evalband.store._media import media_file

    root = tmp / "dataset"
    code, out, err = cli("export", "lr", "--format", "lerobot", "--out", str(root),
                         "--store", store, "--json")
    dataset = LeRobotDataset("evalband/lr", root=root)
    with SessionStore(store, read_only=True) as ss:
        records = ss.records("lr")
    index = json.loads((root / "meta" / "evalband_trials.json").read_text())["episodes"]
    checks = []
    for entry in index:
        record = next(r for r in records if r.trial_index == entry["trial_index"])
        refs = record.play["media"]
        clip = media_file(store, next(m for m in refs if m["kind"] == "video"))
        with av.open(str(clip)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        table = pq.read_table(media_file(store, next(m for m in refs if m["kind"] == "steps")))
        cols = {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
        filmed = np.flatnonzero(cols["frame"] >= 0)
        names = dataset.meta.features["observation.state"]["names"]
        start = int(dataset.meta.episodes[entry["episode_index"]]["dataset_from_index"])
        worst_pixel, worst_state, worst_action = 0, 0.0, 0.0
        for i, row in enumerate(filmed):
            item = dataset[start + i]
            image = (item["observation.images.wrist"].numpy().transpose(1, 2, 0) * 255.0)
            pixels = np.rint(image).astype(int)
            worst_pixel = max(worst_pixel, int(np.abs(pixels - frames[i].astype(int)).max()))
            state = np.array([cols[f"obs.{k}"][row] for k in names])
            worst_state = max(worst_state, float(np.abs(item["observation.state"].numpy()
                                                        - state).max()))
            action_names = dataset.meta.features["action"]["names"]
            action = np.array([cols[f"action.{k}"][row] for k in action_names])
            worst_action = max(worst_action, float(np.abs(item["action"].numpy()
                                                         - action).max()))
            assert int(item["episode_index"]) == entry["episode_index"]
        checks.append({"frames": len(frames), "dataset_frames": entry["frames"],
                       "worst_pixel": worst_pixel, "worst_state": worst_state,
                       "worst_action": worst_action})
    return {"code": code, "out": out, "err": err[-2000:], "episodes":
            dataset.meta.total_episodes, "length": len(dataset), "checks": checks,
            "features": sorted(dataset.meta.features)}


def main(directory: str) -> None:
    tmp = Path(directory)
    store = str(tmp / "s.sqlite")
    result = {"so101": so101(tmp, store), "loop": loop(tmp, store)}
    result["export"] = export(tmp, store)
    result["checkpoint"] = checkpoint(tmp, str(tmp / "ck.sqlite"))
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
