"""Flags out of range, or contradicting or ignored by the rest of the command line.

Each is refused before any work: exit 2 and one line on stderr naming the flag to change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalband.cli import main
from evalband.store import RunStore

PANEL = str(Path(__file__).resolve().parents[2] / "src" / "evalband" / "panels" / "reach1d.yaml")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two small reach1d runs, ``a`` (baseline) and ``b`` (expert)."""
    from evalband import run_panel
    from evalband.panel import load_panel

    path = tmp_path_factory.mktemp("refusals") / "s.sqlite"
    panel = load_panel("reach1d").with_overrides(episodes=4)
    with RunStore(path) as st:
        run_panel(panel, "reach1d:baseline", st, run_id="a")
        run_panel(panel, "reach1d:expert", st, run_id="b")
    return path


def refused(capsys: pytest.CaptureFixture[str], args: list[str], *words: str) -> str:
    """Run ``args``; assert exit 2 with one ``error:`` line holding every one of ``words``."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("rate", ["1.5", "0", "1", "-0.2", "nan", "inf"])
def test_calibrate_base_rate_must_be_a_rate(capsys: pytest.CaptureFixture[str],
                                            rate: str) -> None:
    refused(capsys, ["calibrate", PANEL, "--base-rate", rate, "--reps", "2"],
            "--base-rate", "between 0 and 1")


def test_calibrate_base_rate_beside_a_run_is_refused(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--store", str(runs)]
    refused(capsys, ["calibrate", "a", "--base-rate", "0.3", "--reps", "2", *store],
            "--base-rate", "drop")
    refused(capsys, ["calibrate", PANEL, "--slices-from", "a", "--base-rate", "0.3",
                     "--reps", "2", *store], "--base-rate", "--slices-from")


@pytest.mark.parametrize("effect", ["5", "0", "-0.1", "nan"])
def test_rank_effect_must_be_a_gap_in_rate(runs: Path, capsys: pytest.CaptureFixture[str],
                                           effect: str) -> None:
    refused(capsys, ["rank", "a", "b", "--effect", effect, "--store", str(runs)],
            "--effect", "between 0 and 1")


@pytest.mark.parametrize("margin", ["3", "0", "-0.05", "nan"])
def test_run_until_decided_margin_must_be_a_gap_in_rate(
        runs: Path, capsys: pytest.CaptureFixture[str], margin: str) -> None:
    refused(capsys, ["run", "reach1d", "--policy", "reach1d:expert", "--episodes", "4",
                     "--against", "a", "--until-decided", "--margin", margin,
                     "--run-id", "m", "--store", str(runs)], "--margin", "between 0 and 1")
    with RunStore(runs) as st:
        assert st.get_run("m") is None  # refused before anything ran


@pytest.mark.parametrize("command", [["show", "a"], ["compare", "a", "b"], ["rank", "a", "b"],
                                     ["rescore", "a", "--run-id", "a2"]])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_success_at_must_be_finite(runs: Path, capsys: pytest.CaptureFixture[str],
                                   command: list[str], value: str) -> None:
    refused(capsys, [*command, "--scorer", "human", "--success-at", value, "--store",
                     str(runs)], "--success-at", "finite", value)


@pytest.mark.parametrize("option", [["--max-episodes", "8"], ["--alpha", "0.1"],
                                    ["--margin", "0.05"], ["--chunk", "2"], ["--effect", "0.2"],
                                    ["--power", "0.9"], ["--discordant", "0.3"]])
def test_run_until_decided_options_without_it_are_refused(
        runs: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    refused(capsys, ["run", "reach1d", "--policy", "reach1d:expert", "--episodes", "2",
                     "--run-id", "u", "--store", str(runs), *option],
            option[0], "--until-decided")
    with RunStore(runs) as st:
        assert st.get_run("u") is None  # refused before anything ran


def test_ignored_options_are_refused(runs: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--store", str(runs)]
    refused(capsys, ["session", "run", "s", "--alpha", "0.1", *store],
            "--alpha", "--until-decided")
    refused(capsys, ["power", "--p-a", "0.5", "--p-b", "0.6", "--direction", "up"],
            "--direction", "--n")
    refused(capsys, ["calibrate", PANEL, "--unpaired", "--correlation", "0.9", "--reps", "2"],
            "--correlation", "--unpaired")
    refused(capsys, ["agreement", "a", "-c", "0.9", *store], "--confidence", "--scorers")
    refused(capsys, ["agree", "a", "b", "c", "--csv", str(tmp_path / "m.csv"),
                     "--higher-is-better", "loss", "--lower-is-better", "loss", *store],
            "loss", "--higher-is-better", "--lower-is-better")


def test_options_that_are_used_still_pass(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "50", "--direction", "up",
                 "--json"]) == 0
    assert main(["calibrate", PANEL, "--correlation", "0.9", "--reps", "2", "--json"]) == 0
    assert main(["agreement", "a", "--scorers", "success,unaided", "-c", "0.9",
                 "--store", str(runs), "--json"]) == 0
    capsys.readouterr()
