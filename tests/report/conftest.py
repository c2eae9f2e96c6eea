"""A store with the seed labs' runs (reaching lab, hidden regression), and their rendered pages.

Built once per session: the runs through the real CLI labs, each page rendered once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalband.cli import main


@dataclass
class Labs:
    """The lab store, its run ids, and pages rendered on demand (cached)."""

    store: Path
    reach: tuple[str, str]  # baseline, damped
    hidden: tuple[str, str]  # baseline, candidate
    pages: dict[tuple[str, ...], str] = field(default_factory=dict)

    def page(self, *sources: str) -> str:
        from evalband.report import render_html

        if sources not in self.pages:
            self.pages[sources] = render_html(list(sources), self.store, command="pytest")
        return self.pages[sources]


@pytest.fixture(scope="session")
def labs(tmp_path_factory: pytest.TempPathFactory) -> Labs:
    import contextlib
    import io

    store = tmp_path_factory.mktemp("labs") / "runs.sqlite"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["lab", "reach1d", "--store", str(store), "--json"]) == 0
    reach = json.loads(out.getvalue())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["lab", "hidden-regression", "--store", str(store), "--json"]) == 4
    hidden = json.loads(out.getvalue())
    runs = reach["runs"]
    return Labs(
        store=store,
        reach=(runs["reach1d:baseline"]["run_id"], runs["reach1d:damped"]["run_id"]),
        hidden=(hidden["baseline"], hidden["candidate"]),
    )
