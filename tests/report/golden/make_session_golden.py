"""Make ``session-sections.json``: the session section as the renderer before its template wrote it.

Run with the code before the section moved into ``report/templates/session.html.j2`` (commit
a3f1dbf, where ``report/_session.py`` built the markup in Python strings), from the
repository root::

    PYTHONPATH=src python tests/report/golden/make_session_golden.py \
        tests/report/golden/session-sections.json

Three simulated sessions (one scene and no positive control; six scenes with a control, skips
and assisted trials; ten scenes with a control), each analysis rendered by ``session_section``.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def sections() -> list[str]:
    """The section of each of the three sessions, rendered by the code that runs this."""
    from evalband.report._session import session_section
    from evalband.session import analyze_session, plan_session, simulate_session

    out = []
    cases: list[tuple[int, Any, float]] = [(1, None, 0.0), (6, "A", 0.1), (10, "B", 0.0)]
    for i, (scenes, control, skip) in enumerate(cases):
        plan = plan_session(["A", "B", "C"], scenes=scenes, attempts=2, seed=i,
                            session_id=f"s{i}", positive_control=control)
        trials = simulate_session(plan, success_prob={"A": .8, "B": .5, "C": .2}, flip_prob=.2,
                                  skip_prob=skip, assist_prob=skip, seed=i)
        out.append(session_section(analyze_session(plan, trials,
                                                   control_floor=0.6 if control else None)))
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(sections(), fh, indent=0)
        fh.write("\n")
