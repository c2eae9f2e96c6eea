"""A store written by the release with schema 1 opens, reads, and migrates to the current schema.

The fixture ``fixtures/store-v1.sqlite`` was made by ``fixtures/make_store_v1.py`` with that
release's CLI: two reach1d runs, a recorded comparison (no result), a blind hardware session
with seven confirmed trials, a locked pre-registration.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.errors import StoreError
from evalband.session import SessionStore
from evalband.store import RunStore
from evalband.store._schema import SCHEMA_VERSION
from testkit import RELEASED_WORDS, as_released, mask_replaced

FIXTURE = Path(__file__).parent / "fixtures" / "store-v1.sqlite"
OLD_JSON = FIXTURE.with_name("compare-v1.json")  # that release's `compare base cand --json`
OLD_MD = FIXTURE.with_name("report-v1.md")  # and its `report base cand --md`
TABLES = ("runs", "episodes", "comparisons", "sessions", "session_trials", "preregistrations")


def raw(path: Path) -> dict[str, Any]:
    """Every row of every table, read with sqlite3 itself (not evalband)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, Any] = {"user_version": conn.execute("PRAGMA user_version").fetchone()[0]}
        for table in TABLES:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            if not cols:  # a table this version does not have
                out[table] = None
                continue
            out[table] = (cols, sorted(conn.execute(f"SELECT * FROM {table}").fetchall(),
                                       key=repr))
        return out
    finally:
        conn.close()


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURE, path)
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_fixture_is_a_schema_1_store() -> None:
    before = raw(FIXTURE)
    assert before["user_version"] == 1
    assert len(before["episodes"][1]) == 128 and len(before["runs"][1]) == 2
    assert before["comparisons"][0] == ["comparison_id", "run_ids", "options", "created_at"]
    assert len(before["session_trials"][1]) == 7 and len(before["preregistrations"][1]) == 1


def test_read_only_reads_it_as_it_is_and_writes_nothing(v1: Path) -> None:
    data = v1.read_bytes()
    with RunStore(v1, read_only=True) as st:
        assert st.schema_version == 1
        assert [m.run_id for m in st.list_runs()] == ["cand", "base"]
        (c,) = st.comparisons()
        assert c["run_ids"] == ["base", "cand"] and c["has_result"] is False
        assert st.find_comparison_result(["base", "cand"]) is None
        with SessionStore(st) as ss:
            assert ss.session_ids() == ["fix1"]
            assert ss.trials("fix1")["status"].tolist()[:8] == ["scored"] * 6 + ["skipped",
                                                                                 "pending"]
    assert v1.read_bytes() == data


def test_opening_to_write_migrates_and_keeps_every_row(v1: Path) -> None:
    before = raw(v1)
    with RunStore(v1) as st:
        assert st.schema_version == SCHEMA_VERSION
        assert st.count_episodes("base") == st.count_episodes("cand") == 64
        (c,) = st.comparisons()
        assert c["options"] == {"episode_counts": {"base": 64, "cand": 64}}
    after = raw(v1)
    assert after["user_version"] == SCHEMA_VERSION == 4
    assert after["runs"][0] == [*before["runs"][0], "step"]  # version 4: no step (NULL)
    assert all(row[-1] is None for row in after["runs"][1])
    after_runs = {row[:-1] for row in after["runs"][1]}
    assert set(before["runs"][1]) <= after_runs  # every row, every value; the session's runs
    assert set(before["episodes"][1]) <= set(after["episodes"][1])
    assert after["preregistrations"] == before["preregistrations"]
    assert after["session_trials"] is None  # version 3: the trials are episodes
    assert len(after["episodes"][1]) == 128 + 7 and len(after["runs"][1]) == 2 + 2
    cols, (session,) = after["sessions"]
    assert cols == [*before["sessions"][0], "run_ids"] and session[:-1] == before["sessions"][1][0]
    # a blinded session's runs are named by its blind codes (the plan keeps the mapping)
    assert json.loads(session[-1]) == {"A": "fix1:P-PD6", "B": "fix1:P-ZDM"}
    assert {r[0]: r for r in after["runs"][1]}.keys() >= {"fix1:P-PD6", "fix1:P-ZDM"}
    with SessionStore(v1) as ss:  # each trial as the release recorded it
        trials = {r[1]: r for r in before["session_trials"][1]}
        got = ss.records("fix1")
        assert [r.trial_index for r in got] == sorted(trials)
        for r in got:
            old = trials[r.trial_index]
            assert (r.status, r.score, r.assisted, r.note, r.scored_at) == (
                old[3], old[4], bool(old[6]), old[7], old[11])
    cols, rows = after["comparisons"]
    assert cols == [*before["comparisons"][0], "result", "episode_counts", "attempt_totals",
                    "computed_at"]
    (row,) = rows
    assert row[:4] == before["comparisons"][1][0]
    assert row[4] is None and json.loads(row[5]) == {"base": 64, "cand": 64}
    with RunStore(v1) as st:  # opening again changes nothing
        pass
    assert raw(v1) == after


