"""Tests for importing results produced elsewhere (CSV, JSONL, Parquet, lerobot eval_info.json).

The oracle throughout is the data the tests write: every file is written here, in the documented
shape, from the ground-truth table below, with the stdlib ``csv``/``json`` modules and pyarrow
(not with evalband), and the imported records are compared with that table and with the
documented defaults.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import (
    ImportFormatError,
    InvalidInputError,
    InvalidParameterError,
    StoreError,
)
from evalband.panel import Panel, default_condition_seed, panel_from_yaml
from evalband.store import RunStore, import_results
from evalband.store._import_lerobot import LEROBOT_SEED_PAIRING
from evalband.store._import_read import IMPORT_COLUMNS, IMPORT_FORMATS
from evalband.store._importers import LEROBOT_PAIRING, infer_import_format
from testkit import coin_panel

# -- ground truth ------------------------------------------------------------------------------

# One row per episode, in the order written to the files (deliberately not sorted).
TRUTH: list[dict[str, Any]] = [
    {"embodiment": "humanoid", "task": "place", "episode": 1, "outcome": "success", "steps": 35,
     "sim_time_s": 1.75, "score": 2, "assisted": False, "interventions": 0, "error": None},
    {"embodiment": "arm", "task": "pick", "episode": 0, "outcome": "success", "steps": 40,
     "sim_time_s": 2.0, "score": 2, "assisted": False, "interventions": 0, "error": None},
    {"embodiment": "arm", "task": "pick", "episode": 1, "outcome": "failure", "steps": 60,
     "sim_time_s": 3.0, "score": 1, "assisted": False, "interventions": 0, "error": None},
    {"embodiment": "arm", "task": "place", "episode": 0, "outcome": "timeout", "steps": 100,
     "sim_time_s": 5.0, "score": 0, "assisted": True, "interventions": 2, "error": None},
    {"embodiment": "arm", "task": "place", "episode": 1, "outcome": "success", "steps": 30,
     "sim_time_s": 1.5, "score": 2, "assisted": True, "interventions": 1, "error": None},
    {"embodiment": "humanoid", "task": "pick", "episode": 0, "outcome": "error", "steps": 5,
     "sim_time_s": 0.25, "score": None, "assisted": False, "interventions": 0,
     "error": "RuntimeError: policy exploded"},
    {"embodiment": "humanoid", "task": "pick", "episode": 1, "outcome": "success", "steps": 45,
     "sim_time_s": 2.25, "score": 2, "assisted": False, "interventions": 3, "error": None},
    {"embodiment": "humanoid", "task": "place", "episode": 0, "outcome": "failure", "steps": 80,
     "sim_time_s": 4.0, "score": 1, "assisted": False, "interventions": 0, "error": None},
]

VALUE_COLUMNS = ("episode", "outcome", "steps", "sim_time_s", "score", "assisted",
                 "interventions", "error")


def file_rows() -> list[dict[str, Any]]:
    """TRUTH in the documented column names (slices as slice.<factor>, plus success 0/1)."""
    rows = []
    for t in TRUTH:
        row = {"slice.embodiment": t["embodiment"], "slice.task": t["task"]}
        row.update({name: t[name] for name in VALUE_COLUMNS})
        row["success"] = int(t["outcome"] == "success")
        rows.append(row)
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    columns = list(rows[0])
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else int(v) if isinstance(v, bool) else v)
                             for k, v in row.items()})
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n"
                            for r in rows))
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    types = {"slice.embodiment": pa.string(), "slice.task": pa.string(), "episode": pa.int64(),
             "outcome": pa.string(), "steps": pa.int64(), "sim_time_s": pa.float64(),
             "score": pa.int64(), "assisted": pa.bool_(), "interventions": pa.int64(),
             "error": pa.string(), "success": pa.bool_()}
    columns = {name: pa.array([bool(r[name]) if name == "success" else r[name] for r in rows],
                              type=types.get(name))
               for name in rows[0]}
    pq.write_table(pa.table(columns), path)
    return path


def snapshot(store: RunStore) -> tuple[list[Any], list[Any]]:
    """The runs and episodes tables, read through a separate connection."""
    conn = sqlite3.connect(store.path)
    try:
        runs = conn.execute("SELECT * FROM runs ORDER BY rowid").fetchall()
        episodes = conn.execute("SELECT * FROM episodes ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return runs, episodes


def by_key(records: list[EpisodeRecord]) -> dict[tuple[str, int], EpisodeRecord]:
    return {(r.cell, r.episode): r for r in records}


def check_against_truth(records: list[EpisodeRecord], *, outcome_from_file: bool = True) -> None:
    assert len(records) == len(TRUTH)
    got = by_key(records)
    for t in TRUTH:
        # Cell key: factors in sorted order when no panel is given (documented).
        cell = f"embodiment={t['embodiment']},task={t['task']}"
        r = got[(cell, t["episode"])]
        assert r.slices == {"embodiment": t["embodiment"], "task": t["task"]}
        assert r.repeat == 0
        assert r.outcome.value == t["outcome"]
        assert r.steps == t["steps"]
        assert r.sim_time_s == t["sim_time_s"]
        assert r.score == t["score"]
        assert r.assisted is t["assisted"]
        assert r.interventions == t["interventions"]
        assert r.error == t["error"]
        # Documented defaults.
        assert r.terminated is (t["outcome"] in ("success", "failure"))
        assert r.truncated is (t["outcome"] == "timeout")
        expected_tts = t["sim_time_s"] if t["outcome"] == "success" else None
        assert r.time_to_success_s == expected_tts
        assert r.condition_seed == default_condition_seed(0, cell, t["episode"])
        assert r.extra == {"condition_seed_inferred": True}


# -- round trips -------------------------------------------------------------------------------


def test_csv_round_trip(store: RunStore, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "policy-a.csv", file_rows())
    run_id = import_results(store, path)
    assert run_id == "policy-a"
    check_against_truth(store.episode_records(run_id))
    m = store.require_run(run_id)
    assert (m.status, m.source, m.backend, m.policy) == ("imported", "import", "import", "policy-a")
    assert m.extra["panel_inferred"] is True
    assert m.extra["imported_from"]["format"] == "csv"
    assert m.extra["imported_from"]["episodes"] == len(TRUTH)
    assert m.n_planned == len(TRUTH)
    # The inferred panel: documented shape, and its fingerprint is the one every record carries.
    panel = panel_from_yaml(m.panel_yaml)
    assert panel.env == "imported" and panel.seed == 0 and panel.repeats == 1
    assert panel.episodes == 2
    assert panel.budget.steps == 1  # placeholder: two imports of one layout share a fingerprint
    assert panel.factors == {"embodiment": ["arm", "humanoid"], "task": ["pick", "place"]}
    assert panel.fingerprint == m.panel_fingerprint
    assert {r.panel_fingerprint for r in store.episode_records(run_id)} == {m.panel_fingerprint}
    # The inferred panel's plan holds exactly the imported keys, with the same seeds.
    planned = {s.key: s.condition_seed for s in panel.episode_specs()}
    assert planned == {r.key: r.condition_seed for r in store.episode_records(run_id)}


def test_jsonl_round_trip_with_outcome_only(store: RunStore, tmp_path: Path) -> None:
    rows = file_rows()
    for row in rows:
        del row["success"]
    run_id = import_results(store, write_jsonl(tmp_path / "b.jsonl", rows), policy="bc-weak")
    check_against_truth(store.episode_records(run_id))
    assert store.require_run(run_id).policy == "bc-weak"
    assert {r.policy for r in store.episode_records(run_id)} == {"bc-weak"}


def test_parquet_round_trip(store: RunStore, tmp_path: Path) -> None:
    run_id = import_results(store, write_parquet(tmp_path / "c.parquet", file_rows()))
    check_against_truth(store.episode_records(run_id))
    assert store.require_run(run_id).extra["imported_from"]["format"] == "parquet"


def test_success_column_alone_is_enough(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "minimal.csv"
    path.write_text("success\n1\n0\ntrue\nFALSE\n")
    run_id = import_results(store, path)
    records = store.episode_records(run_id)
    assert [r.key for r in records] == [("", i, 0) for i in range(4)]
    assert [r.outcome for r in records] == [Outcome.SUCCESS, Outcome.FAILURE] * 2
    assert all(r.terminated and not r.truncated and r.steps == 0 for r in records)
    assert [r.condition_seed for r in records] == [
        default_condition_seed(0, "", i) for i in range(4)
    ]
    panel = panel_from_yaml(store.require_run(run_id).panel_yaml)
    assert (panel.episodes, panel.factors, panel.budget.steps) == (4, {}, 1)


def test_episode_defaults_to_row_order_within_cell(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "order.csv"
    path.write_text("slice.task,success\npick,1\nplace,0\npick,0\nplace,1\npick,1\n")
    records = store.episode_records(import_results(store, path))
    outcomes = {r.key: r.outcome.value for r in records}
    assert outcomes == {
        ("task=pick", 0, 0): "success",
        ("task=pick", 1, 0): "failure",
        ("task=pick", 2, 0): "success",
        ("task=place", 0, 0): "failure",
        ("task=place", 1, 0): "success",
    }


def test_optional_columns_round_trip(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "full.jsonl"
    row = {"cell": "b=2,a=1", "episode": 3, "repeat": 1, "condition_seed": 12345,
           "outcome": "success", "steps": 9, "sim_time_s": 0.9, "time_to_success_s": 0.7,
           "terminated": True, "truncated": False, "score": 2, "assisted": True,
           "interventions": 1, "latency_ms_p50": 1.5, "latency_ms_p95": 2.5,
           "latency_ms_max": 9.0, "env_ms": 40.0, "wall_s": 0.3,
           "started_at": "2025-03-01T12:00:00+00:00", "policy": "diffusion"}
    path.write_text(json.dumps(row) + "\n")
    (r,) = store.episode_records(import_results(store, path))
    assert (r.cell, r.slices) == ("a=1,b=2", {"a": "1", "b": "2"})  # canonical: sorted factors
    assert (r.episode, r.repeat, r.condition_seed, r.extra) == (3, 1, 12345, {})
    for name in ("steps", "sim_time_s", "time_to_success_s", "terminated", "truncated", "score",
                 "assisted", "interventions", "latency_ms_p50", "latency_ms_p95",
                 "latency_ms_max", "env_ms", "wall_s", "started_at", "policy"):
        assert getattr(r, name) == row[name], name
    assert store.require_run("full").policy == "diffusion"


def test_policy_argument_overrides_column_and_is_recorded(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("success,policy\n1,act\n0,act\n")
    run_id = import_results(store, path, policy="act-v2", run_id="mine")
    m = store.require_run(run_id)
    assert (run_id, m.policy, m.extra["policy_in_file"]) == ("mine", "act-v2", "act")


# -- with a panel ------------------------------------------------------------------------------

ZERO = "evalband.policies._builtin:zero_action"


@pytest.mark.parametrize("cell_style", ["slice", "cell"])
def test_import_with_panel_pairs_with_a_native_run(
    store: RunStore, tmp_path: Path, cell_style: str
) -> None:
    from evalband.run import run_panel

    panel = coin_panel(episodes=3, repeats=2)
    native_id, _ = run_panel(panel, ZERO, store, run_id="native")
    native = store.episode_records(native_id)
    # An external harness played the same panel and wrote its own file (no seeds in it).
    rows = []
    for r in native:
        where = ({"slice.p": r.slices["p"]} if cell_style == "slice" else {"cell": r.cell})
        rows.append({**where, "episode": r.episode, "repeat": r.repeat,
                     "success": int(r.episode % 2 == 0), "steps": r.steps})
    path = write_csv(tmp_path / "external.csv", rows)
    run_id = import_results(store, path, panel=panel)
    m = store.require_run(run_id)
    native_fingerprint = store.require_run(native_id).panel_fingerprint
    assert m.panel_fingerprint == panel.fingerprint == native_fingerprint
    assert "panel_inferred" not in m.extra
    assert m.n_planned == len(panel.episode_specs())
    imported = store.episode_records(run_id)
    assert [(r.key, r.condition_seed) for r in imported] == [
        (r.key, r.condition_seed) for r in native
    ]
    assert all(r.extra == {} for r in imported)
    assert [r.success for r in imported] == [r.episode % 2 == 0 for r in native]


@pytest.mark.parametrize(
    ("text", "where", "column"),
    [
        ("slice.p,episode,success\n0.2,0,1\n0.5,0,1\n", "line 3", "slice.p"),
        ("slice.p,episode,success\n0.2,0,1\n0.8,20,1\n", "line 3", "episode"),
        ("slice.p,repeat,success\n0.2,1,1\n", "line 2", "repeat"),
        ("success\n1\n", "line 2", "slice.p"),
        ("slice.p,slice.q,success\n0.2,x,1\n", "line 2", "slice.q"),
        ("slice.p,episode,condition_seed,success\n0.2,0,1,1\n", "line 2", "condition_seed"),
    ],
    ids=["level", "episode", "repeat", "missing-factor", "stray-factor", "seed"],
)
def test_rows_outside_the_panel_are_refused(
    store: RunStore, tmp_path: Path, text: str, where: str, column: str
) -> None:
    path = tmp_path / "outside.csv"
    path.write_text(text)
    before = snapshot(store)
    with pytest.raises(ImportFormatError) as info:
        import_results(store, path, panel=coin_panel())
    assert (info.value.where, info.value.column) == (where, column)
    assert f"{where}, column {column!r}" in str(info.value)
    assert snapshot(store) == before


def test_file_seed_equal_to_the_panels_is_accepted(store: RunStore, tmp_path: Path) -> None:
    panel = coin_panel()
    seed = {s.key: s.condition_seed for s in panel.episode_specs()}[("p=0.8", 2, 0)]
    path = tmp_path / "seeded.csv"
    path.write_text(f"slice.p,episode,condition_seed,success\n0.8,2,{seed},1\n")
    (r,) = store.episode_records(import_results(store, path, panel=panel))
    assert (r.key, r.condition_seed) == (("p=0.8", 2, 0), seed)


# -- lerobot -----------------------------------------------------------------------------------


def lerobot_multi_task() -> dict[str, Any]:
    """The shape lerobot-eval's eval_policy_all writes (per_task / per_group / overall)."""
    tasks = [
        ("libero_10", 0, [True, False, True]),
        ("libero_10", 1, [False, False, True]),
        ("libero_spatial", 0, [True, True, False]),
    ]
    per_task = [
        {"task_group": g, "task_id": t,
         "metrics": {"sum_rewards": [float(s) * 2 for s in ss],
                     "max_rewards": [float(s) for s in ss],
                     "successes": ss, "video_paths": []}}
        for g, t, ss in tasks
    ]
    flat = [s for _, _, ss in tasks for s in ss]
    return {
        "per_task": per_task,
        "per_group": {"libero_10": {"pc_success": 50.0, "n_episodes": 6}},
        "overall": {"avg_sum_reward": 1.0, "pc_success": 100.0 * sum(flat) / len(flat),
                    "n_episodes": len(flat), "eval_s": 12.0, "video_paths": []},
    }


