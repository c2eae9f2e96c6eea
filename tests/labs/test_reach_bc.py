"""The reaching lab's learned-policy exercise (seed 002), end to end through the CLI.

Oracles: the seed's own numbers and rules written out here (expert ``clip(-2x - 1.8v, -1, 1)``,
the 0.2 s exact-endpoint update, the three-sample success rule with boundary priority, the
documented column lists), a plain-Python re-simulation in the seed program's style,
``numpy.linalg.lstsq`` for the fit, and statsmodels' Wilson interval. Nothing is compared
with numbers copied from our own output.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalband.cli import main

# The documented columns (design brief / docs/reach-bc.md), written out as the oracle.
DEMO_COLUMNS = ["episode", "step", "x", "v", "action"]
RESULT_COLUMNS = ["trial", "policy", "dynamics", "start", "x0", "v0", "gain", "disturbance",
                  "outcome", "terminated", "truncated", "steps", "time_s"]
ROLLOUT_COLUMNS = ["trial", "policy", "dynamics", "start", "step", "t", "x", "v", "action",
                   "streak", "terminated", "truncated"]
ACTION_ERROR_COLUMNS = ["split", "episodes", "samples", "mse", "max_abs_error"]
STAGE_FILES = ["demos.csv", "demos.json", "split.json", "model.json"]
EVAL_FILES = ["summary.json", "rollout-results.csv", "rollouts.csv", "action-errors.csv"]


def pipeline(out: Path, *, seed: str = "7", stages: tuple[str, ...] = (
        "generate", "split", "train", "evaluate")) -> None:
    for stage in stages:
        assert main(["lab", "reach-bc", stage, "--out", str(out), "--seed", seed]
                    if stage != "train" else ["lab", "reach-bc", stage, "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reach-bc") / "run"
    pipeline(out)
    return out


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def fresh_copy(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the run without the evaluation outputs."""
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    for name in EVAL_FILES:
        (copy / name).unlink()
    return copy


# --- the seed's rules, written out independently -------------------------------------


def seed_rollout(policy, x: float, v: float, gain: float, disturbance: float):
    """The seed program's episode loop (exact observation), with a per-step trace."""
    settled, trace = 0, []
    for k in range(30):
        u = policy(x, v)
        new_v = v + 0.2 * (gain * u + disturbance)
        x += 0.2 * (v + new_v) / 2
        v = new_v
        settled = settled + 1 if abs(x) <= 0.1 and abs(v) <= 0.15 else 0
        trace.append((k + 1, x, v, u, settled))
        if abs(x) >= 1.25:
            return "failure", k + 1, trace
        if settled >= 3:
            return "success", k + 1, trace
    return "timeout", 30, trace


def expert(x: float, v: float) -> float:
    return max(-1.0, min(1.0, -2 * x - 1.8 * v))


def learned(weights: dict):
    def act(x: float, v: float) -> float:
        return max(-1.0, min(1.0, weights["w_x"] * x + weights["w_v"] * v + weights["b"]))
    return act


def demo_arrays(run_dir: Path) -> dict[str, np.ndarray]:
    _, rows = read_csv(run_dir / "demos.csv")
    return {c: np.array([float(r[c]) for r in rows]) for c in DEMO_COLUMNS}


# --- tests ---------------------------------------------------------------------------


def test_files_exist_with_exactly_the_documented_columns(run_dir: Path) -> None:
    for name in STAGE_FILES + EVAL_FILES:
        assert (run_dir / name).is_file(), name
    for name, columns in (("demos.csv", DEMO_COLUMNS), ("rollout-results.csv", RESULT_COLUMNS),
                          ("rollouts.csv", ROLLOUT_COLUMNS),
                          ("action-errors.csv", ACTION_ERROR_COLUMNS)):
        header, rows = read_csv(run_dir / name)
        assert header == columns, name
        assert rows and all(len(r) == len(columns) and None not in r.values() for r in rows)
    _, results = read_csv(run_dir / "rollout-results.csv")
    assert len(results) == 64  # 16 starts x {nominal, changed} x {learned, expert}
    _, errors = read_csv(run_dir / "action-errors.csv")
    assert [r["split"] for r in errors] == ["train", "validation", "final"]
    summary = load(run_dir / "summary.json")
    assert [t["trial"] for t in summary["trials"]] == [
        "nominal-learned", "nominal-expert", "changed-learned", "changed-expert"]
    for trial in summary["trials"]:
        assert {"successes", "attempts", "boundary", "timeouts", "wilson_95",
                "mean_time_among_successes_s"} <= set(trial)
    assert set(summary["paired_learned_vs_expert"]) == {"nominal", "changed"}


