"""The report's templates are package data: found through importlib.resources, fetching nothing."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

from evalband.report._templates import environment, static

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {"page.html.j2", "report.html.j2", "tables.html.j2", "page.css", "sort.js"}


def _templates() -> dict[str, str]:
    folder = files("evalband.report") / "templates"
    return {entry.name: entry.read_text(encoding="utf-8") for entry in folder.iterdir()
            if entry.is_file()}


def test_templates_load_through_importlib_resources() -> None:
    found = _templates()
    assert set(found) >= SHIPPED
    for name in found:
        if name.endswith(".j2"):
            assert environment().get_template(name).render is not None  # compiles
    assert static("page.css") == found["page.css"] and "aria-sort" in static("sort.js")


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_no_template_or_static_file_names_a_network_address(name: str) -> None:
    text = _templates()[name]
    assert not re.search(r"(?i)\b(?:https?:|ftp:|ws:)|//[a-z0-9]|@import|\burl\(", text), name


def test_the_wheel_ships_the_package_folder_whole() -> None:
    """Hatch puts every file under ``src/evalband`` in the wheel unless told to leave it out."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/evalband"]
    assert not {"exclude", "only-include"} & set(wheel)
    assert not {"exclude", "only-include"} & set(config["tool"]["hatch"]["build"])
    assert any(d.startswith("jinja2>=") for d in config["project"]["dependencies"])
    ignored = (ROOT / ".gitignore").read_text()
    assert not re.search(r"\.(j2|css|js)\b|templates", ignored)  # hatch honours .gitignore


def test_jinja2_is_imported_only_when_a_page_is_rendered() -> None:
    code = ("import sys, evalband.report, evalband.report._html, evalband.report._markdown; "
            "assert 'jinja2' not in sys.modules, 'imported early'; "
            "evalband.report.html_page('t', '<p>x</p>'); assert 'jinja2' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_user_text_is_escaped_as_html_escape_does() -> None:
    from evalband.report import html_page

    page = html_page("it's <b>", "<p>x</p>")
    assert "<title>it&#x27;s &lt;b&gt;</title>" in page


_RENDER = (
    "import sys, jinja2\n"
    "if sys.argv[1] == 'no-compile':\n"
    "    def refuse(*a, **k): raise AssertionError('compiled a template again')\n"
    "    jinja2.Environment.compile = refuse\n"
    "from evalband.report._templates import render\n"
    "print(render('page.html.j2', title='t < u', csp='', css='x', script='', head='',"
    " body='<p>b</p>'), end='')\n"
)


def _render(tmp: Path, mode: str, **env: str) -> str:
    import os

    done = subprocess.run([sys.executable, "-c", _RENDER, mode], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp), **env}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_compiled_templates_are_cached_across_processes(tmp_path: Path) -> None:
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    plain = _render(tmp_path / "off", "compile", EVALBAND_TEMPLATE_CACHE="0")
    assert "<title>t &lt; u</title>" in plain
    assert not any((tmp_path / "off").rglob("*.cache"))  # turned off: nothing written
    assert _render(tmp_path / "on", "compile") == plain  # compiles and writes the cache
    cached = list((tmp_path / "on").rglob("__evalband_*.cache"))
    assert len(cached) == 1 and cached[0].parent.stat().st_mode & 0o077 == 0  # user-private
    assert _render(tmp_path / "on", "no-compile") == plain  # loaded, not compiled, same page
    cached[0].write_bytes(b"garbage")  # a damaged entry only costs a compile
    assert _render(tmp_path / "on", "compile") == plain