def write_lerobot(tmp_path: Path, doc: dict[str, Any], name: str = "pi0_libero") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "eval_info.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_lerobot_multi_task_round_trip(store: RunStore, tmp_path: Path) -> None:
    doc = lerobot_multi_task()
    run_id = import_results(store, write_lerobot(tmp_path, doc))
    assert run_id == "pi0_libero"  # eval_info.json: named after its output directory
    records = store.episode_records(run_id)
    expected = {}
    for task in doc["per_task"]:
        for i, success in enumerate(task["metrics"]["successes"]):
            cell = f"task_group={task['task_group']},task={task['task_id']}"
            expected[(cell, i, 0)] = (success, task["metrics"]["sum_rewards"][i])
    assert {r.key: (r.success, r.extra["sum_reward"]) for r in records} == expected
    assert all(r.slices == {"task_group": r.cell.split(",")[0].split("=")[1],
                            "task": r.cell.split(",")[1].split("=")[1]} for r in records)
    assert all(r.outcome in (Outcome.SUCCESS, Outcome.FAILURE) for r in records)
    m = store.require_run(run_id)
    assert m.extra["pairing"] == LEROBOT_PAIRING
    assert "episode index within task" in m.extra["pairing"]
    assert m.extra["panel_inferred"] is True
    assert m.extra["imported_from"]["format"] == "lerobot"