def test_expert_succeeds_16_of_16_under_nominal_dynamics(run_dir: Path) -> None:
    _, results = read_csv(run_dir / "rollout-results.csv")
    nominal_expert = [r for r in results if r["trial"] == "nominal-expert"]
    assert len(nominal_expert) == 16
    assert all(r["outcome"] == "success" and r["terminated"] == "true"
               and r["truncated"] == "false" for r in nominal_expert)
    row = next(t for t in load(run_dir / "summary.json")["trials"]
               if t["trial"] == "nominal-expert")
    assert (row["successes"], row["attempts"], row["boundary"], row["timeouts"]) == (16, 16, 0, 0)


def test_demonstrations_are_the_expert_under_nominal_dynamics(run_dir: Path) -> None:
    d = demo_arrays(run_dir)
    assert d["episode"].size == 80 * 30
    np.testing.assert_allclose(d["action"], np.clip(-2 * d["x"] - 1.8 * d["v"], -1, 1),
                               rtol=0, atol=1e-12)
    first = d["step"] == 0
    assert np.all(np.abs(d["x"][first]) <= 0.8) and np.all(np.abs(d["v"][first]) <= 0.15)
    # Consecutive rows of an episode follow the exact-endpoint update with g = 1, d = 0.
    same = d["episode"][1:] == d["episode"][:-1]
    new_v = d["v"][:-1] + 0.2 * d["action"][:-1]
    new_x = d["x"][:-1] + 0.2 * (d["v"][:-1] + new_v) / 2
    np.testing.assert_allclose(d["v"][1:][same], new_v[same], atol=1e-12)
    np.testing.assert_allclose(d["x"][1:][same], new_x[same], atol=1e-12)
    manifest = load(run_dir / "demos.json")
    assert manifest["data"]["sha256"] == hashlib.sha256(
        (run_dir / "demos.csv").read_bytes()).hexdigest()


def test_rollouts_match_an_independent_simulation(run_dir: Path) -> None:
    weights = load(run_dir / "model.json")["weights"]
    policies = {"learned": learned(weights), "expert": expert}
    _, results = read_csv(run_dir / "rollout-results.csv")
    _, steps = read_csv(run_dir / "rollouts.csv")
    by_rollout: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in steps:
        by_rollout.setdefault((row["trial"], row["start"]), []).append(row)
    for r in results:
        outcome, n, trace = seed_rollout(policies[r["policy"]], float(r["x0"]), float(r["v0"]),
                                         float(r["gain"]), float(r["disturbance"]))
        assert (r["outcome"], int(r["steps"])) == (outcome, n), r
        assert float(r["time_s"]) == pytest.approx(0.2 * n)
        assert r["terminated"] == ("true" if outcome != "timeout" else "false")
        assert r["truncated"] == ("true" if outcome == "timeout" else "false")
        rows = by_rollout[(r["trial"], r["start"])]
        assert len(rows) == n
        for row, (k, x, v, u, streak) in zip(rows, trace, strict=True):
            assert int(row["step"]) == k and float(row["t"]) == pytest.approx(0.2 * k)
            assert float(row["x"]) == pytest.approx(x, abs=1e-12)
            assert float(row["v"]) == pytest.approx(v, abs=1e-12)
            assert float(row["action"]) == pytest.approx(u, abs=1e-12)
            assert int(row["streak"]) == streak
            last = k == n
            assert row["terminated"] == ("true" if last and outcome != "timeout" else "false")
            assert row["truncated"] == ("true" if last and outcome == "timeout" else "false")


