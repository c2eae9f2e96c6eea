"""``evalband show`` and ``compare`` print metrics: real Reacher-v5 (gymnasium MuJoCo) runs.

Two controllers on one two-slice panel: the return (a primary metric) and the final distance
are compared per slice with their intervals, and the primary metric decides the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband.cli import main

PANEL = """\
name: reacher-metrics
env: Reacher-v5
episodes: 8
seed: 0
budget: {steps: 50}
success: {rule: final_step, key: reward_dist, threshold: -0.01}
factors:
  skip:
    target: env_kwargs
    dynamics_only: true
    levels: {fast: {frame_skip: 2}, slow: {frame_skip: 3}}
metrics:
  - {name: return, primary: true, type: unbounded}
  - reward_dist
"""


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_reacher_compare_prints_the_return_difference_per_slice(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("gymnasium.envs.mujoco")
    panel = tmp_path / "reacher.yaml"
    panel.write_text(PANEL)
    db = str(tmp_path / "s.sqlite")
    for run_id, policy in (("soft", "reacher_policies:soft"), ("pd", "reacher:ik_pd")):
        code, _, err = run_cli(capsys, "run", str(panel), "--policy", policy, "--store", db,
                               "--run-id", run_id, "--json")
        assert code == 0, err
    code, out, _ = run_cli(capsys, "show", "pd", "--store", db)
    assert code == 0 and "return (primary)" in out and "t (unbounded)" in out
    rows = [x for x in out.splitlines() if x.startswith("return")]
    assert [next(n for n in ("skip=fast", "skip=slow", "overall") if f" {n} " in x)
            for x in rows] == ["skip=fast", "skip=slow", "overall"]  # per slice, overall last
    code, out, _ = run_cli(capsys, "show", "pd", "--store", db, "--json")
    shown = {(m["metric"], m["slice"]): m for m in json.loads(out)["metrics"]}
    assert shown["return", "overall"]["mean"]["method"] == "student-t"
    assert shown["return", "overall"]["n"] == 16
    # undeclared, 16 values are too few to read the skewness from: the median
    assert shown["reward_dist", "overall"]["estimand"] == "median"
    from scipy import stats as scipy_stats

    from evalband.store import RunStore

    with RunStore(Path(db)) as st:  # the oracle: the stored episodes, summarised by scipy
        records = st.episode_records("pd")
    for level in ("fast", "slow"):
        x = [r.metrics["return"] for r in records if r.slices["skip"] == level]
        row = shown["return", f"skip={level}"]
        assert row["kind"] == "factor" and row["n"] == len(x) == 8
        low, high = scipy_stats.t.interval(0.95, len(x) - 1, loc=sum(x) / len(x),
                                           scale=scipy_stats.sem(x))
        assert row["mean"]["estimate"] == pytest.approx(sum(x) / len(x))
        assert (row["mean"]["low"], row["mean"]["high"]) == pytest.approx((low, high))

    # the stiffer controller spends more control effort: a lower return in every slice
    code, out, _ = run_cli(capsys, "compare", "soft", "pd", "--store", db)
    lines = out.splitlines()
    for name in ("skip=fast", "skip=slow"):
        row = next(x for x in lines if x.startswith("return") and f" {name} " in x)
        assert "8 pairs" in row and "paired" in row and "regressed" in row
        assert next(x for x in lines if x.startswith("reward_dist") and f" {name} " in x
                    ).rstrip().endswith("descriptive")
    assert "delta time to success" not in out  # a final_step rule: no time to success
    assert code == 4 and "return @ skip=fast" in out  # the primary metric decides

    code, out, _ = run_cli(capsys, "compare", "soft", "pd", "--store", db, "--json")
    doc = json.loads(out)
    decided = [m for m in doc["metrics"] if m["role"] == "primary"]
    assert {m["slice"] for m in decided} == {"skip=fast", "skip=slow"}
    assert all(m["verdict"] == "regressed" and m["p_holm"] <= 0.05
               and m["delta"]["high"] < 0 for m in decided)
    assert doc["procedure"]["family_size"] == 4 and doc["verdict"] == "regression"


PUSHT = """\
name: gym-pusht-metrics
env: gym_pusht/PushT-v0
imports: [gym_pusht]
env_kwargs: {obs_type: state}
episodes: 10
seed: 0
budget: {seconds: 10.0}
metrics: [{name: coverage, primary: true, bounded: true}]
"""


def test_pusht_coverage_is_compared_and_decides(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    pytest.importorskip("gym_pusht")
    panel = tmp_path / "pusht.yaml"
    panel.write_text(PUSHT)
    db = str(tmp_path / "s.sqlite")
    for run_id, policy in (("push", "gym_pusht:push"),
                           ("idle", "evalband.policies._builtin:zero_action")):
        code, _, err = run_cli(capsys, "run", str(panel), "--policy", policy, "--store", db,
                               "--run-id", run_id, "--json")
        assert code == 0, err
    code, out, _ = run_cli(capsys, "show", "push", "--store", db)
    assert "coverage (primary)" in out and "studentised bootstrap (bounded in [0, 1])" in out
    code, out, _ = run_cli(capsys, "compare", "push", "idle", "--store", db, "--json")
    doc = json.loads(out)
    (cov,) = [m for m in doc["metrics"] if m["metric"] == "coverage"]
    assert cov["n_pairs"] == 10 and cov["mean_candidate"] < cov["mean_baseline"]
    assert cov["verdict"] == "regressed" and cov["delta"]["high"] < 0
    assert doc["verdict"] == "regression" and code == 4  # the success rates do not differ
