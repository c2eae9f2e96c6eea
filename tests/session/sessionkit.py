"""Helpers for the session analysis tests: write a simulated session into a real store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalband.session import SessionPlan, SessionStore


def store_session(path: Path, plan: SessionPlan, trials: pd.DataFrame) -> None:
    """Create the plan in the store and record every non-pending trial through SessionStore."""
    with SessionStore(path) as ss:
        ss.create(plan)
        for row in trials.itertuples():
            if row.status == "pending":
                continue
            skipped = row.status == "skipped"
            ss.record(plan.session_id, int(row.trial_index), status=str(row.status),
                      score=None if skipped else int(row.score), assisted=bool(row.assisted),
                      scored_at=str(row.scored_at))


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
