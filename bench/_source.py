"""A commit's ``src`` tree on disk, for benches that time the code before beside the code now."""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["source_of"]


def source_of(commit: str, folder: Path) -> Path:
    """``commit``'s ``src`` tree extracted under ``folder``; the folder to put on ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"
