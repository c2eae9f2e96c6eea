"""Analysis on episode records: summaries, pairing, comparisons (calls :mod:`evalband.stats`)."""

from evalband.analysis._summary import PairedCounts, RunSummary, paired_counts, summarize

__all__ = ["PairedCounts", "RunSummary", "paired_counts", "summarize"]
