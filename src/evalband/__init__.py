"""evalband: honest robot-policy evaluation.

Seeded evaluation panels, every episode stored, verdicts with intervals.

>>> import evalband
>>> evalband.load_panel("reach1d").seed
7
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

__version__ = "0.1.0"

_LAZY = {
    "compare": "evalband._api",
    "load_run": "evalband._api",
    "rescore_run": "evalband._rescore",
    "record_comparison": "evalband.recording",
    "summarize": "evalband.analysis",
    "paired_counts": "evalband.analysis",
    "EpisodeRecord": "evalband.episode",
    "Outcome": "evalband.episode",
    "EvalbandError": "evalband.errors",
    "Panel": "evalband.panel",
    "load_panel": "evalband.panel",
    "run_panel": "evalband.run",
    "Recorder": "evalband.run",
    "open_store": "evalband.store",
}

__all__ = ["__version__", *_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
