"""Analysis on episode records: summaries, pairing, comparisons (calls :mod:`evalband.stats`).

Names load on first use: ``evalband run`` needs :func:`summarize` and not the comparison
machinery (``scipy.special`` and the bootstrap), whose import costs a short run ~0.3 s.
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "agree_runs": "evalband.analysis._agree",
    "Agreement": "evalband.analysis._agree",
    "calibrate": "evalband.analysis._calibrate",
    "compare_runs": "evalband.analysis._compare",
    "compare_many": "evalband.analysis._compare",
    "Comparison": "evalband.analysis._compare",
    "SliceComparison": "evalband.analysis._compare",
    "Aggregate": "evalband.analysis._compare",
    "noise_floor": "evalband.analysis._noise",
    "NoiseFloor": "evalband.analysis._noise",
    "StoredRecords": "evalband.analysis._pairs",
    "rank_runs": "evalband.analysis._rank",
    "Ranking": "evalband.analysis._rank_results",
    "compare_sequential": "evalband.analysis._sequential",
    "summarize": "evalband.analysis._summary",
    "paired_counts": "evalband.analysis._summary",
    "RunSummary": "evalband.analysis._summary",
    "decide": "evalband.analysis._verdicts",
    "Verdict": "evalband.analysis._verdicts",
    "SliceVerdict": "evalband.analysis._verdicts",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
