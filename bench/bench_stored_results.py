"""Reading a stored comparison result vs computing the comparison again (what report/view save).

A hidden-regression lab store (baseline and candidate, three embodiment slices, ``N`` episodes
per slice per run) with the comparison's result recorded as ``evalband compare`` records it.
Timed side by side in interleaved rounds (medians of wall and CPU time): the typed result read
back from the store (``stored_comparisons``: the freshness check, one row's JSON,
``Comparison.from_dict``) against ``compare_many`` on the runs loaded from the store (what a
report did before results were stored). The ratio is computed / stored CPU time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 3.0


def run(quick: bool = False) -> dict[str, Any]:
    from evalband._api import load_run
    from evalband.analysis import compare_many
    from evalband.analysis._stored import stored_comparisons
    from evalband.labs.hidden_regression import simulate_hidden_regression
    from evalband.report._document import comparison_documents
    from evalband.store import RunStore

    episodes = 1000 if quick else 5000
    rounds = 5 if quick else 9
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.sqlite"
        with RunStore(path) as st:
            ids = list(simulate_hidden_regression(st, episodes=episodes, seed=4))
            fresh = compare_many(load_run(ids[0], st), [load_run(ids[1], st)])
            st.record_comparison(ids, result=comparison_documents(fresh))
        with RunStore(path, read_only=True) as st:
            n = st.count_episodes(ids[0])

            def stored() -> Any:
                found = stored_comparisons(st, ids, {})
                assert found is not None
                return found

            def computed() -> Any:
                return compare_many(load_run(ids[0], st), [load_run(ids[1], st)])

            assert comparison_documents(stored()) == comparison_documents(computed())
            times: dict[str, list[tuple[float, float]]] = {"stored": [], "computed": []}
            for _ in range(rounds):
                for name, fn in (("stored", stored), ("computed", computed)):
                    wall, cpu = time.perf_counter(), time.process_time()
                    fn()
                    times[name].append((time.perf_counter() - wall,
                                        time.process_time() - cpu))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in times.items()}
    ratio = med["computed"][1] / max(med["stored"][1], 1e-9)
    return {
        "name": "stored_results",
        "episodes_per_run": n,
        "rounds": rounds,
        "stored_wall_s": med["stored"][0],
        "stored_cpu_s": med["stored"][1],
        "computed_wall_s": med["computed"][0],
        "computed_cpu_s": med["computed"][1],
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "passed": bool(ratio >= TARGET_RATIO),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
