"""The sequential design on the CLI's path: fixed before the data, its figures exact and true.

Oracles: the design's exact operating characteristics recomputed from its stored parameters
(``operating_characteristics``, itself checked against brute-force enumeration in
tests/stats/test_sequential.py), and seeded Monte Carlo of the runs' own decision path
(``decide_path``) under the stated assumptions.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from evalband.analysis._sequential_plan import SliceDesign, decide_path
from evalband.cli import main
from evalband.stats._sequential_design import operating_characteristics

COIN = "evalband.policies._builtin:zero_action"
PANEL = """name: coin
env: evalband/Coin-v0
episodes: 40
seed: 3
budget:
  steps: 2
factors:
  p: [0.3, 0.7]
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A panel, and a store holding a baseline and a candidate of it (identical policies)."""
    d = tmp_path_factory.mktemp("seqdesign")
    (d / "coin.yaml").write_text(PANEL)
    db = str(d / "s.sqlite")
    for rid in ("base", "cand"):
        assert main(["run", str(d / "coin.yaml"), "--policy", COIN, "--run-id", rid,
                     "--store", db, "--json"]) == 0
    return d, db


def test_printed_power_is_the_exact_power_and_simulation_delivers_it(
        runs: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, db = runs
    code, out, _ = cli(capsys, "compare", "base", "cand", "--store", db, "--sequential",
                       "--json")
    payload = json.loads(out)
    design = payload["procedure"]["design"]
    assert design["source"] == "default" and design["effect"] == 0.1
    note = next(n for n in payload["notes"] if n.startswith("procedure: anytime-valid"))
    printed = int(re.search(r"shown with (\d+)% power", note).group(1)) / 100  # type: ignore[union-attr]
    sd = SliceDesign(**design["slices"]["p=0.3"])
    psi, drop = design["discordant"], design["effect"]
    alt = (1 - psi, (psi + drop) / 2, (psi - drop) / 2)
    exact, mean, _ = operating_characteristics(sd.max_pairs, sd.max_discordant, sd.theta,
                                               design["alpha_side"], sd.futility, alt)
    assert abs(printed - exact) <= 0.01 and sd.power == pytest.approx(exact, abs=1e-12)
    assert exact < 0.8 and "could miss it" in note  # 40 pairs: it says the power it has
    # the runs' path, simulated under the stated assumptions, delivers the exact power
    rng = np.random.default_rng(5)
    reps = 600
    paths = rng.choice(np.array([0, 1, 2], dtype=np.int8), p=list(alt), size=(reps, sd.max_pairs))
    hits = sum(decide_path(p, sd)[0] == "regressed" for p in paths)
    assert abs(hits / reps - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps)
    # and the drop it says 80% power needs: its design has >= 80%, by simulation too
    x = sd.drop_at_power
    assert x is not None and f">= {100 * x:.1f} points" in note
    code, out, _ = cli(capsys, "compare", "base", "cand", "--store", db, "--sequential",
                       "--json", "--effect", str(x), "--exploratory")
    at_x = json.loads(out)["procedure"]["design"]
    sd_x = SliceDesign(**at_x["slices"]["p=0.3"])
    psi_x = at_x["discordant"]
    alt_x = [1 - psi_x, (psi_x + x) / 2, (psi_x - x) / 2]
    assert sd_x.power >= 0.8
    paths = rng.choice(np.array([0, 1, 2], dtype=np.int8), p=alt_x, size=(reps, sd_x.max_pairs))
    hits = sum(decide_path(p, sd_x)[0] == "regressed" for p in paths)
    assert hits / reps >= sd_x.power - 4 * math.sqrt(0.2 * 0.8 / reps)


def test_a_design_given_after_the_data_is_refused_unless_exploratory(
        runs: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, db = runs
    for extra in (["--effect", "0.3"], ["--discordant", "0.4"], ["--max-pairs", "20"],
                  ["--power", "0.9"], ["--confidence", "0.9", "--power", "0.9"]):
        code, out, err = cli(capsys, "compare", "base", "cand", "--store", db, "--sequential",
                             *extra)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (extra, err)
        assert "after the data" in err and "--exploratory" in err
    # the default's own values are not a new design
    assert cli(capsys, "compare", "base", "cand", "--store", db, "--sequential", "--effect",
               "0.1")[0] == 6
    code, out, _ = cli(capsys, "compare", "base", "cand", "--store", db, "--sequential",
                       "--effect", "0.3", "--exploratory")
    assert out.splitlines()[0].startswith("EXPLORATORY")
    code, out, _ = cli(capsys, "compare", "base", "cand", "--store", db, "--sequential",
                       "--effect", "0.3", "--exploratory", "--json")
    payload = json.loads(out)
    assert payload["peeking"][0].startswith("EXPLORATORY") and payload["notes"][0].startswith(
        "EXPLORATORY")
    assert payload["procedure"]["design"]["source"] == "exploratory"
    code, _, err = cli(capsys, "compare", "base", "cand", "--store", db, "--exploratory")
    assert code == 2 and "--sequential" in err


def test_futility_has_its_own_exit_code_and_says_what_it_could_not_show(
        runs: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    d, db = runs
    code, out, err = cli(capsys, "run", str(d / "coin.yaml"), "--policy", COIN, "--against",
                         "base", "--until-decided", "--run-id", "seq", "--chunk", "20",
                         "--store", db)
    assert code == 6
    assert "futility: stopped after 80 of 80 episodes: a drop of 10 points could not be shown " \
           "within the maximum" in out
    assert "power per slice to show it" in out and "not evidence of no change" in out
    assert err.startswith("design (declared at run --until-decided")  # said before the looks
    code, out, _ = cli(capsys, "compare", "base", "seq", "--store", db, "--sequential", "--json")
    payload = json.loads(out)
    assert code == 6 and payload["procedure"]["exit_code"] == 6
    assert payload["procedure"]["decision"] == "futility"
    assert payload["procedure"]["design"]["source"] == "run"
    assert payload["sentence"].startswith("stopped: a drop of 10 points could not be shown")
    # a resume that would change the declared design is refused, in one line
    code, out, err = cli(capsys, "run", str(d / "coin.yaml"), "--policy", COIN, "--against",
                         "base", "--until-decided", "--run-id", "seq", "--effect", "0.2",
                         "--store", db)
    assert code == 2 and "--effect" in err and len(err.strip().splitlines()) == 1


def test_the_panels_design_block_is_the_design(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.yaml").write_text(PANEL + "design:\n  effect: 0.4\n  max_pairs: 30\n")
    db = str(tmp_path / "s.sqlite")
    for rid in ("b", "c"):
        assert main(["run", str(tmp_path / "p.yaml"), "--policy", COIN, "--run-id", rid,
                     "--store", db, "--json"]) == 0
    capsys.readouterr()
    code, out, _ = cli(capsys, "compare", "b", "c", "--store", db, "--sequential", "--json")
    design = json.loads(out)["procedure"]["design"]
    assert design["source"] == "panel" and design["effect"] == 0.4
    assert {s["cap"] for s in design["slices"].values()} == {30}
    code, out, _ = cli(capsys, "run", str(tmp_path / "p.yaml"), "--policy", COIN, "--against",
                       "b", "--until-decided", "--run-id", "u", "--store", db, "--json")
    state = json.loads(out)["sequential"]
    assert state["design"]["source"] == "panel" and state["effect"] == 0.4
