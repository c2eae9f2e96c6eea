"""The public API: few names, each written once, each in the generated API reference.

A package facade (``evalband/__init__.py``, ``evalband/<pkg>/__init__.py``) lists its public
names once, in its ``_LAZY`` table; ``__all__``, the lazy ``__getattr__``, the ``.pyi`` stub
that type checkers read and the API reference's pages (``docs/api/``) all come from it
(``make api-docs``, ``tools/api_names.py``). The reference renders each name's docstring with
mkdocstrings, which finds it statically (griffe): the test does the same look-up.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import api_names  # noqa: E402 (tools/ is not a package)

MAX_PUBLIC_NAMES = 150
_DIRECTIVE = re.compile(r"^::: (?P<target>[\w.]+)\s*$", re.M)


def _facade_all() -> dict[str, list[str]]:
    return {module: list(importlib.import_module(module).__all__)
            for module in api_names.facades()}


def undocumented(pages: dict[str, str], public: dict[str, list[str]]) -> list[str]:
    """Each public name with no ``::: <where>.<name>`` directive on its package's page."""
    missing = []
    for module, names in public.items():
        documented = {m["target"].rpartition(".")[2]
                      for m in _DIRECTIVE.finditer(pages.get(f"{module}.md", ""))}
        missing += [f"{module}.{name}" for name in names
                    if not name.startswith("__") and name not in documented]
    return missing


def _pages() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8")
            for path in api_names.REFERENCE.glob("*.md")}


def test_at_most_150_public_names() -> None:
    total = sum(len(names) for names in _facade_all().values())
    assert total <= MAX_PUBLIC_NAMES, f"{total} public names: keep in __all__ what users call"


def test_every_public_name_is_in_the_reference() -> None:
    assert not undocumented(_pages(), _facade_all()), "run `make api-docs`"


def test_a_name_missing_from_the_reference_fails() -> None:
    pages = _pages()
    pages["evalband.stats.md"] = pages["evalband.stats.md"].replace(
        "::: evalband.stats.mcnemar\n", "")
    assert undocumented(pages, _facade_all()) == ["evalband.stats.mcnemar"]


def test_the_reference_pages_and_stubs_are_the_generated_ones() -> None:
    pages = api_names.reference_pages()
    assert _pages() == pages, "run `make api-docs`"
    for module, init in api_names.facades().items():
        stub = init.with_suffix(".pyi")
        if api_names.lazy_table(ast.parse(init.read_text(encoding="utf-8"))):
            assert stub.read_text(encoding="utf-8") == api_names.stub(module), \
                "run `make api-stubs`"


def test_each_name_is_written_once() -> None:
    """No ``TYPE_CHECKING`` copy, ``__all__`` from the table: a name's one spelling is its
    ``_LAZY`` entry (or, for a constant of the facade itself, its assignment)."""
    for module, init in api_names.facades().items():
        tree = ast.parse(init.read_text(encoding="utf-8"))
        table = api_names.lazy_table(tree)
        if not table:
            continue
        assert "TYPE_CHECKING" not in init.read_text(encoding="utf-8"), module
        spelled = [node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        twice = {name for name in table if spelled.count(name) > 1}
        assert not twice, f"{module}: {sorted(twice)} written more than once"


def test_every_public_name_loads_and_has_a_docstring() -> None:
    """What the reference renders: each name resolves at run time, and statically (griffe,
    as mkdocstrings reads it) to an object with a docstring."""
    griffe = pytest.importorskip("griffe")
    package = griffe.load("evalband", search_paths=[str(ROOT / "src")],
                          allow_inspection=False, resolve_aliases=False)
    bare = []
    for module, names in _facade_all().items():
        facade = importlib.import_module(module)
        for name in names:
            getattr(facade, name)
            if name.startswith("__"):
                continue
            path = f"{module}.{name}".removeprefix("evalband.").removeprefix("evalband")
            if module == "evalband.cli" and name not in ("main", "entry"):
                continue
            found = package[path.lstrip(".")]
            if not (found.docstring and found.docstring.value.strip()):
                bare.append(f"{module}.{name}")
    assert not bare, f"public names without a docstring: {bare}"
