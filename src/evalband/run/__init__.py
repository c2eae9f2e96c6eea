"""Run policies on panels: the runner, its backends, and the Recorder for your own loops.

Names load on first use, so a worker process that imports ``evalband.run._execute`` to play
episodes does not import the runner's analysis (and ``scipy.stats``) with it.
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "Recorder": "evalband.run._recorder",
    "RunOptions": "evalband.run._options",
    "run_panel": "evalband.run._runner",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
