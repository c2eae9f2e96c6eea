"""Validation action error of lerobot checkpoints on held-out demonstrations (seed 004).

The ABC report's metric (Allshire et al. 2026): run the full inference chain on held-out
demonstration observations and measure the error of the generated actions. Deploy-matched,
as seed 004 did it:

* each checkpoint is loaded as ``--policy lerobot:PATH`` loads it
  (:class:`evalband.policies.lerobot.LerobotPolicy`: lerobot's ``from_pretrained`` and the
  checkpoint's **own** pre- and post-processors);
* each held-out episode of a local ``LeRobotDataset`` is replayed frame by frame through
  ``select_action`` after ``reset()``, exactly as a rollout feeds observations: the
  observation history (diffusion's ``n_obs_steps``) and the action queue (``n_action_steps``,
  ACT's chunks) behave as deployed, and the action executed at frame ``t`` is compared with
  the demonstration's action at ``t``, in the dataset's units (after the postprocessor);
* diffusion: the number of denoising steps is held at ``denoising_steps`` for every
  checkpoint (fewer steps trivially change the error: the paper's caveat), and torch is
  seeded before every frame from ``(seed, episode, frame)``, so every checkpoint of one
  architecture draws the very same noise (and a run gives the same numbers twice).

The split's make-up by a declared column is reported beside the errors (seed 004's
validation split had silently inherited 25% kinesthetic episodes). lerobot runs in its own
virtualenv; this module imports it only inside :func:`offline_action_error`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.analysis._offline_results import Composition, OfflineReport

__all__ = ["parse_episodes", "frame_seed", "offline_action_error"]


def parse_episodes(split: str, available: Sequence[int]) -> list[int]:
    """Episode indices from ``"40:50"``, ``"3,5,9"``, ``"0:3,7"`` or ``"all"``.

    Raises:
        InvalidInputError: a malformed split, or an episode the dataset does not have.

    >>> parse_episodes("2:4,7", range(10)), parse_episodes("all", range(3))
    ([2, 3, 7], [0, 1, 2])
    """
    have = sorted(int(e) for e in available)
    if split.strip() == "all":
        return have
    out: list[int] = []
    for part in split.split(","):
        part = part.strip()
        try:
            if ":" in part:
                lo, _, hi = part.partition(":")
                out.extend(range(int(lo), int(hi)))
            else:
                out.append(int(part))
        except ValueError:
            raise InvalidInputError(f"`episodes` takes ranges and indices such as 40:50 or "
                                    f"3,5,9 (or all); got {split!r}",
                                    parameters=("episodes",)) from None
    missing = sorted(set(out) - set(have))
    if missing or not out:
        raise InvalidInputError(f"the dataset has episodes {have[0]} to {have[-1]}; the split "
                                f"{split!r} names {missing or 'none'}", parameters=("episodes",))
    return sorted(dict.fromkeys(out))


def frame_seed(seed: int, episode: int, frame: int) -> int:
    """The torch seed of one frame: the same for every checkpoint (shared noise draws).

    >>> frame_seed(0, 3, 7) == frame_seed(0, 3, 7) != frame_seed(0, 3, 8)
    True
    """
    return int(np.random.SeedSequence([int(seed), int(episode), int(frame)]).generate_state(1)[0])


def _composition(ds: Any, episodes: Sequence[int], frames_of: dict[int, int],
                 column: str) -> Composition | None:
    from evalband.analysis._offline_results import Composition

    meta_eps = ds.meta.episodes
    names = list(getattr(meta_eps, "column_names", []) or [])
    in_meta = "tasks" if column == "task" and "tasks" in names else column
    value_of: dict[int, str] = {}
    if in_meta in names:
        for row in meta_eps:
            value = row[in_meta]
            if isinstance(value, list):
                value = ",".join(str(v) for v in value)
            value_of[int(row["episode_index"])] = str(value)
    elif column in ds.hf_dataset.column_names:
        for row in meta_eps:
            start = int(row["dataset_from_index"])
            value_of[int(row["episode_index"])] = str(ds.hf_dataset[start][column])
    else:
        return None
    split_eps = Counter(value_of.get(e, "?") for e in episodes)
    split_frames: Counter[str] = Counter()
    for e in episodes:
        split_frames[value_of.get(e, "?")] += frames_of[e]
    whole = Counter(value_of.values())
    total = sum(split_eps.values())
    parts = ", ".join(f"{100 * n / total:.0f}% {v}" for v, n in split_eps.most_common())
    return Composition(column, dict(split_eps), dict(split_frames), dict(whole),
                       f"the {total} held-out episodes are {parts} (by {column})")


def _replay(
    runner: Any, items: Sequence[Any], chosen: Sequence[int], frames_of: dict[int, int],
    inputs: Sequence[str], seed: int, tick: Callable[[], None],
) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """Replay one checkpoint on every held-out frame, in episode order.

    Returns:
        Each frame's squared and absolute action errors (per action dimension) and its
        episode index.
    """
    import torch

    policy, pre, post = runner.policy, runner.preprocessor, runner.postprocessor
    sq: list[np.ndarray] = []
    ab: list[np.ndarray] = []
    labels: list[int] = []
    k = 0
    for e in chosen:
        policy.reset()
        pre.reset()
        post.reset()
        for frame in range(frames_of[e]):
            item = items[k]
            k += 1
            batch = {key: item[key].unsqueeze(0) for key in inputs}
            batch["task"] = [str(item.get("task", ""))]
            torch.manual_seed(frame_seed(seed, e, frame))
            with torch.inference_mode():
                action = policy.select_action(pre(batch))
            action = post(action)
            got = np.asarray(action.to("cpu").numpy()[0], dtype=np.float64)
            want = np.asarray(item["action"].numpy(), dtype=np.float64)
            diff = got - want
            sq.append(diff * diff)
            ab.append(np.abs(diff))
            labels.append(e)
            tick()
    return sq, ab, labels


def offline_action_error(
    checkpoints: Sequence[str],
    dataset: str | Path,
    episodes: str | Sequence[int],
    *,
    by: str = "task",
    denoising_steps: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    repo_id: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> OfflineReport:
    """Validation action error of lerobot checkpoints on held-out episodes (module docstring).

    Args:
        checkpoints: ``lerobot:PATH`` names (or bare ``pretrained_model`` directories).
        dataset: the local ``LeRobotDataset`` directory.
        episodes: the held-out split (:func:`parse_episodes`) or the indices.
        by: the metadata column the split's make-up is counted by.
        denoising_steps: diffusion's denoising steps, the same for every checkpoint
            (``None``: each checkpoint's own configured steps, noted when they differ).
        seed: the seed of the shared noise draws.
        device: the torch device.
        repo_id: the dataset's repo id (default ``local/<folder name>``; never downloaded).
        progress: called with (frames done, frames in all).

    Returns:
        An :class:`~evalband.analysis.OfflineReport`.

    Raises:
        InvalidInputError: no such dataset, a bad split, a checkpoint missing, an
            observation feature the dataset lacks.
    """
    import importlib.util

    root = Path(dataset)
    if not (root / "meta" / "info.json").is_file():
        raise InvalidInputError(f"{root} is not a LeRobotDataset (no meta/info.json); give the "
                                "dataset's local directory", parameters=("dataset",))
    if importlib.util.find_spec("lerobot") is None:
        raise InvalidInputError("evalband offline replays lerobot checkpoints, but lerobot is not "
                                "installed in this Python; run it from lerobot's virtualenv "
                                "(docs/extending.md, lerobot checkpoints)")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from evalband.analysis._offline_results import OfflineCheckpoint, OfflineReport
    from evalband.policies.lerobot import LerobotPolicy, lerobot_policy
    from evalband.stats import cluster_bootstrap_interval

    rid = repo_id or f"local/{root.name}"
    full = LeRobotDataset(rid, root=root)
    available = [int(e) for e in full.meta.episodes["episode_index"]]
    chosen = (parse_episodes(episodes, available) if isinstance(episodes, str)
              else parse_episodes(",".join(str(int(e)) for e in episodes), available))
    ds = LeRobotDataset(rid, root=root, episodes=chosen)
    by_episode: dict[int, list[int]] = {}
    for i in range(len(ds)):
        by_episode.setdefault(int(ds.hf_dataset[i]["episode_index"]), []).append(i)
    frames_of = {e: len(v) for e, v in by_episode.items()}
    total = sum(frames_of.values())
    composition = _composition(full, chosen, frames_of, by)
    notes: list[str] = []
    if composition is None:
        notes.append(f"the dataset has no column {by!r}: no composition summary")
    items = [ds[i] for e in chosen for i in by_episode[e]]
    results = []
    steps_used = set()
    done = 0
    for name in checkpoints:
        label = name if name.startswith("lerobot:") else f"lerobot:{name}"
        lerobot_policy(label)  # a missing checkpoint fails here, in one line
        runner = LerobotPolicy(label[len("lerobot:"):], device=device, name=label)
        runner.setup()
        policy = runner.policy
        inputs = list(policy.config.input_features)
        missing = [k for k in inputs if k not in items[0]]
        if missing:
            raise InvalidInputError(f"checkpoint {label} reads {', '.join(missing)}, which the "
                                    f"dataset {root} does not have")
        steps = None
        if getattr(policy.config, "type", "") == "diffusion":
            model = policy.diffusion
            if denoising_steps is not None:
                model.num_inference_steps = int(denoising_steps)
                policy.config.num_inference_steps = int(denoising_steps)
            steps = int(model.num_inference_steps)
            steps_used.add(steps)
        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, total * len(checkpoints))

        sq, ab, labels = _replay(runner, items, chosen, frames_of, inputs, seed, tick)
        mse_rows = np.array([x.mean() for x in sq])
        mae_rows = np.array([x.mean() for x in ab])
        per_ep = {e: float(mse_rows[np.asarray(labels) == e].mean()) for e in chosen}
        runner.close()
        results.append(OfflineCheckpoint(
            label, str(policy.config.type), steps, getattr(policy.config, "n_action_steps", None),
            len(labels), _band(mse_rows, labels, cluster_bootstrap_interval, seed),
            _band(mae_rows, labels, cluster_bootstrap_interval, seed), per_ep))
    if len(steps_used) > 1:
        notes.append(f"the diffusion checkpoints denoise in {sorted(steps_used)} steps: fewer "
                     "steps change the error by themselves; hold them fixed with "
                     "--denoising-steps")
    return OfflineReport(str(root), tuple(chosen), total, int(seed), composition, tuple(results),
                         tuple(notes))


def _band(values: np.ndarray, labels: Sequence[int], boot: Any, seed: int) -> Any:
    from evalband.stats import Interval

    if len(set(labels)) < 2 or values.size < 2:
        v = float(values.mean()) if values.size else math.nan
        return Interval(v, v, v, "single episode", 0.95, None, int(values.size))
    return boot(values, list(labels), reps=2000, confidence=0.95, seed=seed)
