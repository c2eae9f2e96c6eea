"""The short path (:mod:`evalband.cli._fast`) against the real typer: same help, same bytes
out, same exit codes, and every line it does not understand left to typer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evalband.cli import _fast, main
from evalband.cli._app import app, run


def _typer_help(columns: int, monkeypatch: pytest.MonkeyPatch, capsys) -> str:
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda *a, **k: os.terminal_size((columns, 24)))
    assert run(["--help"]) == 0
    return str(capsys.readouterr().out)


@pytest.mark.parametrize("columns", [20, 50, 52, 61, 67, 70, 79, 80, 81, 200])
def test_top_help_is_typers_at_every_width(columns: int, monkeypatch: pytest.MonkeyPatch,
                                           capsys) -> None:
    expected = _typer_help(columns, monkeypatch, capsys)
    assert "Commands:" in expected and "  ci " in expected
    assert _fast.top_help(columns) == expected
    assert main(["--help"]) == 0  # the short path reads the same terminal width
    assert capsys.readouterr().out == expected


def test_command_table_is_the_apps() -> None:
    import typer.main

    group = typer.main.get_command(app)
    ctx = typer.main._click.Context(group, info_name="evalband")  # type: ignore[attr-defined]
    names = group.list_commands(ctx)
    helps = [" ".join((group.get_command(ctx, name).help or "").split("\n\n")[0].split())
             for name in names]
    assert list(_fast.COMMANDS) == list(zip(names, helps, strict=True))
    assert app.info.help == _fast.APP_HELP


PLAIN = [
    ["ci", "8", "20"], ["ci", "0", "20"], ["ci", "20", "20", "--json"],
    ["ci", "8", "20", "-m", "wald"], ["ci", "0", "9", "--method", "wald"],
    ["ci", "8", "20", "--method=clopper-pearson", "--confidence", "0.9"],
    ["ci", "8.0", "20", "-c", "0.99", "--json"], ["ci", "0", "0", "--allow-empty"],
    ["ci", "30", "20"], ["ci", "8", "20", "-m", "nope"], ["ci", "8", "20", "-c", "1.5"],
    ["ci", "8", "20", "-c", "0.937"], ["ci", "8", "20", "--json", "--json"],
    ["ci", "--json", "8", "20", "-c", "0.8", "-c", "0.9"],
    ["diff", "8/20", "12/20"], ["diff", "8/20", "12/20", "--json"],
    ["diff", "0/5", "5/5", "-c", "0.9"], ["diff", "8/20"], ["diff", "8/20", "x/20"],
    ["diff", "8/20", "12/20", "-m", "tango"], ["diff", "30/20", "1/2"],
    ["diff", "--paired", "10", "3", "8", "20"], ["diff", "--paired", "10", "3", "8", "20",
                                                 "--json", "-m", "tango"],
    ["diff", "--paired", "10", "0", "0", "5"], ["diff", "--paired", "1", "2", "3"],
    ["diff", "--paired", "1", "2.5", "3", "4"],
    ["power", "--p-a", "0.6", "--p-b", "0.4"], ["power", "--p-a", "0.6", "--p-b", "0.4", "--json"],
    ["power", "--p-a", "0.9", "--p-b", "0.8", "--n", "100", "--power", "0.9", "--alpha", "0.1"],
    ["power", "--p-a=0.5", "--p-b=0.6", "--paired", "--discordant", "0.3", "--slices", "3"],
    ["power", "--p-a", "0.5", "--p-b", "0.6", "--paired"],
    ["power", "--p-a", "0.5", "--p-b", "0.5", "--n", "50", "--direction", "either"],
    ["power", "--p-a", "0.5", "--p-b", "0.6", "--test", "bogus"],
    ["power", "--p-a", "0.5", "--p-b", "0.6", "--comparisons", "0"],
    ["power", "--p-a", "1.5", "--p-b", "0.6"],
]


@pytest.mark.parametrize("args", PLAIN, ids=[" ".join(a) for a in PLAIN])
def test_a_plain_line_answers_as_through_typer(args: list[str], capsys,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fast.parse(args[0], args[1:]) is not None  # the short path takes it
    fast = main(args), *capsys.readouterr()
    monkeypatch.setattr(_fast, "parse", lambda *a: None)  # every line to typer
    assert (main(args), *capsys.readouterr()) == fast
    if fast[0] != 0:  # bad values: one line on stderr
        assert fast[0] == 2 and fast[2].startswith("error: ") and fast[2].count("\n") == 1


OTHER = [
    [], ["--version"], ["-h"], ["runs"], ["ci"], ["ci", "8"], ["ci", "8", "20", "30"],
    ["ci", "8", "20", "--help"], ["ci", "-1", "20"], ["ci", "8", "x"], ["ci", "1_0", "20"],
    ["ci", "8", "20", "--bogus"], ["ci", "8", "20", "-c"], ["ci", "8", "20", "-c0.9"],
    ["ci", "8", "20", "--json=1"], ["ci", "8", "20", "-c", "-0.9"], ["ci", "8", "20", "--"],
    ["ci", "inf", "20"], ["diff"], ["diff", "--paired"], ["power", "--p-a", "0.6"],
    ["power", "--p-a", "0.6", "--p-b", "0.4", "--n", "12.0"], ["power", "--help"],
    ["power", "--p-a", "0.6", "--p-b", "0.4", "--direction", "--json"],
]


@pytest.mark.parametrize("args", OTHER, ids=[" ".join(a) or "empty" for a in OTHER])
def test_any_other_line_is_left_to_typer(args: list[str], capsys) -> None:
    assert _fast.dispatch(args) is None
    assert capsys.readouterr().out == ""


def test_shell_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_EVALBAND_COMPLETE", "bash_complete")
    assert _fast.dispatch(["--help"]) is None


def test_each_command_is_registered_by_its_owner_module() -> None:
    import importlib

    import typer

    from evalband.cli._app import OWNERS, _command_name

    whole = [_command_name(info) for info in app.registered_commands]
    assert sorted(whole) == sorted(OWNERS)
    for name, owner in OWNERS.items():
        scratch = typer.Typer()
        importlib.import_module(f"evalband.cli.{owner}").register(scratch)
        assert name in [_command_name(info) for info in scratch.registered_commands]


def test_a_command_line_imports_only_its_own_command_module() -> None:
    import subprocess
    import sys

    code = ("import sys, contextlib, io\nfrom evalband.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['ci', '8', '20', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('evalband.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert "evalband.cli._stats'" in loaded
    assert "_runs" not in loaded and "_session" not in loaded and "_report" not in loaded


def test_a_process_run_starts_its_workers_before_typer(monkeypatch: pytest.MonkeyPatch) -> None:

    calls: list[tuple[object, ...]] = []  # the CLI takes it from the package's public API
    monkeypatch.setattr("evalband.run._pool.prestart", lambda *a, **k: calls.append(a))
    line = ["run", "p.yaml", "-p", "x", "--backend", "process", "--workers=3"]
    assert _fast.start_workers_early(line) and calls == [(3, ["evalband.run._execute"])]
    assert _fast.dispatch(["run", "p.yaml", "-b=process"]) is None  # typer runs the command
    assert calls[-1] == (1, ["evalband.run._execute"])
    for other in (["run", "p.yaml"], ["run", "p.yaml", "-b", "ray"], ["runs", "-b", "process"],
                  ["run", "p.yaml", "-b", "process", "-w", "0"],
                  ["run", "p.yaml", "-b", "process", "--help"]):
        assert not _fast.start_workers_early(other)
    assert len(calls) == 2


def test_a_process_run_from_the_command_line_plays_the_serial_runs_episodes(tmp_path) -> None:
    """The workers started before typer (``start_workers_early``) play the same episodes."""
    import sqlite3

    from evalband.run import _pool

    panel = tmp_path / "coin.yaml"
    panel.write_text("name: coin\nenv: evalband/Coin-v0\nenv_kwargs: {length: 2}\nepisodes: 12\n"
                     "seed: 3\nbudget: {steps: 5}\nfactors: {p: [0.2, 0.8]}\n")
    db = str(tmp_path / "s.sqlite")
    zero = "evalband.policies._builtin:zero_action"
    try:
        for run_id, extra in (("serial", []), ("proc", ["--backend", "process", "-w", "2"])):
            assert main(["run", str(panel), "-p", zero, "--run-id", run_id, "--json",
                         "--store", db, *extra]) == 0
    finally:
        _pool.close_pools()
    with sqlite3.connect(db) as con:
        rows = {run_id: con.execute(
            "select cell, episode, repeat, outcome, steps from episodes where run_id = ? "
            "order by cell, episode, repeat", (run_id,)).fetchall()
            for run_id in ("serial", "proc")}
    assert len(rows["serial"]) == 24 and rows["serial"] == rows["proc"]


# ------------------------------------------------------------------ evalband run, plain lines

COIN = ("name: coin\nenv: evalband/Coin-v0\nenv_kwargs: {length: 2}\nepisodes: 6\nseed: 3\n"
        "budget: {steps: 5}\nfactors: {p: [0.2, 0.8]}\n")
ZERO = "evalband.policies._builtin:zero_action"
RUN_PLAIN = [
    [], ["--json"], ["--batch", "3", "--json"], ["-b", "serial", "-w", "1"],
    ["--errors-as-failures"], ["--backend=serial", "--batch=2", "--json"],
]


@pytest.mark.parametrize("extra", RUN_PLAIN, ids=[" ".join(a) or "text" for a in RUN_PLAIN])
def test_a_plain_run_line_answers_as_through_typer(extra: list[str], tmp_path, capsys,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Same bytes out, same exit code and the same stored episodes, without typer."""
    from evalband.store import open_store

    panel = tmp_path / "coin.yaml"
    panel.write_text(COIN)
    out = {}
    for path in ("fast", "typer"):
        args = ["run", str(panel), "-p", ZERO, "--run-id", "r", "--store",
                str(tmp_path / f"{path}.sqlite"), *extra]
        if path == "fast":
            assert _fast.parse("run", args[1:]) is not None  # the short path takes it
        else:
            monkeypatch.setattr(_fast, "parse", lambda *a: None)  # every line to typer
        out[path] = main(args), *capsys.readouterr()
        with open_store(tmp_path / f"{path}.sqlite") as store:
            out[path] += (sorted((r.key, r.outcome.value, r.steps, r.condition_seed)
                                 for r in store.episode_records("r")),
                          store.require_run("r").errors_as_failures)
    assert out["fast"] == out["typer"]
    assert out["fast"][0] == 0 and len(out["fast"][3]) == 12


