"""One resolver for run references: a stored id wins; a bundle must be written as a path.

Reproduces the report: after ``evalband export damped --out baseline``, ``show baseline``
printed the damped run's counts under the baseline's name, and ``compare baseline damped``
found no difference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband.cli import main
from evalband.errors import BundleError, RunNotFoundError
from evalband.store import open_store
from evalband.store._refs import resolve_run


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "s.sqlite")
    for policy in ("baseline", "damped"):
        assert main(["run", "reach1d", "-p", f"reach1d:{policy}", "--run-id", policy,
                     "--store", db, "--json"]) == 0
    # the trap of the report: a bundle of the damped run in a folder named like the baseline
    assert main(["export", "damped", "--out", "baseline", "--store", db]) == 0
    capsys.readouterr()
    return db


def _successes(capsys: pytest.CaptureFixture[str], ref: str, db: str) -> tuple[str, int]:
    code, out, err = run_cli(capsys, "show", ref, "--store", db, "--json")
    assert code == 0, err
    data = json.loads(out)
    return data["manifest"]["run_id"], data["summary"]["successes"]


def test_a_stored_id_wins_over_a_same_named_folder(lab: str, capsys) -> None:
    base_id, base_k = _successes(capsys, "baseline", lab)
    damped_id, damped_k = _successes(capsys, "damped", lab)
    assert (base_id, damped_id) == ("baseline", "damped")
    assert base_k != damped_k  # the two controllers differ on this panel
    # written as a path, the folder is the bundle (the damped run)
    assert _successes(capsys, "./baseline", lab) == ("damped", damped_k)
    code, out, err = run_cli(capsys, "compare", "baseline", "damped", "--store", lab, "--json")
    result = json.loads(out)
    assert (result["baseline"], result["candidate"]) == ("baseline", "damped")
    assert code == 0 and result["verdict"] == "improves", err  # not the run against itself
    with open_store(lab, read_only=True) as st:
        ref = resolve_run("baseline", st)
    assert (ref.kind, ref.run_id) == ("store", "baseline")


def test_a_bare_name_of_a_folder_only_is_an_error_naming_both(lab: str, capsys,
                                                              tmp_path: Path) -> None:
    (tmp_path / "baseline").rename(tmp_path / "old")
    code, _, err = run_cli(capsys, "show", "old", "--store", lab)
    assert code == 2 and err.count("\n") == 1
    assert "'old' is not a run in the store" in err and "./old" in err
    with open_store(lab, read_only=True) as st, pytest.raises(RunNotFoundError, match="./old"):
        resolve_run("old", st)


def test_a_path_must_be_a_bundle(lab: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with open_store(lab, read_only=True) as st:
        with pytest.raises(BundleError, match="without manifest.json"):
            resolve_run("./empty", st)
        with pytest.raises(BundleError, match="no such directory"):
            resolve_run("./nothing", st)
        assert resolve_run(tmp_path / "baseline", st).kind == "bundle"  # a Path is a path


def test_report_reads_a_bundle_path_without_a_store(lab: str, capsys, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite"
    code, _, err = run_cli(capsys, "report", "./baseline", "--store", str(missing),
                           "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    assert (tmp_path / "r.html").is_file() and not missing.exists()
    code, _, err = run_cli(capsys, "report", "baseline", "--store", str(missing))
    assert code == 2 and "./baseline" in err and "nowhere.sqlite" in err
    assert not missing.exists()
