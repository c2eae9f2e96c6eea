"""Packages meet through exported names: never another package's private name.

A package is the first path component under ``src/evalband`` (``analysis``, ``run``, ...);
the modules directly in ``src/evalband`` (``panel.py``, ``_api.py``, ...) form the root
package. A package's facade (its ``__init__``) holds the few names users call; inside the
project a module imports another package's names from the module that defines them, private
(``evalband.stats._tests``) or not, as inspect_ai does. What crosses a package line must be
exported by that module: listed in its ``__all__`` and not private (``_name``). A module may
import anything of its own package. Helpers that every layer shares live in ``evalband._util``,
which itself imports only the standard library and :mod:`evalband.errors`. The walk is
static (:mod:`ast`), so imports inside functions and under ``TYPE_CHECKING`` count too.

Imports also point down only: the layer table in ``docs/architecture.md`` ("The layers") gives
each package, and each module directly in ``src/evalband``, a layer number, and a module may
import only what sits in a lower layer. The table is read from the page, so the page is what
is enforced: a package missing from it, or an import that points up or sideways, fails.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "evalband"
UTIL = "_util"
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"

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


@functools.cache
def exported(dotted: str) -> frozenset[str] | None:
    """The ``__all__`` of module ``dotted`` read statically (a facade's ``[*_LAZY]`` too);
    ``None`` when the module has none."""
    base = SRC.joinpath(*dotted.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    with path.open(encoding="utf-8") as file:  # not read_text: the checker's test replaces it
        tree = ast.parse(file.read())
    lazy: list[str] = []
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)):
            lazy = [str(ast.literal_eval(k)) for k in node.value.keys if k is not None]
    for node in tree.body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        if (isinstance(target, ast.Name) and target.id == "__all__"
                and isinstance(node.value, (ast.List, ast.Tuple))):
            names: set[str] = set()
            for elt in node.value.elts:
                if isinstance(elt, ast.Starred):
                    names.update(lazy)
                else:
                    names.add(str(ast.literal_eval(elt)))
            return frozenset(names)
    return None


def crossings(path: Path) -> Iterator[tuple[str, int, str]]:
    """``(file, line, what)`` for each import in ``path`` of another package's private name,
    or of a name that the module it comes from does not export (its ``__all__``)."""
    own = _package(path)
    for line, target, name in imports(path):
        if target[0] != "evalband":
            continue
        if name is not None and _is_module([*target, name]):
            target, name = [*target, name], None  # ``from evalband.pkg import _module``
        inner = target[1:]
        if inner[:1] == [UTIL] or name is None or not _is_module(target):
            continue
        owner = inner[0] if inner and (ROOT / inner[0]).is_dir() else ""
        if owner == own:
            continue
        file, dotted = str(path.relative_to(ROOT)), ".".join(target)
        exports = exported(dotted)
        if _private(name) or exports is None or name not in exports:
            yield file, line, f"{dotted}.{name}"


def _files() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_no_package_imports_another_packages_private_or_unexported_name() -> None:
    found = [c for path in _files() for c in crossings(path)]
    unexplained = [f"{file}:{line}: {what}" for file, line, what in found
                   if (file, what) not in ALLOWED]
    assert not unexplained, ("import only names the module exports (its __all__), never a "
                             "private one:\n" + "\n".join(unexplained))
    stale = set(ALLOWED) - {(file, what) for file, _, what in found}
    assert not stale, f"allowed crossings that no longer occur: {sorted(stale)}"


@pytest.mark.parametrize(("source", "expected"), [
    ("from evalband.stats._tests import _mcnemar_p\n", ["evalband.stats._tests._mcnemar_p"]),
    ("from evalband.stats._tests import no_such_name\n", ["evalband.stats._tests.no_such_name"]),
    ("from evalband.stats import interval, _tests_cache\n", ["evalband.stats._tests_cache"]),
    ("from evalband.stats import wilson_internal\n", ["evalband.stats.wilson_internal"]),
    ("def f():\n    from ..stats._tests import _private\n", ["evalband.stats._tests._private"]),
    ("from evalband.store._sqlite import _connect\n", ["evalband.store._sqlite._connect"]),
    ("from evalband.analysis._compare import _anything\n", []),  # its own package
    ("from ._compare import _anything\n", []),
    ("from evalband.stats._tests import mcnemar\n", []),  # exported by its module
    ("from evalband.stats import interval\n", []),  # exported by the facade
    ("from evalband.stats import _tests\n", []),  # a module, not a name
    ("import evalband.envs._coin\n", []),
    ("from evalband._api import load_run\n", []),
    ("from evalband._util.validate import as_count\n", []),
])
def test_the_walk_sees_each_kind_of_crossing(monkeypatch: pytest.MonkeyPatch, source: str,
                                             expected: list[str]) -> None:
    """The checker itself: each spelling of a crossing is found, public imports are not."""
    fake = ROOT / "analysis" / "_layering_probe.py"  # never written: only parsed
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    found = [what for _, _, what in crossings(fake)]
    assert found == expected


# --- the layer order, read from the table in docs/architecture.md ---------------------------

_ROW = re.compile(r"^\|\s*(?P<layer>[^|]*?)\s*\|\s*(?P<names>[^|]*?)\s*\|")
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:/|\.py)`")


def parse_layers(markdown: str) -> dict[str, int]:
    """``{unit: layer}`` from the first Markdown table whose header starts ``| Layer | Package``.

    A unit is a package (```store/``` -> ``store``) or a module directly in ``src/evalband``
    (```panel.py``` -> ``panel``, ```__init__.py``` -> ``__init__``); one row may name several.
    Raises ``ValueError`` when there is no such table, a layer is not a whole number, a row names
    no unit, or a unit is placed twice.
    """
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if re.match(r"^\|\s*Layer\s*\|\s*Package\s*\|", line)), None)
    if start is None:
        raise ValueError("no '| Layer | Package | ...' table")
    layers: dict[str, int] = {}
    for line in lines[start + 2:]:  # skip the header and its |---| rule
        row = _ROW.match(line)
        if row is None:
            break
        if not row["layer"].isdigit():
            raise ValueError(f"layer must be a whole number: {line!r}")
        names = _NAME.findall(row["names"])
        if not names:
            raise ValueError(f"row names no package (`name/`) or module (`name.py`): {line!r}")
        for name in names:
            if name in layers:
                raise ValueError(f"{name} is placed twice")
            layers[name] = int(row["layer"])
    if not layers:
        raise ValueError("the layer table has no rows")
    return layers


def _unit_of_file(path: Path) -> str:
    """The table's unit of a source file: its package, or its own name at the top level."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[0]


def _units_on_disk() -> set[str]:
    return {_unit_of_file(path) for path in _files()}


def _root_lazy_table() -> dict[str, str]:
    """The root ``__init__``'s ``_LAZY`` table: public name -> the module that defines it."""
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)):
            return {str(ast.literal_eval(k)): str(ast.literal_eval(v))
                    for k, v in zip(node.value.keys, node.value.values, strict=True)
                    if k is not None}
    raise AssertionError("evalband/__init__.py has no _LAZY table")


