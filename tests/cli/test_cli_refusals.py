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


@pytest.mark.parametrize("command", [["show", "a"], ["compare", "a", "b"], ["rank", "a", "b"]])
@pytest.mark.parametrize("value", ["1", "1.0", "2"])
def test_success_at_without_a_scorer_is_refused(runs: Path, capsys: pytest.CaptureFixture[str],
                                                command: list[str], value: str) -> None:
    # given at all (the default's value too), not only when it differs from the default
    refused(capsys, [*command, "--success-at", value, "--store", str(runs)], "--success-at",
            "--scorer")


def test_success_at_defaults_to_one(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "a", "--store", str(runs), "--json"]) == 0
    assert main(["show", "a", "--help"]) == 0
    assert "default 1" in capsys.readouterr().out


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
    for way in ("up", "auto"):  # auto, the default's value, given is given too
        refused(capsys, ["power", "--p-a", "0.5", "--p-b", "0.6", "--direction", way],
                "--direction", "--n")
    refused(capsys, ["calibrate", PANEL, "--unpaired", "--correlation", "0.9", "--reps", "2"],
            "--correlation", "--unpaired")
    refused(capsys, ["agreement", "a", "-c", "0.9", *store], "--confidence", "--scorers")
    refused(capsys, ["agree", "a", "b", "c", "--csv", str(tmp_path / "m.csv"),
                     "--higher-is-better", "loss", "--lower-is-better", "loss", *store],
            "loss", "--higher-is-better", "--lower-is-better")


@pytest.mark.parametrize(("args", "flag", "came"), [
    (["power", "--p-a", "1.5", "--p-b", "0.5"], "--p-a", "1.5"),
    (["power", "--p-a", "nan", "--p-b", "0.5"], "--p-a", "NaN"),
    (["power", "--p-a", "0.5", "--p-b", "-0.1"], "--p-b", "-0.1"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--alpha", "2"], "--alpha", "2"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--alpha", "2", "--comparisons", "4"],
     "--alpha", "2"),  # was run at 2 / 4 = 0.5 without a word
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--power", "1.2"], "--power", "1.2"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--power", "0.3", "--alpha", "0.5"],
     "--power", "0.3"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--paired", "--discordant", "2"],
     "--discordant", "2"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--paired", "--discordant", "0.05"],
     "--discordant", "0.05"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "0"], "--n", "1"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "-3"], "--n", "1"),
    (["calibrate", PANEL, "--correlation", "5", "--reps", "2"], "--correlation", "5"),
    (["calibrate", PANEL, "--correlation", "nan", "--reps", "2"], "--correlation", "nan"),
    (["calibrate", PANEL, "-c", "1.5", "--reps", "2"], "--confidence", "1.5"),
    (["ci", "3", "10", "-c", "0"], "--confidence", "0"),
])
def test_library_range_messages_name_the_flag(capsys: pytest.CaptureFixture[str],
                                              args: list[str], flag: str, came: str) -> None:
    err = refused(capsys, args, flag, came)
    assert "`" not in err, err


@pytest.mark.parametrize(("args", "flag", "came"), [
    (["lab", "reach-bc", "generate", "--episodes", "5"], "--episodes", "(got 5)"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "0"], "--n", "(got 0)"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "-3"], "--n", "(got -3)"),
    (["serve", "reach1d:expert", "--port", "70000"], "--port", "(got 70000)"),
    (["calibrate", PANEL, "--seed", "-1"], "--seed", "(got -1)"),
    (["agree", "a", "b", "c", "--reps", "5"], "--reps", "(got 5)"),
    (["power", "--p-a", "half", "--p-b", "0.6"], "--p-a", "(got half)"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "1.5"], "--n", "(got 1.5)"),
    (["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "two words"], "--n", "(got 'two words')"),
])
def test_an_option_out_of_its_range_says_what_came(capsys: pytest.CaptureFixture[str],
                                                   args: list[str], flag: str,
                                                   came: str) -> None:
    refused(capsys, args, flag, came)


def test_calibrate_seed_is_not_negative(capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["calibrate", PANEL, "--seed", "-1", "--reps", "2"], "--seed")  # traceback


