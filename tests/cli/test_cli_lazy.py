"""The lazy group (:mod:`evalband.cli._app`): the same help, commands and errors as an app
that registers every command up front, while a command line imports only its own module."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main

from evalband.cli import main
from evalband.cli._app import COMMANDS, load_command, new_app


def _eager_app() -> typer.Typer:
    """Every command registered up front (what typer would build without the lazy group)."""
    app = new_app()
    for spec in dict.fromkeys(owner for _, owner, _ in COMMANDS):
        module, function = spec.split(":")
        getattr(importlib.import_module(f"evalband.cli.{module}"), function)(app)
    return app


def _help(args: list[str], app: typer.Typer | None, columns: int,
          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda *a, **k: os.terminal_size((columns, 24)))
    if app is None:
        assert main(args) == 0
    else:
        with pytest.raises(SystemExit) as done:
            app(args=args, prog_name="evalband")
        assert done.value.code == 0
    return str(capsys.readouterr().out)


@pytest.mark.parametrize("columns", [20, 50, 52, 61, 67, 70, 79, 80, 81, 200])
def test_top_help_is_the_eager_apps_at_every_width(columns: int,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    expected = _help(["--help"], _eager_app(), columns, monkeypatch, capsys)
    assert "Commands:" in expected and "  ci " in expected
    assert _help(["--help"], None, columns, monkeypatch, capsys) == expected


def test_command_table_is_the_commands_own_help() -> None:
    group = typer.main.get_command(_eager_app())
    assert isinstance(group, typer.core.TyperGroup)
    ctx = typer.main._click.Context(group, info_name="evalband")  # type: ignore[attr-defined]
    names = group.list_commands(ctx)
    helps = [" ".join((group.get_command(ctx, name).help or "").split("\n\n")[0].split())
             for name in names]
    assert [(name, text) for name, _, text in COMMANDS] == list(zip(names, helps, strict=True))


@pytest.mark.parametrize("name", [name for name, _, _ in COMMANDS])
def test_each_command_loads_as_the_eager_app_builds_it(name: str) -> None:
    eager = typer.main.get_command(_eager_app())
    assert isinstance(eager, typer.core.TyperGroup)
    lazy = load_command(name)
    expected = eager.commands[name]
    assert (lazy.name, type(lazy), lazy.help) == (expected.name, type(expected), expected.help)
    assert [p.opts for p in lazy.params] == [p.opts for p in expected.params]


@pytest.mark.parametrize("args", [["ci", "8", "20", "--help"], ["ci", "8", "20"],
                                  ["compar"], ["--help"]])
def test_a_command_line_imports_only_its_own_command_module(args: list[str]) -> None:
    code = ("import sys, contextlib, io\nfrom evalband.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), "
            "contextlib.redirect_stderr(io.StringIO()):\n"
            f"    main({args!r})\n"
            "print(sorted(m for m in sys.modules if m.startswith('evalband.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert ("evalband.cli._stats'" in loaded) == (args[0] == "ci")
    for other in ("_runs", "_session", "_report", "_compare", "_scorers", "_prefer"):
        assert f"evalband.cli.{other}'" not in loaded, loaded


BAD = [
    ["ci", "30", "20"], ["ci", "8", "20", "-m", "nope"], ["ci", "8", "20", "-c", "1.5"],
    ["diff", "8/20"], ["diff", "8/20", "x/20"], ["diff", "8/20", "12/20", "-m", "tango"],
    ["diff", "--paired", "1", "2", "3"], ["power", "--p-a", "1.5", "--p-b", "0.6"],
    ["power", "--p-a", "0.5", "--p-b", "0.6", "--comparisons", "0"], ["ci", "8", "x"],
    ["ci", "8", "20", "--bogus"], ["compar"], ["power", "--p-a", "0.6"], [],
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) or "empty" for a in BAD])
def test_bad_input_is_one_line_and_exit_2(args: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1


def test_a_process_run_from_the_command_line_plays_the_serial_runs_episodes(
        tmp_path: Path) -> None:
    """The workers (started before the panel loads) play the same episodes."""
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


def test_a_process_run_names_its_env_and_policy_modules_for_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run command asks for its workers, with the panel's env (MuJoCo) and policy
    modules for the forkserver, before it loads the panel; a later, smaller preload
    request (the runner's own) does not undo it."""
    from evalband.run import _pool

    panel = tmp_path / "p.yaml"
    panel.write_text("name: p\nenv: evalband/PushT-v0\nimports: [json]\nepisodes: 2\n"
                     "budget: {steps: 5}\n")
    calls: list[tuple[object, ...]] = []

    def prestart(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise LookupError("stop here: the workers were asked for first")

    monkeypatch.setattr("evalband.run._pool.prestart", prestart)
    with pytest.raises(LookupError):
        main(["run", str(panel), "-p", "pusht:expert", "-b", "process", "-w", "3"])
    assert calls == [(3, ["evalband.run._execute", "json", "evalband.envs.pusht",
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
