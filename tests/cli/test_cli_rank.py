"""``evalband rank`` end to end on stored runs: JSON, Markdown, HTML, slices, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalband import load_run, run_panel
from evalband.analysis import Ranking, rank_runs
from evalband.cli import main
from evalband.panel import load_panel
from evalband.policies._builtin import zero_action
from evalband.stats._rank_power import separation_size
from evalband.store import RunStore
from evalband.store._bundle import export_bundle
from testkit import coin_panel

POLICIES = ("baseline", "damped", "expert")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rank") / "s.sqlite"
    with RunStore(path) as st:
        for i, p in enumerate(POLICIES):
            run_panel(load_panel("reach1d"), f"reach1d:{p}", st, run_id=p, step=1000 * (i + 1))
        run_panel(coin_panel(episodes=4), "evalband.policies._builtin:zero_action", st,
                  run_id="coin")
        export_bundle(st, "expert", path.parent / "expert-bundle")
    return path


def still(obs: Any) -> Any:
    """A second do-nothing policy (another name on the coin panel)."""
    return zero_action(obs)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rank_json_markdown_html(store: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    code, out, _ = cli(capsys, "rank", *POLICIES, "--store", str(store), "--json",
                       "--md", str(md), "--html", str(html))
    assert code == 0
    data = json.loads(out)
    (overall,) = data["slices"]
    by_run = {p["run_id"]: p for p in overall["policies"]}
    assert {p: by_run[p]["step"] for p in POLICIES} == {"baseline": 1000, "damped": 2000,
                                                       "expert": 3000}
    assert by_run["baseline"]["rank_low"] == by_run["baseline"]["rank_high"] == 3
    for p in overall["pairs"]:  # the printed interval and the decision never disagree
        d = p["difference"]
        assert (d["low"] > 0) == p["established"] == (p["adjusted_p"] <= 0.05)
        assert d["estimate"] == pytest.approx(p["estimate"])
    # the rank sets are what the established orders imply
    ahead = {(p["better"], p["worse"]) for p in overall["pairs"] if p["established"]}
    for pol in overall["policies"]:
        assert pol["rank_low"] == 1 + sum(w == pol["policy"] for _, w in ahead)
        assert pol["rank_high"] == 3 - sum(b == pol["policy"] for b, _ in ahead)
    assert Ranking.from_dict(data) == Ranking.from_dict(json.loads(json.dumps(data)))
    text = md.read_text()
    assert "| reach1d:baseline | 3 | 2 |" in text and "Established orders: 2 of 3." in text
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('class="interval"') == 3
    assert not re.search(r"""(src|href)=["']?https?:""", page)  # nothing fetched


def test_the_typed_result_round_trips_and_a_bundle_ranks_beside_stored_runs(
    store: Path,
) -> None:
    with RunStore(store, read_only=True) as st:
        runs = [load_run(p, st) for p in ("baseline", "damped")]
        runs.append(load_run(str(store.parent / "expert-bundle"), st))
    r = rank_runs(runs, effect=0.1)
    assert Ranking.from_dict(json.loads(json.dumps(r.as_dict()))) == r
    sep = r.overall.separation
    assert sep is not None and sep.gap_source == "declared" and sep.gap == 0.1
    assert sep.per_policy == separation_size(sep.rate_better, sep.rate_worse, policies=3,
                                             design="paired", discordant=sep.discordant) > 64


def test_unpaired_slices_and_metrics(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "rank", *POLICIES, "--store", str(store), "--json", "--unpaired")
    data = json.loads(out)
    assert code == 0 and data["design"] == "unpaired"
    assert {p["test"] for p in data["slices"][0]["pairs"]} == {"fisher-exact"}
    code, out, _ = cli(capsys, "rank", *POLICIES, "--store", str(store), "--json",
                       "--lower-is-better")  # read as a failure rate: the order turns over
    data = json.loads(out)
    first = data["slices"][0]["policies"][0]
    assert code == 0 and data["higher_is_better"] is False
    assert (first["run_id"], first["rank_low"], first["rank_high"]) == ("baseline", 1, 1)
    code, out, _ = cli(capsys, "rank", "coin", "coin", "--store", str(store))
    assert code == 2  # one policy twice
    with RunStore(store) as st:
        run_panel(coin_panel(episodes=4), still, st, run_id="coin2")
    code, out, _ = cli(capsys, "rank", "coin", "coin2", "--store", str(store), "--json",
                       "--slices", "p")
    data = json.loads(out)
    assert code == 0 and [s["slice"] for s in data["slices"]] == ["all", "p=0.2", "p=0.8"]
    assert sum(p["value"]["n"] for p in data["slices"][1]["policies"]) == 2 * 4


@pytest.mark.parametrize(("args", "words"), [
    (("baseline",), "give two or more run ids"),
    (("baseline", "damped", "--metric", "speed"), "metric must be one of"),
    (("baseline", "coin"), "different panels"),
    (("baseline", "damped", "--slices", "colour"), "no slice factor"),
    (("baseline", "damped", "--by", "epoch"), "--by takes step"),
    (("baseline", "nope"), "not in the store"),
])
def test_bad_input_is_one_line_exit_2(store: Path, capsys: pytest.CaptureFixture[str],
                                      args: tuple[str, ...], words: str) -> None:
    code, out, err = cli(capsys, "rank", *args, "--store", str(store))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and words in err


def test_repeated_conditions_are_clustered_by_default(tmp_path: Path) -> None:
    panel = coin_panel(episodes=3, repeats=2)
    with RunStore(tmp_path / "s.sqlite") as st:
        run_panel(panel, zero_action, st, run_id="a")
        run_panel(panel, still, st, run_id="b")
        r = rank_runs([load_run("a", st), load_run("b", st)])
    assert r.design == "clustered" and any("repeats" in n for n in r.notes)
    assert {p.test for p in r.overall.pairs} == {"clustered-sign-flip"}


def test_a_session_before_its_policies_played_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No metric would rank a policy with no episodes: the message says that, not 'another'."""
    db = str(tmp_path / "s.sqlite")
    assert main(["session", "plan", "--policies", "A,B", "--scenes", "2", "--seed", "1",
                 "--session-id", "fresh", "--store", db]) == 0
    capsys.readouterr()
    code, _, err = cli(capsys, "rank", "fresh", "--store", db)
    assert code == 2 and err.count("\n") == 1, err
    assert "no episodes yet" in err and "another metric" not in err, err