def test_lerobot_single_task_keeps_seeds(store: RunStore, tmp_path: Path) -> None:
    per_episode = [
        {"episode_ix": i, "sum_reward": 10.0 * s, "max_reward": 1.0 * s, "success": s,
         "seed": 1000 + i}
        for i, s in enumerate([True, False, False, True])
    ]
    doc = {"per_episode": per_episode,
           "aggregated": {"avg_sum_reward": 5.0, "avg_max_reward": 0.5, "pc_success": 50.0,
                          "eval_s": 3.0, "eval_ep_s": 0.75},
           "video_paths": []}
    path = tmp_path / "diffusion_pusht.json"
    path.write_text(json.dumps(doc))
    run_id = import_results(store, path)
    assert run_id == "diffusion_pusht"
    records = store.episode_records(run_id)
    assert [(r.key, r.success, r.extra["seed"], r.extra["sum_reward"]) for r in records] == [
        (("", e["episode_ix"], 0), e["success"], e["seed"], e["sum_reward"]) for e in per_episode
    ]
    # the per-episode seed is the condition seed, and the manifest says episodes pair by it
    assert [r.condition_seed for r in records] == [e["seed"] for e in per_episode]
    assert not any(r.extra.get("condition_seed_inferred") for r in records)
    assert store.require_run(run_id).extra["pairing"] == LEROBOT_SEED_PAIRING


