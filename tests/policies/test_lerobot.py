"""lerobot checkpoints (``--policy lerobot:PATH``) against lerobot's own ``lerobot-eval``.

lerobot pins an older torch than the main venv's, so ``make test`` builds a side venv
(.venv-lerobot, requirements/lerobot.txt). There a small randomly initialised ACT is saved
with lerobot's own code (``lerobot_act.py``: nothing from a hub) and evaluated on gym-pusht
three ways: ``evalband run`` (the CLI), lerobot's real ``lerobot-eval`` (same seeds, 3
episodes of 35 steps) and ``run_panel`` (a fresh run that starts at episode 1, and the same
policy with its reset left out). The records are read back here, and lerobot-eval's
``eval_info.json`` is imported and compared with the main venv's evalband. A missing side venv
fails the tests with what to do: never a silent skip.
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

from evalband.store import open_store
from testkit import comparable, side_venv_python

pytestmark = [pytest.mark.lerobot, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
SIDE_VENV = ROOT / ".venv-lerobot"

# Seeds 1008-1010: the random ACT pushes the T in each (the rewards move within episodes),
# so equal rewards say the actions were equal, not only the seeds. 35 steps with a chunk of
# 10 leave 5 actions queued at every episode's end.
SEED, EPISODES, STEPS = 1008, 3, 35


def side_python() -> Path:
    return side_venv_python(SIDE_VENV, (
        "the lerobot tests run lerobot in its own venv beside the main one (lerobot pins an "
        "older torch); `make test` builds .venv-lerobot from requirements/lerobot.txt"))


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{HERE}"  # this checkout's evalband
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(home / "hf"),
               SDL_VIDEODRIVER="dummy", TQDM_DISABLE="1")
    return env


def start(args: list[str], home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(args, cwd=home, env=_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 300.0) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{out}\n{err[-3000:]}"
    return out


def panel_file(tmp: Path, stem: str, **overrides: Any) -> Path:
    """The built-in lerobot-pusht panel with keypoint observations (no images), shortened."""
    data = yaml.safe_load((ROOT / "src/evalband/panels/lerobot-pusht.yaml").read_text())
    data["env_kwargs"]["obs_type"] = "environment_state_agent_pos"
    data.update({"episodes": EPISODES, "seed": SEED, "budget": {"steps": STEPS}, **overrides})
    path = tmp / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def played(record: Any) -> dict[str, Any]:
    """What an episode's play decided: outcome, steps, seed, rewards and coverage."""
    data = comparable(record)
    return {k: data[k] for k in ("outcome", "steps", "condition_seed")} | {
        "metrics": record.metrics}


def records(store_path: Path, run_id: str) -> dict[int, Any]:
    with open_store(store_path) as store:
        return {r.episode: r for r in store.episode_records(run_id)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("lerobot")
    python = str(side_python())
    ckpt = tmp / "act" / "pretrained_model"
    finish(start([python, str(HERE / "lerobot_act.py"), "save", str(ckpt)], tmp))
    panel = panel_file(tmp, "pusht")
    fresh = panel_file(tmp, "fresh", seed=SEED + 1, episodes=EPISODES - 1)
    procs = {
        "evalband": start([python, "-m", "evalband.cli", "run", str(panel), "-p",
                           f"lerobot:{ckpt}", "--run-id", "evalband", "--store",
                           str(tmp / "a.sqlite"), "--json"], tmp),
        "lerobot-eval": start([python, "-m", "lerobot.scripts.lerobot_eval",
                               f"--policy.path={ckpt}", "--policy.device=cpu",
                               "--env.type=pusht",
                               "--env.obs_type=environment_state_agent_pos",
                               f"--env.episode_length={STEPS}", f"--eval.n_episodes={EPISODES}",
                               "--eval.batch_size=1", f"--seed={SEED}",
                               f"--output_dir={tmp / 'eval'}"], tmp),
        "api": start([python, str(HERE / "lerobot_act.py"), "runs", str(ckpt), str(panel),
                      str(fresh), str(tmp / "b.sqlite")], tmp),
    }
    for proc in procs.values():
        finish(proc)
    info = json.loads((tmp / "eval" / "eval_info.json").read_text())
    return {"tmp": tmp, "panel": panel, "info": info}


def test_evalband_run_gives_lerobot_evals_rewards(runs: dict[str, Any]) -> None:
    """Per episode: lerobot-eval's sum_reward and max_reward are evalband's return, reward_max."""
    [task] = runs["info"]["per_task"]
    assert (task["task_group"], task["task_id"]) == ("pusht", 0)
    metrics = task["metrics"]
    ours = records(runs["tmp"] / "a.sqlite", "evalband")
    assert sorted(ours) == list(range(EPISODES))
    assert [ours[i].condition_seed for i in range(EPISODES)] == [SEED + i for i in range(3)]
    # every step's reward is the same float; the sums differ only in the order of additions
    # (lerobot: torch's vectorised sum of the episode's rewards; evalband: one at a time)
    assert [ours[i].metrics["return"] for i in range(EPISODES)] == pytest.approx(
        metrics["sum_rewards"], rel=1e-12, abs=0)
    assert [ours[i].metrics["reward_max"] for i in range(EPISODES)] == metrics["max_rewards"]
    assert [ours[i].outcome.value == "success" for i in range(EPISODES)] == metrics["successes"]
    assert all(ours[i].steps == STEPS for i in range(EPISODES))
    # the actions mattered: in every episode the reward changed from step to step
    for record in ours.values():
        assert record.metrics["return"] != pytest.approx(STEPS * record.metrics["reward_max"])


def test_lerobot_eval_imports_and_pairs_episode_by_episode(runs: dict[str, Any]) -> None:
    """eval_info.json imported on the panel pairs with the evalband run; compare reads 3 pairs."""
    tmp, store = runs["tmp"], str(runs["tmp"] / "a.sqlite")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "evalband.cli", *args, "--store", store,
                               "--json"], cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                              timeout=120)

    done = cli("import", str(tmp / "eval" / "eval_info.json"), "--panel", str(runs["panel"]),
               "--run-id", "lerobot-eval")
    assert done.returncode == 0, done.stderr
    theirs, ours = records(tmp / "a.sqlite", "lerobot-eval"), records(tmp / "a.sqlite", "evalband")
    assert {(r.cell, r.condition_seed) for r in theirs.values()} == {
        (r.cell, r.condition_seed) for r in ours.values()}
    for episode, record in ours.items():
        assert theirs[episode].metrics["sum_reward"] == pytest.approx(
            record.metrics["return"], rel=1e-12, abs=0)
        assert theirs[episode].metrics["max_reward"] == record.metrics["reward_max"]
    compared = cli("compare", "lerobot-eval", "evalband")
    assert compared.returncode in (0, 3, 4, 5), compared.stderr  # a verdict, not bad input
    result = json.loads(compared.stdout)
    assert result["panel_mismatch"] is False and result["slices"]
    for row in result["slices"]:  # every slice: all 3 episodes matched, none left over
        pairs = row["pairs"]
        assert row["pairing"] == "paired" and pairs.get("unmatched", 0) == 0, row
        assert sum(pairs[k] for k in ("both", "baseline_only", "candidate_only", "neither")) \
            == EPISODES


