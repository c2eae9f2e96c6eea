"""``run --help`` and ``serve --help`` name every policy kind; the docs' ``diff``/``ci``
examples, and the README's ``make run`` (``lab reach1d``), show what the command really prints
(issue 33, item 14; issue 32, item 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalband.cli import main

ROOT = Path(__file__).resolve().parents[2]
_EXAMPLE = re.compile(r"```text\n\$ evalband ((?:diff|ci|lab reach1d)[^\n]*)\n(.*?)```", re.S)


@pytest.mark.parametrize("command", ["run", "serve"])
def test_help_names_lerobot_checkpoints(command: str, capsys) -> None:
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "lerobot:PATH" in out


def test_documented_examples_print_what_they_show(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # `lab reach1d` (the README's `make run`) writes ./evalband-runs
    examples = [(doc, m.group(1), m.group(2)) for doc in [ROOT / "README.md",
                                                            *sorted((ROOT / "docs").glob("*.md"))]
                for m in _EXAMPLE.finditer(doc.read_text())]
    for doc, args, shown in examples:
        assert main(args.split()) == 0
        assert capsys.readouterr().out == shown, f"{doc.name}: evalband {args}"
    assert any(args == "lab reach1d" for doc, args, _ in examples if doc.name == "README.md")
