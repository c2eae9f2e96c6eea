"""Analysis on episode records: summaries, pairing, comparisons (calls :mod:`evalband.stats`).

Names load on first use: ``evalband run`` needs :func:`summarize` and not the comparison
machinery (``scipy.special`` and the bootstrap), whose import costs a short run ~0.3 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.analysis._compare import (
        VERDICT_EXIT_CODES,
        Aggregate,
        Comparison,
        RunData,
        SliceComparison,
        compare_many,
        compare_runs,
        worst_verdict,
    )
    from evalband.analysis._noise import NoiseFloor, noise_floor
    from evalband.analysis._summary import (
        PairedCounts,
        PairedOutcomes,
        RunSummary,
        counted,
        paired_counts,
        paired_outcomes,
        summarize,
    )
    from evalband.analysis._verdicts import (
        ControlStatus,
        SliceVerdict,
        Standing,
        Verdict,
        decide_holm,
        slice_verdict,
    )

__all__ = [
    "VERDICT_EXIT_CODES",
    "Aggregate",
    "Comparison",
    "RunData",
    "SliceComparison",
    "compare_many",
    "compare_runs",
    "worst_verdict",
    "PairedCounts",
    "PairedOutcomes",
    "RunSummary",
    "counted",
    "paired_counts",
    "paired_outcomes",
    "summarize",
    "NoiseFloor",
    "noise_floor",
    "Verdict",
    "SliceVerdict",
    "Standing",
    "ControlStatus",
    "slice_verdict",
    "decide_holm",
]

_LAZY = {
    **dict.fromkeys(
        ("VERDICT_EXIT_CODES", "Aggregate", "Comparison", "RunData", "SliceComparison",
         "compare_many", "compare_runs", "worst_verdict"),
        "evalband.analysis._compare",
    ),
    **dict.fromkeys(("NoiseFloor", "noise_floor"), "evalband.analysis._noise"),
    **dict.fromkeys(
        ("Verdict", "SliceVerdict", "Standing", "ControlStatus", "slice_verdict", "decide_holm"),
        "evalband.analysis._verdicts",
    ),
    **dict.fromkeys(
        ("PairedCounts", "PairedOutcomes", "RunSummary", "counted", "paired_counts",
         "paired_outcomes", "summarize"),
        "evalband.analysis._summary",
    ),
}

__getattr__ = lazy_attributes(__name__, _LAZY)
