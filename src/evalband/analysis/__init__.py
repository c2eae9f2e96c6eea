"""Analysis on episode records: summaries, pairing, comparisons (calls :mod:`evalband.stats`)."""

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
]