def test_lerobot_with_panel(store: RunStore, tmp_path: Path) -> None:
    panel = Panel(name="libero", env="evalband/Coin-v0", episodes=3, seed=1,
                  budget={"steps": 5},
                  factors={"task_group": ["libero_10", "libero_spatial"], "task": [0, 1]})
    run_id = import_results(store, write_lerobot(tmp_path, lerobot_multi_task()), panel=panel)
    seeds = {s.key: s.condition_seed for s in panel.episode_specs()}
    records = store.episode_records(run_id)
    assert {r.key: r.condition_seed for r in records} == {r.key: seeds[r.key] for r in records}
    assert store.require_run(run_id).panel_fingerprint == panel.fingerprint


def test_lerobot_on_the_shipped_lerobot_pusht_panel(store: RunStore, tmp_path: Path) -> None:
    """Its factors are task-target specs; lerobot-eval's seeds are its condition seeds."""
    from evalband.analysis import compare_runs
    from evalband.analysis._compare import RunData
    from evalband.panel import load_panel

    panel = load_panel("lerobot-pusht", check_env=False)
    successes = [True, False, False]
    doc = {"per_task": [{"task_group": "pusht", "task_id": 0,
                         "metrics": {"sum_rewards": [3.0, 1.0, 0.5], "max_rewards": [1.0, 0.2, 0.1],
                                     "successes": successes, "video_paths": []}}]}
    ids = [import_results(store, write_lerobot(tmp_path, doc, name), panel=panel)
           for name in ("a", "b")]
    records = store.episode_records(ids[0])
    assert [(r.cell, r.episode, r.condition_seed) for r in records] == [
        ("task_group=pusht,task=0", i, 1000 + i) for i in range(3)]
    runs = [RunData(i, i, panel.fingerprint, panel, store.episode_records(i)) for i in ids]
    names = {row.name for row in compare_runs(*runs).slice_rows}
    assert {"task_group=pusht", "task=0"} <= names
    assert not any("target" in name for name in names)