def test_changed_dynamics_are_shared_and_in_range(run_dir: Path) -> None:
    _, results = read_csv(run_dir / "rollout-results.csv")
    cond = {(r["trial"], r["start"]): (r["x0"], r["v0"], r["gain"], r["disturbance"])
            for r in results}
    for start in map(str, range(16)):
        learned_c, expert_c = cond[("changed-learned", start)], cond[("changed-expert", start)]
        assert learned_c == expert_c  # same start, gain and disturbance in each pair
        assert cond[("nominal-learned", start)][:2] == learned_c[:2]  # starts shared
        assert cond[("nominal-expert", start)][2:] == ("1.0", "0.0")
        gain, dist = float(learned_c[2]), float(learned_c[3])
        assert 0.6 <= gain <= 1.4 and -0.25 <= dist <= 0.25
    gains = {cond[("changed-learned", s)][2] for s in map(str, range(16))}
    assert len(gains) == 16  # drawn per start, not one value for the batch


def test_split_is_by_episode_and_final_starts_are_the_evaluation_starts(run_dir: Path) -> None:
    split = load(run_dir / "split.json")
    parts = [set(split[k]) for k in ("train", "validation", "final")]
    assert [len(p) for p in parts] == [48, 16, 16]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert parts[0] | parts[1] | parts[2] == set(range(80))
    d = demo_arrays(run_dir)
    first = d["step"] == 0
    start_of = {int(e): (x, v) for e, x, v in zip(d["episode"][first], d["x"][first],
                                                  d["v"][first], strict=True)}
    _, results = read_csv(run_dir / "rollout-results.csv")
    final = sorted(split["final"])
    for r in results:
        x0, v0 = start_of[final[int(r["start"])]]
        assert (float(r["x0"]), float(r["v0"])) == (x0, v0)
    model = load(run_dir / "model.json")
    assert model["samples"] == {"train": 48 * 30, "validation": 16 * 30}
    assert model["references"]["split"]["sha256"] == hashlib.sha256(
        (run_dir / "split.json").read_bytes()).hexdigest()


def test_training_never_reads_the_final_episodes(run_dir: Path, tmp_path: Path) -> None:
    """Rewrite every final-split row, re-split and re-train: the model must not move."""
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    final = set(load(copy / "split.json")["final"])
    lines = (copy / "demos.csv").read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        episode, step, *_ = line.split(",")
        out.append(f"{episode},{step},0.5,0.5,1.0" if int(episode) in final else line)
    (copy / "demos.csv").write_text("\n".join(out) + "\n")
    manifest = load(copy / "demos.json")
    manifest["data"]["sha256"] = hashlib.sha256((copy / "demos.csv").read_bytes()).hexdigest()
    (copy / "demos.json").write_text(json.dumps(manifest))
    pipeline(copy, stages=("split", "train"))
    before, after = load(run_dir / "model.json"), load(copy / "model.json")
    assert load(copy / "split.json")["final"] == sorted(final)
    assert after["candidates"] == before["candidates"] and after["weights"] == before["weights"]
    assert after["references"]["data"] != before["references"]["data"]


def test_affine_fit_recovers_the_expert_where_unsaturated(run_dir: Path) -> None:
    d = demo_arrays(run_dir)
    split, model = load(run_dir / "split.json"), load(run_dir / "model.json")
    train = np.isin(d["episode"], split["train"])
    X = np.column_stack([d["x"], d["v"], np.ones_like(d["x"])])
    unsaturated = train & (np.abs(d["action"]) < 1)
    gains = np.linalg.lstsq(X[unsaturated], d["action"][unsaturated], rcond=None)[0]
    np.testing.assert_allclose(gains, [-2.0, -1.8, 0.0], atol=1e-9)  # the expert's own law
    w = model["weights"]
    # Saturated rows flatten a least-squares line: the learned gains are close to the
    # expert's but attenuated toward zero (about 13% with these demonstrations).
    assert -2.0 < w["w_x"] < -2.0 * 0.85 and -1.8 < w["w_v"] < -1.8 * 0.85
    assert abs(w["b"]) < 0.01
    # Where the expert is unsaturated, the learned commands are close to its commands.
    pred = np.clip(X[unsaturated] @ [w["w_x"], w["w_v"], w["b"]], -1, 1)
    assert np.sqrt(np.mean((pred - d["action"][unsaturated]) ** 2)) < 0.03
    # The chosen weights are plain least squares on the train episodes (ridge 0).
    cols = [0, 1, 2] if model["chosen"].endswith(",intercept") else [0, 1]
    plain = np.linalg.lstsq(X[train][:, cols], d["action"][train], rcond=None)[0]
    np.testing.assert_allclose([w["w_x"], w["w_v"]], plain[:2], atol=1e-9)


