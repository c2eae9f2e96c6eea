"""Statistics on counts and arrays: intervals, differences, tests, power, coverage.

Pure functions (numpy/scipy only): no I/O, no knowledge of runs. Each formula
cites its source in its docstring and is tested against an independent oracle.

Submodules load on first use (``evalband.stats.interval`` imports ``_intervals`` then), so a
process that only needs input validation, such as a runner worker, never pays for
``scipy.stats``.
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "bootstrap_interval": "evalband.stats._bootstrap",
    "stratified_bootstrap_interval": "evalband.stats._bootstrap",
    "paired_stratified_bootstrap_interval": "evalband.stats._bootstrap",
    "cluster_bootstrap_interval": "evalband.stats._bootstrap",
    "cluster_proportion_interval": "evalband.stats._cluster_rates",
    "clustered_diff_unpaired": "evalband.stats._cluster_rates",
    "sign_flip_test": "evalband.stats._clustered",
    "clustered_paired_test": "evalband.stats._clustered",
    "clustered_paired_interval": "evalband.stats._clustered",
    "clustered_grouped_test": "evalband.stats._clustered",
    "clustered_grouped_interval": "evalband.stats._clustered",
    "clustered_paired_power": "evalband.stats._clustered_power",
    "clustered_paired_sample_size": "evalband.stats._clustered_power",
    "coverage": "evalband.stats._coverage",
    "coverage_grid": "evalband.stats._coverage",
    "diff_unpaired": "evalband.stats._difference",
    "diff_paired": "evalband.stats._difference",
    "mcnemar": "evalband.stats._exact",
    "fisher_exact_test": "evalband.stats._exact",
    "intervals": "evalband.stats._intervals",
    "interval": "evalband.stats._intervals",
    "interval_bounds": "evalband.stats._intervals",
    "holm": "evalband.stats._multiplicity",
    "holm_levels": "evalband.stats._multiplicity",
    "bonferroni": "evalband.stats._multiplicity",
    "benjamini_hochberg": "evalband.stats._multiplicity",
    "power": "evalband.stats._power",
    "sample_size": "evalband.stats._power",
    "minimum_detectable_difference": "evalband.stats._power",
    "price_list": "evalband.stats._power",
    "sequential_paired_test": "evalband.stats._sequential",
    "sequential_threshold": "evalband.stats._sequential",
    "confidence_sequence": "evalband.stats._sequential",
    "sequential_design": "evalband.stats._sequential_design",
    "boschloo_test": "evalband.stats._tests",
    "cochran_q": "evalband.stats._tests",
    "cmh_test": "evalband.stats._tests",
    "Difference": "evalband.stats._types",
    "Interval": "evalband.stats._types",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
