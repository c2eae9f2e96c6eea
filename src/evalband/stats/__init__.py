"""Statistics on counts and arrays: intervals, differences, tests, power, coverage.

Pure functions (numpy/scipy only): no I/O, no knowledge of runs. Each formula
cites its source in its docstring and is tested against an independent oracle.

Submodules load on first use (``evalband.stats.interval`` imports ``_intervals`` then), so a
process that only needs input validation, such as a runner worker, never pays for
``scipy.stats``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.stats._bootstrap import (
        bootstrap_interval,
        cluster_bootstrap_interval,
        paired_stratified_bootstrap_interval,
        stratified_bootstrap_interval,
    )
    from evalband.stats._cluster_rates import (
        cluster_proportion_interval,
        clustered_diff_unpaired,
    )
    from evalband.stats._clustered import (
        clustered_grouped_interval,
        clustered_grouped_test,
        clustered_paired_interval,
        clustered_paired_test,
        sign_flip_test,
    )
    from evalband.stats._clustered_power import (
        clustered_paired_power,
        clustered_paired_sample_size,
    )
    from evalband.stats._coverage import CoverageGrid, coverage, coverage_grid
    from evalband.stats._difference import PAIRED_METHODS, diff_paired, diff_unpaired
    from evalband.stats._intervals import (
        INTERVAL_METHODS,
        interval,
        interval_bounds,
        intervals,
    )
    from evalband.stats._multiplicity import benjamini_hochberg, bonferroni, holm, holm_levels
    from evalband.stats._normal import z_value
    from evalband.stats._power import (
        PriceRow,
        discordant_from_correlation,
        minimum_detectable_difference,
        power,
        price_list,
        sample_size,
    )
    from evalband.stats._power_statement import (
        PowerStatement,
        joint_pair,
        pair_correlation,
        power_statement,
        smallest_drop,
    )
    from evalband.stats._procedure import (
        compatible_difference,
        detectable_drop,
        episodes_for_drop,
        exact_power,
        holm_decisions,
        paired_exact_p,
        unpaired_exact_p,
    )
    from evalband.stats._sequential import (
        DEFAULT_FUTILITY,
        SequentialTest,
        confidence_sequence,
        design_theta,
        log_likelihood_ratio,
        pair_in_order,
        sequential_paired_test,
        sequential_threshold,
    )
    from evalband.stats._sequential_design import (
        SequentialDesign,
        best_power_at,
        operating_characteristics,
        sequential_design,
    )
    from evalband.stats._shrinkage import Shrinkage, shrunken_rates
    from evalband.stats._stratified import stratified_difference
    from evalband.stats._tests import (
        MCNEMAR_METHODS,
        boschloo_test,
        cmh_test,
        cochran_q,
        fisher_exact_test,
        mcnemar,
    )
    from evalband.stats._types import Difference, Interval, SliceVerdict, TestResult

__all__ = [
    "interval",
    "interval_bounds",
    "intervals",
    "INTERVAL_METHODS",
    "bootstrap_interval",
    "stratified_bootstrap_interval",
    "paired_stratified_bootstrap_interval",
    "cluster_bootstrap_interval",
    "coverage",
    "coverage_grid",
    "CoverageGrid",
    "Interval",
    "Difference",
    "TestResult",
    "SliceVerdict",
    "z_value",
    "holm",
    "holm_levels",
    "sign_flip_test",
    "clustered_paired_test",
    "clustered_paired_interval",
    "clustered_grouped_test",
    "clustered_grouped_interval",
    "cluster_proportion_interval",
    "clustered_diff_unpaired",
    "clustered_paired_power",
    "clustered_paired_sample_size",
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
    "sequential_paired_test",
    "sequential_threshold",
    "confidence_sequence",
    "SequentialTest",
    "sequential_design",
    "SequentialDesign",
    "compatible_difference",
    "detectable_drop",
    "episodes_for_drop",
    "exact_power",
    "holm_decisions",
    "paired_exact_p",
    "pair_correlation",
    "power_statement",
    "PowerStatement",
    "shrunken_rates",
    "Shrinkage",
    "joint_pair",
    "smallest_drop",
    "best_power_at",
    "operating_characteristics",
    "stratified_difference",
    "unpaired_exact_p",
    "DEFAULT_FUTILITY",
    "design_theta",
    "log_likelihood_ratio",
    "pair_in_order",
]

_LAZY = {
    "CoverageGrid": "evalband.stats._coverage",
    "Difference": "evalband.stats._types",
    "INTERVAL_METHODS": "evalband.stats._intervals",
    "Interval": "evalband.stats._types",
    "MCNEMAR_METHODS": "evalband.stats._exact",
    "PAIRED_METHODS": "evalband.stats._difference",
    "PriceRow": "evalband.stats._power",
    "TestResult": "evalband.stats._types",
    "SliceVerdict": "evalband.stats._types",
    "benjamini_hochberg": "evalband.stats._multiplicity",
    "bonferroni": "evalband.stats._multiplicity",
    "bootstrap_interval": "evalband.stats._bootstrap",
    "boschloo_test": "evalband.stats._tests",
    "cluster_bootstrap_interval": "evalband.stats._bootstrap",
    "cmh_test": "evalband.stats._tests",
    "cochran_q": "evalband.stats._tests",
    "coverage": "evalband.stats._coverage",
    "coverage_grid": "evalband.stats._coverage",
    "diff_paired": "evalband.stats._difference",
    "diff_unpaired": "evalband.stats._difference",
    "discordant_from_correlation": "evalband.stats._power",
    "fisher_exact_test": "evalband.stats._exact",
    "holm": "evalband.stats._multiplicity",
    "holm_levels": "evalband.stats._multiplicity",
    "sign_flip_test": "evalband.stats._clustered",
    "clustered_paired_test": "evalband.stats._clustered",
    "clustered_paired_interval": "evalband.stats._clustered",
    "clustered_grouped_test": "evalband.stats._clustered",
    "clustered_grouped_interval": "evalband.stats._clustered",
    "cluster_proportion_interval": "evalband.stats._cluster_rates",
    "clustered_diff_unpaired": "evalband.stats._cluster_rates",
    "clustered_paired_power": "evalband.stats._clustered_power",
    "clustered_paired_sample_size": "evalband.stats._clustered_power",
    "interval": "evalband.stats._intervals",
    "interval_bounds": "evalband.stats._intervals",
    "intervals": "evalband.stats._intervals",
    "mcnemar": "evalband.stats._exact",
    "minimum_detectable_difference": "evalband.stats._power",
    "paired_stratified_bootstrap_interval": "evalband.stats._bootstrap",
    "power": "evalband.stats._power",
    "price_list": "evalband.stats._power",
    "sample_size": "evalband.stats._power",
    "stratified_bootstrap_interval": "evalband.stats._bootstrap",
    "z_value": "evalband.stats._normal",
    "sequential_paired_test": "evalband.stats._sequential",
    "sequential_threshold": "evalband.stats._sequential",
    "confidence_sequence": "evalband.stats._sequential",
    "SequentialTest": "evalband.stats._sequential",
    "sequential_design": "evalband.stats._sequential_design",
    "SequentialDesign": "evalband.stats._sequential_design",
    "compatible_difference": "evalband.stats._procedure",
    "detectable_drop": "evalband.stats._procedure",
    "episodes_for_drop": "evalband.stats._procedure",
    "exact_power": "evalband.stats._procedure",
    "holm_decisions": "evalband.stats._procedure",
    "paired_exact_p": "evalband.stats._procedure",
    "pair_correlation": "evalband.stats._power_statement",
    "power_statement": "evalband.stats._power_statement",
    "PowerStatement": "evalband.stats._power_statement",
    "shrunken_rates": "evalband.stats._shrinkage",
    "joint_pair": "evalband.stats._power_statement",
    "smallest_drop": "evalband.stats._power_statement",
    "best_power_at": "evalband.stats._sequential_design",
    "operating_characteristics": "evalband.stats._sequential_design",
    "Shrinkage": "evalband.stats._shrinkage",
    "stratified_difference": "evalband.stats._stratified",
    "unpaired_exact_p": "evalband.stats._procedure",
    "DEFAULT_FUTILITY": "evalband.stats._sequential",
    "design_theta": "evalband.stats._sequential",
    "log_likelihood_ratio": "evalband.stats._sequential",
    "pair_in_order": "evalband.stats._sequential",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