def test_action_queue_is_reset_every_episode(runs: dict[str, Any]) -> None:
    """Episode 1 of the run = episode 0 of a fresh run at its seed; not so without reset."""
    tmp = runs["tmp"]
    ours = records(tmp / "a.sqlite", "evalband")
    fresh = records(tmp / "b.sqlite", "fresh")
    leaky = records(tmp / "b.sqlite", "no-reset")

    assert fresh[0].condition_seed == ours[1].condition_seed == SEED + 1
    assert played(fresh[0]) == played(ours[1])
    assert played(fresh[1]) == played(ours[2])
    # negative control: the first episode has nothing left over, the next ones do
    assert played(leaky[0]) == played(ours[0])
    assert played(leaky[1]) != played(ours[1])


def test_lockstep_batch_gives_every_slot_its_own_queue(runs: dict[str, Any]) -> None:
    """``batch_size=3``: three episodes in lockstep, one forward pass per step for the slots
    whose queue ran dry; the same play as one at a time, up to float rounding (a batch of
    three goes through other CPU kernels than a batch of one)."""
    tmp = runs["tmp"]
    ours = records(tmp / "a.sqlite", "evalband")
    batched = records(tmp / "b.sqlite", "batch")
    assert sorted(batched) == sorted(ours)
    for key, record in ours.items():
        mine, theirs = played(batched[key]), played(record)
        assert {k: mine[k] for k in ("outcome", "steps", "condition_seed")} == {
            k: theirs[k] for k in ("outcome", "steps", "condition_seed")}
        assert mine["metrics"] == pytest.approx(theirs["metrics"], rel=1e-5, abs=1e-6)
    info = json.loads((tmp / "b.sqlite.json").read_text())
    # chunks of 10, 35 steps: 4 chunks an episode; the three episodes start together
    assert info == {"kind": "LerobotBatchPolicy", "forward_passes": 4}


def test_serve_and_check_env_take_a_lerobot_checkpoint(runs: dict[str, Any]) -> None:
    """``serve lerobot:PATH`` in lerobot's venv (its remote extra installed), played over
    ws:// from here, gives the records of the checkpoint played in process; ``check-env``
    rolls the checkpoint out as ``run`` does (issue 33, items 4 and 6)."""
    tmp = runs["tmp"]
    python = str(side_python())
    ckpt = tmp / "act" / "pretrained_model"
    check = start([python, "-m", "evalband.cli", "check-env", str(runs["panel"]), "-p",
                   f"lerobot:{ckpt}", "-n", "1", "--json"], tmp)
    server = start([python, "-m", "evalband.cli", "serve", f"lerobot:{ckpt}", "--port", "0",
                    "--json"], tmp)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line, server.stderr.read() if server.stderr else "serve printed nothing"
        url = json.loads(line)["url"]
        store = str(tmp / "served.sqlite")
        done = subprocess.run([sys.executable, "-m", "evalband.cli", "run",
                               str(runs["panel"]), "-p", url, "--run-id", "served",
                               "--store", store, "--json"], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        server.kill()
        server.wait()
    out, err = check.communicate(timeout=300)
    assert check.returncode in (0, 1), err[-3000:]  # 1: a random ACT may not succeed
    report = json.loads(out)  # JSON alone: lerobot's loading messages went to stderr
    assert "Traceback" not in out + err
    assert all(f["level"] != "problem" or f["check"] == "success" for f in report["findings"])
    ours = records(tmp / "a.sqlite", "evalband")
    served = records(tmp / "served.sqlite", "served")
    assert {k: played(r) for k, r in served.items()} == {k: played(r) for k, r in ours.items()}
