"""``evalband agree`` end to end: offline metrics (CSV) and simulation runs against behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalband import run_panel
from evalband.analysis import Agreement
from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import RunStore

POLICIES = ("baseline", "damped", "expert")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agree") / "s.sqlite"
    with RunStore(path) as st:
        for i, p in enumerate(POLICIES):
            run_panel(load_panel("reach1d"), f"reach1d:{p}", st, run_id=p, step=100 * (i + 1))
            run_panel(load_panel("reach1d-noisy"), f"reach1d:{p}", st, run_id=f"sim-{p}")
    return path


def test_offline_metrics_against_behaviour(store: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "m.csv"  # by run id, by policy and by step
    csv.write_text("checkpoint,val_loss,score\nbaseline,0.9,1\nreach1d:damped,0.2,2\n"
                   "300,0.5,3\n")
    html = tmp_path / "a.html"
    assert main(["agree", *POLICIES, "--csv", str(csv), "--store", str(store), "--json",
                 "--higher-is-better", "score", "--reps", "200", "--html", str(html)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["validated"] is True
    metrics = {m["metric"]: m for m in data["metrics"]}
    loss = metrics["val_loss"]
    assert loss["higher_is_better"] is False and loss["direction"] == "assumed from the name"
    assert loss["established"] == 2 and loss["agreeing"] == 2  # baseline below both others
    assert loss["spearman"]["interval"] == "rank-set bound"
    assert loss["spearman"]["low"] <= loss["spearman"]["estimate"] <= loss["spearman"]["high"]
    assert metrics["score"]["direction"] == "declared"
    assert Agreement.from_dict(data) == Agreement.from_dict(json.loads(json.dumps(data)))
    assert html.read_text().count("<svg") == 3  # the rank sets and one scatter per metric


def test_simulation_runs_against_behaviour(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["agree", *POLICIES, "--store", str(store), "--json", "--reps", "200"]
    for p in POLICIES:
        args += ["--sim", f"sim-{p}"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    (m,) = data["metrics"]
    assert m["metric"] == "simulation success" and m["mmrv"]["interval"] == "two-level bootstrap"
    assert any("resamples both sides" in n for n in data["notes"])


@pytest.mark.parametrize(("extra", "words"), [
    ((), "give the cheap side once"),
    (("--csv", "nope.csv"), "cannot read the metrics CSV"),
])
def test_bad_input_is_one_line(store: Path, capsys: pytest.CaptureFixture[str],
                               extra: tuple[str, ...], words: str) -> None:
    assert main(["agree", *POLICIES, "--store", str(store), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err


@pytest.mark.parametrize("direction", [["--higher-is-better", "score"],
                                       ["--lower-is-better", "val_loss"],
                                       ["--higher-is-better", "a", "--lower-is-better", "b"]])
def test_metric_directions_with_simulation_runs_are_refused(
        store: Path, capsys: pytest.CaptureFixture[str], direction: list[str]) -> None:
    args = ["agree", *POLICIES, "--store", str(store), *direction]
    for p in POLICIES:
        args += ["--sim", f"sim-{p}"]
    assert main(args) == 2  # they name metrics CSV columns; --sim has none
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert all(flag in err for flag in direction if flag.startswith("--")), err
    assert "--csv" in err, err


def test_a_checkpoint_that_names_no_run_is_refused(store: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("checkpoint,val_loss\nbaseline,1\ndamped,2\nmystery,3\n")
    assert main(["agree", *POLICIES, "--csv", str(csv), "--store", str(store)]) == 2
    assert "'mystery' names no behavioural run" in capsys.readouterr().err
