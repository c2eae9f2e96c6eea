"""``evalband report`` and ``--report``, and rich vs plain terminal output of show/compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalband.cli import main

BOX = set("│┃━─┏┓┗┛╇╈┡┩")


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def as_terminal(monkeypatch) -> None:
    """Make stdout look like a colour terminal to rich (pytest's capture is not one)."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "220")
    monkeypatch.delenv("NO_COLOR", raising=False)


def test_report_writes_html_and_markdown(labs, capsys, tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    code, out, err = run_cli(capsys, "report", *labs.hidden, "--store", str(labs.store),
                             "--html", str(html), "--md", str(md))
    assert code == 0, err
    assert out.splitlines() == [f"wrote {html}", f"wrote {md}"]
    assert html.read_text().count("<svg") == 6
    assert "| embodiment=franka_panda |" in md.read_text()
    code, out, _ = run_cli(capsys, "report", labs.hidden[0], "--store", str(labs.store),
                           "--md", str(md), "--json")
    assert code == 0 and json.loads(out) == {"html": None, "md": str(md)}


def test_report_default_path_is_named_after_the_runs(labs, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base, cand = labs.hidden
    code, out, _ = run_cli(capsys, "report", base, cand, "--store", str(labs.store), "--json")
    expected = f"report-{cand}-vs-{base}.html"
    assert code == 0 and json.loads(out) == {"html": expected, "md": None}
    assert (tmp_path / expected).read_text().startswith("<!DOCTYPE html>")


def test_report_rejects_an_unknown_run_with_one_line(labs, capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "report", labs.hidden[0], "nope", "--store",
                             str(labs.store), "--html", str(tmp_path / "x.html"))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "nope" in err
    assert not (tmp_path / "x.html").exists()


def test_run_and_compare_write_reports(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    panel = tmp_path / "p.yaml"
    panel.write_text("name: coin\nenv: evalband/Coin-v0\nenv_kwargs: {length: 1}\n"
                     "episodes: 40\nseed: 2\nbudget: {steps: 2}\n"
                     "factors: {p: [0.3, 0.7]}\n")
    report = tmp_path / "run.html"
    code, out, err = run_cli(capsys, "run", str(panel), "--policy",
                             "evalband.policies._builtin:zero_action", "--store", db,
                             "--run-id", "a", "--report", str(report), "--json")
    assert code == 0, err
    assert json.loads(out)["run_id"] == "a" and f"wrote {report}" in err
    # forest, cumulative, swing, power, outcomes; the metrics' distributions (ECDF, violins)
    assert report.read_text().count("<svg") == 7
    assert main(["run", str(panel), "--policy", "evalband.policies._builtin:zero_action",
                 "--store", db, "--run-id", "b", "--json"]) == 0
    capsys.readouterr()
    both = tmp_path / "cmp.html"
    code, out, err = run_cli(capsys, "compare", "a", "b", "--store", db, "--report", str(both))
    assert code in (0, 3, 4, 5) and f"wrote {both}" in out
    # and the metrics' distributions, differences and paired differences
    assert both.read_text().count("<svg") == 10


def test_compare_is_plain_off_a_terminal_and_rich_on_one(labs, capsys, monkeypatch) -> None:
    args = ["compare", *labs.hidden, "--store", str(labs.store)]
    code, plain, _ = run_cli(capsys, *args)
    assert code == 4
    assert "slices first" in plain and "hidden regression" in plain
    assert "embodiment=franka_panda" in plain and "regressed" in plain
    assert not BOX & set(plain) and "\x1b[" not in plain
    as_terminal(monkeypatch)
    code, rich_out, _ = run_cli(capsys, *args)
    assert code == 4 and BOX & set(rich_out)
    row = next(line for line in rich_out.splitlines() if "franka_panda" in line)
    assert "\x1b[" in row and ("31m" in row or "31;" in row or ";31" in row)  # red
    calm = next(line for line in rich_out.splitlines() if "mobile_manipulator" in line)
    assert "31m" not in calm


def test_show_prints_the_slice_table(labs, capsys, monkeypatch) -> None:
    run_id = labs.hidden[1]
    code, plain, _ = run_cli(capsys, "show", run_id, "--store", str(labs.store))
    assert code == 0 and "Wilson 95%" in plain and "mean time among successes" in plain
    rows = [line for line in plain.splitlines() if line.lstrip().startswith("embodiment=")]
    assert len(rows) == 3 and not BOX & set(plain)
    from evalband.store import open_store

    with open_store(labs.store) as st:
        hard_records = [r for r in st.episode_records(run_id)
                        if r.slices["embodiment"] == "franka_panda"]
    wins = sum(r.success for r in hard_records)
    hard = next(r for r in rows if "franka_panda" in r).split()
    # n, success, failure, timeout, error: counted from the stored episodes
    assert hard[1:6] == [str(len(hard_records)), str(wins), str(len(hard_records) - wins),
                         "0", "0"]
    code, out, _ = run_cli(capsys, "show", run_id, "--store", str(labs.store), "--json")
    assert json.loads(out)["summary"]["n"] == 600
    as_terminal(monkeypatch)
    code, rich_out, _ = run_cli(capsys, "show", run_id, "--store", str(labs.store))
    assert code == 0 and BOX & set(rich_out) and "\x1b[" in rich_out


@pytest.mark.parametrize(("sources", "name"), [
    (["a"], "report-a.html"),
    (["base", "cand", "c2"], "report-cand-vs-base-and-1-more.html"),
    (["x/y/bundle dir/"], "report-bundle_dir.html"),
])
def test_default_report_path(sources: list[str], name: str) -> None:
    from evalband.cli._report import default_report_path

    assert default_report_path(sources) == Path(name)


def test_report_confidence_option_reaches_the_bands(labs, capsys, tmp_path: Path) -> None:
    """`--confidence 0.9` gives each arm the Wilson 90% band of its own counts."""
    import evalband
    from evalband.stats import interval

    md = tmp_path / "r90.md"
    base = labs.hidden[0]
    code, _, err = run_cli(capsys, "report", *labs.hidden, "--store", str(labs.store),
                           "--md", str(md), "--confidence", "0.9")
    assert code == 0, err
    frame = evalband.open_store(labs.store).episodes(base)
    mine = frame[frame["embodiment"] == "franka_panda"]
    band = interval(int((mine["outcome"] == "success").sum()), len(mine), confidence=0.9)
    cell = f"[{100 * band.low:.1f}, {100 * band.high:.1f}]"
    row = next(line for line in md.read_text().splitlines()
               if line.startswith("| embodiment=franka_panda |"))
    assert cell in row.split("|")[3]
    assert "(90%, Holm-adjusted)" in md.read_text()
