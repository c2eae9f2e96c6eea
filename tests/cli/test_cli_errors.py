"""Library errors speak the library's words; the command line shows its flags."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from evalband._util.validate import check_k_n
from evalband.cli import main
from evalband.cli._errors import error_line, flag_for
from evalband.errors import BundleError, EvalbandError, InvalidCountsError

SRC = Path(__file__).resolve().parents[2] / "src" / "evalband"


def test_flag_for_names_and_exceptions() -> None:
    assert flag_for("allow_empty") == "--allow-empty"
    assert flag_for("batch_size") == "--batch"


def test_error_line_maps_only_named_parameters() -> None:
    err = EvalbandError("`on` must name a policy; got none; on the other hand")
    assert error_line(err) == "`on` must name a policy; got none; on the other hand"
    err = EvalbandError("`on` must name a policy; on the other hand", parameters=("on",))
    assert error_line(err) == "--on must name a policy; on the other hand"
    err = BundleError("x is not empty; pass `overwrite=True` to replace it, not overwrite",
                      parameters=("overwrite",))
    assert error_line(err) == "x is not empty; pass --overwrite to replace it, not overwrite"
    assert error_line(EvalbandError("first\nsecond")) == "first"
    assert error_line(EvalbandError()) == "EvalbandError"


def test_library_message_in_python_words_cli_in_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidCountsError) as info:
        check_k_n(0, 0)
    assert "allow_empty=True" in str(info.value) and "--" not in str(info.value)
    assert "--allow-empty" in error_line(info.value)
    assert main(["ci", "0", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")


def _raised_messages() -> list[tuple[str, int, str]]:
    """Literal text of every ``raise SomethingError(...)`` outside the CLI package."""
    found = []
    for path in SRC.rglob("*.py"):
        if "cli" in path.relative_to(SRC).parts:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            for arg in node.exc.args[:1]:
                parts = [c.value for c in ast.walk(arg)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                found.append((str(path.relative_to(SRC)), node.lineno, "".join(parts)))
    return found


def test_library_errors_do_not_speak_cli_flags() -> None:
    """Flags outside backticks (a command quoted in full, `ray start --head`, is fine)."""
    flag = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
    offenders = [f"{p}:{line}: {text[:80]}" for p, line, text in _raised_messages()
                 if flag.search(re.sub(r"`[^`]*`", "", text))]
    assert offenders == []