def test_choice_is_the_lowest_validation_action_error(run_dir: Path) -> None:
    d = demo_arrays(run_dir)
    split, model = load(run_dir / "split.json"), load(run_dir / "model.json")
    val = np.isin(d["episode"], split["validation"])
    errors = {}
    for c in model["candidates"]:
        w = c["weights"]
        pred = np.clip(w["w_x"] * d["x"][val] + w["w_v"] * d["v"][val] + w["b"], -1, 1)
        errors[c["name"]] = float(np.mean((pred - d["action"][val]) ** 2))
        assert c["validation_mse"] == pytest.approx(errors[c["name"]], rel=1e-9)
    assert errors[model["chosen"]] == pytest.approx(min(errors.values()), rel=1e-9)
    assert {(c["ridge"], c["intercept"]) for c in model["candidates"]} >= {
        (0.0, True), (0.0, False)}
    _, rows = read_csv(run_dir / "action-errors.csv")
    for row in rows:
        mask = np.isin(d["episode"], split[row["split"]])
        pred = np.clip(model["weights"]["w_x"] * d["x"][mask]
                       + model["weights"]["w_v"] * d["v"][mask] + model["weights"]["b"], -1, 1)
        assert float(row["mse"]) == pytest.approx(np.mean((pred - d["action"][mask]) ** 2))
        assert int(row["samples"]) == mask.sum() and int(row["episodes"]) == len(
            split[row["split"]])


def test_summary_counts_bands_and_pairs(run_dir: Path) -> None:
    summary = load(run_dir / "summary.json")
    _, results = read_csv(run_dir / "rollout-results.csv")
    for trial in summary["trials"]:
        rows = [r for r in results if r["trial"] == trial["trial"]]
        k = sum(r["outcome"] == "success" for r in rows)
        assert (trial["successes"], trial["attempts"]) == (k, 16)
        assert trial["boundary"] == sum(r["outcome"] == "failure" for r in rows)
        assert trial["timeouts"] == sum(r["outcome"] == "timeout" for r in rows)
        low, high = proportion_confint(k, 16, alpha=0.05, method="wilson")
        assert trial["wilson_95"]["low"] == pytest.approx(low, abs=1e-9)
        assert trial["wilson_95"]["high"] == pytest.approx(high, abs=1e-9)
        times = [float(r["time_s"]) for r in rows if r["outcome"] == "success"]
        assert trial["mean_time_among_successes_s"] == pytest.approx(np.mean(times))
    for dynamics, pairs in summary["paired_learned_vs_expert"].items():
        ok = {(r["policy"], r["start"]): r["outcome"] == "success" for r in results
              if r["dynamics"] == dynamics}
        table = {"both": 0, "learned_only": 0, "expert_only": 0, "neither": 0}
        for s in map(str, range(16)):
            a, b = ok[("learned", s)], ok[("expert", s)]
            table["both" if a and b else "learned_only" if a else "expert_only" if b
                  else "neither"] += 1
        assert {k: pairs[k] for k in table} == table and pairs["pairs"] == 16


