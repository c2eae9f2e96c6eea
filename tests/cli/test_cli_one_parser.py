"""One command-line parser (typer's, on click) and the interpreter's normal exit: the
short-cuts removed in issue 32 (a second hand-written parser, ``os._exit``) stay removed."""

from __future__ import annotations

import re
from pathlib import Path

import evalband.cli

CLI = Path(evalband.cli.__file__).parent
SOURCES = sorted(CLI.glob("*.py"))

#: What a way around the normal exit, or a parser of the command line besides typer's,
#: would be written with.
FORBIDDEN = {
    "os._exit": re.compile(r"\bos\._exit\b|\bfrom os import[^\n]*\b_exit\b"),
    "atexit run by hand": re.compile(r"atexit\._run_exitfuncs"),
    "threading's private shutdown": re.compile(r"threading\._shutdown|[\"']_shutdown[\"']"),
    "another parser": re.compile(r"\b(?:argparse|getopt|optparse)\b"),
    "options read by hand": re.compile(r"startswith\([\"']-|[\"']--help[\"'] in\b"
                                       r"|==\s*\[[\"']--help[\"']\]"),
    "the short path's module": re.compile(r"\b_fast\b"),
}


def test_the_cli_package_is_where_the_guard_looks() -> None:
    assert len(SOURCES) > 20 and CLI / "_app.py" in SOURCES


def test_no_second_parser_module() -> None:
    assert not (CLI / "_fast.py").exists()


def test_no_os_exit_and_no_parser_besides_typers() -> None:
    found = [f"{path.name}:{n}: {what}"
             for path in SOURCES
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for what, pattern in FORBIDDEN.items() if pattern.search(line)]
    assert found == []


def test_the_guard_would_see_them() -> None:
    lines = ["    os._exit(code)", "atexit._run_exitfuncs()", "from evalband.cli._fast import x",
             "import argparse", "getattr(threading, '_shutdown')",
             "if token.startswith('-'):", 'if "--help" in args:', 'if list(args) == ["--help"]:']
    for line in lines:
        assert any(p.search(line) for p in FORBIDDEN.values()), line
