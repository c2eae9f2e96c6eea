"""Named scorers stored on episodes: added in one transaction, never overwritten silently,
carried by bundles, and taken by store files of older schema versions."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from evalband import run_panel
from evalband.analysis._scorers import scorer_agreement, scorer_values
from evalband.errors import InvalidInputError
from evalband.panel import load_panel
from evalband.store import RunStore
from evalband.store._bundle import export_bundle, load_bundle
from evalband.store._schema import SCHEMA_VERSION
from evalband.store._scores import add_scores, read_labels

V3 = Path(__file__).parent / "fixtures" / "store-v3.sqlite"


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    st = RunStore(tmp_path / "s.sqlite")
    run_panel(load_panel("reach1d"), "reach1d:damped", st, run_id="d")
    return st


def test_labels_are_stored_with_their_source_and_read_back(store: RunStore) -> None:
    keys = sorted(scorer_values(store.episode_records("d"), "success"))[:10]
    n = add_scores(store, "d", "human", "operator", {k: float(i % 2) for i, k in enumerate(keys)})
    assert n == 10
    records = store.episode_records("d")
    assert scorer_values(records, "human") == {k: float(i % 2) for i, k in enumerate(keys)}
    entry = next(r for r in records if r.key == keys[1]).extra["scorers"]["human"]
    assert entry["value"] == 1 and entry["source"] == "operator" and entry["at"]
    store.close()


def test_nothing_is_overwritten_or_half_written(store: RunStore) -> None:
    keys = sorted(scorer_values(store.episode_records("d"), "success"))
    add_scores(store, "d", "judge", "vlm", {keys[0]: 1.0})
    with pytest.raises(InvalidInputError, match="already has scorer .judge.; pass .replace=True."):
        add_scores(store, "d", "judge", "vlm", {keys[1]: 0.0, keys[0]: 0.0})
    assert scorer_values(store.episode_records("d"), "judge") == {keys[0]: 1.0}  # rolled back
    with pytest.raises(InvalidInputError, match="name no stored episode"):
        add_scores(store, "d", "other", "vlm", {keys[2]: 1.0, ("nope", 0, 0): 1.0})
    assert scorer_values(store.episode_records("d"), "other") == {}
    add_scores(store, "d", "judge", "vlm2", {keys[0]: 0.0}, replace=True)
    assert scorer_values(store.episode_records("d"), "judge") == {keys[0]: 0.0}
    with pytest.raises(InvalidInputError, match="from its record"):
        add_scores(store, "d", "success", "me", {keys[0]: 0.0})
    store.close()


def test_a_bundle_carries_the_scorers(store: RunStore, tmp_path: Path) -> None:
    keys = sorted(scorer_values(store.episode_records("d"), "success"))[:5]
    add_scores(store, "d", "human", "operator", dict.fromkeys(keys, 1.0))
    _, records = load_bundle(export_bundle(store, "d", tmp_path / "b"))
    assert scorer_values(records, "human") == dict.fromkeys(keys, 1.0)
    store.close()


def test_an_old_store_takes_scorers_without_a_schema_change(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copy(V3, path)
    with RunStore(path) as st:  # opened for writing: migrated to the current schema as ever
        keys = sorted(scorer_values(st.episode_records("base"), "success"))[::4]
        add_scores(st, "base", "human", "operator",
                   {k: v for k, v in scorer_values(st.episode_records("base"), "success").items()
                    if k in keys})
        a = scorer_agreement(st.episode_records("base"), "human", "success", run_id="base")
    assert a.n == len(keys) and a.accuracy["estimate"] == 1.0 and a.ppi is not None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    conn.close()


def test_labels_files(tmp_path: Path) -> None:
    csv = tmp_path / "l.csv"
    csv.write_text("cell,episode,repeat,human\nx=1,0,0,success\nx=1,1,,failure\nx=1,2,0,\n"
                   "x=1,3,1,0.5\n")
    assert read_labels(csv, "human") == {("x=1", 0, 0): 1.0, ("x=1", 1, 0): 0.0,
                                         ("x=1", 3, 1): 0.5}
    jsonl = tmp_path / "l.jsonl"
    jsonl.write_text('{"episode": 4, "value": true}\n{"episode": 5, "value": 0}\n')
    assert read_labels(jsonl, "value") == {("", 4, 0): 1.0, ("", 5, 0): 0.0}
    bad = tmp_path / "b.csv"
    for text, match in [("episode,human\n1,maybe\n", "number or success/failure"),
                        ("episode,human\n-1,1\n", "whole number"),
                        ("episode,human\n1,1\n1,0\n", "labelled twice"),
                        ("episode,other\n1,1\n", "no 'human' column")]:
        bad.write_text(text)
        with pytest.raises(InvalidInputError, match=match):
            read_labels(bad, "human")
    bad.write_bytes(b"episode,human\n1,\xff\n")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        read_labels(bad, "human")
    either = tmp_path / "v.csv"  # no column named: the scorer's, else 'value'
    either.write_text("episode,value\n1,1\n")
    assert read_labels(either, scorer="judge") == {("", 1, 0): 1.0}
    either.write_text("episode,value,judge\n1,1,0\n")
    assert read_labels(either, scorer="judge") == {("", 1, 0): 0.0}
