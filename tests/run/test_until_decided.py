"""run --until-decided: interleaved play, looks after each chunk, stop when decided, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from evalband._api import load_run
from evalband.cli import main
from evalband.labs.hidden_regression import (
    FACTOR,
    HARD_SLICE,
    HIDDEN_REGRESSION_RATES,
    hidden_regression_panel,
    simulate_hidden_regression,
)
from evalband.run import Recorder
from evalband.run._until import SequentialMonitor, interleave
from evalband.store import open_store

COIN = "evalband.policies._builtin:zero_action"


@pytest.fixture(scope="module")
def lab_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding the lab's 200-per-slice baseline (made once, copied per test)."""
    db = tmp_path_factory.mktemp("lab") / "s.sqlite"
    with open_store(db) as st:
        base_id, _ = simulate_hidden_regression(st, episodes=200)
    return db, base_id


def _copy(lab_store: tuple[Path, str], tmp_path: Path) -> tuple[str, str]:
    import shutil

    db = tmp_path / "s.sqlite"
    shutil.copy(lab_store[0], db)
    return str(db), lab_store[1]


def test_lab_candidate_stops_early_with_the_hidden_regression_named(
        tmp_path: Path, lab_store: tuple[Path, str]) -> None:
    """The lab's own candidate (0.7->0.9, 0.6->0.4, 0.8->0.8), logged in interleaved order and
    looked at after every round of cells, stops before its maximum, naming only the hard slice."""
    panel = hidden_regression_panel(200)
    db, base_id = _copy(lab_store, tmp_path)
    with open_store(db) as st:
        base = load_run(base_id, st)
        plan = interleave(panel.episode_specs())
        with Recorder(st, panel, "candidate", run_id="seq-cand") as rec:
            monitor = SequentialMonitor(st, "seq-cand", base, panel, len(plan), 6)
            monitor.start([])
            for spec in plan:
                p = HIDDEN_REGRESSION_RATES[spec.slices[FACTOR]][1]
                u = float(np.random.default_rng(spec.condition_seed).random())
                record = rec.log(cell=spec.cell, episode=spec.episode, repeat=spec.repeat,
                                 outcome="success" if u < p else "failure", steps=1,
                                 sim_time_s=0.1)
                if monitor(record):
                    break
        state = st.require_run("seq-cand").extra["sequential"]
    assert state["decision"] == "regression"
    assert monitor.count < len(plan)
    assert f"{FACTOR}={HARD_SLICE}" in state["sentence"]
    assert "widowx" not in state["sentence"] and "mobile" not in state["sentence"]
    last = state["looks"][-1]["slices"][f"{FACTOR}={HARD_SLICE}"]
    assert last["statistic"] >= last["boundary"] and last["verdict"] == "regressed"
    counts = [look["episodes"] for look in state["looks"]]
    assert counts == sorted(counts) and all(c % 6 == 0 for c in counts)
    # one declared design, recorded with the looks, every look's boundary its threshold
    design = state["design"]
    assert design["alpha_side"] == pytest.approx(0.05 / (2 * 3))
    for name, sl in design["slices"].items():
        assert sl["max_discordant"] <= sl["max_pairs"] <= 200
        assert sl["max_pairs"] <= monitor.horizons[name]
        assert all(look["slices"][name]["boundary"] == pytest.approx(math.log(sl["threshold"]))
                   for look in state["looks"] if name in look["slices"])


