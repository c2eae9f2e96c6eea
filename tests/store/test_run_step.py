"""A run's checkpoint ``step``: stored with the run (schema 4), given by ``run --step``/``step=``.

``store-v3.sqlite`` was written by the release with schema 3 (``fixtures/make_store_v3.py``):
a read-only open reads its runs with no step, a writable open migrates it, keeping every row.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.errors import InvalidInputError, StoreError
from evalband.run import Recorder, run_panel
from evalband.store import RunStore
from evalband.store._bundle import export_bundle, load_bundle
from evalband.store._schema import SCHEMA_VERSION
from testkit import coin_panel

FIXTURE = Path(__file__).parent / "fixtures" / "store-v3.sqlite"
ZERO = "evalband.policies._builtin:zero_action"


def rows(path: Path, table: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Columns and rows of a table, read with sqlite3 itself (not evalband)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]
        return cols, sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    finally:
        conn.close()


@pytest.fixture
def v3(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copy(FIXTURE, path)
    return path


def test_a_schema_3_store_reads_without_a_step_and_migrates_keeping_every_row(v3: Path) -> None:
    data = v3.read_bytes()
    cols, before = rows(v3, "runs")
    assert "step" not in cols and len(before) == 4  # two runs, a session's two
    with RunStore(v3, read_only=True) as st:
        assert st.schema_version == 3
        assert {m.run_id: m.step for m in st.list_runs()} == dict.fromkeys(
            ("base", "cand", "fix3:A", "fix3:B"))
        assert st.require_run("base").policy == "reach1d:baseline"
    assert v3.read_bytes() == data  # a read leaves it as it was
    episodes = rows(v3, "episodes")
    with RunStore(v3) as st:
        assert st.schema_version == SCHEMA_VERSION
        assert st.require_run("cand").step is None
        st.update_run("cand", step=1500)
    cols_after, after = rows(v3, "runs")
    assert cols_after == [*cols, "step"]
    assert {r[:-1] for r in after} == set(before)  # every value of every run kept
    assert {r[0]: r[-1] for r in after} == {"base": None, "cand": 1500, "fix3:A": None,
                                            "fix3:B": None}
    assert rows(v3, "episodes") == episodes


def test_run_panel_stores_the_step_and_a_resume_at_another_step_is_refused(
    tmp_path: Path,
) -> None:
    panel = coin_panel(episodes=3)
    with RunStore(tmp_path / "s.sqlite") as st:
        run_panel(panel, ZERO, st, run_id="ck", step=2000)
        assert st.require_run("ck").step == 2000
        run_panel(panel, ZERO, st, run_id="ck", step=2000)  # the same step resumes
        run_panel(panel, ZERO, st, run_id="ck")  # no step given: the recorded one stays
        assert st.require_run("ck").step == 2000
        with pytest.raises(StoreError, match="recorded at checkpoint step 2000, not 3000"):
            run_panel(panel, ZERO, st, run_id="ck", step=3000)
        run_panel(panel, ZERO, st, run_id="plain")
        assert st.require_run("plain").step is None
        run_panel(panel, ZERO, st, run_id="plain", step=7)  # a run without one gains it
        assert st.require_run("plain").step == 7
        for bad in (-1, True, 2.5, "10"):
            with pytest.raises(InvalidInputError, match="step must be a whole number"):
                run_panel(panel, ZERO, st, run_id="bad", step=bad)  # type: ignore[arg-type]
        assert st.get_run("bad") is None  # refused before a run was created
        with Recorder(st, panel, "arm", run_id="rec", step=40) as rec:
            rec.log(cell=panel.cells()[0].key, episode=0, outcome="success", steps=1)
        assert st.require_run("rec").step == 40
        bundle = export_bundle(st, "ck", tmp_path / "ck-bundle")
    assert load_bundle(bundle)[0].step == 2000  # the bundle's manifest carries it


def test_the_command_line_takes_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "s.sqlite")
    panel = tmp_path / "coin.yaml"
    panel.write_text(coin_panel(episodes=2).to_yaml())
    # the plain line (cli/_fast) and typer's (--report makes typer parse it) both take it
    assert main(["run", str(panel), "-p", ZERO, "--run-id", "a", "--step", "100",
                 "--store", store, "--json"]) == 0
    assert main(["run", str(panel), "-p", ZERO, "--run-id", "b", "--step", "200",
                 "--store", store, "--json", "--report", str(tmp_path / "b.html")]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", store, "--json"]) == 0
    steps = {r["run_id"]: r["step"] for r in json.loads(capsys.readouterr().out)}
    assert steps == {"a": 100, "b": 200}
    assert main(["run", str(panel), "-p", ZERO, "--run-id", "a", "--step", "300",
                 "--store", store]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "recorded at checkpoint step 100" in err
    for bad in ("-1", "x"):
        assert main(["run", str(panel), "-p", ZERO, "--run-id", "c", "--step", bad,
                     "--store", store]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--step" in err