RUN_OTHER = [
    ["p.yaml"], ["-p", "x"], ["p.yaml", "-p", "x", "-w", "0"],
    ["p.yaml", "-p", "x", "--batch", "0"],
    ["p.yaml", "-p", "x", "--until-decided", "--against", "b"], ["p.yaml", "-p", "x", "--help"],
    ["p.yaml", "-p", "x", "--record", "all"], ["p.yaml", "-p", "x", "--report", "r.html"],
    ["p.yaml", "-p", "x", "--store", ""], ["p.yaml", "-p", "x", "-w", "2.0"],
    ["p.yaml", "-p=x"], ["p.yaml", "q.yaml", "-p", "x"], ["p.yaml", "-p", "x", "--address", "a"],
]


@pytest.mark.parametrize("args", RUN_OTHER, ids=[" ".join(a) for a in RUN_OTHER])
def test_any_other_run_line_is_left_to_typer(args: list[str]) -> None:
    assert _fast.parse("run", args) is None


def test_a_plain_run_line_does_not_import_typer(tmp_path) -> None:
    import subprocess
    import sys

    panel = tmp_path / "coin.yaml"
    panel.write_text(COIN)
    args = ["run", str(panel), "-p", ZERO, "--json", "--store", str(tmp_path / "s.sqlite")]
    code = ("import sys, contextlib, io\nfrom evalband.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({args!r}) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click') "
            "or m.startswith('evalband.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert "evalband.cli._run_cmd'" in loaded
    assert "typer" not in loaded and "_runs'" not in loaded and "_app'" not in loaded


def test_a_process_run_names_its_env_and_policy_modules_for_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forkserver imports the panel's env (MuJoCo) and policy modules while the command
    loads, and a later, smaller preload request (the run command's own) does not undo it."""
    from evalband.run import _pool

    panel = tmp_path / "p.yaml"
    panel.write_text("name: p\nenv: evalband/PushT-v0\nimports: [json]\nepisodes: 2\n"
                     "budget: {steps: 5}\n")
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr("evalband.run._pool.prestart", lambda *a, **k: calls.append(a))
    assert _fast.start_workers_early(["run", str(panel), "-p", "pusht:expert", "-b", "process"])
    assert calls == [(1, ["evalband.run._execute", "json", "evalband.envs.pusht",
                          "evalband.policies.pusht"])]
    # what the run itself asks for, from the loaded panel, is the same list
    from evalband.panel import load_panel
    from evalband.run._backends import worker_modules
    from evalband.run._execute import RunTask

    loaded = load_panel(str(panel))
    task = RunTask(run_id="r", policy="pusht:expert", panel_fingerprint="f", env=loaded.env,
                   imports=tuple(loaded.imports))
    assert worker_modules(task) == calls[0][1]

    from multiprocessing import forkserver

    monkeypatch.setattr(_pool, "_PRELOAD", [])
    monkeypatch.setattr(forkserver._forkserver, "_preload_modules",
                        forkserver._forkserver._preload_modules)
    context = _pool.forkserver_context(["a", "b"])
    _pool.forkserver_context(["a"])  # asks for less: keeps what was asked before
    assert forkserver._forkserver._preload_modules == ["__main__", "a", "b"]
    assert context.get_start_method() == "forkserver"
