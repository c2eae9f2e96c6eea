"""Checkpoint sweeps: the selection-aware band covers the chosen checkpoint, the bias
correction shrinks the winner's curse (simulation), and ``evalband sweep`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalband import load_run, run_panel
from evalband.analysis._sweep import Sweep, fresh_panel, sweep_runs
from evalband.cli import main
from evalband.panel import load_panel
from evalband.stats import interval
from evalband.stats._selection import selection_bias
from evalband.store import RunStore


def test_the_selection_aware_band_covers_the_chosen_checkpoint_and_the_correction_helps() -> None:
    """Eight checkpoints, 50 episodes each, rates 0.45-0.52: pick the best measured."""
    rng = np.random.default_rng(21)
    truth = np.linspace(0.45, 0.52, 8)
    n, reps, k = 50, 300, truth.size
    naive_err, corrected_err, covered, naive_covered = [], [], 0, 0
    for _ in range(reps):
        y = (rng.random((k, n)) < truth[:, None]).astype(float)
        means = y.mean(axis=1)
        j = int(means.argmax())
        bias = selection_bias(list(y), reps=600, seed=int(rng.integers(1 << 30)))
        naive_err.append(means[j] - truth[j])
        corrected_err.append(means[j] - bias - truth[j])
        band = interval(int(y[j].sum()), n, "wilson", 1 - 0.05 / k)
        covered += band.low <= truth[j] <= band.high
        plain = interval(int(y[j].sum()), n, "wilson", 0.95)
        naive_covered += plain.low <= truth[j] <= plain.high
    assert np.mean(naive_err) > 0.05  # the winner's curse is real here
    assert abs(np.mean(corrected_err)) < 0.5 * np.mean(naive_err)
    assert covered / reps >= 0.95 - 2 * np.sqrt(0.05 * 0.95 / reps)
    assert naive_covered < covered  # the marginal band of the chosen one covers less


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "s.sqlite"
    with RunStore(path) as st:
        for step, p in ((1000, "baseline"), (2000, "damped"), (3000, "expert")):
            run_panel(load_panel("reach1d"), f"reach1d:{p}", st, run_id=f"ck{step}", step=step)
        run_panel(load_panel("reach1d"), "reach1d:baseline", st, run_id="nostep")
    return path


def test_sweep_end_to_end_with_its_confirmation(store: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "confirm.yaml"
    ids = ["ck3000", "ck1000", "ck2000"]  # any order: the sweep orders by step
    assert main(["sweep", *ids, "--store", str(store), "--json", "--plan-confirmation",
                 str(plan), "--html", str(tmp_path / "s.html")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["step"] for p in data["points"]] == [1000, 2000, 3000]
    assert data["last"] == 3000 and data["best"] in (2000, 3000)
    best = next(p for p in data["points"] if p["step"] == data["best"])
    assert best["simultaneous"]["low"] < best["value"]["low"]  # wider than the marginal band
    assert best["simultaneous"]["confidence"] == pytest.approx(1 - 0.05 / 3)
    panel = load_panel(str(plan))
    sweep_panel = load_panel("reach1d")
    assert panel.seed == data["confirmation"]["panel_seed"] != sweep_panel.seed
    assert panel.fingerprint == fresh_panel(sweep_panel).fingerprint
    assert (tmp_path / "s.html").read_text().count('class="interval"') == 3  # rank sets
    assert Sweep.from_dict(data) == Sweep.from_dict(json.loads(json.dumps(data)))
    with RunStore(store) as st:  # the planned confirmation, played
        run_panel(panel, "reach1d:damped", st, run_id="cb", step=2000)
        run_panel(panel, "reach1d:expert", st, run_id="cl", step=3000)
        runs = [load_run(r, st) for r in ids]
        steps = [st.require_run(r).step for r in ids]
        result = sweep_runs(runs, steps, confirm=(load_run("cb", st), load_run("cl", st)))
        with pytest.raises(Exception, match="own conditions"):
            sweep_runs(runs, steps, confirm=(load_run("ck2000", st), load_run("cl", st)))
    assert result.confirmed is not None and result.confirmed.best.n == 64
    d = result.confirmed.difference
    assert (d.low > 0 or d.high < 0) == (result.confirmed.p_value <= 0.05)
    assert main(["rank", *ids, "--by", "step", "--store", str(store)]) == 0
    assert "best measured: step" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "words"), [
    (("ck1000", "nostep"), "recorded no checkpoint step"),
    (("ck1000", "ck2000", "--confirm-best", "ck1000"), "go together"),
])
def test_bad_sweeps_are_one_line_exit_2(store: Path, capsys: pytest.CaptureFixture[str],
                                        args: tuple[str, ...], words: str) -> None:
    assert main(["sweep", *args, "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err