@pytest.mark.parametrize("option", [["--host", "127.0.0.1"], ["--port", "8766"], ["--no-token"],
                                    ["--host", "0.0.0.0"]])
def test_session_run_console_options_need_the_console(
        runs: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    # given at all (their defaults' values too), not only when they differ from the default
    refused(capsys, ["session", "run", "s", *option, "--store", str(runs)], option[0],
            "--console")


@pytest.mark.parametrize("option", [["--operator", "human"], ["--clock", "real"],
                                    ["--operator", "suggested"]])
def test_session_run_robot_options_need_a_robot(
        runs: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    refused(capsys, ["session", "run", "s", *option, "--store", str(runs)], option[0],
            "--robot")


def test_options_that_are_used_still_pass(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "--p-a", "0.5", "--p-b", "0.6", "--n", "50", "--direction", "up",
                 "--json"]) == 0
    assert main(["calibrate", PANEL, "--correlation", "0.9", "--reps", "2", "--json"]) == 0
    assert main(["agreement", "a", "--scorers", "success,unaided", "-c", "0.9",
                 "--store", str(runs), "--json"]) == 0
    capsys.readouterr()


def test_messages_name_the_flag_to_change(runs: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from evalband import run_panel
    from evalband.panel import load_panel

    db = tmp_path / "m.sqlite"
    with RunStore(db) as st:
        run_panel(load_panel("reach1d").with_overrides(episodes=2), "reach1d:baseline", st,
                  run_id="a")
        run_panel(load_panel("reach1d-2s").with_overrides(episodes=2), "reach1d:expert", st,
                  run_id="f")
    store = ["--store", str(db)]
    assert main(["compare", "a", "f", *store]) == 5  # not comparable: its own exit status
    assert "--allow-panel-mismatch" in capsys.readouterr().err
    refused(capsys, ["rank", "a", "f", *store], "--allow-panel-mismatch")
    refused(capsys, ["noise", "a", "--suite-size", "0", *store], "--suite-size", "got 0")
    assert main(["session", "plan", "--policies", "p,q", "--scenes", "1", "--seed", "0",
                 "--session-id", "ss", *store]) == 0
    refused(capsys, ["session", "analyze", "ss", "--control-floor", "2", *store],
            "--control-floor", "got 2")
    refused(capsys, ["compare", "a", "a", "--sequential", "--exploratory", "--max-pairs", "0",
                     *store], "--max-pairs")
    csv = tmp_path / "r.csv"
    csv.write_text("episode,success\n0,1\n")
    refused(capsys, ["import", str(tmp_path), "--format", "bundle", "--metrics", "m", *store],
            "--metrics")
    refused(capsys, ["import", str(tmp_path), "--format", "bundle", "--factors", "x", *store],
            "--factors")


def test_label_and_export_messages_say_what_to_give(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    runs: Path) -> None:
    store = ["--store", str(runs)]
    label = ["label", "a", "--scorer", "human", "--source", "op", *store]
    folder = tmp_path / "labels"
    folder.mkdir()
    refused(capsys, [*label, str(folder)], "is a directory", "CSV or JSON lines file")
    header = tmp_path / "header.csv"
    header.write_text("cell,episode,repeat,human\n")
    refused(capsys, [*label, str(header)], "no rows", "episode")
    text = tmp_path / "text.csv"
    text.write_text("cell,episode,repeat,human\n,first,0,1\n")
    refused(capsys, [*label, str(text)], "'episode' column", "'first'", "0-based")
    other = tmp_path / "other.csv"
    other.write_text("episode,verdict\n0,1\n")
    refused(capsys, [*label, str(other)], "--column")
    afile = tmp_path / "eval.json"
    afile.write_text("{}")
    refused(capsys, ["export", "a", "--out", str(afile), "--format", "lerobot", *store],
            "--out", "directory")


def test_calibrate_takes_a_built_in_panel_and_never_creates_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope" / "s.sqlite"
    assert main(["calibrate", "reach1d", "--reps", "2", "--store", str(missing),
                 "--json"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    refused(capsys, ["calibrate", "some-run", "--reps", "2", "--store", str(missing)],
            str(missing))
    refused(capsys, ["calibrate", PANEL, "--slices-from", "some-run", "--reps", "2",
                     "--store", str(missing)], str(missing))
    assert not missing.exists() and not missing.parent.exists()


@pytest.mark.parametrize("args", [
    ["session", "run", "s1"],
    ["session", "run", "s1", "--robot", "sim-arm"],
    ["prefer", "run", "p1"],
    ["prefer", "record", "p1", "0", "--preferred", "A", "--progress-a", "10",
     "--progress-b", "20"],
    ["prefer", "undo", "p1"],
])
def test_session_commands_never_create_a_missing_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    missing = tmp_path / "nope" / "s.sqlite"
    refused(capsys, [*args, "--store", str(missing)], "no run store", str(missing))
    assert not missing.exists() and not missing.parent.exists()


def test_reach_bc_generate_help_and_check_agree(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from evalband.labs._reach_bc_core import FINAL_EPISODES

    least = FINAL_EPISODES + 2  # what the split needs
    assert main(["lab", "reach-bc", "generate", "--help"]) == 0
    assert f"x>={least}" in capsys.readouterr().out
    out = tmp_path / "ex"
    refused(capsys, ["lab", "reach-bc", "generate", "--out", str(out), "--episodes",
                     str(least - 1)], "--episodes", str(least))
    assert not out.exists()


@pytest.mark.parametrize("margin", ["3", "0", "-0.05", ".nan", "{all: 1.5}", "{'*': 0}"])
def test_panel_non_inferiority_margin_is_checked_with_the_panel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], margin: str) -> None:
    panel = tmp_path / "p.yaml"
    panel.write_text(Path(PANEL).read_text() + f"non_inferiority_margin: {margin}\n")
    refused(capsys, ["calibrate", str(panel), "--reps", "2"], "non_inferiority_margin",
            "between 0 and 1")
    ok = tmp_path / "ok.yaml"
    ok.write_text(Path(PANEL).read_text() + "non_inferiority_margin: {all: 0.05, '*': 0.1}\n")
    assert main(["calibrate", str(ok), "--reps", "2", "--json"]) == 0
    capsys.readouterr()


def test_compare_refuses_a_run_given_twice_as_rank_does(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`compare a a` read the same episodes twice and said "no regression" (exit 3)."""
    store = ["--store", str(runs)]
    refused(capsys, ["compare", "a", "a", *store], "run a is given more than once")
    refused(capsys, ["compare", "a", "b", "b", *store], "run b is given more than once")
    refused(capsys, ["rank", "a", "a", *store], "run a is given more than once")
    refused(capsys, ["report", "a", "a", "--md", str(runs.parent / "r.md"), *store],
            "run a is given more than once")
    assert not (runs.parent / "r.md").exists()
    assert main(["compare", "a", "b", *store]) in (0, 3, 4, 5)  # two runs: compared
    assert "error" not in capsys.readouterr().err


def test_policy_panel_and_run_count_messages_name_what_to_give(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--store", str(runs)]
    refused(capsys, ["lab", "reach1d", "--panel", "nope", "--store", str(tmp_path / "l.sqlite")],
            "--panel nope not found", "built-in panel", "reach1d-2s")
    assert not (tmp_path / "l.sqlite").exists()
    (tmp_path / "r.csv").write_text("episode,success\n0,1\n")
    refused(capsys, ["import", str(tmp_path / "r.csv"), "--panel", "nope", *store],
            "--panel nope not found")
    refused(capsys, ["session", "plan", "--policies", "A,A", "--scenes", "1", "--seed", "0",
                     *store], "--policies", "listed more than once: A", "distinct names")
    refused(capsys, ["prefer", "plan", "--policies", "a", "--blocks", "4", *store],
            "--policies", "two or more distinct", "got 'a'")
    refused(capsys, ["rank", "a", *store], "two or more run ids", "got one: a")


def test_sweep_of_one_checkpoint_says_what_to_give(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep a` said only "a sweep needs at least 2 checkpoints; got 1"."""
    refused(capsys, ["sweep", "a", "--store", str(runs)],
            "at least 2 checkpoints", "two or more checkpoints", "checkpoint step")
