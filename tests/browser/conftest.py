"""Real headless Chromium (Debian's /usr/bin/chromium) driven by the playwright package.

No browser is ever downloaded: playwright only drives the system Chromium. When it is
missing the tests FAIL (they never skip): ``make test`` installs it (scripts/ensure-chromium),
and a missing browser on a developer machine should be noticed, not hidden.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalband.cli import main
from evalband.store import open_store

CHROMIUM = (os.environ.get("EVALBAND_CHROMIUM") or shutil.which("chromium")
            or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def _require_browser() -> None:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: the browser tests need it. Install it "
            "with `apt-get install -y chromium` (make test does), or point EVALBAND_CHROMIUM at "
            "a Chromium binary. Never `playwright install`.",
            pytrace=False,
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[dev]'", pytrace=False)


@pytest.fixture(scope="session")
def playwright_driver() -> Iterator[Any]:
    """Playwright, started once for the session (it only drives the system Chromium)."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser_context(playwright_driver: Any) -> Iterator[Any]:
    """One Chromium with a fresh temporary profile for the whole session."""
    profile = tempfile.mkdtemp(prefix="evalband-chromium-")
    try:
        context = playwright_driver.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
            offline=False,
        )
        try:
            yield context
        finally:
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Watched:
    """A page and what it did: console errors, uncaught errors, every request's URL."""

    page: Any
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    allowed_origin: str | None = None

    def assert_clean(self) -> None:
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors

    def allowed(self, url: str) -> bool:
        """A local scheme, or the viewer's own origin when a test set one."""
        origin = self.allowed_origin
        return url.startswith(LOCAL_SCHEMES) or (origin is not None and url.startswith(origin))

    def foreign_requests(self) -> list[str]:
        """Every request that was not :meth:`allowed` (each was aborted)."""
        return [url for url in self.requests if not self.allowed(url)]


@pytest.fixture
def watched(browser_context: Any) -> Iterator[Watched]:
    """A fresh page whose console, errors and requests are recorded.

    Every request goes through a route: local schemes (and the viewer's own origin, set by
    a test in ``watched.allowed_origin``) continue; anything else is aborted and recorded.
    """
    page = browser_context.new_page()
    w = Watched(page)
    page.on("console", lambda msg: w.console_errors.append(msg.text)
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: w.page_errors.append(str(exc)))

    def route(r: Any) -> None:
        url = r.request.url
        w.requests.append(url)
        if w.allowed(url):
            r.continue_()
        else:
            w.blocked.append(url)
            r.abort()

    page.route("**/*", route)
    try:
        yield w
    finally:
        page.close()


LAB_COMMANDS = (
    ["lab", "reach1d"],  # seed 002's lab on its default panel: one cell
    ["lab", "reach1d", "--panel", "reach1d-dynamics"],  # the same lab with a dynamics factor
    ["lab", "hidden-regression"],  # seed 003's lab: three embodiment slices
)


@pytest.fixture(scope="session")
def lab_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the labs' runs and their recorded comparisons, as the lab commands
    leave it."""
    path = tmp_path_factory.mktemp("labs") / "runs.sqlite"
    for command in LAB_COMMANDS:  # hidden-regression exits 4, as compare does on a regression
        assert main([*command, "--store", str(path), "--json"]) in (0, 4)
    return path


@pytest.fixture(scope="session")
def lab_comparisons(lab_store: Path) -> dict[str, dict[str, Any]]:
    """The recorded lab comparisons by panel name: ``reach1d``, ``reach1d-dynamics`` and
    ``hidden-regression-200``."""
    with open_store(lab_store) as st:
        by_panel = {st.require_run(c["run_ids"][0]).panel_name: c for c in st.comparisons()}
    assert sorted(by_panel) == ["hidden-regression-200", "reach1d", "reach1d-dynamics"]
    return by_panel
