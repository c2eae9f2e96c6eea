"""Sizes past which evalband refuses at once, with one line, instead of working for hours.

Each limit is far above any real use (a panel of ten million episodes, a hardware session of a
million trials) and far below sizes that would exhaust memory or time before saying anything.
"""

from __future__ import annotations

from evalband.errors import InvalidParameterError

__all__ = ["MAX_PLANNED_EPISODES", "MAX_SESSION_TRIALS", "MAX_COVERAGE_N", "MAX_MEDIA_BYTES",
           "MAX_BUDGET_STEPS", "MAX_WORKERS", "MAX_IMPORT_BYTES", "MAX_IMPORT_ROWS",
           "MAX_IMPORT_COLUMNS", "MAX_FRAME_BYTES", "MAX_QUEUED_REQUESTS", "check_size"]

MAX_PLANNED_EPISODES = 10_000_000
"""Episodes one panel may plan (cells x episodes x repeats)."""

MAX_SESSION_TRIALS = 1_000_000
"""Trials one hardware session may plan (policies x scenes x attempts)."""

MAX_COVERAGE_N = 10_000
"""Largest n for the exact coverage enumeration (its cost grows with n squared)."""

MAX_MEDIA_BYTES = 2 * 1024**3
"""Largest clip an import copies beside the store (one episode's video; 2 GiB)."""

MAX_BUDGET_STEPS = 10_000_000
"""Most actions one episode may take (``budget.steps``, or seconds over the period): at a
microsecond a step, ten seconds; a trillion never ends."""

MAX_WORKERS = 1024
"""Most worker processes (``--workers``) one run starts on this machine."""

MAX_IMPORT_BYTES = 4 * 1024**3
"""Largest file an import reads (a CSV, JSONL, JSON or Parquet file; for Parquet also its
uncompressed size, which its metadata gives before anything is decoded)."""

MAX_IMPORT_ROWS = MAX_PLANNED_EPISODES
"""Most episode rows one imported file may hold (the most episodes a panel plans)."""

MAX_IMPORT_COLUMNS = 10_000
"""Most columns one imported file may have."""

MAX_FRAME_BYTES = 64 * 1024**2
"""Largest websocket message a policy server takes or a ``ws://`` client reads (64 MiB:
a batch of camera images; ``serve --max-frame-mb``, ``ws://...?max_frame_mb=``)."""

MAX_QUEUED_REQUESTS = 64
"""Most requests one client of a policy server may have waiting behind its unanswered one."""


def check_size(value: int, limit: int, what: str, advice: str) -> int:
    """``value`` when it is at most ``limit``; else a one-line error.

    >>> check_size(5, 10, "episodes", "plan fewer")
    5
    >>> try:
    ...     check_size(10**12, 10**7, "a panel of episodes", "split the panel")
    ... except InvalidParameterError as exc:
    ...     print(str(exc)[:60])
    a panel of episodes: 1,000,000,000,000 is more than evalband
    """
    if value > limit:
        raise InvalidParameterError(
            f"{what}: {value:,} is more than evalband handles (at most {limit:,}); {advice}"
        )
    return value
