"""Packages meet only through public names: no import of another package's private module.

A package is the first path component under ``src/evalband`` (``analysis``, ``run``, ...);
the modules directly in ``src/evalband`` (``panel.py``, ``_api.py``, ...) form the root
package. A private module is one whose name starts with ``_`` (``stats/_procedure.py``). A
module may import the private modules of its own package; another package's names come
through that package's ``__init__`` (its public API, lazy where start-up matters) or a
documented non-underscore module. Helpers that every layer shares live in ``evalband._util``,
which anyone may import and which itself imports only the standard library and
:mod:`evalband.errors`. The walk is static (:mod:`ast`), so imports inside functions and
under ``TYPE_CHECKING`` count too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "evalband"
UTIL = "_util"

# (importing file, imported module) -> the reason it may cross. Keep it empty.
ALLOWED: dict[tuple[str, str], str] = {}


def _module_of(path: Path) -> tuple[list[str], bool]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        return parts[:-1], True
    return parts, False


def _package(path: Path) -> str:
    """The first path component under ``src/evalband``; ``""`` for the root package."""
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else ""


def _is_module(dotted: list[str]) -> bool:
    base = SRC.joinpath(*dotted)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def imports(path: Path) -> Iterator[tuple[int, list[str], str | None]]:
    """``(line, module path, imported name or None)`` for each import in ``path``."""
    module, is_package = _module_of(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split("."), None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module if is_package else module[:-1]
                base = base[: len(base) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            for alias in node.names:
                yield node.lineno, target, alias.name


def crossings(path: Path) -> Iterator[tuple[str, int, str]]:
    """``(file, line, what)`` for each import in ``path`` of another package's private
    module or private name."""
    own = _package(path)
    for line, target, name in imports(path):
        if target[0] != "evalband":
            continue
        if name is not None and _is_module([*target, name]):
            target, name = [*target, name], None  # ``from evalband.pkg import _module``
        inner = target[1:]
        if inner[:1] == [UTIL]:
            continue
        where = next((i for i, part in enumerate(inner) if _private(part)), None)
        owner = "" if where == 0 or not inner else inner[0]
        file, dotted = str(path.relative_to(ROOT)), ".".join(target)
        if where is not None and owner != own:
            yield file, line, dotted
        elif name is not None and _private(name) and (inner[0] if inner else "") != own:
            yield file, line, f"{dotted}.{name}"


def _files() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_no_package_imports_another_packages_private_module() -> None:
    found = [c for path in _files() for c in crossings(path)]
    unexplained = [f"{file}:{line}: {what}" for file, line, what in found
                   if (file, what) not in ALLOWED]
    assert not unexplained, "import through the package's public API instead:\n" + "\n".join(
        unexplained)
    stale = set(ALLOWED) - {(file, what) for file, _, what in found}
    assert not stale, f"allowed crossings that no longer occur: {sorted(stale)}"


def test_the_shared_helpers_import_no_layer() -> None:
    for path in sorted((ROOT / UTIL).rglob("*.py")):
        for line, target, _ in imports(path):
            if target[0] == "evalband":
                assert target[1] in (UTIL, "errors"), f"{path}:{line}: {'.'.join(target)}"


@pytest.mark.parametrize(("source", "expected"), [
    ("from evalband.stats._tests import mcnemar\n", ["evalband.stats._tests"]),
    ("import evalband.envs._coin\n", ["evalband.envs._coin"]),
    ("from evalband.stats import _tests\n", ["evalband.stats._tests"]),
    ("from evalband.run import _hidden\n", ["evalband.run._hidden"]),
    ("from evalband.analysis import _own\n", []),  # its own package's private name
    ("from evalband._api import load_run\n", ["evalband._api"]),
    ("def f():\n    from ..stats._tests import mcnemar\n", ["evalband.stats._tests"]),
    ("from evalband.stats import mcnemar\n", []),
    ("from evalband._util.validate import as_count\n", []),
    ("from evalband.analysis._compare import compare_many\n", []),  # its own package
    ("from ._compare import compare_many\n", []),
])
def test_the_walk_sees_each_kind_of_crossing(monkeypatch: pytest.MonkeyPatch, source: str,
                                             expected: list[str]) -> None:
    """The checker itself: each spelling of a crossing is found, public imports are not."""
    fake = ROOT / "analysis" / "_layering_probe.py"  # never written: only parsed
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    found = [what for _, _, what in crossings(fake)]
    assert found == expected
