"""Statistics on counts and arrays: intervals, differences, tests, power, coverage.

Pure functions (numpy/scipy only): no I/O, no knowledge of runs. Each formula
cites its source in its docstring and is tested against an independent oracle.
"""

from evalband.stats._bootstrap import (
    bootstrap_interval,
    cluster_bootstrap_interval,
    stratified_bootstrap_interval,
)
from evalband.stats._coverage import CoverageGrid, coverage, coverage_grid
from evalband.stats._difference import PAIRED_METHODS, diff_paired, diff_unpaired
from evalband.stats._intervals import INTERVAL_METHODS, interval, interval_bounds
from evalband.stats._multiplicity import benjamini_hochberg, bonferroni, holm
from evalband.stats._power import (
    PriceRow,
    discordant_from_correlation,
    minimum_detectable_difference,
    power,
    price_list,
    sample_size,
)
from evalband.stats._tests import (
    MCNEMAR_METHODS,
    boschloo_test,
    cmh_test,
    cochran_q,
    fisher_exact_test,
    mcnemar,
)
from evalband.stats._types import Difference, Interval, TestResult
from evalband.stats._validate import z_value

__all__ = [
    "interval",
    "interval_bounds",
    "INTERVAL_METHODS",
    "bootstrap_interval",
    "stratified_bootstrap_interval",
    "cluster_bootstrap_interval",
    "coverage",
    "coverage_grid",
    "CoverageGrid",
    "Interval",
    "Difference",
    "TestResult",
    "z_value",
    "holm",
    "bonferroni",
    "benjamini_hochberg",
    "sample_size",
    "power",
    "minimum_detectable_difference",
    "price_list",
    "PriceRow",
    "discordant_from_correlation",
    "diff_unpaired",
    "diff_paired",
    "PAIRED_METHODS",
    "mcnemar",
    "MCNEMAR_METHODS",
    "fisher_exact_test",
    "boschloo_test",
    "cochran_q",
    "cmh_test",
]
