"""evalband: honest robot-policy evaluation.

Seeded evaluation panels, every episode stored, verdicts with intervals.

>>> import evalband
>>> evalband.load_panel("reach1d").seed
7
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes
from evalband.errors import EvalbandError

__version__ = "0.1.0"

__all__ = [
    "EvalbandError",
    "__version__",
    "EpisodeRecord",
    "Outcome",
    "Panel",
    "load_panel",
    "open_store",
    "run_panel",
    "Recorder",
    "summarize",
    "paired_counts",
    "compare",
    "load_run",
    "rescore_run",
]

_LAZY = {
    "EpisodeRecord": "evalband.episode",
    "Outcome": "evalband.episode",
    "Panel": "evalband.panel",
    "load_panel": "evalband.panel",
    "open_store": "evalband.store",
    "run_panel": "evalband.run",
    "Recorder": "evalband.run",
    "summarize": "evalband.analysis",
    "paired_counts": "evalband.analysis",
    "compare": "evalband._api",
    "load_run": "evalband._api",
    "rescore_run": "evalband._rescore",
}

if TYPE_CHECKING:
    from evalband._api import compare, load_run
    from evalband._rescore import rescore_run
    from evalband.analysis import paired_counts, summarize
    from evalband.episode import EpisodeRecord, Outcome
    from evalband.panel import Panel, load_panel
    from evalband.run import Recorder, run_panel
    from evalband.store import open_store

__getattr__ = lazy_attributes(__name__, _LAZY)