def target_unit(target: list[str], name: str | None, lazy: dict[str, str]) -> str | None:
    """The unit an import reaches, or ``None`` for a name the root ``__init__`` defines itself.

    ``from evalband import load_run`` reaches the module that defines ``load_run`` (``_api``,
    through the root's lazy table); ``from evalband import __version__`` reaches only the root
    ``__init__``'s own constants, which any layer may read (its eager imports are ``_util`` and
    ``errors``); a bare ``import evalband`` reaches the whole facade, the top.
    """
    inner = target[1:]
    if inner:
        return inner[0]
    if name is None:
        return "__init__"
    if _is_module(["evalband", name]):
        return name
    if name in lazy:
        return lazy[name].split(".")[1]
    return None


@functools.cache
def _evalband_imports(path: Path) -> tuple[tuple[int, list[str], str | None], ...]:
    return tuple(found for found in imports(path) if found[1][0] == "evalband")


def layer_violations(layers: dict[str, int]) -> list[str]:
    """Each import that does not point to a lower layer of ``layers``, and each unit not placed."""
    lazy = _root_lazy_table()
    found: list[str] = []
    for unit in sorted(_units_on_disk() - set(layers)):
        found.append(f"{unit}: not in the layer table")
    for unit in sorted(set(layers) - _units_on_disk()):
        found.append(f"{unit}: in the layer table but not in src/evalband")
    for path in _files():
        own = _unit_of_file(path)
        for line, target, name in _evalband_imports(path):
            other = target_unit(target, name, lazy)
            if other is None or other == own or own not in layers or other not in layers:
                continue
            if layers[other] >= layers[own]:
                found.append(f"{path.relative_to(ROOT)}:{line}: {own} (layer {layers[own]}) "
                             f"imports {other} (layer {layers[other]})")
    return found


