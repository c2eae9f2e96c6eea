"""Helpers for the session analysis tests: write a simulated session into a real store."""

from __future__ import annotations

import pandas as pd

from testkit import store_session

__all__ = ["store_session", "pending_after"]  # store_session: shared with tests/report


def pending_after(trials: pd.DataFrame, n: int) -> pd.DataFrame:
    """The table with every trial from index ``n`` on reset to pending (a session in progress)."""
    out = trials.copy()
    later = out["trial_index"] >= n
    out.loc[later, "status"] = "pending"
    out.loc[later, "score"] = pd.NA
    out.loc[later, "success"] = pd.NA
    out.loc[later, "assisted"] = False
    out.loc[later, "scored_at"] = None
    return out
