"""Shared fixtures: a temporary store. Shared helpers live in ``testkit.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalband.store import RunStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with open_store(tmp_path / "runs" / "evalband.sqlite") as s:
        yield s
