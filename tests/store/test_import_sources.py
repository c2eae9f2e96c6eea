"""Importing the field's own outputs, built here in each tool's published layout.

The fixtures are written the way each tool writes them (not by evalband's exporter):

- lerobot ``eval_info.json``: ``lerobot/scripts/eval.py`` (0.4.x ``per_task`` with
  ``metrics.video_paths``; the older ``per_episode`` list with ``seed`` and a top-level
  ``video_paths``).
- LIBERO logs: openpi ``examples/libero/main.py`` logs through ``logging.basicConfig(
  level=logging.INFO)`` (format ``LEVEL:root:message``): ``Task suite: ...``,
  ``\\nTask: <description>``, ``Starting episode {n}...``, ``Success: {done}``.
- SimplerEnv trees: ``simpler_env/evaluation/maniskill2_evaluator.py`` writes
  ``<ckpt>/<scene>/<control_mode>/<env>_<k>_<v>/rob_<x>_<y>_rot_<r>_<p>_<y>_rgb_overlay_<o>/
  {success,failure}_obj_<x>_<y>_<stat>_<value>.mp4``; ``simpler_env/utils/metrics.py``
  walks them.
- paired CSVs: ``awd1779/pi0`` ``logs/clutter_eval/pi0/carrot/control/n10_e20_r10_.../
  results.csv`` (``run,seed,episode,episode_id,baseline_success,cgvd_success,...``).
- ManiSkill: ``mani_skill/utils/wrappers/record.py`` (``RecordEpisode.flush_trajectory``)
  dumps ``{"env_info", "commit_info", "episodes": [{"episode_id", "episode_seed",
  "control_mode", "elapsed_steps", "reset_kwargs", "success", "fail"}]}``;
  ``flush_video`` writes ``<output_dir>/<video id>.mp4`` (``images_to_video``).
- videos: openpi's LIBERO client writes ``<video_out_path>/rollout_<task>_<outcome>.mp4``
  after each episode (overwriting); the fixtures' tiny MP4s are written with PyAV.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_importers import snapshot  # noqa: E402  (tests/store is on the path)

import evalband
from evalband.episode import Outcome
from evalband.errors import ImportFormatError
from evalband.store import RunStore, import_results, import_runs
from evalband.store._import_sources import detect_format
from evalband.store._media import media_file

# -- lerobot -----------------------------------------------------------------------------------


def lerobot_04(folder: Path, successes: dict[int, list[bool]], videos: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tasks = []
    for tid, ok in successes.items():
        paths = []
        for i in range(min(videos, len(ok))):
            video = folder / "videos" / f"libero_10_{tid}" / f"eval_episode_{i}.mp4"
            tiny_mp4(video, 10 + 40 * tid + 20 * i + len(folder.name))
            paths.append(str(video))
        tasks.append({"task_group": "libero_10", "task_id": tid,
                      "metrics": {"sum_rewards": [float(x) for x in ok],
                                  "max_rewards": [float(x) for x in ok],
                                  "successes": ok, "video_paths": paths}})
    n = sum(len(ok) for ok in successes.values())
    pc = 100.0 * sum(sum(ok) for ok in successes.values()) / n
    path = folder / "eval_info.json"
    path.write_text(json.dumps({"per_task": tasks, "per_group": {},
                                "overall": {"pc_success": pc, "n_episodes": n}}))
    return path


def test_lerobot_04_keeps_videos_and_metrics(store: RunStore, tmp_path: Path) -> None:
    path = lerobot_04(tmp_path / "pi0", {0: [True, False, True], 1: [False, False, True]})
    assert detect_format(path) == "lerobot"
    run = import_results(store, path)
    records = {r.key: r for r in store.episode_records(run)}
    first = records[("task_group=libero_10,task=0", 0, 0)]
    assert first.metrics == {"sum_reward": 1.0, "max_reward": 1.0}
    (ref,) = first.media
    assert ref["content_type"] == "video/mp4" and ref["path"].endswith("eval_episode_0.mp4")
    stored = media_file(store.path, ref)
    assert stored is not None and abs(shade_of(stored) - (10 + len("pi0"))) <= 2
    # only the first two episodes of a task were rendered
    assert records[("task_group=libero_10,task=0", 2, 0)].media == []


def test_lerobot_per_episode_seeds_are_conditions(store: RunStore, tmp_path: Path) -> None:
    def write(name: str, outcomes: list[tuple[int, bool]]) -> Path:
        doc = {"per_episode": [{"episode_ix": i, "sum_reward": float(ok), "max_reward": 1.0,
                                "success": ok, "seed": seed}
                               for i, (seed, ok) in enumerate(outcomes)],
               "aggregated": {"pc_success": 100.0 * sum(ok for _, ok in outcomes)
                              / len(outcomes)},
               "video_paths": []}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        return path

    # seed 7 is played twice: the second is a repeat of the same condition
    base = import_results(store, write("base", [(7, True), (3, True), (7, False), (9, True)]))
    cand = import_results(store, write("cand", [(3, False), (7, True), (9, False), (7, True)]))
    keys = {(r.condition_seed, r.episode, r.repeat) for r in store.episode_records(base)}
    assert keys == {(3, 0, 0), (7, 1, 0), (7, 1, 1), (9, 2, 0)}
    cmp = evalband.compare(base, cand, store=store)
    overall = next(row for row in cmp.slice_rows if row.kind == "all")
    assert overall.pairing == "paired" and sum(overall.pairs.values()) == 4


# -- LIBERO (openpi client log) --------------------------------------------------------------


def tiny_mp4(path: Path, shade: int, frames: int = 3) -> None:
    """A few flat grey 16x16 frames, written with PyAV the way imageio's ffmpeg writer would."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream: Any = container.add_stream("libx264", rate=10)
        stream.width = stream.height = 16
        stream.pix_fmt = "yuv420p"
        for _ in range(frames):
            image = np.full((16, 16, 3), shade, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def shade_of(path: Path) -> int:
    import av

    with av.open(str(path)) as container:
        frame = next(container.decode(video=0)).to_ndarray(format="rgb24")
    return int(round(float(frame.mean())))


def libero_log(path: Path, results: dict[str, list[bool]], crash: tuple[str, int] | None = None,
               cut: bool = False, videos: Path | None = None, log_saving: bool = False) -> Path:
    """Write the log through ``logging`` exactly as openpi's examples/libero/main.py does.

    With ``videos``, each episode's video is written there as the client does
    (``rollout_<task>_<success|failure>.mp4``, overwriting), a flat frame of shade
    ``10 * (its position in the log + 1)``; ``log_saving`` logs ``Saving video to ...`` first
    (newer clients)."""
    logger = logging.getLogger(f"libero-{path.name}")
    logger.propagate = False
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))  # basicConfig's format
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("Task suite: libero_spatial")
        total = successes = 0
        for task, outcomes in results.items():
            task_successes = 0
            for n, done in enumerate(outcomes):
                logger.info(f"\nTask: {task}")
                logger.info(f"Starting episode {n + 1}...")
                if crash == (task, n):  # the client breaks out of the loop with done False
                    logger.error("Caught exception: connection closed")
                    done = False
                if cut and task == list(results)[-1] and n == len(outcomes) - 1:
                    return path
                total += 1
                if videos is not None:
                    out = videos / f"rollout_{task.replace(' ', '_')}_" \
                                   f"{'success' if done else 'failure'}.mp4"
                    if log_saving:
                        logger.info(f"Saving video to {out} (3 frames @ 50fps = 0.1s real time)")
                    tiny_mp4(out, 10 * total)
                successes += done
                task_successes += done
                logger.info(f"Success: {done}")
                logger.info(f"# episodes completed so far: {total}")
                logger.info(f"# successes: {successes} ({successes / total * 100:.1f}%)")
            logger.info(f"Current task success rate: {task_successes / len(outcomes)}")
        logger.info(f"Total success rate: {successes / total}")
    finally:
        logger.removeHandler(handler)
        handler.close()
    return path


