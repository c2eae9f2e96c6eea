"""No code generated at run time and no CPython-private exit in ``src/`` (issue 32 item 5).

The core types are plain dataclasses and functions: nothing in ``src/`` calls ``exec`` (or
``compile`` in ``"exec"`` mode), and the process ends through the normal interpreter exit,
never ``os._exit``. Both are checked twice: the literal text (``exec(`` / ``os._exit``, as a
reviewer would grep, docstrings included) and the syntax tree (``builtins.exec(...)``,
``compile(..., "exec")``, ``from os import _exit``). Files not cleaned up yet are listed in
``EXCEPTIONS`` by path with what is left; shrink it, never grow it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# "path under src" -> what is left there. The command-line engineer removes these (issue 32
# item 5, cli/): the coordinator deletes each line when that work is merged.
EXCEPTIONS: dict[str, str] = {}

_TEXTS = ("exec(", "os._exit")


def _is_banned_call(node: ast.AST) -> str | None:
    """What a node does that is banned (``None``: nothing)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
        if name == "exec":
            return "exec()"
        if name == "compile" and any(isinstance(a, ast.Constant) and a.value == "exec"
                                     for a in [*node.args, *(k.value for k in node.keywords)]):
            return "compile(..., 'exec')"
    if isinstance(node, ast.Attribute) and node.attr == "_exit":
        return "os._exit"
    if isinstance(node, ast.ImportFrom) and node.module == "os" and any(
            alias.name == "_exit" for alias in node.names):
        return "from os import _exit"
    return None


@functools.cache
def _findings() -> dict[str, list[str]]:
    """Path under ``src`` -> the banned things found in it (files with none left out)."""
    out: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found = [f"text {t!r}" for t in _TEXTS if t in text]
        if "exec" not in text and "_exit" not in text:
            continue  # every banned spelling holds one of them: nothing to parse
        for node in ast.walk(ast.parse(text)):
            what = _is_banned_call(node)
            if what is not None:
                found.append(f"{what} at line {getattr(node, 'lineno', '?')}")
        if found:
            out[path.relative_to(SRC).as_posix()] = found
    return out


def test_no_exec_or_private_exit_outside_the_listed_files() -> None:
    found = {k: v for k, v in _findings().items() if k not in EXCEPTIONS}
    assert not found, f"exec / compile-exec / os._exit in src (use plain code): {found}"


def test_the_listed_exceptions_are_still_needed() -> None:
    stale = sorted(k for k in EXCEPTIONS if k not in _findings())
    assert not stale, f"these files are clean now: remove them from EXCEPTIONS: {stale}"


def test_the_checks_see_what_they_ban() -> None:
    """The checker is no look-alike: each banned spelling in a sample is found."""
    sample = ("import os, builtins\nfrom os import _exit\nexec('x = 1')\n"
              "builtins.exec('y = 2')\ncompile('z', '<s>', 'exec')\nos._exit(0)\n"
              "compile('a', '<s>', mode='exec')\n")
    found = [w for node in ast.walk(ast.parse(sample)) if (w := _is_banned_call(node))]
    assert sorted(found) == sorted(["from os import _exit", "exec()", "exec()",
                                    "compile(..., 'exec')", "os._exit",
                                    "compile(..., 'exec')"])
    assert _is_banned_call(ast.parse("re.compile('x')").body[0].value) is None  # type: ignore[attr-defined]