def _released_columns(new: str, old: str) -> str:
    """``new`` Markdown with its tables cut to the columns the release's tables had (and the
    procedure's note in the release's words, :data:`testkit.RELEASED_WORDS`)."""
    if "**Metrics**" not in old:  # the metrics section and its notes were added since
        new = re.sub(r"\*\*Metrics\*\*[^\n]*\n\n(?:\|[^\n]*\n)+\n", "", new)
        new = re.sub(r"- (?:metric\(s\) |metric differences by |primary metric\(s\) ).*\n\n",
                     "", new)
    old_headers = {line for line in old.splitlines() if line.startswith("| slice |")}
    out, keep = [], None
    for line in new.splitlines(keepends=True):
        if not line.startswith("|"):
            keep = None
            for released, now in RELEASED_WORDS.items():
                if released.startswith("procedure:"):
                    line = line.replace(now, released)
            out.append(line)
            continue
        cells = line.rstrip("\n").strip("|").split("|")
        if line.startswith("| slice |"):
            released = [c for h in old_headers for c in h.strip("|").split("|")]
            keep = [i for i, c in enumerate(cells) if c in released]
        chosen = [cells[i] for i in keep] if keep is not None else cells
        out.append("|" + "|".join(chosen) + "|\n")
    return "".join(out)


@pytest.mark.slow
def test_the_commands_work_on_it(v1: Path, capsys: pytest.CaptureFixture[str],
                                 tmp_path: Path) -> None:
    s = str(v1)
    code, out, _ = cli(capsys, "report", "base", "cand", "--md", str(tmp_path / "v1.md"),
                       "--store", s)
    assert code == 0 and "improves" in (tmp_path / "v1.md").read_text()  # read-only: computed
    assert raw(v1)["user_version"] == 1  # a read command leaves the old file as it was
    code, out, _ = cli(capsys, "show", "base", "--store", s, "--json")
    assert code == 0 and json.loads(out)["summary"]["n"] == 64
    code, out, _ = cli(capsys, "session", "show", "fix1", "--store", s, "--json")
    assert code == 0 and json.loads(out)["session_id"] == "fix1"
    code, out, _ = cli(capsys, "session", "list", "--store", s, "--json")
    assert code == 0 and [x["session_id"] for x in json.loads(out)] == ["fix1"]
    code, out, _ = cli(capsys, "prereg", "show", "--store", s, "--json")
    assert code == 0 and "plan" in out
    code, out, _ = cli(capsys, "compare", "base", "cand", "--store", s, "--json")
    old = json.loads(OLD_JSON.read_text())  # the release's compare --json on the same runs
    assert code == 0 and as_released(json.loads(out), old) == old
    with RunStore(v1, read_only=True) as st:  # compare migrated the file and stored its result
        assert st.schema_version == SCHEMA_VERSION
        (c,) = st.comparisons()  # the schema-1 row (same runs, same counts) gained the result
        assert c["comparison_id"] == raw(FIXTURE)["comparisons"][1][0][0]
        assert c["has_result"] and c["current"]
        (stored,) = st.comparison_result(c["comparison_id"]).result
    released = {k: v for k, v in old.items() if k != "peeking"}
    assert as_released(stored, released) == released  # every number
    code, out, _ = cli(capsys, "report", "base", "cand", "--md", str(tmp_path / "v2.md"),
                       "--store", s)  # renders the stored result: the release's bytes
    md = OLD_MD.read_text()  # columns added since (statistics) are cut before comparing
    md = mask_replaced(md)
    assert code == 0 and mask_replaced(_released_columns((tmp_path / "v2.md").read_text(),
                                                               md)) == md
    assert mask_replaced(_released_columns((tmp_path / "v1.md").read_text(), md)) == md


def test_a_store_newer_than_this_evalband_is_refused_in_one_line(
    v1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(v1) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    data = v1.read_bytes()
    for read_only in (True, False):
        with pytest.raises(StoreError, match="newer than this evalband understands"):
            RunStore(v1, read_only=read_only)
    code, out, err = cli(capsys, "show", "base", "--store", str(v1))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "upgrade evalband" in err
    assert v1.read_bytes() == data


def test_a_migration_that_fails_leaves_the_old_file_as_it_was(
    v1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalband.store import _schema

    before = raw(v1)

    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute('ALTER TABLE comparisons ADD COLUMN "result" TEXT')
        conn.execute("DROP TABLE session_trials")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(_schema.MIGRATIONS, 1, half_then_fail)
    expected = f"cannot migrate .* from schema version 1 to {SCHEMA_VERSION}.*left as"
    with pytest.raises(StoreError, match=expected):
        RunStore(v1)
    assert raw(v1) == before