# -- malformed files: rejected whole, row and column named, store unchanged ------------------

Writer = Callable[[Path], Path]


def text_file(name: str, text: str) -> Writer:
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_text(text)
        return path

    return write


def parquet_file(name: str, columns: dict[str, Any]) -> Writer:
    def write(folder: Path) -> Path:
        path = folder / name
        pq.write_table(pa.table(columns), path)
        return path

    return write


def lerobot_file(change: Callable[[dict[str, Any]], Any]) -> Writer:
    def write(folder: Path) -> Path:
        doc = lerobot_multi_task()
        change(doc)
        path = folder / "bad.json"
        path.write_text(json.dumps(doc))
        return path

    return write


def _set(doc: dict[str, Any], value: Any, *keys: Any) -> None:
    for key in keys[:-1]:
        doc = doc[key]
    doc[keys[-1]] = value


TRUNCATED_LEROBOT = json.dumps(lerobot_multi_task(), indent=2)[:200]

MALFORMED: list[tuple[str, Writer, str, str | None]] = [
    ("csv-missing-column", text_file("bad.csv", "episode,steps\n0,5\n"), "line 1 (header)",
     "success"),
    ("csv-success-2", text_file("bad.csv", "success,steps\n1,5\n0,6\n2,7\n"), "line 4",
     "success"),
    ("csv-text-count", text_file("bad.csv", "success,steps\n1,5\n0,ten\n"), "line 3", "steps"),
    ("csv-negative-count", text_file("bad.csv", "success,steps\n1,-5\n"), "line 2", "steps"),
    ("csv-misspelt-column", text_file("bad.csv", "success,stpes\n1,5\n"), "line 1 (header)",
     "stpes"),
    ("csv-duplicate-key",
     text_file("bad.csv", "slice.task,episode,success\npick,0,1\npick,1,0\nplace,0,1\npick,0,1\n"),
     "line 5", "episode"),
    ("csv-short-row", text_file("bad.csv", "success,steps\n1,5\n0\n"), "line 3", "steps"),
    ("csv-line-numbers-count-quoted-newlines",
     text_file("bad.csv", 'success,error\n0,"line one\nline two"\n2,\n'), "line 4", "success"),
    ("csv-outcome-disagrees", text_file("bad.csv", "success,outcome\n1,success\n1,timeout\n"),
     "line 3", "success"),
    ("csv-bad-outcome", text_file("bad.csv", "outcome\nsuccess\ncrashed\n"), "line 3", "outcome"),
    ("csv-empty-success", text_file("bad.csv", "success,steps\n1,5\n,6\n"), "line 3", "success"),
    ("csv-policy-not-constant", text_file("bad.csv", "success,policy\n1,a\n0,b\n"), "line 3",
     "policy"),
    ("csv-tts-on-failure", text_file("bad.csv", "success,time_to_success_s\n1,2.0\n0,3.0\n"),
     "line 3", "time_to_success_s"),
    ("csv-truncated-success", text_file("bad.csv", "success,terminated,truncated\n1,0,1\n"),
     "line 2", "truncated"),
    ("csv-bad-timestamp", text_file("bad.csv", "success,started_at\n1,yesterday\n"), "line 2",
     "started_at"),
    ("csv-missing-slice-value", text_file("bad.csv", "success,slice.task\n1,pick\n0,\n"),
     "line 3", "slice.task"),
    ("csv-missing-episode", text_file("bad.csv", "success,episode\n1,0\n0,\n"), "line 3",
     "episode"),
    ("csv-empty", text_file("bad.csv", ""), "line 1 (header)", None),
    ("csv-header-only", text_file("bad.csv", "success\n"), "file", None),
    ("jsonl-truncated-line",
     text_file("bad.jsonl", '{"success": 1}\n{"success": 0}\n{"success": 1, "ste'),
     "line 3, character 16", None),
    ("jsonl-success-2", text_file("bad.jsonl", '{"success": 1}\n{"success": 2}\n'), "line 2",
     "success"),
    ("jsonl-text-count", text_file("bad.jsonl", '{"success": 1, "steps": "ten"}\n'), "line 1",
     "steps"),
    ("jsonl-misspelt-column",
     text_file("bad.jsonl", '{"success": 1}\n{"success": 0, "outcom": 1}\n'), "line 2", "outcom"),
    ("jsonl-missing-success", text_file("bad.jsonl", '{"success": 1}\n{"steps": 3}\n'),
     "line 2", "success"),
    ("jsonl-not-an-object", text_file("bad.jsonl", '{"success": 1}\n[1, 2]\n'), "line 2", None),
    ("parquet-text-count",
     parquet_file("bad.parquet", {"success": [1, 0], "steps": ["5", "ten"]}), "row 2", "steps"),
    ("parquet-success-2", parquet_file("bad.parquet", {"success": [1, 2, 0]}), "row 2",
     "success"),
    ("parquet-missing-column", parquet_file("bad.parquet", {"steps": [1, 2]}), "schema",
     "success"),
    ("parquet-corrupt", text_file("bad.parquet", "PAR1 this is not parquet"), "file", None),
    ("lerobot-truncated", text_file("bad.json", TRUNCATED_LEROBOT), "line ", None),
    ("lerobot-success-2", lerobot_file(lambda d: _set(d, 2, "per_task", 1, "metrics",
                                                      "successes", 2)),
     "task libero_10/1, episode 2", "metrics.successes"),
    ("lerobot-text-success",
     lerobot_file(lambda d: _set(d, "yes", "per_task", 2, "metrics", "successes", 0)),
     "task libero_spatial/0, episode 0", "metrics.successes"),
    ("lerobot-list-length",
     lerobot_file(lambda d: d["per_task"][0]["metrics"]["sum_rewards"].pop()),
     "task libero_10/0", "metrics.sum_rewards"),
    ("lerobot-no-successes",
     lerobot_file(lambda d: d["per_task"][1]["metrics"].pop("successes")),
     "task libero_10/1", "metrics.successes"),
    ("lerobot-duplicate-task", lerobot_file(lambda d: _set(d, 0, "per_task", 1, "task_id")),
     "per_task[1]", "task_id"),
    ("lerobot-duplicate-episode-ix",
     text_file("bad.json", json.dumps({"per_episode": [{"episode_ix": 0, "success": True},
                                                       {"episode_ix": 0, "success": False}]})),
     "episode 0", "episode_ix"),
    ("lerobot-unknown-layout", lerobot_file(lambda d: d.pop("per_task")), "top level",
     "per_task"),
    ("lerobot-pc-success-disagrees", lerobot_file(lambda d: _set(d, 99.0, "overall",
                                                                 "pc_success")),
     "overall", "pc_success"),
]


