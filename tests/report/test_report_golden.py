"""The renderers reproduce the previous renderers' output on the seed labs' runs.

The golden files (``tests/report/golden/``) were made once by the renderers before the
slice table had one definition and the HTML came from templates; see ``make_golden.py``
there. Terminal text and Markdown must match byte for byte. HTML (inline plots aside) must
match once whitespace around tags and runs of whitespace are normalised (the templates lay
markup out on lines), and every number on the page must be the same, in the same order.
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


def _whitespace_normalised(page: str) -> str:
    return re.sub(r"\s+", " ", _AROUND_TAG.sub(r"\1", page))


@pytest.fixture(scope="module", params=sorted(MAKER.CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    return request.param, MAKER.render_case(request.param)


@pytest.mark.parametrize("suffix", ["term.txt", "term.ansi", "md"])
def test_text_outputs_are_byte_identical(case, suffix: str) -> None:
    name, out = case
    assert out[suffix] == (GOLDEN / f"{name}.{suffix}").read_text(encoding="utf-8")


def test_html_is_identical_and_every_number_is_the_same(case) -> None:
    name, out = case
    old = (GOLDEN / f"{name}.html").read_text(encoding="utf-8")
    new = out["html"]
    assert _NUMBER.findall(new) == _NUMBER.findall(old)
    assert _whitespace_normalised(new) == _whitespace_normalised(old)
    # whitespace is meaningful inside <pre> (the panel YAML): kept byte for byte
    pre = re.compile(r"<pre>.*?</pre>", re.S)
    assert pre.findall(new) == pre.findall(old) and pre.findall(old)


def test_number_extraction_sees_a_changed_digit() -> None:
    old = (GOLDEN / "hidden.html").read_text(encoding="utf-8")
    changed = old.replace("+22.5", "+22.6", 1)
    assert changed != old and _NUMBER.findall(changed) != _NUMBER.findall(old)
