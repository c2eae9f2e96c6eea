"""The README fits on a screen and every link in it and in docs/ resolves (issue 32, item 6).

Also: ``make run`` is the command the README's example shows, and ``docs/performance.md`` is
what ``bench/make_performance.py`` generates from ``bench/results.json``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The page without its fenced code blocks (links and headings there are not the page's)."""
    return _FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> _slug("Looking more than once: `--sequential`, the peeking notice")
    'looking-more-than-once---sequential-the-peeking-notice'
    """
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    slugs: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_prose(page.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        n = slugs.get(slug, 0)
        out.add(slug if n == 0 else f"{slug}-{n}")
        slugs[slug] = n + 1
    return out


def test_readme_fits_on_a_screen_and_keeps_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 180
    block = re.search(r"## Two commands\n\n```sh\n(.*?)```", text, re.S)
    assert block is not None
    assert [line.split()[:2] for line in block.group(1).splitlines()] == [["make", "run"],
                                                                          ["make", "test"]]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    run = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert run is not None and "evalband lab reach1d" in run.group(1)  # the README's example
    assert re.search(r"^test:", makefile, re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = page if not path else (page.parent / path).resolve()
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links that do not resolve: {broken}"


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md)\n"
                    "```\n[in code](nowhere.md)\n```\n")
    links = _LINK.findall(_prose(page.read_text()))
    assert links == ["#title", "#nope", "missing.md"] and _anchors(page) == {"title"}


def test_performance_page_is_what_the_script_generates() -> None:
    spec = importlib.util.spec_from_file_location("make_performance",
                                                  ROOT / "bench" / "make_performance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = module.render(__import__("json").loads(module.RESULTS.read_text()),
                             module.HISTORY.read_text())
    assert (ROOT / "docs" / "performance.md").read_text() == expected, (
        "docs/performance.md is stale: run python bench/make_performance.py")
    # every benchmark in the results is a row of the page, with its pass/miss
    for result in module.json.loads(module.RESULTS.read_text())["results"]:
        row = next(line for line in expected.splitlines()
                   if line.startswith(f"| `{result['name']}` |"))
        assert ("| met |" in row) == bool(result.get("passed"))
