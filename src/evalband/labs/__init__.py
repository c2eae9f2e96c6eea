"""Labs: the seed documents' exercises, simulated into the run store for the analysis to read.

``evalband.labs.hidden_regression`` (seed 003) also holds the lab's constants (rates, slices,
default seed, latency medians).
"""

from evalband.labs import hidden_regression
from evalband.labs.hidden_regression import (
    HIDDEN_REGRESSION_RATES,
    hidden_regression_panel,
    simulate_hidden_regression,
)

__all__ = [
    "hidden_regression",
    "HIDDEN_REGRESSION_RATES",
    "hidden_regression_panel",
    "simulate_hidden_regression",
]
