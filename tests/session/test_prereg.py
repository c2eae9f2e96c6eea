"""Pre-registration: parse, lock with a hash and time, refuse a changed plan, find per session."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sessionkit import store_session

from evalband.cli import main
from evalband.errors import InvalidInputError, PreregistrationError, StoreError
from evalband.session import plan_session, prereg_for_session, simulate_session
from evalband.session._prereg import get_prereg, list_preregs, lock_prereg, parse_prereg

PLAN = """\
name: pretrained-vs-scratch
session: grasp-2
comparisons:
  - [PT_slowLR, GN_s1000]
  - PT_fullLR vs GN_s1000
groupings:
  pretraining:
    pretrained: [PT_slowLR, PT_fullLR]
    scratch: [GN_s1000, BN_scratch]
positive_control_floor: 0.3
notes: one fresh session, ~100 trials each
"""


def write(tmp_path: Path, text: str, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_parse_reads_every_field() -> None:
    p = parse_prereg(PLAN)
    assert p.name == "pretrained-vs-scratch" and p.session_id == "grasp-2"
    assert p.comparisons == (("PT_slowLR", "GN_s1000"), ("PT_fullLR", "GN_s1000"))
    (g,) = p.groupings
    assert g.labels == ("pretrained", "scratch")
    assert g.members == (("PT_slowLR", "PT_fullLR"), ("GN_s1000", "BN_scratch"))
    assert p.positive_control_floor == 0.3 and p.primary_metric == "success"
    assert p.sha256 == hashlib.sha256(PLAN.encode()).hexdigest() and p.locked_at is None
    assert p.policies() == {"PT_slowLR", "PT_fullLR", "GN_s1000", "BN_scratch"}


@pytest.mark.parametrize(("text", "needle"), [
    ("comparisons: [[A, B]]\nwho: me\n", "unknown pre-registration field"),
    ("notes: nothing planned\n", "at least one comparison"),
    ("comparisons: [[A]]\n", r"comparisons\[0\]"),
    ("comparisons: [[A, A]]\n", "itself"),
    ("comparisons: [[A, B], B vs A]\n", "twice"),
    ("groupings: {g: {x: [A], y: [B], z: [C]}}\n", "exactly two groups"),
    ("groupings: {g: {x: [A, B], y: [B]}}\n", "both groups"),
    ("comparisons: [[A, B]]\nprimary_metric: mean_score\n", "primary_metric"),
    ("comparisons: [[A, B]]\npositive_control_floor: 1.5\n", "positive_control_floor"),
    ("comparisons: [[A, B]\n", "not valid YAML"),
    ("- just a list\n", "mapping"),
    ("name: 'bad name!'\ncomparisons: [[A, B]]\n", "name"),
    ("comparisons: [[A, B]]\npositive_control_floor: '0.3'\n", "positive_control_floor"),
    ("comparisons: [[A, B]]\npositive_control_floor: .nan\n", "positive_control_floor"),
    ("groupings: [1]\n", "groupings must map a name to two groups"),
    ("groupings: {g: {x: [], y: [B]}}\n", "non-empty list of policies"),
    ("comparisons: A vs B\n", "list of policy pairs"),
])
def test_parse_refuses_malformed_plans(text: str, needle: str) -> None:
    with pytest.raises(InvalidInputError, match=needle) as info:
        parse_prereg(text, name="x")
    assert len(str(info.value).splitlines()) == 1 and "Value error" not in str(info.value)


def test_lock_records_text_hash_and_time_and_refuses_changes(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    path = write(tmp_path, PLAN)
    when = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    p, created = lock_prereg(path, store=db, now=when)
    assert created and p.locked_at == "2025-03-01T12:00:00.000+00:00"
    assert p.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    again, created = lock_prereg(path, store=db)
    assert not created and again.locked_at == p.locked_at  # the first lock stands
    write(tmp_path, PLAN.replace("0.3", "0.2"))
    with pytest.raises(PreregistrationError, match="different content"):
        lock_prereg(path, store=db)
    assert get_prereg("pretrained-vs-scratch", db).text == PLAN  # unchanged
    row = sqlite3.connect(db).execute(
        "SELECT name, sha256, locked_at, session_id, yaml FROM preregistrations").fetchall()
    assert row == [("pretrained-vs-scratch", p.sha256, p.locked_at, "grasp-2", PLAN)]


def test_tampered_text_is_detected(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    lock_prereg(write(tmp_path, "comparisons: [[A, B]]\n"), store=db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE preregistrations SET yaml = 'comparisons: [[A, C]]'")
    with pytest.raises(PreregistrationError, match="sha256"):
        list_preregs(db)


def test_lock_checks_the_policies_of_an_existing_session(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    plan = plan_session(["A", "B"], scenes=2, attempts=2, seed=1, session_id="grasp-2")
    store_session(db, plan, simulate_session(plan, success_prob={"A": .5, "B": .5}, seed=1))
    with pytest.raises(InvalidInputError, match="PT_slowLR"):
        lock_prereg(write(tmp_path, PLAN), store=db)
    assert list_preregs(db) == []


def test_prereg_for_session(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    lock_prereg(write(tmp_path, "session: s1\ncomparisons: [[A, B]]\n", "one.yaml"), store=db)
    lock_prereg(write(tmp_path, "comparisons: [[A, B]]\n", "free.yaml"), store=db)
    assert prereg_for_session("s1", db).name == "one"
    assert prereg_for_session("s9", db) is None
    lock_prereg(write(tmp_path, "session: s1\ncomparisons: [[A, C]]\n", "two.yaml"), store=db)
    with pytest.raises(PreregistrationError, match="prereg"):
        prereg_for_session("s1", db)
    assert [p.name for p in list_preregs(db)] == ["one", "free", "two"]
    with pytest.raises(PreregistrationError, match="one, free, two"):
        get_prereg("three", db)


def test_reading_needs_an_evalband_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store"):
        list_preregs(tmp_path / "missing.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not an evalband store"):
        lock_prereg(write(tmp_path, "comparisons: [[A, B]]\n"), store=other)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_lock_and_show(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    path = write(tmp_path, PLAN)
    code, out, err = run_cli(capsys, "prereg", "lock", str(path), "--store", db)
    assert code == 0, err
    assert "pretrained-vs-scratch locked at" in out and hashlib.sha256(
        PLAN.encode()).hexdigest() in out
    code, out, _ = run_cli(capsys, "prereg", "lock", str(path), "--store", db, "--json")
    data = json.loads(out)
    assert code == 0 and data["created"] is False and data["session_id"] == "grasp-2"
    code, out, _ = run_cli(capsys, "prereg", "show", "--store", db, "--json")
    assert [p["name"] for p in json.loads(out)] == ["pretrained-vs-scratch"]
    code, out, _ = run_cli(capsys, "prereg", "show", "pretrained-vs-scratch", "--store", db)
    assert code == 0 and "planned: PT_slowLR vs GN_s1000" in out and "grouping pretraining" in out
    write(tmp_path, PLAN + "# changed after the fact\n")
    code, out, err = run_cli(capsys, "prereg", "lock", str(path), "--store", db)
    assert code == 2 and "different content" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(capsys, "prereg", "lock", str(tmp_path / "nope.yaml"), "--store", db)
    assert code == 2 and "cannot read" in err