@pytest.mark.parametrize(("write", "where", "column"), [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
def test_malformed_file_is_rejected_whole(
    store: RunStore, tmp_path: Path, write: Writer, where: str, column: str | None
) -> None:
    # A store that already holds a run, so "unchanged" is not trivially true.
    import_results(store, write_csv(tmp_path / "existing.csv", file_rows()))
    before = snapshot(store)
    folder = tmp_path / "in"
    folder.mkdir()
    path = write(folder)
    with pytest.raises(ImportFormatError) as info:
        import_results(store, path)
    error = info.value
    message = str(error)
    assert "\n" not in message
    assert str(path) in message and error.path == str(path)
    assert error.where is not None and error.where.startswith(where)
    assert error.column == column
    assert (where if column is None else f"{where}, column {column!r}") in message
    assert "expected" in message and "got" in message
    assert snapshot(store) == before
    assert store.get_run(path.stem) is None


def test_truncated_json_names_line_and_character(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "eval_info.json"
    path.write_text('{\n  "per_task": [\n    {"task_group": "libero_10", "task_id": 0, "metr')
    with pytest.raises(ImportFormatError, match=r"line 3, character \d+: expected a complete"):
        import_results(store, path)


def test_first_problem_is_reported(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "two.csv"
    path.write_text("success,steps,score\n1,5,1\n1,5,x\n2,ten,1\n")
    with pytest.raises(ImportFormatError) as info:
        import_results(store, path)
    assert (info.value.where, info.value.column) == ("line 3", "score")


def test_a_problem_across_rows_is_reported_at_its_row(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "dup-then-bad.csv"
    path.write_text("episode,success,steps\n0,1,5\n0,1,5\n1,1,ten\n")
    with pytest.raises(ImportFormatError) as info:
        import_results(store, path)
    assert (info.value.where, info.value.column) == ("line 3", "episode")


def test_pandas_written_files_import(store: RunStore, tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"slice.task": ["pick", "place", "pick"], "success": [True, False, True],
                          "steps": [3, 9, 4]}, index=[10, 11, 12])  # a non-default index
    frame.to_parquet(tmp_path / "frame.parquet")
    records = store.episode_records(import_results(store, tmp_path / "frame.parquet"))
    assert [(r.key, r.success, r.steps) for r in records] == [
        (("task=pick", 0, 0), True, 3), (("task=pick", 1, 0), True, 4),
        (("task=place", 0, 0), False, 9),
    ]
    frame.to_csv(tmp_path / "with-index.csv")  # the index under an empty header: refused
    with pytest.raises(ImportFormatError, match="without an index") as info:
        import_results(store, tmp_path / "with-index.csv")
    assert (info.value.where, info.value.column) == ("line 1 (header)", "")
    frame.to_csv(tmp_path / "no-index.csv", index=False)
    records = store.episode_records(import_results(store, tmp_path / "no-index.csv"))
    assert [(r.key, r.success, r.steps) for r in records] == [
        (("task=pick", 0, 0), True, 3), (("task=pick", 1, 0), True, 4),
        (("task=place", 0, 0), False, 9),
    ]


def test_error_messages_say_expected_and_got(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("success,steps\n1,ten\n")
    with pytest.raises(ImportFormatError) as info:
        import_results(store, path)
    assert str(info.value) == (
        f"cannot import {path}: line 2, column 'steps': expected a whole number >= 0; "
        "got 'ten' (nothing was imported)"
    )
    assert isinstance(info.value, InvalidInputError) and isinstance(info.value, ValueError)


def test_manifest_and_episodes_are_one_transaction(store: RunStore, tmp_path: Path) -> None:
    # Make the store itself refuse the 4th episode mid-transaction: nothing may remain,
    # not even the run row written first in the same transaction.
    conn = sqlite3.connect(store.path)
    conn.execute(
        "CREATE TRIGGER refuse_fourth BEFORE INSERT ON episodes WHEN NEW.episode = 3 "
        "BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
    )
    conn.commit()
    conn.close()
    before = snapshot(store)
    path = tmp_path / "five.csv"
    path.write_text("success\n1\n0\n1\n0\n1\n")
    with pytest.raises(StoreError):
        import_results(store, path)
    assert snapshot(store) == before
    assert store.get_run("five") is None


# -- run ids, formats, missing files -----------------------------------------------------------


def test_existing_run_id_is_refused(store: RunStore, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "dup.csv", file_rows())
    import_results(store, path)
    before = snapshot(store)
    with pytest.raises(StoreError, match="already exists"):
        import_results(store, path)
    other = write_jsonl(tmp_path / "other.jsonl", file_rows())
    with pytest.raises(StoreError, match="'dup' already exists"):
        import_results(store, other, run_id="dup")
    assert snapshot(store) == before
    assert import_results(store, other, run_id="dup-2") == "dup-2"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.csv", "csv"), ("a.CSV", "csv"), ("a.jsonl", "jsonl"), ("a.ndjson", "jsonl"),
     ("a.parquet", "parquet"), ("eval_info.json", "lerobot")],
)
def test_format_from_suffix(name: str, fmt: str) -> None:
    assert infer_import_format(name) == fmt
    assert fmt in IMPORT_FORMATS


def test_unknown_suffix_and_format(store: RunStore, tmp_path: Path) -> None:
    path = tmp_path / "results.txt"
    path.write_text("success\n1\n0\n")
    with pytest.raises(ImportFormatError, match="suffix '.txt'"):
        import_results(store, path)
    with pytest.raises(InvalidParameterError, match="csv, jsonl, parquet, lerobot"):
        import_results(store, path, format="xml")
    run_id = import_results(store, path, format="csv")
    assert store.outcome_counts(run_id)["success"] == 1


def test_missing_file(store: RunStore, tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="no such file"):
        import_results(store, tmp_path / "nope.csv")
    assert store.list_runs() == []


def test_documented_columns_are_the_record_fields() -> None:
    from evalband.episode import EPISODE_FIELDS

    not_columns = {"run_id", "panel_fingerprint", "slices", "attempts", "extra"}
    assert set(IMPORT_COLUMNS) - {"success"} == set(EPISODE_FIELDS) - not_columns
    docs = (Path(__file__).resolve().parents[2] / "docs" / "imports.md").read_text()
    for name in IMPORT_COLUMNS:
        assert f"`{name}`" in docs, name