def test_libero_logs_pair_by_task_and_initial_state(store: RunStore, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    tasks = ["pick up the black bowl and place it on the plate", "open the top drawer"]
    base = libero_log(tmp_path / "ckpt-10k.log",
                      {t: [bool(x) for x in rng.random(6) < 0.8] for t in tasks})
    cand = libero_log(tmp_path / "ckpt-20k.log",
                      {t: [bool(x) for x in rng.random(6) < 0.5] for t in tasks},
                      crash=(tasks[1], 2))
    assert detect_format(base) == "libero"
    a, b = import_results(store, base), import_results(store, cand)
    records = store.episode_records(b)
    assert {r.slices["task"] for r in records} == set(tasks)
    crashed = next(r for r in records if r.key == (f"task={tasks[1]}", 2, 0))
    assert crashed.outcome is Outcome.ERROR and crashed.error == "connection closed"
    assert all(r.outcome is not Outcome.FAILURE for r in records)  # budget ran out: timeout
    assert {r.condition_seed for r in records} == set(range(6))  # init state = episode - 1
    assert store.require_run(a).extra["suite"] == "libero_spatial"
    cmp = evalband.compare(a, b, store=store)
    assert {row.name for row in cmp.slice_rows if row.kind == "factor"} == {
        f"task={t}" for t in tasks}


@pytest.mark.parametrize("log_saving", [False, True])
def test_libero_videos_belong_to_the_last_episode_of_each_task_and_outcome(
    store: RunStore, tmp_path: Path, log_saving: bool
) -> None:
    outcomes = {"open the top drawer": [True, False, True, False, False],
                "put the bowl on the plate": [False, True]}
    videos = tmp_path / "data" / "libero" / "videos"  # the client's default video_out_path
    log = libero_log(tmp_path / "eval.log", outcomes, videos=videos, log_saving=log_saving)
    run = import_results(store, log)
    records = {r.key: r for r in store.episode_records(run)}
    filmed = {k for k, r in records.items() if r.media}
    # the file of a (task, outcome) holds its last episode: earlier ones were overwritten
    drawer, bowl = "task=open the top drawer", "task=put the bowl on the plate"
    assert filmed == {(drawer, 2, 0), (drawer, 4, 0), (bowl, 0, 0), (bowl, 1, 0)}
    position = {(drawer, i, 0): i + 1 for i in range(5)} | {(bowl, i, 0): 6 + i for i in range(2)}
    for key in filmed:
        stored = media_file(store.path, records[key].media[0])
        assert stored is not None and abs(shade_of(stored) - 10 * position[key]) <= 2
    assert "last episode" in store.require_run(run).extra["videos"]


def test_an_interrupted_libero_log_is_refused_whole(store: RunStore, tmp_path: Path) -> None:
    path = libero_log(tmp_path / "cut.log", {"open the drawer": [True, False, True]}, cut=True)
    before = snapshot(store)
    with pytest.raises(ImportFormatError, match=r"line \d+: expected a 'Success"):
        import_results(store, path)
    assert snapshot(store) == before


# -- SimplerEnv result trees ---------------------------------------------------------------------

ROBOT = "rob_0.35_0.2_rot_0.000_0.000_3.142_rgb_overlay_None"


def simpler_tree(root: Path, rates: dict[str, float], seed: int) -> Path:
    """A checkpoint's tree: env variants differing in distractors, a grid of object positions."""
    rng = np.random.default_rng(seed)
    env_root = root / "rt1_ckpt" / "google_pick_coke_can_1_v4" / "arm_pd_ee_delta_pose"
    for distractors, rate in rates.items():
        env = "GraspSingleOpenedCokeCanDistractorInScene-v0_lr_switch_True"
        env += "" if distractors == "none" else f"_distractor_config_{distractors}"
        folder = env_root / env / ROBOT
        folder.mkdir(parents=True)
        for x in (-0.35, -0.25, -0.15):
            for y in (-0.02, 0.12, 0.25, 0.42):
                ok = rng.random() < rate
                name = (f"{'success' if ok else 'failure'}_obj_{x}_{y}"
                        f"_is_grasped_{ok}_consecutive_grasp_{ok}_lifted_object_0.{int(ok)}.mp4")
                (folder / name).write_bytes(_clip_bytes(root.parent))
    return root / "rt1_ckpt"


def _clip_bytes(tmp: Path) -> bytes:
    """One real (tiny) MP4's bytes, encoded once per test folder."""
    clip = tmp / "one-clip.mp4"
    if not clip.exists():
        tiny_mp4(clip, 90)
    return clip.read_bytes()


def test_simpler_trees_slice_by_path_and_pair_by_object(store: RunStore, tmp_path: Path) -> None:
    levels = {"none": 0.9, "less": 0.8, "more": 0.7}
    a = simpler_tree(tmp_path / "a", levels, seed=0)
    b = simpler_tree(tmp_path / "b", {k: v - 0.4 for k, v in levels.items()}, seed=1)
    assert detect_format(a) == "simpler"
    base = import_results(store, a, run_id="ckpt-a")
    cand = import_results(store, b, run_id="ckpt-b")
    records = store.episode_records(base)
    assert len(records) == 36
    assert {r.slices["env_options"] for r in records} == {
        "lr_switch_True", "lr_switch_True_distractor_config_less",
        "lr_switch_True_distractor_config_more"}
    assert set(records[0].slices) == {"env_options"}  # constant components are no slices
    assert "scene=google_pick_coke_can_1_v4" in store.require_run(base).extra["import_notes"][0]
    r = records[0]
    assert set(r.metrics) == {"is_grasped", "consecutive_grasp", "lifted_object"}
    assert r.metrics["is_grasped"] == float(r.success)
    assert r.media and media_file(store.path, r.media[0]) is not None
    cmp = evalband.compare(base, cand, store=store)
    per_level = [row for row in cmp.slice_rows if row.kind == "factor"]
    assert len(per_level) == 3 and all(row.pairing == "paired" for row in per_level)
    assert all(sum(row.pairs.values()) == 12 for row in per_level)


# -- paired CSVs (SimplerEnv clutter evaluations) ----------------------------------------------

PAIRED_HEADER = ["run", "seed", "episode", "episode_id", "baseline_success", "cgvd_success",
                 "baseline_hard_success", "cgvd_hard_success", "baseline_time", "cgvd_time",
                 "baseline_collisions", "cgvd_collisions", "baseline_failure_mode",
                 "cgvd_failure_mode", "cgvd_pipeline_time"]


def paired_sweep(root: Path, drop: dict[int, float]) -> Path:
    rng = np.random.default_rng(11)
    for n, loss in drop.items():
        folder = root / f"n{n}_e20_r4_20260217_095346"
        folder.mkdir(parents=True)
        with (folder / "results.csv").open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(PAIRED_HEADER)
            for run in range(4):
                for ep in range(20):
                    base = rng.random() < 0.6
                    cand = base and rng.random() >= loss
                    modes = ["success" if ok else str(rng.choice(["missed_grasp", "dropped"]))
                             for ok in (base, cand)]
                    out.writerow([run, run, ep, (run + ep) % 24, int(base), int(cand),
                                  int(base), int(cand), 8.7, 26.3, int(rng.integers(0, 3)), 0,
                                  *modes, 17.5])
    return root


def test_paired_csv_sweep_gives_one_run_per_arm_and_per_level_verdicts(
    store: RunStore, tmp_path: Path
) -> None:
    root = paired_sweep(tmp_path / "carrot" / "control", {0: 0.0, 10: 0.5, 18: 0.1})
    assert detect_format(root) == "paired-csv"
    base, cand = import_runs(store, root)
    assert (base, cand) == ("control-baseline", "control-cgvd")
    b = store.episode_records(base)
    assert len(b) == 240 and {r.slices["distractors"] for r in b} == {"0", "10", "18"}
    failed = [r for r in b if not r.success]
    assert failed and all(r.extra["reason"] in ("missed_grasp", "dropped") for r in failed)
    assert set(b[0].metrics) == {"hard_success", "time", "collisions"}
    cmp = evalband.compare(base, cand, store=store)
    rows = {row.name: row for row in cmp.slice_rows if row.kind == "factor"}
    assert set(rows) == {"distractors=0", "distractors=10", "distractors=18"}
    assert all(row.pairing == "paired" and sum(row.pairs.values()) == 80 for row in rows.values())
    assert rows["distractors=10"].verdict == "regressed"
    assert rows["distractors=0"].verdict != "regressed"


# -- ManiSkill RecordEpisode --------------------------------------------------------------------


def maniskill_json(path: Path, outcomes: list[tuple[int, str]]) -> Path:
    episodes: list[dict[str, Any]] = []
    for i, (seed, how) in enumerate(outcomes):
        steps = 50 if how == "timeout" else 23 + i
        episodes.append({"episode_id": i, "episode_seed": seed, "control_mode": "pd_ee_delta_pos",
                         "elapsed_steps": steps, "reset_kwargs": {"options": {}, "seed": seed},
                         "success": how == "success", "fail": how == "fail"})
    path.write_text(json.dumps({
        "env_info": {"env_id": "PickCube-v1", "env_kwargs": {"obs_mode": "state"},
                     "max_episode_steps": 50},
        "commit_info": {}, "episodes": episodes}, indent=2))
    return path


def test_maniskill_videos_are_the_episodes_media(store: RunStore, tmp_path: Path) -> None:
    # RecordEpisode(save_video=True) flushes episode i's video as <output_dir>/<i>.mp4
    path = maniskill_json(tmp_path / "20250101_120000.json",
                          [(5, "success"), (1, "timeout"), (9, "fail")])
    for episode_id in range(3):
        tiny_mp4(tmp_path / f"{episode_id}.mp4", 40 + 60 * episode_id)
    run = import_results(store, path)
    for r in store.episode_records(run):
        (ref,) = r.media
        stored = media_file(store.path, ref)
        assert ref["path"] == f"{r.extra['episode_id']}.mp4" and stored is not None
        assert abs(shade_of(stored) - (40 + 60 * r.extra["episode_id"])) <= 2
    # several GPU-parallel envs: tiled videos show no single episode, so none is attached
    parallel = json.loads(path.read_text())
    parallel["env_info"]["env_kwargs"]["num_envs"] = 16
    (tmp_path / "gpu.json").write_text(json.dumps(parallel))
    tiled = import_results(store, tmp_path / "gpu.json")
    assert all(not r.media for r in store.episode_records(tiled))


def test_maniskill_trajectories_pair_by_episode_seed(store: RunStore, tmp_path: Path) -> None:
    a = maniskill_json(tmp_path / "a.json", [(5, "success"), (1, "timeout"), (9, "fail")])
    b = maniskill_json(tmp_path / "b.json", [(9, "success"), (5, "fail"), (1, "success")])
    assert detect_format(a) == "maniskill"
    base, cand = import_results(store, a), import_results(store, b)
    got = {r.condition_seed: (r.episode, r.outcome, r.steps, r.truncated)
           for r in store.episode_records(base)}
    assert got == {1: (0, Outcome.TIMEOUT, 50, True), 5: (1, Outcome.SUCCESS, 23, False),
                   9: (2, Outcome.FAILURE, 25, False)}
    assert store.require_run(base).extra["env_id"] == "PickCube-v1"
    overall = next(r for r in evalband.compare(base, cand, store=store).slice_rows
                   if r.kind == "all")
    assert overall.pairing == "paired" and sum(overall.pairs.values()) == 3


# -- plain tables ---------------------------------------------------------------------------------


def test_plain_csv_extra_columns(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "lab.csv"
    path.write_text("episode,embodiment,success,collisions,failure_mode,notes\n"
                    "0,so101,1,0,,a\n1,so101,0,2,slipped,b\n0,koch,0,1,missed,c\n")
    run = import_results(store, path)
    records = {r.key: r for r in store.episode_records(run)}
    slipped = records[("embodiment=so101,notes=b", 1, 0)]
    assert slipped.slices == {"embodiment": "so101", "notes": "b"}
    assert slipped.metrics == {"collisions": 2.0} and slipped.extra["reason"] == "slipped"
    notes = store.require_run(run).extra["import_notes"]
    assert notes == ["columns embodiment, notes read as a slice factor (categorical); column "
                     "collisions as a per-episode metric; column failure_mode as the outcome "
                     "reason"]
    # explicit: a numeric column as a factor, a text column kept as a metric is refused
    run2 = import_results(store, path, run_id="lab2", factors=["collisions"], metrics=[])
    assert {r.slices["collisions"] for r in store.episode_records(run2)} == {"0", "1", "2"}
    before = snapshot(store)
    with pytest.raises(ImportFormatError, match="line 2, column 'notes': expected a number"):
        import_results(store, path, run_id="lab3", metrics=["notes"])
    assert snapshot(store) == before


# -- malformed sources: refused whole, with where and what ---------------------------------------


@pytest.mark.parametrize(("name", "text", "message"), [
    ("paired.csv", "run,a_success,b_success,a_time\n0,1,0,8.5\n1,0,1,slow\n",
     r"line 3, column 'a_time': expected a number; got 'slow'"),
    ("traj.json", json.dumps({"env_info": {"max_episode_steps": 5},
                              "episodes": [{"episode_seed": 1, "elapsed_steps": 5}]}),
     r"episodes\[0\], column 'success': expected true/false"),
    ("robots.csv", "episode,sucess\n0,1\n", r"line 1 \(header\), column 'sucess': expected a "
     r"known column \(did you mean 'success'\?"),
])
def test_malformed_sources_are_refused_whole(
    store: RunStore, tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    before = snapshot(store)
    with pytest.raises(ImportFormatError, match=message):
        import_runs(store, path)
    assert snapshot(store) == before


def test_a_directory_of_nothing_known_is_refused(store: RunStore, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ImportFormatError, match="SimplerEnv result tree"):
        import_results(store, tmp_path)
