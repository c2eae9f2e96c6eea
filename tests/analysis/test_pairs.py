"""Column-wise pair tables equal the record-by-record definition, slice by slice."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from evalband.analysis import compare_many
from evalband.analysis._compare import RunData
from evalband.analysis._pairs import pair_table
from evalband.episode import EpisodeRecord
from evalband.panel import load_panel

PANEL = load_panel({"name": "cols", "env": "evalband/Coin-v0", "episodes": 6, "seed": 0,
                    "budget": {"steps": 1}, "repeats": 2,
                    "factors": {"a": ["x", "y"], "b": ["1", "2", "3"]}})

episode = st.tuples(
    st.sampled_from(["success", "failure", "timeout", "error"]),
    st.booleans(),  # present in this run
    st.booleans(),  # assisted
    st.one_of(st.none(), st.floats(0.1, 50.0)),  # latency p95
)


def build(run_id: str, draws: list[tuple[str, bool, bool, float | None]]) -> RunData:
    recs = []
    i = 0
    for cell in PANEL.cells():
        for ep in range(PANEL.episodes):
            for rep in range(PANEL.repeats):
                outcome, present, assisted, lat = draws[i % len(draws)]
                i += 1
                if not present:
                    continue
                recs.append(EpisodeRecord(
                    run_id=run_id, policy=run_id, panel_fingerprint=PANEL.fingerprint,
                    cell=cell.key, slices=dict(cell.slices), episode=ep, repeat=rep,
                    condition_seed=ep, outcome=outcome, terminated=True, truncated=False,
                    steps=1, time_to_success_s=0.5 * (ep + 1) if outcome == "success" else None,
                    assisted=assisted, latency_ms_p95=lat))
    return RunData(run_id, run_id, PANEL.fingerprint, PANEL, recs)


@settings(max_examples=40, deadline=None)
@given(st.lists(episode, min_size=1, max_size=40), st.lists(episode, min_size=1, max_size=40),
       st.booleans())
def test_every_slice_row_equals_the_record_level_oracle(base_draws, cand_draws, eaf) -> None:
    base, cand = build("b", base_draws), build("c", cand_draws)
    base = RunData(base.run_id, base.policy, base.panel_fingerprint, PANEL, base.records, eaf)
    (c,) = compare_many(base, [cand], power_statements=False)
    for row in c.slice_rows:
        def inside(r: EpisodeRecord, name: str = row.name, kind: str = row.kind) -> bool:
            if kind == "cell":
                return r.cell == name
            factor, value = name.split("=")
            return r.slices.get(factor) == value

        b = [r for r in base.records if inside(r) and (eaf or r.outcome != "error")]
        k = [r for r in cand.records if inside(r) and (eaf or r.outcome != "error")]
        t = pair_table(b, k)
        assert (row.n_baseline, row.successes_baseline) == (t.n_baseline, t.k_baseline)
        assert (row.n_candidate, row.successes_candidate) == (t.n_candidate, t.k_candidate)
        if t.paired:
            assert row.pairs == {"both": t.both, "baseline_only": t.baseline_only,
                                 "candidate_only": t.candidate_only, "neither": t.neither,
                                 "unmatched": t.unmatched}
        else:
            assert row.pairing == "unpaired"
        if k:
            assert math.isclose(row.unaided_rate_candidate,
                                sum(r.success and not r.assisted for r in k) / len(k))
        lats = sorted(r.latency_ms_p95 for r in k if r.latency_ms_p95 is not None)
        assert (row.latency_p95_candidate_ms is None) == (not lats)
        times = [r.time_to_success_s for r in b if r.success]
        if times:
            assert math.isclose(row.mean_time_to_success_baseline_s, sum(times) / len(times))
        else:
            assert row.mean_time_to_success_baseline_s is None
