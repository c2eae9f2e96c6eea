"""Labs: the seed documents' exercises, simulated into the run store for the analysis to read.

``evalband.labs.hidden_regression`` (seed 003) holds the hidden-regression lab: its constants
(rates, slices, default seed, latency medians), its panel and its simulation.
"""

__all__: list[str] = []
