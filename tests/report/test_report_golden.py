"""The renderers reproduce the previous renderers' output on the seed labs' runs.

The golden files (``tests/report/golden/``) were made once by the renderers before the
slice table had one definition and the HTML came from templates; see ``make_golden.py``
there. Terminal text and Markdown must match byte for byte. HTML (inline plots aside) must
match once whitespace around tags and runs of whitespace are normalised (the templates lay
markup out on lines), and every number on the page must be the same, in the same order.
Sections added since (a ``<section>`` whose id the golden page lacks, and its table-of-contents
link) are left out of the comparison: what the golden page shows must not change, and a new
section is checked by its own test.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # renders 5 reports with their plots (~15 s CPU)

GOLDEN = Path(__file__).parent / "golden"


def _maker():  # the golden folder is not a package: load its script by path
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKER = _maker()
_NUMBER = re.compile(r"[+\-\u2212]?\d+(?:[.,]\d+)*(?:e[+\-]?\d+)?")
_AROUND_TAG = re.compile(r"\s*(<[^>]+>)\s*")


_SECTION_ID = re.compile(r'<section id="([\w-]+)"')


def _whitespace_normalised(page: str) -> str:
    # <wbr> is a line-break opportunity in a long name: layout, as whitespace is
    return re.sub(r"\s+", " ", _AROUND_TAG.sub(r"\1", page.replace("<wbr>", "")))


_STYLE = re.compile(r"<style>.*?</style>", re.S)


def _unstyled(page: str) -> str:
    """The page without its stylesheet: ``page.css`` is static package data, not output of
    the renderers held to the goldens (a layout fix there changes no number the page says)."""
    return _STYLE.sub("<style></style>", page)


def _without_new_sections(new: str, old: str) -> str:
    """``new`` without the sections (and their contents links) that ``old`` does not have."""
    for added in set(_SECTION_ID.findall(new)) - set(_SECTION_ID.findall(old)):
        new = re.sub(rf'<section id="{added}">.*?</section>\s*', "", new, flags=re.S)
        new = new.replace(f'<a href="#{added}">', "<a-new>", 1)
        new = re.sub(r"<a-new>[^<]*</a>", "", new)
    return new


@pytest.fixture(scope="module", params=sorted(MAKER.CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    return request.param, MAKER.render_case(request.param)


@pytest.mark.parametrize("suffix", ["term.txt", "term.ansi", "md"])
def test_text_outputs_are_byte_identical(case, suffix: str) -> None:
    name, out = case
    assert out[suffix] == (GOLDEN / f"{name}.{suffix}").read_text(encoding="utf-8")


def test_html_is_identical_and_every_number_is_the_same(case) -> None:
    name, out = case
    old = _unstyled((GOLDEN / f"{name}.html").read_text(encoding="utf-8"))
    new = _unstyled(_without_new_sections(out["html"], old))
    assert _NUMBER.findall(new) == _NUMBER.findall(old)
    assert _whitespace_normalised(new) == _whitespace_normalised(old)
    # whitespace is meaningful inside <pre> (the panel YAML): kept byte for byte
    pre = re.compile(r"<pre>.*?</pre>", re.S)
    assert pre.findall(new) == pre.findall(old) and pre.findall(old)


def test_only_sections_the_golden_page_lacks_are_left_out() -> None:
    old = (GOLDEN / "hidden.html").read_text(encoding="utf-8")
    added = old.replace('<section id="runs">', '<section id="extra"><h2>Extra</h2><p>9</p>'
                        '</section><section id="runs">', 1).replace(
        '<a href="#runs">', '<a href="#extra">Extra</a><a href="#runs">', 1)
    assert added != old and _without_new_sections(added, old) == old
    changed = old.replace('<section id="runs">', '<section id="runs"><p>9</p>', 1)
    assert _without_new_sections(changed, old) == changed != old


def test_number_extraction_sees_a_changed_digit() -> None:
    old = (GOLDEN / "hidden.html").read_text(encoding="utf-8")
    changed = old.replace("+22.5", "+22.6", 1)
    assert changed != old and _NUMBER.findall(changed) != _NUMBER.findall(old)
