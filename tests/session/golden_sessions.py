"""The simulated sessions behind the ``--json`` golden test: every session feature at once.

``python tests/session/golden_sessions.py OUT.json`` writes the CLI's ``--json`` output of
``session analyze`` (a locked pre-registration, a post-hoc grouping, a positive control with a
floor, skipped and assisted trials; and the same session half-scored, unblinded) and of
``session drift`` (Fisher and Boschloo) for these sessions. The golden file was written once by
the code before the session analysis moved onto the comparison foundation; the test compares
every number of today's output with it.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessionkit import pending_after, store_session

from evalband.cli import main
from evalband.session import plan_session, simulate_session

RATES = {"A": 0.85, "B": 0.5, "C": 0.15, "D": 0.45}


def _cli(*args: str) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    if code != 0:
        raise RuntimeError(f"evalband {' '.join(args)} exited {code}")
    return json.loads(out.getvalue())


def golden_outputs(tmp: Path) -> dict[str, Any]:
    """Every ``--json`` output of the golden sessions, keyed by what was run."""
    db = tmp / "golden.sqlite"
    plan_file = tmp / "plan.yaml"
    plan_file.write_text(
        "session: grasp\ncomparisons:\n  - [A, C]\n  - [B, D]\n"
        "groupings:\n  pre:\n    pretrained: [A, B]\n    scratch: [C, D]\n"
        "positive_control_floor: 0.5\n"
    )
    _cli("prereg", "lock", str(plan_file), "--store", str(db), "--json")
    start = datetime(2099, 1, 1, tzinfo=UTC).isoformat()
    plan = plan_session(list(RATES), scenes=20, attempts=2, seed=31, session_id="grasp",
                        positive_control="A")
    trials = simulate_session(plan, success_prob=RATES, flip_prob=0.2, skip_prob=0.05,
                              assist_prob=0.05, scene_correlation=0.2, seed=32, start=start)
    store_session(db, plan, trials)
    half = plan_session(list(RATES), scenes=10, attempts=3, seed=33, session_id="half",
                        blind=True)
    half_trials = pending_after(
        simulate_session(half, success_prob=RATES, flip_prob=0.2, seed=34, start=start), 70)
    store_session(db, half, half_trials)
    week = plan_session(["A", "E"], scenes=14, attempts=2, seed=35, session_id="week2",
                        positive_control="A")
    week_trials = simulate_session(week, success_prob={"A": 0.45, "E": 0.6}, flip_prob=0.2,
                                   seed=36, start=start)
    store_session(db, week, week_trials)
    s = ("--store", str(db), "--json")
    return {
        "analyze": _cli("session", "analyze", "grasp", *s, "--group", "A vs B,C",
                        "--control-floor", "0.6"),
        "analyze_90": _cli("session", "analyze", "grasp", *s, "--confidence", "0.9"),
        "analyze_half": _cli("session", "analyze", "half", *s, "--unblind"),
        "drift": _cli("session", "drift", "grasp", "week2", *s),
        "drift_boschloo": _cli("session", "drift", "grasp", "week2", *s, "--test", "boschloo"),
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        Path(sys.argv[1]).write_text(json.dumps(golden_outputs(Path(d))) + "\n")
