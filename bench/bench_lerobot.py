"""Throughput of a lerobot ACT on gym-pusht: serial, the vector backend, lerobot-eval, --batch.

Runs inside ``.venv-lerobot`` (``make test`` builds it), one subprocess; the checkpoints are
small ACTs saved there with lerobot's own code (random weights, made-up normalisation: no
download). gym-pusht with keypoint observations (``environment_state_agent_pos``), the
built-in ``lerobot-pusht`` panel's seeds (1000 + episode, lerobot-eval's), 60 steps.

* **vector**: the same episodes three ways, each a fresh command end to end (imports, env
  and model building included), episodes per second side by side: ``evalband run`` serial;
  ``evalband run --backend vector --workers 4`` (four gym-pusht sub-envs in their own
  processes, the ACT batched in the driver); lerobot-eval's own loop
  (``--eval.batch_size=4``: four envs in gymnasium's SyncVectorEnv, its default; lerobot
  0.4.4's ``--eval.use_async_envs=true`` fails in its own env check: ``'AsyncVectorEnv'
  object has no attribute 'envs'``). The
  episodes are the same: per-episode returns are compared with lerobot-eval's
  ``eval_info.json`` (a batch of four goes through other CPU kernels than a batch of one,
  so within float rounding).
* **batch**: an ACT whose inference dominates (``n_action_steps=1``: a forward pass per
  action; dim 256, 4 encoder layers), ``run_panel`` in one process, one episode at a time
  vs ``batch_size=8`` (:class:`~evalband.policies.lerobot.LerobotBatchPolicy`: one forward
  pass per step for the eight slots); medians of 3 ABAB-interleaved pairs; the target is
  >= 1.5x episodes per second, with the same outcomes and steps and returns within 1e-4.
  torch runs on one thread on every path, the commands of the vector part included (two
  threads on a 2-core VM shared with the env and other jobs oversubscribe it: the forward
  pass took ~10x longer under load).

The machine is a shared 2-core VM: the load average before and after is reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIDE = ROOT / ".venv-lerobot" / "bin" / "python"

SCRIPT = r"""
import json, statistics, subprocess, sys, time
from pathlib import Path
import yaml

def save_act(directory, **sizes):
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors
    torch.manual_seed(0)
    config = ACTConfig(
        input_features={
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(2,)),
            "observation.environment_state": PolicyFeature(type=FeatureType.ENV, shape=(16,)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(2,))},
        n_vae_encoder_layers=1, latent_dim=8, pretrained_backbone_weights=None, device="cpu",
        push_to_hub=False, **sizes)
    stats = {k: {"mean": torch.full((n,), 256.0), "std": torch.full((n,), s)}
             for k, n, s in (("observation.state", 2, 100.0),
                             ("observation.environment_state", 16, 100.0),
                             ("action", 2, 150.0))}
    policy = ACTPolicy(config)
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    for thing in (policy, pre, post):
        thing.save_pretrained(directory)

def panel(work, episodes, steps):
    source = Path(sys.argv[1]) / "src/evalband/panels/lerobot-pusht.yaml"
    data = yaml.safe_load(source.read_text())
    data["env_kwargs"]["obs_type"] = "environment_state_agent_pos"
    data.update(episodes=episodes, budget={"steps": steps})
    path = Path(work) / f"pusht-{episodes}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path

def timed(args):
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return time.perf_counter() - t0

