"""Readers for the evaluation outputs of the field's tools, and telling formats apart by content.

Each reader turns one source layout into the raw rows of :mod:`evalband.store._import_read`
(one per attempted episode, with the place in the file it came from):

- ``libero``: the log written by openpi's LIBERO client (``examples/libero/main.py`` in
  Physical-Intelligence/openpi): ``Task: <description>``, ``Starting episode N...`` and
  ``Success: True|False`` lines, through Python ``logging``. Task -> slice ``task``; episode
  ``N`` (1-based within the task) played LIBERO's fixed initial state ``N - 1``, which is the
  condition: two checkpoints' logs pair by (task, initial state). The client stops an
  episode at the step budget when it has not succeeded, so a ``Success: False`` is a
  ``timeout``; a ``Caught exception: ...`` line makes the episode an ``error``.
- ``simpler``: a SimplerEnv result tree, as written by
  ``simpler_env/evaluation/maniskill2_evaluator.py`` and walked by
  ``simpler_env/utils/metrics.py::get_dir_stats`` (simpler-env/SimplerEnv):
  ``[<ckpt>/]<scene>/<control_mode>/<env>[_<k>_<v>...]/rob_<x>_<y>_rot_<r>_<p>_<y>_rgb_overlay_<overlay>/
  {success,failure}_obj_<x>_<y>[_<stat>_<value>...].mp4`` (or ``..._obj_episode_<id>...``).
  Path components -> slices ``scene``, ``control_mode``, ``env``, ``env_options``,
  ``robot``, ``orientation``, ``overlay`` (those with one value in the whole tree are
  dropped and named in a note); the object position is the condition (episodes numbered by
  position, so two checkpoints' trees pair); the episode stats become metrics; the video is
  the episode's media.
- ``paired-csv``: a per-episode CSV holding several policies side by side, columns
  ``<arm>_success``, ``<arm>_failure_mode``, ``<arm>_<metric>`` (the layout of paired
  SimplerEnv clutter evaluations, e.g. ``awd1779/pi0`` ``logs/clutter_eval/.../results.csv``:
  ``run,seed,episode,episode_id,baseline_success,cgvd_success,...``). One run per arm; rows
  pair across arms by construction. Given a directory, every such CSV under it is read and
  the directory names become slices (``n<N>_e<E>_r<R>_...`` -> ``distractors = N``).
- ``maniskill``: the ``.json`` that ManiSkill's ``RecordEpisode`` wrapper writes beside its
  ``.h5`` (``mani_skill/utils/wrappers/record.py`` in haosulab/ManiSkill):
  ``{"env_info": {"env_id", "max_episode_steps", ...}, "episodes": [{"episode_id",
  "episode_seed", "control_mode", "elapsed_steps", "success", "fail", ...}]}``. The episode
  seed is the condition seed (a repeated seed is a repeat); ``elapsed_steps`` the steps; not
  successful and at the step budget is a ``timeout``, ``fail`` or an earlier end a
  ``failure``. The wrapper's ``<episode_id>.mp4`` videos beside the ``.json`` are the
  episodes' media.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalband.store._import_read import (
    _NOTHING,
    SLICE_PREFIX,
    _as_bool,
    _as_count,
    _Bad,
    _fail,
    _Raw,
    _read_text,
    _Table,
    _Text,
)
from evalband.store._import_videos import (
    LIBERO_SAVED,
    attach_libero_videos,
    attach_maniskill_videos,
)

__all__ = ["detect_format", "SOURCE_READERS", "PAIRED_SUFFIX"]

PAIRED_SUFFIX = "_success"
"""The column suffix that marks an arm of a paired CSV (``baseline_success``)."""


# --------------------------------------------------------------------------- LIBERO (openpi)

_LIBERO_TASK = re.compile(r"(?:^|[\s:\]])Task: (.+?)\s*$")
_LIBERO_SUITE = re.compile(r"Task suite: (\S+)")
_LIBERO_START = re.compile(r"Starting episode (\d+)\.\.\.")
_LIBERO_SUCCESS = re.compile(r"Success: (True|False)\s*$")
_LIBERO_ERROR = re.compile(r"Caught exception: (.*?)\s*$")


def _read_libero(path: Path) -> list[_Table]:
    rows: list[_Raw] = []
    logged: list[str | None] = []  # per row: the video path a "Saving video to" line gave
    saved: str | None = None
    suites: list[str] = []
    task: str | None = None
    open_: tuple[int, int, str | None] | None = None  # (line, episode number, error)
    for number, line in enumerate(_read_text(path).splitlines(), 1):
        if m := LIBERO_SAVED.search(line):
            saved = m.group(1) if open_ is not None else saved
        elif m := _LIBERO_SUITE.search(line):
            if m.group(1) not in suites:
                suites.append(m.group(1))
        elif m := _LIBERO_TASK.search(line):
            task = m.group(1)
        elif m := _LIBERO_START.search(line):
            if open_ is not None:
                raise _fail(path, f"line {number}", None, "a 'Success: True|False' line for "
                            f"episode {open_[1]} (started on line {open_[0]}) first",
                            _Text("another 'Starting episode'"))
            if task is None:
                raise _fail(path, f"line {number}", None, "a 'Task: ...' line before the "
                            "first episode", _Text("'Starting episode' with no task"))
            open_ = (number, int(m.group(1)), None)
            saved = None
        elif m := _LIBERO_ERROR.search(line):
            if open_ is not None:
                open_ = (open_[0], open_[1], m.group(1))
        elif m := _LIBERO_SUCCESS.search(line):
            if open_ is None or task is None:
                raise _fail(path, f"line {number}", None, "a 'Starting episode N...' line "
                            "before its result", _Text("'Success:' with no episode"))
            start, episode_number, error = open_
            if episode_number < 1:
                raise _fail(path, f"line {start}", "episode", "an episode number >= 1",
                            episode_number)
            success = m.group(1) == "True"
            outcome = "success" if success else ("error" if error else "timeout")
            values: dict[str, Any] = {
                "outcome": outcome,
                "episode": episode_number - 1,
                "condition_seed": episode_number - 1,
                "slice.task": task,
            }
            if error and outcome == "error":
                values["error"] = error
            extra: dict[str, Any] = {"init_state": episode_number - 1}
            if suites:
                extra["suite"] = suites[-1]
            rows.append(_Raw(f"line {start}", values, extra,
                             {"episode": "Starting episode", "slice.task": "Task"}))
            logged.append(saved)
            open_ = None
    if open_ is not None:
        raise _fail(path, f"line {open_[0]}", None, f"a 'Success: True|False' line ending "
                    f"episode {open_[1]}", _Text("the end of the file (an interrupted run? "
                                                 "cut the log before that episode)"))
    columns = ["outcome", "episode", "condition_seed", "slice.task", "error"]
    table = _Table(rows, columns, factor_order=["task"], external_seeds=True)
    if len(suites) > 1:
        raise _fail(path, "file", None, "one task suite per log (import each suite's log as "
                    "its own run)", _Text(", ".join(suites)))
    table.manifest_extra["pairing"] = "task and LIBERO initial state (episode N -> state N-1)"
    if suites:
        table.manifest_extra["suite"] = suites[0]
    if attach_libero_videos(path, rows, logged):
        table.manifest_extra["videos"] = (
            "rollout_<task>_<success|failure>.mp4: the last episode of each task and outcome "
            "(the client overwrites the earlier ones)")
    return [table]


# --------------------------------------------------------------------------- SimplerEnv tree

_SIMPLER_FILE = re.compile(r"^(success|failure)_obj_(.*)$")
_SIMPLER_ROBOT = re.compile(
    r"^rob_(?P<x>[^_]+)_(?P<y>[^_]+)_rot_(?P<r>[^_]+)_(?P<p>[^_]+)_(?P<yaw>[^_]+)"
    r"_rgb_overlay_(?P<overlay>.+)$"
)
_ENV_ID = re.compile(r"^(.+?-v\d+)(?:_(.*))?$")
_VALUE = re.compile(r"^(True|False|None|-?\d+(?:\.\d+)?(?:e-?\d+)?)$")


def _split_stats(text: str) -> tuple[str, dict[str, Any]]:
    """``-0.35_-0.02_moved_True`` -> condition ``-0.35,-0.02`` and stats ``{moved: True}``."""
    tokens = text.split("_")
    if tokens[:1] == ["episode"] and len(tokens) > 1:
        condition, rest = f"episode {tokens[1]}", tokens[2:]
    else:
        condition, rest = ",".join(tokens[:2]), tokens[2:]
    stats: dict[str, Any] = {}
    key: list[str] = []
    for token in rest:
        if _VALUE.match(token) and key:
            name = "_".join(key)
            stats[name] = token
            key = []
        else:
            key.append(token)
    return condition, stats


def _stat_number(value: str) -> float | None:
    if value in ("True", "False"):
        return float(value == "True")
    try:
        return float(value)
    except ValueError:
        return None


def _condition_key(condition: str) -> tuple[int, tuple[float, ...], str]:
    try:
        return (0, tuple(float(p) for p in condition.replace("episode ", "").split(",")), condition)
    except ValueError:
        return (1, (), condition)


def _read_simpler(path: Path) -> list[_Table]:
    if not path.is_dir():
        raise _fail(path, "file", None, "a SimplerEnv result directory", _Text("a file"))
    found: list[tuple[Path, dict[str, str], str, str, dict[str, Any]]] = []
    ckpts: set[str] = set()
    for video in sorted(path.rglob("*.mp4")):
        m = _SIMPLER_FILE.match(video.stem)
        if m is None:
            continue
        rel = video.relative_to(path).parts
        where = "/".join(rel)
        if len(rel) < 5:
            raise _fail(path, where, None, "<scene>/<control_mode>/<env>/rob_..._rgb_overlay_.../"
                        "<video> (SimplerEnv's layout)", _Text(f"{len(rel)} path components"))
        robot = _SIMPLER_ROBOT.match(rel[-2])
        env = _ENV_ID.match(rel[-3])
        if robot is None or env is None:
            raise _fail(path, where, None, "an env directory <Env>-v<N>[_<k>_<v>...] holding "
                        "rob_<x>_<y>_rot_<r>_<p>_<y>_rgb_overlay_<overlay>",
                        _Text(rel[-3] + "/" + rel[-2]))
        ckpts.add("/".join(rel[:-5]))
        slices = {
            "scene": rel[-5],
            "control_mode": rel[-4],
            "env": env.group(1),
            "env_options": env.group(2) or "none",
            "robot": f"{robot['x']},{robot['y']}",
            "orientation": f"{robot['r']},{robot['p']},{robot['yaw']}",
            "overlay": robot["overlay"],
        }
        condition, stats = _split_stats(m.group(2))
        found.append((video, slices, m.group(1), condition, stats))
    if not found:
        raise _fail(path, "directory", None, "SimplerEnv videos named {success,failure}_obj_...mp4",
                    _Text("none"))
    if len(ckpts) > 1:
        raise _fail(path, "directory", None, "one checkpoint's results (import each checkpoint "
                    "directory as its own run)", _Text(", ".join(sorted(ckpts))))
    factors = [f for f in found[0][1] if len({s[f] for _, s, *_ in found}) > 1]
    dropped = [f"{f}={found[0][1][f]}" for f in found[0][1] if f not in factors]
    conditions = sorted({c for *_, c, _ in found}, key=_condition_key)
    index = {c: i for i, c in enumerate(conditions)}
    rows: list[_Raw] = []
    for video, slices, result, condition, stats in found:
        values: dict[str, Any] = {"success": result == "success", "episode": index[condition]}
        values.update({SLICE_PREFIX + f: slices[f] for f in factors})
        metrics = {k: n for k, v in stats.items() if (n := _stat_number(v)) is not None}
        extra: dict[str, Any] = {"object": condition}
        if metrics:
            extra["metrics"] = metrics
        rows.append(_Raw(str(video.relative_to(path)), values, extra,
                         {"episode": "object position"}, media=[str(video)]))
    table = _Table(rows, ["success", "episode", *[SLICE_PREFIX + f for f in factors]],
                   factor_order=factors)
    table.manifest_extra["pairing"] = "object position (SimplerEnv obj_... in the video name)"
    if dropped:
        table.notes.append("the same in every episode, so not slices: " + ", ".join(dropped))
    return [table]


# --------------------------------------------------------------------------- paired CSV

_DISTRACTORS = re.compile(r"^n(\d+)_e\d+_r\d+(?:_.*)?$")
_PAIRED_KEYS = ("run", "seed", "episode", "episode_id")


def paired_arms(header: list[str]) -> list[str]:
    """The arms of a paired CSV header (two or more ``<arm>_success`` columns), else ``[]``.

    >>> paired_arms(["run", "baseline_success", "cgvd_success", "cgvd_time"])
    ['baseline', 'cgvd']
    """
    found = [c[: -len(PAIRED_SUFFIX)] for c in header
             if c.endswith(PAIRED_SUFFIX) and len(c) > len(PAIRED_SUFFIX)]
    # baseline_hard_success is a metric of the arm "baseline", not an arm of its own
    arms = [a for a in found if not any(a.startswith(b + "_") for b in found if b != a)]
    return arms if len(arms) >= 2 else []


def _csv_header(path: Path) -> list[str]:
    import csv
    import io

    first = _read_text(path).split("\n", 1)[0]
    return [c.strip() for c in next(csv.reader(io.StringIO(first)), [])]


def _read_paired(path: Path) -> list[_Table]:
    if path.is_dir():
        files = [f for f in sorted(path.rglob("*.csv")) if paired_arms(_csv_header(f))]
        if not files:
            raise _fail(path, "directory", None, "CSV files with <arm>_success columns for two "
                        "or more arms", _Text("none"))
    else:
        files = [path]
    parts = [f.relative_to(path).parent.parts if path.is_dir() else () for f in files]
    depth = max(len(p) for p in parts)
    varying = [d for d in range(depth)
               if len({p[d] if d < len(p) else "" for p in parts}) > 1]
    arms: list[str] | None = None
    per_arm: dict[str, list[_Raw]] = {}
    factor_names: list[str] = []
    for file, rel in zip(files, parts, strict=True):
        header = _csv_header(file)
        found = paired_arms(header)
        if arms is None:
            arms = found
            per_arm = {arm: [] for arm in arms}
        elif found != arms:
            raise _fail(file, "line 1 (header)", None, f"the arms {', '.join(arms)} as in "
                        f"{files[0].name}", _Text(", ".join(found) or "no arms"))
        slices: dict[str, str] = {}
        for d in varying:
            name = rel[d] if d < len(rel) else ""
            m = _DISTRACTORS.match(name)
            factor = "distractors" if m else f"dir{d + 1}"
            slices[factor] = m.group(1) if m else name
        if not factor_names:
            factor_names = list(slices)
        for raw in _read_csv_plain(file):
            for arm in arms:
                values: dict[str, Any] = {SLICE_PREFIX + k: v for k, v in slices.items()}
                extra: dict[str, Any] = {}
                metrics: dict[str, float] = {}
                for column, value in raw.values.items():
                    owner = next((a for a in arms if column.startswith(a + "_")), None)
                    if owner is None:
                        if column in _PAIRED_KEYS:
                            extra[column] = value
                        else:
                            values[column] = value
                        continue
                    if owner != arm:
                        continue
                    field_ = column[len(arm) + 1 :]
                    if field_ == "success":
                        values["success"] = value
                    elif field_ in ("failure_mode", "failure_reason", "reason"):
                        if value.strip() and value.strip() != "success":
                            extra["reason"] = value.strip()
                    else:
                        try:
                            metrics[field_] = float(value)
                        except ValueError:
                            if value.strip():
                                raise _fail(file, raw.where, column, "a number",
                                            value) from None
                if metrics:
                    extra["metrics"] = metrics
                per_arm[arm].append(_Raw(f"{file.name} {raw.where}" if path.is_dir() else raw.where,
                                         values, extra, {"success": f"{arm}_success"}))
    assert arms is not None
    tables = []
    for arm in arms:
        rows = per_arm[arm]
        columns = sorted({c for r in rows for c in r.values})
        unknown = [c for c in columns if c != "success" and not c.startswith(SLICE_PREFIX)]
        table = _Table(rows, columns, factor_order=factor_names or None, unknown=unknown, arm=arm)
        table.manifest_extra["pairing"] = (
            "row of the paired file (each row is one condition played by every arm)"
        )
        table.manifest_extra["arms"] = list(arms)
        tables.append(table)
    return tables


def _read_csv_plain(path: Path) -> list[_Raw]:
    """Rows of a CSV without the record-column checks (a paired CSV names its columns itself)."""
    import csv
    import io

    text = _read_text(path)
    records = csv.reader(io.StringIO(text, newline=""))
    header = [c.strip() for c in next(records, [])]
    rows: list[_Raw] = []
    for line, record in enumerate(records, 2):
        if not any(c.strip() for c in record):
            continue
        if len(record) != len(header):
            raise _fail(path, f"line {line}", None, f"{len(header)} fields",
                        _Text(f"{len(record)} fields"))
        rows.append(_Raw(f"line {line}", dict(zip(header, record, strict=True))))
    return rows


# --------------------------------------------------------------------------- ManiSkill


def _read_maniskill(path: Path) -> list[_Table]:
    doc = _load_json(path, "a ManiSkill RecordEpisode trajectory .json")
    episodes = doc.get("episodes") if isinstance(doc, dict) else None
    if not isinstance(episodes, list) or not episodes:
        raise _fail(path, "top level", "episodes", "a non-empty list of recorded episodes",
                    _NOTHING if episodes is None else episodes)
    env_info: dict[str, Any] = doc["env_info"] if isinstance(doc.get("env_info"), dict) else {}
    budget = env_info.get("max_episode_steps")
    rows: list[_Raw] = []
    for index, entry in enumerate(episodes):
        where = f"episodes[{index}]"
        if not isinstance(entry, dict):
            raise _fail(path, where, None, "an object", entry)
        info: dict[str, Any] = entry["info"] if isinstance(entry.get("info"), dict) else {}
        success_value = entry.get("success", info.get("success"))
        if success_value is None:
            raise _fail(path, where, "success", "true/false (record with an env that reports "
                        "success)", _NOTHING)
        try:
            success = _as_bool(success_value)
            fail = _as_bool(entry.get("fail", info.get("fail", False)))
            seed = _as_count(entry["episode_seed"]) if "episode_seed" in entry else None
            steps = _as_count(entry.get("elapsed_steps", 0))
        except _Bad as bad:
            raise _fail(path, where, None, bad.expected, bad.got) from None
        if success:
            outcome = "success"
        elif not fail and isinstance(budget, int) and steps >= budget:
            outcome = "timeout"
        else:
            outcome = "failure"
        values: dict[str, Any] = {"outcome": outcome, "steps": steps}
        if seed is not None:
            values["condition_seed"] = seed
        extra = {k: entry[k] for k in ("episode_id", "episode_seed", "control_mode") if k in entry}
        rows.append(_Raw(where, values, extra, {"condition_seed": "episode_seed"}))
    seeded = [r for r in rows if "condition_seed" in r.values]
    table = _Table(rows, ["outcome", "steps", "condition_seed"], factor_order=[])
    if seeded and len(seeded) == len(rows):
        order = {s: i for i, s in enumerate(sorted({r.values["condition_seed"] for r in rows}))}
        seen: dict[int, int] = {}
        for row in rows:
            seed = row.values["condition_seed"]
            row.values["episode"], row.values["repeat"] = order[seed], seen.get(seed, 0)
            seen[seed] = row.values["repeat"] + 1
        table.external_seeds = True
        table.manifest_extra["pairing"] = "episode seed (a repeated seed is a repeat)"
    for key in ("env_id", "max_episode_steps"):
        if key in env_info:
            table.manifest_extra[key] = env_info[key]
    note = attach_maniskill_videos(path, rows, env_info)
    if note is not None:
        table.notes.append(note)
    return [table]


def _load_json(path: Path, what: str) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise _fail(path, f"line {exc.lineno}, character {exc.colno}", None, what,
                    _Text(f"invalid JSON ({exc.msg})")) from None


SOURCE_READERS: dict[str, Callable[[Path], list[_Table]]] = {
    "libero": _read_libero,
    "simpler": _read_simpler,
    "paired-csv": _read_paired,
    "maniskill": _read_maniskill,
}


# --------------------------------------------------------------------------- detection


def detect_format(path: Path) -> str | None:
    r"""The format of ``path`` from its content (and suffix); ``None`` when it is not known.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "eval.log").write_text("INFO:root:Task suite: libero_10\n"
    ...     "Task: put the bowl on the plate\nINFO:root:Starting episode 1...\n"
    ...     "INFO:root:Success: True\n")
    >>> detect_format(d / "eval.log")
    'libero'
    """
    if path.is_dir():
        if any(_SIMPLER_FILE.match(p.stem) for p in path.rglob("*.mp4")):
            return "simpler"
        if any(paired_arms(_csv_header(p)) for p in path.rglob("*.csv")):
            return "paired-csv"
        return None
    if not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    try:
        head = path.open("rb").read(1 << 16).decode("utf-8-sig", errors="replace")
    except OSError:
        return None
    if suffix == ".json" or head.lstrip().startswith("{") and suffix not in (".jsonl", ".ndjson"):
        try:
            doc = json.loads(_read_text(path))
        except (json.JSONDecodeError, ValueError, ImportError):
            return "lerobot" if suffix == ".json" else None
        if isinstance(doc, dict) and isinstance(doc.get("episodes"), list):
            return "maniskill"
        if isinstance(doc, dict) and ("per_task" in doc or "per_episode" in doc):
            return "lerobot"
        return "lerobot" if suffix == ".json" else None
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "paired-csv" if paired_arms(_csv_header(path)) else "csv"
    if _LIBERO_START.search(head) and ("Success: " in head or "Task: " in head):
        return "libero"
    return None