def test_bad_design_inputs_stop_before_anything_is_played(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.sqlite")
    code = main(["run", "reach1d", "--policy", "reach1d:baseline", "--against-policy",
                 "reach1d:expert", "--until-decided", "--effect", "0.2", "--discordant", "0.1",
                 "--store", db])
    assert code == 2 and "--discordant" in capsys.readouterr().err
    with open_store(db) as st:
        assert st.list_runs() == []


@pytest.mark.slow
def test_cli_until_decided_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      lab_store: tuple[Path, str]) -> None:
    """On the lab panel the coin stand-in plays every policy at p = 0.5 with the lab's shared
    draws, so a candidate run regresses against the lab's baseline; the CLI stops early, records
    its looks, and a second call with the same --run-id keeps them and plays nothing more."""
    panel = hidden_regression_panel(200)
    yaml = tmp_path / "panel.yaml"
    yaml.write_text(panel.to_yaml())
    db, base_id = _copy(lab_store, tmp_path)
    args = ["run", str(yaml), "--policy", COIN, "--against", base_id, "--until-decided",
            "--max-episodes", "450", "--chunk", "9", "--run-id", "cand", "--store", db, "--json"]
    code = main(args)
    out = json.loads(capsys.readouterr().out)
    assert code == 4 and out["sequential"]["decision"] == "regression"
    looks = out["sequential"]["looks"]
    # every slice is worse at p = 0.5 (0.7, 0.6, 0.8 for the baseline): the largest gap first
    assert looks[-1]["episodes"] < 450
    assert f"regression on {FACTOR}=mobile_manipulator" in out["sequential"]["sentence"]
    with open_store(db) as st:
        n = st.count_episodes("cand")
    assert n == looks[-1]["episodes"]
    code = main(args)  # resume: already decided, looks intact
    again = json.loads(capsys.readouterr().out)
    assert code == 4 and again["sequential"]["looks"] == looks
    with open_store(db) as st:
        assert st.count_episodes("cand") == n
    # compare --sequential reads the run's recorded design: the last look's verdicts
    assert main(["compare", base_id, "cand", "--store", db, "--json", "--sequential"]) == 4
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["slices"]}
    for name, sl in looks[-1]["slices"].items():
        assert rows[name]["verdict"] == sl["verdict"]
        assert rows[name]["test"]["threshold"] == pytest.approx(math.exp(sl["boundary"]))
    assert main(["show", "cand", "--store", db]) in (0, None)
    shown = capsys.readouterr().out
    assert "until decided against" in shown and "design: a 10-point drop" in shown
    html = tmp_path / "cand.html"
    assert main(["report", "cand", "--store", db, "--html", str(html)]) in (0, None)
    capsys.readouterr()
    page = html.read_text()
    assert 'id="sequential"' in page and page.count("<polyline") == 3  # one path per slice
    # a fixed-n compare of the early-stopped run says it peeks
    main(["compare", base_id, "cand", "--store", db, "--json"])
    assert json.loads(capsys.readouterr().out)["peeking"]


def slow_zero(obs: object) -> np.ndarray:
    """The coin's zero action, 20 ms late: a run slow enough to be killed mid-way."""
    import time

    from evalband.policies._builtin import zero_action

    time.sleep(0.02)
    return zero_action(obs)