def main(root, work, quick):
    import os
    import torch
    torch.set_num_threads(1)  # every path alike: a shared 2-core VM, no thread oversubscription
    os.environ["OMP_NUM_THREADS"] = "1"  # ... the commands started below too
    from evalband.store import open_store
    work = Path(work)
    episodes, steps = (4, 30) if quick else (16, 60)
    small = work / "act-small"
    save_act(small, chunk_size=10, n_action_steps=10, dim_model=32, n_heads=2,
             dim_feedforward=64, n_encoder_layers=1, n_decoder_layers=1)
    path = panel(work, episodes, steps)
    py = sys.executable
    out = {"vector": {}, "batch": {}}
    walls = {}
    walls["serial"] = timed([py, "-m", "evalband.cli", "run", str(path), "-p", f"lerobot:{small}",
                             "--store", str(work / "v.sqlite"), "--run-id", "serial"])
    walls["vector"] = timed([py, "-m", "evalband.cli", "run", str(path), "-p", f"lerobot:{small}",
                             "--store", str(work / "v.sqlite"), "--run-id", "vector",
                             "--backend", "vector", "--workers", "4"])
    walls["lerobot_eval"] = timed([
        py, "-m", "lerobot.scripts.lerobot_eval", f"--policy.path={small}",
        "--policy.device=cpu", "--env.type=pusht", "--env.obs_type=environment_state_agent_pos",
        f"--env.episode_length={steps}", f"--eval.n_episodes={episodes}",
        "--eval.batch_size=4", "--eval.use_async_envs=false", "--seed=1000",
        f"--output_dir={work / 'eval'}"])
    info = json.loads((work / "eval" / "eval_info.json").read_text())
    [task] = info["per_task"]
    theirs = task["metrics"]["sum_rewards"]
    with open_store(work / "v.sqlite") as store:
        runs = {rid: sorted(store.episode_records(rid), key=lambda r: r.episode)
                for rid in ("serial", "vector")}
    ours = {rid: [r.metrics["return"] for r in recs] for rid, recs in runs.items()}
    diff = max(abs(a - b) / max(1e-9, abs(b)) for rid in ours
               for a, b in zip(ours[rid], theirs))
    out["vector"] = {
        "episodes": episodes, "steps": steps,
        "wall_s": walls, "episodes_per_s": {k: episodes / v for k, v in walls.items()},
        "returns_max_rel_diff_vs_lerobot_eval": diff,
        "serial_equals_vector": [(r.outcome, r.steps) for r in runs["serial"]]
                                == [(r.outcome, r.steps) for r in runs["vector"]],
    }
    big = work / "act-big"
    save_act(big, chunk_size=10, n_action_steps=1, dim_model=256, n_heads=8,
             dim_feedforward=1024, n_encoder_layers=4, n_decoder_layers=1)
    from evalband.panel import load_panel
    from evalband.run import run_panel
    bpanel = load_panel(str(panel(work, 8 if quick else 16, steps)))
    times = {"serial": [], "batch8": []}
    recs = {}
    with open_store(work / "b.sqlite") as store:
        for rep in range(1 if quick else 3):
            for name, size in (("serial", None), ("batch8", 8)) if rep % 2 == 0 else (
                    ("batch8", 8), ("serial", None)):
                rid = f"{name}-{rep}"
                t0 = time.perf_counter()
                run_panel(bpanel, f"lerobot:{big}", store, run_id=rid, batch_size=size)
                times[name].append(time.perf_counter() - t0)
                recs[name] = sorted(store.episode_records(rid), key=lambda r: r.episode)
    same = [(r.outcome, r.steps) for r in recs["serial"]] == [
        (r.outcome, r.steps) for r in recs["batch8"]]
    rel = max(abs(a.metrics["return"] - b.metrics["return"]) / max(1e-9, abs(a.metrics["return"]))
              for a, b in zip(recs["serial"], recs["batch8"]))
    n = len(recs["serial"])
    med = {k: statistics.median(v) for k, v in times.items()}
    out["batch"] = {"episodes": n, "steps": steps, "wall_s": times, "median_s": med,
                    "episodes_per_s": {k: n / v for k, v in med.items()},
                    "ratio": med["serial"] / med["batch8"], "same_outcomes_and_steps": same,
                    "returns_max_rel_diff": rel}
    print(json.dumps(out))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] == "1")
"""


def load() -> list[str]:
    try:
        return Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return []


def run(quick: bool = False) -> dict[str, Any]:
    if not SIDE.exists():
        raise SystemExit(f"{SIDE} is missing: `make test` builds .venv-lerobot")
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "bench_lerobot_side.py"
        script.write_text(SCRIPT)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1",
                   HF_DATASETS_OFFLINE="1", HF_HOME=str(Path(work) / "hf"),
                   SDL_VIDEODRIVER="dummy", TQDM_DISABLE="1")
        before = load()
        done = subprocess.run([str(SIDE), str(script), str(ROOT), work, "1" if quick else "0"],
                              capture_output=True, text=True, env=env, cwd=work)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-5000:])
            raise SystemExit(f"bench_lerobot failed (exit {done.returncode})")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    batch = result["batch"]
    identical = (batch["same_outcomes_and_steps"] and batch["returns_max_rel_diff"] < 1e-4
                 and result["vector"]["serial_equals_vector"]
                 and result["vector"]["returns_max_rel_diff_vs_lerobot_eval"] < 1e-4)
    return {"name": "bench_lerobot", "ratio": batch["ratio"], "target_ratio": 1.5,
            "passed": identical and (quick or batch["ratio"] >= 1.5), "identical": identical,
            **result, "load_avg_before": before, "load_avg_after": load()}


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
