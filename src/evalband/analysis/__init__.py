"""Analysis on episode records: summaries, pairing, comparisons (calls :mod:`evalband.stats`).

Names load on first use: ``evalband run`` needs :func:`summarize` and not the comparison
machinery (``scipy.special`` and the bootstrap), whose import costs a short run ~0.3 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.analysis._calibrate import Rate, calibrate, rates_from_run
    from evalband.analysis._compare import (
        DEFAULT_EFFECT,
        VERDICT_EXIT_CODES,
        Aggregate,
        Comparison,
        RunData,
        SliceComparison,
        compare_many,
        compare_runs,
        slice_definitions,
        worst_verdict,
    )
    from evalband.analysis._noise import (
        FlipRate,
        NoiseFloor,
        flip_band,
        flip_rate_of_groups,
        noise_floor,
    )
    from evalband.analysis._pairs import (
        COMPARE_COLUMNS,
        PairTable,
        StoredRecords,
        cell_ranks,
        records_where,
        stored_columns,
    )
    from evalband.analysis._sequential import (
        compare_sequential,
        episode_counts,
        incomplete,
        peeking_notes,
        sequential_as_dict,
    )
    from evalband.analysis._sequential_outcome import (
        FUTILITY_EXIT_CODE,
        design_lines,
        exploratory_notice,
        futility_sentence,
        overall_decision,
        sequential_exit_code,
    )
    from evalband.analysis._sequential_plan import (
        DESIGN_SOURCES,
        ComparisonDesign,
        comparison_design,
        design_for,
    )
    from evalband.analysis._stored import (
        comparison_options,
        comparison_settings,
        result_payload,
        stored_comparisons,
    )
    from evalband.analysis._summary import (
        PairedCounts,
        PairedOutcomes,
        RunSummary,
        counted,
        paired_counts,
        paired_outcomes,
        rank_error_causes,
        summarize,
        summary_from_tallies,
    )
    from evalband.analysis._verdicts import (
        ControlStatus,
        Decided,
        SliceVerdict,
        Standing,
        Verdict,
        decide_holm,
        interval_verdict,
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
    "Rate",
    "calibrate",
    "DEFAULT_EFFECT",
    "slice_definitions",
    "FlipRate",
    "flip_band",
    "flip_rate_of_groups",
    "COMPARE_COLUMNS",
    "PairTable",
    "StoredRecords",
    "cell_ranks",
    "records_where",
    "stored_columns",
    "compare_sequential",
    "episode_counts",
    "incomplete",
    "peeking_notes",
    "sequential_as_dict",
    "ComparisonDesign",
    "comparison_design",
    "design_for",
    "DESIGN_SOURCES",
    "FUTILITY_EXIT_CODE",
    "design_lines",
    "exploratory_notice",
    "futility_sentence",
    "overall_decision",
    "sequential_exit_code",
    "rates_from_run",
    "comparison_options",
    "comparison_settings",
    "result_payload",
    "stored_comparisons",
    "rank_error_causes",
    "summary_from_tallies",
    "Decided",
    "interval_verdict",
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
    "Rate": "evalband.analysis._calibrate",
    "calibrate": "evalband.analysis._calibrate",
    "DEFAULT_EFFECT": "evalband.analysis._compare",
    "slice_definitions": "evalband.analysis._compare",
    "FlipRate": "evalband.analysis._noise",
    "flip_band": "evalband.analysis._noise",
    "flip_rate_of_groups": "evalband.analysis._noise",
    "COMPARE_COLUMNS": "evalband.analysis._pairs",
    "PairTable": "evalband.analysis._pairs",
    "StoredRecords": "evalband.analysis._pairs",
    "cell_ranks": "evalband.analysis._pairs",
    "records_where": "evalband.analysis._pairs",
    "stored_columns": "evalband.analysis._pairs",
    "compare_sequential": "evalband.analysis._sequential",
    "episode_counts": "evalband.analysis._sequential",
    "incomplete": "evalband.analysis._sequential",
    "peeking_notes": "evalband.analysis._sequential",
    "sequential_as_dict": "evalband.analysis._sequential",
    "ComparisonDesign": "evalband.analysis._sequential_plan",
    "comparison_design": "evalband.analysis._sequential_plan",
    "design_for": "evalband.analysis._sequential_plan",
    "DESIGN_SOURCES": "evalband.analysis._sequential_plan",
    **dict.fromkeys(
        ("FUTILITY_EXIT_CODE", "design_lines", "exploratory_notice", "futility_sentence",
         "overall_decision", "sequential_exit_code"),
        "evalband.analysis._sequential_outcome",
    ),
    "rates_from_run": "evalband.analysis._calibrate",
    "comparison_options": "evalband.analysis._stored",
    "comparison_settings": "evalband.analysis._stored",
    "result_payload": "evalband.analysis._stored",
    "stored_comparisons": "evalband.analysis._stored",
    "rank_error_causes": "evalband.analysis._summary",
    "summary_from_tallies": "evalband.analysis._summary",
    "Decided": "evalband.analysis._verdicts",
    "interval_verdict": "evalband.analysis._verdicts",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