@pytest.mark.slow
def test_sigkill_then_resume_reaches_the_same_decision_with_the_same_looks(
        tmp_path: Path, lab_store: tuple[Path, str]) -> None:
    """The must-show end-to-end test on the hidden-regression lab panel: an uninterrupted
    --until-decided run stops before its maximum naming the regression; the same command
    killed with SIGKILL mid-way and run again reaches the same decision with the same looks."""
    import os
    import signal
    import subprocess
    import sys
    import time

    panel = hidden_regression_panel(200)
    yaml = tmp_path / "panel.yaml"
    yaml.write_text(panel.to_yaml())
    db, base_id = _copy(lab_store, tmp_path)

    def args(rid: str) -> list[str]:
        return [sys.executable, "-m", "evalband.cli", "run", str(yaml), "--policy",
                "test_until_decided:slow_zero", "--against", base_id, "--until-decided",
                "--max-episodes", "450", "--chunk", "9", "--run-id", rid, "--store", db,
                "--json"]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ref = subprocess.run(args("ref"), capture_output=True, text=True, timeout=300, env=env)
    assert ref.returncode == 4, ref.stderr
    reference = json.loads(ref.stdout)["sequential"]
    stopped = reference["looks"][-1]["episodes"]
    assert stopped < 450 and reference["decision"] == "regression"
    assert f"regression on {FACTOR}=" in reference["sentence"]
    proc = subprocess.Popen(args("killme"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with open_store(db) as st:
            if st.get_run("killme") is not None and st.count_episodes("killme") >= stopped // 2:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open_store(db) as st:
        killed_at = st.count_episodes("killme")
        looks_then = len((st.require_run("killme").extra.get("sequential") or {})
                         .get("looks", []))
    assert 0 < killed_at < stopped and 0 < looks_then < len(reference["looks"])
    done = subprocess.run(args("killme"), capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 4, done.stderr
    resumed = json.loads(done.stdout)["sequential"]
    assert resumed["decision"] == reference["decision"]
    assert resumed["sentence"] == reference["sentence"]
    assert resumed["looks"] == reference["looks"]
    assert resumed["design"] == reference["design"]  # computed once, read back on resume


def _lab_until(db: str, base_id: str, rid: str, **options: object) -> dict[str, object]:
    from evalband.run._until import run_until_decided

    panel = hidden_regression_panel(200)
    with open_store(db) as st:
        run_until_decided(panel, COIN, st, against=base_id, run_id=rid, max_episodes=450,
                          chunk=9, **options)
        state: dict[str, object] = st.require_run(rid).extra["sequential"]
    return state


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["process", "ray"])
def test_every_backend_takes_the_same_looks_and_decision(
        tmp_path: Path, lab_store: tuple[Path, str], backend: str) -> None:
    """Looks are taken on the recorded prefix of the play order, so a parallel backend that
    returns episodes out of order reaches the serial run's decision with the same looks."""
    db, base_id = _copy(lab_store, tmp_path)
    serial = _lab_until(db, base_id, "serial")
    assert serial["decision"] == "regression"
    if backend == "ray":
        import ray

        from evalband.run._ray import connect

        if ray.is_initialized():
            ray.shutdown()
        assert connect(workers=2)
        try:
            parallel = _lab_until(db, base_id, "par", backend="ray", workers=2)
        finally:
            ray.shutdown()
    else:
        parallel = _lab_until(db, base_id, "par", backend="process", workers=2)
    assert parallel["decision"] == serial["decision"]
    assert parallel["sentence"] == serial["sentence"]
    assert parallel["looks"] == serial["looks"]
    with open_store(db) as st:
        manifest = st.require_run("par")
        assert manifest.backend == backend
        # every looked-at episode is stored; a parallel backend may have finished a few more
        assert st.count_episodes("par") >= serial["looks"][-1]["episodes"]  # type: ignore[index]


def test_both_arms_chunk_by_chunk_on_matched_conditions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--against-policy plays the baseline policy too: each chunk by both arms on the same
    conditions, then a look; reach1d's weak baseline policy regresses against its expert long
    before the 64 planned episodes, and a rerun plays nothing more."""
    db = str(tmp_path / "s.sqlite")
    args = ["run", "reach1d", "--policy", "reach1d:baseline", "--against-policy",
            "reach1d:expert", "--until-decided", "--chunk", "4", "--run-id", "cand",
            "--store", db, "--json"]
    code = main(args)
    out = json.loads(capsys.readouterr().out)
    state = out["sequential"]
    assert code == 4 and state["decision"] == "regression" and state["both_arms"]
    looked = state["looks"][-1]["episodes"]
    assert looked < 64 and [look["episodes"] for look in state["looks"]] == list(
        range(4, looked + 1, 4))
    base_id = out["baseline_run_id"]
    with open_store(db) as st:
        cand = {r.key for r in st.episode_records("cand")}
        base = {r.key for r in st.episode_records(base_id)}
        assert st.require_run(base_id).policy == "reach1d:expert"
    assert cand == base and len(cand) == looked  # matched, chunk by chunk, nothing beyond
    assert main(args) == 4  # resume: decided, looks intact, nothing more played
    assert json.loads(capsys.readouterr().out)["sequential"]["looks"] == state["looks"]
    with open_store(db) as st:
        assert st.count_episodes("cand") == st.count_episodes(base_id) == looked
    assert main(["run", "reach1d", "--policy", "reach1d:baseline", "--until-decided",
                 "--store", db]) == 2  # no baseline named
