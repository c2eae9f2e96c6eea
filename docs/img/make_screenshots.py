"""Make the documentation's screenshots of each report kind and of the viewer.

Runs the labs into a temporary store (exactly as their commands do), writes the reports
with ``evalband report``, serves the store with ``evalband view``'s server, and
photographs each page in headless Chromium (Debian's ``/usr/bin/chromium`` through the
playwright package; no browser is downloaded):

    report-reach.png              the reaching lab's comparison (reach1d-dynamics panel)
    report-hidden-regression.png  seed 003's hidden regression
    report-run.png                one run (the damped reaching controller)
    view.png                      the viewer's run list

Usage (from the repository root):

    .venv/bin/python docs/img/make_screenshots.py [--out docs/img] [--height 1500]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from evalband.cli import main as evalband
from evalband.store import open_store
from evalband.view import serve_in_background

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    path = os.environ.get("EVALBAND_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        sys.exit(f"error: no Chromium at {path}; apt-get install chromium "
                 "(never playwright install)")
    return path


def _run(*args: str) -> None:
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        code = evalband([*args])
    if code not in (0, 3, 4, 5):  # labs exit with compare's verdict status; 2 is bad input
        sys.exit(f"error: evalband {' '.join(args)} exited {code}")


def _shoot(page: Any, path: Path, height: int) -> None:
    """The top of the page, no taller than its content."""
    content = int(page.evaluate(
        "() => Math.ceil(Math.max(...Array.from(document.body.children)"
        ".filter(e => !['SCRIPT', 'STYLE'].includes(e.tagName))"
        ".map(e => e.getBoundingClientRect().bottom))) + 32"))
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1280,
                                          "height": min(content, height)})


def make(out: Path, height: int, reach_panel: str) -> list[Path]:
    """Write the four PNGs into ``out``; return their paths."""
    from playwright.sync_api import sync_playwright

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="evalband-shots-"))
    os.chdir(work)  # the pages show the store as a user's would: evalband-runs/evalband.sqlite
    store = Path("evalband-runs") / "evalband.sqlite"
    _run("lab", "reach1d", "--panel", reach_panel, "--store", str(store), "--json")
    _run("lab", "hidden-regression", "--store", str(store), "--json")
    with open_store(store) as st:
        by_panel = {st.require_run(c["run_ids"][0]).panel_name: c["run_ids"]
                    for c in st.comparisons()}
    reach, hidden = by_panel[reach_panel], by_panel["hidden-regression-200"]
    reports = {
        "report-reach.png": reach,
        "report-hidden-regression.png": hidden,
        "report-run.png": [reach[1]],
    }
    written: list[Path] = []
    profile = tempfile.mkdtemp(prefix="evalband-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": height}, device_scale_factor=1,
            )
            page = context.new_page()
            for name, run_ids in reports.items():
                html = work / name.replace(".png", ".html")
                _run("report", *run_ids, "--store", str(store), "--html", str(html), "--json")
                page.goto(html.resolve().as_uri(), wait_until="load")
                _shoot(page, out / name, height)
                written.append(out / name)
            with serve_in_background(store) as server:
                page.goto(server.url, wait_until="load")
                _shoot(page, out / "view.png", height)
                written.append(out / "view.png")
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return written


def cli() -> None:
    """Parse the options and make the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                        help="folder for the PNGs (default: this script's folder, docs/img)")
    parser.add_argument("--height", type=int, default=1500,
                        help="viewport height in pixels: the top of each report is shown")
    parser.add_argument("--reach-panel", default="reach1d-dynamics",
                        help="panel of the reaching lab (default reach1d-dynamics: two slices)")
    args = parser.parse_args()
    for path in make(args.out, args.height, args.reach_panel):
        print(path)


if __name__ == "__main__":
    cli()
