"""Run ids and session ids follow one rule; a bad id is one line and stores nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband._util.ids import check_name, check_run_id, safe_name
from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.session._plan import check_session_id
from evalband.store import open_store
from evalband.store._manifest import _example


@pytest.mark.parametrize("bad", ["", "a/b", "x" * 129, " lead", "-flag", "tab\there", "é"])
def test_bad_run_ids_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="run id must be 1-128"):
        check_run_id(bad)


def test_one_rule_for_runs_and_sessions() -> None:
    assert check_run_id("r" * 128) == "r" * 128
    assert check_run_id("reach1d-reach1d:damped-serial")  # ids made from policy names
    with pytest.raises(InvalidInputError):
        check_run_id(":x")
    with pytest.raises(InvalidInputError, match="session id must be 1-64"):
        check_session_id("s" * 65)
    with pytest.raises(InvalidInputError, match="session id"):
        check_session_id("a/b")
    assert check_name("grasp-1", "session id") == check_session_id("grasp-1")


def test_long_ids_are_shortened_in_messages() -> None:
    with pytest.raises(InvalidInputError) as info:
        check_run_id("x" * 5000)
    assert len(str(info.value)) < 300 and "(5000 characters)" in str(info.value)


def test_safe_name_always_gives_a_valid_id() -> None:
    for text in ("my run (v2)", "...", "ünï", "a" * 500, "-x"):
        assert check_run_id(safe_name(text, "imported")) == safe_name(text, "imported")


def test_store_refuses_a_bad_run_id(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as st:
        with pytest.raises(InvalidInputError):
            st.create_run(_example().replace(run_id="x" * 5000))
        assert st.list_runs() == []


def test_cli_a_5000_character_run_id(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    long_id = "r" * 5000
    code = main(["run", "reach1d", "-p", "reach1d:damped", "--run-id", long_id, "--store", db])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "run id must be" in err and len(err) < 300
    for command in (["show", long_id], ["compare", long_id, long_id], ["report", long_id],
                    ["noise", long_id]):
        code = main([*command, "--store", db])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (command, err)
        assert len(err) < 400
    with open_store(db, read_only=True) as st:
        assert st.list_runs() == []


def test_a_huge_reference_is_not_found_not_a_crash(tmp_path: Path) -> None:
    """The viewer answered 500: Path(5000 chars).is_dir() raises ENAMETOOLONG."""
    from evalband.errors import RunNotFoundError
    from evalband.report import render_html

    with open_store(tmp_path / "s.sqlite") as st, pytest.raises(RunNotFoundError):
        render_html(["r" * 5000], st)