def test_imports_point_down_the_layer_table_in_the_architecture_page() -> None:
    found = layer_violations(parse_layers(ARCHITECTURE.read_text(encoding="utf-8")))
    assert not found, ("an import points up or sideways, or a package is not placed; move the "
                       "code or change the table in docs/architecture.md:\n" + "\n".join(found))


def test_the_root_init_reaches_further_only_lazily() -> None:
    """What makes ``from evalband import __version__`` safe at any layer."""
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    eager = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    for node in eager:
        module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        parts = (module or "").split(".")
        assert parts[0] != "evalband" or parts[1] in (UTIL, "errors"), ast.dump(node)


def _swap(markdown: str, first: str, second: str) -> str:
    """The page with the layer numbers of the rows naming ``first`` and ``second`` swapped."""
    layers = parse_layers(markdown)
    out = []
    for line in markdown.splitlines():
        for mine, theirs in ((first, second), (second, first)):
            if re.match(rf"^\|\s*\d+\s*\|[^|]*`{mine}(?:/|\.py)`", line):
                line = re.sub(r"^\|\s*\d+", f"| {layers[theirs]}", line, count=1)
                break
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("store", "analysis", "analysis (layer 4) imports store (layer 5)"),
    ("cli", "run", "cli (layer 7) imports report (layer 9)"),
    ("panel", "store", "store (layer 3) imports panel (layer 4)"),
])
def test_a_wrong_table_fails(first: str, second: str, expected: str) -> None:
    """The enforcement reads the page: the same code against a table in the wrong order fails."""
    wrong = _swap(ARCHITECTURE.read_text(encoding="utf-8"), first, second)
    assert any(expected in problem for problem in layer_violations(parse_layers(wrong)))


def test_an_import_within_one_layer_fails() -> None:
    layers = parse_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    layers["panel"] = layers["envs"]  # panel.py imports envs: siblings may not
    assert any("panel (layer 2) imports envs (layer 2)" in problem
               for problem in layer_violations(layers))


def test_a_package_left_out_of_the_table_fails() -> None:
    layers = parse_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    del layers["training"]
    assert "training: not in the layer table" in layer_violations(layers)


@pytest.mark.parametrize(("table", "message"), [
    ("no table here\n", "no '| Layer | Package"),
    ("| Layer | Package | What |\n|---|---|---|\n| top | `cli/` | x |\n", "whole number"),
    ("| Layer | Package | What |\n|---|---|---|\n| 1 | cli | x |\n", "names no package"),
    ("| Layer | Package | What |\n|---|---|---|\n| 1 | `cli/` | x |\n| 2 | `cli/` | y |\n",
     "placed twice"),
])
def test_the_parser_refuses_a_malformed_table(table: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_layers(table)


def test_the_parser_reads_each_spelling() -> None:
    table = ("| Layer | Package | What |\n|---|---|---|\n"
             "| 2 | `envs/` `policies/` | contracts |\n| 0 | `errors.py` | the errors |\n\n"
             "| 9 | `cli/` | after the table: not read |\n")
    assert parse_layers(table) == {"envs": 2, "policies": 2, "errors": 0}