def test_rerun_with_the_same_seeds_is_byte_identical(run_dir: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    pipeline(again)
    for name in STAGE_FILES + EVAL_FILES:
        assert (again / name).read_bytes() == (run_dir / name).read_bytes(), name
    other = tmp_path / "other"
    pipeline(other, seed="8")
    assert (other / "demos.csv").read_bytes() != (run_dir / "demos.csv").read_bytes()


def test_evaluate_refuses_a_changed_data_file(run_dir: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    copy = fresh_copy(run_dir, tmp_path)
    text = (copy / "demos.csv").read_text()
    lines = text.splitlines()
    fields = lines[5].split(",")
    fields[4] = repr(float(fields[4]) + 1e-6)
    lines[5] = ",".join(fields)
    (copy / "demos.csv").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["lab", "reach-bc", "evaluate", "--out", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data reference changed" in err and "demos.csv" in err
    assert not any((copy / name).exists() for name in EVAL_FILES)


def test_evaluate_refuses_a_changed_split(run_dir: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    copy = fresh_copy(run_dir, tmp_path)
    split = load(copy / "split.json")
    split["final"][0], split["train"][0] = split["train"][0], split["final"][0]
    (copy / "split.json").write_text(json.dumps(split, indent=2) + "\n")
    capsys.readouterr()
    assert main(["lab", "reach-bc", "evaluate", "--out", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "split reference changed" in err and "split.json" in err
    assert "train" in err  # says what to do
    assert not any((copy / name).exists() for name in EVAL_FILES)


def test_train_refuses_data_changed_after_the_split(run_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    copy = fresh_copy(run_dir, tmp_path)
    with (copy / "demos.csv").open("a") as handle:
        handle.write("0,30,0.0,0.0,0.0\n")
    capsys.readouterr()
    assert main(["lab", "reach-bc", "train", "--out", str(copy)]) == 2
    assert "data reference changed" in capsys.readouterr().err


def test_evaluate_loads_the_model_without_refitting(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalband.labs._reach_bc_fit as fit
    import evalband.labs.reach_bc as lab

    def no_fit(*args: object, **kwargs: object) -> None:
        raise AssertionError("evaluate must not fit")

    monkeypatch.setattr(fit, "fit_affine", no_fit)
    monkeypatch.setattr(lab, "select_candidate", no_fit)
    copy = fresh_copy(run_dir, tmp_path)
    assert main(["lab", "reach-bc", "evaluate", "--out", str(copy)]) == 0
    for name in EVAL_FILES:
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes()


def test_zero_successes_are_reported_as_such(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model edited to push at +1 always: under nominal dynamics no three consecutive
    velocities (each 0.2 m/s apart) fit in the 0.3 m/s wide band, so it cannot succeed."""
    copy = fresh_copy(run_dir, tmp_path)
    model = load(copy / "model.json")
    model["weights"].update(w_x=0.0, w_v=0.0, b=1.0)
    (copy / "model.json").write_text(json.dumps(model))
    capsys.readouterr()
    assert main(["lab", "reach-bc", "evaluate", "--out", str(copy), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    row = next(t for t in summary["trials"] if t["trial"] == "nominal-learned")
    assert row["successes"] == 0 and row["mean_time_among_successes_s"] == "no successes"
    assert row["boundary"] == 16  # v grows 0.2 m/s per action: |x| reaches 1.25 in 6 s
    assert row["wilson_95"]["low"] == 0.0
    assert summary["model"]["weights"]["b"] == 1.0 and "+ 1.0000" in summary["model"]["formula"]
    assert summary == load(copy / "summary.json")


def test_human_summary_has_the_seed_table_shape(run_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    copy = fresh_copy(run_dir, tmp_path)
    capsys.readouterr()
    assert main(["lab", "reach-bc", "evaluate", "--out", str(copy)]) == 0
    text = capsys.readouterr().out
    for label in ("Nominal, learned", "Nominal, expert", "Changed, learned", "Changed, expert",
                  "Success", "Boundary", "Timeout", "paired, changed", "offline action MSE"):
        assert label in text
    assert "16/16" in text


def test_too_few_episodes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "reach-bc", "generate", "--out", str(tmp_path / "x"),
                 "--episodes", "17"]) == 2
    err = capsys.readouterr().err  # typer's own range check on the option, naming it
    assert "--episodes" in err and "greater than or equal to 18 (got 17)" in err
    assert not (tmp_path / "x").exists()
    assert main(["lab", "reach-bc", "evaluate", "--out", str(tmp_path / "none")]) == 2
    assert "run `evalband lab reach-bc train" in capsys.readouterr().err
